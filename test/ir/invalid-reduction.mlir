// Every diagnostic of the reductions.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @any_on_floats(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.reduce' op any/all reduce i1 tensors}}
  %r = kiln.reduce %x {kind = #kiln<reduce any>, axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @sum_on_bools(%x: tensor<4xi1>) {
  // expected-error @+1 {{'kiln.reduce' op only any/all reduce i1 tensors}}
  %r = kiln.reduce %x {kind = #kiln<reduce sum>, axes = array<i64: 0>} : (tensor<4xi1>) -> tensor<1xi1>
  return
}

// -----

func.func @mean_on_ints(%x: tensor<4xi32>) {
  // expected-error @+1 {{'kiln.reduce' op mean reduces floating-point tensors}}
  %r = kiln.reduce %x {kind = #kiln<reduce mean>, axes = array<i64: 0>} : (tensor<4xi32>) -> tensor<1xi32>
  return
}

// -----

func.func @axis_out_of_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.reduce' op axis 1 is out of range for rank 1}}
  %r = kiln.reduce %x {kind = #kiln<reduce max>, axes = array<i64: 1>} : (tensor<4xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @axis_twice(%x: tensor<4x5xf32>) {
  // expected-error @+1 {{'kiln.reduce' op axis 1 appears twice}}
  %r = kiln.reduce %x {kind = #kiln<reduce max>, axes = array<i64: 1, -1>} : (tensor<4x5xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @arg_axis(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.arg_reduce' op axis 3 is out of range for rank 1}}
  %r = kiln.arg_reduce %x {kind = #kiln<arg_reduce argmin>, axis = 3 : i64} : (tensor<4xf32>) -> tensor<1xi64>
  return
}

// -----

func.func @cumulative_axis(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.cumulative' op axis 1 is out of range for rank 1}}
  %r = kiln.cumulative %x {kind = #kiln<cumulative sum>, axis = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @top_k_axis(%x: tensor<4xf32>, %k: tensor<1xi64>) {
  // expected-error @+1 {{'kiln.top_k' op axis 2 is out of range for rank 1}}
  %v, %i = kiln.top_k %x, %k {axis = 2 : i64} : (tensor<4xf32>, tensor<1xi64>) -> (tensor<?xf32>, tensor<?xi64>)
  return
}

// -----

func.func @top_k_k_shape(%x: tensor<4xf32>, %k: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.top_k' op k must be a 1-element tensor}}
  %v, %i = kiln.top_k %x, %k {axis = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> (tensor<?xf32>, tensor<?xi64>)
  return
}

// -----

func.func @top_k_negative(%x: tensor<4xf32>) {
  %k = kiln.constant dense<-1> : tensor<1xi64>
  // expected-error @+1 {{'kiln.top_k' op k is negative (-1)}}
  %v, %i = kiln.top_k %x, %k {axis = 0 : i64} : (tensor<4xf32>, tensor<1xi64>) -> (tensor<?xf32>, tensor<?xi64>)
  return
}

// -----

func.func @top_k_too_many(%x: tensor<4xf32>) {
  %k = kiln.constant dense<5> : tensor<1xi64>
  // expected-error @+1 {{'kiln.top_k' op k (5) exceeds the axis size (4)}}
  %v, %i = kiln.top_k %x, %k {axis = 0 : i64} : (tensor<4xf32>, tensor<1xi64>) -> (tensor<?xf32>, tensor<?xi64>)
  return
}

// -----

func.func @sample_tokens_rank(%logits: tensor<2x96xf32>, %positions: tensor<2xi64>, %uniform: tensor<2xf32>, %t: tensor<f32>, %k: tensor<i64>, %p: tensor<f32>) {
  // expected-error @+1 {{'kiln.sample_tokens' op logits must be [batch, positions, vocabulary]}}
  %r = kiln.sample_tokens %logits, %positions, %uniform, %t, %k, %p : (tensor<2x96xf32>, tensor<2xi64>, tensor<2xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<2xi64>
  return
}

// -----

func.func @sample_tokens_positions(%logits: tensor<2x1x96xf32>, %positions: tensor<3xi64>, %uniform: tensor<2xf32>, %t: tensor<f32>, %k: tensor<i64>, %p: tensor<f32>) {
  // expected-error @+1 {{'kiln.sample_tokens' op positions must hold one value per sequence ([2])}}
  %r = kiln.sample_tokens %logits, %positions, %uniform, %t, %k, %p : (tensor<2x1x96xf32>, tensor<3xi64>, tensor<2xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<2xi64>
  return
}

// -----

func.func @sample_tokens_uniform(%logits: tensor<?x1x96xf32, #kiln.dims<[b, 1, 96]>>, %positions: tensor<?xi64, #kiln.dims<[b]>>, %uniform: tensor<?xf32, #kiln.dims<[c]>>, %t: tensor<f32>, %k: tensor<i64>, %p: tensor<f32>) {
  // expected-error @+1 {{'kiln.sample_tokens' op uniform must hold one value per sequence ([b])}}
  %r = kiln.sample_tokens %logits, %positions, %uniform, %t, %k, %p : (tensor<?x1x96xf32, #kiln.dims<[b, 1, 96]>>, tensor<?xi64, #kiln.dims<[b]>>, tensor<?xf32, #kiln.dims<[c]>>, tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<?xi64, #kiln.dims<[b]>>
  return
}

// -----

func.func @sample_tokens_scalars(%logits: tensor<2x1x96xf32>, %positions: tensor<2xi64>, %uniform: tensor<2xf32>, %t: tensor<1xf32>, %k: tensor<i64>, %p: tensor<f32>) {
  // expected-error @+1 {{'kiln.sample_tokens' op temperature, top_k and top_p must be scalars}}
  %r = kiln.sample_tokens %logits, %positions, %uniform, %t, %k, %p : (tensor<2x1x96xf32>, tensor<2xi64>, tensor<2xf32>, tensor<1xf32>, tensor<i64>, tensor<f32>) -> tensor<2xi64>
  return
}
