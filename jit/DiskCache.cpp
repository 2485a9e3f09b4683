//===- DiskCache.cpp - the JIT's content-addressed cache on disk ----------===//

#include "jit/DiskCache.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string_view>
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

namespace {
/// What ends every entry: the key (the entry's file name) it was written for,
/// its length, and a mark.
constexpr char kTrailerMark[8] = {'K', 'I', 'L', 'N', 'K', 'E', 'Y', '1'};
constexpr size_t kTrailerFixed = sizeof(uint64_t) + sizeof(kTrailerMark);
} // namespace

std::optional<std::string> DiskCache::foreignParent() const {
  std::vector<std::string> paths;
  if (char cwd[PATH_MAX]; folder_.empty() || folder_[0] != '/')
    paths.push_back(std::string(getcwd(cwd, sizeof(cwd)) ? cwd : "") + "/" + folder_);
  else
    paths.push_back(folder_);
  if (char *real = realpath(folder_.c_str(), nullptr)) {
    paths.push_back(real);
    std::free(real);
  }
  for (std::string path : paths) {
    while (path.size() > 1 && path.back() == '/')
      path.pop_back();
    for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0;
         slash = path.rfind('/', slash - 1)) {
      std::string parent = path.substr(0, slash);
      struct stat st;
      if (stat(parent.c_str(), &st) != 0)
        continue;
      bool othersWrite = (st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX);
      if ((st.st_uid != 0 && st.st_uid != geteuid()) || othersWrite)
        return parent;
    }
  }
  return std::nullopt;
}

absl::Status DiskCache::open() {
  // Each level in turn, as mkdir -p; 0700, since the entries are the user's.
  for (size_t at = 1; at <= folder_.size(); ++at) {
    if (at != folder_.size() && folder_[at] != '/')
      continue;
    std::string prefix = folder_.substr(0, at);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      readable_ = writable_ = false;
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot create the cache folder ", prefix, ": ", std::strerror(errno),
          "; compiling without a cache"));
    }
  }
  struct stat st;
  if (stat(folder_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    readable_ = writable_ = false;
    return absl::FailedPreconditionError(
        absl::StrCat("the cache folder ", folder_, " is not a folder; compiling without a cache"));
  }
  // Entries are code this process will run: a folder another user may write
  // (or owns) could hand it anything, so such a folder is neither read nor
  // written.
  if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    readable_ = writable_ = false;
    return absl::FailedPreconditionError(absl::StrCat(
        "the cache folder ", folder_,
        st.st_uid != geteuid() ? " belongs to another user" : " may be written by other users",
        "; compiling without a cache"));
  }
  // The folders above it too: one another user may write could have the
  // cache folder renamed away and theirs put in its place. Root's and the
  // user's own are trusted, and shared ones with the sticky bit (/tmp: no one
  // renames another's entries there). Both the path as given (its links live
  // in those folders) and as resolved.
  if (std::optional<std::string> unsafe = foreignParent(); unsafe) {
    readable_ = writable_ = false;
    return absl::FailedPreconditionError(
        absl::StrCat("the cache folder ", folder_, " is inside ", *unsafe,
                     ", which other users may write; compiling without a cache"));
  }
  if (access(folder_.c_str(), W_OK) != 0) {
    writable_ = false;
    return absl::FailedPreconditionError(absl::StrCat(
        "the cache folder ", folder_, " is not writable (", std::strerror(errno),
        "); its entries are read, new ones are not kept"));
  }
  return absl::OkStatus();
}

DiskCache::Entry DiskCache::read(const std::string &name) const {
  Entry found;
  if (!readable_)
    return found;
  // O_NOFOLLOW: an entry is a file this JIT wrote, never a link to elsewhere.
  int fd = ::open(path(name).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0)
    return found;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return found;
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
  if (writable_)
    futimens(fd, nullptr);
  close(fd);
  if (got != bytes->size)
    return found;
  // The trailer: the entry must have been written, whole, for this key.
  // Entries of another kiln version or format have other names (the key
  // holds both), so an entry without one was cut short or overwritten.
  const char *data = reinterpret_cast<const char *>(bytes->words.get());
  size_t size = bytes->size;
  uint64_t keyLength = 0;
  if (size >= kTrailerFixed)
    std::memcpy(&keyLength, data + size - kTrailerFixed, sizeof(keyLength));
  if (size < kTrailerFixed ||
      std::memcmp(data + size - sizeof(kTrailerMark), kTrailerMark, sizeof(kTrailerMark)) != 0 ||
      keyLength > size - kTrailerFixed) {
    found.damaged = true;
    return found;
  }
  size_t payload = size - kTrailerFixed - static_cast<size_t>(keyLength);
  std::string_view key(data + payload, static_cast<size_t>(keyLength));
  if (key != name) {
    found.writtenFor = std::string(key.substr(0, 200));
    return found;
  }
  bytes->size = payload;
  found.bytes = std::move(bytes);
  return found;
}

int DiskCache::write(const std::string &name, const AlignedBytes &bytes) const {
  if (!writable_)
    return 0;
  static std::atomic<int> counter{0};
  std::string temporary = absl::StrCat(path(name), ".tmp", getpid(), "-", ++counter);
  // O_EXCL (with O_NOFOLLOW): never through a file or link already there.
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return 0;
  auto put = [&](const void *data, size_t size) {
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::write(fd, static_cast<const char *>(data) + done, size - done);
      if (n <= 0)
        return false;
      done += static_cast<size_t>(n);
    }
    return true;
  };
  uint64_t keyLength = name.size();
  bool ok = put(bytes.data(), bytes.size) && put(name.data(), name.size()) &&
            put(&keyLength, sizeof(keyLength)) && put(kTrailerMark, sizeof(kTrailerMark)) &&
            fsync(fd) == 0;
  close(fd);
  if (!ok || rename(temporary.c_str(), path(name).c_str()) != 0) {
    unlink(temporary.c_str());
    return 0;
  }
  return evict(name);
}

void DiskCache::remove(const std::string &name) const {
  if (writable_)
    unlink(path(name).c_str());
}

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
