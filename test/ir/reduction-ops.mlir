// Round trip of reductions.
// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// CHECK-LABEL: func @reductions
func.func @reductions(%x: tensor<?x768xf32, #kiln.dims<[n, 768]>>, %b: tensor<4x5xi1>) {
  // CHECK: kiln.reduce %{{.*}} {axes = array<i64: 1>, kind = #kiln<reduce sum>} : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %s = kiln.reduce %x {kind = #kiln<reduce sum>, axes = array<i64: 1>, keep_dims = true} : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  // CHECK: kiln.reduce %{{.*}} {axes = array<i64: -1, 0>, keep_dims = false, kind = #kiln<reduce mean>} : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<f32>
  %m = kiln.reduce %x {kind = #kiln<reduce mean>, axes = array<i64: -1, 0>, keep_dims = false} : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<f32>
  // CHECK: kiln.reduce %{{.*}} {axes = array<i64: 0>, keep_dims = false, kind = #kiln<reduce any>} : (tensor<4x5xi1>) -> tensor<5xi1>
  %a = kiln.reduce %b {kind = #kiln<reduce any>, axes = array<i64: 0>, keep_dims = false} : (tensor<4x5xi1>) -> tensor<5xi1>
  // CHECK: kiln.arg_reduce %{{.*}} {axis = 1 : i64, keep_dims = false, kind = #kiln<arg_reduce argmax>} : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<?xi64, #kiln.dims<[n]>>
  %i = kiln.arg_reduce %x {kind = #kiln<arg_reduce argmax>, axis = 1 : i64, keep_dims = false} : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<?xi64, #kiln.dims<[n]>>
  return
}

// CHECK-LABEL: func @scans_and_top_k
func.func @scans_and_top_k(%x: tensor<?x100xf32, #kiln.dims<[n, 100]>>) {
  // CHECK: kiln.cumulative %{{.*}} {axis = 1 : i64, exclusive = true, kind = #kiln<cumulative prod>} : (tensor<?x100xf32, #kiln.dims<[n, 100]>>) -> tensor<?x100xf32, #kiln.dims<[n, 100]>>
  %c = kiln.cumulative %x {kind = #kiln<cumulative prod>, axis = 1 : i64, exclusive = true} : (tensor<?x100xf32, #kiln.dims<[n, 100]>>) -> tensor<?x100xf32, #kiln.dims<[n, 100]>>
  %k = kiln.constant dense<5> : tensor<1xi64>
  // CHECK: kiln.top_k %{{.*}}, %{{.*}} {axis = -1 : i64} : (tensor<?x100xf32, #kiln.dims<[n, 100]>>, tensor<1xi64>) -> (tensor<?x5xf32, #kiln.dims<[n, 5]>>, tensor<?x5xi64, #kiln.dims<[n, 5]>>)
  %v, %i = kiln.top_k %x, %k {axis = -1 : i64} : (tensor<?x100xf32, #kiln.dims<[n, 100]>>, tensor<1xi64>) -> (tensor<?x5xf32, #kiln.dims<[n, 5]>>, tensor<?x5xi64, #kiln.dims<[n, 5]>>)
  return
}

// CHECK-LABEL: func @sample_tokens
func.func @sample_tokens(%logits: tensor<?x?x96xbf16, #kiln.dims<[b, s, 96]>>, %positions: tensor<?xi64, #kiln.dims<[b]>>, %uniform: tensor<?xf32, #kiln.dims<[b]>>, %t: tensor<f32>, %k: tensor<i64>, %p: tensor<f32>) {
  // CHECK: kiln.sample_tokens %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : {{.*}} -> tensor<?xi64, #kiln.dims<[b]>>
  %r = kiln.sample_tokens %logits, %positions, %uniform, %t, %k, %p : (tensor<?x?x96xbf16, #kiln.dims<[b, s, 96]>>, tensor<?xi64, #kiln.dims<[b]>>, tensor<?xf32, #kiln.dims<[b]>>, tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<?xi64, #kiln.dims<[b]>>
  return
}
