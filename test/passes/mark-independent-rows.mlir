// --kiln-mark-independent-rows: a function whose rows along its first dim are
// independent (row i of every result from row i of the arguments alone) gets
// the symbol as kiln.independent_rows; one that mixes them gets nothing.
// RUN: kiln-opt %s -split-input-file --kiln-mark-independent-rows | FileCheck %s

// A linear layer, its bias and a softmax over the features: every op keeps
// the batch's rows apart.
// CHECK-LABEL: func.func @rows_kept
// CHECK-SAME: kiln.independent_rows = ["n"]
func.func @rows_kept(%x: tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x32xf32, #kiln.dims<[n, 32]>> {
  %w = kiln.constant dense<0.25> : tensor<16x32xf32>
  %b = kiln.constant dense<0.5> : tensor<32xf32>
  %m = kiln.matmul %x, %w : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<16x32xf32>) -> tensor<?x32xf32, #kiln.dims<[n, 32]>>
  %s = kiln.add %m, %b : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<32xf32>) -> tensor<?x32xf32, #kiln.dims<[n, 32]>>
  %r = kiln.softmax %s {axis = -1 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>) -> tensor<?x32xf32, #kiln.dims<[n, 32]>>
  return %r : tensor<?x32xf32, #kiln.dims<[n, 32]>>
}

// -----

