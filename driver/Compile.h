//===- Compile.h - a loaded model to an artifact, for the CLI tools -*- C++ -*-===//
//
// What kiln-compile does and what kiln-run and kiln-conformance do in memory:
// kernel formation over the optimized module, then the artifact (codegen/Artifact).
// Stage times and the process's peak resident memory after each stage go to
// the report.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_COMPILE_H
#define KILN_DRIVER_COMPILE_H

#include "codegen/Artifact.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>

namespace kiln {

/// Forms kernels in `module`'s entry function and builds its artifact. `dumpIR`,
/// when set, receives the module after kernel formation ("kernels").
mlir::FailureOr<CompiledArtifact>
compileToArtifact(mlir::ModuleOp module, const ArtifactOptions &options,
                  const std::function<void(llvm::StringRef stage, mlir::ModuleOp)> &dumpIR = {});

/// The process's peak resident set so far, in MB (getrusage's ru_maxrss).
double peakResidentMegabytes();

} // namespace kiln

#endif // KILN_DRIVER_COMPILE_H
