// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-materialize-guards

// A declared dim that can never equal the inferred one is refused at the op.
func.func @never_equal(%x: tensor<?xf32, #kiln.dims<[n]>>) -> tensor<?xf32, #kiln.dims<[n + 1]>> {
  // expected-error @+1 {{assumes a fact that can never hold: n + 1 against n (result 0 dim 0 as declared must equal the inferred size)}}
  %e = kiln.exp %x : (tensor<?xf32, #kiln.dims<[n]>>) -> tensor<?xf32, #kiln.dims<[n + 1]>>
  return %e : tensor<?xf32, #kiln.dims<[n + 1]>>
}

// -----

func.func @guard_of_two_constants() {
  // expected-error @+1 {{can never hold: 3 == 4}}
  kiln.guard <equal> [3, 4], "two constants"
  return
}

// -----

func.func @guard_of_one_dim() {
  // expected-error @+1 {{needs exactly two known dims, got #kiln.dims<[n]>}}
  kiln.guard <less_equal> [n], "one dim"
  return
}

// -----

func.func @guard_of_unknown_dim() {
  // expected-error @+1 {{needs exactly two known dims}}
  kiln.guard <equal> [n, ?], "an unknown dim"
  return
}
