// --kiln-fuse-rms-norm: the mean-of-squares chain exporters write becomes one
// kiln.rms_norm (a row kernel). test/run/decode-roofline.test runs a bf16
// Llama's norms through it against the reference; the ONNX node tests of
// RMSNormalization run through it in every backend.
// RUN: kiln-opt %s -split-input-file --kiln-fuse-rms-norm | FileCheck %s

// transformers' bf16 LlamaRMSNorm: upcast, pow 2, mean, + eps, sqrt and
// reciprocal (torch's rsqrt as exported), times x, cast back, weight times it.
// CHECK-LABEL: func.func @llama_bf16
// CHECK-NOT: kiln.reduce
// CHECK-NOT: kiln.cast
// CHECK: %[[N:.*]] = kiln.rms_norm %arg0, %arg1 {axis = 1 : i64} : (tensor<?x64xbf16, #kiln.dims<[n, 64]>>, tensor<64xbf16>) -> tensor<?x64xbf16, #kiln.dims<[n, 64]>>
// CHECK: return %[[N]]
func.func @llama_bf16(%x: tensor<?x64xbf16, #kiln.dims<[n, 64]>>, %w: tensor<64xbf16>) -> tensor<?x64xbf16, #kiln.dims<[n, 64]>> {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-05> : tensor<f32>
  %xf = kiln.cast %x to f32 : (tensor<?x64xbf16, #kiln.dims<[n, 64]>>) -> tensor<?x64xf32, #kiln.dims<[n, 64]>>
  %sq = kiln.pow %xf, %two : (tensor<?x64xf32, #kiln.dims<[n, 64]>>, tensor<f32>) -> tensor<?x64xf32, #kiln.dims<[n, 64]>>
  %ms = kiln.reduce %sq {axes = array<i64: -1>, kind = #kiln<reduce mean>} : (tensor<?x64xf32, #kiln.dims<[n, 64]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %e = kiln.add %ms, %eps : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<f32>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %r = kiln.sqrt %e : (tensor<?x1xf32, #kiln.dims<[n, 1]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %i = kiln.reciprocal %r : (tensor<?x1xf32, #kiln.dims<[n, 1]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %y = kiln.mul %xf, %i : (tensor<?x64xf32, #kiln.dims<[n, 64]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>) -> tensor<?x64xf32, #kiln.dims<[n, 64]>>
  %yb = kiln.cast %y to bf16 : (tensor<?x64xf32, #kiln.dims<[n, 64]>>) -> tensor<?x64xbf16, #kiln.dims<[n, 64]>>
  %o = kiln.mul %w, %yb : (tensor<64xbf16>, tensor<?x64xbf16, #kiln.dims<[n, 64]>>) -> tensor<?x64xbf16, #kiln.dims<[n, 64]>>
  return %o : tensor<?x64xbf16, #kiln.dims<[n, 64]>>
}

// -----

// ONNX RMSNormalization as kiln imports it (x * x, rsqrt) over the last two
// dims, without a weight; and the division form, whose x is read elsewhere
// too (x stays for that reader).
// CHECK-LABEL: func.func @rsqrt_and_division
// CHECK: %[[A:.*]] = kiln.rms_norm %arg0 {axis = 1 : i64, epsilon = 0.00999999977 : f32} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[B:.*]] = kiln.rms_norm %arg1 {axis = 1 : i64, epsilon = 0.000000e+00 : f32} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[C:.*]] = kiln.add %arg1, %[[B]]
// CHECK: return %[[A]], %[[C]]
func.func @rsqrt_and_division(%x: tensor<2x3x4xf32>, %z: tensor<2x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x4xf32>) {
  %eps = kiln.constant dense<0.01> : tensor<1xf32>
  %sq = kiln.mul %x, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %ms = kiln.reduce %sq {axes = array<i64: 2, 1>, kind = #kiln<reduce mean>} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %e = kiln.add %eps, %ms : (tensor<1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %i = kiln.rsqrt %e : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %y = kiln.mul %i, %x : (tensor<2x1x1xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %sq2 = kiln.mul %z, %z : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %ms2 = kiln.reduce %sq2 {axes = array<i64: 1>, kind = #kiln<reduce mean>} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %e2 = kiln.add %ms2, %zero : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %r2 = kiln.sqrt %e2 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %y2 = kiln.div %z, %r2 : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %s = kiln.add %z, %y2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y, %s : tensor<2x3x4xf32>, tensor<2x4xf32>
}

// -----

// ONNX RMSNormalization of f16 with stash_type float, as kiln imports it: the
// weight cast up and multiplied in f32, then the cast down. One op on the f16
// input and weight; both casts up go.
// CHECK-LABEL: func.func @onnx_f16
// CHECK-NOT: kiln.cast
// CHECK: %[[N:.*]] = kiln.rms_norm %arg0, %arg1 {axis = 1 : i64} : (tensor<3x8xf16>, tensor<8xf16>) -> tensor<3x8xf16>
// CHECK: return %[[N]]
func.func @onnx_f16(%x: tensor<3x8xf16>, %w: tensor<8xf16>) -> tensor<3x8xf16> {
  %eps = kiln.constant dense<1.0e-05> : tensor<f32>
  %xf = kiln.cast %x to f32 : (tensor<3x8xf16>) -> tensor<3x8xf32>
  %sq = kiln.mul %xf, %xf : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %ms = kiln.reduce %sq {axes = array<i64: 1>, kind = #kiln<reduce mean>} : (tensor<3x8xf32>) -> tensor<3x1xf32>
  %e = kiln.add %ms, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %i = kiln.rsqrt %e : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %y = kiln.mul %xf, %i : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  %wf = kiln.cast %w to f32 : (tensor<8xf16>) -> tensor<8xf32>
  %yw = kiln.mul %y, %wf : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %o = kiln.cast %yw to f16 : (tensor<3x8xf32>) -> tensor<3x8xf16>
  return %o : tensor<3x8xf16>
}

// -----

// Fused, but what else reads stays: the f32 copy of x another op reads, and a
// weight over a dim that is not normalized ([3, 1] against [3, 8] over the
// last dim), which stays a product after the op.
// CHECK-LABEL: func.func @partly
// CHECK: %[[XF:.*]] = kiln.cast %arg0 to f32
// CHECK: %[[N:.*]] = kiln.rms_norm %arg0 {axis = 1 : i64} : (tensor<3x8xbf16>) -> tensor<3x8xbf16>
// CHECK: %[[W:.*]] = kiln.mul %[[N]], %arg1
// CHECK: return %[[W]], %[[XF]]
func.func @partly(%x: tensor<3x8xbf16>, %w: tensor<3x1xbf16>) -> (tensor<3x8xbf16>, tensor<3x8xf32>) {
  %eps = kiln.constant dense<1.0e-05> : tensor<f32>
  %xf = kiln.cast %x to f32 : (tensor<3x8xbf16>) -> tensor<3x8xf32>
  %sq = kiln.mul %xf, %xf : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %ms = kiln.reduce %sq {axes = array<i64: 1>, kind = #kiln<reduce mean>} : (tensor<3x8xf32>) -> tensor<3x1xf32>
  %e = kiln.add %ms, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %i = kiln.rsqrt %e : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %y = kiln.mul %xf, %i : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  %yb = kiln.cast %y to bf16 : (tensor<3x8xf32>) -> tensor<3x8xbf16>
  %o = kiln.mul %yb, %w : (tensor<3x8xbf16>, tensor<3x1xbf16>) -> tensor<3x8xbf16>
  return %o, %xf : tensor<3x8xbf16>, tensor<3x8xf32>
}

// -----

// Not RMSNorm, or not one the op states: a mean over a leading dim, a sum
// instead of a mean, a negative epsilon, a square of another value than the
// one scaled, the inverse read elsewhere (SimplifiedLayerNormalization's
// inv_std_var output), a cube, a mean that drops its dim, and an epsilon of
// two values.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-8: kiln.reduce
// CHECK-NOT: kiln.rms_norm
// CHECK: return
func.func @left_alone(%x: tensor<3x4xf32>, %v: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x1xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x4xf32>, tensor<3x2xf32>) {
  %eps = kiln.constant dense<1.0e-05> : tensor<f32>
  %neg = kiln.constant dense<-1.0> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %sq = kiln.mul %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %m1 = kiln.reduce %sq {axes = array<i64: 0>, kind = #kiln<reduce mean>} : (tensor<3x4xf32>) -> tensor<1x4xf32>
  %e1 = kiln.add %m1, %eps : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
  %i1 = kiln.rsqrt %e1 : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %y1 = kiln.mul %x, %i1 : (tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  %sq2 = kiln.mul %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %m2 = kiln.reduce %sq2 {axes = array<i64: 1>, kind = #kiln<reduce sum>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %e2 = kiln.add %m2, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %i2 = kiln.rsqrt %e2 : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %y2 = kiln.mul %x, %i2 : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %sq3 = kiln.mul %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %m3 = kiln.reduce %sq3 {axes = array<i64: 1>, kind = #kiln<reduce mean>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %e3 = kiln.add %m3, %neg : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %i3 = kiln.rsqrt %e3 : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %y3 = kiln.mul %x, %i3 : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %sq4 = kiln.mul %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %m4 = kiln.reduce %sq4 {axes = array<i64: 1>, kind = #kiln<reduce mean>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %e4 = kiln.add %m4, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %i4 = kiln.rsqrt %e4 : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %y4 = kiln.mul %v, %i4 : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %sq5 = kiln.mul %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %m5 = kiln.reduce %sq5 {axes = array<i64: 1>, kind = #kiln<reduce mean>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %e5 = kiln.add %m5, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %i5 = kiln.rsqrt %e5 : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %y5 = kiln.mul %x, %i5 : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %cube = kiln.pow %x, %three : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %m6 = kiln.reduce %cube {axes = array<i64: 1>, kind = #kiln<reduce mean>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %e6 = kiln.add %m6, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %i6 = kiln.rsqrt %e6 : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %y6 = kiln.mul %x, %i6 : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %shape31 = kiln.constant dense<[3, 1]> : tensor<2xi64>
  %sq7 = kiln.mul %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %m7 = kiln.reduce %sq7 {axes = array<i64: 1>, kind = #kiln<reduce mean>, keep_dims = false} : (tensor<3x4xf32>) -> tensor<3xf32>
  %e7 = kiln.add %m7, %eps : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %i7 = kiln.rsqrt %e7 : (tensor<3xf32>) -> tensor<3xf32>
  %i7b = kiln.reshape %i7, %shape31 : (tensor<3xf32>, tensor<2xi64>) -> tensor<3x1xf32>
  %y7 = kiln.mul %x, %i7b : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %two_eps = kiln.constant dense<[1.0e-05, 2.0e-05]> : tensor<2xf32>
  %sq8 = kiln.mul %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %m8 = kiln.reduce %sq8 {axes = array<i64: 0>, kind = #kiln<reduce mean>} : (tensor<3x4xf32>) -> tensor<1x4xf32>
  %e8 = kiln.add %m8, %eps : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
  %sq9 = kiln.mul %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %m9 = kiln.reduce %sq9 {axes = array<i64: 1>, kind = #kiln<reduce mean>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %e9 = kiln.add %m9, %two_eps : (tensor<3x1xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %y1, %y2, %y3, %y4, %y5, %i5, %y6, %y7, %e8, %e9 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x1xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1x4xf32>, tensor<3x2xf32>
}
