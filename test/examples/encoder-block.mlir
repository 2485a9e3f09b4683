// The bundled demo model (`make demo`) keeps working, and the graph pipeline leaves
// no dynamic dim without a symbolic value.
// RUN: kiln-opt %S/../../examples/encoder_block.mlir --kiln-graph-pipeline | FileCheck %s

// CHECK-LABEL: func @encoder_block
// CHECK-SAME: -> tensor<?x?x64xf32, #kiln.dims<[arg0_d0, arg0_d1, 64]>>
// CHECK-NOT: kiln.shape_of
// CHECK-NOT: kiln.concat
// CHECK-NOT: {{tensor<[0-9x?]*\?[0-9x?]*[a-z]+[0-9]*>}}
// CHECK: kiln.reshape {{.*}} -> tensor<?x?x12x16xf32, #kiln.dims<[arg0_d0, arg0_d1, 12, 16]>>
// CHECK: kiln.softmax {{.*}} -> tensor<?x4x?x?xf32, #kiln.dims<[arg0_d0, 4, arg0_d1, arg0_d1]>>
// CHECK: kiln.reshape {{.*}} -> tensor<?x?x64xf32, #kiln.dims<[arg0_d0, arg0_d1, 64]>>
