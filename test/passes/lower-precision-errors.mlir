// --kiln-lower-precision's one diagnostic: a mode it does not know.
// RUN: kiln-opt %s --kiln-lower-precision=precision=fp8 -verify-diagnostics -o /dev/null

// expected-error @+1 {{unknown precision 'fp8' (expected fp32, tf32, fp16 or bf16)}}
func.func @unknown_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
