//===- CudaDriver.h - the CUDA driver, loaded at run time -------*- C++ -*-===//
//
// The runtime never links libcuda: a machine without a GPU has none, and the runtime
// must still load there (host emulation, or a clear "no CUDA device" error). The
// driver is opened with dlopen once per process and its entry points resolved
// through the symbol table in DriverSymbols.inc.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDADRIVER_H
#define KILN_RUNTIME_CUDA_CUDADRIVER_H


#include "absl/status/statusor.h"

#include <cuda.h>

#include <string>

namespace kiln::rt {

class CudaDriver {
public:
  /// The process-wide driver, loaded and initialized on first use. Fails with
  /// UNAVAILABLE when libcuda is missing, lacks a symbol, or cuInit fails.
  static absl::StatusOr<const CudaDriver *> get();

#define KILN_CU_SYMBOL(name) decltype(&::name) name = nullptr;
#include "cuda/DriverSymbols.inc"
#undef KILN_CU_SYMBOL

  /// "cuFoo failed: CUDA_ERROR_X (message)" for a failed driver call.
  std::string describe(const char *call, CUresult result) const;

  /// Number of devices the driver reports.
  absl::StatusOr<int> deviceCount() const;

private:
  CudaDriver() = default;
  void *handle = nullptr;
  static absl::StatusOr<const CudaDriver *> load();
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_CUDADRIVER_H
