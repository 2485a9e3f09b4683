// Every diagnostic of the constant and shape ops.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @constant_not_a_tensor() {
  // expected-error @+1 {{'kiln.constant' op value must be a statically shaped tensor}}
  %c = "kiln.constant"() {value = dense<1.0> : vector<4xf32>} : () -> tensor<4xf32>
  return
}

// -----

func.func @symbolic_unknown_element() {
  // expected-error @+1 {{'kiln.symbolic_constant' op value has an unknown ('?') element}}
  %s = kiln.symbolic_constant [n, ?] : tensor<2xi64>
  return
}

// -----

func.func @symbolic_count_mismatch() {
  // expected-error @+1 {{'kiln.symbolic_constant' op value has 2 elements but the result type is 'tensor<3xi64>'}}
  %s = kiln.symbolic_constant [n, 4] : tensor<3xi64>
  return
}

// -----

func.func @symbolic_scalar_of_two() {
  // expected-error @+1 {{'kiln.symbolic_constant' op value has 2 elements but the result type is 'tensor<i64>'}}
  %s = kiln.symbolic_constant [n, 4] : tensor<i64>
  return
}

// -----

func.func @symbolic_result_with_encoding() {
  // expected-error @+1 {{'kiln.symbolic_constant' op result must be a plain tensor type, without encoding}}
  %s = kiln.symbolic_constant [n] : tensor<?xi64, #kiln.dims<[n]>>
  return
}

// -----

func.func @range_mixed_types(%a: tensor<i64>, %b: tensor<i32>) {
  // expected-error @+1 {{'kiln.range' op start, limit and delta must have one element type}}
  %r = kiln.range %a, %b, %a : (tensor<i64>, tensor<i32>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @range_zero_delta(%a: tensor<i64>, %b: tensor<i64>) {
  %zero = kiln.constant dense<0> : tensor<i64>
  // expected-error @+1 {{'kiln.range' op delta must not be zero}}
  %r = kiln.range %a, %b, %zero : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @range_zero_float_delta(%a: tensor<f32>, %b: tensor<f32>) {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  // expected-error @+1 {{'kiln.range' op delta must not be zero}}
  %r = kiln.range %a, %b, %zero : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  return
}

// -----

func.func @read_sizes_count(%s: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.read_sizes' op names 1 symbols for 2 sizes}}
  kiln.read_sizes %s ["run0"] : tensor<2xi64>
  return
}

// -----

func.func @read_sizes_dynamic(%s: tensor<?xi64>) {
  // expected-error @+1 {{'kiln.read_sizes' op sizes must be a 0-d or 1-D tensor of static size, got 'tensor<?xi64>'}}
  kiln.read_sizes %s ["run0"] : tensor<?xi64>
  return
}

// -----

func.func @read_sizes_empty_name(%s: tensor<1xi64>) {
  // expected-error @+1 {{'kiln.read_sizes' op names an empty symbol}}
  kiln.read_sizes %s [""] : tensor<1xi64>
  return
}
