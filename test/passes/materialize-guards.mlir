// RUN: kiln-opt %s -split-input-file --kiln-materialize-guards | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-materialize-guards --kiln-materialize-guards | FileCheck %s
// A symbolic dim broadcast against a static one must be 1 or that size.
// CHECK-LABEL: func @broadcast_against_static
// CHECK-NEXT: kiln.guard <equal_or_one> [n, 4], "kiln.add at 'Add_1': operand 0 dim 0 must be 1 or the broadcast size"
// CHECK-NEXT: kiln.add
func.func @broadcast_against_static(%x: tensor<?xf32, #kiln.dims<[n]>>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %s = kiln.add %x, %y : (tensor<?xf32, #kiln.dims<[n]>>, tensor<4xf32>) -> tensor<4xf32> loc("Add_1")
  return %s : tensor<4xf32>
}

// -----

// Equal dims and a dim of 1 prove themselves: no guard.
// CHECK-LABEL: func @nothing_to_guard
// CHECK-NOT: kiln.guard
func.func @nothing_to_guard(%x: tensor<?x4xf32, #kiln.dims<[n, 4]>>, %y: tensor<1x4xf32>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>> {
  %s = kiln.add %x, %y : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<1x4xf32>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %t = kiln.mul %s, %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  return %t : tensor<?x4xf32, #kiln.dims<[n, 4]>>
}

// -----

