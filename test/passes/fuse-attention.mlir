// --kiln-fuse-attention: matmul(softmax(matmul(q, kT) * scale + mask), v)
// becomes one kiln.attention; the transposes that made kT fold into one
// transpose of the keys. Chains that differ in any part stay as they are.
// RUN: kiln-opt %s -split-input-file --kiln-fuse-attention | FileCheck %s

// HuggingFace's form: heads split by reshape and transpose, k transposed
// further for the scores, a division by sqrt(d).
// CHECK-LABEL: func.func @hugging_face
// CHECK: %[[K:.*]] = kiln.transpose %arg1 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x8xf32, #kiln.dims<[b, s, 4, 8]>>) -> tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>
// CHECK: %[[O:.*]] = kiln.attention %arg0, %[[K]], %arg2 {scale = 1.250000e-01 : f64} : (tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>, tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>, tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>) -> tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>
// CHECK-NOT: kiln.softmax
// CHECK-NOT: kiln.matmul
// CHECK: return %[[O]]
func.func @hugging_face(%q: tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>, %k: tensor<?x?x4x8xf32, #kiln.dims<[b, s, 4, 8]>>, %v: tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>) -> tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>> {
  %c = kiln.constant dense<8.0> : tensor<f32>
  %kt = kiln.transpose %k {permutation = array<i64: 0, 2, 3, 1>} : (tensor<?x?x4x8xf32, #kiln.dims<[b, s, 4, 8]>>) -> tensor<?x4x8x?xf32, #kiln.dims<[b, 4, 8, s]>>
  %s = kiln.matmul %q, %kt : (tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>, tensor<?x4x8x?xf32, #kiln.dims<[b, 4, 8, s]>>) -> tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, s]>>
  %d = kiln.div %s, %c : (tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, s]>>, tensor<f32>) -> tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, s]>>
  %p = kiln.softmax %d {axis = -1 : i64} : (tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, s]>>) -> tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, s]>>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, s]>>, tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>) -> tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>
  return %o : tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>
}

// -----

// A multiplication with the constant on the left, an additive mask on the
// left of the add (broadcast over heads and queries), keys the scores matmul
// reads transposed (no transpose at all), values narrower than the keys, and
// fp16.
// CHECK-LABEL: func.func @mask_and_transposed_keys
// CHECK-NOT: kiln.transpose
// CHECK: %[[O:.*]] = kiln.attention %arg0, %arg1, %arg2, %arg3 {scale = 2.500000e-01 : f64} : (tensor<2x3x5x16xf16>, tensor<2x3x7x16xf16>, tensor<2x3x7x4xf16>, tensor<2x1x1x7xf16>) -> tensor<2x3x5x4xf16>
// CHECK: return %[[O]]
func.func @mask_and_transposed_keys(%q: tensor<2x3x5x16xf16>, %k: tensor<2x3x7x16xf16>, %v: tensor<2x3x7x4xf16>, %mask: tensor<2x1x1x7xf16>) -> tensor<2x3x5x4xf16> {
  %c = kiln.constant dense<0.25> : tensor<1xf16>
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<2x3x5x16xf16>, tensor<2x3x7x16xf16>) -> tensor<2x3x5x7xf16>
  %m = kiln.mul %c, %s : (tensor<1xf16>, tensor<2x3x5x7xf16>) -> tensor<2x3x5x7xf16>
  %a = kiln.add %mask, %m : (tensor<2x1x1x7xf16>, tensor<2x3x5x7xf16>) -> tensor<2x3x5x7xf16>
  %p = kiln.softmax %a {axis = 3 : i64} : (tensor<2x3x5x7xf16>) -> tensor<2x3x5x7xf16>
  %o = kiln.matmul %p, %v : (tensor<2x3x5x7xf16>, tensor<2x3x7x4xf16>) -> tensor<2x3x5x4xf16>
  return %o : tensor<2x3x5x4xf16>
}

// -----

