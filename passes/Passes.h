//===- Passes.h - kiln passes and pipelines ---------------------*- C++ -*-===//

#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "passes/KernelPipelineOptions.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Fails, with an error at the op, when a value of `root` has static dims whose
/// element or byte count overflows 64 bits or whose bytes exceed `maxBytes`
/// (the kiln-check-tensor-sizes pass).
llvm::LogicalResult checkTensorSizes(mlir::Operation *root, uint64_t maxBytes);

/// Why kiln-form-kernels leaves `op` out of every kernel ("it has no CUDA C
/// lowering", "its result size depends on the data", ...), or "" when a kernel
/// can compute it. kiln-compile --explain reports it per graph break.
std::string whyNotKernel(mlir::Operation *op);

/// "kiln.reshape at 'Reshape_3'", or the op name alone: how guard reasons name
/// the op that relied on a fact.
std::string describeOp(mlir::Operation *op);

/// The attribute kiln-integer-matmuls and kiln-integer-convs put on a
/// function whose dequantized matmuls or convs stay float:
/// `[{op = "kiln.matmul", node = "MatMul_3", why = "..."}, ...]`, which the
/// artifact's report (`float_quantized_ops`) and --explain list.
inline constexpr llvm::StringLiteral kFloatQuantizedOpsAttr = "kiln.float_quantized_ops";

/// The attribute kiln-sizes-on-device puts on a kiln.read_sizes: the name of
/// the op whose size it reads ("kiln.non_zero"), for reports.
inline constexpr llvm::StringLiteral kSizesForAttr = "kiln.sizes_for";

/// The attribute kiln-sizes-on-device puts on an op whose result dims it
/// computed on the device and bound before it (`["symbol", ...]`): a slice
/// past a step's count, whose own shape function cannot state its length
/// (min(end, count)). kiln-form-kernels trusts those dims of it.
inline constexpr llvm::StringLiteral kSizedOnDeviceAttr = "kiln.sized_on_device";

/// Options of the default graph pipeline.
struct GraphPipelineOptions : public mlir::PassPipelineOptions<GraphPipelineOptions> {
  Option<bool> bindArgSymbols{*this, "bind-arg-symbols",
                              llvm::cl::desc("Give unnamed dynamic argument dims symbols"),
                              llvm::cl::init(true)};
  Option<bool> float8Products{
      *this, "float8-products",
      llvm::cl::desc("Make FP8 Q/DQ matmuls cuBLASLt FP8 calls (every target GPU sm_89 or "
                     "newer; kiln-integer-matmuls' float8 option)"),
      llvm::cl::init(false)};
};

/// The graph-level pipeline every model goes through before codegen: shape
/// inference, canonicalization and CSE. Registered as `kiln-graph-pipeline`.
void buildGraphPipeline(mlir::OpPassManager &pm, const GraphPipelineOptions &options);

/// Options of the whole compile pipeline.
struct CompilePipelineOptions : public mlir::PassPipelineOptions<CompilePipelineOptions> {
  Option<bool> optimize{*this, "optimize",
                        llvm::cl::desc("Run the graph pipeline first (off: the model as imported)"),
                        llvm::cl::init(true)};
  Option<bool> bindArgSymbols{*this, "bind-arg-symbols",
                              llvm::cl::desc("Give unnamed dynamic argument dims symbols"),
                              llvm::cl::init(true)};
  Option<uint64_t> maxTensorBytes{
      *this, "max-tensor-bytes",
      llvm::cl::desc("The largest static tensor allowed, in bytes (kiln-check-tensor-sizes)"),
      llvm::cl::init(uint64_t(1) << 36)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32 (default), tf32, fp16, bf16 or fp8 (kiln-lower-precision; fp8 "
                     "runs kiln-fp8-matmuls first)"),
      llvm::cl::init("fp32")};
  Option<std::string> calibration{
      *this, "calibration",
      llvm::cl::desc("With precision fp8: the data sets the activations' scales come from "
                     "(kiln-fp8-matmuls)"),
      llvm::cl::init("")};
  Option<bool> kvCacheInPlace{
      *this, "kv-cache-in-place",
      llvm::cl::desc("Turn a decoder's past/present cache pairs into caches updated in place "
                     "(kiln-kv-cache-in-place)"),
      llvm::cl::init(false)};
  Option<bool> sampleOnDevice{
      *this, "sample-on-device",
      llvm::cl::desc("Add a decoder's next-token choice to the model (kiln-append-sampler)"),
      llvm::cl::init(false)};
  Option<int64_t> weightBits{
      *this, "weight-bits",
      llvm::cl::desc("Quantize constant matmul weights to 4 or 8 bits (kiln-quantize-weights); "
                     "0: keep them"),
      llvm::cl::init(0)};
  Option<int64_t> weightGroupSize{
      *this, "weight-group-size",
      llvm::cl::desc("Weights a scale covers along K (kiln-quantize-weights)"),
      llvm::cl::init(128)};
};

/// From the graph to kernels: guard the shape functions' assumptions, absorb library epilogues, split long reductions,
/// form kernels. What every tool runs after the graph pipeline (or after a
/// user's own --pipeline in kiln-compile).
void buildKernelPipeline(mlir::OpPassManager &pm,
                         const KernelPipelineOptions &options = KernelPipelineOptions());

/// The full pipeline from an imported model to kernel regions ready for
/// codegen: the size check, the graph pipeline (unless `optimize` is off) and
/// the size check again, then the kernel pipeline. Registered as
/// `kiln-compile-pipeline`; kiln-compile, kiln-run (via kiln-compile),
/// kiln-conformance and kiln-translate --compile all build it here.
void buildCompilePipeline(mlir::OpPassManager &pm, const CompilePipelineOptions &options);

/// Registers `kiln-graph-pipeline` and `kiln-compile-pipeline`. The passes
/// themselves register through the generated `registerKilnPasses()`.
void registerKilnPipelines();

/// Parses a textual pipeline as kiln-opt's --pass-pipeline takes it into
/// `pm`, a pass manager on the module: `builtin.module(...)` is the module's
/// own pipeline (parsed as it is into `pm` it would be one nested in the
/// module, which runs on no op), anything else passes added to it.
mlir::LogicalResult parseModulePipeline(llvm::StringRef text, mlir::OpPassManager &pm,
                                        llvm::raw_ostream &errors);

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
