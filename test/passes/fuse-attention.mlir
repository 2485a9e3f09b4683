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

// No scale at all; k's transpose has another user and stays for it.
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

// bf16 with the softmax in float32 (transformers' eager attention:
// softmax(scores.float()).to(dtype)): both casts go with the chain, and the
// mask is added in bf16 before the cast up.
// CHECK-LABEL: func.func @float32_softmax
// CHECK-NOT: kiln.cast
// CHECK-NOT: kiln.softmax
// CHECK: %[[O:.*]] = kiln.attention %arg0, %arg1, %arg2, %arg3 {scale = 1.250000e-01 : f64} : (tensor<1x4x1x8xbf16>, tensor<1x4x9x8xbf16>, tensor<1x4x9x8xbf16>, tensor<1x1x1x9xbf16>) -> tensor<1x4x1x8xbf16>
// CHECK: return %[[O]]
func.func @float32_softmax(%q: tensor<1x4x1x8xbf16>, %k: tensor<1x4x9x8xbf16>, %v: tensor<1x4x9x8xbf16>, %mask: tensor<1x1x1x9xbf16>) -> tensor<1x4x1x8xbf16> {
  %c = kiln.constant dense<0.125> : tensor<bf16>
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x4x1x8xbf16>, tensor<1x4x9x8xbf16>) -> tensor<1x4x1x9xbf16>
  %m = kiln.mul %s, %c : (tensor<1x4x1x9xbf16>, tensor<bf16>) -> tensor<1x4x1x9xbf16>
  %a = kiln.add %m, %mask : (tensor<1x4x1x9xbf16>, tensor<1x1x1x9xbf16>) -> tensor<1x4x1x9xbf16>
  %up = kiln.cast %a to f32 : (tensor<1x4x1x9xbf16>) -> tensor<1x4x1x9xf32>
  %p = kiln.softmax %up {axis = -1 : i64} : (tensor<1x4x1x9xf32>) -> tensor<1x4x1x9xf32>
  %down = kiln.cast %p to bf16 : (tensor<1x4x1x9xf32>) -> tensor<1x4x1x9xbf16>
  %o = kiln.matmul %down, %v : (tensor<1x4x1x9xbf16>, tensor<1x4x9x8xbf16>) -> tensor<1x4x1x8xbf16>
  return %o : tensor<1x4x1x8xbf16>
}

// -----

// Casts that are not that pair: the weights cast to another narrow type than
// the scores came in (f16 scores, bf16 weights), a softmax in f16 of f32
// scores (a narrowing "up"), and an f32 softmax taken in f64 (the kernel
// would compute it in f32). All stay as they are.
// CHECK-LABEL: func.func @other_casts
// CHECK-NOT: kiln.attention
// CHECK-COUNT-3: kiln.softmax
func.func @other_casts(%q: tensor<4x1x8xf16>, %k: tensor<4x9x8xf16>, %vb: tensor<4x9x8xbf16>, %q32: tensor<4x1x8xf32>, %k32: tensor<4x9x8xf32>, %v32: tensor<4x9x8xf32>) -> (tensor<4x1x8xbf16>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<4x1x8xf16>, tensor<4x9x8xf16>) -> tensor<4x1x9xf16>
  %up = kiln.cast %s to f32 : (tensor<4x1x9xf16>) -> tensor<4x1x9xf32>
  %p = kiln.softmax %up {axis = -1 : i64} : (tensor<4x1x9xf32>) -> tensor<4x1x9xf32>
  %down = kiln.cast %p to bf16 : (tensor<4x1x9xf32>) -> tensor<4x1x9xbf16>
  %o = kiln.matmul %down, %vb : (tensor<4x1x9xbf16>, tensor<4x9x8xbf16>) -> tensor<4x1x8xbf16>
  %s2 = kiln.matmul %q32, %k32 {transpose_rhs = true} : (tensor<4x1x8xf32>, tensor<4x9x8xf32>) -> tensor<4x1x9xf32>
  %n2 = kiln.cast %s2 to f16 : (tensor<4x1x9xf32>) -> tensor<4x1x9xf16>
  %p2 = kiln.softmax %n2 {axis = -1 : i64} : (tensor<4x1x9xf16>) -> tensor<4x1x9xf16>
  %w2 = kiln.cast %p2 to f32 : (tensor<4x1x9xf16>) -> tensor<4x1x9xf32>
  %o2 = kiln.matmul %w2, %v32 : (tensor<4x1x9xf32>, tensor<4x9x8xf32>) -> tensor<4x1x8xf32>
  %s3 = kiln.matmul %q32, %k32 {transpose_rhs = true} : (tensor<4x1x8xf32>, tensor<4x9x8xf32>) -> tensor<4x1x9xf32>
  %u3 = kiln.cast %s3 to f64 : (tensor<4x1x9xf32>) -> tensor<4x1x9xf64>
  %p3 = kiln.softmax %u3 {axis = -1 : i64} : (tensor<4x1x9xf64>) -> tensor<4x1x9xf64>
  %w3 = kiln.cast %p3 to f32 : (tensor<4x1x9xf64>) -> tensor<4x1x9xf32>
  %o3 = kiln.matmul %w3, %v32 : (tensor<4x1x9xf32>, tensor<4x9x8xf32>) -> tensor<4x1x8xf32>
  return %o, %o2, %o3 : tensor<4x1x8xbf16>, tensor<4x1x8xf32>, tensor<4x1x8xf32>
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

