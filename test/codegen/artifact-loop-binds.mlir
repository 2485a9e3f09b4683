// Sizes are bound at the top level and in an if's branches, which run at most
// once per call; a loop's body runs once per iteration and would rebind them
// under the steps outside it, so an artifact cannot hold a step there that
// binds one (kiln-name-unknown-dims names none there), and no file is written.
// RUN: rm -f %t.kiln
// RUN: not kiln-compile %s -o %t.kiln --arch none 2>&1 | FileCheck %s
// RUN: not test -e %t.kiln

// CHECK: error: 'kiln.non_zero' op binds symbols inside a loop's body
func.func @main(%n: tensor<i64>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %c = kiln.constant dense<true> : tensor<i1>
  %r = kiln.loop %n, %c, %x : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %v: tensor<4xf32>):
    %nz = kiln.non_zero %v {kiln.binds_dims = [[0, 1, "run0"]]} : (tensor<4xf32>) -> tensor<1x?xi64, #kiln.dims<[1, run0]>>
    %s = kiln.reduce %nz {axes = array<i64: 0, 1>, keep_dims = false, kind = #kiln<reduce sum>} : (tensor<1x?xi64, #kiln.dims<[1, run0]>>) -> tensor<i64>
    %f = kiln.cast %s to f32 : (tensor<i64>) -> tensor<f32>
    %w = kiln.add %v, %f : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    kiln.yield %cond, %w : tensor<i1>, tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
