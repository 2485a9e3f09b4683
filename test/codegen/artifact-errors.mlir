// What an artifact cannot hold is one error at the op, and no file is written.
// RUN: rm -f %t.kiln
// RUN: not kiln-compile %s -o %t.kiln --arch none 2>&1 | FileCheck %s
// RUN: not test -e %t.kiln

// CHECK: error: 'kiln.non_zero' op runs neither as a generated kernel nor as a library op, so an artifact cannot hold it yet (the graph-break fallback comes later)
func.func @main(%x: tensor<4xf32>) -> tensor<1x?xi64> {
  %0 = kiln.non_zero %x : (tensor<4xf32>) -> tensor<1x?xi64>
  return %0 : tensor<1x?xi64>
}
