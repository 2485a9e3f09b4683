//===- Nvrtc.h - compile CUDA C to cubin and PTX with NVRTC -----*- C++ -*-===//
//
// NVRTC needs no GPU, so CI compiles every generated kernel on machines without
// one. A failure carries the kernel's name and NVRTC's log (which names the line).
// A static library of its own: the compiler (cubins for artifacts) and the runtime
// (kernels for a device the artifact has no cubin for) both compile, and neither
// links the other.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_NVRTC_NVRTC_H
#define KILN_NVRTC_NVRTC_H

#include "absl/status/statusor.h"

#include <string>
#include <vector>

namespace kiln::nvrtc {

struct NvrtcOptions {
  /// SM version as a number: 80 for sm_80, 90 for sm_90.
  int smVersion = 90;
  /// Extra options, e.g. "-DKILN_SYM_batch=8" to specialize a shape bucket.
  std::vector<std::string> extraOptions;
  /// Headers given by content rather than found on disk, as (include name,
  /// text): the device library travels this way, so neither an installed
  /// compiler nor the runtime needs a source tree.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct NvrtcResult {
  std::string cubin; ///< Binary for exactly sm_<smVersion>.
  std::string ptx;   ///< PTX for compute_<smVersion>, for later architectures.
  std::string log;   ///< Warnings, if any.
};

/// Compiles one translation unit of CUDA C. `name` identifies it in errors.
absl::StatusOr<NvrtcResult>
compileWithNvrtc(const std::string &source, const std::string &name,
                 const NvrtcOptions &options);

/// NVRTC's version as "MAJOR.MINOR" (part of every kernel cache key).
std::string nvrtcVersion();

} // namespace kiln::nvrtc

#endif // KILN_NVRTC_NVRTC_H
