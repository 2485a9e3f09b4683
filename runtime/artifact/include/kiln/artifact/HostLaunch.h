//===- HostLaunch.h - how host emulation launches a kernel ------*- C++ -*-===//
//
// The launch policy of host emulation, shared by the runtime's host executor and
// the compiler's interpreter hook (codegen/HostEmulation.cpp), so both run the
// generated kernels the same way.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_HOSTLAUNCH_H
#define KILN_ARTIFACT_HOSTLAUNCH_H

#include <algorithm>
#include <cstdint>

namespace kiln::artifact {

/// The entry point every generated kernel has for host emulation:
/// `<kernel>_host(void **args, int64_t grid)`, args as cuLaunchKernel takes them.
using HostLauncher = void (*)(void **args, int64_t grid);

/// Blocks for a host-emulation launch of a kernel with `items` result items and
/// `work` elements read and written: one (no OpenMP team: a team per tiny kernel
/// costs more than the kernel) for small kernels, else enough to spread over the
/// host's threads; kernels stride over the rest.
inline int64_t hostGrid(int64_t items, int64_t work) {
  constexpr int64_t kParallelWork = 1 << 15;
  return work < kParallelWork ? 1 : std::max<int64_t>(1, std::min<int64_t>(items, 64));
}

/// What a kernel's data-error code (kiln_device.h KILN_ERROR_*, written to its
/// step's error word) means, worded as the reference kernels word the failure.
/// Both halves report kernel errors with it.
inline const char *kernelErrorText(int32_t code) {
  switch (code) {
  case 1: return "an index is out of range for the dim it indexes";
  case 2: return "integer division by zero";
  case 3: return "arg_reduce over an empty axis";
  case 4: return "a buffer is not aligned to the bytes the kernel loads at once (a view at an odd "
                 "offset)";
  default: return "the kernel reported an unknown error";
  }
}

} // namespace kiln::artifact

#endif // KILN_ARTIFACT_HOSTLAUNCH_H
