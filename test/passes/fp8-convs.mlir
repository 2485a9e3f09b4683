// --kiln-fp8-matmuls on convolutions: a conv by a constant filter becomes
// the float8 product of its input's patches (passes/ConvPatches.h) by the
// filter's rows.
// RUN: rm -rf %t && mkdir -p %t/calib/test_data_set_0
// RUN: %python -c "import numpy as np; rng = np.random.default_rng(5); np.save('%t/calib/test_data_set_0/input_0.npy', rng.integers(-8, 9, (2, 2, 5, 5)).astype(np.float32)); np.save('%t/calib/test_data_set_0/input_1.npy', rng.integers(-8, 9, (2, 8, 3, 3)).astype(np.float32)); np.save('%t/x.npy', rng.integers(-8, 9, (3, 2, 5, 5)).astype(np.float32)); np.save('%t/r.npy', rng.integers(-8, 9, (3, 8, 3, 3)).astype(np.float32))"
// RUN: kiln-opt %s --kiln-fp8-matmuls="calibration=%t/calib every-conv" | FileCheck %s
// RUN: kiln-opt %s --kiln-fp8-matmuls="calibration=%t/calib every-conv" -o %t/fp8.mlir
//
// The rewrite computes the conv exactly where e4m3 holds the operands: the
// inputs are integers of -8..8 and the filter's taps multiples of 0.25 up
// to 0.5, each exact in e4m3 at its power-of-two scale, so the float8
// function equals the float one (the float64 interpreter runs both). A tap
// in the wrong column, a pad on the wrong side or a stride misread would
// not.
// RUN: kiln-reference %s --no-optimize --input x=%t/x.npy --input r=%t/r.npy --output-dir %t/float > /dev/null
// RUN: kiln-reference %t/fp8.mlir --no-optimize --input x=%t/x.npy --input r=%t/r.npy --output-dir %t/fp8 > /dev/null
// RUN: %python %S/../run/compare_outputs.py %t/fp8/output_0.pb %t/float/output_0.pb --atol 1e-6 | FileCheck %s --check-prefix=EXACT
// RUN: %python %S/../run/compare_outputs.py %t/fp8/output_1.pb %t/float/output_1.pb --atol 1e-6 | FileCheck %s --check-prefix=EXACT
// EXACT: OK max abs diff 0{{$}}

