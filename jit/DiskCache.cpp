//===- DiskCache.cpp - the JIT's content-addressed cache on disk ----------===//

#include "jit/DiskCache.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace kiln::jit {

std::shared_ptr<const AlignedBytes> AlignedBytes::copy(const void *data, size_t size) {
  auto bytes = std::make_shared<AlignedBytes>();
  bytes->words.reset(new uint64_t[size / 8 + 1]);
  bytes->size = size;
  if (size)
    std::memcpy(bytes->words.get(), data, size);
  return bytes;
}

absl::Status DiskCache::open() const {
  // Each level in turn, as mkdir -p.
  for (size_t at = 1; at <= folder_.size(); ++at) {
    if (at != folder_.size() && folder_[at] != '/')
      continue;
    std::string prefix = folder_.substr(0, at);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return absl::InternalError(
          absl::StrCat("cannot create the cache folder ", prefix, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::shared_ptr<const AlignedBytes> DiskCache::read(const std::string &name) const {
  int fd = ::open(path(name).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return nullptr;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return nullptr;
  }
  auto bytes = std::make_shared<AlignedBytes>();
  bytes->size = static_cast<size_t>(st.st_size);
  bytes->words.reset(new uint64_t[bytes->size / 8 + 1]);
  size_t got = 0;
  while (got < bytes->size) {
    ssize_t n = pread(fd, reinterpret_cast<char *>(bytes->words.get()) + got, bytes->size - got,
                      static_cast<off_t>(got));
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  // Recently used: eviction goes by modification time, so a hit refreshes it.
  futimens(fd, nullptr);
  close(fd);
  if (got != bytes->size)
    return nullptr;
  return bytes;
}

int DiskCache::write(const std::string &name, const AlignedBytes &bytes) const {
  static std::atomic<int> counter{0};
  std::string temporary = absl::StrCat(path(name), ".tmp", getpid(), "-", ++counter);
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return 0;
  size_t put = 0;
  while (put < bytes.size) {
    ssize_t n = ::write(fd, bytes.data() + put, bytes.size - put);
    if (n <= 0)
      break;
    put += static_cast<size_t>(n);
  }
  bool ok = put == bytes.size && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(temporary.c_str(), path(name).c_str()) != 0) {
    unlink(temporary.c_str());
    return 0;
  }
  return evict(name);
}

void DiskCache::remove(const std::string &name) const { unlink(path(name).c_str()); }

int DiskCache::evict(const std::string &keep) const {
  struct Entry {
    std::string name;
    uint64_t bytes;
    timespec time;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  DIR *dir = opendir(folder_.c_str());
  if (!dir)
    return 0;
  while (dirent *e = readdir(dir)) {
    std::string name = e->d_name;
    // Only finished entries: another process's temporary is its own business.
    if (name.find(".tmp") != std::string::npos ||
        !(name.rfind("model-", 0) == 0 || name.rfind("variant-", 0) == 0))
      continue;
    struct stat st;
    if (stat(path(name).c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    entries.push_back({name, static_cast<uint64_t>(st.st_size), st.st_mtim});
    total += static_cast<uint64_t>(st.st_size);
  }
  closedir(dir);
  if (total <= maxBytes_)
    return 0;
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.time.tv_sec != b.time.tv_sec ? a.time.tv_sec < b.time.tv_sec
                                          : a.time.tv_nsec < b.time.tv_nsec;
  });
  int evicted = 0;
  for (const Entry &e : entries) {
    if (total <= maxBytes_)
      break;
    if (e.name == keep)
      continue;
    if (unlink(path(e.name).c_str()) == 0) {
      total -= e.bytes;
      ++evicted;
    }
  }
  return evicted;
}

} // namespace kiln::jit
