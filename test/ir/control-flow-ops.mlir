// Round trip of the control-flow region ops.
// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// CHECK-LABEL: func @branches
func.func @branches(%c: tensor<i1>, %a: tensor<3xf32>, %b: tensor<5xf32>) -> tensor<?xf32> {
  // CHECK: kiln.if %{{.*}} : tensor<i1> -> tensor<?xf32> {
  // CHECK: kiln.yield %{{.*}} : tensor<3xf32>
  // CHECK: } else {
  // CHECK: kiln.yield %{{.*}} : tensor<5xf32>
  %r = kiln.if %c : tensor<i1> -> tensor<?xf32> {
    kiln.yield %a : tensor<3xf32>
  } else {
    kiln.yield %b : tensor<5xf32>
  }
  return %r : tensor<?xf32>
}

// CHECK-LABEL: func @counted_loop
func.func @counted_loop(%max: tensor<i64>, %go: tensor<i1>, %zero: tensor<f32>, %one: tensor<f32>) -> (tensor<f32>, tensor<?xf32>) {
  // CHECK: kiln.loop %{{.*}}, %{{.*}}, %{{.*}} : (tensor<i64>, tensor<i1>, tensor<f32>) -> (tensor<f32>, tensor<?xf32>) {
  // CHECK: ^bb0(%{{.*}}: tensor<i64>, %{{.*}}: tensor<i1>, %{{.*}}: tensor<f32>):
  // CHECK: kiln.yield %{{.*}}, %{{.*}}, %{{.*}} : tensor<i1>, tensor<f32>, tensor<f32>
  %sum, %steps = kiln.loop %max, %go, %zero : (tensor<i64>, tensor<i1>, tensor<f32>) -> (tensor<f32>, tensor<?xf32>) {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<f32>):
    %next = kiln.add %acc, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
    kiln.yield %c, %next, %next : tensor<i1>, tensor<f32>, tensor<f32>
  }
  return %sum, %steps : tensor<f32>, tensor<?xf32>
}

// CHECK-LABEL: func @running_sum
func.func @running_sum(%init: tensor<2xf32>, %xs: tensor<?x2xf32, #kiln.dims<[t, 2]>>) -> (tensor<2xf32>, tensor<?x2xf32, #kiln.dims<[t, 2]>>) {
  // CHECK: kiln.scan %{{.*}}, %{{.*}} {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<2xf32>, tensor<?x2xf32, #kiln.dims<[t, 2]>>) -> (tensor<2xf32>, tensor<?x2xf32, #kiln.dims<[t, 2]>>) {
  %s, %ys = kiln.scan %init, %xs {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<2xf32>, tensor<?x2xf32, #kiln.dims<[t, 2]>>) -> (tensor<2xf32>, tensor<?x2xf32, #kiln.dims<[t, 2]>>) {
  ^bb0(%state: tensor<2xf32>, %x: tensor<2xf32>):
    %next = kiln.add %state, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    kiln.yield %next, %next : tensor<2xf32>, tensor<2xf32>
  }
  return %s, %ys : tensor<2xf32>, tensor<?x2xf32, #kiln.dims<[t, 2]>>
}
