// Every diagnostic of kiln.kernel.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

func.func @schedule(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.kernel' op schedule 'tiled' is not pointwise, reduction, row, compaction or attention}}
  %r = kiln.kernel "tiled"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    kiln.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @arguments(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.kernel' op the body takes 0 arguments for 1 operands}}
  %r = kiln.kernel "pointwise"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
    %c = kiln.constant dense<1.0> : tensor<4xf32>
    kiln.yield %c : tensor<4xf32>
  }
  return
}

// -----

func.func @argument_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.kernel' op body argument 0 has type 'tensor<4xf16>' but operand 0 is 'tensor<4xf32>'}}
  %r = kiln.kernel "pointwise"(%x) : (tensor<4xf32>) -> tensor<4xf16> {
  ^bb0(%a: tensor<4xf16>):
    kiln.yield %a : tensor<4xf16>
  }
  return
}

// -----

func.func @yield_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.kernel' op the body yields 2 values for 1 results}}
  %r = kiln.kernel "pointwise"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    kiln.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

func.func @yield_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.kernel' op result 0 has type 'tensor<4xf64>' but the body yields 'tensor<4xf32>'}}
  %r = kiln.kernel "pointwise"(%x) : (tensor<4xf32>) -> tensor<4xf64> {
  ^bb0(%a: tensor<4xf32>):
    kiln.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @terminator(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.kernel' op the body must end in kiln.yield}}
  %r = kiln.kernel "pointwise"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    "test.end"(%a) : (tensor<4xf32>) -> ()
  }
  return
}