// -----

// torch.onnx.export (dynamo) of scaled_dot_product_attention after
// repeat_kv: q and k^T each scaled by the scale's root (both go into the
// scale, 0.5 * 0.5), k^T made by merging the heads into one batch dim,
// transposing and splitting them again (the keys are read as [b, 4, t, 8]
// through one reshape instead), a boolean mask turned additive, and the
// weights guarded by select(is_nan(p), 0, p) (zero_masked_rows).
// CHECK-LABEL: func.func @torch_sdpa
// CHECK: %[[SHAPE:.*]] = kiln.symbolic_constant [b, 4, t, 8] : tensor<4xi64>
// CHECK: %[[K:.*]] = kiln.reshape %arg1, %[[SHAPE]] : (tensor<?x2x2x?x8xf32, #kiln.dims<[b, 2, 2, t, 8]>>, tensor<4xi64>) -> tensor<?x4x?x8xf32, #kiln.dims<[b, 4, t, 8]>>
// CHECK: %[[O:.*]] = kiln.attention %arg0, %[[K]], %arg2, %{{.*}} {scale = 2.500000e-01 : f64, zero_masked_rows}
// CHECK-NOT: kiln.transpose
// CHECK-NOT: kiln.is_nan
// CHECK-NOT: kiln.matmul
// CHECK: return %[[O]]
func.func @torch_sdpa(%q: tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>, %k5: tensor<?x2x2x?x8xf32, #kiln.dims<[b, 2, 2, t, 8]>>, %v: tensor<?x4x?x8xf32, #kiln.dims<[b, 4, t, 8]>>, %seen: tensor<?x1x?x?xi1, #kiln.dims<[b, 1, s, t]>>) -> tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>> {
  %root = kiln.constant dense<0.5> : tensor<f32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %ninf = kiln.constant dense<0xFF800000> : tensor<f32>
  %merge = kiln.symbolic_constant [-1, t, 8] : tensor<3xi64>
  %split = kiln.symbolic_constant [b, 4, 8, t] : tensor<4xi64>
  %km = kiln.reshape %k5, %merge : (tensor<?x2x2x?x8xf32, #kiln.dims<[b, 2, 2, t, 8]>>, tensor<3xi64>) -> tensor<?x?x8xf32, #kiln.dims<[4 * b, t, 8]>>
  %kmt = kiln.transpose %km {permutation = array<i64: 0, 2, 1>} : (tensor<?x?x8xf32, #kiln.dims<[4 * b, t, 8]>>) -> tensor<?x8x?xf32, #kiln.dims<[4 * b, 8, t]>>
  %kt = kiln.reshape %kmt, %split : (tensor<?x8x?xf32, #kiln.dims<[4 * b, 8, t]>>, tensor<4xi64>) -> tensor<?x4x8x?xf32, #kiln.dims<[b, 4, 8, t]>>
  %qs = kiln.mul %q, %root : (tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>, tensor<f32>) -> tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>
  %kts = kiln.mul %kt, %root : (tensor<?x4x8x?xf32, #kiln.dims<[b, 4, 8, t]>>, tensor<f32>) -> tensor<?x4x8x?xf32, #kiln.dims<[b, 4, 8, t]>>
  %mask = kiln.select %seen, %zero, %ninf : (tensor<?x1x?x?xi1, #kiln.dims<[b, 1, s, t]>>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32, #kiln.dims<[b, 1, s, t]>>
  %s = kiln.matmul %qs, %kts : (tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>, tensor<?x4x8x?xf32, #kiln.dims<[b, 4, 8, t]>>) -> tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, t]>>
  %a = kiln.add %s, %mask : (tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, t]>>, tensor<?x1x?x?xf32, #kiln.dims<[b, 1, s, t]>>) -> tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, t]>>
  %p = kiln.softmax %a {axis = -1 : i64} : (tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, t]>>) -> tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, t]>>
  %nan = kiln.is_nan %p : (tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, t]>>) -> tensor<?x4x?x?xi1, #kiln.dims<[b, 4, s, t]>>
  %g = kiln.select %nan, %zero, %p : (tensor<?x4x?x?xi1, #kiln.dims<[b, 4, s, t]>>, tensor<f32>, tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, t]>>) -> tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, t]>>
  %o = kiln.matmul %g, %v : (tensor<?x4x?x?xf32, #kiln.dims<[b, 4, s, t]>>, tensor<?x4x?x8xf32, #kiln.dims<[b, 4, t, 8]>>) -> tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>
  return %o : tensor<?x4x?x8xf32, #kiln.dims<[b, 4, s, 8]>>
}

// -----

// The guard after the cast back to bf16 (the softmax in float32).
// CHECK-LABEL: func.func @guard_after_cast
// CHECK-NOT: kiln.cast
// CHECK: %[[O:.*]] = kiln.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f64, zero_masked_rows}
// CHECK: return %[[O]]
func.func @guard_after_cast(%q: tensor<1x4x3x8xbf16>, %k: tensor<1x4x9x8xbf16>, %v: tensor<1x4x9x8xbf16>) -> tensor<1x4x3x8xbf16> {
  %c = kiln.constant dense<0.125> : tensor<bf16>
  %zero = kiln.constant dense<0.0> : tensor<bf16>
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x4x3x8xbf16>, tensor<1x4x9x8xbf16>) -> tensor<1x4x3x9xbf16>
  %m = kiln.mul %s, %c : (tensor<1x4x3x9xbf16>, tensor<bf16>) -> tensor<1x4x3x9xbf16>
  %up = kiln.cast %m to f32 : (tensor<1x4x3x9xbf16>) -> tensor<1x4x3x9xf32>
  %p = kiln.softmax %up {axis = -1 : i64} : (tensor<1x4x3x9xf32>) -> tensor<1x4x3x9xf32>
  %down = kiln.cast %p to bf16 : (tensor<1x4x3x9xf32>) -> tensor<1x4x3x9xbf16>
  %nan = kiln.is_nan %down : (tensor<1x4x3x9xbf16>) -> tensor<1x4x3x9xi1>
  %g = kiln.select %nan, %zero, %down : (tensor<1x4x3x9xi1>, tensor<bf16>, tensor<1x4x3x9xbf16>) -> tensor<1x4x3x9xbf16>
  %o = kiln.matmul %g, %v : (tensor<1x4x3x9xbf16>, tensor<1x4x9x8xbf16>) -> tensor<1x4x3x8xbf16>
  return %o : tensor<1x4x3x8xbf16>
}

// -----

// Guards that are not torch's: NaN weights made 1 (not 0), and an is_nan
// read by another op too: the chains stay.
// CHECK-LABEL: func.func @not_the_guard
// CHECK-NOT: kiln.attention
// CHECK-COUNT-2: kiln.softmax
func.func @not_the_guard(%q: tensor<2x5x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x8xf32>) -> (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x5xi1>) {
  %one = kiln.constant dense<1.0> : tensor<f32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x5xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %nan = kiln.is_nan %p : (tensor<2x5x5xf32>) -> tensor<2x5x5xi1>
  %g = kiln.select %nan, %one, %p : (tensor<2x5x5xi1>, tensor<f32>, tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %o = kiln.matmul %g, %v : (tensor<2x5x5xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %s2 = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x5xf32>
  %p2 = kiln.softmax %s2 {axis = -1 : i64} : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %nan2 = kiln.is_nan %p2 : (tensor<2x5x5xf32>) -> tensor<2x5x5xi1>
  %g2 = kiln.select %nan2, %zero, %p2 : (tensor<2x5x5xi1>, tensor<f32>, tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %o2 = kiln.matmul %g2, %v : (tensor<2x5x5xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  return %o, %o2, %nan2 : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x5xi1>
}

// -----

// A reshape-transpose-reshape that changes the matrices (the first reshape
// does not keep k's last two dims) is not k transposed as rows: the keys are
// k^T transposed back, as for any other k^T.
// CHECK-LABEL: func.func @not_regrouped
// CHECK: %[[KT:.*]] = kiln.reshape %{{.*}} -> tensor<2x8x5xf32>
// CHECK: %[[K:.*]] = kiln.transpose %[[KT]] {permutation = array<i64: 0, 2, 1>}
// CHECK: kiln.attention %arg0, %[[K]], %arg2
func.func @not_regrouped(%q: tensor<2x5x8xf32>, %k4: tensor<2x5x4x2xf32>, %v: tensor<2x5x8xf32>) -> tensor<2x5x8xf32> {
  %merge = kiln.constant dense<[10, 4, 2]> : tensor<3xi64>
  %split = kiln.constant dense<[2, 8, 5]> : tensor<3xi64>
  %km = kiln.reshape %k4, %merge : (tensor<2x5x4x2xf32>, tensor<3xi64>) -> tensor<10x4x2xf32>
  %kmt = kiln.transpose %km {permutation = array<i64: 0, 2, 1>} : (tensor<10x4x2xf32>) -> tensor<10x2x4xf32>
  %kt = kiln.reshape %kmt, %split : (tensor<10x2x4xf32>, tensor<3xi64>) -> tensor<2x8x5xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x5x8xf32>, tensor<2x8x5xf32>) -> tensor<2x5x5xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %o = kiln.matmul %p, %v : (tensor<2x5x5xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  return %o : tensor<2x5x8xf32>
}

// -----

// Dims nobody knows (no symbol) prove nothing about the regrouping: the keys
// are k^T transposed back.
// CHECK-LABEL: func.func @unknown_dims
// CHECK: %[[KT:.*]] = kiln.reshape %{{.*}} -> tensor<2x?x?xf32>
// CHECK: %[[K:.*]] = kiln.transpose %[[KT]] {permutation = array<i64: 0, 2, 1>}
// CHECK: kiln.attention %arg0, %[[K]], %arg2
func.func @unknown_dims(%q: tensor<2x5x8xf32>, %k4: tensor<2x?x?xf32>, %v: tensor<2x?x8xf32>, %merge: tensor<3xi64>, %split: tensor<3xi64>) -> tensor<2x5x8xf32> {
  %km = kiln.reshape %k4, %merge : (tensor<2x?x?xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %kmt = kiln.transpose %km {permutation = array<i64: 0, 2, 1>} : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %kt = kiln.reshape %kmt, %split : (tensor<?x?x?xf32>, tensor<3xi64>) -> tensor<2x?x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x5x8xf32>, tensor<2x?x?xf32>) -> tensor<2x5x?xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x5x?xf32>) -> tensor<2x5x?xf32>
  %o = kiln.matmul %p, %v : (tensor<2x5x?xf32>, tensor<2x?x8xf32>) -> tensor<2x5x8xf32>
  return %o : tensor<2x5x8xf32>
}

// -----

// Grouped-query heads as transformers' repeat_kv writes them: each of the 2
// key/value heads unsqueezed, broadcast to 4 query heads and merged. The
// attention reads the 2 heads themselves (each once for its group), and the
// views go.
// CHECK-LABEL: func.func @repeat_kv
// CHECK: %[[O:.*]] = kiln.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f64} : (tensor<?x8x?x64xf32, #kiln.dims<[b, 8, s, 64]>>, tensor<?x2x?x64xf32, #kiln.dims<[b, 2, t, 64]>>, tensor<?x2x?x64xf32, #kiln.dims<[b, 2, t, 64]>>)
// CHECK-NOT: kiln.broadcast_to
// CHECK-NOT: kiln.reshape
// CHECK: return %[[O]]
func.func @repeat_kv(%q: tensor<?x8x?x64xf32, #kiln.dims<[b, 8, s, 64]>>, %k: tensor<?x2x?x64xf32, #kiln.dims<[b, 2, t, 64]>>, %v: tensor<?x2x?x64xf32, #kiln.dims<[b, 2, t, 64]>>) -> tensor<?x8x?x64xf32, #kiln.dims<[b, 8, s, 64]>> {
  %one = kiln.symbolic_constant [b, 2, 1, t, 64] : tensor<5xi64>
  %wide = kiln.symbolic_constant [b, 2, 4, t, 64] : tensor<5xi64>
  %merged = kiln.symbolic_constant [b, 8, t, 64] : tensor<4xi64>
  %c = kiln.constant dense<8.0> : tensor<f32>
  %k1 = kiln.reshape %k, %one : (tensor<?x2x?x64xf32, #kiln.dims<[b, 2, t, 64]>>, tensor<5xi64>) -> tensor<?x2x1x?x64xf32, #kiln.dims<[b, 2, 1, t, 64]>>
  %kw = kiln.broadcast_to %k1, %wide : (tensor<?x2x1x?x64xf32, #kiln.dims<[b, 2, 1, t, 64]>>, tensor<5xi64>) -> tensor<?x2x4x?x64xf32, #kiln.dims<[b, 2, 4, t, 64]>>
  %kr = kiln.reshape %kw, %merged : (tensor<?x2x4x?x64xf32, #kiln.dims<[b, 2, 4, t, 64]>>, tensor<4xi64>) -> tensor<?x8x?x64xf32, #kiln.dims<[b, 8, t, 64]>>
  %v1 = kiln.reshape %v, %one : (tensor<?x2x?x64xf32, #kiln.dims<[b, 2, t, 64]>>, tensor<5xi64>) -> tensor<?x2x1x?x64xf32, #kiln.dims<[b, 2, 1, t, 64]>>
  %vw = kiln.broadcast_to %v1, %wide : (tensor<?x2x1x?x64xf32, #kiln.dims<[b, 2, 1, t, 64]>>, tensor<5xi64>) -> tensor<?x2x4x?x64xf32, #kiln.dims<[b, 2, 4, t, 64]>>
  %vr = kiln.reshape %vw, %merged : (tensor<?x2x4x?x64xf32, #kiln.dims<[b, 2, 4, t, 64]>>, tensor<4xi64>) -> tensor<?x8x?x64xf32, #kiln.dims<[b, 8, t, 64]>>
  %kt = kiln.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x8x?x64xf32, #kiln.dims<[b, 8, t, 64]>>) -> tensor<?x8x64x?xf32, #kiln.dims<[b, 8, 64, t]>>
  %s = kiln.matmul %q, %kt : (tensor<?x8x?x64xf32, #kiln.dims<[b, 8, s, 64]>>, tensor<?x8x64x?xf32, #kiln.dims<[b, 8, 64, t]>>) -> tensor<?x8x?x?xf32, #kiln.dims<[b, 8, s, t]>>
  %d = kiln.div %s, %c : (tensor<?x8x?x?xf32, #kiln.dims<[b, 8, s, t]>>, tensor<f32>) -> tensor<?x8x?x?xf32, #kiln.dims<[b, 8, s, t]>>
  %p = kiln.softmax %d {axis = -1 : i64} : (tensor<?x8x?x?xf32, #kiln.dims<[b, 8, s, t]>>) -> tensor<?x8x?x?xf32, #kiln.dims<[b, 8, s, t]>>
  %o = kiln.matmul %p, %vr : (tensor<?x8x?x?xf32, #kiln.dims<[b, 8, s, t]>>, tensor<?x8x?x64xf32, #kiln.dims<[b, 8, t, 64]>>) -> tensor<?x8x?x64xf32, #kiln.dims<[b, 8, s, 64]>>
  return %o : tensor<?x8x?x64xf32, #kiln.dims<[b, 8, s, 64]>>
}

// -----

// Keys repeated but values not (or repeated differently): both keep their
// repeated heads.
// CHECK-LABEL: func.func @repeat_keys_only
// CHECK: kiln.broadcast_to
// CHECK: kiln.attention %arg0, %{{.*}}, %arg2 {{.*}}tensor<2x8x5x16xf32>, tensor<2x8x5x16xf32>)
func.func @repeat_keys_only(%q: tensor<2x8x5x16xf32>, %k: tensor<2x2x5x16xf32>, %v: tensor<2x8x5x16xf32>) -> tensor<2x8x5x16xf32> {
  %one = kiln.constant dense<[2, 2, 1, 5, 16]> : tensor<5xi64>
  %wide = kiln.constant dense<[2, 2, 4, 5, 16]> : tensor<5xi64>
  %merged = kiln.constant dense<[2, 8, 5, 16]> : tensor<4xi64>
  %k1 = kiln.reshape %k, %one : (tensor<2x2x5x16xf32>, tensor<5xi64>) -> tensor<2x2x1x5x16xf32>
  %kw = kiln.broadcast_to %k1, %wide : (tensor<2x2x1x5x16xf32>, tensor<5xi64>) -> tensor<2x2x4x5x16xf32>
  %kr = kiln.reshape %kw, %merged : (tensor<2x2x4x5x16xf32>, tensor<4xi64>) -> tensor<2x8x5x16xf32>
  %kt = kiln.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x8x5x16xf32>) -> tensor<2x8x16x5xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x8x5x16xf32>, tensor<2x8x16x5xf32>) -> tensor<2x8x5x5xf32>
  %p = kiln.softmax %s {axis = -1 : i64} : (tensor<2x8x5x5xf32>) -> tensor<2x8x5x5xf32>
  %o = kiln.matmul %p, %v : (tensor<2x8x5x5xf32>, tensor<2x8x5x16xf32>) -> tensor<2x8x5x16xf32>
  return %o : tensor<2x8x5x16xf32>
}

// -----

// onnxruntime's GroupQueryAttention as kiln's importer expands it: q [b, 2,
// 4, s, 8] (2 KV heads of 4 query heads each) against keys and values [b, 2,
// 1, t, 8] that the matmuls broadcast over the group, the scale on the
// scores, and a boolean mask by select(seen, scores, -inf). One attention
// over 8 query heads and the 2 KV heads themselves, the mask a boolean
// without the group dim; the result split back into [b, 2, 4, s, 8].
// CHECK-LABEL: func.func @broadcast_groups
// CHECK-DAG: %[[Q:.*]] = kiln.reshape %arg0, %{{.*}} -> tensor<?x8x?x8xf32, #kiln.dims<[b, 8, s, 8]>>
// CHECK-DAG: %[[K:.*]] = kiln.reshape %arg1, %{{.*}} -> tensor<?x2x?x8xf32, #kiln.dims<[b, 2, t, 8]>>
// CHECK-DAG: %[[V:.*]] = kiln.reshape %arg2, %{{.*}} -> tensor<?x2x?x8xf32, #kiln.dims<[b, 2, t, 8]>>
// CHECK-DAG: %[[M:.*]] = kiln.reshape %arg3, %{{.*}} -> tensor<?x1x?x?xi1, #kiln.dims<[b, 1, s, t]>>
// CHECK: %[[O:.*]] = kiln.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 5.000000e-01 : f64}
// CHECK: %[[R:.*]] = kiln.reshape %[[O]], %{{.*}} -> tensor<?x2x4x?x8xf32, #kiln.dims<[b, 2, 4, s, 8]>>
// CHECK-NOT: kiln.softmax
// CHECK-NOT: kiln.select
// CHECK: return %[[R]]
func.func @broadcast_groups(%q: tensor<?x2x4x?x8xf32, #kiln.dims<[b, 2, 4, s, 8]>>, %k: tensor<?x2x1x?x8xf32, #kiln.dims<[b, 2, 1, t, 8]>>, %v: tensor<?x2x1x?x8xf32, #kiln.dims<[b, 2, 1, t, 8]>>, %seen: tensor<?x1x1x?x?xi1, #kiln.dims<[b, 1, 1, s, t]>>) -> tensor<?x2x4x?x8xf32, #kiln.dims<[b, 2, 4, s, 8]>> {
  %c = kiln.constant dense<0.5> : tensor<f32>
  %ninf = kiln.constant dense<0xFF800000> : tensor<f32>
  %kt = kiln.transpose %k {permutation = array<i64: 0, 1, 2, 4, 3>} : (tensor<?x2x1x?x8xf32, #kiln.dims<[b, 2, 1, t, 8]>>) -> tensor<?x2x1x8x?xf32, #kiln.dims<[b, 2, 1, 8, t]>>
  %s = kiln.matmul %q, %kt : (tensor<?x2x4x?x8xf32, #kiln.dims<[b, 2, 4, s, 8]>>, tensor<?x2x1x8x?xf32, #kiln.dims<[b, 2, 1, 8, t]>>) -> tensor<?x2x4x?x?xf32, #kiln.dims<[b, 2, 4, s, t]>>
  %d = kiln.mul %s, %c : (tensor<?x2x4x?x?xf32, #kiln.dims<[b, 2, 4, s, t]>>, tensor<f32>) -> tensor<?x2x4x?x?xf32, #kiln.dims<[b, 2, 4, s, t]>>
  %m = kiln.select %seen, %d, %ninf : (tensor<?x1x1x?x?xi1, #kiln.dims<[b, 1, 1, s, t]>>, tensor<?x2x4x?x?xf32, #kiln.dims<[b, 2, 4, s, t]>>, tensor<f32>) -> tensor<?x2x4x?x?xf32, #kiln.dims<[b, 2, 4, s, t]>>
  %p = kiln.softmax %m {axis = -1 : i64} : (tensor<?x2x4x?x?xf32, #kiln.dims<[b, 2, 4, s, t]>>) -> tensor<?x2x4x?x?xf32, #kiln.dims<[b, 2, 4, s, t]>>
  %o = kiln.matmul %p, %v : (tensor<?x2x4x?x?xf32, #kiln.dims<[b, 2, 4, s, t]>>, tensor<?x2x1x?x8xf32, #kiln.dims<[b, 2, 1, t, 8]>>) -> tensor<?x2x4x?x8xf32, #kiln.dims<[b, 2, 4, s, 8]>>
  return %o : tensor<?x2x4x?x8xf32, #kiln.dims<[b, 2, 4, s, 8]>>
}

// -----

// A mask that varies along the group but not the heads has no grouped
// form: the chain stays.
// CHECK-LABEL: func.func @group_mask
// CHECK-NOT: kiln.attention
// CHECK: kiln.softmax
func.func @group_mask(%q: tensor<1x2x4x3x8xf32>, %k: tensor<1x2x1x5x8xf32>, %v: tensor<1x2x1x5x8xf32>, %mask: tensor<1x1x4x3x5xf32>) -> tensor<1x2x4x3x8xf32> {
  %kt = kiln.transpose %k {permutation = array<i64: 0, 1, 2, 4, 3>} : (tensor<1x2x1x5x8xf32>) -> tensor<1x2x1x8x5xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x2x4x3x8xf32>, tensor<1x2x1x8x5xf32>) -> tensor<1x2x4x3x5xf32>
  %a = kiln.add %s, %mask : (tensor<1x2x4x3x5xf32>, tensor<1x1x4x3x5xf32>) -> tensor<1x2x4x3x5xf32>
  %p = kiln.softmax %a {axis = -1 : i64} : (tensor<1x2x4x3x5xf32>) -> tensor<1x2x4x3x5xf32>
  %o = kiln.matmul %p, %v : (tensor<1x2x4x3x5xf32>, tensor<1x2x1x5x8xf32>) -> tensor<1x2x4x3x8xf32>
  return %o : tensor<1x2x4x3x8xf32>
}
