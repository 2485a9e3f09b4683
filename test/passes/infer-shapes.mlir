// RUN: kiln-opt %s -split-input-file --kiln-infer-shapes | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-infer-shapes=bind-arg-symbols=false | FileCheck %s --check-prefix=NOBIND

// Unnamed dynamic argument dims get fresh symbols; everything downstream is symbolic.
// CHECK-LABEL: func @binds_argument_symbols
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32, #kiln.dims<[arg0_d0, 4]>>) -> tensor<?x4xf32, #kiln.dims<[arg0_d0, 4]>>
// CHECK: kiln.exp %[[X]] : (tensor<?x4xf32, #kiln.dims<[arg0_d0, 4]>>) -> tensor<?x4xf32, #kiln.dims<[arg0_d0, 4]>>
// NOBIND-LABEL: func @binds_argument_symbols
// NOBIND-SAME: (%{{.*}}: tensor<?x4xf32>) -> tensor<?x4xf32>
func.func @binds_argument_symbols(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %e = kiln.exp %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %e : tensor<?x4xf32>
}

// -----

// The Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain exporters emit for
// `x.view(batch * seq, 768)` resolves to a symbolic reshape.
// CHECK-LABEL: func @exported_flatten
// CHECK: %[[S:.*]] = kiln.symbolic_constant [batch * seq, 768] : tensor<2xi64>
// CHECK: kiln.reshape %{{.*}}, %[[S]] : {{.*}} -> tensor<?x768xf32, #kiln.dims<[batch * seq, 768]>>
// CHECK: return {{.*}} : tensor<?x768xf32, #kiln.dims<[batch * seq, 768]>>
func.func @exported_flatten(%x: tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>) -> tensor<?x768xf32> {
  %shape = kiln.shape_of %x : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>) -> tensor<3xi64>
  %i0 = kiln.constant dense<0> : tensor<i64>
  %i1 = kiln.constant dense<1> : tensor<i64>
  %b = kiln.gather %shape, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %s = kiln.gather %shape, %i1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %bs = kiln.mul %b, %s : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %one = kiln.constant dense<[1]> : tensor<1xi64>
  %bs1 = kiln.reshape %bs, %one : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %c768 = kiln.constant dense<[768]> : tensor<1xi64>
  %target = kiln.concat %bs1, %c768 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = kiln.reshape %x, %target : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<2xi64>) -> tensor<?x768xf32>
  return %r : tensor<?x768xf32>
}

// -----

