// A Loop whose trip count comes from bad data (2^62) stops the reference
// interpreter with an error naming the limit instead of running (practically)
// forever. The carried sum has no scan output, so nothing else bounds it.
// RUN: not timeout 120 kiln-reference %s 2>&1 | FileCheck %s
// CHECK: error: 'kiln.loop' op the loop passed 1048576 iterations (its trip count is 4611686018427387904); the reference interpreter stops there
func.func @main() -> tensor<f32> {
  %max = kiln.constant dense<4611686018427387904> : tensor<i64>
  %go = kiln.constant dense<true> : tensor<i1>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %sum = kiln.loop %max, %go, %zero : (tensor<i64>, tensor<i1>, tensor<f32>) -> tensor<f32> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<f32>):
    %next = kiln.add %acc, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
    kiln.yield %c, %next : tensor<i1>, tensor<f32>
  }
  return %sum : tensor<f32>
}
