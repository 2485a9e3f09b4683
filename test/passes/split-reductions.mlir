// --kiln-split-reductions: a long reduction to few results becomes chunk partials
// and their total (trailing axes: a block per chunk; leading axes, a column
// reduction: a thread per chunk and result); short ones and many-result ones
// stay as they are.
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

// -----

// A column reduction (leading axes) to few results: a thread per result would
// walk 8192 rows; chunks of 16 rows (512 of them, 512 x 8 threads) give
// partials, then a thread per result sums the chunks. The result keeps its
// dims through a reshape.
// CHECK-LABEL: func.func @split_column
// CHECK: %[[R:.*]] = kiln.reshape %arg0, {{.*}} -> tensor<512x16x8xf32>
// CHECK: %[[P:.*]] = kiln.reduce %[[R]] {{.*}}axes = array<i64: 1>{{.*}} -> tensor<512x8xf32>
// CHECK: %[[T:.*]] = kiln.reduce %[[P]] {{.*}}axes = array<i64: 0>{{.*}} -> tensor<8xf32>
// CHECK: %[[F:.*]] = kiln.reshape %[[T]], {{.*}} -> tensor<1x8xf32>
// CHECK: return %[[F]]
func.func @split_column(%x: tensor<8192x8xf32>) -> tensor<1x8xf32> {
  %m = kiln.reduce %x {kind = #kiln<reduce sum>, axes = array<i64: 0>} : (tensor<8192x8xf32>) -> tensor<1x8xf32>
  return %m : tensor<1x8xf32>
}

// -----

// Several leading axes ([64, 128] rows of [4, 2]); many results or few rows
// stay one reduction.
// CHECK-LABEL: func.func @split_columns
// CHECK: kiln.reshape %arg0, {{.*}} -> tensor<512x16x4x2xf32>
// CHECK: kiln.reduce {{.*}}axes = array<i64: 1>{{.*}} -> tensor<512x4x2xf32>
// CHECK: kiln.reduce {{.*}}axes = array<i64: 0>{{.*}} -> tensor<4x2xf32>
// CHECK-LABEL: func.func @no_column_split
// CHECK: kiln.reduce %arg0
// CHECK-NOT: kiln.reduce
// CHECK: kiln.reduce %arg1
// CHECK-NOT: kiln.reduce
func.func @split_columns(%x: tensor<64x128x4x2xf32>) -> tensor<4x2xf32> {
  %m = kiln.reduce %x {kind = #kiln<reduce max>, axes = array<i64: 0, 1>, keep_dims = false} : (tensor<64x128x4x2xf32>) -> tensor<4x2xf32>
  return %m : tensor<4x2xf32>
}
func.func @no_column_split(%x: tensor<512x65536xf32>, %y: tensor<256x8xf32>) -> (tensor<65536xf32>, tensor<8xf32>) {
  %m = kiln.reduce %x {kind = #kiln<reduce sum>, axes = array<i64: 0>, keep_dims = false} : (tensor<512x65536xf32>) -> tensor<65536xf32>
  %n = kiln.reduce %y {kind = #kiln<reduce sum>, axes = array<i64: 0>, keep_dims = false} : (tensor<256x8xf32>) -> tensor<8xf32>
  return %m, %n : tensor<65536xf32>, tensor<8xf32>
}
