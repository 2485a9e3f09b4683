// Every diagnostic of the composite ops.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @matmul_elements(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+1 {{'kiln.matmul' op rhs must have the input's element type}}
  %r = kiln.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @float8_result_not_float8(%a: tensor<2x16xf32>, %b: tensor<16x8xf32>) {
  // expected-error @+1 {{'kiln.matmul' op float8_result is f32, f16 or bf16, for float8 operands only}}
  %0 = kiln.matmul %a, %b {float8_result = bf16} : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xbf16>
  return
}

// -----

func.func @float8_e5m2(%a: tensor<2x16xf8E5M2>, %b: tensor<8x16xf8E5M2>) {
  // expected-error @+1 {{'kiln.matmul' op float8 operands are f8E4M3FN (cuBLASLt's e5m2 products are not taken)}}
  %0 = kiln.matmul %a, %b {transpose_rhs = true} : (tensor<2x16xf8E5M2>, tensor<8x16xf8E5M2>) -> tensor<2x8xf32>
  return
}

// -----

func.func @float8_erf_gelu(%a: tensor<2x16xf8E4M3FN>, %b: tensor<8x16xf8E4M3FN>) {
  // expected-error @+1 {{'kiln.matmul' op a float8 product's activation is relu or gelu_tanh (cuBLASLt's)}}
  %0 = kiln.matmul %a, %b {transpose_rhs = true, activation = #kiln<activation gelu_erf>} : (tensor<2x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>) -> tensor<2x8xf32>
  return
}

// -----

func.func @alpha_on_float(%a: tensor<2x16xf32>, %b: tensor<16x8xf32>) {
  // expected-error @+1 {{'kiln.matmul' op alpha scales float8 products only}}
  %0 = kiln.matmul %a, %b {alpha = 2.0 : f64} : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @float8_bias_type(%a: tensor<2x16xf8E4M3FN>, %b: tensor<8x16xf8E4M3FN>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'kiln.matmul' op a float8 product's bias has the result's element type}}
  %0 = kiln.matmul %a, %b, %c {transpose_rhs = true, float8_result = bf16} : (tensor<2x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>, tensor<8xf32>) -> tensor<2x8xbf16>
  return
}

// -----

func.func @int8_product_bias(%a: tensor<2x4xi8>, %b: tensor<4x4xi8>, %c: tensor<4xi32>) {
  // expected-error @+1 {{'kiln.matmul' op an 8-bit integer product takes no bias or activation}}
  %r = kiln.matmul %a, %b, %c : (tensor<2x4xi8>, tensor<4x4xi8>, tensor<4xi32>) -> tensor<2x4xi32>
  return
}

// -----

func.func @int8_product_type(%a: tensor<2x4xi8>, %b: tensor<4x4xi8>) {
  // expected-error @+1 {{'kiln.matmul' op result #0 has type 'tensor<2x4xi8>', which contradicts the inferred type 'tensor<2x4xi32>'}}
  %r = kiln.matmul %a, %b : (tensor<2x4xi8>, tensor<4x4xi8>) -> tensor<2x4xi8>
  return
}

// -----

func.func @int8_conv_layout(%x: tensor<1x4x4x4xi8>, %w: tensor<4x4x1x1xi8>) {
  // expected-error @+1 {{'kiln.conv' op an 8-bit integer conv is channels last and takes no bias, residual or activation}}
  %r = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x4xi8>, tensor<4x4x1x1xi8>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @conv_elements(%x: tensor<1x4x4x4xi32>, %w: tensor<4x4x1x1xi32>) {
  // expected-error @+1 {{'kiln.conv' op input must be float or 8-bit integers}}
  %r = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x4xi32>, tensor<4x4x1x1xi32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.matmul' op operands must have rank >= 1}}
  %r = kiln.matmul %a, %b : (tensor<f32>, tensor<3xf32>) -> tensor<f32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'kiln.matmul' op contraction dims (lhs dim -1, rhs dim -2) must match, but is 3 and 4}}
  %r = kiln.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<5x3x4xf32>) {
  // expected-error @+1 {{'kiln.matmul' op operands are not broadcast-compatible}}
  %r = kiln.matmul %a, %b : (tensor<2x2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<3x32xf32>, %w: tensor<3x32xf32>) {
  // expected-error @+1 {{'kiln.conv' op input and filter must have one rank >= 3 ([N, C, spatial...])}}
  %y = kiln.conv %x, %w {strides = array<i64>, dilations = array<i64>, pads = array<i64>} : (tensor<3x32xf32>, tensor<3x32xf32>) -> tensor<3x32xf32>
  return
}

// -----

func.func @conv_filter_rank(%x: tensor<1x3x32xf32>, %w: tensor<3x3x3x3xf32>) {
  // expected-error @+1 {{'kiln.conv' op input and filter must have one rank >= 3 ([N, C, spatial...])}}
  %y = kiln.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x3x32xf32>, tensor<3x3x3x3xf32>) -> tensor<1x3x30xf32>
  return
}

