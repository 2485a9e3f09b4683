//===- HostLibrary.h - host-emulation kernels from artifact bytes -*- C++ -*-===//
//
// An artifact carries its host-emulation shared objects as bytes. They are loaded
// through an anonymous memory file (memfd), never a path someone else could
// replace, once per process per distinct content: artifacts built from the same
// kernels (kiln-conformance compiles hundreds) share one loaded copy.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_HOSTLIBRARY_H
#define KILN_RUNTIME_HOSTLIBRARY_H

#include "absl/status/statusor.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace kiln::rt {

using HostLauncher = void (*)(void **args, int64_t grid);

/// Blocks for a host-emulation launch of a kernel with `items` result items and
/// `work` elements read and written: one (no OpenMP team: a team per tiny kernel
/// costs more than the kernel) for small kernels, else enough to spread over the
/// host's threads; kernels stride over the rest. The runtime's host executor and
/// the interpreter's kernel hook (codegen/HostEmulation.cpp) both launch this way.
inline int64_t hostGrid(int64_t items, int64_t work) {
  constexpr int64_t kParallelWork = 1 << 15;
  return work < kParallelWork ? 1 : std::max<int64_t>(1, std::min<int64_t>(items, 64));
}

/// The dlopen handle of the shared object in `data` (loaded on first use).
absl::StatusOr<void *> loadHostLibrary(const uint8_t *data, size_t size);

/// The launcher of kernel `name` (`<name>_host`) in a loaded library.
absl::StatusOr<HostLauncher> hostLauncher(void *library, const std::string &name);

} // namespace kiln::rt

#endif // KILN_RUNTIME_HOSTLIBRARY_H
