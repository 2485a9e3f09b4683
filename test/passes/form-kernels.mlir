// Every fusion decision (and non-decision) of --kiln-form-kernels.
// RUN: kiln-opt %s -split-input-file --kiln-form-kernels | FileCheck %s

// A chain of pointwise ops with a broadcast bias becomes one kernel; the splat
// constant is copied in rather than passed.
// CHECK-LABEL: func.func @pointwise_chain
// CHECK: %[[K:.*]] = kiln.kernel "pointwise"(%arg0, %arg1)
// CHECK: kiln.constant dense<5.000000e-01>
// CHECK: kiln.add
// CHECK: kiln.mul
// CHECK: kiln.tanh
// CHECK: kiln.yield
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]
func.func @pointwise_chain(%x: tensor<?x8xf32, #kiln.dims<[n, 8]>>, %b: tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>> {
  %h = kiln.constant dense<0.5> : tensor<f32>
  %s = kiln.add %x, %b : (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %m = kiln.mul %s, %h : (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<f32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %t = kiln.tanh %m : (tensor<?x8xf32, #kiln.dims<[n, 8]>>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  return %t : tensor<?x8xf32, #kiln.dims<[n, 8]>>
}

// -----

// A producer with users in two kernels is materialized once by its own kernel,
// not recomputed in both.
// CHECK-LABEL: func.func @multi_consumer
// CHECK: %[[E:.*]] = kiln.kernel "pointwise"(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.exp
// CHECK: kiln.kernel "pointwise"(%[[E]])
// CHECK: kiln.kernel "pointwise"(%[[E]])
func.func @multi_consumer(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = kiln.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %a = kiln.sin %e : (tensor<4xf32>) -> tensor<4xf32>
  %b = kiln.cos %e : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// A reduction takes its pointwise prologue; its pointwise consumer is a kernel
// of its own (inlining the reduction into it would recompute it per element).
// CHECK-LABEL: func.func @reduction_prologue
// CHECK: %[[R:.*]] = kiln.kernel "reduction"(%arg0)
// CHECK: kiln.mul
// CHECK: kiln.reduce
// CHECK: kiln.kernel "pointwise"(%[[R]])
// CHECK: kiln.sqrt
func.func @reduction_prologue(%x: tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>> {
  %sq = kiln.mul %x, %x : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %s = kiln.reduce %sq {kind = #kiln<reduce sum>, axes = array<i64: 1>} : (tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %r = kiln.sqrt %s : (tensor<?x1xf32, #kiln.dims<[n, 1]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  return %r : tensor<?x1xf32, #kiln.dims<[n, 1]>>
}

// -----

// softmax and layer_norm are row kernels with their prologues; matmul stays a
// library op between kernels.
// CHECK-LABEL: func.func @library_between_rows
// CHECK: kiln.kernel "row"
// CHECK: kiln.div
// CHECK: kiln.softmax
// CHECK: kiln.matmul
// CHECK: kiln.kernel "row"
// CHECK: kiln.add
// CHECK: kiln.layer_norm
func.func @library_between_rows(%q: tensor<2x4x4xf32>, %v: tensor<2x4x8xf32>, %g: tensor<8xf32>, %res: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %c = kiln.constant dense<2.0> : tensor<f32>
  %s = kiln.div %q, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = kiln.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %a = kiln.add %o, %res : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %n = kiln.layer_norm %a, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %n : tensor<2x4x8xf32>
}

// -----

// Data movement with known shape operands fuses; its shape constants are copied.
// CHECK-LABEL: func.func @data_movement
// CHECK: kiln.kernel "pointwise"(%arg0)
// CHECK: kiln.constant dense<[4, 2]>
// CHECK: kiln.transpose
// CHECK: kiln.reshape
// CHECK-NOT: kiln.kernel
func.func @data_movement(%x: tensor<2x4xf32>) -> tensor<4x2xf32> {
  %t = kiln.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %s = kiln.constant dense<[4, 2]> : tensor<2xi64>
  %r = kiln.reshape %t, %s : (tensor<4x2xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

// Element types codegen lacks (float4) and dims nothing is known about stay
// outside kernels.
// CHECK-LABEL: func.func @not_fusible
// CHECK-NOT: kiln.kernel
// CHECK: kiln.cast
// CHECK: kiln.exp
func.func @not_fusible(%x: tensor<4xf32>, %y: tensor<?xf32>) -> (tensor<4xf4E2M1FN>, tensor<?xf32>) {
  %c = kiln.cast %x to f4E2M1FN : (tensor<4xf32>) -> tensor<4xf4E2M1FN>
  %e = kiln.exp %y : (tensor<?xf32>) -> tensor<?xf32>
  return %c, %e : tensor<4xf4E2M1FN>, tensor<?xf32>
}
