// Shape vectors with symbolic dims fold through compare and select where no
// symbol value could change the answer: torch's `x.expand(batch, -1, -1)`
// exports as Expand(x, Where(Equal(s, -1), 1, s)) with s = [batch, -1, -1]; a
// size is never -1, so the target is [batch, 1, 1] and the expand gets a
// symbolic type (a kernel, not a graph break).
// RUN: kiln-opt %s -split-input-file --kiln-graph-pipeline | FileCheck %s

// CHECK-LABEL: func @expand_minus_one
// CHECK: %[[T:.*]] = kiln.symbolic_constant [batch, 1, 1] : tensor<3xi64>
// CHECK: kiln.broadcast_to %{{.*}}, %[[T]] : {{.*}} -> tensor<?x1x8xf32, #kiln.dims<[batch, 1, 8]>>
// CHECK-NOT: kiln.compare
// CHECK-NOT: kiln.select
func.func @expand_minus_one(%x: tensor<?x4x8xf32, #kiln.dims<[batch, 4, 8]>>, %cls: tensor<1x1x8xf32>) -> tensor<?x?x?xf32> {
  %s = kiln.symbolic_constant [batch, -1, -1] : tensor<3xi64>
  %m1 = kiln.constant dense<-1> : tensor<3xi64>
  %one = kiln.constant dense<1> : tensor<3xi64>
  %eq = kiln.compare %s, %m1 {direction = #kiln<compare eq>} : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %t = kiln.select %eq, %one, %s : (tensor<3xi1>, tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %e = kiln.broadcast_to %cls, %t : (tensor<1x1x8xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %e : tensor<?x?x?xf32>
}

// -----

// Undecidable comparisons stay: a size against 0 or 1 depends on its value, and
// `batch - 2` may be negative.
// CHECK-LABEL: func @undecided
// CHECK-COUNT-2: kiln.compare
func.func @undecided(%x: tensor<?xf32, #kiln.dims<[batch]>>) -> (tensor<2xi1>, tensor<1xi1>) {
  %s = kiln.symbolic_constant [batch, 3] : tensor<2xi64>
  %c = kiln.constant dense<[1, 3]> : tensor<2xi64>
  %eq = kiln.compare %s, %c {direction = #kiln<compare eq>} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
  %d = kiln.symbolic_constant [batch - 2] : tensor<1xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %gt = kiln.compare %d, %m1 {direction = #kiln<compare gt>} : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi1>
  return %eq, %gt : tensor<2xi1>, tensor<1xi1>
}

// -----

// Swin's pads: a [4, 2] table of (before, after) pairs read backwards (Slice
// with step -1 on axis 0), transposed and flattened, folds, so the Pad has a
// known type (a kernel, not a host step).
// CHECK-LABEL: func @reversed_pad_table
// CHECK-NOT: kiln.slice
// CHECK-NOT: kiln.transpose
// CHECK: %[[P:.*]] = kiln.constant dense<[0, 1, 0, 0, 0, 4, 0, 0]> : tensor<8xi64>
// CHECK: kiln.pad %{{.*}}, %[[P]], {{.*}} -> tensor<?x8x30x8xf32, #kiln.dims<[batch, 8, 30, 8]>>
func.func @reversed_pad_table(%x: tensor<?x3x30x8xf32, #kiln.dims<[batch, 3, 30, 8]>>) -> tensor<?x?x?x?xf32> {
  %t = kiln.constant dense<[[0, 0], [0, 0], [1, 4], [0, 0]]> : tensor<4x2xi64>
  %starts = kiln.constant dense<[-1, 0]> : tensor<2xi64>
  %ends = kiln.constant dense<[-9223372036854775807, 9223372036854775807]> : tensor<2xi64>
  %steps = kiln.constant dense<[-1, 1]> : tensor<2xi64>
  %r = kiln.slice %t, %starts, %ends, %steps : (tensor<4x2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x2xi64>
  %p = kiln.transpose %r {permutation = array<i64: 1, 0>} : (tensor<4x2xi64>) -> tensor<2x4xi64>
  %flat = kiln.constant dense<-1> : tensor<1xi64>
  %pads = kiln.reshape %p, %flat : (tensor<2x4xi64>, tensor<1xi64>) -> tensor<8xi64>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %y = kiln.pad %x, %pads, %zero {mode = #kiln<pad_mode constant>} : (tensor<?x3x30x8xf32, #kiln.dims<[batch, 3, 30, 8]>>, tensor<8xi64>, tensor<f32>) -> tensor<?x?x?x?xf32>
  return %y : tensor<?x?x?x?xf32>
}

// -----

// Reductions of small constants fold: torchvision's detection transform takes
// the max over a [1] tensor of image sizes (320.0 once the resize is fixed),
// then pads to a multiple of 32 from it. Sums, products and means too; ints in
// int64 without overflow. A NaN is left to run time.
// CHECK-LABEL: func @reduce_constants
// CHECK-DAG: kiln.constant dense<3.200000e+02> : tensor<f32>
// CHECK-DAG: kiln.constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-DAG: kiln.constant dense<[2, 12]> : tensor<2xi64>
// CHECK-DAG: kiln.constant dense<2.500000e+00> : tensor<f32>
// CHECK: kiln.reduce %{{.*}} {{.*}}kind = #kiln<reduce max>{{.*}} : (tensor<2xf32>) -> tensor<f32>
// CHECK-NOT: kiln.reduce
func.func @reduce_constants() -> (tensor<f32>, tensor<2xf32>, tensor<2xi64>, tensor<f32>, tensor<f32>) {
  %sizes = kiln.constant dense<320.0> : tensor<1xf32>
  %max = kiln.reduce %sizes {axes = array<i64: 0>, keep_dims = false, kind = #kiln<reduce max>} : (tensor<1xf32>) -> tensor<f32>
  %t = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %sum = kiln.reduce %t {axes = array<i64: 0>, keep_dims = false, kind = #kiln<reduce sum>} : (tensor<2x2xf32>) -> tensor<2xf32>
  %i = kiln.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %prod = kiln.reduce %i {axes = array<i64: 1>, keep_dims = false, kind = #kiln<reduce prod>} : (tensor<2x2xi64>) -> tensor<2xi64>
  %mean = kiln.reduce %t {axes = array<i64: 0, 1>, keep_dims = false, kind = #kiln<reduce mean>} : (tensor<2x2xf32>) -> tensor<f32>
  %nan = kiln.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %nanmax = kiln.reduce %nan {axes = array<i64: 0>, keep_dims = false, kind = #kiln<reduce max>} : (tensor<2xf32>) -> tensor<f32>
  return %max, %sum, %prod, %mean, %nanmax : tensor<f32>, tensor<2xf32>, tensor<2xi64>, tensor<f32>, tensor<f32>
}

// -----

// torch's reshape target `Where(shape == 0, input_shape, shape)`: where the
// two choices of an undecided `n == 0` are n and 0 (or n and n), the select
// is n whatever n is; where they differ, a conv's output size decides it (at
// least 1 in every call that got past the conv), with a guard saying so (the
// decision must not rest on the conv running).
// CHECK-LABEL: func @reshape_target_where
// CHECK-DAG: kiln.guard <less_equal> [1, (h - 1) floordiv 2 + 1], "kiln.select: a size made of convolution outputs (and top-k counts of them) is at least 1"
// CHECK-DAG: %[[T:.*]] = kiln.symbolic_constant [1, -1, 1, (h - 1) floordiv 2 + 1, (w - 1) floordiv 2 + 1] : tensor<5xi64>
// CHECK-NOT: kiln.guard
// CHECK: kiln.reshape %{{.*}}, %[[T]] : {{.*}} -> tensor<1x15x1x?x?xf32, #kiln.dims<[1, 15, 1, (h - 1) floordiv 2 + 1, (w - 1) floordiv 2 + 1]>>
// CHECK-NOT: kiln.select
func.func @reshape_target_where(%x: tensor<1x3x?x?xf32, #kiln.dims<[1, 3, h, w]>>, %f: tensor<15x3x3x3xf32>) -> tensor<?x?x?x?x?xf32> {
  %c = kiln.conv %x, %f {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x?x?xf32, #kiln.dims<[1, 3, h, w]>>, tensor<15x3x3x3xf32>) -> tensor<1x15x?x?xf32>
  %in = kiln.shape_of %c : (tensor<1x15x?x?xf32>) -> tensor<4xi64>
  %one1 = kiln.constant dense<1> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<1xi64>
  %three = kiln.constant dense<3> : tensor<1xi64>
  %four = kiln.constant dense<4> : tensor<1xi64>
  %zero1 = kiln.constant dense<0> : tensor<1xi64>
  %padded = kiln.concat %in, %zero1 {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<5xi64>
  %h = kiln.slice %in, %two, %three, %one1 : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %w = kiln.slice %in, %three, %four, %one1 : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %lead = kiln.constant dense<[1, -1, 1]> : tensor<3xi64>
  %s = kiln.concat %lead, %h, %w {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %zero = kiln.constant dense<0> : tensor<i64>
  %eq = kiln.compare %s, %zero {direction = #kiln<compare eq>} : (tensor<5xi64>, tensor<i64>) -> tensor<5xi1>
  %t = kiln.select %eq, %padded, %s : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %r = kiln.reshape %c, %t : (tensor<1x15x?x?xf32>, tensor<5xi64>) -> tensor<?x?x?x?x?xf32>
  return %r : tensor<?x?x?x?x?xf32>
}

// -----

// torch's `(h - 1) // 8` on an input size is an integer Div, which truncates:
// a floordiv only where h - 1 >= 0. A stem conv whose output is
// (h - 1) floordiv 2 + 1 (at least 1 wherever it runs) says h >= 1, so the
// Div folds, with a guard that the dividend is not negative; v, which no
// conv bounds, does not (the Div of the pair stays).
// CHECK-LABEL: func @div_of_a_conv_bounded_size
// CHECK-DAG: kiln.guard <less_equal> [0, h - 1], "kiln.div: a dividend the convolutions' sizes bound is not negative (integer division truncates)"
// CHECK-DAG: %[[H:.*]] = kiln.symbolic_constant [(h - 1) floordiv 8] : tensor<1xi64>
// CHECK: kiln.div
// CHECK: return %[[H]], %{{.*}} :
func.func @div_of_a_conv_bounded_size(%x: tensor<1x3x?x?xf32, #kiln.dims<[1, 3, h, w]>>, %f: tensor<15x3x3x3xf32>, %y: tensor<1x?xf32, #kiln.dims<[1, v]>>) -> (tensor<1xi64>, tensor<2xi64>, tensor<1x15x?x?xf32>) {
  %c = kiln.conv %x, %f {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x?x?xf32, #kiln.dims<[1, 3, h, w]>>, tensor<15x3x3x3xf32>) -> tensor<1x15x?x?xf32>
  %s = kiln.shape_of %x : (tensor<1x3x?x?xf32, #kiln.dims<[1, 3, h, w]>>) -> tensor<4xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<1xi64>
  %three = kiln.constant dense<3> : tensor<1xi64>
  %eight = kiln.constant dense<8> : tensor<1xi64>
  %h = kiln.slice %s, %two, %three, %one : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %h1 = kiln.sub %h, %one : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %q = kiln.div %h1, %eight : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %ys = kiln.shape_of %y : (tensor<1x?xf32, #kiln.dims<[1, v]>>) -> tensor<2xi64>
  %ys1 = kiln.sub %ys, %one : (tensor<2xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = kiln.div %ys1, %eight : (tensor<2xi64>, tensor<1xi64>) -> tensor<2xi64>
  return %q, %r, %c : tensor<1xi64>, tensor<2xi64>, tensor<1x15x?x?xf32>
}

// -----

// Two convs bound h: a 3-wide one says h >= 3, a 9-wide one h >= 9; the
// larger decides (h - 9) // 2.
// CHECK-LABEL: func @div_of_the_larger_bound
// CHECK-DAG: kiln.guard <less_equal> [0, h - 9], "kiln.div: a dividend the convolutions' sizes bound is not negative (integer division truncates)"
// CHECK-DAG: %[[Q:.*]] = kiln.symbolic_constant [(h - 9) floordiv 2] : tensor<1xi64>
// CHECK: return %[[Q]],
func.func @div_of_the_larger_bound(%x: tensor<1x3x?x4xf32, #kiln.dims<[1, 3, h, 4]>>, %f3: tensor<15x3x3x1xf32>, %f9: tensor<15x3x9x1xf32>) -> (tensor<1xi64>, tensor<1x15x?x4xf32>, tensor<1x15x?x4xf32>) {
  %a = kiln.conv %x, %f3 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x?x4xf32, #kiln.dims<[1, 3, h, 4]>>, tensor<15x3x3x1xf32>) -> tensor<1x15x?x4xf32>
  %b = kiln.conv %x, %f9 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x?x4xf32, #kiln.dims<[1, 3, h, 4]>>, tensor<15x3x9x1xf32>) -> tensor<1x15x?x4xf32>
  %s = kiln.shape_of %x : (tensor<1x3x?x4xf32, #kiln.dims<[1, 3, h, 4]>>) -> tensor<4xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<1xi64>
  %three = kiln.constant dense<3> : tensor<1xi64>
  %nine = kiln.constant dense<9> : tensor<1xi64>
  %h = kiln.slice %s, %two, %three, %one : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %h9 = kiln.sub %h, %nine : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %q = kiln.div %h9, %two : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %q, %a, %b : tensor<1xi64>, tensor<1x15x?x4xf32>, tensor<1x15x?x4xf32>
}

// -----

// A size padded up in floats (torchvision's detection transform:
// ceil(float(h) / 32) * 32, cast back to int64) is the size again, with
// guards that every float value of the chain is below 2^24 (f32 holds the
// integers up to there exactly, and a division rounds on the right side of
// every integer). The pads that torch reverses through a [3, 2] table, a
// transpose and a reshape fold as well, so the pad has a symbolic type.
// CHECK-LABEL: func @padded_in_floats
// CHECK-DAG: kiln.guard <less_equal> [h, 16777215], "kiln.cast at 'Cast_back': a size computed in f32 is exact only up to 16777215"
// CHECK-DAG: kiln.guard <less_equal> [32 * (h ceildiv 32), 16777215], "kiln.cast at 'Cast_back': a size computed in f32 is exact only up to 16777215"
// CHECK-NOT: kiln.ceil
// CHECK: kiln.pad {{.*}} -> tensor<3x?x5xf32, #kiln.dims<[3, 32 * (h ceildiv 32), 5]>>
func.func @padded_in_floats(%x: tensor<3x?x5xf32, #kiln.dims<[3, h, 5]>>) -> tensor<?x?x?xf32> {
  %s = kiln.shape_of %x : (tensor<3x?x5xf32, #kiln.dims<[3, h, 5]>>) -> tensor<3xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<1xi64>
  %step = kiln.constant dense<1> : tensor<1xi64>
  %hv = kiln.slice %s, %one, %two, %step : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %hf = kiln.cast %hv to f32 : (tensor<1xi64>) -> tensor<1xf32>
  %c32 = kiln.constant dense<3.200000e+01> : tensor<f32>
  %q = kiln.div %hf, %c32 : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32>
  %up = kiln.ceil %q : (tensor<1xf32>) -> tensor<1xf32>
  %m = kiln.mul %up, %c32 : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32>
  %mi = kiln.cast %m to i64 : (tensor<1xf32>) -> tensor<1xi64> loc("Cast_back")
  %extra = kiln.sub %mi, %hv : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  // [c_end, c_begin, h_end, h_begin, w_end, w_begin] as torch lists them,
  // read back in ONNX's order: reshape [3, 2], reverse the rows, transpose,
  // flatten.
  %z = kiln.constant dense<0> : tensor<1xi64>
  %torch = kiln.concat %z, %z, %extra, %z, %z, %z {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6xi64>
  %shape32 = kiln.constant dense<[-1, 2]> : tensor<2xi64>
  %table = kiln.reshape %torch, %shape32 : (tensor<6xi64>, tensor<2xi64>) -> tensor<3x2xi64>
  %starts = kiln.constant dense<[-1, 0]> : tensor<2xi64>
  %ends = kiln.constant dense<[-9223372036854775807, 9223372036854775807]> : tensor<2xi64>
  %steps = kiln.constant dense<[-1, 1]> : tensor<2xi64>
  %rev = kiln.slice %table, %starts, %ends, %steps : (tensor<3x2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<3x2xi64>
  %t = kiln.transpose %rev {permutation = array<i64: 1, 0>} : (tensor<3x2xi64>) -> tensor<2x3xi64>
  %flat = kiln.constant dense<-1> : tensor<1xi64>
  %pads = kiln.reshape %t, %flat : (tensor<2x3xi64>, tensor<1xi64>) -> tensor<6xi64>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %p = kiln.pad %x, %pads, %zero {mode = #kiln<pad_mode constant>} : (tensor<3x?x5xf32, #kiln.dims<[3, h, 5]>>, tensor<6xi64>, tensor<f32>) -> tensor<?x?x?xf32>
  return %p : tensor<?x?x?xf32>
}

// -----

// An anchor grid's arange over a feature map's width cast to int32 has that
// width as its length: the cast is exact while the width fits int32, a fact
// the range's shape function assumes (a guard, kiln-materialize-guards).
// A reshape's -1 over symbolic counts that are a constant multiple of the
// others is that constant, not a quotient of polynomials.
// CHECK-LABEL: func @anchor_grid
// CHECK: kiln.range {{.*}} -> tensor<?xi32, #kiln.dims<[w]>>
// CHECK: kiln.reshape {{.*}} -> tensor<15x4x?xf32, #kiln.dims<[15, 4, h * w + w]>>
// GUARDS-LABEL: func @anchor_grid
// GUARDS: kiln.guard <less_equal> [w, 2147483647], "kiln.range at 'Range_1': limit is a size cast to i32, exact only up to 2147483647"
// RUN: kiln-opt %s -split-input-file --kiln-graph-pipeline --kiln-materialize-guards | FileCheck %s --check-prefix=GUARDS
func.func @anchor_grid(%f: tensor<60x?x?xf32, #kiln.dims<[60, h, w]>>, %d: tensor<60x?xf32, #kiln.dims<[60, h * w + w]>>) -> (tensor<?xi32>, tensor<?x?x?xf32>) {
  %s = kiln.shape_of %f : (tensor<60x?x?xf32, #kiln.dims<[60, h, w]>>) -> tensor<3xi64>
  %two = kiln.constant dense<2> : tensor<i64>
  %wv = kiln.gather %s, %two {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %w32 = kiln.cast %wv to i32 : (tensor<i64>) -> tensor<i32>
  %zero = kiln.constant dense<0> : tensor<i32>
  %one = kiln.constant dense<1> : tensor<i32>
  %r = kiln.range %zero, %w32, %one : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<?xi32> loc("Range_1")
  %target = kiln.symbolic_constant [-1, 4, h * w + w] : tensor<3xi64>
  %g = kiln.reshape %d, %target : (tensor<60x?xf32, #kiln.dims<[60, h * w + w]>>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %r, %g : tensor<?xi32>, tensor<?x?x?xf32>
}

// -----

// A constant length read through casts rests on them as much: arange from
// int32(w) to int32(w + 10) has 10 elements only while w + 10 fits int32.
// CHECK-LABEL: func @constant_length_through_casts
// CHECK: kiln.range {{.*}} -> tensor<10xi32>
// GUARDS-LABEL: func @constant_length_through_casts
// GUARDS-DAG: kiln.guard <less_equal> [w, 2147483647], "kiln.range at 'Range_2': start is a size cast to i32, exact only up to 2147483647"
// GUARDS-DAG: kiln.guard <less_equal> [w + 10, 2147483647], "kiln.range at 'Range_2': limit is a size cast to i32, exact only up to 2147483647"
func.func @constant_length_through_casts(%f: tensor<?xf32, #kiln.dims<[w]>>) -> tensor<?xi32> {
  %a = kiln.symbolic_constant [w] : tensor<i64>
  %b = kiln.symbolic_constant [w + 10] : tensor<i64>
  %a32 = kiln.cast %a to i32 : (tensor<i64>) -> tensor<i32>
  %b32 = kiln.cast %b to i32 : (tensor<i64>) -> tensor<i32>
  %one = kiln.constant dense<1> : tensor<i32>
  %r = kiln.range %a32, %b32, %one : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<?xi32> loc("Range_2")
  return %r : tensor<?xi32>
}
