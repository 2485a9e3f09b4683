// --kiln-check-tensor-sizes with max-bytes: the configurable limit
// (kiln-compile --max-tensor-bytes).
// RUN: kiln-opt %s -verify-diagnostics --kiln-check-tensor-sizes="max-bytes=64"

func.func @limit(%x: tensor<16xf32>) -> tensor<17xf32> {
  %c = kiln.constant dense<0.0> : tensor<1xf32>
  // expected-error @+1 {{result 0 (17xf32) is 68 bytes; the limit is 64 bytes for one tensor (--max-tensor-bytes)}}
  %y = kiln.concat %x, %c {axis = 0 : i64} : (tensor<16xf32>, tensor<1xf32>) -> tensor<17xf32>
  return %y : tensor<17xf32>
}
