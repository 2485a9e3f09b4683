//===- DeviceLibrary.cpp - the embedded device library ---------------------===//

#include "codegen/DeviceLibrary.h"

#include "absl/strings/str_cat.h"

#include <atomic>
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
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
  // Written to a temporary of this process and thread and renamed: concurrent
  // compilers (other threads, other processes on one cache) never see half of
  // it, and never rename each other's temporary away.
  static std::atomic<int> counter{0};
  std::string temporary = absl::StrCat(file.str().str(), ".tmp",
                                       llvm::sys::Process::getProcessId(), "-", ++counter);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temporary, ec);
    if (ec)
      return absl::InternalError(absl::StrCat("cannot write ", temporary, ": ", ec.message()));
    os << text;
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, file)) {
    llvm::sys::fs::remove(temporary);
    return absl::InternalError(absl::StrCat("cannot write ", file.str().str(), ": ", ec.message()));
  }
  return root.str().str();
}

} // namespace kiln
