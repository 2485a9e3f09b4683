//===- Artifact.h - a compiled function as a runtime artifact ---*- C++ -*-===//
//
// The last compiler stage: a function whose top level holds only kernels, library
// ops, constants and shape steps becomes the plan of an artifact
// (runtime/schema/kiln_artifact.fbs): values numbered, constants as aligned
// weights, inputs guarded, each kiln.kernel's CUDA C with cubins per requested
// arch and the host-emulation library, each library op as its name and
// attributes. The runtime reads it without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_ARTIFACT_H
#define KILN_CODEGEN_ARTIFACT_H

#include "codegen/HostEmulation.h"
#include "passes/KernelPipelineOptions.h"
#include "kiln/nvrtc/Nvrtc.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace kiln {

struct ArtifactOptions {
  /// SM versions to compile cubins (and PTX) for; empty ships sources only.
  std::vector<int> cubinArchs = {80, 90};
  /// Ship PTX beside each cubin (for newer devices than the cubins cover).
  bool includePtx = true;
  /// Build (or reuse) the host-emulation library and embed it.
  bool hostLibrary = true;
  /// Host libraries built already (kiln-conformance builds all cases' kernels in
  /// a few chunks); when unset, the artifact's kernels are built here.
  const HostKernels *hostKernels = nullptr;
  /// Cubins compiled already, per kernel name, for the one arch in cubinArchs
  /// (kiln-conformance --backend cuda compiles all cases' kernels in batches).
  const std::map<std::string, std::shared_ptr<const nvrtc::NvrtcResult>> *prebuiltCubins = nullptr;
  std::string cacheDir;
  /// When set, each kernel's cubins (the generic code, not variants) are also
  /// written here as <kernel>.sm_<N>.cubin, for tools that read SASS
  /// (kiln-compile --dump-cubins, tools/sass-lint.py).
  std::string cubinDumpDir;
  int jobs = 2;
  /// Shape buckets (kiln-compile --buckets): each fixes some symbols to values,
  /// and every kernel taking one is compiled again with
  /// -DKILN_SYM_<name>=<value> into a variant the runtime picks by the bound
  /// symbols.
  std::vector<std::vector<std::pair<std::string, int64_t>>> variants;
  /// The optional passes of compileToArtifact's kernel pipeline (the
  /// precision mode, the cache in place, the sampler, weight quantization).
  KernelPipelineOptions pipeline;
  /// Recorded in the artifact: the model's file name.
  std::string source;
  /// When set, the weights go to CompiledArtifact::weights instead of the
  /// artifact, which names this file (to lie beside it) and records its checksum.
  std::string weightsFile;
  /// Leave the weights out of CompiledArtifact::bytes (embedded) or
  /// CompiledArtifact::weights (a weights file): writeArtifact and
  /// writeWeightsFile copy them from the module's constants as they write, so
  /// a compile holds them once (the IR's), not twice. The module must outlive
  /// the result.
  bool deferWeights = false;
};

struct CompiledArtifact {
  /// The sealed artifact; empty when its weights are deferred
  /// (ArtifactOptions::deferWeights): then it is `head`, the weights
  /// (`deferredWeights` gives them in pieces, `deferredWeightBytes` in all),
  /// then `tail`, as writeArtifact writes it.
  std::string bytes;
  std::string head, tail;
  size_t deferredWeightBytes = 0;
  std::function<mlir::LogicalResult(llvm::function_ref<void(llvm::ArrayRef<char>)>)>
      deferredWeights;
  /// The artifact's size in bytes, deferred weights included.
  size_t size() const {
    return deferredWeights ? head.size() + deferredWeightBytes + tail.size() : bytes.size();
  }
  /// The weights file's contents (ArtifactOptions::weightsFile), else empty;
  /// empty too when they are deferred: then `deferredWeightsFile` gives them
  /// in pieces (`deferredWeightsFileBytes` in all), as writeWeightsFile writes
  /// them.
  std::string weights;
  size_t deferredWeightsFileBytes = 0;
  std::function<mlir::LogicalResult(llvm::function_ref<void(llvm::ArrayRef<char>)>)>
      deferredWeightsFile;
  /// kernels, library calls and fusion groups (kiln-compile's --report adds the
  /// memory plan and stage times).
  llvm::json::Object report;
};

/// Builds the artifact of `func` (after the graph pipeline and kernel formation);
/// a diagnostic at the first op the artifact cannot express.
mlir::FailureOr<CompiledArtifact> buildArtifact(mlir::func::FuncOp func,
                                                const ArtifactOptions &options);

/// Calls `emit` with the artifact's bytes in order, its deferred weights read
/// from the module's constants (which must still live); fails, with a
/// diagnostic at the constant, when one cannot be read.
mlir::LogicalResult forEachArtifactPiece(const CompiledArtifact &artifact,
                                         llvm::function_ref<void(llvm::ArrayRef<char>)> emit);

/// Writes the weights file of `artifact` (ArtifactOptions::weightsFile) to
/// `os`, its deferred weights read from the module's constants.
mlir::LogicalResult writeWeightsFile(const CompiledArtifact &artifact, llvm::raw_ostream &os);

/// Writes `artifact` to `os` (forEachArtifactPiece).
mlir::LogicalResult writeArtifact(const CompiledArtifact &artifact, llvm::raw_ostream &os);

} // namespace kiln

#endif // KILN_CODEGEN_ARTIFACT_H
