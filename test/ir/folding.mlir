// The folders of the kiln ops, driven by the canonicalizer.
// RUN: kiln-opt %s -split-input-file --canonicalize | FileCheck %s

// CHECK-LABEL: func @fold_float_constants
// CHECK-DAG: kiln.constant dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK-DAG: kiln.constant dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: kiln.constant dense<0x7FC00000> : tensor<f32>
// CHECK-NOT: kiln.add
// CHECK-NOT: kiln.is_nan
func.func @fold_float_constants() -> (tensor<2xf32>, tensor<2xi1>, tensor<f32>) {
  %a = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = kiln.constant dense<1.0> : tensor<f32>
  %s = kiln.add %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %n = kiln.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %isnan = kiln.is_nan %n : (tensor<2xf32>) -> tensor<2xi1>
  %nan = kiln.constant dense<0x7FC00000> : tensor<f32>
  %m = kiln.max %nan, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %s, %isnan, %m : tensor<2xf32>, tensor<2xi1>, tensor<f32>
}

// -----

// Integer division truncates; mod takes the divisor's sign, rem the dividend's.
// CHECK-LABEL: func @fold_integer_division
// CHECK-DAG: kiln.constant dense<-2> : tensor<i32>
// CHECK-DAG: kiln.constant dense<2> : tensor<i32>
// CHECK-DAG: kiln.constant dense<-1> : tensor<i32>
func.func @fold_integer_division() -> (tensor<i32>, tensor<i32>, tensor<i32>) {
  %a = kiln.constant dense<-7> : tensor<i32>
  %b = kiln.constant dense<3> : tensor<i32>
  %q = kiln.div %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %m = kiln.mod %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %r = kiln.rem %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %q2 = kiln.add %q, %q : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %q3 = kiln.sub %q2, %q : (tensor<i32>, tensor<i32>) -> tensor<i32>
  return %q3, %m, %r : tensor<i32>, tensor<i32>, tensor<i32>
}

// -----

// Division by a zero constant is left for run time, not folded.
// CHECK-LABEL: func @no_fold_division_by_zero
// CHECK: kiln.div
func.func @no_fold_division_by_zero() -> tensor<i32> {
  %a = kiln.constant dense<7> : tensor<i32>
  %z = kiln.constant dense<0> : tensor<i32>
  %q = kiln.div %a, %z : (tensor<i32>, tensor<i32>) -> tensor<i32>
  return %q : tensor<i32>
}

// -----

