// --kiln-sizes-on-device: sizes only the data decides, computed on the device
// and read back alone (kiln.read_sizes), so the ops that needed them are
// kernels. Runs after --kiln-name-unknown-dims and reuses its symbols.
// RUN: kiln-opt %s -split-input-file --kiln-name-unknown-dims --kiln-sizes-on-device | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-name-unknown-dims --kiln-sizes-on-device --kiln-form-kernels | FileCheck %s --check-prefix=KERNELS

// non_zero: counts per chunk (a static size of 12 is one chunk), their sum,
// the sum read as the count's symbol, then the compaction sized by it; the
// op's own binding goes.
// CHECK-LABEL: func.func @non_zero
// CHECK: %[[COUNTS:.*]] = kiln.count_non_zero %arg0 {chunks = 1 : i64} : (tensor<3x4xf32>) -> tensor<1xi64>
// CHECK: %[[TOTAL:.*]] = kiln.reduce %[[COUNTS]] {axes = array<i64: 0>, kind = #kiln<reduce sum>} : (tensor<1xi64>) -> tensor<1xi64>
// CHECK: kiln.read_sizes %[[TOTAL]] ["run0"] {kiln.sizes_for = "kiln.non_zero"} : tensor<1xi64>
// CHECK: %[[N:.*]] = kiln.symbolic_constant [run0] : tensor<1xi64>
// CHECK: %[[I:.*]] = kiln.compact_non_zero %arg0, %[[COUNTS]], %[[N]] : {{.*}} -> tensor<2x?xi64, #kiln.dims<[2, run0]>>
// CHECK-NOT: kiln.binds_dims
// CHECK: kiln.mul %[[I]]
// KERNELS-LABEL: func.func @non_zero
// KERNELS: kiln.kernel "reduction"
// KERNELS-NEXT: ^bb0
// KERNELS-NEXT: kiln.count_non_zero
// KERNELS: kiln.kernel "reduction"
// KERNELS: kiln.reduce
// KERNELS: kiln.read_sizes
// KERNELS: kiln.kernel "compaction"
// KERNELS: kiln.compact_non_zero
// KERNELS: kiln.kernel "pointwise"
// KERNELS: kiln.mul
func.func @non_zero(%x: tensor<3x4xf32>) -> tensor<2x?xi64> {
  %i = kiln.non_zero %x : (tensor<3x4xf32>) -> tensor<2x?xi64>
  %two = kiln.constant dense<2> : tensor<i64>
  %d = kiln.mul %i, %two : (tensor<2x?xi64>, tensor<i64>) -> tensor<2x?xi64>
  return %d : tensor<2x?xi64>
}

// -----

