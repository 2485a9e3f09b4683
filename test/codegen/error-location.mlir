// A codegen error about an op with no location of its own (folders make such
// constants) names the file and node through its kernel's, in one line without
// an IR dump.
// RUN: not kiln-translate --emit-cuda %s 2>&1 | FileCheck %s
// CHECK: model.onnx: at 'CumSum_3': error: codegen: 'kiln.cumulative' has no CUDA C lowering yet
// CHECK-NOT: see current operation
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %k = kiln.kernel "pointwise"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %c = kiln.cumulative %a {kind = #kiln<cumulative sum>, axis = 0 : i64, exclusive = false} : (tensor<4xf32>) -> tensor<4xf32> loc(unknown)
    kiln.yield %c : tensor<4xf32>
  } loc("CumSum_3"("model.onnx":0:0))
  return %k : tensor<4xf32>
}
