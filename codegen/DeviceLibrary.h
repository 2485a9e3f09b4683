//===- DeviceLibrary.h - the device library the kernels include -*- C++ -*-===//
//
// Generated kernels include "kiln/device/kiln_device.h". The compiler carries
// that header's text (embedded at build time), so NVRTC gets it by content and
// the host compiler from a copy in the kernel cache: an installed kiln-compile
// works after its prefix moves, with no source tree around.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_DEVICELIBRARY_H
#define KILN_CODEGEN_DEVICELIBRARY_H

#include "absl/status/statusor.h"

#include <string>
#include <utility>

namespace kiln {

/// The include name kernels use for the device library.
constexpr const char *kDeviceLibraryInclude = "kiln/device/kiln_device.h";

/// The device library's text, as this compiler was built with it.
const std::string &deviceLibraryText();

/// (include name, text) for NvrtcOptions::headers.
std::pair<std::string, std::string> deviceLibraryHeader();

/// A folder holding kiln/device/kiln_device.h for a host compiler's -I: a copy
/// under `cacheDir`, named by its content, written once.
absl::StatusOr<std::string> deviceLibraryIncludeDir(const std::string &cacheDir);

} // namespace kiln

#endif // KILN_CODEGEN_DEVICELIBRARY_H
