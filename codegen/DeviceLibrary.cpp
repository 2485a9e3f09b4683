//===- DeviceLibrary.cpp - the embedded device library ---------------------===//

#include "codegen/DeviceLibrary.h"

#include "codegen/KernelCache.h"

#include "absl/strings/str_cat.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

namespace kiln {

const std::string &deviceLibraryText() {
  static const std::string text =
#include "kiln_device.h.inc"
      ;
  return text;
}

std::pair<std::string, std::string> deviceLibraryHeader() {
  return {kDeviceLibraryInclude, deviceLibraryText()};
}

absl::StatusOr<std::string> deviceLibraryIncludeDir(const std::string &cacheDir) {
  const std::string &text = deviceLibraryText();
  std::string hex;
  llvm::raw_string_ostream(hex) << llvm::format_hex_no_prefix(llvm::xxh3_64bits(text), 16);
  llvm::SmallString<256> root(cacheDir);
  llvm::sys::path::append(root, "device-" + hex);
  llvm::SmallString<256> file(root);
  llvm::sys::path::append(file, kDeviceLibraryInclude);
  if (llvm::sys::fs::exists(file))
    return root.str().str();
  if (std::error_code ec = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(file)))
    return absl::InternalError(
        absl::StrCat("cannot create ", file.str().str(), ": ", ec.message()));
  // Written aside and renamed: concurrent compilers (other threads, other
  // processes on one cache) never see half of it.
  if (std::error_code ec = writeFileAtomically(file, text))
    return absl::InternalError(absl::StrCat("cannot write ", file.str().str(), ": ", ec.message()));
  return root.str().str();
}

} // namespace kiln