// A 3x3 conv, stride 2, padded 1 above and below, 0 left and 2 right: the padded
// channels-last input, a strided slice a tap, the taps joined along the
// channels (18 a row) and padded to 32 (cuBLASLt's FP8 rows of 16 bytes).
// The inputs' range is 8: a scale of 2^-5, so the rows are multiplied by 32;
// the filter's range 0.5, a scale of 2^-9; alpha 2^-14. The bias stays in the
// call; the residual comes after the result's reshape and transpose, then
// the ReLU.
// CHECK-LABEL: func.func @convs
// CHECK: %[[LAST:.*]] = kiln.transpose %arg0 {permutation = array<i64: 0, 2, 3, 1>}
// CHECK: %[[PADDED:.*]] = kiln.pad %[[LAST]], %{{.*}}, %{{.*}} {mode = #kiln<pad_mode constant>} : {{.*}} -> tensor<?x7x7x2xf32, #kiln.dims<[n, 7, 7, 2]>>
// CHECK-COUNT-9: kiln.slice %[[PADDED]]
// CHECK: %[[TAPS:.*]] = kiln.concat {{.*}} {axis = 3 : i64} : {{.*}} -> tensor<?x3x3x18xf32, #kiln.dims<[n, 3, 3, 18]>>
// CHECK: %[[ROWS:.*]] = kiln.reshape %[[TAPS]], {{.*}} -> tensor<?x18xf32, #kiln.dims<[9 * n, 18]>>
// CHECK: %[[WIDE:.*]] = kiln.pad %[[ROWS]], {{.*}} -> tensor<?x32xf32, #kiln.dims<[9 * n, 32]>>
// CHECK: %[[W:.*]] = kiln.constant {{.*}} : tensor<8x32xf8E4M3FN>
// CHECK: %[[S:.*]] = kiln.constant dense<3.200000e+01> : tensor<f32>
// CHECK: %[[X:.*]] = kiln.mul %[[WIDE]], %[[S]]
// CHECK: %[[Q:.*]] = kiln.cast %[[X]] to f8E4M3FN {kiln.fp8_operand}
// CHECK: %[[P:.*]] = kiln.matmul %[[Q]], %[[W]], %{{.*}} {alpha = 6.103515625E-5 : f64, transpose_rhs = true} : {{.*}} -> tensor<?x8xf32, #kiln.dims<[9 * n, 8]>>
// CHECK: %[[SPATIAL:.*]] = kiln.reshape %[[P]], {{.*}} -> tensor<?x3x3x8xf32, #kiln.dims<[n, 3, 3, 8]>>
// CHECK: %[[Y:.*]] = kiln.transpose %[[SPATIAL]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK: %[[SUM:.*]] = kiln.add %[[Y]], %arg1
// CHECK: kiln.max %[[SUM]], %{{.*}} :
// A 1x1 conv with dilation 2 on a 2x2 filter and no residual: the ReLU in
// the call (4 taps of 2 channels: 8 a row, padded to 16).
// CHECK: kiln.matmul {{.*}} {activation = #kiln<activation relu>, alpha = {{.*}}, transpose_rhs = true} : (tensor<?x16xf8E4M3FN, #kiln.dims<[9 * n, 16]>>, tensor<8x16xf8E4M3FN>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[9 * n, 8]>>
// 4 output channels (16-bit result rows of 8 bytes) and a grouped conv stay.
// CHECK: kiln.conv %arg0, %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
// CHECK: kiln.conv %arg0, %{{.*}} {dilations = array<i64: 1, 1>, group = 2 : i64
func.func @convs(%x: tensor<?x2x5x5xf32, #kiln.dims<[n, 2, 5, 5]>> {kiln.name = "x"}, %r: tensor<?x8x3x3xf32, #kiln.dims<[n, 8, 3, 3]>> {kiln.name = "r"}) -> (tensor<?x8x3x3xf32, #kiln.dims<[n, 8, 3, 3]>>, tensor<?x8x3x3xf32, #kiln.dims<[n, 8, 3, 3]>>, tensor<?x4x5x5xf32, #kiln.dims<[n, 4, 5, 5]>>, tensor<?x8x5x5xf32, #kiln.dims<[n, 8, 5, 5]>>) {
  %w = kiln.constant dense<[[[[0.5, -0.25, 0.0], [0.25, 0.5, -0.5], [0.0, 0.25, -0.25]], [[-0.5, 0.0, 0.25], [0.5, -0.25, 0.0], [0.25, 0.25, -0.5]]], [[[0.25, 0.0, -0.25], [0.5, 0.5, 0.0], [-0.5, 0.25, 0.0]], [[0.0, -0.25, 0.5], [-0.25, 0.0, 0.25], [0.5, -0.5, 0.25]]], [[[0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [-0.5, -0.5, -0.5]], [[0.25, 0.0, 0.0], [0.0, 0.25, 0.0], [0.0, 0.0, 0.25]]], [[[-0.25, 0.25, -0.25], [0.25, -0.25, 0.25], [-0.25, 0.25, -0.25]], [[0.0, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.0]]], [[[0.5, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, -0.5]], [[0.0, 0.0, 0.25], [0.0, 0.0, 0.0], [0.25, 0.0, 0.0]]], [[[0.0, 0.25, 0.0], [0.25, -0.5, 0.25], [0.0, 0.25, 0.0]], [[0.5, 0.25, 0.0], [0.25, 0.0, -0.25], [0.0, -0.25, -0.5]]], [[[-0.5, -0.25, 0.0], [-0.25, 0.0, 0.25], [0.0, 0.25, 0.5]], [[0.25, 0.5, 0.25], [0.0, 0.0, 0.0], [-0.25, -0.5, -0.25]]], [[[0.0, 0.0, 0.5], [0.0, 0.5, 0.0], [0.5, 0.0, 0.0]], [[-0.25, -0.25, -0.25], [0.5, 0.5, 0.5], [-0.25, -0.25, -0.25]]]]> : tensor<8x2x3x3xf32>
  %b = kiln.constant dense<[0.25, -0.5, 0.0, 0.5, -0.25, 0.75, 0.0, -1.0]> : tensor<8xf32>
  %y = kiln.conv %x, %w, %b residual(%r) {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 0, 1, 2>, activation = #kiln<activation relu>, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<?x2x5x5xf32, #kiln.dims<[n, 2, 5, 5]>>, tensor<8x2x3x3xf32>, tensor<8xf32>, tensor<?x8x3x3xf32, #kiln.dims<[n, 8, 3, 3]>>) -> tensor<?x8x3x3xf32, #kiln.dims<[n, 8, 3, 3]>>
  %w1 = kiln.constant dense<[[[[0.5, -0.25], [0.25, 0.0]], [[0.0, 0.5], [-0.5, 0.25]]], [[[0.25, 0.25], [0.25, 0.25]], [[-0.25, -0.25], [-0.25, -0.25]]], [[[0.5, 0.0], [0.0, 0.5]], [[0.0, 0.5], [0.5, 0.0]]], [[[-0.5, 0.5], [0.5, -0.5]], [[0.25, 0.0], [0.0, 0.0]]], [[[0.0, 0.0], [0.0, 0.5]], [[0.5, 0.0], [0.0, 0.0]]], [[[0.25, -0.5], [0.0, 0.25]], [[-0.25, 0.5], [0.25, 0.0]]], [[[0.5, 0.5], [-0.5, -0.5]], [[0.0, 0.25], [0.0, 0.25]]], [[[0.0, -0.25], [0.5, 0.0]], [[0.25, 0.0], [0.0, -0.5]]]]> : tensor<8x2x2x2xf32>
  %b1 = kiln.constant dense<0.5> : tensor<8xf32>
  %d = kiln.conv %x, %w1, %b1 {strides = array<i64: 1, 1>, dilations = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, activation = #kiln<activation relu>, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<?x2x5x5xf32, #kiln.dims<[n, 2, 5, 5]>>, tensor<8x2x2x2xf32>, tensor<8xf32>) -> tensor<?x8x3x3xf32, #kiln.dims<[n, 8, 3, 3]>>
  %w2 = kiln.constant dense<1.0> : tensor<4x2x1x1xf32>
  %z = kiln.conv %x, %w2 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<?x2x5x5xf32, #kiln.dims<[n, 2, 5, 5]>>, tensor<4x2x1x1xf32>) -> tensor<?x4x5x5xf32, #kiln.dims<[n, 4, 5, 5]>>
  %w3 = kiln.constant dense<0.5> : tensor<8x1x1x1xf32>
  %g = kiln.conv %x, %w3 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64} : (tensor<?x2x5x5xf32, #kiln.dims<[n, 2, 5, 5]>>, tensor<8x1x1x1xf32>) -> tensor<?x8x5x5xf32, #kiln.dims<[n, 8, 5, 5]>>
  return %y, %d, %z, %g : tensor<?x8x3x3xf32, #kiln.dims<[n, 8, 3, 3]>>, tensor<?x8x3x3xf32, #kiln.dims<[n, 8, 3, 3]>>, tensor<?x4x5x5xf32, #kiln.dims<[n, 4, 5, 5]>>, tensor<?x8x5x5xf32, #kiln.dims<[n, 8, 5, 5]>>
}
