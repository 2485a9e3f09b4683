// --kiln-append-sampler (kiln-compile --sample-on-device): a decoder that
// returns logits also returns next_tokens, kiln.sample_tokens over the
// logits of each sequence's chosen position (which become the logits output),
// from five new inputs (the positions to choose from, the host's draws, and
// the temperature, top_k and top_p). test/run/sample-on-device.test generates
// with decoders compiled so.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-append-sampler | FileCheck %s

// The LM head (a matmul by a weight, cast back to f32 as the precision mode
// leaves it) runs on each sequence's chosen hidden row alone: the logits
// output becomes [b, 1, vocabulary], and the head over every position is gone.
// CHECK-LABEL: func.func @decoder
// CHECK-SAME: %[[H:[^:]*]]: tensor<?x?x4xbf16, #kiln.dims<[b, s, 4]>> {kiln.name = "hidden"}
// CHECK-SAME: %[[POS:[^:]*]]: tensor<?xi64, #kiln.dims<[b]>> {kiln.name = "sample_positions"}
// CHECK-SAME: %[[U:[^:]*]]: tensor<?xf32, #kiln.dims<[b]>> {kiln.name = "sample_uniform"}
// CHECK-SAME: %[[T:[^:]*]]: tensor<f32> {kiln.name = "sample_temperature"}
// CHECK-SAME: %[[K:[^:]*]]: tensor<i64> {kiln.name = "sample_top_k"}
// CHECK-SAME: %[[P:[^:]*]]: tensor<f32> {kiln.name = "sample_top_p"}
// CHECK-SAME: -> (tensor<?x1x8xf32, #kiln.dims<[b, 1, 8]>> {kiln.name = "logits"}, tensor<?xi64, #kiln.dims<[b]>> {kiln.name = "next_tokens"})
// CHECK: %[[ROWS:.*]] = kiln.gather_elements %[[H]], %{{.*}} {axis = 1 : i64} : {{.*}} -> tensor<?x1x4xbf16, #kiln.dims<[b, 1, 4]>>
// CHECK: %[[HEAD:.*]] = kiln.matmul %[[ROWS]], %{{.*}} : {{.*}} -> tensor<?x1x8xbf16, #kiln.dims<[b, 1, 8]>>
// CHECK: %[[L:.*]] = kiln.cast %[[HEAD]] to f32
// CHECK: %[[TOKENS:.*]] = kiln.sample_tokens %[[L]], %{{.*}}, %[[U]], %[[T]], %[[K]], %[[P]]
// CHECK-NOT: kiln.matmul
// CHECK: return %[[L]], %[[TOKENS]]
func.func @decoder(%h: tensor<?x?x4xbf16, #kiln.dims<[b, s, 4]>> {kiln.name = "hidden"}) -> (tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>> {kiln.name = "logits"}) {
  %w = kiln.constant dense<0.5> : tensor<4x8xbf16>
  %m = kiln.matmul %h, %w : (tensor<?x?x4xbf16, #kiln.dims<[b, s, 4]>>, tensor<4x8xbf16>) -> tensor<?x?x8xbf16, #kiln.dims<[b, s, 8]>>
  %l = kiln.cast %m to f32 : (tensor<?x?x8xbf16, #kiln.dims<[b, s, 8]>>) -> tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>>
  return %l : tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>>
}

// -----

// Logits from anything else: the chosen rows are gathered from them.
// CHECK-LABEL: func.func @other_logits
// CHECK: %[[E:.*]] = kiln.exp %arg0
// CHECK: %[[ROWS:.*]] = kiln.gather_elements %[[E]], %{{.*}} {axis = 1 : i64} : {{.*}} -> tensor<?x1x8xf32, #kiln.dims<[b, 1, 8]>>
// CHECK: %[[TOKENS:.*]] = kiln.sample_tokens %[[ROWS]]
// CHECK: return %[[ROWS]], %[[TOKENS]]
func.func @other_logits(%x: tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>> {kiln.name = "ids"}) -> (tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>> {kiln.name = "logits"}) {
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
