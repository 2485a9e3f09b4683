// --kiln-symmetric-conv-pads: cuDNN takes one pad per spatial dim at both ends;
// asymmetric pads become the shared pad plus a zero pad kernel (Conv) or a
// slice kernel (ConvTranspose). (passes.differential.fusion.* runs the
// interpreter before and after the whole compile pipeline, this pass included;
// test/run/library-steps.test runs both cases in the cuDNN double.)
// RUN: kiln-opt %s -split-input-file --kiln-symmetric-conv-pads | FileCheck %s

// SAME_UPPER with a 2x2 window on a symbolic batch: pads [0, 0] begin, [1, 1]
// end. The conv keeps no pad and reads its input padded by one at each end.
// CHECK-LABEL: func.func @conv_same_upper
// CHECK: %[[PADS:.*]] = kiln.constant dense<[0, 0, 0, 0, 0, 0, 1, 1]> : tensor<8xi64>
// CHECK: %[[P:.*]] = kiln.pad %arg0, %[[PADS]], %{{.*}} {mode = #kiln<pad_mode constant>} {{.*}} -> tensor<?x3x6x6xf32, #kiln.dims<[n, 3, 6, 6]>>
// CHECK: %[[C:.*]] = kiln.conv %[[P]], %arg1 {activation = #kiln<activation relu>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
// CHECK-SAME: -> tensor<?x4x5x5xf32, #kiln.dims<[n, 4, 5, 5]>>
// CHECK: return %[[C]]
func.func @conv_same_upper(%x: tensor<?x3x5x5xf32, #kiln.dims<[n, 3, 5, 5]>>, %w: tensor<4x3x2x2xf32>) -> tensor<?x4x5x5xf32, #kiln.dims<[n, 4, 5, 5]>> {
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, activation = #kiln<activation relu>} : (tensor<?x3x5x5xf32, #kiln.dims<[n, 3, 5, 5]>>, tensor<4x3x2x2xf32>) -> tensor<?x4x5x5xf32, #kiln.dims<[n, 4, 5, 5]>>
  return %c : tensor<?x4x5x5xf32, #kiln.dims<[n, 4, 5, 5]>>
}

// -----

// Pads [1, 2] begin and [2, 1] end: the shared pad is 1 in each dim; the
// input gets [0, 1] more at the begin and [1, 0] at the end.
// CHECK-LABEL: func.func @conv_mixed
// CHECK: kiln.constant dense<[0, 0, 0, 1, 0, 0, 1, 0]> : tensor<8xi64>
// CHECK: kiln.conv {{.*}}pads = array<i64: 1, 1, 1, 1>
func.func @conv_mixed(%x: tensor<1x2x6x6xf32>, %w: tensor<2x2x3x3xf32>, %b: tensor<2xf32>) -> tensor<1x2x7x7xf32> {
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 2, 2, 1>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x7x7xf32>
  return %c : tensor<1x2x7x7xf32>
}

// -----

// A ConvTranspose crops [0, 1] at the begin and [1, 0] at the end: with the
// shared pads (0 each) its full result is sliced.
// CHECK-LABEL: func.func @conv_transpose_asymmetric
// CHECK: %[[T:.*]] = kiln.conv_transpose %arg0, %arg1 {{.*}}pads = array<i64: 0, 0, 0, 0>{{.*}} -> tensor<1x2x5x5xf32>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<[0, 0, 0, 1]> : tensor<4xi64>
// CHECK-DAG: %[[E:.*]] = kiln.constant dense<[4611686018427387904, 4611686018427387904, -1, 4611686018427387904]> : tensor<4xi64>
// CHECK: %[[R:.*]] = kiln.slice %[[T]], %[[S]], %[[E]], %{{.*}} -> tensor<1x2x4x4xf32>
// CHECK: return %[[R]]
func.func @conv_transpose_asymmetric(%x: tensor<1x2x3x3xf32>, %w: tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32> {
  %t = kiln.conv_transpose %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 1, 0>, output_padding = array<i64: 0, 0>} : (tensor<1x2x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  return %t : tensor<1x2x4x4xf32>
}

// -----

// Symmetric pads: nothing changes.
// CHECK-LABEL: func.func @symmetric
// CHECK-NOT: kiln.pad
// CHECK: kiln.conv %arg0, %arg1 {{.*}}pads = array<i64: 1, 1, 1, 1>
func.func @symmetric(%x: tensor<1x2x6x6xf32>, %w: tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32> {
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  return %c : tensor<1x2x6x6xf32>
}
