//===- Compile.cpp - a loaded model to an artifact -------------------------===//

#include "driver/Compile.h"

#include "passes/Passes.h"
#include "driver/LoadModel.h"

#include "mlir/Pass/PassManager.h"

#include <chrono>

#include <sys/resource.h>

namespace kiln {

double peakResidentMegabytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0; // KB on Linux
}

mlir::FailureOr<CompiledArtifact>
compileToArtifact(mlir::ModuleOp module, const ArtifactOptions &options,
                  const std::function<void(llvm::StringRef, mlir::ModuleOp)> &dumpIR) {
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point since) {
    return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
  };
  Clock::time_point start = Clock::now();
  mlir::PassManager pm(module.getContext());
  buildKernelPipeline(pm, options.pipeline);
  if (failed(pm.run(module)))
    return mlir::failure();
  double fusionMs = ms(start);
  double fusionPeakMb = peakResidentMegabytes();
  if (dumpIR)
    dumpIR("kernels", module);
  mlir::func::FuncOp func = entryFunction(module);
  if (!func)
    return mlir::failure();
  start = Clock::now();
  mlir::FailureOr<CompiledArtifact> artifact = buildArtifact(func, options);
  if (failed(artifact))
    return mlir::failure();
  artifact->report["stage_ms"] =
      llvm::json::Object{{"kernel_pipeline", fusionMs}, {"codegen_and_artifact", ms(start)}};
  artifact->report["stage_peak_rss_mb"] = llvm::json::Object{
      {"kernel_pipeline", fusionPeakMb}, {"codegen_and_artifact", peakResidentMegabytes()}};
  return artifact;
}

} // namespace kiln
