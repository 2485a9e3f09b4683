// Every diagnostic of the data-movement ops.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @reshape_dynamic_rank(%x: tensor<4xf32>, %s: tensor<?xi64>) {
  // expected-error @+1 {{'kiln.reshape' op shape must be a 1-D tensor of static length}}
  %r = kiln.reshape %x, %s : (tensor<4xf32>, tensor<?xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @reshape_two_minus_ones(%x: tensor<4xf32>) {
  %s = kiln.constant dense<[-1, -1]> : tensor<2xi64>
  // expected-error @+1 {{'kiln.reshape' op shape has more than one -1}}
  %r = kiln.reshape %x, %s : (tensor<4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @reshape_negative_entry(%x: tensor<4xf32>) {
  %s = kiln.constant dense<[-2, 2]> : tensor<2xi64>
  // expected-error @+1 {{'kiln.reshape' op shape entry 0 is -2; entries must be >= 0 or -1}}
  %r = kiln.reshape %x, %s : (tensor<4xf32>, tensor<2xi64>) -> tensor<?x2xf32>
  return
}

// -----

func.func @reshape_indivisible(%x: tensor<10xf32>) {
  %s = kiln.constant dense<[-1, 3]> : tensor<2xi64>
  // expected-error @+1 {{'kiln.reshape' op cannot infer the -1 dim: 10 elements do not divide into 3}}
  %r = kiln.reshape %x, %s : (tensor<10xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  return
}

// -----

func.func @reshape_count_mismatch(%x: tensor<10xf32>) {
  %s = kiln.constant dense<[4, 3]> : tensor<2xi64>
  // expected-error @+1 {{'kiln.reshape' op input has 10 elements but shape has 12}}
  %r = kiln.reshape %x, %s : (tensor<10xf32>, tensor<2xi64>) -> tensor<4x3xf32>
  return
}

// -----

func.func @transpose_wrong_length(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.transpose' op permutation has 3 entries but the input has rank 2}}
  %r = kiln.transpose %x {permutation = array<i64: 0, 1, 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_repeats(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.transpose' op permutation is not a permutation of [0, rank)}}
  %r = kiln.transpose %x {permutation = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @broadcast_dynamic_length(%x: tensor<4xf32>, %s: tensor<?xi64>) {
  // expected-error @+1 {{'kiln.broadcast_to' op shape must be a 1-D tensor of static length}}
  %r = kiln.broadcast_to %x, %s : (tensor<4xf32>, tensor<?xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @broadcast_negative(%x: tensor<4xf32>) {
  %s = kiln.constant dense<[-3, 4]> : tensor<2xi64>
  // expected-error @+1 {{'kiln.broadcast_to' op shape entry 0 is negative (-3)}}
  %r = kiln.broadcast_to %x, %s : (tensor<4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  return
}

// -----

func.func @broadcast_incompatible(%x: tensor<4xf32>) {
  %s = kiln.constant dense<[2, 3]> : tensor<2xi64>
  // expected-error @+1 {{'kiln.broadcast_to' op operands are not broadcast-compatible}}
  %r = kiln.broadcast_to %x, %s : (tensor<4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @concat_nothing() {
  // expected-error @+1 {{'kiln.concat' op needs at least one input}}
  %r = "kiln.concat"() {axis = 0 : i64} : () -> tensor<0xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2xf32>) {
  // expected-error @+1 {{'kiln.concat' op axis 1 is out of range for rank 1}}
  %r = kiln.concat %a {axis = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @concat_ranks(%a: tensor<2xf32>, %b: tensor<2x2xf32>) {
  // expected-error @+1 {{'kiln.concat' op input 1 differs from input 0 in rank or element type}}
  %r = kiln.concat %a, %b {axis = 0 : i64} : (tensor<2xf32>, tensor<2x2xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @concat_other_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'kiln.concat' op dim 1 of input 1 must match, but is 3 and 4}}
  %r = kiln.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @slice_dynamic_starts(%x: tensor<4xf32>, %s: tensor<?xi64>, %e: tensor<1xi64>) {
  // expected-error @+1 {{'kiln.slice' op starts must be a 1-D tensor of static length}}
  %r = kiln.slice %x, %s, %e, %e : (tensor<4xf32>, tensor<?xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @slice_wrong_count(%x: tensor<4x4xf32>, %s: tensor<1xi64>) {
  // expected-error @+1 {{'kiln.slice' op starts has 1 entries but the input has rank 2}}
  %r = kiln.slice %x, %s, %s, %s : (tensor<4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<4xf32>, %s: tensor<1xi64>) {
  %zero = kiln.constant dense<0> : tensor<1xi64>
  // expected-error @+1 {{'kiln.slice' op step 0 is zero}}
  %r = kiln.slice %x, %s, %s, %zero : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<4xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.gather' op axis -2 is out of range for rank 1}}
  %r = kiln.gather %x, %i {axis = -2 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @pad_dynamic(%x: tensor<4xf32>, %p: tensor<?xi64>, %v: tensor<f32>) {
  // expected-error @+1 {{'kiln.pad' op pads must be a 1-D tensor of static length}}
  %r = kiln.pad %x, %p, %v {mode = #kiln<pad_mode constant>} : (tensor<4xf32>, tensor<?xi64>, tensor<f32>) -> tensor<?xf32>
  return
}

// -----

func.func @pad_count(%x: tensor<4xf32>, %p: tensor<3xi64>, %v: tensor<f32>) {
  // expected-error @+1 {{'kiln.pad' op pads has 3 entries; expected 2 * rank = 2}}
  %r = kiln.pad %x, %p, %v {mode = #kiln<pad_mode constant>} : (tensor<4xf32>, tensor<3xi64>, tensor<f32>) -> tensor<?xf32>
  return
}

// -----

func.func @pad_value_type(%x: tensor<4xf32>, %p: tensor<2xi64>, %v: tensor<f16>) {
  // expected-error @+1 {{'kiln.pad' op value must have the input's element type}}
  %r = kiln.pad %x, %p, %v {mode = #kiln<pad_mode constant>} : (tensor<4xf32>, tensor<2xi64>, tensor<f16>) -> tensor<?xf32>
  return
}

// -----

func.func @pad_crops_too_much(%x: tensor<4xf32>, %v: tensor<f32>) {
  %p = kiln.constant dense<[-3, -2]> : tensor<2xi64>
  // expected-error @+1 {{'kiln.pad' op pads crop dim 0 to a negative size}}
  %r = kiln.pad %x, %p, %v {mode = #kiln<pad_mode constant>} : (tensor<4xf32>, tensor<2xi64>, tensor<f32>) -> tensor<?xf32>
  return
}

// -----

func.func @reshape_absurd_rank(%x: tensor<4xf32>, %s: tensor<1000000007xi64>) {
  // expected-error @+1 {{'kiln.reshape' op shape has 1000000007 entries; kiln supports tensors of rank up to 64}}
  %r = kiln.reshape %x, %s : (tensor<4xf32>, tensor<1000000007xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_elements_rank(%d: tensor<4x4xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'kiln.gather_elements' op indices must have the rank of data (2)}}
  %r = kiln.gather_elements %d, %i {axis = 0 : i64} : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_elements_axis(%d: tensor<4x4xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{'kiln.gather_elements' op axis 2 is out of range for rank 2}}
  %r = kiln.gather_elements %d, %i {axis = 2 : i64} : (tensor<4x4xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
  return
}

// -----

func.func @scatter_rank(%d: tensor<4x4xf32>, %i: tensor<4xi64>, %u: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.scatter_elements' op indices must have the rank of data (2)}}
  %r = kiln.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #kiln<scatter none>} : (tensor<4x4xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @scatter_updates_type(%d: tensor<4x4xf32>, %i: tensor<1x4xi64>, %u: tensor<1x4xf16>) {
  // expected-error @+1 {{'kiln.scatter_elements' op updates must have the element type of data}}
  %r = kiln.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #kiln<scatter none>} : (tensor<4x4xf32>, tensor<1x4xi64>, tensor<1x4xf16>) -> tensor<4x4xf32>
  return
}

// -----

func.func @scatter_updates_rank(%d: tensor<4x4xf32>, %i: tensor<1x4xi64>, %u: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.scatter_elements' op updates must have the shape of indices}}
  %r = kiln.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #kiln<scatter none>} : (tensor<4x4xf32>, tensor<1x4xi64>, tensor<4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @scatter_updates_shape(%d: tensor<4x4xf32>, %i: tensor<1x4xi64>, %u: tensor<1x3xf32>) {
  // expected-error @+1 {{'kiln.scatter_elements' op dim 1 of indices and updates must match, but is 4 and 3}}
  %r = kiln.scatter_elements %d, %i, %u {axis = 0 : i64, reduction = #kiln<scatter none>} : (tensor<4x4xf32>, tensor<1x4xi64>, tensor<1x3xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @scatter_axis(%d: tensor<4x4xf32>, %i: tensor<1x4xi64>, %u: tensor<1x4xf32>) {
  // expected-error @+1 {{'kiln.scatter_elements' op axis 5 is out of range for rank 2}}
  %r = kiln.scatter_elements %d, %i, %u {axis = 5 : i64, reduction = #kiln<scatter none>} : (tensor<4x4xf32>, tensor<1x4xi64>, tensor<1x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @resize_size_length(%x: tensor<1x8xf32>, %s: tensor<3xi64>) {
  // expected-error @+1 {{'kiln.resize' op size has 3 entries but the input has rank 2}}
  %r = kiln.resize %x, %s {mode = #kiln<resize_mode nearest>, coordinate_mode = #kiln<coordinate_mode asymmetric>, nearest_mode = #kiln<nearest_mode floor>, scales = array<f32: 1.0, 1.0>, roi = array<f32>} : (tensor<1x8xf32>, tensor<3xi64>) -> tensor<1x8xf32>
  return
}

// -----

func.func @resize_scales(%x: tensor<1x8xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.resize' op scales must be empty or have one entry per dim}}
  %r = kiln.resize %x, %s {mode = #kiln<resize_mode nearest>, coordinate_mode = #kiln<coordinate_mode asymmetric>, nearest_mode = #kiln<nearest_mode floor>, scales = array<f32: 1.0>, roi = array<f32>} : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @resize_negative_scale(%x: tensor<1x8xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.resize' op scales must be positive}}
  %r = kiln.resize %x, %s {mode = #kiln<resize_mode nearest>, coordinate_mode = #kiln<coordinate_mode asymmetric>, nearest_mode = #kiln<nearest_mode floor>, scales = array<f32: 1.0, -2.0>, roi = array<f32>} : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @resize_roi(%x: tensor<1x8xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.resize' op roi must be empty or have 2 * rank entries}}
  %r = kiln.resize %x, %s {mode = #kiln<resize_mode nearest>, coordinate_mode = #kiln<coordinate_mode asymmetric>, nearest_mode = #kiln<nearest_mode floor>, scales = array<f32: 1.0, 1.0>, roi = array<f32: 0.0>} : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @resize_negative_size(%x: tensor<1x8xf32>) {
  %s = kiln.constant dense<[1, -8]> : tensor<2xi64>
  // expected-error @+1 {{'kiln.resize' op size entry 1 is negative}}
  %r = kiln.resize %x, %s {mode = #kiln<resize_mode nearest>, coordinate_mode = #kiln<coordinate_mode asymmetric>, nearest_mode = #kiln<nearest_mode floor>, scales = array<f32: 1.0, 1.0>, roi = array<f32>} : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @gather_nd_batch(%d: tensor<4x5xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{'kiln.gather_nd' op batch_dims 2 is out of range}}
  %r = kiln.gather_nd %d, %i {batch_dims = 2 : i64} : (tensor<4x5xf32>, tensor<4x1xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_nd_tuple(%d: tensor<4x5xf32>, %i: tensor<4x3xi64>) {
  // expected-error @+1 {{'kiln.gather_nd' op index tuples of length 3 do not fit 2 indexable dims}}
  %r = kiln.gather_nd %d, %i : (tensor<4x5xf32>, tensor<4x3xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_nd_dynamic_tuple(%d: tensor<4x5xf32>, %i: tensor<4x?xi64>) {
  // expected-error @+1 {{'kiln.gather_nd' op indices must have a static last dim (the index tuple length)}}
  %r = kiln.gather_nd %d, %i : (tensor<4x5xf32>, tensor<4x?xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_nd_batch_dims(%d: tensor<4x5xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+1 {{'kiln.gather_nd' op batch dim 0 must match, but is 4 and 3}}
  %r = kiln.gather_nd %d, %i {batch_dims = 1 : i64} : (tensor<4x5xf32>, tensor<3x1xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @scatter_nd_type(%d: tensor<8xf32>, %i: tensor<4x1xi64>, %u: tensor<4xf16>) {
  // expected-error @+1 {{'kiln.scatter_nd' op updates must have the element type of data}}
  %r = kiln.scatter_nd %d, %i, %u {reduction = #kiln<scatter none>} : (tensor<8xf32>, tensor<4x1xi64>, tensor<4xf16>) -> tensor<8xf32>
  return
}

// -----

func.func @scatter_nd_rank(%d: tensor<8xf32>, %i: tensor<4x1xi64>, %u: tensor<4x2xf32>) {
  // expected-error @+1 {{'kiln.scatter_nd' op updates must have rank 1 (indices' leading dims, then data's trailing dims)}}
  %r = kiln.scatter_nd %d, %i, %u {reduction = #kiln<scatter none>} : (tensor<8xf32>, tensor<4x1xi64>, tensor<4x2xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @scatter_nd_dims(%d: tensor<8xf32>, %i: tensor<4x1xi64>, %u: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.scatter_nd' op updates dim 0 must match, but is 4 and 3}}
  %r = kiln.scatter_nd %d, %i, %u {reduction = #kiln<scatter none>} : (tensor<8xf32>, tensor<4x1xi64>, tensor<3xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @compress_axis(%x: tensor<3x4xf32>, %c: tensor<3xi1>) {
  // expected-error @+1 {{'kiln.compress' op axis 2 is out of range for rank 2}}
  %r = kiln.compress %x, %c {axis = 2 : i64} : (tensor<3x4xf32>, tensor<3xi1>) -> tensor<?x4xf32>
  return
}

// -----

func.func @count_non_zero_chunks(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{'kiln.count_non_zero' op chunks must be at least 1 (got 0)}}
  %c = kiln.count_non_zero %x {chunks = 0 : i64} : (tensor<3x4xf32>) -> tensor<0xi64>
  return
}

// -----

func.func @compact_non_zero_counts(%x: tensor<3x4xf32>, %c: tensor<2x2xi64>, %n: tensor<1xi64>) {
  // expected-error @+1 {{'kiln.compact_non_zero' op chunk_counts must be a vector}}
  %i = kiln.compact_non_zero %x, %c, %n : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<1xi64>) -> tensor<2x?xi64>
  return
}

// -----

func.func @compact_non_zero_count(%x: tensor<3x4xf32>, %c: tensor<4xi64>, %n: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.compact_non_zero' op count must be a 1-element tensor}}
  %i = kiln.compact_non_zero %x, %c, %n : (tensor<3x4xf32>, tensor<4xi64>, tensor<2xi64>) -> tensor<2x?xi64>
  return
}

// -----

func.func @compact_non_zero_negative(%x: tensor<3x4xf32>, %c: tensor<4xi64>) {
  %n = kiln.constant dense<[-1]> : tensor<1xi64>
  // expected-error @+1 {{'kiln.compact_non_zero' op count is negative (-1)}}
  %i = kiln.compact_non_zero %x, %c, %n : (tensor<3x4xf32>, tensor<4xi64>, tensor<1xi64>) -> tensor<2x?xi64>
  return
}

// -----

func.func @gather_elements_indices_wider_than_data(%d: tensor<2x8xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+1 {{'kiln.gather_elements' op dim 0 of indices (3) must not exceed data's (2)}}
  %g = kiln.gather_elements %d, %i {axis = 1 : i64} : (tensor<2x8xf32>, tensor<3x1xi64>) -> tensor<3x1xf32>
  return
}

// -----

func.func @scatter_elements_indices_wider_than_data(%d: tensor<2x8xf32>, %i: tensor<3x1xi64>, %u: tensor<3x1xf32>) {
  // expected-error @+1 {{'kiln.scatter_elements' op dim 0 of indices (3) must not exceed data's (2)}}
  %s = kiln.scatter_elements %d, %i, %u {axis = 1 : i64, reduction = #kiln<scatter none>} : (tensor<2x8xf32>, tensor<3x1xi64>, tensor<3x1xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @cache_write_batch_axis(%c: tensor<2x8x4xf32>, %n: tensor<2x8x4xf32>, %at: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.cache_write' op axis must not be the batch dim 0}}
  %w = kiln.cache_write %c, %n, %at {axis = 0 : i64} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2xi64>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @cache_write_positions_per_sequence(%c: tensor<2x8x4xf32>, %n: tensor<2x1x4xf32>, %at: tensor<3xi64>) {
  // expected-error @+1 {{'kiln.cache_write' op positions (one a sequence)}}
  %w = kiln.cache_write %c, %n, %at {axis = 1 : i64} : (tensor<2x8x4xf32>, tensor<2x1x4xf32>, tensor<3xi64>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @cache_write_other_features(%c: tensor<2x8x4xf32>, %n: tensor<2x1x5xf32>, %at: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.cache_write' op dim 2 of update}}
  %w = kiln.cache_write %c, %n, %at {axis = 1 : i64} : (tensor<2x8x4xf32>, tensor<2x1x5xf32>, tensor<2xi64>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @cache_write_circular_zero_tail(%c: tensor<2x8x4xf32>, %n: tensor<2x1x4xf32>, %at: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.cache_write' op a circular write takes neither zero_tail nor valid_rows}}
  %w = kiln.cache_write %c, %n, %at {axis = 1 : i64, circular, zero_tail} : (tensor<2x8x4xf32>, tensor<2x1x4xf32>, tensor<2xi64>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @cache_write_circular_too_long(%c: tensor<2x8x4xf32>, %n: tensor<2x9x4xf32>, %at: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.cache_write' op a circular write's update must be no longer than the cache}}
  %w = kiln.cache_write %c, %n, %at {axis = 1 : i64, circular} : (tensor<2x8x4xf32>, tensor<2x9x4xf32>, tensor<2xi64>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @cache_write_other_type(%c: tensor<2x8x4xf32>, %n: tensor<2x1x4xf16>, %at: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.cache_write' op update must have the cache's rank and element type}}
  %w = kiln.cache_write %c, %n, %at {axis = 1 : i64} : (tensor<2x8x4xf32>, tensor<2x1x4xf16>, tensor<2xi64>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @cache_update_other_heads(%c: tensor<1x2x8x4xf32>, %n: tensor<1x3x1x4xf32>, %at: tensor<1xi64>) {
  // expected-error @+1 {{'kiln.cache_update' op dim 1 of update}}
  %u = kiln.cache_update %c, %n, %at {axis = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1x3x1x4xf32>, tensor<1xi64>) -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @cache_update_other_type(%c: tensor<1x2x8x4xf32>, %n: tensor<1x2x1x4xbf16>, %at: tensor<1xi64>) {
  // expected-error @+1 {{'kiln.cache_update' op update must have the cache's rank and element type}}
  %u = kiln.cache_update %c, %n, %at {axis = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xbf16>, tensor<1xi64>) -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @cache_update_two_offsets(%c: tensor<1x2x8x4xf32>, %n: tensor<1x2x1x4xf32>, %at: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.cache_update' op offset must hold one position}}
  %u = kiln.cache_update %c, %n, %at {axis = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<2xi64>) -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @cache_update_past_the_end(%c: tensor<1x2x8x4xf32>, %n: tensor<1x2x3x4xf32>) {
  %at = kiln.constant dense<6> : tensor<1xi64>
  // expected-error @+1 {{'kiln.cache_update' op offset + update's length along the axis passes the cache's length}}
  %u = kiln.cache_update %c, %n, %at {axis = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x8x4xf32>
  return
}