// Matmul takes its contraction dims equal; two matmuls relying on one fact give
// one guard (the first names it), and a == b is b == a.
// CHECK-LABEL: func @matmul_contraction
// CHECK-NEXT: kiln.guard <equal> [j, k], "kiln.matmul at 'MatMul_1': contraction dims (lhs dim -1, rhs dim -2) must match"
// CHECK-NOT: kiln.guard
// CHECK: kiln.matmul
func.func @matmul_contraction(%a: tensor<2x?xf32, #kiln.dims<[2, k]>>, %b: tensor<?x3xf32, #kiln.dims<[j, 3]>>, %c: tensor<?x3xf32, #kiln.dims<[j, 3]>>) -> tensor<2x3xf32> {
  %m = kiln.matmul %a, %b : (tensor<2x?xf32, #kiln.dims<[2, k]>>, tensor<?x3xf32, #kiln.dims<[j, 3]>>) -> tensor<2x3xf32> loc("MatMul_1")
  %n = kiln.matmul %a, %c : (tensor<2x?xf32, #kiln.dims<[2, k]>>, tensor<?x3xf32, #kiln.dims<[j, 3]>>) -> tensor<2x3xf32> loc("MatMul_2")
  %s = kiln.add %m, %n : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// -----

// A reshape whose sizes an exporter baked in keeps the element count only at the
// example's size; a slice to a constant end assumes the dim reaches it. Cheapest
// guard first.
// CHECK-LABEL: func @baked_reshape_and_slice
// CHECK-NEXT: kiln.guard <less_equal> [3, seq], "kiln.slice at 'Slice_1': the end of dim 0 must not lie past the dim"
// CHECK-NEXT: kiln.guard <equal> [320, 64 * seq], "kiln.reshape at 'Reshape_1': the input's and the result's element counts must be equal"
func.func @baked_reshape_and_slice(%x: tensor<?x64xf32, #kiln.dims<[seq, 64]>>) -> (tensor<5x64xf32>, tensor<3x64xf32>) {
  %shape = kiln.constant dense<[5, 64]> : tensor<2xi64>
  %r = kiln.reshape %x, %shape : (tensor<?x64xf32, #kiln.dims<[seq, 64]>>, tensor<2xi64>) -> tensor<5x64xf32> loc("Reshape_1")
  %starts = kiln.constant dense<[0, 0]> : tensor<2xi64>
  %ends = kiln.constant dense<[3, 64]> : tensor<2xi64>
  %steps = kiln.constant dense<[1, 1]> : tensor<2xi64>
  %s = kiln.slice %x, %starts, %ends, %steps : (tensor<?x64xf32, #kiln.dims<[seq, 64]>>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<3x64xf32> loc("Slice_1")
  return %r, %s : tensor<5x64xf32>, tensor<3x64xf32>
}

// -----

// Concat takes its inputs' other dims equal; a declared dim that differs from
// the inferred one is an assumption too.
// CHECK-LABEL: func @concat_and_declared
// CHECK-DAG: kiln.guard <equal> [a, b], "kiln.concat: dim 1 of input 1 must match"
// CHECK-DAG: kiln.guard <equal> [2 * a, c], "kiln.exp: result 0 dim 0 as declared must equal the inferred size"
func.func @concat_and_declared(%x: tensor<1x?xf32, #kiln.dims<[1, a]>>, %y: tensor<1x?xf32, #kiln.dims<[1, b]>>, %z: tensor<?xf32, #kiln.dims<[a * 2]>>) -> (tensor<2x?xf32>, tensor<?xf32, #kiln.dims<[c]>>) {
  %c = kiln.concat %x, %y {axis = 0 : i64} : (tensor<1x?xf32, #kiln.dims<[1, a]>>, tensor<1x?xf32, #kiln.dims<[1, b]>>) -> tensor<2x?xf32>
  %e = kiln.exp %z : (tensor<?xf32, #kiln.dims<[a * 2]>>) -> tensor<?xf32, #kiln.dims<[c]>>
  return %c, %e : tensor<2x?xf32>, tensor<?xf32, #kiln.dims<[c]>>
}

// -----

// An element of gather_elements' (scatter_elements') indices reads (writes)
// data at its own position on every dim but the axis: indices' other dims
// must fit in data's.
// CHECK-LABEL: func @gather_elements_other_dims
// CHECK-NEXT: kiln.guard <less_equal> [m, n], "kiln.gather_elements at 'GatherElements_1': dim 0 of indices must not exceed data's"
// CHECK-NEXT: kiln.gather_elements
func.func @gather_elements_other_dims(%d: tensor<?x8xf32, #kiln.dims<[n, 8]>>, %i: tensor<?x2xi64, #kiln.dims<[m, 2]>>) -> tensor<?x2xf32, #kiln.dims<[m, 2]>> {
  %g = kiln.gather_elements %d, %i {axis = 1 : i64} : (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<?x2xi64, #kiln.dims<[m, 2]>>) -> tensor<?x2xf32, #kiln.dims<[m, 2]>> loc("GatherElements_1")
  return %g : tensor<?x2xf32, #kiln.dims<[m, 2]>>
}

// -----

// A crop [2, w floordiv 2) of a dim w: its end lies within the dim (proven:
// w - w floordiv 2 is never negative), but the crop is in order only for w >= 4,
// which is checked per call. Taking a whole dim, [0, dim), needs no guard.
// CHECK-LABEL: func @crop_in_order
// CHECK-NEXT: kiln.guard <less_equal> [2, w floordiv 2], "kiln.slice at 'Crop': the end of dim 1 must not lie before its start"
// CHECK-NOT: kiln.guard
func.func @crop_in_order(%x: tensor<?x?xf32, #kiln.dims<[n, w]>>) -> tensor<?x?xf32> {
  %starts = kiln.constant dense<[0, 2]> : tensor<2xi64>
  %ends = kiln.symbolic_constant [9223372036854775807, w floordiv 2] : tensor<2xi64>
  %steps = kiln.constant dense<1> : tensor<2xi64>
  %s = kiln.slice %x, %starts, %ends, %steps : (tensor<?x?xf32, #kiln.dims<[n, w]>>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32> loc("Crop")
  return %s : tensor<?x?xf32>
}

// -----

// A symbolic end that is never positive counts from the end (x[:, :-(w // 2)])
// or is 0 for small w: which, only the call knows, so no guard is taken on
// trust and the slice's length stays the data's.
// CHECK-LABEL: func @end_from_the_end
// CHECK-NOT: kiln.guard
// CHECK: kiln.slice {{.*}} -> tensor<?x?xf32>
func.func @end_from_the_end(%x: tensor<?x?xf32, #kiln.dims<[n, w]>>) -> tensor<?x?xf32> {
  %starts = kiln.constant dense<[0, 0]> : tensor<2xi64>
  %ends = kiln.symbolic_constant [9223372036854775807, -(w floordiv 2)] : tensor<2xi64>
  %steps = kiln.constant dense<1> : tensor<2xi64>
  %s = kiln.slice %x, %starts, %ends, %steps : (tensor<?x?xf32, #kiln.dims<[n, w]>>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32> loc("FromEnd")
  return %s : tensor<?x?xf32>
}

// -----

// Facts over sizes steps bind (two non_zero counts, read from the device)
// cannot be checked when a call starts: each is guarded right before the op
// relying on it, where both counts are bound (the artifact's check step), and
// the concat then forms a kernel. Rerunning the pass leaves it there.
// RUN: kiln-opt %s -split-input-file --kiln-name-unknown-dims --kiln-sizes-on-device --kiln-materialize-guards | FileCheck %s --check-prefix=LATE
// RUN: kiln-opt %s -split-input-file --kiln-name-unknown-dims --kiln-sizes-on-device --kiln-materialize-guards --kiln-materialize-guards --kiln-form-kernels | FileCheck %s --check-prefix=LATE-KERNELS
// LATE-LABEL: func @counts_that_must_match
// LATE: kiln.read_sizes {{.*}} ["run0"]
// LATE: kiln.read_sizes {{.*}} ["run1"]
// LATE-NOT: kiln.guard
// LATE: kiln.guard <equal> [run0, run1], "kiln.concat at 'Concat_1': dim 1 of input 1 must match"
// LATE-NEXT: kiln.concat
// LATE-KERNELS-LABEL: func @counts_that_must_match
// LATE-KERNELS: kiln.guard <equal> [run0, run1]
// LATE-KERNELS-NEXT: kiln.kernel "pointwise"
// LATE-KERNELS-NEXT: ^bb0
// LATE-KERNELS-NEXT: kiln.concat
func.func @counts_that_must_match(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<2x?xi64> {
  %i = kiln.non_zero %x : (tensor<8xf32>) -> tensor<1x?xi64>
  %j = kiln.non_zero %y : (tensor<8xf32>) -> tensor<1x?xi64>
  %c = kiln.concat %i, %j {axis = 0 : i64} : (tensor<1x?xi64>, tensor<1x?xi64>) -> tensor<2x?xi64> loc("Concat_1")
  return %c : tensor<2x?xi64>
}
