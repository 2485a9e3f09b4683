// The split reduction computes what the single one does (reference interpreter,
// random inputs), and its kernels compile to CUDA C.
// RUN: kiln-pass-diff --trials 2 --pipeline "builtin.module(kiln-compile-pipeline)" %s | FileCheck %s --check-prefix=SAME
// RUN: kiln-translate --compile --emit-cuda %s | FileCheck %s
// SAME: 1 same
// CHECK-COUNT-2: reduction kernel
func.func @main_graph(%x: tensor<3x65536xf32>) -> tensor<3xf32> {
  %m = kiln.reduce %x {kind = #kiln<reduce max>, axes = array<i64: 1>, keep_dims = false} : (tensor<3x65536xf32>) -> tensor<3xf32>
  return %m : tensor<3xf32>
}
