// --kiln-merge-sibling-matmuls: matmuls of one input by constant weights
// become one matmul by the weights side by side, each former result a slice of
// its last dim. (passes.differential.fusion.* runs the interpreter before and
// after the whole compile pipeline, this pass included;
// test/run/qkv-attention.test runs HuggingFace-style attention against the
// reference.)
// RUN: kiln-opt %s -split-input-file --kiln-merge-sibling-matmuls | FileCheck %s

// Three projections (a bias on two of them: zeros for the third), symbolic dims.
// Weights [2, 1], [2, 2], [2, 1] -> [2, 4]: rows [1 | 2 3 | 4], [5 | 6 7 | 8].
// CHECK-LABEL: func.func @qkv
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]]> : tensor<2x4xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 0.000000e+00]> : tensor<4xf32>
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %[[W]], %[[B]] : (tensor<?x2xf32, #kiln.dims<[n, 2]>>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
// Columns [0, 1), [1, 3) and [3, 4) of every row (ends past the dim: to its end).
// CHECK: kiln.constant dense<[4611686018427387904, 1]> : tensor<2xi64>
// CHECK: %[[Q:.*]] = kiln.slice %[[M]], {{.*}} -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
// CHECK: kiln.constant dense<[0, 1]> : tensor<2xi64>
// CHECK: kiln.constant dense<[4611686018427387904, 3]> : tensor<2xi64>
// CHECK: %[[K:.*]] = kiln.slice %[[M]], {{.*}} -> tensor<?x2xf32, #kiln.dims<[n, 2]>>
// CHECK: kiln.constant dense<[0, 3]> : tensor<2xi64>
// CHECK: kiln.constant dense<[4611686018427387904, 4]> : tensor<2xi64>
// CHECK: %[[V:.*]] = kiln.slice %[[M]], {{.*}} -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
// CHECK-NOT: kiln.matmul
// CHECK: return %[[Q]], %[[K]], %[[V]]
func.func @qkv(%x: tensor<?x2xf32, #kiln.dims<[n, 2]>>) -> (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<?x2xf32, #kiln.dims<[n, 2]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>) {
  %wq = kiln.constant dense<[[1.0], [5.0]]> : tensor<2x1xf32>
  %wk = kiln.constant dense<[[2.0, 3.0], [6.0, 7.0]]> : tensor<2x2xf32>
  %wv = kiln.constant dense<[[4.0], [8.0]]> : tensor<2x1xf32>
  %bq = kiln.constant dense<[1.0]> : tensor<1xf32>
  %bk = kiln.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %q = kiln.matmul %x, %wq, %bq : (tensor<?x2xf32, #kiln.dims<[n, 2]>>, tensor<2x1xf32>, tensor<1xf32>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %k = kiln.matmul %x, %wk, %bk : (tensor<?x2xf32, #kiln.dims<[n, 2]>>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32, #kiln.dims<[n, 2]>>
  %v = kiln.matmul %x, %wv : (tensor<?x2xf32, #kiln.dims<[n, 2]>>, tensor<2x1xf32>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  return %q, %k, %v : tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<?x2xf32, #kiln.dims<[n, 2]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>
}

// -----

// bf16 weights (a bf16 Llama's Q/K/V and gate/up): merged as bytes, the one
// bias padded with zero bytes.
// CHECK-LABEL: func.func @bf16
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xbf16>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<[0.000000e+00, 0.000000e+00, 5.000000e-01]> : tensor<3xbf16>
// CHECK: kiln.matmul %arg0, %[[W]], %[[B]] : (tensor<1x2xbf16>, tensor<2x3xbf16>, tensor<3xbf16>) -> tensor<1x3xbf16>
// CHECK-NOT: kiln.matmul
func.func @bf16(%x: tensor<1x2xbf16>) -> (tensor<1x2xbf16>, tensor<1x1xbf16>) {
  %wa = kiln.constant dense<[[1.0, 2.0], [4.0, 5.0]]> : tensor<2x2xbf16>
  %wb = kiln.constant dense<[[3.0], [6.0]]> : tensor<2x1xbf16>
  %bb = kiln.constant dense<[0.5]> : tensor<1xbf16>
  %a = kiln.matmul %x, %wa : (tensor<1x2xbf16>, tensor<2x2xbf16>) -> tensor<1x2xbf16>
  %b = kiln.matmul %x, %wb, %bb : (tensor<1x2xbf16>, tensor<2x1xbf16>, tensor<1xbf16>) -> tensor<1x1xbf16>
  return %a, %b : tensor<1x2xbf16>, tensor<1x1xbf16>
}

// -----

// Not merged: different inputs, different activations, a weight that is not a
// constant, a transposed weight, and a lone matmul.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-5: kiln.matmul
// CHECK-NOT: kiln.slice
func.func @left_alone(%x: tensor<3x2xf32>, %y: tensor<3x2xf32>, %wv: tensor<2x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %a = kiln.matmul %x, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %b = kiln.matmul %y, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %c = kiln.matmul %x, %w {activation = #kiln<activation relu>} : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %d = kiln.matmul %y, %wv : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %e = kiln.matmul %y, %w {transpose_rhs = true} : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %a, %b, %c, %d, %e : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}
