// --kiln-absorb-epilogues: the epilogues cuBLASLt and cuDNN apply themselves move
// into the matmul or conv. (passes.differential.fusion.* runs the interpreter
// before and after the whole compile pipeline, this pass included.)
// RUN: kiln-opt %s -split-input-file --kiln-absorb-epilogues | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-absorb-epilogues=precision=tf32 | FileCheck %s --check-prefix=TF32
// RUN: kiln-opt %s -split-input-file --kiln-absorb-epilogues=precision=bf16 | FileCheck %s --check-prefix=BF16

// A matmul absorbs a bias over its last dim and a ReLU (cuBLASLt epilogues); a
// conv absorbs a ReLU (cuDNN's conv-bias-activation).
// CHECK-LABEL: func.func @library_epilogues
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %arg1, %arg2 {activation = #kiln<activation relu>}
// CHECK-NOT: kiln.add
// CHECK: %[[C:.*]] = kiln.conv %arg3, %arg4, %arg5 {activation = #kiln<activation relu>
// CHECK-NOT: kiln.max
// CHECK: return %[[M]], %[[C]]
func.func @library_epilogues(%a: tensor<?x16xf32, #kiln.dims<[n, 16]>>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %x: tensor<1x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %fb: tensor<4xf32>) -> (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<1x4x6x6xf32>) {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %m = kiln.matmul %a, %w : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<16x32xf32>) -> tensor<?x32xf32, #kiln.dims<[n, 32]>>
  %s = kiln.add %m, %b : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<32xf32>) -> tensor<?x32xf32, #kiln.dims<[n, 32]>>
  %r = kiln.max %s, %zero : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<f32>) -> tensor<?x32xf32, #kiln.dims<[n, 32]>>
  %c = kiln.conv %x, %f, %fb {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %cr = kiln.max %c, %zero : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  return %r, %cr : tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<1x4x6x6xf32>
}

// -----

