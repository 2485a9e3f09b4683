// The whole graph pipeline: inference binds symbols, folding resolves the shape
// computation, canonicalization removes what it no longer needs.
// RUN: kiln-opt %s --kiln-graph-pipeline | FileCheck %s

// CHECK-LABEL: func @mlp_block
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32, #kiln.dims<[arg0_d0, arg0_d1, 64]>>
// CHECK-SAME: -> tensor<?x64xf32, #kiln.dims<[arg0_d0 * arg0_d1, 64]>>
// CHECK-NOT: kiln.shape_of
// CHECK-NOT: kiln.gather
// CHECK: %[[F:.*]] = kiln.reshape %[[X]], %{{.*}} : {{.*}} -> tensor<?x64xf32, #kiln.dims<[arg0_d0 * arg0_d1, 64]>>
// CHECK: %[[M:.*]] = kiln.matmul %[[F]], %{{.*}} : {{.*}} -> tensor<?x64xf32, #kiln.dims<[arg0_d0 * arg0_d1, 64]>>
// CHECK: %[[R:.*]] = kiln.max %[[M]], %{{.*}} : {{.*}} -> tensor<?x64xf32, #kiln.dims<[arg0_d0 * arg0_d1, 64]>>
// CHECK: return %[[R]]
func.func @mlp_block(%x: tensor<?x?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> {
  // An unused shape computation, as exporters leave behind.
  %shape = kiln.shape_of %x : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %i = kiln.constant dense<[0, 1]> : tensor<2xi64>
  %bs = kiln.gather %shape, %i {axis = 0 : i64} : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %target0 = kiln.constant dense<[-1, 64]> : tensor<2xi64>
  %flat = kiln.reshape %x, %target0 : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %mm = kiln.matmul %flat, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %relu = kiln.max %mm, %zero : (tensor<?x64xf32>, tensor<f32>) -> tensor<?x64xf32>
  return %relu : tensor<?x64xf32>
}
