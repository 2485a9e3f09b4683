// Round trip of the composite ops.
// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// 8-bit integers convolve into f32, channels last (cuDNN's int8 convolution).
// CHECK-LABEL: func @int8_conv
// CHECK: kiln.conv %{{.*}}, %{{.*}} {channels_last = true, {{.*}}} : (tensor<?x8x8x4xi8, #kiln.dims<[n, 8, 8, 4]>>, tensor<8x3x3x4xi8>) -> tensor<?x6x6x8xf32, #kiln.dims<[n, 6, 6, 8]>>
func.func @int8_conv(%x: tensor<?x8x8x4xi8, #kiln.dims<[n, 8, 8, 4]>>, %w: tensor<8x3x3x4xi8>) {
  %r = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, channels_last = true} : (tensor<?x8x8x4xi8, #kiln.dims<[n, 8, 8, 4]>>, tensor<8x3x3x4xi8>) -> tensor<?x6x6x8xf32, #kiln.dims<[n, 6, 6, 8]>>
  return
}

// 8-bit integers multiply into i32 (cuBLASLt's int8 matmul).
// CHECK-LABEL: func @int8_product
// CHECK: kiln.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<?x16xi8, #kiln.dims<[m, 16]>>, tensor<8x16xi8>) -> tensor<?x8xi32, #kiln.dims<[m, 8]>>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<2x4xui8>, tensor<4x3xui8>) -> tensor<2x3xi32>
func.func @int8_product(%a: tensor<?x16xi8, #kiln.dims<[m, 16]>>, %w: tensor<8x16xi8>, %u: tensor<2x4xui8>, %v: tensor<4x3xui8>) {
  %r = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<?x16xi8, #kiln.dims<[m, 16]>>, tensor<8x16xi8>) -> tensor<?x8xi32, #kiln.dims<[m, 8]>>
  %s = kiln.matmul %u, %v : (tensor<2x4xui8>, tensor<4x3xui8>) -> tensor<2x3xi32>
  return
}

// CHECK-LABEL: func @matmul
func.func @matmul(%a: tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, %w: tensor<768x3072xf32>, %v: tensor<768xf32>, %w2: tensor<768x768xf32>) {
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<768x3072xf32>) -> tensor<?x?x3072xf32, #kiln.dims<[batch, seq, 3072]>>
  %r = kiln.matmul %a, %w : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<768x3072xf32>) -> tensor<?x?x3072xf32, #kiln.dims<[batch, seq, 3072]>>
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<768xf32>) -> tensor<?x?xf32, #kiln.dims<[batch, seq]>>
  %m = kiln.matmul %a, %v : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<768xf32>) -> tensor<?x?xf32, #kiln.dims<[batch, seq]>>
  // CHECK: kiln.matmul %{{.*}}, %{{.*}}, %{{.*}} {activation = #kiln<activation relu>} : {{.*}} -> tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>
  %e = kiln.matmul %a, %w2, %v {activation = #kiln<activation relu>} : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>
  return
}

