// What an artifact cannot hold is one error at the op, and no file is written.
// Guards are checked once per call, before any step: one inside a body of
// control flow (which may not run) has no place in a plan.
// RUN: rm -f %t.kiln
// RUN: not kiln-compile %s -o %t.kiln --arch none --no-optimize 2>&1 | FileCheck %s
// RUN: not test -e %t.kiln

// CHECK: error: 'kiln.guard' op inside control flow: guards are checked once per call, at the top level
func.func @main(%c: tensor<i1>, %a: tensor<?xf32, #kiln.dims<[n]>>, %b: tensor<5xf32>) -> tensor<?xf32> {
  %r = kiln.if %c : tensor<i1> -> tensor<?xf32> {
    kiln.guard <less_equal> [n, 5], "n fits"
    kiln.yield %a : tensor<?xf32, #kiln.dims<[n]>>
  } else {
    kiln.yield %b : tensor<5xf32>
  }
  return %r : tensor<?xf32>
}