// No epilogue when the matmul has other users, when the addend only
// broadcasts to the result (neither a vector over the last dim nor a
// residual of its shape), or for integers.
// CHECK-LABEL: func.func @no_epilogue
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %arg1 :
// CHECK: kiln.add %[[M]], %arg2
// CHECK: kiln.matmul %arg3, %arg4 :
// CHECK: %[[M2:.*]] = kiln.matmul %arg0, %arg1 :
// CHECK: kiln.add %[[M2]], %arg5
func.func @no_epilogue(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>, %res: tensor<1x8xf32>, %i: tensor<4x8xi32>, %iw: tensor<8x8xi32>, %r2: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %m = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = kiln.add %m, %res : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %im = kiln.matmul %i, %iw : (tensor<4x8xi32>, tensor<8x8xi32>) -> tensor<4x8xi32>
  %m2 = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s2 = kiln.add %m2, %r2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s, %im, %s2, %m2 : tensor<4x8xf32>, tensor<4x8xi32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A transformer's residual, x + proj(h) (bf16, symbolic rows): the matmul
// takes x as a bias of its result's shape, cuBLASLt's C with beta 1, and the
// add's kernel goes.
// CHECK-LABEL: func.func @residual
// CHECK: %[[M:.*]] = kiln.matmul %arg1, %arg2, %arg0 : (tensor<?x64xbf16, #kiln.dims<[n, 64]>>, tensor<64x64xbf16>, tensor<?x64xbf16, #kiln.dims<[n, 64]>>) -> tensor<?x64xbf16, #kiln.dims<[n, 64]>>
// CHECK-NOT: kiln.add
// CHECK: return %[[M]]
func.func @residual(%x: tensor<?x64xbf16, #kiln.dims<[n, 64]>>, %h: tensor<?x64xbf16, #kiln.dims<[n, 64]>>, %w: tensor<64x64xbf16>) -> tensor<?x64xbf16, #kiln.dims<[n, 64]>> {
  %p = kiln.matmul %h, %w : (tensor<?x64xbf16, #kiln.dims<[n, 64]>>, tensor<64x64xbf16>) -> tensor<?x64xbf16, #kiln.dims<[n, 64]>>
  %s = kiln.add %x, %p : (tensor<?x64xbf16, #kiln.dims<[n, 64]>>, tensor<?x64xbf16, #kiln.dims<[n, 64]>>) -> tensor<?x64xbf16, #kiln.dims<[n, 64]>>
  return %s : tensor<?x64xbf16, #kiln.dims<[n, 64]>>
}

// -----

// A residual then a ReLU: relu(A B + C), the order cuBLASLt applies them in.
// CHECK-LABEL: func.func @residual_relu
// CHECK: %[[M:.*]] = kiln.matmul %arg1, %arg2, %arg0 {activation = #kiln<activation relu>}
// CHECK-NOT: kiln.max
// CHECK: return %[[M]]
func.func @residual_relu(%x: tensor<4x8xf32>, %h: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %p = kiln.matmul %h, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = kiln.add %x, %p : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = kiln.max %s, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A ResNet block's tail, relu(conv + bias + z): the conv takes z as its
// residual and the ReLU (one cudnnConvolutionBiasActivationForward).
// CHECK-LABEL: func.func @conv_residual_relu
// CHECK: %[[C:.*]] = kiln.conv %arg0, %arg1, %arg2 residual(%arg3) {activation = #kiln<activation relu>
// CHECK-NOT: kiln.add
// CHECK-NOT: kiln.max
// CHECK: return %[[C]]
func.func @conv_residual_relu(%x: tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>, %z: tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>>) -> tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>> {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>>
  %s = kiln.add %z, %c : (tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>>, tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>>) -> tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>>
  %r = kiln.max %s, %zero : (tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>>, tensor<f32>) -> tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>>
  return %r : tensor<?x4x6x6xf32, #kiln.dims<[n, 4, 6, 6]>>
}

// -----

// No residual without a bias (cuDNN's fused call needs one), or when the
// sum has another user.
// CHECK-LABEL: func.func @no_residual
// CHECK-NOT: residual(
// CHECK: return
func.func @no_residual(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>, %z: tensor<1x4x6x6xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %s = kiln.add %c, %z : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %r = kiln.max %s, %zero : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %c2 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %s2 = kiln.add %c2, %z : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %r2 = kiln.max %s2, %zero : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  return %r, %r2, %s2 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

// GELU's tanh form after a matmul and its bias (as kiln imports ONNX
// Gelu(approximate=tanh)) is cuBLASLt's GELU_BIAS epilogue: the chain goes.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %arg1, %arg2 {activation = #kiln<activation gelu_tanh>}
// CHECK-NOT: kiln.tanh
// CHECK: return %[[M]]
func.func @gelu_tanh(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %k = kiln.constant dense<0.0447149985> : tensor<f32>
  %c = kiln.constant dense<0.797884583> : tensor<f32>
  %m = kiln.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y = kiln.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %h = kiln.mul %y, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %sq = kiln.mul %y, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %cube = kiln.mul %sq, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %kc = kiln.mul %cube, %k : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %s = kiln.add %y, %kc : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %in = kiln.mul %s, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %t = kiln.tanh %in : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %a = kiln.add %one, %t : (tensor<f32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = kiln.mul %h, %a : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// HuggingFace's NewGELU as torch exports it: 0.5 * x * (1 + tanh(c * (x +
// 0.044715 * pow(x, 3)))), the products grouped the other way, no bias.
// CHECK-LABEL: func.func @hf_new_gelu
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %arg1 {activation = #kiln<activation gelu_tanh>}
// CHECK-NOT: kiln.pow
// CHECK: return %[[M]]
func.func @hf_new_gelu(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %k = kiln.constant dense<0.044715> : tensor<f32>
  %c = kiln.constant dense<0.7978845608> : tensor<f32>
  %m = kiln.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %p = kiln.pow %m, %three : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %kp = kiln.mul %k, %p : (tensor<f32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s = kiln.add %m, %kp : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %in = kiln.mul %c, %s : (tensor<f32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %t = kiln.tanh %in : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %a = kiln.add %t, %one : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %hx = kiln.mul %half, %m : (tensor<f32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = kiln.mul %hx, %a : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// Not absorbed: the exact (erf) GELU of an f32 product in the fp32 mode
// (cuDNN's fused matmul would take its operands as TF32; cuBLASLt's GELU is
// the tanh approximation, off by up to ~1e-3); a tanh GELU whose input is
// also read elsewhere; a tanh GELU with a wrong coefficient. Where the mode
// allows TF32, the erf GELU goes into the matmul.
// TF32-LABEL: func.func @not_gelu_tanh
// TF32: kiln.matmul %arg0, %arg1 {activation = #kiln<activation gelu_erf>}
// TF32-NOT: kiln.erf
// CHECK-LABEL: func.func @not_gelu_tanh
// CHECK: kiln.matmul %arg0, %arg1 :
// CHECK: kiln.erf
// CHECK: %[[M2:.*]] = kiln.matmul %arg0, %arg1 :
// CHECK: kiln.tanh
// CHECK: %[[M3:.*]] = kiln.matmul %arg0, %arg1 :
// CHECK: kiln.tanh
func.func @not_gelu_tanh(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %rsqrt2 = kiln.constant dense<0.707106769> : tensor<f32>
  %k = kiln.constant dense<0.044715> : tensor<f32>
  %c = kiln.constant dense<0.7978845608> : tensor<f32>
  %wrong = kiln.constant dense<0.8> : tensor<f32>
  %m = kiln.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %h = kiln.mul %m, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %e = kiln.mul %m, %rsqrt2 : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %erf = kiln.erf %e : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %a = kiln.add %erf, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %r = kiln.mul %h, %a : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>

  %m2 = kiln.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %h2 = kiln.mul %m2, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %sq2 = kiln.mul %m2, %m2 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %cube2 = kiln.mul %sq2, %m2 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %kc2 = kiln.mul %cube2, %k : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %s2 = kiln.add %m2, %kc2 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %in2 = kiln.mul %s2, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %t2 = kiln.tanh %in2 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %a2 = kiln.add %t2, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %r2 = kiln.mul %h2, %a2 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>

  %m3 = kiln.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %h3 = kiln.mul %m3, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %sq3 = kiln.mul %m3, %m3 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %cube3 = kiln.mul %sq3, %m3 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %kc3 = kiln.mul %cube3, %k : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %s3 = kiln.add %m3, %kc3 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %in3 = kiln.mul %s3, %wrong : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %t3 = kiln.tanh %in3 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %a3 = kiln.add %t3, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %r3 = kiln.mul %h3, %a3 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r, %r2, %m2, %r3 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// kiln.matmul_nbits takes a following add of a row vector or a residual as
// its bias (its kernel adds it before rounding); an add of anything else
// stays.
// CHECK-LABEL: func @nbits_bias
// CHECK: %[[A:.*]] = kiln.matmul_nbits %arg0, %arg1, %arg2 bias(%arg3) {bits = 4 : i64, block_size = 32 : i64}
// CHECK: %[[B:.*]] = kiln.matmul_nbits %arg0, %arg1, %arg2 bias(%arg4) {bits = 4 : i64, block_size = 32 : i64}
// CHECK: %[[C:.*]] = kiln.matmul_nbits %arg0, %arg1, %arg2 {bits = 4 : i64, block_size = 32 : i64}
// CHECK: kiln.add %[[C]], %arg5
func.func @nbits_bias(%x: tensor<3x64xf32>, %w: tensor<8x2x16xui8>, %s: tensor<8x2xf32>, %v: tensor<8xf32>, %r: tensor<3x8xf32>, %c: tensor<1x8xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) {
  %a = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<3x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<3x8xf32>
  %av = kiln.add %a, %v : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %b = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<3x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<3x8xf32>
  %br = kiln.add %r, %b : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %c0 = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<3x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<3x8xf32>
  %cc = kiln.add %c0, %c : (tensor<3x8xf32>, tensor<1x8xf32>) -> tensor<3x8xf32>
  return %av, %br, %cc : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
}

// -----

// The exact GELU, 0.5 x (1 + erf(x / sqrt(2))) (the division as torch's
// exporter writes it, or a product by 1 / sqrt(2) as kiln's Gelu import
// does), and SiLU, x * sigmoid(x): cuDNN graphs' pointwise ops after the
// product. A bf16 product always takes them; an f32 one only where the mode
// allows TF32. A SiLU whose input is read elsewhere stays.
// CHECK-LABEL: func.func @cudnn_epilogues
// CHECK: %[[G:.*]] = kiln.matmul %arg0, %arg1, %arg2 {activation = #kiln<activation gelu_erf>}
// CHECK: %[[S:.*]] = kiln.matmul %arg0, %arg1 {activation = #kiln<activation silu>}
// CHECK: kiln.matmul %arg3, %arg4 :
// CHECK: kiln.erf
// CHECK: kiln.matmul %arg3, %arg4 :
// CHECK: kiln.sigmoid
// CHECK: %[[K:.*]] = kiln.matmul %arg0, %arg1 :
// CHECK: kiln.sigmoid
// CHECK: return %[[G]], %[[S]]
// TF32-LABEL: func.func @cudnn_epilogues
// TF32: kiln.matmul %arg0, %arg1, %arg2 {activation = #kiln<activation gelu_erf>}
// TF32: kiln.matmul %arg0, %arg1 {activation = #kiln<activation silu>}
// TF32: kiln.matmul %arg3, %arg4 {activation = #kiln<activation gelu_erf>}
// TF32: kiln.matmul %arg3, %arg4 {activation = #kiln<activation silu>}
// TF32-NOT: kiln.erf
// TF32: kiln.sigmoid
func.func @cudnn_epilogues(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xbf16>, %xf: tensor<4x8xf32>, %wf: tensor<8x16xf32>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xbf16>, tensor<4x16xbf16>) {
  %half = kiln.constant dense<0.5> : tensor<bf16>
  %one = kiln.constant dense<1.0> : tensor<bf16>
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<bf16>
  %m = kiln.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %mb = kiln.add %m, %b : (tensor<4x16xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  %d = kiln.div %mb, %sqrt2 : (tensor<4x16xbf16>, tensor<bf16>) -> tensor<4x16xbf16>
  %erf = kiln.erf %d : (tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %a = kiln.add %one, %erf : (tensor<bf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %xa = kiln.mul %mb, %a : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %g = kiln.mul %xa, %half : (tensor<4x16xbf16>, tensor<bf16>) -> tensor<4x16xbf16>

  %s = kiln.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %sg = kiln.sigmoid %s : (tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %silu = kiln.mul %sg, %s : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>

  %halff = kiln.constant dense<0.5> : tensor<f32>
  %onef = kiln.constant dense<1.0> : tensor<f32>
  %rsqrt2 = kiln.constant dense<0.707106769> : tensor<f32>
  %mf = kiln.matmul %xf, %wf : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %hf = kiln.mul %mf, %halff : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %ef = kiln.mul %mf, %rsqrt2 : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %erff = kiln.erf %ef : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %af = kiln.add %erff, %onef : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %gf = kiln.mul %hf, %af : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>

  %sf = kiln.matmul %xf, %wf : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %sgf = kiln.sigmoid %sf : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %siluf = kiln.mul %sf, %sgf : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>

  %k = kiln.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %kg = kiln.sigmoid %k : (tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %kept = kiln.mul %k, %kg : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  return %g, %silu, %gf, %siluf, %kept, %k : tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xbf16>, tensor<4x16xbf16>
}

// -----

// A SwiGLU gate, silu(x Wg) * (x Wu), stays: kiln-merge-sibling-matmuls makes
// the two products one call, and the kernel after them reads both either way.
// TF32-LABEL: func.func @swiglu_gate
// TF32: kiln.matmul %arg0, %arg1 :
// TF32: kiln.sigmoid
// TF32: kiln.matmul %arg0, %arg2 :
func.func @swiglu_gate(%x: tensor<4x8xbf16>, %wg: tensor<8x16xbf16>, %wu: tensor<8x16xbf16>) -> tensor<4x16xbf16> {
  %g = kiln.matmul %x, %wg : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %s = kiln.sigmoid %g : (tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %silu = kiln.mul %g, %s : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %u = kiln.matmul %x, %wu : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %h = kiln.mul %silu, %u : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  return %h : tensor<4x16xbf16>
}

// -----

// In bf16 a coefficient must be the value rounded to bf16, not a neighbour
// of it: 0.99609375 is not 1, so this is no GELU.
// CHECK-LABEL: func.func @near_miss
// CHECK: kiln.matmul %arg0, %arg1 :
// CHECK: kiln.erf
func.func @near_miss(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>) -> tensor<4x16xbf16> {
  %half = kiln.constant dense<0.5> : tensor<bf16>
  %almost = kiln.constant dense<0.99609375> : tensor<bf16>
  %r = kiln.constant dense<0.707106769> : tensor<bf16>
  %m = kiln.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %h = kiln.mul %m, %half : (tensor<4x16xbf16>, tensor<bf16>) -> tensor<4x16xbf16>
  %e = kiln.mul %m, %r : (tensor<4x16xbf16>, tensor<bf16>) -> tensor<4x16xbf16>
  %erf = kiln.erf %e : (tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %a = kiln.add %erf, %almost : (tensor<4x16xbf16>, tensor<bf16>) -> tensor<4x16xbf16>
  %g = kiln.mul %h, %a : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  return %g : tensor<4x16xbf16>
}

// -----

// Float8 products (FP8 Q/DQ models): cuBLASLt's FP8 matmul takes no bias
// and no GELU with an f32 result, so in the fp32 and tf32 modes the bias
// add (and the ReLU after it) stay; where the mode gives the product a
// 16-bit result (kiln-lower-precision), it takes both. The erf GELU never
// (no cuDNN graph takes float8 operands); a ReLU right after the product
// always.
// CHECK-LABEL: func.func @float8_products
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %arg1 {alpha = 2.500000e-01 : f64, transpose_rhs = true} :
// CHECK: kiln.add %[[M]], %arg2
// CHECK: kiln.max
// CHECK: kiln.erf
// CHECK: kiln.matmul %arg0, %arg1 {activation = #kiln<activation relu>, alpha = 2.500000e-01 : f64, transpose_rhs = true} :
// TF32-LABEL: func.func @float8_products
// TF32: %[[M:.*]] = kiln.matmul %arg0, %arg1 {alpha = 2.500000e-01 : f64, transpose_rhs = true} :
// TF32: kiln.add %[[M]], %arg2
// TF32: kiln.max
// TF32: kiln.erf
// BF16-LABEL: func.func @float8_products
// BF16: kiln.matmul %arg0, %arg1, %arg2 {activation = #kiln<activation relu>, alpha = 2.500000e-01 : f64, transpose_rhs = true} :
// BF16-NOT: kiln.max
// BF16: kiln.matmul %arg0, %arg1 {alpha = 2.500000e-01 : f64, transpose_rhs = true} :
// BF16: kiln.erf
func.func @float8_products(%a: tensor<4x16xf8E4M3FN>, %w: tensor<8x16xf8E4M3FN>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %m = kiln.matmul %a, %w {alpha = 0.25 : f64, transpose_rhs = true} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>) -> tensor<4x8xf32>
  %s = kiln.add %m, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = kiln.max %s, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %rsqrt2 = kiln.constant dense<0.707106769> : tensor<f32>
  %m2 = kiln.matmul %a, %w {alpha = 0.25 : f64, transpose_rhs = true} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>) -> tensor<4x8xf32>
  %h = kiln.mul %m2, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = kiln.mul %m2, %rsqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %erf = kiln.erf %e : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %ea = kiln.add %erf, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %g = kiln.mul %h, %ea : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m3 = kiln.matmul %a, %w {alpha = 0.25 : f64, transpose_rhs = true} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>) -> tensor<4x8xf32>
  %r3 = kiln.max %m3, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %r, %g, %r3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
