//===- DiskCache.h - the JIT's content-addressed cache on disk --*- C++ -*-===//
//
// One file per entry, named by its key, in one folder that processes share.
// Writers write a temporary file and rename it over the entry, so readers see a
// whole entry or none, and two processes filling one key both succeed (the last
// rename wins; both wrote the same bytes). Entries carry their own checksums
// (artifacts and variant packs are sealed): the caller verifies what it reads
// and calls remove() on a damaged one. Reading an entry touches its time, and
// after each write the least recently used entries go until the folder is under
// its byte bound.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_JIT_DISKCACHE_H
#define KILN_JIT_DISKCACHE_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <memory>
#include <string>

namespace kiln::jit {

/// Bytes aligned for FlatBuffers (artifacts and packs are read in place).
struct AlignedBytes {
  std::unique_ptr<uint64_t[]> words;
  size_t size = 0;
  const uint8_t *data() const { return reinterpret_cast<const uint8_t *>(words.get()); }
  static std::shared_ptr<const AlignedBytes> copy(const void *data, size_t size);
};

class DiskCache {
public:
  DiskCache(std::string folder, uint64_t maxBytes) : folder_(std::move(folder)), maxBytes_(maxBytes) {}

  /// Creates the folder; an error when it cannot be made.
  absl::Status open() const;
  /// The entry's bytes, or nullptr when there is none (or it cannot be read).
  std::shared_ptr<const AlignedBytes> read(const std::string &name) const;
  /// Writes the entry atomically, then evicts down to the bound; returns how
  /// many entries were evicted. A failed write only means no reuse.
  int write(const std::string &name, const AlignedBytes &bytes) const;
  /// Removes an entry (damaged, or evicted).
  void remove(const std::string &name) const;
  const std::string &folder() const { return folder_; }

private:
  std::string path(const std::string &name) const { return folder_ + "/" + name; }
  int evict(const std::string &keep) const;
  std::string folder_;
  uint64_t maxBytes_;
};

} // namespace kiln::jit

#endif // KILN_JIT_DISKCACHE_H
