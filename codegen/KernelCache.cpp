//===- KernelCache.cpp - checked entries of the on-disk kernel cache ------===//

#include "codegen/KernelCache.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <atomic>

namespace kiln {
namespace {

std::string sidecarOf(llvm::StringRef path) { return (path + ".xxh3").str(); }

std::string checksumOf(llvm::StringRef bytes) {
  std::string hex;
  llvm::raw_string_ostream(hex) << llvm::format_hex_no_prefix(llvm::xxh3_64bits(bytes), 16)
                                << " " << bytes.size();
  return hex;
}

/// Writes `bytes` to the open `fd`, closing it; the stream's error, cleared,
/// so that the stream's destructor never ends the process over it.
std::error_code writeAndClose(int fd, llvm::StringRef bytes) {
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << bytes;
  os.close();
  std::error_code ec = os.error();
  os.clear_error();
  return ec;
}

/// The entry's bytes when its sidecar exists and matches; a mismatch removes
/// both, with a warning.
std::optional<std::string> checked(llvm::StringRef path) {
  auto sidecar = llvm::MemoryBuffer::getFile(sidecarOf(path), /*IsText=*/true);
  if (!sidecar)
    return std::nullopt;
  auto entry = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!entry)
    return std::nullopt;
  llvm::StringRef bytes = (*entry)->getBuffer();
  if (checksumOf(bytes) == (*sidecar)->getBuffer().trim())
    return bytes.str();
  llvm::errs() << "kiln: warning: kernel cache entry " << path
               << " is damaged (its checksum does not match); rebuilding it\n";
  llvm::sys::fs::remove(path);
  llvm::sys::fs::remove(sidecarOf(path));
  return std::nullopt;
}

} // namespace

std::error_code writeFileAtomically(llvm::StringRef path, llvm::StringRef bytes) {
  static std::atomic<unsigned> counter{0};
  std::string temporary = (path + ".tmp" + llvm::Twine(llvm::sys::Process::getProcessId()) + "-" +
                           llvm::Twine(counter++))
                              .str();
  int fd = -1;
  // CD_CreateNew is O_EXCL: a file or link already at the temporary's name
  // (another process's, or planted) is an error, never written through.
  if (std::error_code ec = llvm::sys::fs::openFileForWrite(temporary, fd,
                                                           llvm::sys::fs::CD_CreateNew))
    return ec;
  std::error_code ec = writeAndClose(fd, bytes);
  if (!ec)
    ec = llvm::sys::fs::rename(temporary, path);
  if (ec)
    llvm::sys::fs::remove(temporary);
  return ec;
}

std::error_code writeFile(llvm::StringRef path, llvm::StringRef bytes) {
  int fd = -1;
  if (std::error_code ec =
          llvm::sys::fs::openFileForWrite(path, fd, llvm::sys::fs::CD_CreateAlways))
    return ec;
  return writeAndClose(fd, bytes);
}

std::optional<std::string> readCacheEntry(llvm::StringRef path) { return checked(path); }

bool verifyCacheEntry(llvm::StringRef path) { return checked(path).has_value(); }

bool sealCacheEntry(llvm::StringRef path) {
  auto entry = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!entry)
    return false;
  return !writeFileAtomically(sidecarOf(path), checksumOf((*entry)->getBuffer()));
}

bool writeCacheEntry(llvm::StringRef path, llvm::StringRef bytes) {
  return !writeFileAtomically(path, bytes) && !writeFileAtomically(sidecarOf(path), checksumOf(bytes));
}

} // namespace kiln
