// --kiln-lower-precision: fp16/bf16 storage with fp32 where it matters; tf32
// marks the function only. (The numbers: onnx.conformance.*.static.{fp16,bf16,
// tf32} and test/run/precision.test against the float64 reference.)
// RUN: kiln-opt %s -split-input-file --kiln-lower-precision=precision=fp16 | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-lower-precision=precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: kiln-opt %s -split-input-file --kiln-lower-precision=precision=tf32 | FileCheck %s --check-prefix=TF32
// RUN: kiln-opt %s -split-input-file --kiln-lower-precision | FileCheck %s --check-prefix=FP32

// A layer: the input is cast once, weights are narrow constants, the matmul,
// its bias and the layer norm run narrow, the reduction keeps fp32 (its input
// cast back), and the outputs are cast back to the function's types.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: kiln.precision = #kiln<precision fp16>
// CHECK: %[[X:.*]] = kiln.cast %arg0 to f16 : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf16
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{.*}}> : tensor<4x8xf16>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<{{.*}}> : tensor<8xf16>
// CHECK: %[[M:.*]] = kiln.matmul %[[X]], %[[W]], %[[B]] : ({{.*}}xf16{{.*}}, tensor<4x8xf16>, tensor<8xf16>) -> tensor<?x8xf16
// CHECK: %[[N:.*]] = kiln.layer_norm %[[M]], {{.*}} -> tensor<?x8xf16
// CHECK: %[[WIDE:.*]] = kiln.cast %[[N]] to f32 : (tensor<?x8xf16, {{.*}}) -> tensor<?x8xf32
// CHECK: %[[S:.*]] = kiln.reduce %[[WIDE]] {{.*}} -> tensor<?x1xf32
// CHECK: %[[OUT:.*]] = kiln.cast %[[N]] to f32
// CHECK: return %[[OUT]], %[[S]] : tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>
// BF16-LABEL: func.func @layer
// BF16: kiln.cast %arg0 to bf16
// BF16: kiln.matmul {{.*}} -> tensor<?x8xbf16
// TF32-LABEL: func.func @layer
// TF32-SAME: kiln.precision = #kiln<precision tf32>
// TF32-NOT: kiln.cast
// TF32: kiln.matmul {{.*}} -> tensor<?x8xf32
// TF32-NOT: kiln.cast
// TF32: return
// FP32-LABEL: func.func @layer(
// FP32-NOT: kiln.precision
// FP32-NOT: kiln.cast
// FP32: return
func.func @layer(%x: tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>) {
  %w = kiln.constant dense<0.5> : tensor<4x8xf32>
  %b = kiln.constant dense<0.25> : tensor<8xf32>
  %g = kiln.constant dense<1.0> : tensor<8xf32>
  %m = kiln.matmul %x, %w, %b : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %n = kiln.layer_norm %m, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %s = kiln.reduce %n {kind = #kiln<reduce sum>, axes = array<i64: 1>} : (tensor<?x8xf32, #kiln.dims<[n, 8]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  return %n, %s : tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>
}

// -----

// QuantizeLinear's chain (divide, round, add the zero point, clip, cast to an
// integer) keeps fp32 back to its inputs: a narrow rounding would move the
// quantized value by a step. The input is read as it is, never cast down and
// back up, and the constant it divides by stays fp32.
// CHECK-LABEL: func.func @quantize
// CHECK-NOT: f16
// CHECK: kiln.div %arg0, %{{.*}} : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
// CHECK: kiln.round {{.*}} -> tensor<8xf32>
// CHECK: kiln.cast {{.*}} to i8 : (tensor<8xf32>) -> tensor<8xi8>
func.func @quantize(%x: tensor<8xf32>) -> tensor<8xi8> {
  %scale = kiln.constant dense<0.1> : tensor<f32>
  %q = kiln.div %x, %scale : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %r = kiln.round %q : (tensor<8xf32>) -> tensor<8xf32>
  %i = kiln.cast %r to i8 : (tensor<8xf32>) -> tensor<8xi8>
  return %i : tensor<8xi8>
}

// -----

// A cast from an integer to f32 casts to f16 directly; an op that keeps fp32
// (a range: its operands are positions) reads narrow values through a cast
// back, and a compare of narrow values gives i1 as before.
// CHECK-LABEL: func.func @boundaries
// CHECK: %[[C:.*]] = kiln.cast %arg0 to f16 : (tensor<4xi64>) -> tensor<4xf16>
// CHECK: %[[E:.*]] = kiln.exp %[[C]] : (tensor<4xf16>) -> tensor<4xf16>
// CHECK: kiln.compare {{.*}}%[[E]]{{.*}} -> tensor<4xi1>
// CHECK: kiln.range {{.*}} : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32
func.func @boundaries(%i: tensor<4xi64>, %start: tensor<f32>) -> (tensor<4xi1>, tensor<?xf32, #kiln.dims<[r]>>) {
  %f = kiln.cast %i to f32 : (tensor<4xi64>) -> tensor<4xf32>
  %e = kiln.exp %f : (tensor<4xf32>) -> tensor<4xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %gt = kiln.compare %e, %one {direction = #kiln<compare gt>} : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
  %lim = kiln.constant dense<10.0> : tensor<f32>
  %r = kiln.range %start, %lim, %one : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32, #kiln.dims<[r]>>
  return %gt, %r : tensor<4xi1>, tensor<?xf32, #kiln.dims<[r]>>
}

// -----

// A large splat weight stays a splat (large non-splat weights become resource
// blobs in half the bytes: test/run/precision.test's model has one).
// CHECK-LABEL: func.func @large_weight
// CHECK: kiln.constant dense<1.250000e-01> : tensor<128x256xf16>
func.func @large_weight(%x: tensor<2x128xf32>) -> tensor<2x256xf32> {
  %w = kiln.constant dense<0.125> : tensor<128x256xf32>
  %m = kiln.matmul %x, %w : (tensor<2x128xf32>, tensor<128x256xf32>) -> tensor<2x256xf32>
  return %m : tensor<2x256xf32>
}

// -----

// An int8 product's sums (kiln-integer-matmuls, kiln-integer-convs) exceed
// f16's range until their scale multiplies them: the cast of the i32 sum,
// the int8 conv's result, the moves and adds after them and the scale's
// multiply keep fp32; what follows the multiply runs narrow.
// CHECK-LABEL: func.func @integer_sums
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %{{.*}} {transpose_rhs = true} : {{.*}} -> tensor<4x4xi32>
// CHECK: %[[F:.*]] = kiln.cast %[[P]] to f32
// CHECK: %[[S:.*]] = kiln.mul %[[F]], %{{.*}} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
// CHECK: %[[N:.*]] = kiln.cast %[[S]] to f16
// CHECK: kiln.tanh %[[N]] : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK: %[[C:.*]] = kiln.conv %arg2, %{{.*}} {{.*}} -> tensor<1x4x4x4xf32>
// CHECK: %[[T:.*]] = kiln.transpose %[[C]] {{.*}} -> tensor<1x4x4x4xf32>
// CHECK: %[[A:.*]] = kiln.add %[[T]], %{{.*}} -> tensor<1x4x4x4xf32>
// CHECK: kiln.mul %[[A]], %{{.*}} -> tensor<1x4x4x4xf32>
func.func @integer_sums(%a: tensor<4x8xi8>, %w: tensor<4x8xi8>, %x: tensor<1x4x4x4xi8>, %f: tensor<4x1x1x4xi8>) -> (tensor<4x4xf32>, tensor<1x4x4x4xf32>) {
  %p = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x8xi8>, tensor<4x8xi8>) -> tensor<4x4xi32>
  %f32 = kiln.cast %p to f32 : (tensor<4x4xi32>) -> tensor<4x4xf32>
  %s = kiln.constant dense<1.0e-3> : tensor<f32>
  %y = kiln.mul %f32, %s : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %t = kiln.tanh %y : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = kiln.conv %x, %f {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, channels_last = true} : (tensor<1x4x4x4xi8>, tensor<4x1x1x4xi8>) -> tensor<1x4x4x4xf32>
  %first = kiln.transpose %c {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %corr = kiln.constant dense<3.0> : tensor<4x1x1xf32>
  %added = kiln.add %first, %corr : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %scaled = kiln.mul %added, %corr : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
  return %t, %scaled : tensor<4x4xf32>, tensor<1x4x4x4xf32>
}

// -----

// A matmul that kiln-absorb-epilogues gave an erf GELU (for the product to
// run narrow in cuDNN) but whose result reaches an integer cast keeps f32:
// cuDNN would read it as TF32, so the GELU goes back to elementwise ops
// after the product (fp16 and bf16 modes; tf32 keeps it fused).
// CHECK-LABEL: func.func @wide_gelu
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %arg1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK: kiln.erf
// CHECK: kiln.cast {{.*}} to i8
// BF16-LABEL: func.func @wide_gelu
// BF16: kiln.matmul %arg0, %arg1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// BF16: kiln.erf
// TF32-LABEL: func.func @wide_gelu
// TF32: kiln.matmul %arg0, %arg1 {activation = #kiln<activation gelu_erf>}
// TF32-NOT: kiln.erf
func.func @wide_gelu(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xi8> {
  %m = kiln.matmul %x, %w {activation = #kiln<activation gelu_erf>} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = kiln.round %m : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %i = kiln.cast %r to i8 : (tensor<4x16xf32>) -> tensor<4x16xi8>
  return %i : tensor<4x16xi8>
}

// -----

// Float8 products (an FP8 Q/DQ model's): one whose result reaches the next
// QuantizeLinear (a saturating cast to e4m3, here through its scale) keeps
// an f32 result, so that the quantization sees an fp32 value as the model
// computes it; one that reaches an output writes the narrow type itself
// (cuBLASLt's FP8 matmul with a 16-bit D).
// CHECK-LABEL: func.func @float8_products
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %arg1 {alpha = 5.000000e-01 : f64, transpose_rhs = true} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>) -> tensor<4x8xf32>
// CHECK: kiln.mul %[[P]], %{{.*}} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK: kiln.matmul %arg0, %arg1 {alpha = 5.000000e-01 : f64, float8_result = f16, transpose_rhs = true} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>) -> tensor<4x8xf16>
func.func @float8_products(%a: tensor<4x16xf8E4M3FN>, %w: tensor<8x16xf8E4M3FN>) -> (tensor<4x8xf8E4M3FN>, tensor<4x8xf32>) {
  %p = kiln.matmul %a, %w {alpha = 0.5 : f64, transpose_rhs = true} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>) -> tensor<4x8xf32>
  %s = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.mul %p, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %q = kiln.cast %d to f8E4M3FN {saturate = true} : (tensor<4x8xf32>) -> tensor<4x8xf8E4M3FN>
  %p2 = kiln.matmul %a, %w {alpha = 0.5 : f64, transpose_rhs = true} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>) -> tensor<4x8xf32>
  return %q, %p2 : tensor<4x8xf8E4M3FN>, tensor<4x8xf32>
}