// -----

func.func @conv_filter_element(%x: tensor<1x3x32xf32>, %w: tensor<4x3x3xf16>) {
  // expected-error @+1 {{'kiln.conv' op filter must have the input's element type}}
  %y = kiln.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x3x32xf32>, tensor<4x3x3xf16>) -> tensor<1x4x30xf32>
  return
}

// -----

func.func @conv_gelu(%x: tensor<1x3x32xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'kiln.conv' op activation is none or relu (gelu_tanh is a matmul epilogue)}}
  %y = kiln.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, activation = #kiln<activation gelu_tanh>} : (tensor<1x3x32xf32>, tensor<4x3x3xf32>) -> tensor<1x4x30xf32>
  return
}

// -----

func.func @conv_gelu_erf(%x: tensor<1x3x32xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'kiln.conv' op activation is none or relu (gelu_erf is a matmul epilogue)}}
  %y = kiln.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, activation = #kiln<activation gelu_erf>} : (tensor<1x3x32xf32>, tensor<4x3x3xf32>) -> tensor<1x4x30xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<1x3x32xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'kiln.conv' op group must be >= 1, got 0}}
  %y = kiln.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, group = 0 : i64} : (tensor<1x3x32xf32>, tensor<4x3x3xf32>) -> tensor<1x4x30xf32>
  return
}

// -----

func.func @conv_strides_count(%x: tensor<1x3x32xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'kiln.conv' op strides has 2 entries; expected 1}}
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x3x32xf32>, tensor<4x3x3xf32>) -> tensor<1x4x30xf32>
  return
}

// -----

func.func @conv_zero_stride(%x: tensor<1x3x32xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'kiln.conv' op strides entries must be >= 1, got 0}}
  %y = kiln.conv %x, %w {strides = array<i64: 0>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x3x32xf32>, tensor<4x3x3xf32>) -> tensor<1x4x30xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x32xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error @+1 {{'kiln.conv' op input channels and filter dim 1 * group must match, but is 3 and 2}}
  %y = kiln.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x3x32xf32>, tensor<4x2x3xf32>) -> tensor<1x4x30xf32>
  return
}

// -----

func.func @conv_group_divides_filters(%x: tensor<1x4x32xf32>, %w: tensor<3x2x3xf32>) {
  // expected-error @+1 {{'kiln.conv' op filter dim 0 (3) is not divisible by group 2}}
  %y = kiln.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, group = 2 : i64} : (tensor<1x4x32xf32>, tensor<3x2x3xf32>) -> tensor<1x3x30xf32>
  return
}

// -----

func.func @conv_bias_element(%x: tensor<1x3x32xf32>, %w: tensor<4x3x3xf32>, %b: tensor<4xf64>) {
  // expected-error @+1 {{'kiln.conv' op bias must have the input's element type}}
  %y = kiln.conv %x, %w, %b {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x3x32xf32>, tensor<4x3x3xf32>, tensor<4xf64>) -> tensor<1x4x30xf32>
  return
}

// -----

func.func @conv_bias_shape(%x: tensor<1x3x32xf32>, %w: tensor<4x3x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{'kiln.conv' op bias size and filter dim 0 must match, but is 5 and 4}}
  %y = kiln.conv %x, %w, %b {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x3x32xf32>, tensor<4x3x3xf32>, tensor<5xf32>) -> tensor<1x4x30xf32>
  return
}

// -----

