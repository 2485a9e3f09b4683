// --kiln-merge-sibling-matmuls on weight-only quantized projections: the
// kiln.matmul_nbits of one input with the same bits, block size and blocks
// become one, their weights, scales and zero points (a row a column) one
// after the other, each former result a slice of its last dim.
// RUN: rm -rf %t && mkdir -p %t
// RUN: kiln-opt %s --kiln-merge-sibling-matmuls | FileCheck %s
// RUN: kiln-opt %s --kiln-merge-sibling-matmuls -o %t/merged.mlir
// The merged product is the members' to the last bit (the float64
// interpreter, before and after): a member's columns in another's place, or
// scales or zero points shifted against their codes, would not be.
// RUN: %python -c "import numpy as np; np.save('%t/x.npy', np.random.default_rng(3).standard_normal((3, 32)).astype(np.float32))"
// RUN: kiln-reference %s --no-optimize --input x=%t/x.npy --output-dir %t/before > /dev/null
// RUN: kiln-reference %t/merged.mlir --no-optimize --input x=%t/x.npy --output-dir %t/after > /dev/null
// RUN: for k in 0 1 2 3; do %python %S/../run/compare_outputs.py %t/after/output_$k.pb %t/before/output_$k.pb --atol 0; done | FileCheck %s --check-prefix=EXACT
// EXACT-COUNT-4: OK max abs diff 0{{$}}

// Q, K and V (2, 1 and 1 columns; 4 bits, blocks of 32; K with a bias, so
// the merged bias has zeros for the others): one GEMV of 4 columns. The
// 8-bit projection beside them is no sibling (another bit width).
// CHECK-LABEL: func.func @qkv
// CHECK: %[[M:.*]] = kiln.matmul_nbits %arg0, %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<4x1x16xui8>, tensor<4x1xf32>, tensor<4x1xui8>, tensor<4xf32>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
// CHECK: kiln.slice %[[M]], {{.*}} -> tensor<?x2xf32, #kiln.dims<[n, 2]>>
// CHECK: kiln.slice %[[M]], {{.*}} -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
// CHECK: kiln.slice %[[M]], {{.*}} -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
// CHECK: kiln.matmul_nbits %arg0, {{.*}} {bits = 8 : i64, block_size = 32 : i64}
// CHECK-NOT: kiln.matmul_nbits
func.func @qkv(%x: tensor<?x32xf32, #kiln.dims<[n, 32]>> {kiln.name = "x"}) -> (tensor<?x2xf32, #kiln.dims<[n, 2]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<?x2xf32, #kiln.dims<[n, 2]>>) {
  %wq = kiln.constant dense<[[[18, 52, 86, 120, 154, 188, 222, 1, 35, 69, 103, 137, 171, 205, 239, 16]], [[33, 67, 101, 135, 169, 203, 237, 2, 36, 70, 104, 138, 172, 206, 240, 17]]]> : tensor<2x1x16xui8>
  %sq = kiln.constant dense<[[0.5], [0.25]]> : tensor<2x1xf32>
  %zq = kiln.constant dense<[[7], [9]]> : tensor<2x1xui8>
  %q = kiln.matmul_nbits %x, %wq, %sq, %zq {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<2x1x16xui8>, tensor<2x1xf32>, tensor<2x1xui8>) -> tensor<?x2xf32, #kiln.dims<[n, 2]>>
  %wk = kiln.constant dense<[[[200, 3, 77, 150, 9, 240, 31, 66, 101, 12, 199, 54, 87, 130, 5, 250]]]> : tensor<1x1x16xui8>
  %sk = kiln.constant dense<[[0.125]]> : tensor<1x1xf32>
  %zk = kiln.constant dense<[[3]]> : tensor<1x1xui8>
  %bk = kiln.constant dense<[1.5]> : tensor<1xf32>
  %k = kiln.matmul_nbits %x, %wk, %sk, %zk bias(%bk) {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<1x1x16xui8>, tensor<1x1xf32>, tensor<1x1xui8>, tensor<1xf32>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %wv = kiln.constant dense<[[[1, 2, 4, 8, 16, 32, 64, 128, 255, 127, 63, 31, 15, 7, 3, 1]]]> : tensor<1x1x16xui8>
  %sv = kiln.constant dense<[[2.0]]> : tensor<1x1xf32>
  %zv = kiln.constant dense<[[120]]> : tensor<1x1xui8>
  %v = kiln.matmul_nbits %x, %wv, %sv, %zv {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<1x1x16xui8>, tensor<1x1xf32>, tensor<1x1xui8>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %w8 = kiln.constant dense<7> : tensor<2x1x32xui8>
  %s8 = kiln.constant dense<0.5> : tensor<2x1xf32>
  %e = kiln.matmul_nbits %x, %w8, %s8 {bits = 8 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<2x1x32xui8>, tensor<2x1xf32>) -> tensor<?x2xf32, #kiln.dims<[n, 2]>>
  return %q, %k, %v, %e : tensor<?x2xf32, #kiln.dims<[n, 2]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<?x2xf32, #kiln.dims<[n, 2]>>
}
