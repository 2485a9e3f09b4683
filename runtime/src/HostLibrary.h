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

#include "kiln/artifact/HostLaunch.h"

#include "absl/status/statusor.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace kiln::rt {

/// The dlopen handle of the shared object in `data` (loaded on first use).
absl::StatusOr<void *> loadHostLibrary(const uint8_t *data, size_t size);

/// The launcher of kernel `name` (`<name>_host`) in a loaded library.
absl::StatusOr<artifact::HostLauncher> hostLauncher(void *library, const std::string &name);

} // namespace kiln::rt

#endif // KILN_RUNTIME_HOSTLIBRARY_H
