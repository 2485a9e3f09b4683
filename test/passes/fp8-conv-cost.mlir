// --kiln-fp8-matmuls takes a conv only where the device model predicts the
// FP8 product of its patches faster than the bf16 conv (Fp8Matmuls.cpp,
// fp8PredictedFaster). Per output position, in ns:
// - 512 channels, 3x3: bf16 4.77 (compute-bound), FP8 1.31 for the patch
//   row's bytes and 2.38 for the product: taken at a symbolic batch;
// - 64 channels: bf16 0.075, FP8 0.164 + 0.164: the patches cost more than
//   FP8 saves;
// - 512 channels at a static batch of 1: the patch kernel's 2 us launch
//   over 16 positions adds 125.
// RUN: rm -rf %t && mkdir -p %t/calib/test_data_set_0
// RUN: %python -c "import numpy as np; np.save('%t/calib/test_data_set_0/input_0.npy', np.ones((1, 512, 4, 4), np.float32))"
// RUN: kiln-opt %s --kiln-fp8-matmuls="calibration=%t/calib" | FileCheck %s

// CHECK-LABEL: func.func @wide
// CHECK: kiln.matmul {{.*}} : (tensor<?x4608xf8E4M3FN, #kiln.dims<[16 * n, 4608]>>, tensor<512x4608xf8E4M3FN>) -> tensor<?x512xf32
// CHECK-NOT: kiln.conv
func.func @wide(%x: tensor<?x512x4x4xf32, #kiln.dims<[n, 512, 4, 4]>>) -> tensor<?x512x4x4xf32, #kiln.dims<[n, 512, 4, 4]>> {
  %w = kiln.constant dense<0.01> : tensor<512x512x3x3xf32>
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x512x4x4xf32, #kiln.dims<[n, 512, 4, 4]>>, tensor<512x512x3x3xf32>) -> tensor<?x512x4x4xf32, #kiln.dims<[n, 512, 4, 4]>>
  return %y : tensor<?x512x4x4xf32, #kiln.dims<[n, 512, 4, 4]>>
}

// CHECK-LABEL: func.func @narrow
// CHECK: kiln.conv
func.func @narrow(%x: tensor<?x64x4x4xf32, #kiln.dims<[n, 64, 4, 4]>>) -> tensor<?x64x4x4xf32, #kiln.dims<[n, 64, 4, 4]>> {
  %w = kiln.constant dense<0.01> : tensor<64x64x3x3xf32>
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x64x4x4xf32, #kiln.dims<[n, 64, 4, 4]>>, tensor<64x64x3x3xf32>) -> tensor<?x64x4x4xf32, #kiln.dims<[n, 64, 4, 4]>>
  return %y : tensor<?x64x4x4xf32, #kiln.dims<[n, 64, 4, 4]>>
}

// CHECK-LABEL: func.func @batch_of_one
// CHECK: kiln.conv
func.func @batch_of_one(%x: tensor<1x512x4x4xf32>) -> tensor<1x512x4x4xf32> {
  %w = kiln.constant dense<0.01> : tensor<512x512x3x3xf32>
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x512x4x4xf32>, tensor<512x512x3x3xf32>) -> tensor<1x512x4x4xf32>
  return %y : tensor<1x512x4x4xf32>
}
