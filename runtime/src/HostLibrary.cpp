//===- HostLibrary.cpp - dlopen from memory -------------------------------===//

#include "HostLibrary.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#include <mutex>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

namespace kiln::rt {

absl::StatusOr<void *> loadHostLibrary(const uint8_t *data, size_t size) {
  if (!data || size < 4 || std::string(reinterpret_cast<const char *>(data), 4) != "\x7f" "ELF")
    return absl::InvalidArgumentError("the artifact's host-emulation library is not a shared object");
  // Loaded libraries stay for the life of the process: kernels' OpenMP state and
  // any model still holding a launcher would not survive an unload.
  static std::mutex mutex;
  static auto *loaded = new absl::flat_hash_map<std::string, void *>();
  std::string key(reinterpret_cast<const char *>(data), size);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded->find(key); it != loaded->end())
    return it->second;
  int fd = memfd_create("kiln-host-kernels", MFD_CLOEXEC);
  if (fd < 0)
    return absl::InternalError("memfd_create failed: cannot stage the host-emulation library");
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) {
      close(fd);
      return absl::InternalError("cannot write the host-emulation library to its memory file");
    }
    written += static_cast<size_t>(n);
  }
  std::string path = absl::StrCat("/proc/self/fd/", fd);
  // The memory file stays open: glibc recognizes an already-loaded object by its
  // path, so a closed and reused descriptor number would return the library
  // loaded before it instead of this one.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load the artifact's host-emulation library: ", dlerror()));
  }
  loaded->emplace(std::move(key), handle);
  return handle;
}

absl::StatusOr<artifact::HostLauncher> hostLauncher(void *library, const std::string &name) {
  void *symbol = dlsym(library, (name + "_host").c_str());
  if (!symbol)
    return absl::InvalidArgumentError(
        absl::StrCat("corrupt artifact: its host-emulation library lacks kernel ", name));
  return reinterpret_cast<artifact::HostLauncher>(symbol);
}

} // namespace kiln::rt