// No scale at all (torch's MultiheadAttention scales q before the matmul: q
// stays a producer the kernel reads through); k's transpose has another user
// and stays for it.
// CHECK-LABEL: func.func @unscaled_shared_transpose
// CHECK: %[[KT:.*]] = kiln.transpose %arg1 {permutation = array<i64: 1, 0>}
// CHECK: %[[O:.*]] = kiln.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f64}
// CHECK: return %[[O]], %[[KT]]
func.func @unscaled_shared_transpose(%q: tensor<5x8xf32>, %k: tensor<6x8xf32>, %v: tensor<6x8xf32>) -> (tensor<5x8xf32>, tensor<8x6xf32>) {
  %kt = kiln.transpose %k {permutation = array<i64: 1, 0>} : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %s = kiln.matmul %q, %kt : (tensor<5x8xf32>, tensor<8x6xf32>) -> tensor<5x6xf32>
  %p = kiln.softmax %s {axis = 1 : i64} : (tensor<5x6xf32>) -> tensor<5x6xf32>
  %o = kiln.matmul %p, %v : (tensor<5x6xf32>, tensor<6x8xf32>) -> tensor<5x8xf32>
  return %o, %kt : tensor<5x8xf32>, tensor<8x6xf32>
}

// -----

// Not attention, or not one the kernel takes: a softmax over another axis, a
// scale that is a tensor, scores read twice, a feature dim past 256, a bias
// on the values matmul, batch dims the matmul broadcasts.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: kiln.attention
// CHECK-COUNT-6: kiln.softmax
func.func @left_alone(%q: tensor<2x5x8xf32>, %kt: tensor<2x8x5xf32>, %v: tensor<2x5x8xf32>, %w: tensor<2x5x5xf32>, %qw: tensor<5x512xf32>, %ktw: tensor<512x5xf32>, %vw: tensor<5x512xf32>, %bias: tensor<8xf32>, %q1: tensor<1x5x8xf32>) -> (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x5xf32>, tensor<5x512xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) {
  %s = kiln.matmul %q, %kt : (tensor<2x5x8xf32>, tensor<2x8x5xf32>) -> tensor<2x5x5xf32>
  %p = kiln.softmax %s {axis = 1 : i64} : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %o1 = kiln.matmul %p, %v : (tensor<2x5x5xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %s2 = kiln.matmul %q, %kt : (tensor<2x5x8xf32>, tensor<2x8x5xf32>) -> tensor<2x5x5xf32>
  %d2 = kiln.div %s2, %w : (tensor<2x5x5xf32>, tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %p2 = kiln.softmax %d2 {axis = -1 : i64} : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %o2 = kiln.matmul %p2, %v : (tensor<2x5x5xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %s3 = kiln.matmul %q, %kt : (tensor<2x5x8xf32>, tensor<2x8x5xf32>) -> tensor<2x5x5xf32>
  %p3 = kiln.softmax %s3 {axis = -1 : i64} : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %o3 = kiln.matmul %p3, %v : (tensor<2x5x5xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %s4 = kiln.matmul %qw, %ktw : (tensor<5x512xf32>, tensor<512x5xf32>) -> tensor<5x5xf32>
  %p4 = kiln.softmax %s4 {axis = -1 : i64} : (tensor<5x5xf32>) -> tensor<5x5xf32>
  %o4 = kiln.matmul %p4, %vw : (tensor<5x5xf32>, tensor<5x512xf32>) -> tensor<5x512xf32>
  %s5 = kiln.matmul %q, %kt : (tensor<2x5x8xf32>, tensor<2x8x5xf32>) -> tensor<2x5x5xf32>
  %p5 = kiln.softmax %s5 {axis = -1 : i64} : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %o5 = kiln.matmul %p5, %v, %bias : (tensor<2x5x5xf32>, tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  %s6 = kiln.matmul %q1, %kt : (tensor<1x5x8xf32>, tensor<2x8x5xf32>) -> tensor<2x5x5xf32>
  %p6 = kiln.softmax %s6 {axis = -1 : i64} : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %o6 = kiln.matmul %p6, %v : (tensor<2x5x5xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  return %o1, %o2, %o3, %s3, %o4, %o5, %o6 : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x5xf32>, tensor<5x512xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>
}
