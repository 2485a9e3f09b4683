// --kiln-absorb-matmul-transposes: a transpose of a matmul operand's last two
// dims becomes the matmul's layout flag (cuBLASLt reads the operand
// transposed), and the transpose goes. (passes.differential.fusion.* runs the
// interpreter before and after the whole compile pipeline, this pass included.)
// RUN: kiln-opt %s -split-input-file --kiln-absorb-matmul-transposes | FileCheck %s

// Gemm's transB and attention's K transpose: both operands, batched.
// CHECK-LABEL: func.func @both_operands
// CHECK-NOT: kiln.transpose
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %arg1 {transpose_lhs = true, transpose_rhs = true} : (tensor<2x4x3xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
// CHECK: return %[[M]]
func.func @both_operands(%a: tensor<2x4x3xf32>, %b: tensor<2x5x4xf32>) -> tensor<2x3x5xf32> {
  %at = kiln.transpose %a {permutation = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  %bt = kiln.transpose %b {permutation = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %m = kiln.matmul %at, %bt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %m : tensor<2x3x5xf32>
}

// -----

// Symbolic dims, a bias epilogue kept; a transposed operand transposed again
// toggles the flag back.
// CHECK-LABEL: func.func @symbolic_and_toggle
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %arg1, %arg2 {transpose_rhs = true} : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<32x16xf32>, tensor<32xf32>)
// CHECK: %[[T:.*]] = kiln.matmul %arg3, %arg4 : (tensor<3x4xf32>, tensor<4x5xf32>)
// CHECK-NOT: kiln.transpose
func.func @symbolic_and_toggle(%a: tensor<?x16xf32, #kiln.dims<[n, 16]>>, %w: tensor<32x16xf32>, %bias: tensor<32xf32>, %x: tensor<3x4xf32>, %y: tensor<4x5xf32>) -> (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<3x5xf32>) {
  %wt = kiln.transpose %w {permutation = array<i64: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32>
  %m = kiln.matmul %a, %wt, %bias : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<?x32xf32, #kiln.dims<[n, 32]>>
  %yt = kiln.transpose %y {permutation = array<i64: 1, 0>} : (tensor<4x5xf32>) -> tensor<5x4xf32>
  %t = kiln.matmul %x, %yt {transpose_rhs = true} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
  return %m, %t : tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<3x5xf32>
}

// -----

// Left alone: a transpose with another user stays for it (the matmul still
// reads its input directly), a permutation that moves a batch dim, and vectors.
// CHECK-LABEL: func.func @left_alone
// CHECK: %[[T:.*]] = kiln.transpose %arg1 {permutation = array<i64: 1, 0>}
// CHECK: kiln.matmul %arg0, %arg1 {transpose_rhs = true}
// CHECK: %[[P:.*]] = kiln.transpose %arg2 {permutation = array<i64: 1, 0, 2>}
// CHECK: kiln.matmul %[[P]], %arg3 :
// CHECK: return
func.func @left_alone(%a: tensor<3x4xf32>, %b: tensor<5x4xf32>, %c: tensor<3x2x4xf32>, %d: tensor<4x5xf32>) -> (tensor<3x5xf32>, tensor<4x5xf32>, tensor<2x3x5xf32>) {
  %bt = kiln.transpose %b {permutation = array<i64: 1, 0>} : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %m = kiln.matmul %a, %bt : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %p = kiln.transpose %c {permutation = array<i64: 1, 0, 2>} : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
  %n = kiln.matmul %p, %d : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %m, %bt, %n : tensor<3x5xf32>, tensor<4x5xf32>, tensor<2x3x5xf32>
}


// -----

// An int8 product keeps its transpose: cuBLASLt's int8 matmul takes the
// right operand stored [N, K] only (--kiln-integer-matmuls wrote it so).
// CHECK-LABEL: func.func @int8_product
// CHECK: %[[T:.*]] = kiln.transpose %arg1
// CHECK: kiln.matmul %arg0, %[[T]] {transpose_rhs = true}
func.func @int8_product(%a: tensor<2x4x8xi8>, %b: tensor<2x8x4xi8>) -> tensor<2x4x4xi32> {
  %t = kiln.transpose %b {permutation = array<i64: 0, 2, 1>} : (tensor<2x8x4xi8>) -> tensor<2x4x8xi8>
  %y = kiln.matmul %a, %t {transpose_rhs = true} : (tensor<2x4x8xi8>, tensor<2x4x8xi8>) -> tensor<2x4x4xi32>
  return %y : tensor<2x4x4xi32>
}
