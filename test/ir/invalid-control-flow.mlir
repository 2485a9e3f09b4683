// Every diagnostic of the control-flow region ops.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @if_condition(%c: tensor<2xi1>, %a: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.if' op condition must hold exactly one element, not 'tensor<2xi1>'}}
  %r = kiln.if %c : tensor<2xi1> -> tensor<3xf32> {
    kiln.yield %a : tensor<3xf32>
  } else {
    kiln.yield %a : tensor<3xf32>
  }
  return
}

// -----

func.func @if_yield_count(%c: tensor<i1>, %a: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.if' op a branch yields 2 values but the op has 1 results}}
  %r = kiln.if %c : tensor<i1> -> tensor<3xf32> {
    kiln.yield %a, %a : tensor<3xf32>, tensor<3xf32>
  } else {
    kiln.yield %a : tensor<3xf32>
  }
  return
}

// -----

func.func @if_yield_type(%c: tensor<i1>, %a: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.if' op result #0 has type 'tensor<4xf32>', which a branch's 'tensor<3xf32>' contradicts}}
  %r = kiln.if %c : tensor<i1> -> tensor<4xf32> {
    kiln.yield %a : tensor<3xf32>
  } else {
    kiln.yield %a : tensor<3xf32>
  }
  return
}

// -----

func.func @loop_arguments(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<f32>) {
  // expected-error @+1 {{'kiln.loop' op the body takes 2 arguments; expected the iteration number, the condition and 1 carried values}}
  %r = kiln.loop %m, %c, %x : (tensor<i64>, tensor<i1>, tensor<f32>) -> tensor<f32> {
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>):
    kiln.yield %cc, %x : tensor<i1>, tensor<f32>
  }
  return
}

// -----

func.func @loop_argument_types(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<f32>) {
  // expected-error @+1 {{'kiln.loop' op the body's first arguments must be tensor<i64> and tensor<i1>}}
  %r = kiln.loop %m, %c, %x : (tensor<i64>, tensor<i1>, tensor<f32>) -> tensor<f32> {
  ^bb0(%i: tensor<i32>, %cc: tensor<i1>, %v: tensor<f32>):
    kiln.yield %cc, %v : tensor<i1>, tensor<f32>
  }
  return
}

// -----

func.func @loop_yield_count(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<f32>) {
  // expected-error @+1 {{'kiln.loop' op the body yields 1 values; expected the condition and 1 carried values first}}
  %r = kiln.loop %m, %c, %x : (tensor<i64>, tensor<i1>, tensor<f32>) -> tensor<f32> {
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %v: tensor<f32>):
    kiln.yield %cc : tensor<i1>
  }
  return
}

// -----

func.func @loop_results(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<f32>) {
  // expected-error @+1 {{'kiln.loop' op has 2 results; expected 1 carried values and 0 scan outputs}}
  %r:2 = kiln.loop %m, %c, %x : (tensor<i64>, tensor<i1>, tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %v: tensor<f32>):
    kiln.yield %cc, %v : tensor<i1>, tensor<f32>
  }
  return
}

// -----

func.func @loop_condition_type(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<f32>) {
  // expected-error @+1 {{'kiln.loop' op the body must yield an i1 condition first}}
  %r = kiln.loop %m, %c, %x : (tensor<i64>, tensor<i1>, tensor<f32>) -> tensor<f32> {
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %v: tensor<f32>):
    kiln.yield %v, %v : tensor<f32>, tensor<f32>
  }
  return
}

// -----

func.func @loop_yielded_condition(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<f32>, %b: tensor<2xi1>) {
  // expected-error @+1 {{'kiln.loop' op the yielded condition must hold exactly one element, not 'tensor<2xi1>'}}
  %r = kiln.loop %m, %c, %x : (tensor<i64>, tensor<i1>, tensor<f32>) -> tensor<f32> {
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %v: tensor<f32>):
    kiln.yield %b, %v : tensor<2xi1>, tensor<f32>
  }
  return
}

// -----

func.func @loop_condition(%m: tensor<i64>, %c: tensor<3xi1>, %x: tensor<f32>) {
  // expected-error @+1 {{'kiln.loop' op condition must hold exactly one element, not 'tensor<3xi1>'}}
  %r = kiln.loop %m, %c, %x : (tensor<i64>, tensor<3xi1>, tensor<f32>) -> tensor<f32> {
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %v: tensor<f32>):
    kiln.yield %cc, %v : tensor<i1>, tensor<f32>
  }
  return
}

// -----

func.func @loop_carried_type(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<2xf32>) {
  // expected-error @+1 {{'kiln.loop' op carried value #0 has type 'tensor<3xf32>' in the body, which its initial, next or final type contradicts}}
  %r = kiln.loop %m, %c, %x : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> tensor<3xf32> {
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %v: tensor<3xf32>):
    kiln.yield %cc, %v : tensor<i1>, tensor<3xf32>
  }
  return
}

// -----

func.func @loop_scan_output(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<2xf32>) {
  // expected-error @+1 {{'kiln.loop' op scan output #0 must stack the yielded slices along a new leading dim}}
  %r:2 = kiln.loop %m, %c, %x : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %v: tensor<2xf32>):
    kiln.yield %cc, %v, %v : tensor<i1>, tensor<2xf32>, tensor<2xf32>
  }
  return
}

// -----

