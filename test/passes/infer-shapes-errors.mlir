// Refinement can expose a contradiction that the declared types hid; the pass
// reports it on the op and fails.
// RUN: kiln-opt %s --kiln-infer-shapes -verify-diagnostics

func.func @contradiction_after_folding(%x: tensor<3xf32>) -> tensor<?xf32> {
  %shape = kiln.constant dense<[4]> : tensor<1xi64>
  %i0 = kiln.constant dense<0> : tensor<1xi64>
  %picked = kiln.gather %shape, %i0 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  // expected-error @+1 {{'kiln.broadcast_to' op operands are not broadcast-compatible: dim 0 (from the right: 1) is 3 in one and 4 in another}}
  %b = kiln.broadcast_to %x, %picked : (tensor<3xf32>, tensor<1xi64>) -> tensor<?xf32>
  return %b : tensor<?xf32>
}
