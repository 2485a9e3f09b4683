//===- Nvrtc.h - compile CUDA C to cubin and PTX with NVRTC -----*- C++ -*-===//
//
// NVRTC needs no GPU, so CI compiles every generated kernel on machines without
// one. A failure carries the kernel's name and NVRTC's log (which names the line).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_NVRTC_H
#define KILN_RUNTIME_CUDA_NVRTC_H

#include "Export.h"

#include "absl/status/statusor.h"

#include <string>
#include <vector>

namespace kiln::rt {

struct NvrtcOptions {
  /// SM version as a number: 80 for sm_80, 90 for sm_90.
  int smVersion = 90;
  /// Extra options, e.g. "-DKILN_SYM_batch=8" to specialize a shape bucket.
  std::vector<std::string> extraOptions;
};

struct NvrtcResult {
  std::string cubin; ///< Binary for exactly sm_<smVersion>.
  std::string ptx;   ///< PTX for compute_<smVersion>, for later architectures.
  std::string log;   ///< Warnings, if any.
};

/// Compiles one translation unit of CUDA C. `name` identifies it in errors.
KILN_RUNTIME_EXPORT absl::StatusOr<NvrtcResult>
compileWithNvrtc(const std::string &source, const std::string &name,
                 const NvrtcOptions &options);

/// NVRTC's version as "MAJOR.MINOR" (part of every kernel cache key).
KILN_RUNTIME_EXPORT std::string nvrtcVersion();

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_NVRTC_H