// x - mean(x over the batch): every row reads every other.
// CHECK-LABEL: func.func @mean_over_the_batch
// CHECK-NOT: kiln.independent_rows
func.func @mean_over_the_batch(%x: tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>> {
  %m = kiln.reduce %x {kind = #kiln<reduce mean>, axes = array<i64: 0>} : (tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<1x16xf32>
  %d = kiln.sub %x, %m : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<1x16xf32>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  return %d : tensor<?x16xf32, #kiln.dims<[n, 16]>>
}

// -----

// A softmax along the batch mixes it too.
// CHECK-LABEL: func.func @softmax_over_the_batch
// CHECK-NOT: kiln.independent_rows
func.func @softmax_over_the_batch(%x: tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>> {
  %s = kiln.softmax %x {axis = 0 : i64} : (tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  return %s : tensor<?x16xf32, #kiln.dims<[n, 16]>>
}

// -----

// Rows moved off the first dim (a sequence-first layout): a result whose
// first dim is not the rows' is not split the way a server splits it.
// CHECK-LABEL: func.func @rows_transposed
// CHECK-NOT: kiln.independent_rows
func.func @rows_transposed(%x: tensor<?x4x8xf32, #kiln.dims<[n, 4, 8]>>) -> tensor<4x?x8xf32, #kiln.dims<[4, n, 8]>> {
  %t = kiln.transpose %x {permutation = array<i64: 1, 0, 2>} : (tensor<?x4x8xf32, #kiln.dims<[n, 4, 8]>>) -> tensor<4x?x8xf32, #kiln.dims<[4, n, 8]>>
  return %t : tensor<4x?x8xf32, #kiln.dims<[4, n, 8]>>
}

// -----

// A batched matmul whose batch dim is the rows' on both sides; a reduction
// over another dim; a transpose there and back.
// CHECK-LABEL: func.func @batched_matmul
// CHECK-SAME: kiln.independent_rows = ["n"]
func.func @batched_matmul(%a: tensor<?x4x8xf32, #kiln.dims<[n, 4, 8]>>, %b: tensor<?x8x4xf32, #kiln.dims<[n, 8, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>> {
  %m = kiln.matmul %a, %b : (tensor<?x4x8xf32, #kiln.dims<[n, 4, 8]>>, tensor<?x8x4xf32, #kiln.dims<[n, 8, 4]>>) -> tensor<?x4x4xf32, #kiln.dims<[n, 4, 4]>>
  %t = kiln.transpose %m {permutation = array<i64: 1, 0, 2>} : (tensor<?x4x4xf32, #kiln.dims<[n, 4, 4]>>) -> tensor<4x?x4xf32, #kiln.dims<[4, n, 4]>>
  %u = kiln.transpose %t {permutation = array<i64: 1, 0, 2>} : (tensor<4x?x4xf32, #kiln.dims<[4, n, 4]>>) -> tensor<?x4x4xf32, #kiln.dims<[n, 4, 4]>>
  %r = kiln.reduce %u {kind = #kiln<reduce sum>, axes = array<i64: 2>, keep_dims = false} : (tensor<?x4x4xf32, #kiln.dims<[n, 4, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  return %r : tensor<?x4xf32, #kiln.dims<[n, 4]>>
}

// -----

// Rows summed over by a matmul's K (x^T x): mixed.
// CHECK-LABEL: func.func @rows_contracted
// CHECK-NOT: kiln.independent_rows
func.func @rows_contracted(%x: tensor<?x8xf32, #kiln.dims<[n, 8]>>, %y: tensor<8x?xf32, #kiln.dims<[8, n]>>) -> tensor<?x?xf32, #kiln.dims<[n, n]>> {
  %m = kiln.matmul %x, %y : (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<8x?xf32, #kiln.dims<[8, n]>>) -> tensor<?x?xf32, #kiln.dims<[n, n]>>
  return %m : tensor<?x?xf32, #kiln.dims<[n, n]>>
}

// -----

// An argument without the batch dim: a server could not join it.
// CHECK-LABEL: func.func @unbatched_argument
// CHECK-NOT: kiln.independent_rows
func.func @unbatched_argument(%x: tensor<?x16xf32, #kiln.dims<[n, 16]>>, %w: tensor<16x8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>> {
  %m = kiln.matmul %x, %w : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<16x8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  return %m : tensor<?x8xf32, #kiln.dims<[n, 8]>>
}

// -----

// The batch's size read as data (x * n): each row's answer depends on how many
// requests share the call.
// CHECK-LABEL: func.func @size_as_data
// CHECK-NOT: kiln.independent_rows
func.func @size_as_data(%x: tensor<?xi64, #kiln.dims<[n]>>) -> tensor<?xi64, #kiln.dims<[n]>> {
  %s = kiln.shape_of %x : (tensor<?xi64, #kiln.dims<[n]>>) -> tensor<1xi64>
  %p = kiln.mul %x, %s : (tensor<?xi64, #kiln.dims<[n]>>, tensor<1xi64>) -> tensor<?xi64, #kiln.dims<[n]>>
  return %p : tensor<?xi64, #kiln.dims<[n]>>
}

// -----

// A dim past the rows' that grows with the batch (x[:, :n]): what each request
// gets depends on how many share the call.
// CHECK-LABEL: func.func @dim_sized_by_the_batch
// CHECK-NOT: kiln.independent_rows
func.func @dim_sized_by_the_batch(%x: tensor<?x?xf32, #kiln.dims<[n, n]>>) -> tensor<?x?xf32, #kiln.dims<[n, n]>> {
  %y = kiln.neg %x : (tensor<?x?xf32, #kiln.dims<[n, n]>>) -> tensor<?x?xf32, #kiln.dims<[n, n]>>
  return %y : tensor<?x?xf32, #kiln.dims<[n, n]>>
}

// -----

// Rows times something computed from every row (x @ mean(x over the batch)^T):
// the other operand is no constant, so each row reads the others.
// CHECK-LABEL: func.func @rows_times_a_batch_statistic
// CHECK-NOT: kiln.independent_rows
func.func @rows_times_a_batch_statistic(%x: tensor<?x8xf32, #kiln.dims<[n, 8]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>> {
  %m = kiln.reduce %x {kind = #kiln<reduce mean>, axes = array<i64: 0>} : (tensor<?x8xf32, #kiln.dims<[n, 8]>>) -> tensor<1x8xf32>
  %t = kiln.transpose %m {permutation = array<i64: 1, 0>} : (tensor<1x8xf32>) -> tensor<8x1xf32>
  %y = kiln.matmul %x, %t : (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<8x1xf32>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  return %y : tensor<?x1xf32, #kiln.dims<[n, 1]>>
}

// -----

// Pads that cancel on the rows' dim (one row cropped at the front, one added
// at the end) keep its size and shift every row into its neighbour's request;
// pads on the other dim do not.
// CHECK-LABEL: func.func @pads_shifting_rows
// CHECK-NOT: kiln.independent_rows
func.func @pads_shifting_rows(%x: tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>> {
  %p = kiln.constant dense<[-1, 0, 1, 0]> : tensor<4xi64>
  %v = kiln.constant dense<0.0> : tensor<f32>
  %y = kiln.pad %x, %p, %v {mode = #kiln<pad_mode constant>} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<4xi64>, tensor<f32>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  return %y : tensor<?x4xf32, #kiln.dims<[n, 4]>>
}

// -----

// CHECK-LABEL: func.func @pads_beside_the_rows
// CHECK-SAME: kiln.independent_rows = ["n"]
func.func @pads_beside_the_rows(%x: tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x6xf32, #kiln.dims<[n, 6]>> {
  %p = kiln.constant dense<[0, 1, 0, 1]> : tensor<4xi64>
  %v = kiln.constant dense<0.0> : tensor<f32>
  %y = kiln.pad %x, %p, %v {mode = #kiln<pad_mode constant>} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<4xi64>, tensor<f32>) -> tensor<?x6xf32, #kiln.dims<[n, 6]>>
  return %y : tensor<?x6xf32, #kiln.dims<[n, 6]>>
}
