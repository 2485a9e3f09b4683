// --kiln-merge-sibling-matmuls keeps SwiGLU's gate as it is where the gated
// product (kiln.matmul_nbits {glu}) cannot take it; the two products then
// merge as siblings. And a gate and up sharing their constants (tied or
// splat weights), which the gated product takes, each constant erased once.
// RUN: kiln-opt %s -split-input-file --kiln-merge-sibling-matmuls | FileCheck %s

// The gate's product is also an output: its columns must be stored.
// CHECK-LABEL: func.func @gate_read_twice
// CHECK-NOT: glu
// CHECK: kiln.matmul_nbits {{.*}} -> tensor<?x32xf32, #kiln.dims<[n, 32]>>
// CHECK: kiln.sigmoid
func.func @gate_read_twice(%x: tensor<?x32xf32, #kiln.dims<[n, 32]>>) -> (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) {
  %w = kiln.constant dense<17> : tensor<16x1x16xui8>
  %s = kiln.constant dense<0.5> : tensor<16x1xf32>
  %g = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<16x1x16xui8>, tensor<16x1xf32>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %u = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<16x1x16xui8>, tensor<16x1xf32>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %sig = kiln.sigmoid %g : (tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %silu = kiln.mul %g, %sig : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %y = kiln.mul %silu, %u : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  return %y, %g : tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>
}

// -----

// 8-bit codes (the GEMV's one column a thread) and gates of 4 columns (no
// group of 8): siblings.
// CHECK-LABEL: func.func @eight_bits
// CHECK-NOT: glu
// CHECK: kiln.matmul_nbits {{.*}} {bits = 8 : i64, block_size = 32 : i64} {{.*}} -> tensor<?x32xf32
// CHECK-LABEL: func.func @four_columns
// CHECK-NOT: glu
// CHECK: kiln.matmul_nbits {{.*}} -> tensor<?x8xf32
func.func @eight_bits(%x: tensor<?x32xf32, #kiln.dims<[n, 32]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>> {
  %w = kiln.constant dense<17> : tensor<16x1x32xui8>
  %s = kiln.constant dense<0.5> : tensor<16x1xf32>
  %g = kiln.matmul_nbits %x, %w, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<16x1x32xui8>, tensor<16x1xf32>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %u = kiln.matmul_nbits %x, %w, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<16x1x32xui8>, tensor<16x1xf32>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %sig = kiln.sigmoid %g : (tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %silu = kiln.mul %g, %sig : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %y = kiln.mul %silu, %u : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  return %y : tensor<?x16xf32, #kiln.dims<[n, 16]>>
}
func.func @four_columns(%x: tensor<?x32xf32, #kiln.dims<[n, 32]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>> {
  %w = kiln.constant dense<17> : tensor<4x1x16xui8>
  %s = kiln.constant dense<0.5> : tensor<4x1xf32>
  %g = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<4x1x16xui8>, tensor<4x1xf32>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %u = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<4x1x16xui8>, tensor<4x1xf32>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %sig = kiln.sigmoid %g : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %silu = kiln.mul %sig, %g : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %y = kiln.mul %u, %silu : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  return %y : tensor<?x4xf32, #kiln.dims<[n, 4]>>
}

// -----

// CHECK-LABEL: func.func @shared_constants
// CHECK: kiln.matmul_nbits {{.*}} {bits = 4 : i64, block_size = 32 : i64, glu} {{.*}} -> tensor<?x16xf32
// CHECK-NOT: kiln.sigmoid
func.func @shared_constants(%x: tensor<?x32xf32, #kiln.dims<[n, 32]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>> {
  %w = kiln.constant dense<17> : tensor<16x1x16xui8>
  %s = kiln.constant dense<0.5> : tensor<16x1xf32>
  %g = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<16x1x16xui8>, tensor<16x1xf32>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %u = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<16x1x16xui8>, tensor<16x1xf32>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %sig = kiln.sigmoid %g : (tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %silu = kiln.mul %g, %sig : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %y = kiln.mul %silu, %u : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  return %y : tensor<?x16xf32, #kiln.dims<[n, 16]>>
}
