// --kiln-append-sampler (kiln-compile --sample-on-device): a decoder that
// returns logits also returns next_tokens, kiln.sample_tokens over them, from
// five new inputs (the positions to choose from, the host's draws, and the
// temperature, top_k and top_p). test/run/sample-on-device.test generates
// with decoders compiled so.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-append-sampler | FileCheck %s

// CHECK-LABEL: func.func @decoder
// CHECK-SAME: %[[LOGITS:.*]]: tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>> {kiln.name = "ids"}
// CHECK-SAME: %[[POS:.*]]: tensor<?xi64, #kiln.dims<[b]>> {kiln.name = "sample_positions"}
// CHECK-SAME: %[[U:.*]]: tensor<?xf32, #kiln.dims<[b]>> {kiln.name = "sample_uniform"}
// CHECK-SAME: %[[T:.*]]: tensor<f32> {kiln.name = "sample_temperature"}
// CHECK-SAME: %[[K:.*]]: tensor<i64> {kiln.name = "sample_top_k"}
// CHECK-SAME: %[[P:.*]]: tensor<f32> {kiln.name = "sample_top_p"}
// CHECK-SAME: -> (tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>> {kiln.name = "logits"}, tensor<?xi64, #kiln.dims<[b]>> {kiln.name = "next_tokens"})
// CHECK: %[[L:.*]] = kiln.exp %[[LOGITS]]
// CHECK: %[[TOKENS:.*]] = kiln.sample_tokens %[[L]], %[[POS]], %[[U]], %[[T]], %[[K]], %[[P]]
// CHECK: return %[[L]], %[[TOKENS]]
func.func @decoder(%x: tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>> {kiln.name = "ids"}) -> (tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>> {kiln.name = "logits"}) {
  %l = kiln.exp %x : (tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>>) -> tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>>
  return %l : tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>>
}

// -----

// expected-error @+1 {{kiln-append-sampler: the model returns no 'logits' to choose from}}
func.func @no_logits(%x: tensor<2x1x8xf32> {kiln.name = "x"}) -> (tensor<2x1x8xf32> {kiln.name = "y"}) {
  return %x : tensor<2x1x8xf32>
}

// -----

// expected-error @+1 {{kiln-append-sampler: 'logits' must be float [batch, positions, vocabulary], not 'tensor<2x8xf32>'}}
func.func @flat_logits(%x: tensor<2x8xf32> {kiln.name = "x"}) -> (tensor<2x8xf32> {kiln.name = "logits"}) {
  return %x : tensor<2x8xf32>
}

// -----

// expected-error @+1 {{kiln-append-sampler: the model already returns 'next_tokens'}}
func.func @twice(%x: tensor<2x1x8xf32> {kiln.name = "x"}, %t: tensor<2xi64> {kiln.name = "t"}) -> (tensor<2x1x8xf32> {kiln.name = "logits"}, tensor<2xi64> {kiln.name = "next_tokens"}) {
  return %x, %t : tensor<2x1x8xf32>, tensor<2xi64>
}

// -----

// expected-error @+1 {{kiln-append-sampler: the model already takes an input 'sample_uniform'}}
func.func @taken(%x: tensor<2x1x8xf32> {kiln.name = "x"}, %u: tensor<2xf32> {kiln.name = "sample_uniform"}) -> (tensor<2x1x8xf32> {kiln.name = "logits"}) {
  return %x : tensor<2x1x8xf32>
}
