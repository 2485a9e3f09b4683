//===- CudaDriver.cpp - dlopen the CUDA driver ----------------------------===//

#include "cuda/CudaDriver.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include <dlfcn.h>

namespace kiln::rt {

absl::StatusOr<const CudaDriver *> CudaDriver::load() {
  void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return absl::UnavailableError(
        absl::StrCat("no CUDA driver: cannot load libcuda.so.1 (", dlerror(), ")"));
  auto *driver = new CudaDriver();
  driver->handle = handle;
// The exported name is the one cuda.h's macros map `name` to (cuMemAlloc_v2, ...),
// so the name is expanded before it is spelled.
#define KILN_CU_SPELL(name) #name
#define KILN_CU_EXPANDED(name) KILN_CU_SPELL(name)
#define KILN_CU_SYMBOL(name)                                                           \
  driver->name = reinterpret_cast<decltype(&::name)>(dlsym(handle, KILN_CU_EXPANDED(name))); \
  if (!driver->name)                                                                   \
    return absl::UnavailableError("the CUDA driver lacks " KILN_CU_EXPANDED(name) "; it is too old");
#include "cuda/DriverSymbols.inc"
#undef KILN_CU_SYMBOL
  CUresult initResult = driver->cuInit(0);
  if (initResult != CUDA_SUCCESS)
    return absl::UnavailableError(driver->describe("cuInit", initResult));
  return driver;
}

absl::StatusOr<const CudaDriver *> CudaDriver::get() {
  // Loaded once; the driver stays for the life of the process, as CUDA expects.
  static const absl::StatusOr<const CudaDriver *> driver = load();
  return driver;
}

std::string CudaDriver::describe(const char *call, CUresult result) const {
  const char *message = nullptr;
  if (cuGetErrorString)
    cuGetErrorString(result, &message);
  return absl::StrCat(call, " failed: error ", static_cast<int>(result),
                      message ? absl::StrCat(" (", message, ")") : "");
}

absl::StatusOr<int> CudaDriver::deviceCount() const {
  int count = 0;
  CUresult r = cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    return absl::UnavailableError(describe("cuDeviceGetCount", r));
  if (count == 0)
    return absl::UnavailableError("no CUDA device: the driver reports none");
  return count;
}

} // namespace kiln::rt
