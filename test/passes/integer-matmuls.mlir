// --kiln-integer-matmuls: a matmul of dequantized 8-bit tensors,
// ((a - za) * sa) @ ((b - zb) * sb), becomes an int8 product into i32 in
// cuBLASLt's layout (the right operand stored [.., N, K], transpose_rhs),
// the zero points' terms in i32 (- za * colsum(b - zb), a constant for a
// constant b; - zb * rowsum(a)), and one multiply by sa * sb.
// test/run/qdq-matmuls.test runs onnxruntime's quantized models.
// RUN: kiln-opt %s --split-input-file --kiln-integer-matmuls=float8=true | FileCheck %s
// Without FP8 tensor cores on every target (kiln-compile: an --arch below
// sm_89), e4m3 products stay float, recorded:
// RUN: kiln-opt %s --split-input-file --kiln-integer-matmuls | FileCheck %s --check-prefix=NOFP8

// A constant int8 weight, symmetric, one scale: stored transposed; the
// activation's zero point 3 is -3 times each column's sum (column 0:
// 1 + 5 - 1 + 0 + 10 + 1 - 128 + 2 = -110, so 330); scale 0.5 * 0.25.
// CHECK-LABEL: func @weight
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[}}1, 5, -1, 0, 10, 1, -128, 2], [2, 6, -2, 0, 20, 1, 127, 2], [3, 7, -3, 0, 30, 1, 0, 2], [4, 8, -4, 0, 40, 1, 0, 2]]> : tensor<4x8xi8>
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %[[W]] {transpose_rhs = true} : (tensor<?x8xi8, #kiln.dims<[m, 8]>>, tensor<4x8xi8>) -> tensor<?x4xi32, #kiln.dims<[m, 4]>>
// CHECK: %[[C:.*]] = kiln.constant dense<[330, -468, -120, -153]> : tensor<4xi32>
// CHECK: %[[S:.*]] = kiln.add %[[P]], %[[C]]
// CHECK: %[[F:.*]] = kiln.cast %[[S]] to f32
// CHECK: %[[K:.*]] = kiln.constant dense<1.250000e-01> : tensor<f32>
// CHECK: %[[Y:.*]] = kiln.mul %[[F]], %[[K]]
// CHECK: return %[[Y]]
// CHECK-NOT: f32> -> tensor<?x4xf32
func.func @weight(%q: tensor<?x8xi8, #kiln.dims<[m, 8]>>) -> tensor<?x4xf32, #kiln.dims<[m, 4]>> {
  %x = kiln.cast %q to f32 : (tensor<?x8xi8, #kiln.dims<[m, 8]>>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  %zx = kiln.constant dense<3.0> : tensor<f32>
  %xc = kiln.sub %x, %zx : (tensor<?x8xf32, #kiln.dims<[m, 8]>>, tensor<f32>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  %sx = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %xc, %sx : (tensor<?x8xf32, #kiln.dims<[m, 8]>>, tensor<f32>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  %wq = kiln.constant dense<[[1, 2, 3, 4], [5, 6, 7, 8], [-1, -2, -3, -4], [0, 0, 0, 0], [10, 20, 30, 40], [1, 1, 1, 1], [-128, 127, 0, 0], [2, 2, 2, 2]]> : tensor<8x4xi8>
  %w = kiln.cast %wq to f32 : (tensor<8x4xi8>) -> tensor<8x4xf32>
  %sw = kiln.constant dense<0.25> : tensor<f32>
  %wf = kiln.mul %sw, %w : (tensor<f32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = kiln.matmul %xf, %wf : (tensor<?x8xf32, #kiln.dims<[m, 8]>>, tensor<8x4xf32>) -> tensor<?x4xf32, #kiln.dims<[m, 4]>>
  return %y : tensor<?x4xf32, #kiln.dims<[m, 4]>>
}

// -----

// uint8 activations and weights with a scale and zero point a column: the
// activation minus 128 as int8 (zero point 130 - 128 = 2), the weights
// stored minus 128 (zero points 0, 128, 255, 2 become -128, 0, 127, -126);
// those are minus each row sum of the activation; scales 0.5 * [1, 2, 4, 8].
// CHECK-LABEL: func @uint8_columns
// CHECK: %[[WIDE:.*]] = kiln.cast %arg0 to i32
// CHECK: %[[C128:.*]] = kiln.constant dense<128> : tensor<i32>
// CHECK: %[[SHIFT:.*]] = kiln.sub %[[WIDE]], %[[C128]]
// CHECK: %[[A8:.*]] = kiln.cast %[[SHIFT]] to i8
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[}}-128, -127, -126, -125], [0, 1, 2, 3], [127, 126, 125, 124], [-127, -126, -125, -124]]> : tensor<4x4xi8>
// CHECK: %[[P:.*]] = kiln.matmul %[[A8]], %[[W]] {transpose_rhs = true}
// CHECK: kiln.constant dense<[-12, -12, 12, -4]> : tensor<4xi32>
// CHECK: %[[ROWS:.*]] = kiln.reduce {{.*}} {axes = array<i64: 2>, kind = #kiln<reduce sum>} : (tensor<2x?x4xi32, #kiln.dims<[2, s, 4]>>) -> tensor<2x?x1xi32, #kiln.dims<[2, s, 1]>>
// CHECK: %[[ZW:.*]] = kiln.constant dense<[128, 0, -127, 126]> : tensor<4xi32>
// CHECK: kiln.mul %[[ROWS]], %[[ZW]]
// CHECK: kiln.constant dense<[5.000000e-01, 1.000000e+00, 2.000000e+00, 4.000000e+00]> : tensor<4xf32>

func.func @uint8_columns(%q: tensor<2x?x4xui8, #kiln.dims<[2, s, 4]>>) -> tensor<2x?x4xf32, #kiln.dims<[2, s, 4]>> {
  %x = kiln.cast %q to f32 : (tensor<2x?x4xui8, #kiln.dims<[2, s, 4]>>) -> tensor<2x?x4xf32, #kiln.dims<[2, s, 4]>>
  %zx = kiln.constant dense<130.0> : tensor<f32>
  %xc = kiln.sub %x, %zx : (tensor<2x?x4xf32, #kiln.dims<[2, s, 4]>>, tensor<f32>) -> tensor<2x?x4xf32, #kiln.dims<[2, s, 4]>>
  %sx = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %xc, %sx : (tensor<2x?x4xf32, #kiln.dims<[2, s, 4]>>, tensor<f32>) -> tensor<2x?x4xf32, #kiln.dims<[2, s, 4]>>
  %wq = kiln.constant dense<[[0, 128, 255, 1], [1, 129, 254, 2], [2, 130, 253, 3], [3, 131, 252, 4]]> : tensor<4x4xui8>
  %w = kiln.cast %wq to f32 : (tensor<4x4xui8>) -> tensor<4x4xf32>
  %zw = kiln.constant dense<[[0.0, 128.0, 255.0, 2.0]]> : tensor<1x4xf32>
  %wc = kiln.sub %w, %zw : (tensor<4x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  %sw = kiln.constant dense<[[1.0, 2.0, 4.0, 8.0]]> : tensor<1x4xf32>
  %wf = kiln.mul %wc, %sw : (tensor<4x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  %y = kiln.matmul %xf, %wf : (tensor<2x?x4xf32, #kiln.dims<[2, s, 4]>>, tensor<4x4xf32>) -> tensor<2x?x4xf32, #kiln.dims<[2, s, 4]>>
  return %y : tensor<2x?x4xf32, #kiln.dims<[2, s, 4]>>
}

// -----

// Two activations (attention's products): the right one transposed into
// [.., N, K], its column sums of (b - 7) times 5 (za = -5), the left one's
// row sums times -7.
// CHECK-LABEL: func @activations
// CHECK: %[[T:.*]] = kiln.transpose %arg1 {permutation = array<i64: 0, 2, 1>} : (tensor<2x8x4xi8>) -> tensor<2x4x8xi8>
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %[[T]] {transpose_rhs = true} : (tensor<2x4x8xi8>, tensor<2x4x8xi8>) -> tensor<2x4x4xi32>
// CHECK: %[[BW:.*]] = kiln.cast %arg1 to i32
// CHECK: %[[ZB:.*]] = kiln.constant dense<7> : tensor<i32>
// CHECK: %[[BC:.*]] = kiln.sub %[[BW]], %[[ZB]]
// CHECK: kiln.reduce %[[BC]] {axes = array<i64: 1>, kind = #kiln<reduce sum>} : (tensor<2x8x4xi32>) -> tensor<2x1x4xi32>
// CHECK: kiln.constant dense<5> : tensor<i32>
// CHECK: kiln.reduce {{.*}} {axes = array<i64: 2>, kind = #kiln<reduce sum>} : (tensor<2x4x8xi32>) -> tensor<2x4x1xi32>
// CHECK: kiln.constant dense<-7> : tensor<i32>
// CHECK: kiln.constant dense<1.250000e-01> : tensor<f32>

func.func @activations(%a: tensor<2x4x8xi8>, %b: tensor<2x8x4xi8>) -> tensor<2x4x4xf32> {
  %af = kiln.cast %a to f32 : (tensor<2x4x8xi8>) -> tensor<2x4x8xf32>
  %za = kiln.constant dense<-5.0> : tensor<f32>
  %ac = kiln.sub %af, %za : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %sa = kiln.constant dense<0.5> : tensor<f32>
  %ad = kiln.mul %ac, %sa : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %bf = kiln.cast %b to f32 : (tensor<2x8x4xi8>) -> tensor<2x8x4xf32>
  %zb = kiln.constant dense<7.0> : tensor<f32>
  %bc = kiln.sub %bf, %zb : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  %sb = kiln.constant dense<0.25> : tensor<f32>
  %bd = kiln.mul %bc, %sb : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  %y = kiln.matmul %ad, %bd : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

// A right operand with a zero point a column, the first 0: every column's
// is subtracted before the column sums (times za = 2).
// CHECK-LABEL: func @activation_columns
// CHECK: %[[ZB:.*]] = kiln.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
// CHECK: %[[BC:.*]] = kiln.sub %{{.*}}, %[[ZB]] : (tensor<8x4xi32>, tensor<4xi32>) -> tensor<8x4xi32>
// CHECK: kiln.reduce %[[BC]] {axes = array<i64: 0>
func.func @activation_columns(%a: tensor<4x8xi8>, %b: tensor<8x4xi8>) -> tensor<4x4xf32> {
  %af = kiln.cast %a to f32 : (tensor<4x8xi8>) -> tensor<4x8xf32>
  %za = kiln.constant dense<2.0> : tensor<f32>
  %ac = kiln.sub %af, %za : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %sa = kiln.constant dense<0.5> : tensor<f32>
  %ad = kiln.mul %ac, %sa : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %bf = kiln.cast %b to f32 : (tensor<8x4xi8>) -> tensor<8x4xf32>
  %zb = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0]]> : tensor<1x4xf32>
  %bc = kiln.sub %bf, %zb : (tensor<8x4xf32>, tensor<1x4xf32>) -> tensor<8x4xf32>
  %sb = kiln.constant dense<0.25> : tensor<f32>
  %bd = kiln.mul %bc, %sb : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %y = kiln.matmul %ad, %bd : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Gemm's transB: a constant weight stored [N, K], a scale a row of it (an
// output column), is cuBLASLt's layout as it is.
// CHECK-LABEL: func @stored_nk
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[}}1, 2, 3, 4, 5, 6, 7, 8], [-1, -2, -3, -4, -5, -6, -7, -8], [0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]> : tensor<4x8xi8>
// CHECK: kiln.matmul %arg0, %[[W]] {transpose_rhs = true}
// CHECK: kiln.constant dense<[5.000000e-01, 1.000000e+00, 1.500000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK-NOT: kiln.transpose
func.func @stored_nk(%q: tensor<?x8xi8, #kiln.dims<[m, 8]>>) -> tensor<?x4xf32, #kiln.dims<[m, 4]>> {
  %x = kiln.cast %q to f32 : (tensor<?x8xi8, #kiln.dims<[m, 8]>>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  %sx = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %x, %sx : (tensor<?x8xf32, #kiln.dims<[m, 8]>>, tensor<f32>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  %wq = kiln.constant dense<[[1, 2, 3, 4, 5, 6, 7, 8], [-1, -2, -3, -4, -5, -6, -7, -8], [0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]]> : tensor<4x8xi8>
  %w = kiln.cast %wq to f32 : (tensor<4x8xi8>) -> tensor<4x8xf32>
  %sw = kiln.constant dense<[[1.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>
  %wf = kiln.mul %w, %sw : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %wt = kiln.transpose %wf {permutation = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %y = kiln.matmul %xf, %wt : (tensor<?x8xf32, #kiln.dims<[m, 8]>>, tensor<8x4xf32>) -> tensor<?x4xf32, #kiln.dims<[m, 4]>>
  return %y : tensor<?x4xf32, #kiln.dims<[m, 4]>>
}

// -----

// Attention's products over a symbolic length: K = seq (probabilities by
// values) padded to a multiple of 4 at run time, with a guard that the
// sums fit int32; N = seq (scores) padded and the result sliced back.
// CHECK-LABEL: func @symbolic
// CHECK: kiln.guard <less_equal> [seq, 32832], "kiln.matmul: an int8 product's int32 sums must not overflow"
// CHECK: %[[KP:.*]] = kiln.symbolic_constant [0, 0, 0, 0, 0, 0, 0, (-(seq mod 4)) mod 4]
// CHECK: %[[A:.*]] = kiln.pad %arg0, %[[KP]]
// CHECK: kiln.matmul %[[A]], %{{.*}} {transpose_rhs = true} : (tensor<2x4x?x?xi8, #kiln.dims<[2, 4, seq, (-(seq mod 4)) mod 4 + seq]>>
// CHECK-LABEL: func @symbolic_n
// CHECK: %[[NP:.*]] = kiln.symbolic_constant [0, 0, 0, 0, 0, 0, (-(seq mod 4)) mod 4, 0]
// CHECK: %[[B:.*]] = kiln.pad %{{.*}}, %[[NP]]
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %[[B]] {transpose_rhs = true}
// CHECK: %[[ENDS:.*]] = kiln.symbolic_constant [4611686018427387904, 4611686018427387904, 4611686018427387904, seq]
// CHECK: kiln.slice %[[P]], %{{.*}}, %[[ENDS]]
func.func @symbolic(%p: tensor<2x4x?x?xi8, #kiln.dims<[2, 4, seq, seq]>>, %v: tensor<2x4x?x8xi8, #kiln.dims<[2, 4, seq, 8]>>) -> tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>> {
  %pf = kiln.cast %p to f32 : (tensor<2x4x?x?xi8, #kiln.dims<[2, 4, seq, seq]>>) -> tensor<2x4x?x?xf32, #kiln.dims<[2, 4, seq, seq]>>
  %s = kiln.constant dense<0.25> : tensor<f32>
  %pd = kiln.mul %pf, %s : (tensor<2x4x?x?xf32, #kiln.dims<[2, 4, seq, seq]>>, tensor<f32>) -> tensor<2x4x?x?xf32, #kiln.dims<[2, 4, seq, seq]>>
  %vf = kiln.cast %v to f32 : (tensor<2x4x?x8xi8, #kiln.dims<[2, 4, seq, 8]>>) -> tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>>
  %vd = kiln.mul %vf, %s : (tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>>, tensor<f32>) -> tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>>
  %y = kiln.matmul %pd, %vd : (tensor<2x4x?x?xf32, #kiln.dims<[2, 4, seq, seq]>>, tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>>) -> tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>>
  return %y : tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>>
}
func.func @symbolic_n(%q: tensor<2x4x?x8xi8, #kiln.dims<[2, 4, seq, 8]>>, %k: tensor<2x4x8x?xi8, #kiln.dims<[2, 4, 8, seq]>>) -> tensor<2x4x?x?xf32, #kiln.dims<[2, 4, seq, seq]>> {
  %qf = kiln.cast %q to f32 : (tensor<2x4x?x8xi8, #kiln.dims<[2, 4, seq, 8]>>) -> tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>>
  %s = kiln.constant dense<0.25> : tensor<f32>
  %qd = kiln.mul %qf, %s : (tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>>, tensor<f32>) -> tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>>
  %kf = kiln.cast %k to f32 : (tensor<2x4x8x?xi8, #kiln.dims<[2, 4, 8, seq]>>) -> tensor<2x4x8x?xf32, #kiln.dims<[2, 4, 8, seq]>>
  %kd = kiln.mul %kf, %s : (tensor<2x4x8x?xf32, #kiln.dims<[2, 4, 8, seq]>>, tensor<f32>) -> tensor<2x4x8x?xf32, #kiln.dims<[2, 4, 8, seq]>>
  %y = kiln.matmul %qd, %kd : (tensor<2x4x?x8xf32, #kiln.dims<[2, 4, seq, 8]>>, tensor<2x4x8x?xf32, #kiln.dims<[2, 4, 8, seq]>>) -> tensor<2x4x?x?xf32, #kiln.dims<[2, 4, seq, seq]>>
  return %y : tensor<2x4x?x?xf32, #kiln.dims<[2, 4, seq, seq]>>
}

// -----

// A constant weight fixes K where the activation's is a symbol (an import
// with every dim dynamic): no pad, no guard. Two activations whose K are
// different symbols stay float.
// CHECK-LABEL: func @symbol_k_weight
// CHECK-NOT: kiln.guard
// CHECK-NOT: kiln.pad
// CHECK: kiln.matmul %arg0, %{{.*}} {transpose_rhs = true} : (tensor<?x?xi8, #kiln.dims<[m, k]>>, tensor<4x8xi8>) -> tensor<?x4xi32, #kiln.dims<[m, 4]>>
func.func @symbol_k_weight(%q: tensor<?x?xi8, #kiln.dims<[m, k]>>) -> tensor<?x4xf32, #kiln.dims<[m, 4]>> {
  %x = kiln.cast %q to f32 : (tensor<?x?xi8, #kiln.dims<[m, k]>>) -> tensor<?x?xf32, #kiln.dims<[m, k]>>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %x, %s : (tensor<?x?xf32, #kiln.dims<[m, k]>>, tensor<f32>) -> tensor<?x?xf32, #kiln.dims<[m, k]>>
  %wq = kiln.constant dense<1> : tensor<8x4xi8>
  %w = kiln.cast %wq to f32 : (tensor<8x4xi8>) -> tensor<8x4xf32>
  %wf = kiln.mul %w, %s : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %y = kiln.matmul %xf, %wf : (tensor<?x?xf32, #kiln.dims<[m, k]>>, tensor<8x4xf32>) -> tensor<?x4xf32, #kiln.dims<[m, 4]>>
  return %y : tensor<?x4xf32, #kiln.dims<[m, 4]>>
}
// CHECK-LABEL: func @different_k
// CHECK-SAME: why = "its operands' K are different symbols"
func.func @different_k(%p: tensor<4x?xi8, #kiln.dims<[4, a]>>, %v: tensor<?x8xi8, #kiln.dims<[b, 8]>>) -> tensor<4x8xf32> {
  %pf = kiln.cast %p to f32 : (tensor<4x?xi8, #kiln.dims<[4, a]>>) -> tensor<4x?xf32, #kiln.dims<[4, a]>>
  %s = kiln.constant dense<0.25> : tensor<f32>
  %pd = kiln.mul %pf, %s : (tensor<4x?xf32, #kiln.dims<[4, a]>>, tensor<f32>) -> tensor<4x?xf32, #kiln.dims<[4, a]>>
  %vf = kiln.cast %v to f32 : (tensor<?x8xi8, #kiln.dims<[b, 8]>>) -> tensor<?x8xf32, #kiln.dims<[b, 8]>>
  %vd = kiln.mul %vf, %s : (tensor<?x8xf32, #kiln.dims<[b, 8]>>, tensor<f32>) -> tensor<?x8xf32, #kiln.dims<[b, 8]>>
  %y = kiln.matmul %pd, %vd : (tensor<4x?xf32, #kiln.dims<[4, a]>>, tensor<?x8xf32, #kiln.dims<[b, 8]>>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Left alone: a scale per K on the left operand, 4-bit values, an f16
// result (int32 sums exceed f16's range). K = 6 is padded to 8 with zeros
// (cuBLASLt's int8 matmul needs multiples of 4): the left operand by a pad,
// the weight at compile time.
// CHECK-LABEL: func @left_alone
// CHECK-SAME: kiln.float_quantized_ops
// CHECK: %[[PADS:.*]] = kiln.symbolic_constant [0, 0, 0, 2] : tensor<4xi64>
// CHECK: %[[P:.*]] = kiln.pad %arg0, %[[PADS]], %{{.*}} {mode = #kiln<pad_mode constant>} : (tensor<3x6xi8>, tensor<4xi64>, tensor<i8>) -> tensor<3x8xi8>
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[}}1, 1, 1, 1, 1, 1, 0, 0], {{.*}}> : tensor<4x8xi8>
// CHECK: kiln.matmul %[[P]], %[[W]] {transpose_rhs = true} : (tensor<3x8xi8>, tensor<4x8xi8>) -> tensor<3x4xi32>
// CHECK-COUNT-3: kiln.matmul %{{.*}} : (tensor<3x8xf{{16|32}}>
func.func @left_alone(%q: tensor<3x6xi8>, %p: tensor<3x8xi8>, %r: tensor<3x8xi4>, %h: tensor<3x8xi8>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf16>) {
  %x = kiln.cast %q to f32 : (tensor<3x6xi8>) -> tensor<3x6xf32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %x, %s : (tensor<3x6xf32>, tensor<f32>) -> tensor<3x6xf32>
  %wq = kiln.constant dense<1> : tensor<6x4xi8>
  %w = kiln.cast %wq to f32 : (tensor<6x4xi8>) -> tensor<6x4xf32>
  %wf = kiln.mul %w, %s : (tensor<6x4xf32>, tensor<f32>) -> tensor<6x4xf32>
  %y0 = kiln.matmul %xf, %wf : (tensor<3x6xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>

  %p0 = kiln.cast %p to f32 : (tensor<3x8xi8>) -> tensor<3x8xf32>
  %sk = kiln.constant dense<[0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25]> : tensor<8xf32>
  %pf = kiln.mul %p0, %sk : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %vq = kiln.constant dense<1> : tensor<8x4xi8>
  %v = kiln.cast %vq to f32 : (tensor<8x4xi8>) -> tensor<8x4xf32>
  %vf = kiln.mul %v, %s : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %y1 = kiln.matmul %pf, %vf : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>

  %r0 = kiln.cast %r to f32 : (tensor<3x8xi4>) -> tensor<3x8xf32>
  %rf = kiln.mul %r0, %s : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %y2 = kiln.matmul %rf, %vf : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>

  %h0 = kiln.cast %h to f16 : (tensor<3x8xi8>) -> tensor<3x8xf16>
  %sh = kiln.constant dense<0.5> : tensor<f16>
  %hf = kiln.mul %h0, %sh : (tensor<3x8xf16>, tensor<f16>) -> tensor<3x8xf16>
  %uq = kiln.cast %vq to f16 : (tensor<8x4xi8>) -> tensor<8x4xf16>
  %uf = kiln.mul %uq, %sh : (tensor<8x4xf16>, tensor<f16>) -> tensor<8x4xf16>
  %y3 = kiln.matmul %hf, %uf : (tensor<3x8xf16>, tensor<8x4xf16>) -> tensor<3x4xf16>
  return %y0, %y1, %y2, %y3 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf16>
}


// -----

// float8 e4m3fn Q/DQ (onnxruntime's quantize_static with QFLOAT8E4M3FN,
// TensorRT's model optimizer): a dequantized e4m3 activation times a
// dequantized e4m3 constant weight, one scale each, is cuBLASLt's FP8
// matmul: the weight's bytes stored [N, K] (row n holds column n: n, n + 0.5,
// ...), the scales' product 0.5 * 0.25 its alpha, the result f32.
// NOFP8-LABEL: func @fp8_weight
// NOFP8-SAME: why = "an FP8 call needs every --arch sm_89 or newer (FP8 tensor cores)"
// NOFP8: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x16xf32
// CHECK-LABEL: func @fp8_weight
// (e4m3 bytes: 0 is 0x00, 0.5 0x30, 1 0x38, 1.5 0x3C.)
// CHECK: %[[W:.*]] = kiln.constant dense<"0x00300030003000300030003000300030383C383C{{.*}}"> : tensor<8x16xf8E4M3FN>
// CHECK: %[[Y:.*]] = kiln.matmul %arg0, %[[W]] {alpha = 1.250000e-01 : f64, transpose_rhs = true} : (tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>, tensor<8x16xf8E4M3FN>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
// CHECK: return %[[Y]]
func.func @fp8_weight(%q: tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>> {
  %x = kiln.cast %q to f32 : (tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>) -> tensor<?x16xf32, #kiln.dims<[m, 16]>>
  %sx = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %x, %sx : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<f32>) -> tensor<?x16xf32, #kiln.dims<[m, 16]>>
  %wq = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]]> : tensor<16x8xf8E4M3FN>
  %w = kiln.cast %wq to f32 : (tensor<16x8xf8E4M3FN>) -> tensor<16x8xf32>
  %zw = kiln.constant dense<0.0> : tensor<f32>
  %wc = kiln.sub %w, %zw : (tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>
  %sw = kiln.constant dense<0.25> : tensor<f32>
  %wf = kiln.mul %wc, %sw : (tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>
  %y = kiln.matmul %xf, %wf : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<16x8xf32>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  return %y : tensor<?x8xf32, #kiln.dims<[m, 8]>>
}

// -----

// A weight scale a column: alpha is the activation's scale times the
// largest (0.5 * 8), and the product is multiplied by each column's share of
// it after the call (an elementwise op the next kernel takes).
// CHECK-LABEL: func @fp8_columns
// CHECK: %[[Y:.*]] = kiln.matmul %arg0, %{{.*}} {alpha = 4.000000e+00 : f64, transpose_rhs = true}
// CHECK: %[[S:.*]] = kiln.constant dense<[1.250000e-01, 2.500000e-01, 3.750000e-01, 5.000000e-01, 6.250000e-01, 7.500000e-01, 8.750000e-01, 1.000000e+00]> : tensor<8xf32>
// CHECK: %[[Z:.*]] = kiln.mul %[[Y]], %[[S]]
// CHECK: return %[[Z]]
func.func @fp8_columns(%q: tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>> {
  %x = kiln.cast %q to f32 : (tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>) -> tensor<?x16xf32, #kiln.dims<[m, 16]>>
  %sx = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %x, %sx : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<f32>) -> tensor<?x16xf32, #kiln.dims<[m, 16]>>
  %wq = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]]> : tensor<16x8xf8E4M3FN>
  %w = kiln.cast %wq to f32 : (tensor<16x8xf8E4M3FN>) -> tensor<16x8xf32>
  %sw = kiln.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %wf = kiln.mul %w, %sw : (tensor<16x8xf32>, tensor<8xf32>) -> tensor<16x8xf32>
  %y = kiln.matmul %xf, %wf : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<16x8xf32>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  return %y : tensor<?x8xf32, #kiln.dims<[m, 8]>>
}

// -----

// K = 8: cuBLASLt's FP8 matmul wants rows of 16 bytes. The matmul stays
// float, and the function records why (kiln-compile --explain lists it).
// CHECK-LABEL: func @fp8_short_k
// CHECK-SAME: kiln.float_quantized_ops = [{call = "FP8", node = "", op = "kiln.matmul", why = "K is not a multiple of 16 or N of 8 (cuBLASLt's FP8 rows of 16 bytes)"}]
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x8xf32, #kiln.dims<[m, 8]>>, tensor<8x8xf32>)
func.func @fp8_short_k(%q: tensor<?x8xf8E4M3FN, #kiln.dims<[m, 8]>>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>> {
  %x = kiln.cast %q to f32 : (tensor<?x8xf8E4M3FN, #kiln.dims<[m, 8]>>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  %sx = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %x, %sx : (tensor<?x8xf32, #kiln.dims<[m, 8]>>, tensor<f32>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  %wq = kiln.constant dense<1.0> : tensor<8x8xf8E4M3FN>
  %w = kiln.cast %wq to f32 : (tensor<8x8xf8E4M3FN>) -> tensor<8x8xf32>
  %sw = kiln.constant dense<0.25> : tensor<f32>
  %wf = kiln.mul %w, %sw : (tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
  %y = kiln.matmul %xf, %wf : (tensor<?x8xf32, #kiln.dims<[m, 8]>>, tensor<8x8xf32>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  return %y : tensor<?x8xf32, #kiln.dims<[m, 8]>>
}

// -----

// A float8 zero point that is not 0 is no FP8 product (it would shift every
// product): the matmul stays as it is, unrecorded.
// CHECK-LABEL: func @fp8_zero_point
// CHECK-NOT: float_quantized_ops
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<16x8xf32>)
func.func @fp8_zero_point(%q: tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>> {
  %x = kiln.cast %q to f32 : (tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>) -> tensor<?x16xf32, #kiln.dims<[m, 16]>>
  %sx = kiln.constant dense<0.5> : tensor<f32>
  %xf = kiln.mul %x, %sx : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<f32>) -> tensor<?x16xf32, #kiln.dims<[m, 16]>>
  %wq = kiln.constant dense<1.0> : tensor<16x8xf8E4M3FN>
  %w = kiln.cast %wq to f32 : (tensor<16x8xf8E4M3FN>) -> tensor<16x8xf32>
  %zw = kiln.constant dense<1.0> : tensor<f32>
  %wc = kiln.sub %w, %zw : (tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>
  %sw = kiln.constant dense<0.25> : tensor<f32>
  %wf = kiln.mul %wc, %sw : (tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>
  %y = kiln.matmul %xf, %wf : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<16x8xf32>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  return %y : tensor<?x8xf32, #kiln.dims<[m, 8]>>
}

// -----

// Gemm's transB: a weight stored [N, K] and transposed, a scale per row of
// it (its columns of the product): already cuBLASLt's layout, used as it is.
// CHECK-LABEL: func @fp8_stored_nk
// CHECK: %[[W:.*]] = kiln.constant dense<1.000000e+00> : tensor<8x16xf8E4M3FN>
// CHECK: %[[Y:.*]] = kiln.matmul %arg0, %[[W]] {alpha = 2.000000e+00 : f64, transpose_rhs = true}
// CHECK: kiln.constant dense<[1.250000e-01, 2.500000e-01, 3.750000e-01, 5.000000e-01, 6.250000e-01, 7.500000e-01, 8.750000e-01, 1.000000e+00]> : tensor<8xf32>
func.func @fp8_stored_nk(%q: tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>> {
  %x = kiln.cast %q to f32 : (tensor<?x16xf8E4M3FN, #kiln.dims<[m, 16]>>) -> tensor<?x16xf32, #kiln.dims<[m, 16]>>
  %sx = kiln.constant dense<0.25> : tensor<f32>
  %xf = kiln.mul %x, %sx : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<f32>) -> tensor<?x16xf32, #kiln.dims<[m, 16]>>
  %wq = kiln.constant dense<1.0> : tensor<8x16xf8E4M3FN>
  %w = kiln.cast %wq to f32 : (tensor<8x16xf8E4M3FN>) -> tensor<8x16xf32>
  %sw = kiln.constant dense<[[1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0], [8.0]]> : tensor<8x1xf32>
  %wf = kiln.mul %w, %sw : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %wt = kiln.transpose %wf {permutation = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %y = kiln.matmul %xf, %wt : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<16x8xf32>) -> tensor<?x8xf32, #kiln.dims<[m, 8]>>
  return %y : tensor<?x8xf32, #kiln.dims<[m, 8]>>
}
