// --kiln-lower-precision's one diagnostic: a mode it does not know.
// RUN: kiln-opt %s --kiln-lower-precision=precision=fp4 -verify-diagnostics -o /dev/null

// expected-error @+1 {{unknown precision 'fp4' (expected fp32, tf32, fp16, bf16 or fp8)}}
func.func @unknown_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