func.func @scan_count(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.scan' op num_scan_inputs must be between 1 and the number of inputs}}
  %r = kiln.scan %x {num_scan_inputs = 2 : i64, scan_input_axes = array<i64: 0, 0>, scan_input_directions = array<i64: 0, 0>, scan_output_axes = array<i64>, scan_output_directions = array<i64>} : (tensor<3x2xf32>) -> tensor<3x2xf32> {
  ^bb0(%a: tensor<2xf32>):
    kiln.yield %a : tensor<2xf32>
  }
  return
}

// -----

func.func @scan_input_axes(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.scan' op scan_input_axes and scan_input_directions need one entry per scan input}}
  %r = kiln.scan %x {num_scan_inputs = 1 : i64, scan_input_axes = array<i64>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<3x2xf32>) -> tensor<3x2xf32> {
  ^bb0(%a: tensor<2xf32>):
    kiln.yield %a : tensor<2xf32>
  }
  return
}

// -----

func.func @scan_output_axes(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.scan' op scan_output_axes and scan_output_directions need one entry per scan output}}
  %r = kiln.scan %x {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64>, scan_output_directions = array<i64>} : (tensor<3x2xf32>) -> tensor<3x2xf32> {
  ^bb0(%a: tensor<2xf32>):
    kiln.yield %a : tensor<2xf32>
  }
  return
}

// -----

func.func @scan_direction(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.scan' op scan directions must be 0 (forward) or 1 (backward)}}
  %r = kiln.scan %x {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 2>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<3x2xf32>) -> tensor<3x2xf32> {
  ^bb0(%a: tensor<2xf32>):
    kiln.yield %a : tensor<2xf32>
  }
  return
}

// -----

func.func @scan_body_arguments(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.scan' op the body takes 2 arguments; expected 0 states and 1 scan slices}}
  %r = kiln.scan %x {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<3x2xf32>) -> tensor<3x2xf32> {
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
    kiln.yield %a : tensor<2xf32>
  }
  return
}

// -----

func.func @scan_yields(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.scan' op the body yields 2 values; expected 0 states and 1 scan output slices}}
  %r = kiln.scan %x {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<3x2xf32>) -> tensor<3x2xf32> {
  ^bb0(%a: tensor<2xf32>):
    kiln.yield %a, %a : tensor<2xf32>, tensor<2xf32>
  }
  return
}

// -----

func.func @scan_state(%s: tensor<2xf32>, %x: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.scan' op state #0 has type 'tensor<4xf32>' in the body, which its initial, next or final type contradicts}}
  %r:2 = kiln.scan %s, %x {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {
  ^bb0(%st: tensor<4xf32>, %a: tensor<2xf32>):
    kiln.yield %st, %a : tensor<4xf32>, tensor<2xf32>
  }
  return
}

// -----

func.func @scan_input_axis(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.scan' op scan input #0 has no axis 2}}
  %r = kiln.scan %x {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 2>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<3x2xf32>) -> tensor<3x2xf32> {
  ^bb0(%a: tensor<2xf32>):
    kiln.yield %a : tensor<2xf32>
  }
  return
}

// -----

func.func @scan_slice_type(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.scan' op the body's slice of scan input #0 has type 'tensor<3xf32>', not a slice of 'tensor<3x2xf32>'}}
  %r = kiln.scan %x {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<3x2xf32>) -> tensor<3x3xf32> {
  ^bb0(%a: tensor<3xf32>):
    kiln.yield %a : tensor<3xf32>
  }
  return
}

// -----

func.func @scan_output_stack(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.scan' op scan output #0 must stack the yielded slices along its scan axis}}
  %r = kiln.scan %x {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<3x2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    kiln.yield %a : tensor<2xf32>
  }
  return
}

// -----

// A result dim the If step binds (kiln.binds_dims) is whatever the branch that
// ran yields; one it does not bind must agree with every branch.
func.func @if_bound_dim_is_either_branchs(%c: tensor<i1>, %a: tensor<?xi64, #kiln.dims<[run0]>>) -> tensor<?xi64, #kiln.dims<[run1]>> {
  %r = kiln.if %c : tensor<i1> -> tensor<?xi64, #kiln.dims<[run1]>> {
    %none = kiln.constant dense<0> : tensor<0xi64>
    kiln.yield %none : tensor<0xi64>
  } else {
    kiln.yield %a : tensor<?xi64, #kiln.dims<[run0]>>
  } {kiln.binds_dims = [[0, 0, "run1"]]}
  return %r : tensor<?xi64, #kiln.dims<[run1]>>
}

// -----

func.func @if_unbound_dim_must_agree(%c: tensor<i1>, %a: tensor<?xi64, #kiln.dims<[run0]>>) -> tensor<?xi64, #kiln.dims<[run1]>> {
  // expected-error @+1 {{'kiln.if' op result #0 has type 'tensor<?xi64, #kiln.dims<[run1]>>', which a branch's 'tensor<0xi64>' contradicts}}
  %r = kiln.if %c : tensor<i1> -> tensor<?xi64, #kiln.dims<[run1]>> {
    %none = kiln.constant dense<0> : tensor<0xi64>
    kiln.yield %none : tensor<0xi64>
  } else {
    kiln.yield %a : tensor<?xi64, #kiln.dims<[run0]>>
  }
  return %r : tensor<?xi64, #kiln.dims<[run1]>>
}
