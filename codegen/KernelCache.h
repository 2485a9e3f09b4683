//===- KernelCache.h - entries of the on-disk kernel cache ------*- C++ -*-===//
//
// Compiled kernels (host-emulation libraries, cubins, PTX) are cached on disk by
// content hash. A cache is trusted only as far as it checks out: every entry
// has a sidecar `<entry>.xxh3` with the checksum of its bytes, written after
// the entry, each through a temporary and a rename. An entry whose sidecar is
// missing (a writer still at work, or an older kiln) is rebuilt; one whose bytes
// do not match (a truncated file, a flipped bit) is removed with a warning on
// stderr and rebuilt, never loaded or shipped in an artifact.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_KERNELCACHE_H
#define KILN_CODEGEN_KERNELCACHE_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <system_error>

namespace kiln {

/// The bytes of cache entry `path` when it is intact; nullopt when it is missing,
/// unverified or damaged (a damaged one is removed, with a warning).
std::optional<std::string> readCacheEntry(llvm::StringRef path);

/// Whether cache entry `path` is intact (for entries used in place, such as a
/// shared object to dlopen); a damaged one is removed, with a warning.
bool verifyCacheEntry(llvm::StringRef path);

/// Records the checksum of entry `path`, already in place (renamed there by its
/// writer). False when it cannot be read or the sidecar not written (the entry
/// then stays unverified and is rebuilt next time).
bool sealCacheEntry(llvm::StringRef path);

/// Writes `bytes` as cache entry `path`: temporary, rename, then the sidecar.
bool writeCacheEntry(llvm::StringRef path, llvm::StringRef bytes);

/// Writes `bytes` to `path` through a temporary beside it that this call
/// creates exclusively (never through a link planted there) and renames over
/// `path`, so a reader sees all of it or none. A failed write (a full disk, a
/// read-only folder) is the returned error, and the temporary is gone: never
/// the process exit that an unchecked llvm::raw_fd_ostream error makes.
std::error_code writeFileAtomically(llvm::StringRef path, llvm::StringRef bytes);

/// Writes `bytes` to `path` in place (created or truncated); the error as above.
std::error_code writeFile(llvm::StringRef path, llvm::StringRef bytes);

} // namespace kiln

#endif // KILN_CODEGEN_KERNELCACHE_H
