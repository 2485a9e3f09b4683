//===- BufferPool.h - buffers reused across runs ----------------*- C++ -*-===//
//
// Every run needs an arena (and, on a GPU, input and dynamic buffers); allocating
// them per call costs a page-faulting malloc on the host and a synchronizing
// cuMemAlloc on the device. A pool keeps a few freed buffers and hands back the
// smallest that fits. Thread-safe: concurrent runs take different buffers.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_BUFFERPOOL_H
#define KILN_RUNTIME_BUFFERPOOL_H

#include "absl/status/statusor.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <vector>

namespace kiln::rt {

template <typename Handle> class BufferPool {
public:
  using Allocate = std::function<absl::StatusOr<Handle>(size_t bytes)>;
  using Release = std::function<void(Handle)>;

  /// At most `keep` freed buffers wait for reuse; the rest are released.
  BufferPool(Allocate allocate, Release release, size_t keep = 8)
      : allocate(std::move(allocate)), release(std::move(release)), keep(keep) {}
  ~BufferPool() {
    for (auto &[handle, size] : idle)
      release(handle);
  }
  BufferPool(const BufferPool &) = delete;
  BufferPool &operator=(const BufferPool &) = delete;

  /// A buffer of at least `bytes`, and its actual size.
  absl::StatusOr<std::pair<Handle, size_t>> take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto best = idle.end();
      for (auto it = idle.begin(); it != idle.end(); ++it)
        if (it->second >= bytes && (best == idle.end() || it->second < best->second))
          best = it;
      if (best != idle.end()) {
        auto found = *best;
        idle.erase(best);
        return found;
      }
    }
    absl::StatusOr<Handle> fresh = allocate(bytes);
    if (!fresh.ok())
      return fresh.status();
    return std::make_pair(*fresh, bytes);
  }

  /// Returns a buffer from take().
  void give(Handle handle, size_t size) {
    std::lock_guard<std::mutex> lock(mutex);
    idle.push_back({handle, size});
    if (idle.size() > keep) {
      // Drop the smallest: large arenas are the costly ones to remake.
      auto smallest = std::min_element(idle.begin(), idle.end(),
                                       [](auto &a, auto &b) { return a.second < b.second; });
      release(smallest->first);
      idle.erase(smallest);
    }
  }

private:
  Allocate allocate;
  Release release;
  size_t keep;
  std::mutex mutex;
  std::vector<std::pair<Handle, size_t>> idle;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_BUFFERPOOL_H
