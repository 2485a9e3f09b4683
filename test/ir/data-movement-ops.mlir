// Round trip of the data-movement ops.
// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// CHECK-LABEL: func @reshape
func.func @reshape(%x: tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>) -> tensor<?x768xf32, #kiln.dims<[batch * seq, 768]>> {
  %s = kiln.symbolic_constant [batch * seq, 768] : tensor<2xi64>
  // CHECK: kiln.reshape %{{.*}}, %{{.*}} : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<2xi64>) -> tensor<?x768xf32, #kiln.dims<[batch * seq, 768]>>
  %r = kiln.reshape %x, %s : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<2xi64>) -> tensor<?x768xf32, #kiln.dims<[batch * seq, 768]>>
  return %r : tensor<?x768xf32, #kiln.dims<[batch * seq, 768]>>
}

// CHECK-LABEL: func @transpose_broadcast_concat
func.func @transpose_broadcast_concat(%x: tensor<?x4xf32, #kiln.dims<[n, 4]>>, %y: tensor<1x8xf32>, %z: tensor<2x4xf32>) {
  // CHECK: kiln.transpose %{{.*}} {permutation = array<i64: 1, 0>} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<4x?xf32, #kiln.dims<[4, n]>>
  %t = kiln.transpose %x {permutation = array<i64: 1, 0>} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<4x?xf32, #kiln.dims<[4, n]>>
  %s = kiln.constant dense<[4, 1]> : tensor<2xi64>
  // CHECK: kiln.broadcast_to %{{.*}}, %{{.*}} : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
  %b = kiln.broadcast_to %y, %s : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
  // CHECK: kiln.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<2x4xf32>) -> tensor<?x4xf32, #kiln.dims<[n + 2, 4]>>
  %c = kiln.concat %x, %z {axis = 0 : i64} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<2x4xf32>) -> tensor<?x4xf32, #kiln.dims<[n + 2, 4]>>
  return
}

