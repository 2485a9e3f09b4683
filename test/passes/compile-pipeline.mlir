// --kiln-compile-pipeline: the one pipeline every tool runs before codegen (the
// graph pipeline, then epilogue absorption, split reductions, kernel formation),
// and the interpreter's numbers before and after it.
// RUN: kiln-opt %s --kiln-compile-pipeline | FileCheck %s
// RUN: kiln-opt %s --kiln-compile-pipeline=optimize=false | FileCheck %s --check-prefix=NOOPT
// RUN: kiln-pass-diff --trials 2 --pipeline "builtin.module(kiln-compile-pipeline)" %s | FileCheck %s --check-prefix=SAME

// The matmul keeps its bias and ReLU (library epilogue), the long mean splits in
// two reduction kernels, and the tanh after it is a pointwise kernel.
// CHECK-LABEL: func.func @main_graph
// CHECK: kiln.matmul %arg0, %{{.*}}, %{{.*}} {activation = #kiln<activation relu>}
// CHECK: kiln.kernel "reduction"
// CHECK: kiln.kernel "reduction"
// CHECK: kiln.kernel "pointwise"
// NOOPT: kiln.matmul %arg0, %{{.*}}, %{{.*}} {activation = #kiln<activation relu>}
// SAME: 1 same
func.func @main_graph(%x: tensor<?x16xf32> {kiln.name = "x"}, %big: tensor<2x131072xf32> {kiln.name = "big"}) -> (tensor<?x8xf32>, tensor<2x1xf32>) {
  %w = kiln.constant dense<0.25> : tensor<16x8xf32>
  %b = kiln.constant dense<[1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.0, 3.0]> : tensor<8xf32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %m = kiln.matmul %x, %w : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %s = kiln.add %m, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %r = kiln.max %s, %zero : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %mean = kiln.reduce %big {kind = #kiln<reduce mean>, axes = array<i64: 1>} : (tensor<2x131072xf32>) -> tensor<2x1xf32>
  %t = kiln.tanh %mean : (tensor<2x1xf32>) -> tensor<2x1xf32>
  return %r, %t : tensor<?x8xf32>, tensor<2x1xf32>
}
