//===- FakeCuda.cpp - a CUDA driver that runs kernels on the host -----------===//
//
// libcuda.so.1 for tests on machines without a GPU: the entry points the runtime
// resolves (runtime/src/cuda/DriverSymbols.inc), with device memory as host
// memory, streams and events as synchronous host operations, and a kernel launch
// as a call of the kernel's host-emulation launcher (`<name>_host(args, grid)`,
// the same cuLaunchKernel-style argument array) found in the shared objects of
// $KILN_FAKE_CUDA_KERNELS (a folder of host-*.so, kiln's kernel cache). Modules'
// images (cubins) are accepted unread, so a variant's specialized cubin runs as
// its kernel's generic code (variants' libraries, hostvar-*.so, are not
// looked in: their code is right only for their shapes). It reports one
// device, sm_90.
//
// Tests put its folder first on LD_LIBRARY_PATH, so the runtime's CUDA executor
// (arena placement, uploads, launches, host fallback, profiles, device buffers)
// runs in CI; numbers come from the same generated kernels as host emulation.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <vector>

struct CUctx_st {};
struct CUmod_st {};
struct CUfunc_st {
  void (*launch)(void **, int64_t);
  std::string name;
};
struct CUevent_st {
  double ms = 0;
};

namespace {
CUctx_st theContext;
CUmod_st theModule;

/// Every host-emulation library in $KILN_FAKE_CUDA_KERNELS, opened once.
const std::vector<void *> &kernelLibraries() {
  static std::vector<void *> libraries = [] {
    std::vector<void *> out;
    const char *dir = std::getenv("KILN_FAKE_CUDA_KERNELS");
    if (!dir)
      return out;
    if (DIR *d = opendir(dir)) {
      while (dirent *e = readdir(d)) {
        std::string name = e->d_name;
        if (name.rfind("host-", 0) == 0 && name.size() > 3 &&
            name.compare(name.size() - 3, 3, ".so") == 0)
          if (void *h = dlopen((std::string(dir) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL))
            out.push_back(h);
      }
      closedir(d);
    }
    return out;
  }();
  return libraries;
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

extern "C" {

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice) {
  std::strncpy(name, "kiln fake CUDA device", static_cast<size_t>(len));
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice) {
  *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char **text) {
  *text = "fake CUDA error";
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  *context = &theContext;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxPushCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent(CUcontext *context) {
  *context = &theContext;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  *module = &theModule;
  return image ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
}
CUresult cuModuleGetFunction(CUfunction *function, CUmodule, const char *name) {
  for (void *library : kernelLibraries())
    if (void *symbol = dlsym(library, (std::string(name) + "_host").c_str())) {
      *function = new CUfunc_st{reinterpret_cast<void (*)(void **, int64_t)>(symbol), name};
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  *pointer = reinterpret_cast<CUdeviceptr>(p);
  return p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree(CUdeviceptr pointer) {
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr to, const void *from, size_t bytes, CUstream) {
  std::memcpy(reinterpret_cast<void *>(to), from, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoHAsync(void *to, CUdeviceptr from, size_t bytes, CUstream) {
  std::memcpy(to, reinterpret_cast<const void *>(from), bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream) {
  std::memmove(reinterpret_cast<void *>(to), reinterpret_cast<const void *>(from), bytes);
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult cuLaunchKernel(CUfunction f, unsigned gridX, unsigned gridY, unsigned gridZ,
                        unsigned blockX, unsigned blockY, unsigned blockZ, unsigned,
                        CUstream, void **args, void **extra) {
  if (!f || gridX == 0 || gridY != 1 || gridZ != 1 || blockX == 0 || blockX > 1024 ||
      blockY != 1 || blockZ != 1 || extra)
    return CUDA_ERROR_INVALID_VALUE;
  // $KILN_FAKE_CUDA_LAUNCH_LOG: one line per launch, "<kernel> <grid> <block>",
  // for tests of launch geometry.
  if (const char *log = std::getenv("KILN_FAKE_CUDA_LAUNCH_LOG")) {
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    if (FILE *file = std::fopen(log, "a")) {
      std::fprintf(file, "%s %u %u\n", f->name.c_str(), gridX, blockX);
      std::fclose(file);
    }
  }
  f->launch(args, gridX);
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = new CUevent_st();
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream) {
  event->ms = nowMs();
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  *ms = static_cast<float>(end->ms - start->ms);
  return CUDA_SUCCESS;
}
// NVRTC opens libcuda.so.1 itself and asks for this (undocumented) table; a
// driver without it must say so rather than be missing.
CUresult cuGetExportTable(const void **table, const CUuuid *) {
  *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuEventDestroy(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}

} // extern "C"
