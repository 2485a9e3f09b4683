// Every diagnostic of the elementwise family.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @element_types_differ(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'kiln.add' op operands have different element types (f32 vs f16)}}
  %r = kiln.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @not_broadcastable(%a: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.mul' op operands are not broadcast-compatible: dim 0 (from the right: 1) is 3 in one and 4 in another}}
  %r = kiln.mul %a, %b : (tensor<3xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @result_contradicts_inference(%a: tensor<?x4xf32, #kiln.dims<[n, 4]>>) {
  // expected-error @+1 {{'kiln.exp' op result #0 has type 'tensor<?x5xf32, #kiln.dims<[n, 5]>>', which contradicts the inferred type 'tensor<?x4xf32, #kiln.dims<[n, 4]>>'}}
  %r = kiln.exp %a : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x5xf32, #kiln.dims<[n, 5]>>
  return
}

// -----

func.func @wrong_result_element(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.is_nan' op result #0 has type 'tensor<4xf32>', which contradicts the inferred type 'tensor<4xi1>'}}
  %r = kiln.is_nan %a : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @float_op_on_ints(%a: tensor<4xi32>) {
  // expected-error @+1 {{'kiln.exp' op operand #0 must be ranked tensor of}}
  %r = kiln.exp %a : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @compare_element_types(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'kiln.compare' op operands have different element types (f32 vs i32)}}
  %r = kiln.compare %a, %b {direction = #kiln<compare eq>} : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  return
}

// -----

func.func @select_branches_differ(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf64>) {
  // expected-error @+1 {{'kiln.select' op operands have different element types (f32 vs f64)}}
  %r = kiln.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  return
}

// -----

func.func @select_not_broadcastable(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.select' op operands are not broadcast-compatible}}
  %r = kiln.select %c, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_result_element(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.cast' op result #0 has type 'tensor<4xi64>', which contradicts the inferred type 'tensor<4xi32>'}}
  %r = kiln.cast %a to i32 : (tensor<4xf32>) -> tensor<4xi64>
  return
}

// -----

func.func @bitcast_width(%a: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.bitcast' op cannot reinterpret 32-bit elements as 16-bit ones}}
  %r = kiln.bitcast %a to f16 : (tensor<4xf32>) -> tensor<4xf16>
  return
}
