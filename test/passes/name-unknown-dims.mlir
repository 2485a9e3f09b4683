// --kiln-name-unknown-dims: a dim only the data decides gets a symbol its op
// binds at run time (kiln.binds_dims), the ops after it compute with the
// symbol, and kiln-form-kernels makes them kernels; the op itself stays a host
// step. Names are numbered in op order and skip the inputs' symbols.
// RUN: kiln-opt %s -split-input-file --kiln-name-unknown-dims | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-name-unknown-dims --kiln-form-kernels | FileCheck %s --check-prefix=KERNELS

// CHECK-LABEL: func.func @non_zero_then_pointwise
// CHECK: kiln.non_zero %arg0 {kiln.binds_dims = {{\[}}[0, 1, "run1"]]} : (tensor<?xf32, #kiln.dims<[run0]>>) -> tensor<1x?xi64, #kiln.dims<[1, run1]>>
// CHECK: kiln.mul {{.*}} -> tensor<1x?xi64, #kiln.dims<[1, run1]>>
// CHECK: return {{.*}} : tensor<1x?xi64, #kiln.dims<[1, run1]>>
// KERNELS-LABEL: func.func @non_zero_then_pointwise
// KERNELS: kiln.non_zero
// KERNELS: kiln.kernel "pointwise"
// KERNELS:   kiln.mul
func.func @non_zero_then_pointwise(%x: tensor<?xf32, #kiln.dims<[run0]>>) -> tensor<1x?xi64> {
  %i = kiln.non_zero %x : (tensor<?xf32, #kiln.dims<[run0]>>) -> tensor<1x?xi64>
  %two = kiln.constant dense<2> : tensor<i64>
  %d = kiln.mul %i, %two : (tensor<1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  return %d : tensor<1x?xi64>
}

// -----

// Two counts from two ops are two symbols: adding them relies on their being
// equal (or one being 1), which no guard checked before the call, so the add
// stays a host step (it checks its operands when it runs).
// CHECK-LABEL: func.func @two_counts
// CHECK: kiln.non_zero %arg0 {kiln.binds_dims = {{\[}}[0, 1, "run0"]]}
// CHECK: kiln.non_zero %arg1 {kiln.binds_dims = {{\[}}[0, 1, "run1"]]}
// KERNELS-LABEL: func.func @two_counts
// KERNELS-NOT: kiln.kernel
// KERNELS: kiln.add
// KERNELS-NOT: kiln.kernel
func.func @two_counts(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<1x?xi64> {
  %i = kiln.non_zero %x : (tensor<4xf32>) -> tensor<1x?xi64>
  %j = kiln.non_zero %y : (tensor<4xf32>) -> tensor<1x?xi64>
  %s = kiln.add %i, %j : (tensor<1x?xi64>, tensor<1x?xi64>) -> tensor<1x?xi64>
  return %s : tensor<1x?xi64>
}

// -----

// A top_k's values and indices are both sized by its k: the dim they share is
// one symbol (so the ops after them may combine the two).
// CHECK-LABEL: func.func @top_k_shares
// CHECK: kiln.top_k %arg0, %arg1 {axis = -1 : i64, kiln.binds_dims = {{\[}}[0, 1, "run0"], [1, 1, "run0"]]}
// CHECK-SAME: -> (tensor<3x?xf32, #kiln.dims<[3, run0]>>, tensor<3x?xi64, #kiln.dims<[3, run0]>>)
func.func @top_k_shares(%x: tensor<3x10xf32>, %k: tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>) {
  %v, %i = kiln.top_k %x, %k {axis = -1 : i64} : (tensor<3x10xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  return %v, %i : tensor<3x?xf32>, tensor<3x?xi64>
}

// -----

// A detector's per-level top-k: k = min(1000, anchors), read on the device.
// The anchors are a conv's output sizes (at least 1 in any call past the
// conv), so k is too, and torch's reshape target `Where(shape == 0,
// input_shape, shape)` over the sum of two counts is decided, with a guard
// that the sum is at least 1 (checked where the counts are read). Where k is
// the caller's data (an argument), nothing says it is not 0: the select
// stays, the reshape's target is data.
// CHECK-LABEL: func.func @top_k_counts_of_conv_sizes
// CHECK: kiln.guard <less_equal> [1, run1 + run0], "kiln.select: a size made of convolution outputs (and top-k counts of them) is at least 1"
// CHECK-NOT: kiln.select
// CHECK: kiln.reshape {{.*}} -> tensor<1x?xi64, #kiln.dims<[1, run1 + run0]>>
// KERNELS-LABEL: func.func @top_k_counts_of_conv_sizes
// KERNELS: kiln.guard <less_equal> [1, run1 + run0]
// KERNELS: kiln.kernel {{.*}} -> tensor<1x?xi64, #kiln.dims<[1, run1 + run0]>>
// CHECK-LABEL: func.func @top_k_of_an_argument
// CHECK-NOT: kiln.guard
// CHECK: kiln.select
// CHECK: kiln.reshape {{.*}}kiln.binds_dims
func.func @top_k_counts_of_conv_sizes(%x: tensor<1x3x?x?xf32, #kiln.dims<[1, 3, h, w]>>, %f: tensor<15x3x3x3xf32>) -> tensor<?x?xi64> {
  %c = kiln.conv %x, %f {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x?x?xf32, #kiln.dims<[1, 3, h, w]>>, tensor<15x3x3x3xf32>) -> tensor<1x15x?x?xf32, #kiln.dims<[1, 15, (h - 1) floordiv 2 + 1, (w - 1) floordiv 2 + 1]>>
  %flat_shape = kiln.constant dense<[1, -1]> : tensor<2xi64>
  %flat = kiln.reshape %c, %flat_shape : (tensor<1x15x?x?xf32, #kiln.dims<[1, 15, (h - 1) floordiv 2 + 1, (w - 1) floordiv 2 + 1]>>, tensor<2xi64>) -> tensor<1x?xf32, #kiln.dims<[1, 15 * ((h - 1) floordiv 2 + 1) * ((w - 1) floordiv 2 + 1)]>>
  %shape = kiln.shape_of %flat : (tensor<1x?xf32, #kiln.dims<[1, 15 * ((h - 1) floordiv 2 + 1) * ((w - 1) floordiv 2 + 1)]>>) -> tensor<2xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<1xi64>
  %n = kiln.slice %shape, %one, %two, %one : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %cap0 = kiln.constant dense<1000> : tensor<1xi64>
  %both0 = kiln.concat %cap0, %n {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %min0 = kiln.reduce %both0 {axes = array<i64: 0>, keep_dims = true, kind = #kiln<reduce min>} : (tensor<2xi64>) -> tensor<1xi64>
  %v0, %i0 = kiln.top_k %flat, %min0 {axis = 1 : i64} : (tensor<1x?xf32, #kiln.dims<[1, 15 * ((h - 1) floordiv 2 + 1) * ((w - 1) floordiv 2 + 1)]>>, tensor<1xi64>) -> (tensor<1x?xf32>, tensor<1x?xi64>)
  %cap1 = kiln.constant dense<500> : tensor<1xi64>
  %min1 = kiln.min %cap1, %n : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %v1, %i1 = kiln.top_k %flat, %min1 {axis = 1 : i64} : (tensor<1x?xf32, #kiln.dims<[1, 15 * ((h - 1) floordiv 2 + 1) * ((w - 1) floordiv 2 + 1)]>>, tensor<1xi64>) -> (tensor<1x?xf32>, tensor<1x?xi64>)
  %cat = kiln.concat %i0, %i1 {axis = 1 : i64} : (tensor<1x?xi64>, tensor<1x?xi64>) -> tensor<1x?xi64>
  %column_shape = kiln.constant dense<[-1, 1]> : tensor<2xi64>
  %column = kiln.reshape %cat, %column_shape : (tensor<1x?xi64>, tensor<2xi64>) -> tensor<?x1xi64>
  %in = kiln.shape_of %column : (tensor<?x1xi64>) -> tensor<2xi64>
  %s = kiln.shape_of %cat : (tensor<1x?xi64>) -> tensor<2xi64>
  %zero = kiln.constant dense<0> : tensor<i64>
  %eq = kiln.compare %s, %zero {direction = #kiln<compare eq>} : (tensor<2xi64>, tensor<i64>) -> tensor<2xi1>
  %t = kiln.select %eq, %in, %s : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %r = kiln.reshape %column, %t : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x?xi64>
  return %r : tensor<?x?xi64>
}
func.func @top_k_of_an_argument(%x: tensor<1x10xf32>, %k: tensor<1xi64>) -> tensor<?x?xi64> {
  %v, %i = kiln.top_k %x, %k {axis = 1 : i64} : (tensor<1x10xf32>, tensor<1xi64>) -> (tensor<1x?xf32>, tensor<1x?xi64>)
  %column_shape = kiln.constant dense<[-1, 1]> : tensor<2xi64>
  %column = kiln.reshape %i, %column_shape : (tensor<1x?xi64>, tensor<2xi64>) -> tensor<?x1xi64>
  %in = kiln.shape_of %column : (tensor<?x1xi64>) -> tensor<2xi64>
  %s = kiln.shape_of %i : (tensor<1x?xi64>) -> tensor<2xi64>
  %zero = kiln.constant dense<0> : tensor<i64>
  %eq = kiln.compare %s, %zero {direction = #kiln<compare eq>} : (tensor<2xi64>, tensor<i64>) -> tensor<2xi1>
  %t = kiln.select %eq, %in, %s : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %r = kiln.reshape %column, %t : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x?xi64>
  return %r : tensor<?x?xi64>
}

// -----

// The first 8 of a count only the data decides: 8 may lie past it, and no
// guard could say it does not (guards run before the count exists), so the
// slice's length is not taken as 8: the slice binds its own (min(8, count)).
// CHECK-LABEL: func.func @slice_past_a_count
// CHECK: kiln.non_zero %arg0 {kiln.binds_dims = {{\[}}[0, 1, "run0"]]}
// CHECK: kiln.slice {{.*}} {kiln.binds_dims = {{\[}}[0, 1, "run1"]]} : {{.*}} -> tensor<1x?xi64, #kiln.dims<[1, run1]>>
func.func @slice_past_a_count(%x: tensor<6xf32>) -> tensor<1x?xi64> {
  %i = kiln.non_zero %x : (tensor<6xf32>) -> tensor<1x?xi64>
  %starts = kiln.constant dense<0> : tensor<2xi64>
  %ends = kiln.constant dense<[1, 8]> : tensor<2xi64>
  %steps = kiln.constant dense<1> : tensor<2xi64>
  %s = kiln.slice %i, %starts, %ends, %steps : (tensor<1x?xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x?xi64>
  return %s : tensor<1x?xi64>
}

// -----

// torchvision's batched NMS: `if boxes.numel() == 0: keep = empty else: ...`.
// An if's branches run at most once per call, so their ops take the named
// dims from outside (the cast and the multiply become kernels) and name what
// the data decides there (the NMS's count, here a non_zero's); the If's
// result gets a symbol the If step binds from the branch that ran, so the
// gather after it is a kernel. The then-branch's 0 does not contradict it.
// CHECK-LABEL: func.func @numel_zero_if
// KERNELS-LABEL: func.func @numel_zero_if
// CHECK: kiln.non_zero %arg0 {kiln.binds_dims = {{\[}}[0, 1, "run1"]]}
// CHECK: kiln.if %{{.*}} : tensor<1xi1> -> tensor<?xi64, #kiln.dims<[run3]>>
// CHECK: kiln.yield %{{.*}} : tensor<0xi64>
// CHECK: kiln.cast {{.*}} -> tensor<?xf32, #kiln.dims<[run1]>>
// CHECK: kiln.mul {{.*}} -> tensor<?xf32, #kiln.dims<[run1]>>
// CHECK: kiln.non_zero %{{.*}} {kiln.binds_dims = {{\[}}[0, 1, "run2"]]} : {{.*}} -> tensor<1x?xi64, #kiln.dims<[1, run2]>>
// CHECK: kiln.yield %{{.*}} : tensor<?xi64, #kiln.dims<[run2]>>
// CHECK: } {kiln.binds_dims = {{\[}}[0, 0, "run3"]]}
// CHECK: kiln.gather {{.*}} -> tensor<?xf32, #kiln.dims<[run3]>>
// KERNELS: kiln.if %{{.*}} -> tensor<?xi64, #kiln.dims<[run3]>>
// KERNELS: kiln.kernel "pointwise"
// KERNELS: kiln.non_zero
// KERNELS: kiln.kernel "pointwise"(%arg0, %{{.*}}) : {{.*}} -> tensor<?xf32, #kiln.dims<[run3]>>
// KERNELS-NEXT: ^bb0
// KERNELS-NEXT: kiln.gather
func.func @numel_zero_if(%x: tensor<?xf32, #kiln.dims<[run0]>>) -> tensor<?xf32> {
  %nz = kiln.non_zero %x : (tensor<?xf32, #kiln.dims<[run0]>>) -> tensor<1x?xi64>
  %flat = kiln.constant dense<-1> : tensor<1xi64>
  %idx = kiln.reshape %nz, %flat : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %shape = kiln.shape_of %idx : (tensor<?xi64>) -> tensor<1xi64>
  %zero = kiln.constant dense<0> : tensor<1xi64>
  %empty = kiln.compare %shape, %zero {direction = #kiln<compare eq>} : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi1>
  %keep = kiln.if %empty : tensor<1xi1> -> tensor<?xi64> {
    %none = kiln.constant dense<0> : tensor<0xi64>
    kiln.yield %none : tensor<0xi64>
  } else {
    %f = kiln.cast %idx to f32 : (tensor<?xi64>) -> tensor<?xf32>
    %two = kiln.constant dense<2.0> : tensor<f32>
    %m = kiln.mul %f, %two : (tensor<?xf32>, tensor<f32>) -> tensor<?xf32>
    %nz2 = kiln.non_zero %m : (tensor<?xf32>) -> tensor<1x?xi64>
    %k = kiln.reshape %nz2, %flat : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<?xi64>
    kiln.yield %k : tensor<?xi64>
  }
  %g = kiln.gather %x, %keep {axis = 0 : i64} : (tensor<?xf32, #kiln.dims<[run0]>>, tensor<?xi64>) -> tensor<?xf32>
  return %g : tensor<?xf32>
}
