// --kiln-kv-cache-in-place (kiln-compile --kv-cache-in-place): each past
// input read only by a concat whose result the model returns becomes the
// cache itself at a fresh capacity symbol, the present the cache with the new
// rows written in place (kiln.cache_update), its other readers a slice of the
// valid rows; the past length becomes the mask's length minus the new rows
// everywhere. test/run/kv-cache-in-place.test runs decoders compiled so.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-kv-cache-in-place | FileCheck %s

// The mask's length changes every decode step: kernels read it from device
// memory, and it never exceeds the capacity.
// CHECK-LABEL: func.func @decoder
// CHECK-SAME: %arg2: tensor<?x2x?x4xf32, #kiln.dims<[b, 2, cache_capacity, 4]>> {kiln.name = "past_key_values.0.key"}
// CHECK-SAME: -> (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, cache_capacity, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>, tensor<1xi64>)
// CHECK-SAME: attributes {kiln.device_symbol_bounds = #kiln.dims<[cache_capacity]>, kiln.device_symbols = ["total"]}
// CHECK-NEXT: kiln.guard <less_equal> [total, cache_capacity], "kiln-kv-cache-in-place: the caches must hold the past and the new rows (attention_mask's length)"
// CHECK-NEXT: kiln.guard <less_equal> [s, total], "kiln-kv-cache-in-place: attention_mask must cover the new tokens"
// CHECK-NOT: kiln.guard
// CHECK-NOT: kiln.concat
// CHECK: %[[AT:.*]] = kiln.symbolic_constant [total - s] : tensor<1xi64>
// CHECK: %[[U:.*]] = kiln.cache_update %arg2, %arg3, %[[AT]] {axis = 2 : i64}
// CHECK: %[[END:.*]] = kiln.symbolic_constant [9223372036854775807, 9223372036854775807, total, 9223372036854775807]
// CHECK: %[[VALID:.*]] = kiln.slice %[[U]], %{{.*}}, %[[END]], %{{.*}} : {{.*}} -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, total, 4]>>
// CHECK: %[[SUM:.*]] = kiln.reduce %[[VALID]]
// CHECK: %[[PAST:.*]] = kiln.symbolic_constant [total - s] : tensor<1xi64>
// CHECK: return %[[U]], %[[SUM]], %[[PAST]]
func.func @decoder(%ids: tensor<?x?xi64, #kiln.dims<[b, s]>> {kiln.name = "input_ids"},
                   %mask: tensor<?x?xi64, #kiln.dims<[b, total]>> {kiln.name = "attention_mask"},
                   %pk: tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past, 4]>> {kiln.name = "past_key_values.0.key"},
                   %new: tensor<?x2x?x4xf32, #kiln.dims<[b, 2, s, 4]>>)
    -> (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + s, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>, tensor<1xi64>) {
  // A guard the substitution makes hold (past + s <= total) goes.
  kiln.guard <less_equal> [past + s, total], "a slice of the mask to the keys"
  // (As torch's exporter writes it: the axis counted from the end.)
  %p = kiln.concat %pk, %new {axis = -2 : i64} : (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past, 4]>>, tensor<?x2x?x4xf32, #kiln.dims<[b, 2, s, 4]>>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + s, 4]>>
  %sum = kiln.reduce %p {axes = array<i64: 2>, kind = #kiln<reduce sum>} : (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + s, 4]>>) -> tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>
  %past = kiln.symbolic_constant [past] : tensor<1xi64>
  return %p, %sum, %past : tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + s, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>, tensor<1xi64>
}

// -----

// GroupQueryAttention's present (the importer's): the past and zero rows up
// to the mask's length, each sequence's new rows written at its own past
// length with zeros after them. In place, the cache_write writes into the
// cache input (no zeros: the attention masks those rows), rows at or past
// the mask's length being the call's error (valid_rows), and the concat of
// zeros is gone. The head dim the guard pins to 4 is 4 in the inputs.
// CHECK-LABEL: func.func @group_query
// CHECK-SAME: %arg1: tensor<?x2x?x4xf32, #kiln.dims<[b, 2, cache_capacity, 4]>> {kiln.name = "past_key_values.0.key"}
// CHECK-NOT: kiln.guard <equal>
// CHECK-NOT: kiln.reshape
// CHECK-NOT: kiln.concat
// CHECK-NOT: kiln.broadcast_to
// CHECK: %[[W:.*]] = kiln.cache_write %arg1, %arg2, %arg3 {axis = 2 : i64, in_place, valid_rows = #kiln.dims<[total]>} : (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, cache_capacity, 4]>>, tensor<?x2x?x4xf32, #kiln.dims<[b, 2, s, 4]>>, tensor<?xi64, #kiln.dims<[b]>>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, cache_capacity, 4]>>
// CHECK: %[[VALID:.*]] = kiln.slice %[[W]], {{.*}} -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, total, 4]>>
// CHECK: %[[SUM:.*]] = kiln.reduce %[[VALID]]
// CHECK: return %[[W]], %[[SUM]]
func.func @group_query(%mask: tensor<?x?xi64, #kiln.dims<[b, total]>> {kiln.name = "attention_mask"},
                       %named: tensor<?x2x?x?xf32, #kiln.dims<[b, 2, past, head]>> {kiln.name = "past_key_values.0.key"},
                       %new: tensor<?x2x?x4xf32, #kiln.dims<[b, 2, s, 4]>>,
                       %at: tensor<?xi64, #kiln.dims<[b]>>)
    -> (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, total, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>) {
  kiln.guard <equal> [head, 4], "the importer's: past_key and past_value must be (batch, kv_num_heads, length, head)"
  %dims = kiln.symbolic_constant [b, 2, past, 4] : tensor<4xi64>
  %pk = kiln.reshape %named, %dims : (tensor<?x2x?x?xf32, #kiln.dims<[b, 2, past, head]>>, tensor<4xi64>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past, 4]>>
  kiln.guard <less_equal> [past, total], "the importer's: past_key's length must not exceed total_sequence_length"
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %shape = kiln.symbolic_constant [b, 2, total - past, 4] : tensor<4xi64>
  %z = kiln.broadcast_to %zero, %shape : (tensor<f32>, tensor<4xi64>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, total - past, 4]>>
  %base = kiln.concat %pk, %z {axis = 2 : i64} : (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past, 4]>>, tensor<?x2x?x4xf32, #kiln.dims<[b, 2, total - past, 4]>>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, total, 4]>>
  %p = kiln.cache_write %base, %new, %at {axis = 2 : i64, zero_tail} : (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, total, 4]>>, tensor<?x2x?x4xf32, #kiln.dims<[b, 2, s, 4]>>, tensor<?xi64, #kiln.dims<[b]>>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, total, 4]>>
  %sum = kiln.reduce %p {axes = array<i64: 2>, kind = #kiln<reduce sum>} : (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, total, 4]>>) -> tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>
  return %p, %sum : tensor<?x2x?x4xf32, #kiln.dims<[b, 2, total, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>
}

// -----

// ONNX's own cache form (TensorScatter): past and present at the cache's
// full length, the new rows written at each sequence's write index. The
// write whose cache is an input read by it alone, and whose result the model
// returns, goes into the input's bytes; nothing else changes (no mask, no
// device symbol: no dim changes between decode steps). A write into an input
// that something else reads too, or whose result is not returned, stays a
// new tensor (the in-place write would change what the other reader sees).
// CHECK-LABEL: func.func @tensor_scatter
// CHECK-NOT: kiln.device_symbols
// CHECK: %[[K:.*]] = kiln.cache_write %arg0, %arg2, %arg3 {axis = 2 : i64, in_place}
// CHECK: %[[V:.*]] = kiln.cache_write %arg1, %arg2, %arg3 {axis = 2 : i64, circular, in_place}
// CHECK: %[[SHARED:.*]] = kiln.cache_write %arg4, %arg2, %arg3 {axis = 2 : i64}
// CHECK: %[[UNRETURNED:.*]] = kiln.cache_write %arg5, %arg2, %arg3 {axis = 2 : i64}
// CHECK: return %[[K]], %[[V]], %[[SHARED]], %arg4, %{{.*}}
func.func @tensor_scatter(%pk: tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>,
                          %pv: tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>,
                          %new: tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>,
                          %at: tensor<?xi64, #kiln.dims<[b]>>,
                          %shared: tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>,
                          %unreturned: tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>)
    -> (tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>,
        tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>,
        tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>) {
  %k = kiln.cache_write %pk, %new, %at {axis = 2 : i64} : (tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>, tensor<?xi64, #kiln.dims<[b]>>) -> tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>
  %v = kiln.cache_write %pv, %new, %at {axis = 2 : i64, circular} : (tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>, tensor<?xi64, #kiln.dims<[b]>>) -> tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>
  %s = kiln.cache_write %shared, %new, %at {axis = 2 : i64} : (tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>, tensor<?xi64, #kiln.dims<[b]>>) -> tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>
  %u = kiln.cache_write %unreturned, %new, %at {axis = 2 : i64} : (tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>, tensor<?xi64, #kiln.dims<[b]>>) -> tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>
  %sum = kiln.reduce %u {axes = array<i64: 2>, kind = #kiln<reduce sum>} : (tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>) -> tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>
  return %k, %v, %s, %shared, %sum : tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>
}

// -----

// Both forms in one model: the concat pair becomes the capacity form, and
// the TensorScatter cache keeps its dims (its write in place, whatever the
// mask's length does).
// CHECK-LABEL: func.func @both_forms
// CHECK-SAME: %arg1: tensor<?x2x?x4xf32, #kiln.dims<[b, 2, cache_capacity, 4]>>
// CHECK-SAME: %arg2: tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>
// CHECK: kiln.cache_update %arg1, %arg3
// CHECK: kiln.cache_write %arg2, %arg3, %arg4 {axis = 2 : i64, circular, in_place} : (tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>
func.func @both_forms(%mask: tensor<?x?xi64, #kiln.dims<[b, total]>> {kiln.name = "attention_mask"},
                      %pk: tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past, 4]>> {kiln.name = "past_key_values.0.key"},
                      %ring: tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>,
                      %new: tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>,
                      %at: tensor<?xi64, #kiln.dims<[b]>>)
    -> (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + 1, 4]>>, tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>) {
  %k = kiln.concat %pk, %new {axis = 2 : i64} : (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + 1, 4]>>
  %r = kiln.cache_write %ring, %new, %at {axis = 2 : i64, circular} : (tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>, tensor<?xi64, #kiln.dims<[b]>>) -> tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>
  return %k, %r : tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + 1, 4]>>, tensor<?x2x16x4xf32, #kiln.dims<[b, 2, 16, 4]>>
}

// -----

// expected-error @+1 {{kiln-kv-cache-in-place: no input is a KV cache (read only by a concat along a symbolic dim, or by a TensorScatter, that the model returns)}}
func.func @no_cache(%x: tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>> {
  %e = kiln.exp %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  return %e : tensor<?x4xf32, #kiln.dims<[n, 4]>>
}

// -----

// expected-error @+1 {{kiln-kv-cache-in-place: no input 'attention_mask' [batch, total] whose length is a symbol of its own: the past length past would be bound by no input once the caches are in place}}
func.func @no_mask(%pk: tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past, 4]>>, %new: tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + 1, 4]>> {
  %p = kiln.concat %pk, %new {axis = 2 : i64} : (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + 1, 4]>>
  return %p : tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + 1, 4]>>
}

// -----

// expected-error @+1 {{kiln-kv-cache-in-place: the caches disagree on the past length or the new rows ('past_key_values.0.value' has past2 and 1, an earlier one past and 1)}}
func.func @two_pasts(%mask: tensor<?x?xi64, #kiln.dims<[b, total]>> {kiln.name = "attention_mask"},
                     %pk: tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past, 4]>> {kiln.name = "past_key_values.0.key"},
                     %pv: tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past2, 4]>> {kiln.name = "past_key_values.0.value"},
                     %new: tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>)
    -> (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + 1, 4]>>, tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past2 + 1, 4]>>) {
  %k = kiln.concat %pk, %new {axis = 2 : i64} : (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + 1, 4]>>
  %v = kiln.concat %pv, %new {axis = 2 : i64} : (tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past2, 4]>>, tensor<?x2x1x4xf32, #kiln.dims<[b, 2, 1, 4]>>) -> tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past2 + 1, 4]>>
  return %k, %v : tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past + 1, 4]>>, tensor<?x2x?x4xf32, #kiln.dims<[b, 2, past2 + 1, 4]>>
}
