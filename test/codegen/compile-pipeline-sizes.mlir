// The compile pipeline (kiln-translate --compile, kiln-conformance,
// kiln-opt --kiln-compile-pipeline) checks static sizes before codegen, so no
// tool emits a kernel over a wrapped size.
// RUN: not kiln-translate --compile --emit-cuda %s 2>&1 | FileCheck %s
// CHECK: error: result 0 (2147483648x2147483648xf32) is more than 2^63 elements or 2^64 bytes
// CHECK-NOT: __global__
func.func @f(%x: tensor<1x1xf32>) -> tensor<2147483648x2147483648xf32> {
  %s = kiln.constant dense<2147483648> : tensor<2xi64>
  %y = kiln.broadcast_to %x, %s : (tensor<1x1xf32>, tensor<2xi64>) -> tensor<2147483648x2147483648xf32>
  return %y : tensor<2147483648x2147483648xf32>
}
