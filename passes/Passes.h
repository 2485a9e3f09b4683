//===- Passes.h - kiln passes and pipelines ---------------------*- C++ -*-===//

#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Options of the default graph pipeline.
struct GraphPipelineOptions : public mlir::PassPipelineOptions<GraphPipelineOptions> {
  Option<bool> bindArgSymbols{*this, "bind-arg-symbols",
                              llvm::cl::desc("Give unnamed dynamic argument dims symbols"),
                              llvm::cl::init(true)};
};

/// The graph-level pipeline every model goes through before codegen: shape
/// inference, canonicalization and CSE. Registered as `kiln-graph-pipeline`.
void buildGraphPipeline(mlir::OpPassManager &pm, const GraphPipelineOptions &options);

/// Registers `kiln-graph-pipeline`. The passes themselves register through the
/// generated `registerKilnPasses()`.
void registerKilnPipelines();

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