// CHECK-LABEL: func @slice_gather_pad
func.func @slice_gather_pad(%x: tensor<8x6xf32>, %table: tensor<1000x64xf32>, %ids: tensor<?x?xi64, #kiln.dims<[batch, seq]>>) {
  %starts = kiln.constant dense<[0, 0]> : tensor<2xi64>
  %ends = kiln.constant dense<[8, 6]> : tensor<2xi64>
  %steps = kiln.constant dense<[2, 1]> : tensor<2xi64>
  // CHECK: kiln.slice %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x6xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x6xf32>
  %s = kiln.slice %x, %starts, %ends, %steps : (tensor<8x6xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x6xf32>
  // CHECK: kiln.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<1000x64xf32>, tensor<?x?xi64, #kiln.dims<[batch, seq]>>) -> tensor<?x?x64xf32, #kiln.dims<[batch, seq, 64]>>
  %g = kiln.gather %table, %ids {axis = 0 : i64} : (tensor<1000x64xf32>, tensor<?x?xi64, #kiln.dims<[batch, seq]>>) -> tensor<?x?x64xf32, #kiln.dims<[batch, seq, 64]>>
  %pads = kiln.constant dense<[1, 0, 1, 2]> : tensor<4xi64>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  // CHECK: kiln.pad %{{.*}}, %{{.*}}, %{{.*}} {mode = #kiln<pad_mode reflect>} : (tensor<8x6xf32>, tensor<4xi64>, tensor<f32>) -> tensor<10x8xf32>
  %p = kiln.pad %x, %pads, %zero {mode = #kiln<pad_mode reflect>} : (tensor<8x6xf32>, tensor<4xi64>, tensor<f32>) -> tensor<10x8xf32>
  return
}

// CHECK-LABEL: func @indexing
func.func @indexing(%data: tensor<?x10xf32, #kiln.dims<[n, 10]>>, %idx: tensor<?x1xi64, #kiln.dims<[n, 1]>>, %upd: tensor<?x1xf32, #kiln.dims<[n, 1]>>) {
  // CHECK: kiln.gather_elements %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<?x10xf32, #kiln.dims<[n, 10]>>, tensor<?x1xi64, #kiln.dims<[n, 1]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  %g = kiln.gather_elements %data, %idx {axis = 1 : i64} : (tensor<?x10xf32, #kiln.dims<[n, 10]>>, tensor<?x1xi64, #kiln.dims<[n, 1]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
  // CHECK: kiln.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64, reduction = #kiln<scatter add>} : (tensor<?x10xf32, #kiln.dims<[n, 10]>>, tensor<?x1xi64, #kiln.dims<[n, 1]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>) -> tensor<?x10xf32, #kiln.dims<[n, 10]>>
  %s = kiln.scatter_elements %data, %idx, %upd {axis = 1 : i64, reduction = #kiln<scatter add>} : (tensor<?x10xf32, #kiln.dims<[n, 10]>>, tensor<?x1xi64, #kiln.dims<[n, 1]>>, tensor<?x1xf32, #kiln.dims<[n, 1]>>) -> tensor<?x10xf32, #kiln.dims<[n, 10]>>
  return
}

// CHECK-LABEL: func @resize
func.func @resize(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x16x16xf32> {
  %size = kiln.constant dense<[1, 3, 16, 16]> : tensor<4xi64>
  // CHECK: kiln.resize %{{.*}}, %{{.*}} {coordinate_mode = #kiln<coordinate_mode half_pixel>, mode = #kiln<resize_mode linear>, nearest_mode = #kiln<nearest_mode round_prefer_floor>, roi = array<f32>, scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>} : (tensor<1x3x8x8xf32>, tensor<4xi64>) -> tensor<1x3x16x16xf32>
  %r = kiln.resize %x, %size {mode = #kiln<resize_mode linear>, coordinate_mode = #kiln<coordinate_mode half_pixel>, nearest_mode = #kiln<nearest_mode round_prefer_floor>, scales = array<f32: 1.0, 1.0, 2.0, 2.0>, roi = array<f32>} : (tensor<1x3x8x8xf32>, tensor<4xi64>) -> tensor<1x3x16x16xf32>
  return %r : tensor<1x3x16x16xf32>
}

// CHECK-LABEL: func @nd_indexing
func.func @nd_indexing(%data: tensor<4x5x6xf32>, %idx: tensor<?x2xi64, #kiln.dims<[n, 2]>>, %upd: tensor<?x6xf32, #kiln.dims<[n, 6]>>) {
  // CHECK: kiln.gather_nd %{{.*}}, %{{.*}} : (tensor<4x5x6xf32>, tensor<?x2xi64, #kiln.dims<[n, 2]>>) -> tensor<?x6xf32, #kiln.dims<[n, 6]>>
  %g = kiln.gather_nd %data, %idx : (tensor<4x5x6xf32>, tensor<?x2xi64, #kiln.dims<[n, 2]>>) -> tensor<?x6xf32, #kiln.dims<[n, 6]>>
  // CHECK: kiln.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} {reduction = #kiln<scatter mul>} : (tensor<4x5x6xf32>, tensor<?x2xi64, #kiln.dims<[n, 2]>>, tensor<?x6xf32, #kiln.dims<[n, 6]>>) -> tensor<4x5x6xf32>
  %s = kiln.scatter_nd %data, %idx, %upd {reduction = #kiln<scatter mul>} : (tensor<4x5x6xf32>, tensor<?x2xi64, #kiln.dims<[n, 2]>>, tensor<?x6xf32, #kiln.dims<[n, 6]>>) -> tensor<4x5x6xf32>
  return
}

// CHECK-LABEL: func @data_dependent
func.func @data_dependent(%x: tensor<3x4xf32>, %c: tensor<3xi1>) {
  // CHECK: kiln.non_zero %{{.*}} : (tensor<3x4xf32>) -> tensor<2x?xi64>
  %i = kiln.non_zero %x : (tensor<3x4xf32>) -> tensor<2x?xi64>
  // The same on the device: counts per chunk, then indices placed by them and
  // sized by a count (a symbol a read bound).
  // CHECK: kiln.count_non_zero %{{.*}} {chunks = 4 : i64} : (tensor<3x4xf32>) -> tensor<4xi64>
  %counts = kiln.count_non_zero %x {chunks = 4 : i64} : (tensor<3x4xf32>) -> tensor<4xi64>
  // CHECK: kiln.read_sizes %{{.*}} ["m"] : tensor<1xi64>
  %total = kiln.reduce %counts {axes = array<i64: 0>, kind = #kiln<reduce sum>} : (tensor<4xi64>) -> tensor<1xi64>
  kiln.read_sizes %total ["m"] : tensor<1xi64>
  %m = kiln.symbolic_constant [m] : tensor<1xi64>
  // CHECK: kiln.compact_non_zero %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<4xi64>, tensor<1xi64>) -> tensor<2x?xi64, #kiln.dims<[2, m]>>
  %j = kiln.compact_non_zero %x, %counts, %m : (tensor<3x4xf32>, tensor<4xi64>, tensor<1xi64>) -> tensor<2x?xi64, #kiln.dims<[2, m]>>
  // CHECK: kiln.compress %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<3x4xf32>, tensor<3xi1>) -> tensor<?x4xf32>
  %k = kiln.compress %x, %c {axis = 0 : i64} : (tensor<3x4xf32>, tensor<3xi1>) -> tensor<?x4xf32>
  // CHECK: kiln.compress %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<3xi1>) -> tensor<?xf32>
  %f = kiln.compress %x, %c : (tensor<3x4xf32>, tensor<3xi1>) -> tensor<?xf32>
  return
}

// kiln.cache_write: the result is the cache (its type), a position a sequence.
// CHECK-LABEL: func.func @cache_write
func.func @cache_write(%cache: tensor<2x4x?x8xf32, #kiln.dims<[2, 4, total, 8]>>, %new: tensor<2x4x?x8xf32, #kiln.dims<[2, 4, s, 8]>>, %at: tensor<2xi64>) -> tensor<2x4x?x8xf32, #kiln.dims<[2, 4, total, 8]>> {
  // CHECK: kiln.cache_write %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, zero_tail} : (tensor<2x4x?x8xf32, #kiln.dims<[2, 4, total, 8]>>, tensor<2x4x?x8xf32, #kiln.dims<[2, 4, s, 8]>>, tensor<2xi64>) -> tensor<2x4x?x8xf32, #kiln.dims<[2, 4, total, 8]>>
  %w = kiln.cache_write %cache, %new, %at {axis = 2 : i64, zero_tail} : (tensor<2x4x?x8xf32, #kiln.dims<[2, 4, total, 8]>>, tensor<2x4x?x8xf32, #kiln.dims<[2, 4, s, 8]>>, tensor<2xi64>) -> tensor<2x4x?x8xf32, #kiln.dims<[2, 4, total, 8]>>
  return %w : tensor<2x4x?x8xf32, #kiln.dims<[2, 4, total, 8]>>
}

// circular: rows wrap around the cache (ONNX TensorScatter's circular mode).
// CHECK-LABEL: func.func @cache_write_circular
func.func @cache_write_circular(%cache: tensor<2x4x16x8xf32>, %new: tensor<2x4x3x8xf32>, %at: tensor<2xi64>) -> tensor<2x4x16x8xf32> {
  // CHECK: kiln.cache_write %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, circular}
  %w = kiln.cache_write %cache, %new, %at {axis = 2 : i64, circular} : (tensor<2x4x16x8xf32>, tensor<2x4x3x8xf32>, tensor<2xi64>) -> tensor<2x4x16x8xf32>
  return %w : tensor<2x4x16x8xf32>
}

// kiln.cache_update: the result is the cache (its type), the offset one position.
// CHECK-LABEL: func.func @cache_update
func.func @cache_update(%cache: tensor<?x2x?x4xbf16, #kiln.dims<[b, 2, capacity, 4]>>, %new: tensor<?x2x1x4xbf16, #kiln.dims<[b, 2, 1, 4]>>) -> tensor<?x2x?x4xbf16, #kiln.dims<[b, 2, capacity, 4]>> {
  %at = kiln.symbolic_constant [past] : tensor<1xi64>
  // CHECK: kiln.cache_update %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<?x2x?x4xbf16, #kiln.dims<[b, 2, capacity, 4]>>, tensor<?x2x1x4xbf16, #kiln.dims<[b, 2, 1, 4]>>, tensor<1xi64>) -> tensor<?x2x?x4xbf16, #kiln.dims<[b, 2, capacity, 4]>>
  %u = kiln.cache_update %cache, %new, %at {axis = 2 : i64} : (tensor<?x2x?x4xbf16, #kiln.dims<[b, 2, capacity, 4]>>, tensor<?x2x1x4xbf16, #kiln.dims<[b, 2, 1, 4]>>, tensor<1xi64>) -> tensor<?x2x?x4xbf16, #kiln.dims<[b, 2, capacity, 4]>>
  return %u : tensor<?x2x?x4xbf16, #kiln.dims<[b, 2, capacity, 4]>>
}