// A -1 in a reshape target is the element count divided by the rest; attention's
// head split `[batch, seq, 12, -1]` gives 64.
// CHECK-LABEL: func @split_heads
// CHECK: -> tensor<?x?x12x64xf32, #kiln.dims<[batch, seq, 12, 64]>>
func.func @split_heads(%x: tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>) -> tensor<?x?x?x?xf32> {
  %shape = kiln.shape_of %x : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>) -> tensor<3xi64>
  %starts = kiln.constant dense<[0]> : tensor<1xi64>
  %ends = kiln.constant dense<[2]> : tensor<1xi64>
  %steps = kiln.constant dense<[1]> : tensor<1xi64>
  %bs = kiln.slice %shape, %starts, %ends, %steps : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %tail = kiln.constant dense<[12, -1]> : tensor<2xi64>
  %target = kiln.concat %bs, %tail {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  %r = kiln.reshape %x, %target : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// -----

// Broadcasting a symbolic dim against 1 keeps it; against a static size the static
// size wins.
// CHECK-LABEL: func @broadcast_refinement
// CHECK: kiln.add {{.*}} -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
// CHECK: kiln.mul {{.*}} -> tensor<8x8xf32>
func.func @broadcast_refinement(%a: tensor<?x1xf32, #kiln.dims<[n, 1]>>, %b: tensor<8xf32>, %c: tensor<8x1xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %x = kiln.add %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x?xf32>
  %y = kiln.mul %c, %b : (tensor<8x1xf32>, tensor<8xf32>) -> tensor<?x?xf32>
  return %x, %y : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// An unknown dim (here non_zero's count) against a symbol stays unknown: either
// may be the 1 that broadcasts (the reference interpreter caught the symbol being
// kept). Against a static size the static size wins.
// CHECK-LABEL: func @broadcast_unknown_against_symbol
// CHECK: kiln.add {{.*}} -> tensor<2x?xi64>{{$}}
// CHECK: kiln.add {{.*}} -> tensor<2x8xi64>
func.func @broadcast_unknown_against_symbol(%m: tensor<3x4xf32>, %s: tensor<1x?xi64, #kiln.dims<[1, s]>>, %t: tensor<1x8xi64>) -> (tensor<?x?xi64>, tensor<?x?xi64>) {
  %nz = kiln.non_zero %m : (tensor<3x4xf32>) -> tensor<2x?xi64>
  %x = kiln.add %nz, %s : (tensor<2x?xi64>, tensor<1x?xi64, #kiln.dims<[1, s]>>) -> tensor<?x?xi64>
  %y = kiln.add %nz, %t : (tensor<2x?xi64>, tensor<1x8xi64>) -> tensor<?x?xi64>
  return %x, %y : tensor<?x?xi64>, tensor<?x?xi64>
}

// -----

// Concatenation adds symbolic sizes; a conv's output size is an expression of its
// input's.
// CHECK-LABEL: func @arithmetic_on_sizes
// CHECK: kiln.concat {{.*}} -> tensor<?x4xf32, #kiln.dims<[2 * n + 3, 4]>>
// CHECK: kiln.conv {{.*}} -> tensor<1x8x?xf32, #kiln.dims<[1, 8, (w - 1) floordiv 2 + 1]>>
func.func @arithmetic_on_sizes(%a: tensor<?x4xf32, #kiln.dims<[n, 4]>>, %b: tensor<3x4xf32>, %img: tensor<1x3x?xf32, #kiln.dims<[1, 3, w]>>, %f: tensor<8x3x3xf32>) -> (tensor<?x4xf32>, tensor<1x8x?xf32>) {
  %c = kiln.concat %a, %b, %a {axis = 0 : i64} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<3x4xf32>, tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32>
  %y = kiln.conv %img, %f {strides = array<i64: 2>, dilations = array<i64: 1>, pads = array<i64: 1, 1>} : (tensor<1x3x?xf32, #kiln.dims<[1, 3, w]>>, tensor<8x3x3xf32>) -> tensor<1x8x?xf32>
  return %c, %y : tensor<?x4xf32>, tensor<1x8x?xf32>
}

// -----

// A user outside the kiln dialect keeps its type through a tensor.cast.
// CHECK-LABEL: func @foreign_user
// CHECK: %[[E:.*]] = kiln.exp {{.*}} -> tensor<?xf32, #kiln.dims<[n]>>
// CHECK: %[[C:.*]] = tensor.cast %[[E]] : tensor<?xf32, #kiln.dims<[n]>> to tensor<?xf32>
// CHECK: tensor.dim %[[C]]
func.func @foreign_user(%x: tensor<?xf32, #kiln.dims<[n]>>) -> index {
  %e = kiln.exp %x : (tensor<?xf32, #kiln.dims<[n]>>) -> tensor<?xf32>
  %zero = arith.constant 0 : index
  %d = tensor.dim %e, %zero : tensor<?xf32>
  return %d : index
}

// -----

// A range over [0, seq) has seq elements: the position ids of a transformer.
// CHECK-LABEL: func @positions
// CHECK: kiln.range {{.*}} -> tensor<?xi64, #kiln.dims<[seq]>>
func.func @positions(%x: tensor<?x?xi64, #kiln.dims<[batch, seq]>>) -> tensor<?xi64> {
  %shape = kiln.shape_of %x : (tensor<?x?xi64, #kiln.dims<[batch, seq]>>) -> tensor<2xi64>
  %i1 = kiln.constant dense<1> : tensor<i64>
  %seq = kiln.gather %shape, %i1 {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %zero = kiln.constant dense<0> : tensor<i64>
  %r = kiln.range %zero, %seq, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %r : tensor<?xi64>
}

// -----

// A declared symbolic dim that differs from the inferred expression stands: both
// may be right (here when b is even), and the declaration is the fact to guard.
// CHECK-LABEL: func @symbolic_declaration_kept
// CHECK: kiln.reshape {{.*}} -> tensor<?x2xf32, #kiln.dims<[a * (b floordiv 2), 2]>>
// CHECK: kiln.exp {{.*}} -> tensor<?x2xf32, #kiln.dims<[a * (b floordiv 2), 2]>>
func.func @symbolic_declaration_kept(%x: tensor<?x?xf32, #kiln.dims<[a, b]>>) -> tensor<?x2xf32> {
  %s = kiln.constant dense<[-1, 2]> : tensor<2xi64>
  %r = kiln.reshape %x, %s : (tensor<?x?xf32, #kiln.dims<[a, b]>>, tensor<2xi64>) -> tensor<?x2xf32, #kiln.dims<[a * (b floordiv 2), 2]>>
  %e = kiln.exp %r : (tensor<?x2xf32, #kiln.dims<[a * (b floordiv 2), 2]>>) -> tensor<?x2xf32>
  return %e : tensor<?x2xf32>
}

// -----

// A shape concatenated from pieces is known piece by piece: a unit dim added to
// a tensor whose dim is unknown (the importer's Unsqueeze: [dim 0 of x, 1])
// stays a static 1, so a ScatterND reading it as indices has its static tuple
// length (Swin's window mask, exported by torch.onnx with dynamic sizes).
// CHECK-LABEL: func @unit_dim_of_unknown
// CHECK: kiln.reshape {{.*}} -> tensor<?x1xi64, #kiln.dims<[arg0_d0, 1]>>
// NOBIND-LABEL: func @unit_dim_of_unknown
// NOBIND: kiln.reshape {{.*}} -> tensor<?x1xi64>
func.func @unit_dim_of_unknown(%x: tensor<?xi64>) -> tensor<?x?xi64> {
  %shape = kiln.shape_of %x : (tensor<?xi64>) -> tensor<1xi64>
  %i0 = kiln.constant dense<0> : tensor<1xi64>
  %d0 = kiln.gather %shape, %i0 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %s = kiln.concat %d0, %one {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = kiln.reshape %x, %s : (tensor<?xi64>, tensor<2xi64>) -> tensor<?x?xi64>
  return %r : tensor<?x?xi64>
}