func.func @conv_bias_rank(%x: tensor<1x3x32xf32>, %w: tensor<4x3x3xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+1 {{'kiln.conv' op bias must be 1-D with one entry per output channel}}
  %y = kiln.conv %x, %w, %b {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x3x32xf32>, tensor<4x3x3xf32>, tensor<1x4xf32>) -> tensor<1x4x30xf32>
  return
}

// -----

func.func @conv_window_too_large(%x: tensor<1x3x2xf32>, %w: tensor<4x3x5xf32>) {
  // expected-error @+1 {{'kiln.conv' op the window is larger than the padded input}}
  %y = kiln.conv %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x3x2xf32>, tensor<4x3x5xf32>) -> tensor<1x4x1xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<3x32xf32>) {
  // expected-error @+1 {{'kiln.pool' op input must have rank >= 3 ([N, C, spatial...])}}
  %y = kiln.pool %x {kind = #kiln<pool max>, kernel_shape = array<i64>, strides = array<i64>, pads = array<i64>, dilations = array<i64>} : (tensor<3x32xf32>) -> tensor<3x32xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x3x32xf32>) {
  // expected-error @+1 {{'kiln.pool' op kernel_shape entries must be >= 1, got 0}}
  %y = kiln.pool %x {kind = #kiln<pool max>, kernel_shape = array<i64: 0>, strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x3x32xf32>) -> tensor<1x3x32xf32>
  return
}

// -----

func.func @pool_p(%x: tensor<1x3x32xf32>) {
  // expected-error @+1 {{'kiln.pool' op p must be >= 1}}
  %y = kiln.pool %x {kind = #kiln<pool lp>, kernel_shape = array<i64: 2>, strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, p = 0 : i64} : (tensor<1x3x32xf32>) -> tensor<1x3x31xf32>
  return
}

// -----

func.func @pool_window_too_large(%x: tensor<1x3x2xf32>) {
  // expected-error @+1 {{'kiln.pool' op the window is larger than the padded input in spatial dim 0}}
  %y = kiln.pool %x {kind = #kiln<pool avg>, kernel_shape = array<i64: 4>, strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<1x3x2xf32>) -> tensor<1x3x1xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.softmax' op axis 2 is out of range for rank 2}}
  %y = kiln.softmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @rms_norm_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.rms_norm' op axis 2 is out of range for rank 2}}
  %y = kiln.rms_norm %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @rms_norm_scale_element(%x: tensor<2x3xbf16>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.rms_norm' op scale must have the input's element type}}
  %y = kiln.rms_norm %x, %g : (tensor<2x3xbf16>, tensor<3xf32>) -> tensor<2x3xbf16>
  return
}

// -----

func.func @rms_norm_scale_shape(%x: tensor<2x3xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.rms_norm' op operands are not broadcast-compatible}}
  %y = kiln.rms_norm %x, %g : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x3xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.layer_norm' op axis -3 is out of range for rank 2}}
  %y = kiln.layer_norm %x, %g {axis = -3 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_scale_element(%x: tensor<2x3xf32>, %g: tensor<3xf16>) {
  // expected-error @+1 {{'kiln.layer_norm' op scale must have the input's element type}}
  %y = kiln.layer_norm %x, %g : (tensor<2x3xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_scale_rank(%x: tensor<2x3xf32>, %g: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.layer_norm' op scale has more dims than the normalized trailing dims}}
  %y = kiln.layer_norm %x, %g : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<2x3xf32>, %g: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.layer_norm' op operands are not broadcast-compatible}}
  %y = kiln.layer_norm %x, %g, %b : (tensor<2x3xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @conv_transpose_rank(%x: tensor<1x4x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{'kiln.conv_transpose' op input and filter must have one rank >= 3 ([N, C, spatial...])}}
  %y = kiln.conv_transpose %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, output_padding = array<i64: 0>} : (tensor<1x4x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x10xf32>
  return
}

// -----

func.func @conv_transpose_filter_type(%x: tensor<1x4x8xf32>, %w: tensor<4x2x3xf16>) {
  // expected-error @+1 {{'kiln.conv_transpose' op filter must have the input's element type}}
  %y = kiln.conv_transpose %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, output_padding = array<i64: 0>} : (tensor<1x4x8xf32>, tensor<4x2x3xf16>) -> tensor<1x2x10xf32>
  return
}

// -----

func.func @conv_transpose_group(%x: tensor<1x4x8xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error @+1 {{'kiln.conv_transpose' op group must be >= 1, got 0}}
  %y = kiln.conv_transpose %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, output_padding = array<i64: 0>, group = 0 : i64} : (tensor<1x4x8xf32>, tensor<4x2x3xf32>) -> tensor<1x2x10xf32>
  return
}

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x4x8xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error @+1 {{'kiln.conv_transpose' op output_padding has 2 entries; expected 1}}
  %y = kiln.conv_transpose %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, output_padding = array<i64: 0, 0>} : (tensor<1x4x8xf32>, tensor<4x2x3xf32>) -> tensor<1x2x10xf32>
  return
}

// -----

func.func @conv_transpose_channels(%x: tensor<1x4x8xf32>, %w: tensor<3x2x3xf32>) {
  // expected-error @+1 {{'kiln.conv_transpose' op input channels and filter dim 0 must match, but is 4 and 3}}
  %y = kiln.conv_transpose %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, output_padding = array<i64: 0>} : (tensor<1x4x8xf32>, tensor<3x2x3xf32>) -> tensor<1x2x10xf32>
  return
}

// -----

func.func @conv_transpose_bias_type(%x: tensor<1x4x8xf32>, %w: tensor<4x2x3xf32>, %b: tensor<2xf16>) {
  // expected-error @+1 {{'kiln.conv_transpose' op bias must have the input's element type}}
  %y = kiln.conv_transpose %x, %w, %b {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, output_padding = array<i64: 0>} : (tensor<1x4x8xf32>, tensor<4x2x3xf32>, tensor<2xf16>) -> tensor<1x2x10xf32>
  return
}

// -----

func.func @conv_transpose_bias_rank(%x: tensor<1x4x8xf32>, %w: tensor<4x2x3xf32>, %b: tensor<1x2xf32>) {
  // expected-error @+1 {{'kiln.conv_transpose' op bias must be 1-D with one entry per output channel}}
  %y = kiln.conv_transpose %x, %w, %b {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, output_padding = array<i64: 0>} : (tensor<1x4x8xf32>, tensor<4x2x3xf32>, tensor<1x2xf32>) -> tensor<1x2x10xf32>
  return
}

// -----

func.func @conv_transpose_bias_size(%x: tensor<1x4x8xf32>, %w: tensor<4x2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.conv_transpose' op bias size and output channels must match, but is 3 and 2}}
  %y = kiln.conv_transpose %x, %w, %b {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, output_padding = array<i64: 0>} : (tensor<1x4x8xf32>, tensor<4x2x3xf32>, tensor<3xf32>) -> tensor<1x2x10xf32>
  return
}

// -----

func.func @conv_transpose_pads(%x: tensor<1x4x2xf32>, %w: tensor<4x2x1xf32>) {
  // expected-error @+1 {{'kiln.conv_transpose' op the pads exceed the output in spatial dim 0}}
  %y = kiln.conv_transpose %x, %w {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 2, 2>, output_padding = array<i64: 0>} : (tensor<1x4x2xf32>, tensor<4x2x1xf32>) -> tensor<1x2x?xf32>
  return
}

// -----

func.func @matmul_bias_rank(%a: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<2x4x6xf32>) {
  // expected-error @+1 {{'kiln.matmul' op bias must be 1-D (one value per result column) or of the result's shape (a residual)}}
  %m = kiln.matmul %a, %w, %b : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<2x4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

// A residual is the result's shape, not one that broadcasts to it (cuBLASLt's
// C has D's layout).
func.func @matmul_residual_broadcasts(%a: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<1x6xf32>) {
  // expected-error @+1 {{'kiln.matmul' op dim 0 of the bias and the result must match, but is 4 and 1}}
  %m = kiln.matmul %a, %w, %b : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @matmul_bias_length(%a: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{'kiln.matmul' op bias length (the result's last dim) must match, but is 6 and 5}}
  %m = kiln.matmul %a, %w, %b : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<5xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @matmul_bias_type(%a: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<6xf16>) {
  // expected-error @+1 {{'kiln.matmul' op bias must have the input's element type}}
  %m = kiln.matmul %a, %w, %b : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf16>) -> tensor<4x6xf32>
  return
}

// -----

// A transposed operand must be a matrix (or a batch of them).
func.func @vector_flag(%a: tensor<4xf32>, %b: tensor<4x5xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{transpose_lhs needs a lhs of rank >= 2}}
  %m = kiln.matmul %a, %b {transpose_lhs = true} : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  return %m : tensor<5xf32>
}

// -----

func.func @attention_rank(%q: tensor<2x4x8xf32>, %k: tensor<2x3x4x8xf32>, %v: tensor<2x3x4x8xf32>) {
  // expected-error @+1 {{'kiln.attention' op query, key and value must have one rank >= 2 ([.., rows, features])}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_element(%q: tensor<4x8xf32>, %k: tensor<4x8xf16>, %v: tensor<4x8xf32>) {
  // expected-error @+1 {{'kiln.attention' op key must have the input's element type}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x4x5x8xf32>, %k: tensor<3x4x5x8xf32>, %v: tensor<3x4x5x8xf32>) {
  // expected-error @+1 {{leading dim of key}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x4x5x8xf32>, tensor<3x4x5x8xf32>, tensor<3x4x5x8xf32>) -> tensor<2x4x5x8xf32>
  return
}

// -----

func.func @attention_groups(%q: tensor<2x6x5x8xf32>, %k: tensor<2x4x5x8xf32>, %v: tensor<2x4x5x8xf32>) {
  // expected-error @+1 {{key heads (4) must divide query heads (6)}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x6x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>) -> tensor<2x6x5x8xf32>
  return
}

// -----

func.func @attention_group_values(%q: tensor<2x8x5x8xf32>, %k: tensor<2x4x5x8xf32>, %v: tensor<2x2x5x8xf32>) {
  // expected-error @+1 {{heads of value}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x2x5x8xf32>) -> tensor<2x8x5x8xf32>
  return
}

// -----

func.func @attention_mask_type(%q: tensor<5x8xf32>, %k: tensor<6x8xf32>, %v: tensor<6x8xf32>, %m: tensor<5x6xi32>) {
  // expected-error @+1 {{mask must have the input's element type}}
  %o = kiln.attention %q, %k, %v, %m {scale = 1.0 : f64} : (tensor<5x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<5x6xi32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @attention_keys(%q: tensor<5x8xf32>, %k: tensor<6x8xf32>, %v: tensor<7x8xf32>) {
  // expected-error @+1 {{key count of value}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<5x8xf32>, tensor<6x8xf32>, tensor<7x8xf32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @attention_features(%q: tensor<5x8xf32>, %k: tensor<6x4xf32>, %v: tensor<6x8xf32>) {
  // expected-error @+1 {{feature dim of key}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<5x8xf32>, tensor<6x4xf32>, tensor<6x8xf32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @attention_mask_rank(%q: tensor<5x8xf32>, %k: tensor<6x8xf32>, %v: tensor<6x8xf32>, %m: tensor<1x5x6xf32>) {
  // expected-error @+1 {{'kiln.attention' op mask has more dims than the scores}}
  %o = kiln.attention %q, %k, %v, %m {scale = 1.0 : f64} : (tensor<5x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<1x5x6xf32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @attention_mask_shape(%q: tensor<5x8xf32>, %k: tensor<6x8xf32>, %v: tensor<6x8xf32>, %m: tensor<5x7xf32>) {
  // expected-error @+1 {{'kiln.attention' op operands are not broadcast-compatible: dim 1 (from the right: 1) is 6 in one and 7 in another}}
  %o = kiln.attention %q, %k, %v, %m {scale = 1.0 : f64} : (tensor<5x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<5x7xf32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @nbits_bits(%x: tensor<2x80xf32>, %w: tensor<24x3x12xui8>, %s: tensor<24x3xf32>) {
  // expected-error @+1 {{'kiln.matmul_nbits' op bits must be 2, 4 or 8, not 3}}
  %r = kiln.matmul_nbits %x, %w, %s {bits = 3 : i64, block_size = 32 : i64} : (tensor<2x80xf32>, tensor<24x3x12xui8>, tensor<24x3xf32>) -> tensor<2x24xf32>
  return
}

// -----

func.func @nbits_glu_columns(%x: tensor<2x80xf32>, %w: tensor<24x3x16xui8>, %s: tensor<24x3xf32>) {
  // expected-error @+1 {{'kiln.matmul_nbits' op glu needs the columns in groups of 16 (8 gates, 8 ups), not 24}}
  %r = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64, glu} : (tensor<2x80xf32>, tensor<24x3x16xui8>, tensor<24x3xf32>) -> tensor<2x12xf32>
  return
}

// -----

func.func @nbits_glu_residual(%x: tensor<2x80xf32>, %w: tensor<32x3x16xui8>, %s: tensor<32x3xf32>, %r: tensor<2x32xf32>) {
  // expected-error @+1 {{'kiln.matmul_nbits' op glu's bias must be [32]}}
  %y = kiln.matmul_nbits %x, %w, %s bias(%r) {bits = 4 : i64, block_size = 32 : i64, glu} : (tensor<2x80xf32>, tensor<32x3x16xui8>, tensor<32x3xf32>, tensor<2x32xf32>) -> tensor<2x16xf32>
  return
}

// -----

func.func @nbits_block(%x: tensor<2x80xf32>, %w: tensor<24x3x12xui8>, %s: tensor<24x3xf32>) {
  // expected-error @+1 {{'kiln.matmul_nbits' op block_size must be a power of 2 from 16 to 2^20, not 24}}
  %r = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 24 : i64} : (tensor<2x80xf32>, tensor<24x3x12xui8>, tensor<24x3xf32>) -> tensor<2x24xf32>
  return
}

// -----

func.func @nbits_k(%x: tensor<2x?xf32>, %w: tensor<24x3x16xui8>, %s: tensor<24x3xf32>) {
  // expected-error @+1 {{'kiln.matmul_nbits' op the input's last dim (K) must be known}}
  %r = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<2x?xf32>, tensor<24x3x16xui8>, tensor<24x3xf32>) -> tensor<2x24xf32>
  return
}

// -----

func.func @nbits_weights(%x: tensor<2x80xf32>, %w: tensor<24x2x16xui8>, %s: tensor<24x3xf32>) {
  // expected-error @+1 {{'kiln.matmul_nbits' op weights must be [N, 3, 16] for K 80 in blocks of 32 at 4 bits}}
  %r = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<2x80xf32>, tensor<24x2x16xui8>, tensor<24x3xf32>) -> tensor<2x24xf32>
  return
}

// -----

func.func @nbits_scales(%x: tensor<2x80xf32>, %w: tensor<24x3x16xui8>, %s: tensor<3x24xf32>) {
  // expected-error @+1 {{'kiln.matmul_nbits' op scales must be [24, 3]}}
  %r = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<2x80xf32>, tensor<24x3x16xui8>, tensor<3x24xf32>) -> tensor<2x24xf32>
  return
}

// -----

func.func @nbits_zero_points(%x: tensor<2x80xf32>, %w: tensor<24x3x16xui8>, %s: tensor<24x3xf32>, %z: tensor<24x3xui8>) {
  // expected-error @+1 {{'kiln.matmul_nbits' op zero_points must be ui8 [24, 2] (packed) or float [24, 3]}}
  %r = kiln.matmul_nbits %x, %w, %s, %z {bits = 4 : i64, block_size = 32 : i64} : (tensor<2x80xf32>, tensor<24x3x16xui8>, tensor<24x3xf32>, tensor<24x3xui8>) -> tensor<2x24xf32>
  return
}

// -----

func.func @nbits_bias(%x: tensor<2x80xf32>, %w: tensor<24x3x16xui8>, %s: tensor<24x3xf32>, %b: tensor<2x1xf32>) {
  // expected-error @+1 {{'kiln.matmul_nbits' op bias must be [24] or the result's shape}}
  %r = kiln.matmul_nbits %x, %w, %s bias(%b) {bits = 4 : i64, block_size = 32 : i64} : (tensor<2x80xf32>, tensor<24x3x16xui8>, tensor<24x3xf32>, tensor<2x1xf32>) -> tensor<2x24xf32>
  return
}
