//===- DiskCache.h - the JIT's content-addressed cache on disk --*- C++ -*-===//
//
// One file per entry, named by its key, in one folder that the processes of
// one user share (docs/runtime.md, "The JIT's cache": who may write it, what a
// reader checks). Writers write a temporary file, created exclusively, and
// rename it over the entry, so readers see a whole entry or none, and two
// processes filling one key both succeed (the last rename wins; both wrote the
// same bytes). An entry ends with the key it was written for, and a read
// refuses one whose key is not the one asked for: a file copied or renamed
// to another entry's name is never taken for it. Entries carry their own
// checksums (artifacts and variant packs are sealed): the caller verifies what
// it reads and calls remove() on a damaged one. Reading an entry touches its
// time, and after each write the least recently used entries go until the
// folder is under its byte bound.
//
// A folder this process cannot write (read-only, a full disk) is still read,
// but written never; one another user owns or may write, or one it cannot
// make, is not used at all.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_JIT_DISKCACHE_H
#define KILN_JIT_DISKCACHE_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <memory>
#include <optional>
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

  /// Creates the folder and decides how it is used: read and written (the
  /// process's user owns it and no other user may write it), read only (it
  /// exists but this process cannot write it, or others could), or not at all
  /// (it cannot be made). OK, or a warning saying why it is not written.
  absl::Status open();
  /// Whether entries are written (open() found the folder the user's own and
  /// writable).
  bool writable() const { return writable_; }
  /// What read() found.
  struct Entry {
    /// The entry's bytes (without its trailer); null when there is none, it
    /// cannot be read, or it is refused.
    std::shared_ptr<const AlignedBytes> bytes;
    /// Refused: cut short or without its trailer (`damaged`), or written for
    /// another key (`writtenFor`, that key).
    bool damaged = false;
    std::string writtenFor;
  };
  Entry read(const std::string &name) const;
  /// Writes the entry atomically, then evicts down to the bound; returns how
  /// many entries were evicted. A failed write only means no reuse.
  int write(const std::string &name, const AlignedBytes &bytes) const;
  /// Removes an entry (damaged, or evicted).
  void remove(const std::string &name) const;
  const std::string &folder() const { return folder_; }

private:
  /// A folder above the cache folder (as given or as resolved) that another
  /// user owns or may write, unless it has the sticky bit; nullopt: none.
  std::optional<std::string> foreignParent() const;
  std::string path(const std::string &name) const { return folder_ + "/" + name; }
  int evict(const std::string &keep) const;
  std::string folder_;
  uint64_t maxBytes_;
  bool readable_ = true, writable_ = true;
};

} // namespace kiln::jit

#endif // KILN_JIT_DISKCACHE_H
