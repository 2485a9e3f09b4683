// A transformer encoder block (one attention head group, then an MLP) as an
// exporter leaves it: dynamic batch and sequence, and reshape targets computed at
// run time from shape_of. `make demo` runs kiln's graph pipeline over it.
func.func @encoder_block(%x: tensor<?x?x64xf32>,
                         %ln_g: tensor<64xf32>, %ln_b: tensor<64xf32>,
                         %w_qkv: tensor<64x192xf32>, %w_out: tensor<64x64xf32>,
                         %w_up: tensor<64x256xf32>, %w_down: tensor<256x64xf32>) -> tensor<?x?x64xf32> {
  %h = kiln.layer_norm %x, %ln_g, %ln_b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %qkv = kiln.matmul %h, %w_qkv : (tensor<?x?x64xf32>, tensor<64x192xf32>) -> tensor<?x?x192xf32>

  // Split heads: [batch, seq, 3 * 4 heads, 16], then move heads before seq.
  %shape = kiln.shape_of %x : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %starts = kiln.constant dense<[0]> : tensor<1xi64>
  %ends = kiln.constant dense<[2]> : tensor<1xi64>
  %steps = kiln.constant dense<[1]> : tensor<1xi64>
  %bs = kiln.slice %shape, %starts, %ends, %steps : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %heads = kiln.constant dense<[12, -1]> : tensor<2xi64>
  %target = kiln.concat %bs, %heads {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  %split = kiln.reshape %qkv, %target : (tensor<?x?x192xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %t = kiln.transpose %split {permutation = array<i64: 0, 2, 1, 3>} : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>

  %qs = kiln.constant dense<[0, 0, 0, 0]> : tensor<4xi64>
  %qe = kiln.constant dense<[9223372036854775807, 4, 9223372036854775807, 9223372036854775807]> : tensor<4xi64>
  %ks = kiln.constant dense<[0, 4, 0, 0]> : tensor<4xi64>
  %ke = kiln.constant dense<[9223372036854775807, 8, 9223372036854775807, 9223372036854775807]> : tensor<4xi64>
  %vs = kiln.constant dense<[0, 8, 0, 0]> : tensor<4xi64>
  %ve = kiln.constant dense<[9223372036854775807, 12, 9223372036854775807, 9223372036854775807]> : tensor<4xi64>
  %one4 = kiln.constant dense<1> : tensor<4xi64>
  %q = kiln.slice %t, %qs, %qe, %one4 : (tensor<?x?x?x?xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %k = kiln.slice %t, %ks, %ke, %one4 : (tensor<?x?x?x?xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %v = kiln.slice %t, %vs, %ve, %one4 : (tensor<?x?x?x?xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x?x?x?xf32>

  // Attention: softmax(q k^T / 4) v.
  %kt = kiln.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %scores = kiln.matmul %q, %kt : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %scale = kiln.constant dense<0.25> : tensor<f32>
  %scaled = kiln.mul %scores, %scale : (tensor<?x?x?x?xf32>, tensor<f32>) -> tensor<?x?x?x?xf32>
  %p = kiln.softmax %scaled {axis = -1 : i64} : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %ctx = kiln.matmul %p, %v : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>

  // Merge heads back to [batch, seq, 64].
  %ct = kiln.transpose %ctx {permutation = array<i64: 0, 2, 1, 3>} : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %c64 = kiln.constant dense<[64]> : tensor<1xi64>
  %merge = kiln.concat %bs, %c64 {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %merged = kiln.reshape %ct, %merge : (tensor<?x?x?x?xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %attn = kiln.matmul %merged, %w_out : (tensor<?x?x?xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %res1 = kiln.add %x, %attn : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>

  // MLP with an exact GELU: 0.5 * u * (1 + erf(u / sqrt(2))).
  %up = kiln.matmul %res1, %w_up : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
  %rsqrt2 = kiln.constant dense<0.707106769> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %onef = kiln.constant dense<1.0> : tensor<f32>
  %u = kiln.mul %up, %rsqrt2 : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %e = kiln.erf %u : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  %e1 = kiln.add %e, %onef : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %g0 = kiln.mul %up, %e1 : (tensor<?x?x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  %gelu = kiln.mul %g0, %half : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %down = kiln.matmul %gelu, %w_down : (tensor<?x?x256xf32>, tensor<256x64xf32>) -> tensor<?x?x64xf32>
  %out = kiln.add %res1, %down : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %out : tensor<?x?x64xf32>
}