// A size of symbols is cut into the most chunks (1024); a large static one
// into chunks of at least 4096 elements.
// CHECK-LABEL: func.func @chunks
// CHECK: kiln.count_non_zero %arg0 {chunks = 1024 : i64}
// CHECK: kiln.count_non_zero %arg1 {chunks = 25 : i64}
func.func @chunks(%x: tensor<?x8xi32, #kiln.dims<[n, 8]>>, %y: tensor<100000xi1>) -> (tensor<2x?xi64>, tensor<1x?xi64>) {
  %i = kiln.non_zero %x : (tensor<?x8xi32, #kiln.dims<[n, 8]>>) -> tensor<2x?xi64>
  %j = kiln.non_zero %y : (tensor<100000xi1>) -> tensor<1x?xi64>
  return %i, %j : tensor<2x?xi64>, tensor<1x?xi64>
}

// -----

// top_k whose k is data: k is read as the symbol both results share, and the
// top_k reads k as that symbol from then on (a kernel, its values a gather).
// CHECK-LABEL: func.func @top_k
// CHECK: kiln.read_sizes %arg1 ["run0"] {kiln.sizes_for = "kiln.top_k"} : tensor<1xi64>
// CHECK: %[[K:.*]] = kiln.symbolic_constant [run0] : tensor<1xi64>
// CHECK: kiln.top_k %arg0, %[[K]] {axis = -1 : i64} : {{.*}} -> (tensor<3x?xf32, #kiln.dims<[3, run0]>>, tensor<3x?xi64, #kiln.dims<[3, run0]>>)
// CHECK-NOT: kiln.binds_dims
// KERNELS-LABEL: func.func @top_k
// KERNELS: kiln.read_sizes
// KERNELS: kiln.kernel "reduction"
// KERNELS: kiln.top_k
// KERNELS: kiln.kernel "pointwise"
// KERNELS: kiln.gather_elements
func.func @top_k(%x: tensor<3x10xf32>, %k: tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>) {
  %v, %i = kiln.top_k %x, %k {axis = -1 : i64} : (tensor<3x10xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  return %v, %i : tensor<3x?xf32>, tensor<3x?xi64>
}

// -----

// A top_k whose result type fixes k (the model said 2) has no size to read:
// it stays a host step, which checks k.
// CHECK-LABEL: func.func @top_k_fixed
// CHECK-NOT: kiln.read_sizes
// KERNELS-LABEL: func.func @top_k_fixed
// KERNELS-NOT: kiln.kernel
func.func @top_k_fixed(%x: tensor<3x10xf32>, %k: tensor<1xi64>) -> tensor<3x2xi64> {
  %v, %i = kiln.top_k %x, %k {axis = -1 : i64} : (tensor<3x10xf32>, tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  return %i : tensor<3x2xi64>
}

// -----

// compress along an axis: the condition's non_zero, flattened, and a gather.
// CHECK-LABEL: func.func @compress
// CHECK: kiln.count_non_zero %arg1
// CHECK: kiln.read_sizes {{.*}} ["run0"] {kiln.sizes_for = "kiln.compress"}
// CHECK: %[[ROWS:.*]] = kiln.compact_non_zero %arg1, {{.*}} -> tensor<1x?xi64, #kiln.dims<[1, run0]>>
// CHECK: %[[IDX:.*]] = kiln.reshape %[[ROWS]], {{.*}} -> tensor<?xi64, #kiln.dims<[run0]>>
// CHECK: kiln.gather %arg0, %[[IDX]] {axis = 1 : i64} : {{.*}} -> tensor<2x?xf32, #kiln.dims<[2, run0]>>
// CHECK-NOT: kiln.compress
// KERNELS-LABEL: func.func @compress
// KERNELS: kiln.kernel "compaction"
// KERNELS: kiln.kernel "pointwise"
// KERNELS: kiln.gather
func.func @compress(%x: tensor<2x5xf32>, %c: tensor<5xi1>) -> tensor<2x?xf32> {
  %r = kiln.compress %x, %c {axis = 1 : i64} : (tensor<2x5xf32>, tensor<5xi1>) -> tensor<2x?xf32>
  return %r : tensor<2x?xf32>
}

// -----

// Without an axis the input is flattened first. The reference refuses a
// condition longer than what it selects from (a gather would not): where the
// symbols do not prove it (m against 3n, both the inputs'), a guard every
// call checks; where a condition is certainly longer, a host step (which
// reports it).
// CHECK-LABEL: func.func @compress_flat
// CHECK: kiln.reshape %arg0, {{.*}} -> tensor<12xf32>
// CHECK: kiln.gather
// CHECK-LABEL: func.func @compress_unproven
// CHECK-NEXT: kiln.guard <less_equal> [m, 3 * n], "kiln.compress: the condition must be no longer than what it selects along"
// CHECK: kiln.gather
// CHECK-LABEL: func.func @compress_too_long
// CHECK: kiln.compress %arg0, %arg1 {axis = 0 : i64, kiln.binds_dims = {{\[}}[0, 0, "run0"]]}
func.func @compress_flat(%x: tensor<4x3xf32>, %c: tensor<7xi1>) -> tensor<?xf32> {
  %r = kiln.compress %x, %c : (tensor<4x3xf32>, tensor<7xi1>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @compress_unproven(%x: tensor<?x3xf32, #kiln.dims<[n, 3]>>, %c: tensor<?xi1, #kiln.dims<[m]>>) -> tensor<?xf32> {
  %r = kiln.compress %x, %c : (tensor<?x3xf32, #kiln.dims<[n, 3]>>, tensor<?xi1, #kiln.dims<[m]>>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @compress_too_long(%x: tensor<2x3xf32>, %c: tensor<5xi1>) -> tensor<?x3xf32> {
  %r = kiln.compress %x, %c {axis = 0 : i64} : (tensor<2x3xf32>, tensor<5xi1>) -> tensor<?x3xf32>
  return %r : tensor<?x3xf32>
}

// -----

// unique without an axis: per-element compares with every other element,
// fused into reductions (first occurrences, ranks), the distinct count read
// back, then per-output reductions (first positions, counts) and a gather.
// CHECK-LABEL: func.func @unique
// CHECK: kiln.read_sizes {{.*}} ["run0"] {kiln.sizes_for = "kiln.unique"}
// CHECK: kiln.gather {{.*}} -> tensor<?xf32, #kiln.dims<[run0]>>
// CHECK-NOT: kiln.unique %
// KERNELS-LABEL: func.func @unique
// KERNELS: kiln.kernel "reduction"{{.*}}-> tensor<6xi1>
// KERNELS: kiln.compare {{.*}} -> tensor<6x6xi1>
// KERNELS: kiln.reduce {{.*}}kind = #kiln<reduce any>
// KERNELS: kiln.read_sizes
// KERNELS-NOT: kiln.unique %
// Along an axis the keys are the slices: equal where every element is,
// ordered by the first element they differ at (computed once, [n, n]).
// CHECK-LABEL: func.func @unique_axis
// CHECK: kiln.transpose %arg0 {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK: kiln.reduce {{.*}}kind = #kiln<reduce all>{{.*}} : (tensor<3x3x2xi1>) -> tensor<3x3xi1>
// CHECK: kiln.gather_nd
// CHECK: kiln.read_sizes {{.*}} ["run0"] {kiln.sizes_for = "kiln.unique"}
// CHECK: kiln.gather %arg0, {{.*}} {axis = 1 : i64} : {{.*}} -> tensor<2x?xf32, #kiln.dims<[2, run0]>>
func.func @unique(%x: tensor<2x3xf32>) -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>) {
  %y, %i, %inv, %c = kiln.unique %x {sorted = false} : (tensor<2x3xf32>) -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>)
  return %y, %i, %inv, %c : tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>
}
func.func @unique_axis(%x: tensor<2x3xf32>) -> tensor<2x?xf32> {
  %y, %i, %inv, %c = kiln.unique %x {axis = -1 : i64} : (tensor<2x3xf32>) -> (tensor<2x?xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
  return %y : tensor<2x?xf32>
}

// -----

// non_max_suppression: score ranks (compares and a sum), the greedy
// selection per batch and class row (a compaction kernel), and the taken
// entries listed through non_zero's path.
// CHECK-LABEL: func.func @nms
// CHECK: %[[RANK:.*]] = kiln.reduce {{.*}} : (tensor<1x2x5x5xi64>) -> tensor<1x2x5xi64>
// CHECK: %[[SEL:.*]] = kiln.nms_select %arg0, %arg1, %[[RANK]], {{.*}} -> tensor<1x2x5xi64>
// CHECK: kiln.read_sizes {{.*}} ["run0"] {kiln.sizes_for = "kiln.non_max_suppression"}
// CHECK: kiln.gather_nd %[[SEL]]
// CHECK: kiln.concat {{.*}} -> tensor<?x3xi64, #kiln.dims<[run0, 3]>>
// KERNELS-LABEL: func.func @nms
// KERNELS: kiln.kernel "compaction"
// KERNELS-NEXT: ^bb0
// KERNELS: kiln.nms_select
func.func @nms(%boxes: tensor<1x5x4xf32>, %scores: tensor<1x2x5xf32>) -> tensor<?x3xi64> {
  %max = kiln.constant dense<3> : tensor<1xi64>
  %iou = kiln.constant dense<0.5> : tensor<1xf32>
  %s = kiln.non_max_suppression %boxes, %scores, %max, %iou : (tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1xi64>, tensor<1xf32>) -> tensor<?x3xi64>
  return %s : tensor<?x3xi64>
}

// -----

// Control flow's bodies are left alone.
// CHECK-LABEL: func.func @in_body
// CHECK: kiln.if
// CHECK: kiln.non_zero
func.func @in_body(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<1x?xi64> {
  %r = kiln.if %c : tensor<i1> -> tensor<1x?xi64> {
    %i = kiln.non_zero %x : (tensor<4xf32>) -> tensor<1x?xi64>
    kiln.yield %i : tensor<1x?xi64>
  } else {
    %j = kiln.non_zero %x : (tensor<4xf32>) -> tensor<1x?xi64>
    kiln.yield %j : tensor<1x?xi64>
  }
  return %r : tensor<1x?xi64>
}

// -----

// The first 8 of a count (keep[:8] after a non_zero): its length,
// max(0, min(count, 8) - min(count, 0)), computed from the bound count and
// read as the slice's symbol; the slice is a kernel sized by it.
// CHECK-LABEL: func.func @slice_past_a_count
// CHECK: kiln.read_sizes %{{.*}} ["run0"] {kiln.sizes_for = "kiln.non_zero"}
// CHECK: %[[TO:.*]] = kiln.min
// CHECK: %[[FROM:.*]] = kiln.min
// CHECK: %[[LEN:.*]] = kiln.sub %[[TO]], %[[FROM]]
// CHECK: %[[CLAMPED:.*]] = kiln.max %[[LEN]]
// CHECK: kiln.read_sizes %[[CLAMPED]] ["run1"] {kiln.sizes_for = "kiln.slice"}
// CHECK: kiln.slice {{.*}} {kiln.sized_on_device = ["run1"]} : {{.*}} -> tensor<1x?xi64, #kiln.dims<[1, run1]>>
// KERNELS-LABEL: func.func @slice_past_a_count
// KERNELS: kiln.kernel "pointwise"
// KERNELS: kiln.slice
func.func @slice_past_a_count(%x: tensor<12xf32>) -> tensor<1x?xi64> {
  %i = kiln.non_zero %x : (tensor<12xf32>) -> tensor<1x?xi64>
  %starts = kiln.constant dense<0> : tensor<2xi64>
  %ends = kiln.constant dense<[1, 8]> : tensor<2xi64>
  %steps = kiln.constant dense<1> : tensor<2xi64>
  %s = kiln.slice %i, %starts, %ends, %steps : (tensor<1x?xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x?xi64>
  return %s : tensor<1x?xi64>
}

// -----

// The middle third of a count (an even Split of a non_zero's count): its
// bounds are dims over the count, ceil(count / 3) and twice that, which may
// lie past it; the length is computed from them and read as the slice's.
// CHECK-LABEL: func.func @slice_by_dims_of_a_count
// CHECK: kiln.read_sizes %{{.*}} ["run0"] {kiln.sizes_for = "kiln.non_zero"}
// CHECK: kiln.symbolic_constant [0, (run0 + 2) floordiv 3] : tensor<2xi64>
// CHECK: kiln.symbolic_constant [1, 2 * ((run0 + 2) floordiv 3)] : tensor<2xi64>
// CHECK: kiln.read_sizes %{{.*}} ["run1"] {kiln.sizes_for = "kiln.slice"}
// CHECK: kiln.slice {{.*}} {kiln.sized_on_device = ["run1"]} : {{.*}} -> tensor<1x?xi64, #kiln.dims<[1, run1]>>
func.func @slice_by_dims_of_a_count(%x: tensor<12xf32>) -> tensor<1x?xi64> {
  %i = kiln.non_zero %x : (tensor<12xf32>) -> tensor<1x?xi64>
  %shape = kiln.shape_of %i : (tensor<1x?xi64>) -> tensor<2xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<1xi64>
  %three = kiln.constant dense<3> : tensor<1xi64>
  %count = kiln.slice %shape, %one, %two, %one : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %up = kiln.add %count, %two : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %third = kiln.div %up, %three : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %twice = kiln.mul %third, %two : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %zero = kiln.constant dense<0> : tensor<1xi64>
  %starts = kiln.concat %zero, %third {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %ends = kiln.concat %one, %twice {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %steps = kiln.constant dense<1> : tensor<2xi64>
  %s = kiln.slice %i, %starts, %ends, %steps : (tensor<1x?xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x?xi64>
  return %s : tensor<1x?xi64>
}

// -----

// A resize whose size is data: the entries at the dims it decides (all four
// here) gathered and read as their symbols, then the resize sized by them.
// CHECK-LABEL: func.func @resize_to_data_sizes
// CHECK: %[[PICKED:.*]] = kiln.gather %arg1
// CHECK: kiln.read_sizes %[[PICKED]] ["run0", "run1", "run2", "run3"] {kiln.sizes_for = "kiln.resize"}
// CHECK: kiln.resize %arg0, %{{.*}} {{.*}} -> tensor<?x?x?x?xf32, #kiln.dims<[run0, run1, run2, run3]>>
// KERNELS-LABEL: func.func @resize_to_data_sizes
// KERNELS: kiln.kernel
// KERNELS: kiln.resize
func.func @resize_to_data_sizes(%x: tensor<1x3x4x4xf32>, %size: tensor<4xi64>) -> tensor<?x?x?x?xf32> {
  %r = kiln.resize %x, %size {coordinate_mode = #kiln<coordinate_mode half_pixel>, mode = #kiln<resize_mode nearest>, nearest_mode = #kiln<nearest_mode round_prefer_floor>, roi = array<f32>, scales = array<f32>} : (tensor<1x3x4x4xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// -----

// In an if's branch (which runs at most once per call) a count is computed and
// read there too, and the compaction sized by it is a kernel of the branch.
// CHECK-LABEL: func.func @non_zero_in_branch
// CHECK: kiln.if
// CHECK: } else {
// CHECK: kiln.count_non_zero
// CHECK: kiln.read_sizes %{{.*}} ["run0"] {kiln.sizes_for = "kiln.non_zero"}
// CHECK: kiln.compact_non_zero {{.*}} -> tensor<1x?xi64, #kiln.dims<[1, run0]>>
// CHECK: } {kiln.binds_dims = {{\[}}[0, 1, "run1"]]}
// KERNELS-LABEL: func.func @non_zero_in_branch
// KERNELS: } else {
// KERNELS: kiln.read_sizes
// KERNELS: kiln.kernel "compaction"
func.func @non_zero_in_branch(%c: tensor<i1>, %x: tensor<6xf32>) -> tensor<1x?xi64> {
  %r = kiln.if %c : tensor<i1> -> tensor<1x?xi64> {
    %none = kiln.constant dense<0> : tensor<1x0xi64>
    kiln.yield %none : tensor<1x0xi64>
  } else {
    %i = kiln.non_zero %x : (tensor<6xf32>) -> tensor<1x?xi64>
    kiln.yield %i : tensor<1x?xi64>
  }
  return %r : tensor<1x?xi64>
}

// -----

// A compress whose condition may be longer than its axis needs a guard; guards
// are checked once per call at the top level, and in an if's branch one would
// refuse inputs for a branch that does not run: there the compress stays its
// own host step.
// CHECK-LABEL: func.func @compress_in_branch_needs_a_guard
// CHECK-NOT: kiln.guard
// CHECK: kiln.compress
// KERNELS-LABEL: func.func @compress_in_branch_needs_a_guard
func.func @compress_in_branch_needs_a_guard(%c: tensor<i1>, %x: tensor<?xf32, #kiln.dims<[a]>>, %m: tensor<?xi1, #kiln.dims<[b]>>) -> tensor<?xf32> {
  %r = kiln.if %c : tensor<i1> -> tensor<?xf32> {
    kiln.yield %x : tensor<?xf32, #kiln.dims<[a]>>
  } else {
    %y = kiln.compress %x, %m {axis = 0 : i64} : (tensor<?xf32, #kiln.dims<[a]>>, tensor<?xi1, #kiln.dims<[b]>>) -> tensor<?xf32>
    kiln.yield %y : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}
