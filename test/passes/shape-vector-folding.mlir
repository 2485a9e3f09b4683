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
