// Every diagnostic of #kiln.dims, as a tensor encoding and as a parsed expression.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{#kiln.dims has 1 dims but the tensor has rank 2}}
func.func @rank_mismatch(%x: tensor<?x4xf32, #kiln.dims<[n]>>)

// -----

// expected-error @+1 {{#kiln.dims dim 1 is 8 but the tensor's dim 1 is 4}}
func.func @static_mismatch(%x: tensor<?x4xf32, #kiln.dims<[n, 8]>>)

// -----

// expected-error @+1 {{#kiln.dims dim 1 is m but the tensor's dim 1 is static (4)}}
func.func @symbol_on_static_dim(%x: tensor<?x4xf32, #kiln.dims<[n, m]>>)

// -----

// expected-error @+1 {{#kiln.dims on a tensor without symbolic dims}}
func.func @nothing_symbolic(%x: tensor<?x4xf32, #kiln.dims<[?, 4]>>)

// -----

// expected-error @+1 {{division by zero in dim expression}}
func.func @division_by_zero(%x: tensor<?xf32, #kiln.dims<[n floordiv 0]>>)

// -----

// expected-error @+1 {{'mod' is not a valid symbol name}}
func.func @keyword_as_symbol(%x: tensor<?xf32, #kiln.dims<[mod]>>)

// -----

// expected-error @+1 {{expected a dim: an integer, a symbol name, '?' or a parenthesized expression}}
func.func @not_a_dim(%x: tensor<?xf32, #kiln.dims<["n"]>>)
