//===- Pipelines.cpp - kiln's pass pipelines ------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void buildGraphPipeline(OpPassManager &pm, const GraphPipelineOptions &options) {
  InferShapesPassOptions inferOptions;
  inferOptions.bindArgSymbols = options.bindArgSymbols;
  // First: shape inference and canonicalization fold a quantized weight's
  // dequantization into a float constant.
  IntegerMatmulsPassOptions integer;
  integer.float8 = options.float8Products;
  pm.addNestedPass<func::FuncOp>(createIntegerMatmulsPass(integer));
  pm.addNestedPass<func::FuncOp>(createIntegerConvsPass());
  pm.addNestedPass<func::FuncOp>(createInferShapesPass(inferOptions));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Canonicalization can expose more constant shape computations; one more sweep
  // turns them into refined types.
  pm.addNestedPass<func::FuncOp>(createInferShapesPass(inferOptions));
}

void buildKernelPipeline(OpPassManager &pm, const KernelPipelineOptions &options) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  // Guards first, while every op that assumed something is still a graph op.
  func.addPass(createMaterializeGuardsPass());
  func.addPass(createFoldConvAffinePass());
  // Before the transposes are absorbed and the precision mode: the chain as exported.
  func.addPass(createFuseAttentionPass());
  func.addPass(createFuseRmsNormPass());
  func.addPass(createAbsorbMatmulTransposesPass());
  // After the transposes (a weight stored [N, K] is read as it is), before
  // the epilogues (matmul_nbits has none) and the precision mode (it reads
  // the weights as the model has them).
  if (options.weightBits) {
    QuantizeWeightsPassOptions quantize;
    quantize.bits = options.weightBits;
    quantize.groupSize = options.weightGroupSize;
    quantize.precision = options.precision;
    func.addPass(createQuantizeWeightsPass(quantize));
  }
  AbsorbEpiloguesPassOptions epilogues;
  epilogues.precision = options.precision;
  func.addPass(createAbsorbEpiloguesPass(epilogues));
  func.addPass(createSymmetricConvPadsPass());
  func.addPass(createMergeSiblingMatmulsPass());
  // After attention is fused (it reads the cache's valid rows inside its
  // kernel), before the precision mode (the caches keep their type).
  if (options.kvCacheInPlace)
    func.addPass(createKvCacheInPlacePass());
  // Before the precision mode, which gives its float8 products a bf16
  // result; after the epilogues, which it keeps (cuBLASLt's FP8 ones).
  if (options.precision == "fp8") {
    Fp8MatmulsPassOptions fp8;
    fp8.calibration = options.calibration;
    func.addPass(createFp8MatmulsPass(fp8));
  }
  // After the weight rewrites above, which read and write fp32/f64 constants.
  LowerPrecisionPassOptions lower;
  lower.precision = options.precision;
  func.addPass(createLowerPrecisionPass(lower));
  // After the precision mode: the sampler's inputs stay f32.
  if (options.sampleOnDevice)
    func.addPass(createAppendSamplerPass());
  // After the precision mode: the layout rule reads the element type.
  func.addPass(createSelectConvLayoutPass());
  // On the graph as it will run, before reductions split and sizes are read.
  func.addPass(createMarkIndependentRowsPass());
  func.addPass(createSplitReductionsPass());
  // Data-dependent sizes named, so the ops after them can be kernels.
  func.addPass(createNameUnknownDimsPass());
  // Sizes the device can compute read back alone, so their ops are kernels.
  func.addPass(createSizesOnDevicePass());
  // Facts over the sizes those steps bind, checked where they are bound, so
  // the ops relying on them can be kernels.
  func.addPass(createMaterializeGuardsPass());
  func.addPass(createFormKernelsPass());
}

void buildCompilePipeline(OpPassManager &pm, const CompilePipelineOptions &options) {
  // Sizes are checked as imported and again once shapes are inferred, before
  // anything multiplies them (kiln-compile does the same with its own limit).
  CheckTensorSizesPassOptions sizes;
  sizes.maxBytes = options.maxTensorBytes;
  pm.addPass(createCheckTensorSizesPass(sizes));
  if (options.optimize) {
    GraphPipelineOptions graph;
    graph.bindArgSymbols = options.bindArgSymbols;
    buildGraphPipeline(pm, graph);
    pm.addPass(createCheckTensorSizesPass(sizes));
  }
  KernelPipelineOptions kernel;
  kernel.precision = options.precision;
  kernel.calibration = options.calibration;
  kernel.kvCacheInPlace = options.kvCacheInPlace;
  kernel.sampleOnDevice = options.sampleOnDevice;
  kernel.weightBits = options.weightBits;
  kernel.weightGroupSize = options.weightGroupSize;
  buildKernelPipeline(pm, kernel);
}

mlir::LogicalResult parseModulePipeline(llvm::StringRef text, mlir::OpPassManager &pm,
                                        llvm::raw_ostream &errors) {
  StringRef t = text.trim(), anchor = ModuleOp::getOperationName();
  if (t.consume_front(anchor)) {
    t = t.ltrim();
    if (!t.consume_front("(") || !t.consume_back(")")) {
      errors << "expected '" << anchor << "(...)'";
      return failure();
    }
  }
  return parsePassPipeline(t, pm, errors);
}

void registerKilnPipelines() {
  PassPipelineRegistration<GraphPipelineOptions>(
      "kiln-graph-pipeline",
      "kiln's graph-level pipeline: shape inference, canonicalization, CSE",
      buildGraphPipeline);
  PassPipelineRegistration<CompilePipelineOptions>(
      "kiln-compile-pipeline",
      "kiln's whole compile pipeline: the graph pipeline, batch norms folded into "
      "convs, attention fused, matmul transposes and epilogues absorbed, asymmetric conv pads split, sibling matmuls merged, split "
      "reductions, the precision mode, conv layouts and kernel formation (what kiln-compile runs before codegen)",
      buildCompilePipeline);
}

} // namespace kiln
