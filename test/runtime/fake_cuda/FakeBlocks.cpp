//===- FakeBlocks.cpp - the fake driver's kernels at a launch's block size -===//
//
// FakeBlocks.h says what this is. Builds run outside the driver's lock (they
// take seconds); one build at a time in a process, and a build writes aside
// and renames, so processes sharing a cache never load half a library.
//
//===----------------------------------------------------------------------===//

#include "FakeBlocks.h"

#include <dlfcn.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

extern char **environ;

namespace kiln::fake {
namespace {

/// One library at one block size: its handle, or why it could not be built.
struct Built {
  std::string source; ///< the text of its kernels whose threads meet
  void *handle = nullptr;
  char *fault = nullptr;
  std::mutex launches;
  std::string error;
  std::map<std::string, std::unique_ptr<BlockLauncher>> kernels;
};

std::mutex buildLock;
std::map<std::pair<std::string, unsigned>, std::unique_ptr<Built>> &builds() {
  static auto *all = new std::map<std::pair<std::string, unsigned>, std::unique_ptr<Built>>();
  return *all; // never destroyed: workers may launch while the process exits
}

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

/// Runs argv[0] with argv; its exit status, or -1 when it cannot start.
int runCompiler(const std::vector<std::string> &argv) {
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0)
    return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Builds (or finds in the cache) `library`'s source at `block` threads.
void build(const std::string &library, unsigned block, Built &out) {
  const std::string so = ".so";
  size_t slash = library.rfind('/');
  std::string folder = slash == std::string::npos ? "." : library.substr(0, slash);
  std::string name = library.substr(slash == std::string::npos ? 0 : slash + 1);
  // host-<hash>.so, or a variant's hostvar-<hash>.so (built with its defines,
  // which its .flags hold).
  size_t dash = name.find('-');
  if ((name.rfind("host-", 0) != 0 && name.rfind("hostvar-", 0) != 0) ||
      name.size() <= dash + 1 + so.size()) {
    out.error = library + " is not a host-emulation library";
    return;
  }
  std::string stem = library.substr(0, library.size() - so.size());
  std::string target = folder + "/fakeblock" + std::to_string(block) + "-" +
                       name.substr(0, name.size() - so.size()) + so;
  {
    std::ifstream threads(stem + ".threads.cpp");
    if (!threads) {
      out.error = library + " has no .threads.cpp beside it to build at " +
                  std::to_string(block) + " threads per block (a cache from an older kiln: compile again)";
      return;
    }
    out.source.assign(std::istreambuf_iterator<char>(threads), std::istreambuf_iterator<char>());
  }
  if (out.source.find("__global__") == std::string::npos)
    return; // none of its kernels' threads meet: nothing to build
  if (!exists(target)) {
    std::ifstream flags(stem + ".flags");
    std::vector<std::string> argv;
    for (std::string line; std::getline(flags, line);) {
      // The threads are this build's own, and it needs no OpenMP (blocks run
      // in order). -O0: these builds are on a test suite's critical path
      // (one at a time, a launch waiting), and at the suites' sizes the
      // kernels' run time is the smaller cost (the fake-CUDA static
      // conformance: 43 s warm with the fibers, 39 s one thread per block).
      if (line.empty() || line.rfind("-DKILN_HOST_BLOCK_THREADS=", 0) == 0 || line == "-pthread" ||
          line == "-fopenmp")
        continue;
      argv.push_back(line.size() == 3 && line.rfind("-O", 0) == 0 ? "-O0" : line);
    }
    if (argv.empty()) {
      out.error = library + " has no .flags beside it to build at " + std::to_string(block) +
                  " threads per block (a cache from an older kiln: compile again)";
      return;
    }
    // Unique to this build: processes in other PID namespaces may share the cache.
    static unsigned builds = 0;
    std::string temporary = target + ".tmp" + std::to_string(getpid()) + "-" +
                            std::to_string(reinterpret_cast<uintptr_t>(&out)) + "-" +
                            std::to_string(++builds) + "-" + std::to_string(time(nullptr));
    argv.insert(argv.end(), {"-pthread", "-DKILN_HOST_BLOCK_THREADS=" + std::to_string(block), "-o",
                             temporary, stem + ".threads.cpp"});
    int status = runCompiler(argv);
    if (status != 0) {
      unlink(temporary.c_str());
      out.error = "cannot build " + stem + ".threads.cpp at " + std::to_string(block) +
                  " threads per block (" + argv[0] + " exit " + std::to_string(status) + ")";
      return;
    }
    if (rename(temporary.c_str(), target.c_str()) != 0) {
      unlink(temporary.c_str());
      out.error = "cannot rename the build of " + stem + ".threads.cpp to " + target;
      return;
    }
  }
  out.handle = dlopen(target.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!out.handle) {
    out.error = std::string("cannot load ") + target + ": " + dlerror();
    return;
  }
  out.fault = static_cast<char *>(dlsym(out.handle, "kiln_host_block_fault"));
  auto *checked = static_cast<int *>(dlsym(out.handle, "kiln_host_block_fault_checked"));
  if (!out.fault || !checked) {
    out.error = target + " does not report barrier faults (kiln_device.h is older than the driver)";
    return;
  }
  *checked = 1; // faults come back here instead of aborting the process
}

} // namespace

std::string BlockLauncher::run(void **args, int64_t grid) const {
  std::lock_guard<std::mutex> lock(*static_cast<std::mutex *>(lock_));
  fault_[0] = '\0';
  launch_(args, grid);
  return fault_;
}

const BlockLauncher *blockLauncher(const std::string &library, const std::string &kernel,
                                   unsigned block, std::string &error) {
  std::lock_guard<std::mutex> lock(buildLock);
  std::unique_ptr<Built> &slot = builds()[{library, block}];
  if (!slot) {
    slot = std::make_unique<Built>();
    build(library, block, *slot);
  }
  Built &built = *slot;
  if (!built.error.empty()) {
    error = built.error;
    return nullptr;
  }
  // The build holds exactly the kernels whose threads meet: one it lacks
  // (or a library with none, never built) runs its own launcher.
  if (!built.handle)
    return nullptr;
  // Looked up once per kernel; a null entry: its threads never meet.
  auto [it, added] = built.kernels.try_emplace(kernel);
  if (added)
    if (auto launch = reinterpret_cast<BlockLauncher::Launch>(
            dlsym(built.handle, (kernel + "_host").c_str())))
      it->second = std::make_unique<BlockLauncher>(launch, built.fault, &built.launches);
  return it->second.get();
}

} // namespace kiln::fake
