// --kiln-absorb-epilogues: the epilogues cuBLASLt and cuDNN apply themselves move
// into the matmul or conv. (passes.differential.fusion.* runs the interpreter
// before and after the whole compile pipeline, this pass included.)
// RUN: kiln-opt %s -split-input-file --kiln-absorb-epilogues | FileCheck %s

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

// No epilogue when the matmul has other users, when the addend is not a vector
// over the last dim (a residual), or for integers.
// CHECK-LABEL: func.func @no_epilogue
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %arg1 :
// CHECK: kiln.add %[[M]], %arg2
// CHECK: kiln.matmul %arg3, %arg4 :
func.func @no_epilogue(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>, %res: tensor<4x8xf32>, %i: tensor<4x8xi32>, %iw: tensor<8x8xi32>) -> (tensor<4x8xf32>, tensor<4x8xi32>) {
  %m = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = kiln.add %m, %res : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %im = kiln.matmul %i, %iw : (tensor<4x8xi32>, tensor<8x8xi32>) -> tensor<4x8xi32>
  return %s, %im : tensor<4x8xf32>, tensor<4x8xi32>
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
