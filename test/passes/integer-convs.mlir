// --kiln-integer-convs: a 2-D conv of a dequantized int8 activation by a
// dequantized constant int8 filter becomes cuDNN's int8 convolution into f32,
// channels last: the activation padded with its zero point (what a
// dequantized 0 is) and to a multiple of 4 channels, the filter stored
// [M, KH, KW, C'], then - zx * sum(w[m]), the scales and the bias.
// test/run/qdq-int8.test runs a quantized ResNet-18.
// RUN: kiln-opt %s --split-input-file --kiln-integer-convs | FileCheck %s

// An RGB stem: zero point 5, pads 1, scales 0.5 * [1, 2, 3, 4], filter taps
// all 1 (27 a channel: a correction of -135).
// CHECK-LABEL: func @stem
// CHECK: %[[PADS:.*]] = kiln.constant dense<[0, 0, 1, 1, 0, 1, 1, 1]> : tensor<8xi64>
// CHECK: %[[ZX:.*]] = kiln.constant dense<5> : tensor<i8>
// CHECK: %[[P:.*]] = kiln.pad %arg0, %[[PADS]], %[[ZX]] {mode = #kiln<pad_mode constant>} : {{.*}} -> tensor<?x4x10x10xi8, #kiln.dims<[n, 4, 10, 10]>>
// CHECK: %[[W:.*]] = kiln.constant dense<"0x01010100{{.*}}"> : tensor<4x3x3x4xi8>
// CHECK: %[[L:.*]] = kiln.transpose %[[P]] {permutation = array<i64: 0, 2, 3, 1>}
// CHECK: %[[C:.*]] = kiln.conv %[[L]], %[[W]] {channels_last = true, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<?x10x10x4xi8, #kiln.dims<[n, 10, 10, 4]>>, tensor<4x3x3x4xi8>) -> tensor<?x8x8x4xf32, #kiln.dims<[n, 8, 8, 4]>>
// CHECK: %[[F:.*]] = kiln.transpose %[[C]] {permutation = array<i64: 0, 3, 1, 2>}
// CHECK: %[[Z:.*]] = kiln.constant dense<-1.350000e+02> : tensor<4x1x1xf32>
// CHECK: %[[A:.*]] = kiln.add %[[F]], %[[Z]]
// CHECK: %[[S:.*]] = kiln.constant dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}1.000000e+00]], {{\[\[}}1.500000e+00]], {{\[\[}}2.000000e+00]]]> : tensor<4x1x1xf32>
// CHECK: %[[M:.*]] = kiln.mul %[[A]], %[[S]]
// CHECK: %[[B:.*]] = kiln.reshape
// CHECK: %[[Y:.*]] = kiln.add %[[M]], %[[B]]
// CHECK: return %[[Y]]
func.func @stem(%q: tensor<?x3x8x8xi8, #kiln.dims<[n, 3, 8, 8]>>) -> tensor<?x4x8x8xf32, #kiln.dims<[n, 4, 8, 8]>> {
  %x = kiln.cast %q to f32 : (tensor<?x3x8x8xi8, #kiln.dims<[n, 3, 8, 8]>>) -> tensor<?x3x8x8xf32, #kiln.dims<[n, 3, 8, 8]>>
  %zx = kiln.constant dense<5.0> : tensor<f32>
  %xc = kiln.sub %x, %zx : (tensor<?x3x8x8xf32, #kiln.dims<[n, 3, 8, 8]>>, tensor<f32>) -> tensor<?x3x8x8xf32, #kiln.dims<[n, 3, 8, 8]>>
  %sx = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %xc, %sx : (tensor<?x3x8x8xf32, #kiln.dims<[n, 3, 8, 8]>>, tensor<f32>) -> tensor<?x3x8x8xf32, #kiln.dims<[n, 3, 8, 8]>>
  %wq = kiln.constant dense<1> : tensor<4x3x3x3xi8>
  %w = kiln.cast %wq to f32 : (tensor<4x3x3x3xi8>) -> tensor<4x3x3x3xf32>
  %sw = kiln.constant dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]]]> : tensor<4x1x1x1xf32>
  %wf = kiln.mul %w, %sw : (tensor<4x3x3x3xf32>, tensor<4x1x1x1xf32>) -> tensor<4x3x3x3xf32>
  %b = kiln.constant dense<[0.5, 0.25, 0.125, 0.0]> : tensor<4xf32>
  %y = kiln.conv %xf, %wf, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<?x3x8x8xf32, #kiln.dims<[n, 3, 8, 8]>>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32, #kiln.dims<[n, 4, 8, 8]>>
  return %y : tensor<?x4x8x8xf32, #kiln.dims<[n, 4, 8, 8]>>
}

// -----

