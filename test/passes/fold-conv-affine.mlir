// --kiln-fold-conv-affine: per-channel constant arithmetic after a conv (an
// inference batch norm, as imported) moves into the conv's filter and bias.
// (passes.differential.fusion.* runs the interpreter before and after the whole
// compile pipeline, this pass included; test/run/conv-batchnorm.test runs an
// ONNX Conv + BatchNormalization against the reference.)
// RUN: kiln-opt %s -split-input-file --kiln-fold-conv-affine | FileCheck %s

// The batch norm chain (x - mean) * factor + bias, constants [C, 1, 1]: one
// conv remains, its filter scaled per output channel and its bias
// (b - mean) * factor + bias. Filter [2, 1, 1, 1] = [1, 2], bias [0.5, -1],
// mean [1, 2], factor [2, 3], bias [10, 20]: filter [2, 6], bias
// [(0.5 - 1) * 2 + 10, (-1 - 2) * 3 + 20] = [9, 11].
// CHECK-LABEL: func.func @batch_norm
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}6.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<[9.000000e+00, 1.100000e+01]> : tensor<2xf32>
// CHECK: %[[C:.*]] = kiln.conv %arg0, %[[W]], %[[B]]
// CHECK-NOT: kiln.sub
// CHECK-NOT: kiln.mul
// CHECK-NOT: kiln.add
// CHECK: return %[[C]]
func.func @batch_norm(%x: tensor<?x1x4x4xf32, #kiln.dims<[n, 1, 4, 4]>>) -> tensor<?x2x4x4xf32, #kiln.dims<[n, 2, 4, 4]>> {
  %w = kiln.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %b = kiln.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = kiln.constant dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>
  %factor = kiln.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %shift = kiln.constant dense<[[[10.0]], [[20.0]]]> : tensor<2x1x1xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<?x1x4x4xf32, #kiln.dims<[n, 1, 4, 4]>>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<?x2x4x4xf32, #kiln.dims<[n, 2, 4, 4]>>
  %s = kiln.sub %c, %mean : (tensor<?x2x4x4xf32, #kiln.dims<[n, 2, 4, 4]>>, tensor<2x1x1xf32>) -> tensor<?x2x4x4xf32, #kiln.dims<[n, 2, 4, 4]>>
  %m = kiln.mul %s, %factor : (tensor<?x2x4x4xf32, #kiln.dims<[n, 2, 4, 4]>>, tensor<2x1x1xf32>) -> tensor<?x2x4x4xf32, #kiln.dims<[n, 2, 4, 4]>>
  %a = kiln.add %m, %shift : (tensor<?x2x4x4xf32, #kiln.dims<[n, 2, 4, 4]>>, tensor<2x1x1xf32>) -> tensor<?x2x4x4xf32, #kiln.dims<[n, 2, 4, 4]>>
  return %a : tensor<?x2x4x4xf32, #kiln.dims<[n, 2, 4, 4]>>
}

// -----

// No bias yet, a scalar, c - conv (the filter negated) and a [1, C, 1, 1]
// constant: filter [1, 2] * 3 = [3, 6] (bias [0, 0]); 1 - conv: filter
// [-3, -6], bias [1, 1]; + [1, 2] along dim 1: bias [2, 3].
// CHECK-LABEL: func.func @scalar_and_reversed
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[\[\[}}-3.000000e+00]]], {{\[\[\[}}-6.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK: %[[C:.*]] = kiln.conv %arg0, %[[W]], %[[B]]
// CHECK-NEXT: return %[[C]]
func.func @scalar_and_reversed(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = kiln.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %add = kiln.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %m = kiln.mul %c, %three : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %r = kiln.sub %one, %m : (tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %a = kiln.add %r, %add : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %a : tensor<1x2x4x4xf32>
}

// -----

// Left alone: a constant that varies along a spatial dim, a conv with another
// user, and a filter that is not a constant.
// CHECK-LABEL: func.func @left_alone
// CHECK: %[[C:.*]] = kiln.conv %arg0, %{{.*}} {
// CHECK: kiln.mul %[[C]]
// CHECK: %[[D:.*]] = kiln.conv %arg0, %{{.*}} {
// CHECK: kiln.add %[[D]]
// CHECK: %[[E:.*]] = kiln.conv %arg0, %arg1 {
// CHECK: kiln.mul %[[E]]
func.func @left_alone(%x: tensor<1x1x4x4xf32>, %wv: tensor<2x1x1x1xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = kiln.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %spatial = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %m = kiln.mul %c, %spatial : (tensor<1x2x4x4xf32>, tensor<4xf32>) -> tensor<1x2x4x4xf32>
  %d = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %a = kiln.add %d, %two : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %e = kiln.conv %x, %wv {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %n = kiln.mul %e, %two : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  return %m, %a, %d, %n : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}
