//===- NvrtcCheck.h - every generated kernel through NVRTC ------*- C++ -*-===//
//
// Compiles generated kernels with NVRTC (through the runtime's compileWithNvrtc)
// for sm_80 and sm_90, cubin and PTX, in batches on `jobs` threads, with ptxas's
// resource report: an error, or a pointwise kernel that spills registers, is one
// line on stderr and makes it return false. Needs no GPU.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_NVRTCCHECK_H
#define KILN_CODEGEN_NVRTCCHECK_H

#include "codegen/CudaEmitter.h"
#include "kiln/nvrtc/Nvrtc.h"

#include <map>
#include <memory>

namespace kiln {

/// With `cubinDir`, also writes each batch's sm_90 cubin there
/// (kernels-<b>.sm_90.cubin) and `kernels.json`: per kernel its name,
/// schedule, vector width and whether it divides data, what tools/sass-lint.py
/// reads beside the SASS. With `cacheDir`, a batch compiled before (by this
/// check or by compileKernelsForArch) is read from there.
/// `architectures` are the SM versions compiled (80 and 90 unless told);
/// a cubin folder needs 90 among them.
bool checkWithNvrtc(const std::vector<GeneratedKernel> &kernels, int jobs = 2,
                    const std::string &cubinDir = "", const std::string &cacheDir = "",
                    const std::vector<int> &architectures = {80, 90});

/// Compiles `kernels` for sm_<sm> in translation units of about 100 kernels on
/// `jobs` threads; each kernel maps to the cubin and PTX of its unit (a module
/// holding it among others). For running many models' kernels on a GPU at once.
/// The units and their cache entries in `cacheDir` (none when empty) are the
/// check's: a fake-CUDA run after a host run with the check compiles little.
absl::StatusOr<std::map<std::string, std::shared_ptr<const nvrtc::NvrtcResult>>>
compileKernelsForArch(const std::vector<GeneratedKernel> &kernels, int sm, int jobs = 2,
                      const std::string &cacheDir = "");

} // namespace kiln

#endif // KILN_CODEGEN_NVRTCCHECK_H