// Zero point 0 and asymmetric pads (SAME_UPPER, stride 2): the padding is
// explicit anyway, the conv pads nothing (cuDNN pads symmetrically only).
// CHECK-LABEL: func @same_upper
// CHECK: %[[PADS:.*]] = kiln.constant dense<[0, 0, 0, 0, 0, 0, 1, 1]> : tensor<8xi64>
// CHECK: kiln.pad %arg0, %[[PADS]]
// CHECK: kiln.conv {{.*}} {channels_last = true, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
// CHECK-NOT: kiln.add
func.func @same_upper(%q: tensor<1x4x4x4xi8>) -> tensor<1x4x2x2xf32> {
  %x = kiln.cast %q to f32 : (tensor<1x4x4x4xi8>) -> tensor<1x4x4x4xf32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %x, %s : (tensor<1x4x4x4xf32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  %wq = kiln.constant dense<1> : tensor<4x4x2x2xi8>
  %w = kiln.cast %wq to f32 : (tensor<4x4x2x2xi8>) -> tensor<4x4x2x2xf32>
  %wf = kiln.mul %w, %s : (tensor<4x4x2x2xf32>, tensor<f32>) -> tensor<4x4x2x2xf32>
  %y = kiln.conv %xf, %wf {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<4x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  return %y : tensor<1x4x2x2xf32>
}

// -----

// ConvInteger's form: no scales, (x - zx) by cast(w) in f32 (exact integer
// sums), a scale of 1 (its multiply folds later): the conv and its
// correction, 36 taps of 1 times 3.
// CHECK-LABEL: func @conv_integer
// CHECK: kiln.pad %arg0, %{{.*}}, %{{.*}} {mode = #kiln<pad_mode constant>}
// CHECK: kiln.conv {{.*}} {channels_last = true, {{.*}}} : (tensor<1x6x6x4xi8>, tensor<4x3x3x4xi8>) -> tensor<1x4x4x4xf32>
// CHECK: kiln.constant dense<-1.080000e+02> : tensor<4x1x1xf32>
// CHECK: kiln.constant dense<1.000000e+00> : tensor<4x1x1xf32>
// CHECK: return
func.func @conv_integer(%q: tensor<1x4x4x4xi8>) -> tensor<1x4x4x4xf32> {
  %x = kiln.cast %q to f32 : (tensor<1x4x4x4xi8>) -> tensor<1x4x4x4xf32>
  %zx = kiln.constant dense<3.0> : tensor<f32>
  %xc = kiln.sub %x, %zx : (tensor<1x4x4x4xf32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  %wq = kiln.constant dense<1> : tensor<4x4x3x3xi8>
  %w = kiln.cast %wq to f32 : (tensor<4x4x3x3xi8>) -> tensor<4x4x3x3xf32>
  %y = kiln.conv %xc, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// Left alone: a filter with zero points, 6 output channels, two groups.
// CHECK-LABEL: func @left_alone
// CHECK-SAME: why = "its filter has zero points"
// CHECK-SAME: why = "its output channels are not a multiple of 4, which cuDNN's int8 convolution needs"
// CHECK-SAME: why = "only 2-D convolutions of one group map onto cuDNN's int8 convolution"
// CHECK-NOT: channels_last
func.func @left_alone(%q: tensor<1x4x4x4xi8>) -> (tensor<1x4x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x4x4x4xf32>) {
  %x = kiln.cast %q to f32 : (tensor<1x4x4x4xi8>) -> tensor<1x4x4x4xf32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %x, %s : (tensor<1x4x4x4xf32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  %wq = kiln.constant dense<1> : tensor<4x4x1x1xi8>
  %w = kiln.cast %wq to f32 : (tensor<4x4x1x1xi8>) -> tensor<4x4x1x1xf32>
  %z = kiln.constant dense<1.0> : tensor<f32>
  %wc = kiln.sub %w, %z : (tensor<4x4x1x1xf32>, tensor<f32>) -> tensor<4x4x1x1xf32>
  %wf = kiln.mul %wc, %s : (tensor<4x4x1x1xf32>, tensor<f32>) -> tensor<4x4x1x1xf32>
  %y0 = kiln.conv %xf, %wf {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %vq = kiln.constant dense<1> : tensor<6x4x1x1xi8>
  %v = kiln.cast %vq to f32 : (tensor<6x4x1x1xi8>) -> tensor<6x4x1x1xf32>
  %vf = kiln.mul %v, %s : (tensor<6x4x1x1xf32>, tensor<f32>) -> tensor<6x4x1x1xf32>
  %y1 = kiln.conv %xf, %vf {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x4x4xf32>
  %gq = kiln.constant dense<1> : tensor<4x2x1x1xi8>
  %g = kiln.cast %gq to f32 : (tensor<4x2x1x1xi8>) -> tensor<4x2x1x1xf32>
  %gf = kiln.mul %g, %s : (tensor<4x2x1x1xf32>, tensor<f32>) -> tensor<4x2x1x1xf32>
  %y2 = kiln.conv %xf, %gf {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64} : (tensor<1x4x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
  return %y0, %y1, %y2 : tensor<1x4x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x4x4x4xf32>
}
