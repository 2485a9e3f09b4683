// What an artifact cannot hold is one error at the op, and no file is written.
// Plans have no control flow yet.
// RUN: rm -f %t.kiln
// RUN: not kiln-compile %s -o %t.kiln --arch none 2>&1 | FileCheck %s
// RUN: not test -e %t.kiln

// CHECK: error: 'kiln.if' op runs neither as a generated kernel nor on the host, so an artifact cannot hold it yet
func.func @main(%c: tensor<i1>, %a: tensor<3xf32>, %b: tensor<5xf32>) -> tensor<?xf32> {
  %r = kiln.if %c : tensor<i1> -> tensor<?xf32> {
    kiln.yield %a : tensor<3xf32>
  } else {
    kiln.yield %b : tensor<5xf32>
  }
  return %r : tensor<?xf32>
}
