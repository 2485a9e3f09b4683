// --kiln-select-conv-layout: fp16/bf16 2-D convs with channel counts that are
// multiples of 8 and one group run channels last (NHWC, KRSC filter); the
// rest stay NCHW. (passes.differential.fusion.* runs the interpreter before
// and after the whole compile pipeline, this pass included.)
// RUN: kiln-opt %s -split-input-file --kiln-select-conv-layout | FileCheck %s

// Two NHWC convs in a row: the input goes NHWC once, the constant filters are
// transposed at compile time (KRSC), the transposes between the convs compose
// away, and only the last result goes back to NCHW.
// CHECK-LABEL: func.func @chain
// CHECK: %[[X:.*]] = kiln.transpose %arg0 {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x8x6x6xf16>) -> tensor<1x6x6x8xf16>
// CHECK: %[[C1:.*]] = kiln.conv %[[X]], %{{.*}}, %arg1 {activation = #kiln<activation relu>, channels_last = true{{.*}}} : (tensor<1x6x6x8xf16>, tensor<16x3x3x8xf16>, tensor<16xf16>) -> tensor<1x6x6x16xf16>
// CHECK-NOT: kiln.transpose
// CHECK: %[[C2:.*]] = kiln.conv %[[C1]], %{{.*}} {channels_last = true{{.*}}} : (tensor<1x6x6x16xf16>, tensor<8x1x1x16xf16>) -> tensor<1x6x6x8xf16>
// CHECK: %[[Y:.*]] = kiln.transpose %[[C2]] {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x6x6x8xf16>) -> tensor<1x8x6x6xf16>
// CHECK: return %[[Y]]
func.func @chain(%x: tensor<1x8x6x6xf16>, %b: tensor<16xf16>) -> tensor<1x8x6x6xf16> {
  %w1 = kiln.constant dense<0.5> : tensor<16x8x3x3xf16>
  %w2 = kiln.constant dense<0.25> : tensor<8x16x1x1xf16>
  %c1 = kiln.conv %x, %w1, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, activation = #kiln<activation relu>} : (tensor<1x8x6x6xf16>, tensor<16x8x3x3xf16>, tensor<16xf16>) -> tensor<1x16x6x6xf16>
  %c2 = kiln.conv %c1, %w2 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x16x6x6xf16>, tensor<8x16x1x1xf16>) -> tensor<1x8x6x6xf16>
  return %c2 : tensor<1x8x6x6xf16>
}

// -----

// A residual goes NHWC with the input; a filter computed at run time is
// transposed by a kernel.
// CHECK-LABEL: func.func @residual
// CHECK-DAG: %[[X:.*]] = kiln.transpose %arg0 {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-DAG: %[[W:.*]] = kiln.transpose %arg1 {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-DAG: %[[Z:.*]] = kiln.transpose %arg3 {permutation = array<i64: 0, 2, 3, 1>}
// CHECK: kiln.conv %[[X]], %[[W]], %arg2 residual(%[[Z]]) {{{.*}}channels_last = true
func.func @residual(%x: tensor<2x8x4x4xbf16>, %w: tensor<8x8x3x3xbf16>, %b: tensor<8xbf16>, %z: tensor<2x8x4x4xbf16>) -> tensor<2x8x4x4xbf16> {
  %c = kiln.conv %x, %w, %b residual(%z) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, activation = #kiln<activation relu>} : (tensor<2x8x4x4xbf16>, tensor<8x8x3x3xbf16>, tensor<8xbf16>, tensor<2x8x4x4xbf16>) -> tensor<2x8x4x4xbf16>
  return %c : tensor<2x8x4x4xbf16>
}

// -----

// NCHW stays: fp32 (NCHW kernels are as fast), channels not multiples of 8
// (an RGB stem), a grouped conv, a 1-D conv.
// CHECK-LABEL: func.func @stays_nchw
// CHECK-NOT: channels_last
// CHECK-NOT: kiln.transpose
// CHECK: return
func.func @stays_nchw(%x32: tensor<1x8x6x6xf32>, %w32: tensor<8x8x3x3xf32>, %rgb: tensor<1x3x6x6xf16>, %wrgb: tensor<8x3x3x3xf16>,
                      %xg: tensor<1x16x6x6xf16>, %wg: tensor<16x8x3x3xf16>, %x1: tensor<1x8x10xf16>, %w1: tensor<8x8x3xf16>)
    -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf16>, tensor<1x16x4x4xf16>, tensor<1x8x8xf16>) {
  %a = kiln.conv %x32, %w32 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %b = kiln.conv %rgb, %wrgb {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x6x6xf16>, tensor<8x3x3x3xf16>) -> tensor<1x8x4x4xf16>
  %c = kiln.conv %xg, %wg {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64} : (tensor<1x16x6x6xf16>, tensor<16x8x3x3xf16>) -> tensor<1x16x4x4xf16>
  %d = kiln.conv %x1, %w1 {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x8x10xf16>, tensor<8x8x3xf16>) -> tensor<1x8x8xf16>
  return %a, %b, %c, %d : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf16>, tensor<1x16x4x4xf16>, tensor<1x8x8xf16>
}

// -----

// A pool cuDNN runs between two NHWC convs pools the NHWC tensor: no
// transpose is left between the convs. A pool whose input is NCHW data (the
// function's argument) stays NCHW.
// CHECK-LABEL: func.func @conv_pool_conv
// CHECK: %[[X:.*]] = kiln.transpose %arg0 {permutation = array<i64: 0, 2, 3, 1>}
// CHECK: %[[C1:.*]] = kiln.conv %[[X]], {{.*}}channels_last = true
// CHECK-NOT: kiln.transpose
// CHECK: %[[P:.*]] = kiln.pool %[[C1]] {channels_last = true{{.*}}} : (tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16>
// CHECK-NOT: kiln.transpose
// CHECK: %[[C2:.*]] = kiln.conv %[[P]], {{.*}}channels_last = true
// CHECK: kiln.transpose %[[C2]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK: kiln.pool %arg0 {
// CHECK-NOT: channels_last
// CHECK: return
func.func @conv_pool_conv(%x: tensor<1x8x8x8xf16>) -> (tensor<1x8x4x4xf16>, tensor<1x8x4x4xf16>) {
  %w1 = kiln.constant dense<0.5> : tensor<16x8x3x3xf16>
  %w2 = kiln.constant dense<0.25> : tensor<8x16x1x1xf16>
  %c1 = kiln.conv %x, %w1 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xf16>, tensor<16x8x3x3xf16>) -> tensor<1x16x8x8xf16>
  %p = kiln.pool %c1 {kind = #kiln<pool max>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x16x8x8xf16>) -> tensor<1x16x4x4xf16>
  %c2 = kiln.conv %p, %w2 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x16x4x4xf16>, tensor<8x16x1x1xf16>) -> tensor<1x8x4x4xf16>
  %q = kiln.pool %x {kind = #kiln<pool avg>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x8x8x8xf16>) -> tensor<1x8x4x4xf16>
  return %c2, %q : tensor<1x8x4x4xf16>, tensor<1x8x4x4xf16>
}
