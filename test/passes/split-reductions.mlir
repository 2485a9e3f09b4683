// --kiln-split-reductions: a long reduction to few results becomes chunk partials
// and their total; short ones and many-result ones stay as they are.
// RUN: kiln-opt %s -split-input-file --kiln-split-reductions | FileCheck %s
// A long reduction to few results splits in two (chunk partials, then their total)
// so that many blocks share it.
// CHECK-LABEL: func.func @split_reduction
// CHECK: %[[R:.*]] = kiln.reshape %arg0, {{.*}} -> tensor<2x1024x128xf32>
// CHECK: %[[P:.*]] = kiln.reduce %[[R]] {{.*}}axes = array<i64: 2>{{.*}} -> tensor<2x1024xf32>
// CHECK: %[[T:.*]] = kiln.reduce %[[P]] {{.*}}axes = array<i64: 1>{{.*}} -> tensor<2xf32>
// CHECK: %[[F:.*]] = kiln.reshape %[[T]], {{.*}} -> tensor<2x1xf32>
// CHECK: return %[[F]]
func.func @split_reduction(%x: tensor<2x131072xf32>) -> tensor<2x1xf32> {
  %m = kiln.reduce %x {kind = #kiln<reduce mean>, axes = array<i64: 1>} : (tensor<2x131072xf32>) -> tensor<2x1xf32>
  return %m : tensor<2x1xf32>
}

// -----

// Short reductions, or many results, stay one reduction.
// CHECK-LABEL: func.func @no_split
// CHECK: kiln.reduce %arg0
// CHECK-NOT: kiln.reduce
func.func @no_split(%x: tensor<4096x256xf32>) -> tensor<4096x1xf32> {
  %m = kiln.reduce %x {kind = #kiln<reduce sum>, axes = array<i64: 1>} : (tensor<4096x256xf32>) -> tensor<4096x1xf32>
  return %m : tensor<4096x1xf32>
}
