// Round trip of constants and shape computations.
// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// CHECK-LABEL: func @constants
func.func @constants() {
  // CHECK: kiln.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %c = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: kiln.constant dense<true> : tensor<2x2xi1>
  %b = kiln.constant dense<true> : tensor<2x2xi1>
  // CHECK: kiln.constant dense<7> : tensor<ui16>
  %u = kiln.constant dense<7> : tensor<ui16>
  // CHECK: kiln.symbolic_constant [batch * seq, 768] : tensor<2xi64>
  %s = kiln.symbolic_constant [seq * batch, 768] : tensor<2xi64>
  // CHECK: kiln.symbolic_constant [n + 1] : tensor<i64>
  %t = kiln.symbolic_constant [1 + n] : tensor<i64>
  return
}

// CHECK-LABEL: func @shape_of_and_range
func.func @shape_of_and_range(%x: tensor<?x768xf32, #kiln.dims<[n, 768]>>, %a: tensor<i64>, %b: tensor<i64>, %c: tensor<i64>) {
  // CHECK: kiln.shape_of %{{.*}} : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<2xi64>
  %s = kiln.shape_of %x : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<2xi64>
  // CHECK: kiln.range %{{.*}}, %{{.*}}, %{{.*}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %r = kiln.range %a, %b, %c : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}