// x + 0, x * 1 and the identity transpose disappear; broadcasting ones do not.
// CHECK-LABEL: func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<1xf32>)
// CHECK: %[[B:.*]] = kiln.add %[[Y]]
// CHECK: return %[[X]], %[[B]]
func.func @identities(%x: tensor<4xf32>, %y: tensor<1xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = kiln.constant dense<0.0> : tensor<4xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %a = kiln.add %x, %zero : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %m = kiln.mul %one, %a : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %t = kiln.transpose %m {permutation = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %b = kiln.add %y, %zero : (tensor<1xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Casts fold on constants with ONNX semantics: float to int truncates.
// CHECK-LABEL: func @fold_casts
// CHECK-DAG: kiln.constant dense<[-2, 2]> : tensor<2xi32>
// CHECK-DAG: kiln.constant dense<[true, false]> : tensor<2xi1>
func.func @fold_casts() -> (tensor<2xi32>, tensor<2xi1>) {
  %a = kiln.constant dense<[-2.7, 2.7]> : tensor<2xf32>
  %i = kiln.cast %a to i32 : (tensor<2xf32>) -> tensor<2xi32>
  %b = kiln.constant dense<[3, 0]> : tensor<2xi64>
  %c = kiln.cast %b to i1 : (tensor<2xi64>) -> tensor<2xi1>
  return %i, %c : tensor<2xi32>, tensor<2xi1>
}

// -----

// Shape computations fold onto symbolic constants.
// CHECK-LABEL: func @fold_shape_computation
// CHECK: %[[S:.*]] = kiln.symbolic_constant [n + 1, 2 * n] : tensor<2xi64>
// CHECK: return %[[S]]
func.func @fold_shape_computation(%x: tensor<?x2xf32, #kiln.dims<[n, 2]>>) -> tensor<2xi64> {
  %shape = kiln.shape_of %x : (tensor<?x2xf32, #kiln.dims<[n, 2]>>) -> tensor<2xi64>
  %i = kiln.constant dense<[0, 0]> : tensor<2xi64>
  %nn = kiln.gather %shape, %i {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %k = kiln.constant dense<[1, 0]> : tensor<2xi64>
  %m = kiln.constant dense<[1, 2]> : tensor<2xi64>
  %t = kiln.mul %nn, %m : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %r = kiln.add %t, %k : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %r : tensor<2xi64>
}

// -----

// A static shape folds to a plain constant.
// CHECK-LABEL: func @fold_static_shape
// CHECK: kiln.constant dense<[3, 4]> : tensor<2xi64>
func.func @fold_static_shape(%x: tensor<3x4xf32>) -> tensor<2xi64> {
  %s = kiln.shape_of %x : (tensor<3x4xf32>) -> tensor<2xi64>
  return %s : tensor<2xi64>
}

// -----

// reshape(reshape(x)) keeps only the last shape; a reshape to the same type is x.
// CHECK-LABEL: func @reshape_chains
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>)
// CHECK: %[[R:.*]] = kiln.reshape %[[X]], %{{.*}} : (tensor<2x6xf32>, tensor<1xi64>) -> tensor<12xf32>
// CHECK: return %[[R]], %[[X]]
func.func @reshape_chains(%x: tensor<2x6xf32>) -> (tensor<12xf32>, tensor<2x6xf32>) {
  %s1 = kiln.constant dense<[3, 4]> : tensor<2xi64>
  %s2 = kiln.constant dense<[12]> : tensor<1xi64>
  %a = kiln.reshape %x, %s1 : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  %b = kiln.reshape %a, %s2 : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<12xf32>
  %s3 = kiln.constant dense<[2, 6]> : tensor<2xi64>
  %c = kiln.reshape %x, %s3 : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<2x6xf32>
  return %b, %c : tensor<12xf32>, tensor<2x6xf32>
}

// -----

// Equal types with unknown dims ('?' with no symbol) are no proof of equal
// shapes: reshape(reshape(%grid, [-1]), [n, 1]) is not %grid, and select of a
// constant condition (or of one value twice) keeps its broadcast. Dims that
// are symbols prove it: that reshape folds.
// CHECK-LABEL: func @unknown_dims_do_not_fold
// CHECK-SAME: (%[[G:[^:]*]]: tensor<?x?xf32>, %[[S:[^:]*]]: tensor<2xi64>, %[[Y:[^:]*]]: tensor<?xf32>, %[[Z:[^:]*]]: tensor<?x?xf32, #kiln.dims<[a, b]>>)
// CHECK: %[[R:.*]] = kiln.reshape %[[G]], %[[S]] : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
// CHECK: %[[P:.*]] = kiln.select %{{.*}}, %[[Y]], %{{.*}}
// CHECK: %[[Q:.*]] = kiln.select %{{.*}}, %[[Y]], %[[Y]]
// CHECK: return %[[R]], %[[P]], %[[Q]], %[[Z]]
func.func @unknown_dims_do_not_fold(%grid: tensor<?x?xf32>, %shape: tensor<2xi64>, %y: tensor<?xf32>, %z: tensor<?x?xf32, #kiln.dims<[a, b]>>) -> (tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x?xf32, #kiln.dims<[a, b]>>) {
  %flat = kiln.constant dense<[-1]> : tensor<1xi64>
  %f = kiln.reshape %grid, %flat : (tensor<?x?xf32>, tensor<1xi64>) -> tensor<?xf32>
  %r = kiln.reshape %f, %shape : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %yes = kiln.constant dense<true> : tensor<i1>
  %other = kiln.constant dense<1.0> : tensor<f32>
  %p = kiln.select %yes, %y, %other : (tensor<i1>, tensor<?xf32>, tensor<f32>) -> tensor<?xf32>
  %c = kiln.compare %y, %y {direction = #kiln<compare lt>} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xi1>
  %q = kiln.select %c, %y, %y : (tensor<?xi1>, tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %zs = kiln.symbolic_constant [a, b] : tensor<2xi64>
  %zr = kiln.reshape %z, %zs : (tensor<?x?xf32, #kiln.dims<[a, b]>>, tensor<2xi64>) -> tensor<?x?xf32, #kiln.dims<[a, b]>>
  return %r, %p, %q, %zr : tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?x?xf32, #kiln.dims<[a, b]>>
}

// -----

// select on a constant condition picks a side; compare folds on constants.
// CHECK-LABEL: func @fold_select_compare
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[C:.*]] = kiln.constant dense<[false, true]> : tensor<2xi1>
// CHECK: return %[[B]], %[[C]]
func.func @fold_select_compare(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<2xi1>) {
  %f = kiln.constant dense<false> : tensor<i1>
  %s = kiln.select %f, %a, %b : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %x = kiln.constant dense<[1, 5]> : tensor<2xi64>
  %y = kiln.constant dense<3> : tensor<i64>
  %c = kiln.compare %x, %y {direction = #kiln<compare gt>} : (tensor<2xi64>, tensor<i64>) -> tensor<2xi1>
  return %s, %c : tensor<4xf32>, tensor<2xi1>
}

// -----

// Transposes of constants (Gemm's transB on a weight) fold at compile time.
// CHECK-LABEL: func @fold_transpose_of_constant
// CHECK-DAG: kiln.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-DAG: kiln.constant dense<{{\[\[\[}}0, 4], [1, 5]], {{\[\[}}2, 6], [3, 7]]]> : tensor<2x2x2xi8>
// CHECK-DAG: kiln.constant dense<7> : tensor<4x2xi64>
// CHECK-NOT: kiln.transpose
func.func @fold_transpose_of_constant() -> (tensor<3x2xf32>, tensor<2x2x2xi8>, tensor<4x2xi64>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = kiln.transpose %w {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %c = kiln.constant dense<[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]> : tensor<2x2x2xi8>
  %u = kiln.transpose %c {permutation = array<i64: 1, 2, 0>} : (tensor<2x2x2xi8>) -> tensor<2x2x2xi8>
  %s = kiln.constant dense<7> : tensor<2x4xi64>
  %v = kiln.transpose %s {permutation = array<i64: 1, 0>} : (tensor<2x4xi64>) -> tensor<4x2xi64>
  return %t, %u, %v : tensor<3x2xf32>, tensor<2x2x2xi8>, tensor<4x2xi64>
}

// -----

// A weight stored as a resource blob (the importer makes one of every
// initializer of 64 KiB or more) folds too, at any size, into a new blob.
// CHECK-LABEL: func @fold_transpose_of_resource
// CHECK: %[[T:.*]] = kiln.constant dense_resource<transposed> : tensor<3x2xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[T]]
// CHECK: transposed: "0x{{[0-9]+}}0000000000803F00008040000000400000A040000040400000C040"
func.func @fold_transpose_of_resource() -> tensor<3x2xf32> {
  %w = kiln.constant dense_resource<weight> : tensor<2x3xf32>
  %t = kiln.transpose %w {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weight: "0x040000000000803f0000004000004040000080400000a0400000c040"
    }
  }
#-}