// CHECK-LABEL: func @conv_pool
func.func @conv_pool(%x: tensor<?x3x32x32xf32, #kiln.dims<[n, 3, 32, 32]>>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>) {
  // CHECK: kiln.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<?x3x32x32xf32, #kiln.dims<[n, 3, 32, 32]>>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x32x32xf32, #kiln.dims<[n, 16, 32, 32]>>
  %y = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<?x3x32x32xf32, #kiln.dims<[n, 3, 32, 32]>>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x32x32xf32, #kiln.dims<[n, 16, 32, 32]>>
  // CHECK: kiln.conv %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf32, #kiln.dims<[n, 3, 32, 32]>>, tensor<16x3x3x3xf32>) -> tensor<?x16x15x15xf32, #kiln.dims<[n, 16, 15, 15]>>
  %z = kiln.conv %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<?x3x32x32xf32, #kiln.dims<[n, 3, 32, 32]>>, tensor<16x3x3x3xf32>) -> tensor<?x16x15x15xf32, #kiln.dims<[n, 16, 15, 15]>>
  // CHECK: kiln.pool %{{.*}} {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, kind = #kiln<pool max>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<?x16x32x32xf32, #kiln.dims<[n, 16, 32, 32]>>) -> tensor<?x16x16x16xf32, #kiln.dims<[n, 16, 16, 16]>>
  %p = kiln.pool %y {kind = #kiln<pool max>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<?x16x32x32xf32, #kiln.dims<[n, 16, 32, 32]>>) -> tensor<?x16x16x16xf32, #kiln.dims<[n, 16, 16, 16]>>
  // CHECK: kiln.pool %{{.*}} {ceil_mode = true, count_include_pad = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, kind = #kiln<pool avg>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x16x32x32xf32, #kiln.dims<[n, 16, 32, 32]>>) -> tensor<?x16x17x17xf32, #kiln.dims<[n, 16, 17, 17]>>
  %q = kiln.pool %y {kind = #kiln<pool avg>, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true, count_include_pad = true} : (tensor<?x16x32x32xf32, #kiln.dims<[n, 16, 32, 32]>>) -> tensor<?x16x17x17xf32, #kiln.dims<[n, 16, 17, 17]>>
  return
}

// CHECK-LABEL: func @normalizations
func.func @normalizations(%x: tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>, %g: tensor<128xf32>, %bias: tensor<128xf32>) {
  // CHECK: kiln.softmax %{{.*}} {axis = -1 : i64} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  %s = kiln.softmax %x {axis = -1 : i64} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  // CHECK: kiln.log_softmax %{{.*}} {axis = 1 : i64} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  %l = kiln.log_softmax %x {axis = 1 : i64} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  // CHECK: kiln.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>, tensor<128xf32>, tensor<128xf32>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  %n = kiln.layer_norm %x, %g, %bias {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>, tensor<128xf32>, tensor<128xf32>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  // CHECK: kiln.layer_norm %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>, tensor<128xf32>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  %m = kiln.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>, tensor<128xf32>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  // CHECK: kiln.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>, tensor<128xf32>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  %r = kiln.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>, tensor<128xf32>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  // CHECK: kiln.rms_norm %{{.*}} {axis = 1 : i64} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  %u = kiln.rms_norm %x {axis = 1 : i64} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
  return
}

// CHECK-LABEL: func @conv_transpose
func.func @conv_transpose(%x: tensor<1x4x?x8xf32, #kiln.dims<[1, 4, h, 8]>>, %w: tensor<4x2x3x3xf32>) {
  // CHECK: kiln.conv_transpose %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x?x8xf32, #kiln.dims<[1, 4, h, 8]>>, tensor<4x2x3x3xf32>) -> tensor<1x2x?x17xf32, #kiln.dims<[1, 2, 2 * h + 1, 17]>>
  %y = kiln.conv_transpose %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, output_padding = array<i64: 0, 0>} : (tensor<1x4x?x8xf32, #kiln.dims<[1, 4, h, 8]>>, tensor<4x2x3x3xf32>) -> tensor<1x2x?x17xf32, #kiln.dims<[1, 2, 2 * h + 1, 17]>>
  return
}

// CHECK-LABEL: func @attention
func.func @attention(%q: tensor<?x12x?x64xf32, #kiln.dims<[b, 12, s, 64]>>, %k: tensor<?x12x?x64xf32, #kiln.dims<[b, 12, t, 64]>>, %v: tensor<?x12x?x32xf32, #kiln.dims<[b, 12, t, 32]>>, %mask: tensor<?x1x1x?xf32, #kiln.dims<[b, 1, 1, t]>>) {
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64} : {{.*}} -> tensor<?x12x?x32xf32, #kiln.dims<[b, 12, s, 32]>>
  %o = kiln.attention %q, %k, %v {scale = 0.125 : f64} : (tensor<?x12x?x64xf32, #kiln.dims<[b, 12, s, 64]>>, tensor<?x12x?x64xf32, #kiln.dims<[b, 12, t, 64]>>, tensor<?x12x?x32xf32, #kiln.dims<[b, 12, t, 32]>>) -> tensor<?x12x?x32xf32, #kiln.dims<[b, 12, s, 32]>>
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f64} : {{.*}} -> tensor<?x12x?x32xf32, #kiln.dims<[b, 12, s, 32]>>
  %m = kiln.attention %q, %k, %v, %mask {scale = 1.0 : f64} : (tensor<?x12x?x64xf32, #kiln.dims<[b, 12, s, 64]>>, tensor<?x12x?x64xf32, #kiln.dims<[b, 12, t, 64]>>, tensor<?x12x?x32xf32, #kiln.dims<[b, 12, t, 32]>>, tensor<?x1x1x?xf32, #kiln.dims<[b, 1, 1, t]>>) -> tensor<?x12x?x32xf32, #kiln.dims<[b, 12, s, 32]>>
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f64, zero_masked_rows} : {{.*}} -> tensor<?x12x?x32xf32, #kiln.dims<[b, 12, s, 32]>>
  %z = kiln.attention %q, %k, %v, %mask {scale = 1.0 : f64, zero_masked_rows} : (tensor<?x12x?x64xf32, #kiln.dims<[b, 12, s, 64]>>, tensor<?x12x?x64xf32, #kiln.dims<[b, 12, t, 64]>>, tensor<?x12x?x32xf32, #kiln.dims<[b, 12, t, 32]>>, tensor<?x1x1x?xf32, #kiln.dims<[b, 1, 1, t]>>) -> tensor<?x12x?x32xf32, #kiln.dims<[b, 12, s, 32]>>
  return
}

// CHECK-LABEL: func @matmul_nbits
func.func @matmul_nbits(%x: tensor<?x?x80xf32, #kiln.dims<[b, s, 80]>>, %w: tensor<24x3x16xui8>, %s: tensor<24x3xf32>, %zp: tensor<24x2xui8>, %zf: tensor<24x3xf16>, %h: tensor<?x80xbf16, #kiln.dims<[r, 80]>>, %w8: tensor<24x1x128xui8>, %s8: tensor<24x1xbf16>, %bias: tensor<24xf32>) {
  // CHECK: kiln.matmul_nbits %{{.*}}, %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 32 : i64} : {{.*}} -> tensor<?x?x24xf32, #kiln.dims<[b, s, 24]>>
  %a = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x?x80xf32, #kiln.dims<[b, s, 80]>>, tensor<24x3x16xui8>, tensor<24x3xf32>) -> tensor<?x?x24xf32, #kiln.dims<[b, s, 24]>>
  // CHECK: kiln.matmul_nbits %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 32 : i64} : {{.*}} -> tensor<?x?x24xf32, #kiln.dims<[b, s, 24]>>
  %b = kiln.matmul_nbits %x, %w, %s, %zp {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x?x80xf32, #kiln.dims<[b, s, 80]>>, tensor<24x3x16xui8>, tensor<24x3xf32>, tensor<24x2xui8>) -> tensor<?x?x24xf32, #kiln.dims<[b, s, 24]>>
  // CHECK: kiln.matmul_nbits %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 32 : i64} : {{.*}} -> tensor<?x?x24xf32, #kiln.dims<[b, s, 24]>>
  %c = kiln.matmul_nbits %x, %w, %s, %zf {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x?x80xf32, #kiln.dims<[b, s, 80]>>, tensor<24x3x16xui8>, tensor<24x3xf32>, tensor<24x3xf16>) -> tensor<?x?x24xf32, #kiln.dims<[b, s, 24]>>
  // CHECK: kiln.matmul_nbits %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) {bits = 4 : i64, block_size = 32 : i64} : {{.*}} -> tensor<?x?x24xf32, #kiln.dims<[b, s, 24]>>
  %e = kiln.matmul_nbits %x, %w, %s, %zp bias(%bias) {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x?x80xf32, #kiln.dims<[b, s, 80]>>, tensor<24x3x16xui8>, tensor<24x3xf32>, tensor<24x2xui8>, tensor<24xf32>) -> tensor<?x?x24xf32, #kiln.dims<[b, s, 24]>>
  // A narrow input gives a narrow result; the scales keep their own type.
  // CHECK: kiln.matmul_nbits %{{.*}}, %{{.*}}, %{{.*}} {bits = 8 : i64, block_size = 128 : i64} : {{.*}} -> tensor<?x24xbf16, #kiln.dims<[r, 24]>>
  %d = kiln.matmul_nbits %h, %w8, %s8 {bits = 8 : i64, block_size = 128 : i64} : (tensor<?x80xbf16, #kiln.dims<[r, 80]>>, tensor<24x1x128xui8>, tensor<24x1xbf16>) -> tensor<?x24xbf16, #kiln.dims<[r, 24]>>
  return
}

// A gated linear unit: 32 columns (two groups of 8 gates and 8 ups) give 16.
// CHECK-LABEL: func @matmul_nbits_glu
func.func @matmul_nbits_glu(%x: tensor<?x80xf32, #kiln.dims<[r, 80]>>, %w: tensor<32x3x16xui8>, %s: tensor<32x3xf32>, %bias: tensor<32xf32>) {
  // CHECK: kiln.matmul_nbits %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) {bits = 4 : i64, block_size = 32 : i64, glu} : {{.*}} -> tensor<?x16xf32, #kiln.dims<[r, 16]>>
  %g = kiln.matmul_nbits %x, %w, %s bias(%bias) {bits = 4 : i64, block_size = 32 : i64, glu} : (tensor<?x80xf32, #kiln.dims<[r, 80]>>, tensor<32x3x16xui8>, tensor<32x3xf32>, tensor<32xf32>) -> tensor<?x16xf32, #kiln.dims<[r, 16]>>
  return
}

// A float8 product (kiln-fp8-matmuls): e4m3 operands, the scales' product as
// alpha, a bf16 result and bias.
// CHECK-LABEL: func.func @float8_product
// CHECK: kiln.matmul %arg0, %arg1, %arg2 {alpha = 1.000000e-03 : f64, float8_result = bf16, transpose_rhs = true}
func.func @float8_product(%a: tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>, %b: tensor<8x16xf8E4M3FN>, %c: tensor<8xbf16>) -> tensor<?x8xbf16, #kiln.dims<[m, 8]>> {
  %0 = kiln.matmul %a, %b, %c {transpose_rhs = true, alpha = 1.0e-3 : f64, float8_result = bf16} : (tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>, tensor<8x16xf8E4M3FN>, tensor<8xbf16>) -> tensor<?x8xbf16, #kiln.dims<[m, 8]>>
  return %0 : tensor<?x8xbf16, #kiln.dims<[m, 8]>>
}
