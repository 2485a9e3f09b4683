//===- DriverCalls.h - CUDA driver calls a test makes directly -*- C++ -*-===//
//
// The driver entry points the tests that drive the CUDA driver themselves
// (FakeCudaTest's own kernel, TritonHostTest's GPU-memory buffers) call,
// looked up in the libcuda.so.1 on the library path: the fake driver in the
// fake-CUDA ctests (test/runtime/fake_cuda), the GPU's elsewhere.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_RUNTIME_DRIVERCALLS_H
#define KILN_TEST_RUNTIME_DRIVERCALLS_H

#include <cuda.h>
#include <dlfcn.h>

namespace kiln::test {

struct DriverCalls {
  void *handle = nullptr;
  /// Set only by the fake driver: a test adds kernels of its own with it.
  int (*addKernels)(const char *library) = nullptr;
  decltype(&cuInit) init = nullptr;
  decltype(&cuDeviceGetCount) count = nullptr;
  decltype(&cuDevicePrimaryCtxRetain) retain = nullptr;
  decltype(&cuDevicePrimaryCtxRelease) release = nullptr;
  decltype(&cuDevicePrimaryCtxReset) reset = nullptr;
  decltype(&cuCtxPushCurrent) push = nullptr;
  decltype(&cuCtxPopCurrent) pop = nullptr;
  decltype(&cuModuleLoadData) loadModule = nullptr;
  decltype(&cuModuleGetFunction) getFunction = nullptr;
  decltype(&cuMemAlloc) alloc = nullptr;
  decltype(&cuMemcpyHtoDAsync) copyIn = nullptr;
  decltype(&cuMemcpyDtoHAsync) copyOut = nullptr;
  decltype(&cuStreamSynchronize) synchronize = nullptr;
  decltype(&cuLaunchKernel) launch = nullptr;

  /// The driver's calls; `complete()` false when there is no driver or it
  /// lacks one of them.
  static DriverCalls open() {
    DriverCalls d;
    d.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d.handle)
      return d;
    d.addKernels = reinterpret_cast<int (*)(const char *)>(dlsym(d.handle, "kiln_fake_cuda_add_kernels"));
    // cuda.h maps most names to their versioned symbols (cuMemAlloc is
    // cuMemAlloc_v2): the name is spelled after that expansion.
#define KILN_NAME(f) #f
#define KILN_CALL(member, f) d.member = reinterpret_cast<decltype(&f)>(dlsym(d.handle, KILN_NAME(f)))
    KILN_CALL(init, cuInit);
    KILN_CALL(count, cuDeviceGetCount);
    KILN_CALL(retain, cuDevicePrimaryCtxRetain);
    KILN_CALL(release, cuDevicePrimaryCtxRelease);
    KILN_CALL(reset, cuDevicePrimaryCtxReset);
    KILN_CALL(push, cuCtxPushCurrent);
    KILN_CALL(pop, cuCtxPopCurrent);
    KILN_CALL(loadModule, cuModuleLoadData);
    KILN_CALL(getFunction, cuModuleGetFunction);
    KILN_CALL(alloc, cuMemAlloc);
    KILN_CALL(copyIn, cuMemcpyHtoDAsync);
    KILN_CALL(copyOut, cuMemcpyDtoHAsync);
    KILN_CALL(synchronize, cuStreamSynchronize);
    KILN_CALL(launch, cuLaunchKernel);
#undef KILN_CALL
#undef KILN_NAME
    return d;
  }
  bool complete() const {
    return init && count && retain && release && reset && push && pop && loadModule &&
           getFunction && alloc && copyIn && copyOut && synchronize && launch;
  }
  bool fake() const { return addKernels != nullptr; }
};

} // namespace kiln::test

#endif // KILN_TEST_RUNTIME_DRIVERCALLS_H
