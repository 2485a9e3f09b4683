//===- FakeCuda.cpp - a CUDA driver that runs kernels on the host -----------===//
//
// libcuda.so.1 for tests on machines without a GPU: the entry points the runtime
// resolves (runtime/src/cuda/DriverSymbols.inc), as strict as the real driver
// where kiln could go wrong, so a defect a GPU would show fails here first:
//
// - Device memory is not host memory. cuMemAlloc hands out addresses of a
//   reservation the process cannot touch (PROT_NONE): a host read or write of
//   a device pointer faults, as it does beside a real GPU. The bytes live in a
//   separate host mapping that only this driver's copies, its kernel launches
//   and the library doubles (kiln_fake_cuda_host_view) reach.
// - Streams run asynchronously, in order, each on a worker thread of its own.
//   A call returns before its work has run; only a synchronization (stream,
//   event) says it has. The legacy stream (null) waits for earlier work of
//   every blocking stream of its context and they wait for its, as CUDA
//   defines; non-blocking streams do not. Events complete when the stream
//   reaches them (cuStreamWaitEvent orders another stream after one):
//   cuEventElapsedTime on one that has not is CUDA_ERROR_NOT_READY.
// - Contexts are real: driver calls need a current context (cuCtxPushCurrent),
//   and a primary context is reset when its last retain is released (its
//   memory unmapped).
// - Capture follows CUDA's rules: while a stream captures, its work is recorded
//   (a launch's parameters as they are at the call); a synchronization of it,
//   or an allocation or free on a thread whose capture is not relaxed (or on
//   any thread while a global-mode capture runs), invalidates the capture; and
//   while a blocking stream captures, the legacy stream is unusable: using it
//   fails with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates the capture.
// - Errors a GPU gives: asynchronous, sticky faults (a kernel touching memory
//   that is not its context's, or an injected fault) poison the context, and
//   every later call in it returns CUDA_ERROR_ILLEGAL_ADDRESS until it is
//   reset; allocations beyond the device's memory fail.
//
// Kernel launches call the kernel's host-emulation launcher
// (`<name>_host(args, grid)`, the same cuLaunchKernel-style argument array)
// from the shared objects of $KILN_FAKE_CUDA_KERNELS (host-*.so, kiln's kernel
// cache; looked for again when a kernel is not found, since a process may
// build them as it runs), with every parameter that points into the context's device memory
// translated to its host bytes at the time the kernel runs. A kernel whose
// threads meet (a barrier, shared memory, a warp shuffle) runs at its launch's
// real block size: its source built again at that size (FakeBlocks.h), its
// threads meeting at real barriers; a barrier they do not all reach is a
// sticky CUDA_ERROR_LAUNCH_FAILED. Other kernels compute the same at any block
// size and run as host emulation built them. A block over 256 threads (kiln's
// kernels are built for at most that) is CUDA_ERROR_INVALID_VALUE. A module
// holds the entry points its image defines (a cubin's ELF function symbols, a
// PTX text's .entry names; any other image is CUDA_ERROR_INVALID_IMAGE), and
// cuModuleGetFunction of another name is CUDA_ERROR_NOT_FOUND, as on a GPU. A
// variant's entry point (kiln/artifact/EntryName.h: the kernel's name tagged
// with the values it was built for) runs that variant's own host code
// (hostvar-*.so) when a library has it, and its kernel's generic host code
// otherwise (right for every shape; the JIT builds a variant's cubins alone).
//
// Environment:
//   KILN_FAKE_CUDA_DEVICES=N    devices to report (default 1), each sm_90
//   KILN_FAKE_CUDA_MEMORY=BYTES memory per device (default 80 GiB)
//   KILN_FAKE_CUDA_FAULTS=LIST  faults to inject, comma-separated, each
//                               counted over the process from 1 (a test can
//                               set them again: kiln_fake_cuda_set_faults):
//     alloc:N   the Nth cuMemAlloc fails (CUDA_ERROR_OUT_OF_MEMORY)
//     launch:N  the Nth cuLaunchKernel is refused (LAUNCH_OUT_OF_RESOURCES)
//     kernel:N  the Nth kernel to run faults: asynchronous and sticky
//               (CUDA_ERROR_ILLEGAL_ADDRESS from the next call in its context)
//     cublaslt-heuristic:N, cublaslt-matmul:N  (FakeCublasLt.cpp says)
//   KILN_FAKE_CUDA_LAUNCH_LOG   a line per kernel run, "<kernel> <grid> <block>"
//   KILN_FAKE_CUDA_ONE_THREAD   runs every block as one thread, as the host
//                               libraries are built (to tell a block-size
//                               defect from another)
//   KILN_FAKE_CUDA_GRAPH_LOG    a line per capture ended and graph launched,
//                               "capture <nodes>" / "replay <nodes>"
//   KILN_FAKE_CUDA_ALLOC_FILL=B every byte of fresh device memory is B (0 to
//                               255; default 0, as fresh pages are): a real
//                               allocation's contents are whatever was there,
//                               and 255 makes a float read before any write
//                               NaN
//
// Tests put its folder first on LD_LIBRARY_PATH (scripts/with-fake-cuda.sh),
// so the runtime's CUDA executor runs in CI; numbers come from the same
// generated kernels as host emulation. What it does not model: blocks running
// at once (they run one after another, and a block's threads as fibers
// between barriers: a race that needs two threads running together, rather
// than a missing barrier, is not seen), memory bandwidth or timing, pinned
// host memory.
//
//===----------------------------------------------------------------------===//

#include "FakeBlocks.h"
#include "kiln/artifact/EntryName.h"

#include <cuda.h>
#include <elf.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dirent.h>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

struct CUstream_st;

/// Work on a stream: run by its worker, in order. It gets its context.
using Node = std::function<void()>;

struct CUctx_st {
  int device = 0;
  int retains = 0;
  bool live = true;
  /// The sticky error of an asynchronous fault; every later call returns it.
  CUresult sticky = CUDA_SUCCESS;
  CUstream_st *legacy = nullptr;
  std::vector<CUstream_st *> streams; ///< blocking and non-blocking, not legacy
  size_t allocated = 0;
};
struct CUmod_st {
  std::set<std::string> functions; ///< the entry points its image defines
};
struct CUfunc_st {
  void (*launch)(void **, int64_t); ///< one thread per block
  std::string name;
  /// Its parameters (8 bytes each, as kiln passes them), from the launcher
  /// library's `<name>_host_argc`; -1 when it has none (such a launch cannot
  /// be run: its parameters cannot be translated).
  int argc = -1;
  std::string library; ///< the host-*.so it is from
  /// Its launcher at the block size it was last launched with (FakeBlocks.h;
  /// null: its threads never meet, and its own launcher is right).
  const kiln::fake::BlockLauncher *threaded = nullptr;
  unsigned threadedBlock = 0; ///< 0: not looked up yet
};
struct CUevent_st {
  CUctx_st *context = nullptr;
  bool recorded = false, done = false;
  /// Records so far: a record's job completes the event only if it is the
  /// last one (a second record before the first ran supersedes it).
  uint64_t records = 0;
  /// The last record's stream and its job there (cuStreamWaitEvent's wait).
  CUstream_st *stream = nullptr;
  uint64_t ticket = 0;
  double ms = 0;
};
struct Job {
  Node work;
  /// Work of other streams this job waits for: (stream, its jobs submitted).
  std::vector<std::pair<CUstream_st *, uint64_t>> waits;
};
struct CUstream_st {
  CUctx_st *context = nullptr;
  bool legacy = false, blocking = true;
  std::deque<Job> jobs;
  uint64_t submitted = 0, completed = 0;
  std::thread worker;
  bool stopping = false;
  // Capture.
  bool capturing = false, invalidated = false;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id captureThread;
  std::vector<Node> recorded;
};
struct CUgraph_st {
  std::vector<Node> nodes;
};
struct CUgraphExec_st {
  std::vector<Node> nodes;
};

namespace {

/// One lock over the driver's state (contexts, streams, memory, captures); a
/// fake need not be fast, only right. Never destroyed: stream workers wait on
/// it until the process ends.
std::mutex &mutex = *new std::mutex;
std::condition_variable &changed = *new std::condition_variable;

int deviceCount() {
  static int count = [] {
    const char *n = std::getenv("KILN_FAKE_CUDA_DEVICES");
    int v = n ? std::atoi(n) : 1;
    return v < 0 ? 0 : v;
  }();
  return count;
}

size_t deviceMemory() {
  static size_t bytes = [] {
    const char *n = std::getenv("KILN_FAKE_CUDA_MEMORY");
    return n ? static_cast<size_t>(std::strtoull(n, nullptr, 10)) : size_t{80} << 30;
  }();
  return bytes;
}

/// The injected faults (KILN_FAKE_CUDA_FAULTS, or kiln_fake_cuda_set_faults):
/// per kind, the call (counted from 1) that fails, and the calls so far.
struct Faults {
  std::mutex mutex;
  std::map<std::string, std::pair<long, long>> kinds; ///< kind: (fails at, calls)
  void set(const char *list) {
    std::lock_guard<std::mutex> lock(mutex);
    kinds.clear();
    std::string text = list ? list : "";
    size_t begin = 0;
    while (begin < text.size()) {
      size_t end = text.find(',', begin);
      if (end == std::string::npos)
        end = text.size();
      std::string item = text.substr(begin, end - begin);
      size_t colon = item.find(':');
      if (colon != std::string::npos)
        kinds[item.substr(0, colon)] = {std::atol(item.c_str() + colon + 1), 0};
      begin = end + 1;
    }
  }
  /// Whether this call of `kind` is the one to fail.
  bool now(const char *kind) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = kinds.find(kind);
    return it != kinds.end() && it->second.first > 0 && ++it->second.second == it->second.first;
  }
};
Faults &faults() {
  static Faults *f = [] {
    auto *out = new Faults();
    out->set(std::getenv("KILN_FAKE_CUDA_FAULTS"));
    return out;
  }();
  return *f;
}

/// Device memory: the address handed out (unreadable) and the host bytes
/// behind it, by address.
struct Allocation {
  size_t bytes = 0, mapped = 0;
  char *host = nullptr;
  CUctx_st *context = nullptr;
};
std::map<uintptr_t, Allocation> &allocations = *new std::map<uintptr_t, Allocation>;

/// The allocation holding [address, address + bytes), or null (caller holds
/// the lock). An address one past the end of an allocation is inside it for
/// a zero-byte access, as a pointer to an empty tensor may be.
Allocation *find(uintptr_t address, size_t bytes, uintptr_t *base) {
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin())
    return nullptr;
  --it;
  if (address < it->first || address + bytes > it->first + it->second.bytes ||
      (bytes == 0 && address > it->first + it->second.bytes))
    return nullptr;
  *base = it->first;
  return &it->second;
}

/// The host bytes of device address `address` (caller holds the lock); null
/// when it is not device memory of `context` (any context's when null).
char *hostBytes(uintptr_t address, size_t bytes, const CUctx_st *context) {
  uintptr_t base = 0;
  Allocation *a = find(address, bytes, &base);
  if (!a || (context && a->context != context))
    return nullptr;
  return a->host + (address - base);
}

void unmap(std::map<uintptr_t, Allocation>::iterator it) {
  munmap(reinterpret_cast<void *>(it->first), it->second.mapped);
  munmap(it->second.host, it->second.mapped);
  it->second.context->allocated -= it->second.bytes;
  allocations.erase(it);
}

/// The primary context of each device, made on first retain.
std::vector<CUctx_st *> &primaries() {
  static auto *contexts = new std::vector<CUctx_st *>;
  return *contexts;
}

/// The calling thread's context stack (cuCtxPushCurrent/PopCurrent).
thread_local std::vector<CUctx_st *> currentStack;
/// The context whose work this worker thread is running now.
thread_local CUctx_st *runningIn = nullptr;

CUctx_st *current() { return currentStack.empty() ? nullptr : currentStack.back(); }

/// CUDA_SUCCESS when a call may proceed in `context`: it exists, is live and
/// has no sticky error (caller holds the lock).
CUresult usable(const CUctx_st *context) {
  if (!context)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!context->live)
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return context->sticky;
}

/// Captures this thread began and has not ended: an allocation or free here
/// breaks the ones not in relaxed mode, as CUDA's rules say.
thread_local std::vector<CUstream> capturesHere;
/// Global-mode captures running on any thread: they forbid unsafe calls on
/// every thread.
std::vector<CUstream> &globalCaptures = *new std::vector<CUstream>;

/// Fails the captures an unsafe call (allocation, free) breaks; true when
/// there was one (caller holds the lock).
bool unsafeDuringCapture() {
  bool any = false;
  for (CUstream s : capturesHere)
    if (s->mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
      s->invalidated = true;
      any = true;
    }
  for (CUstream s : globalCaptures) {
    s->invalidated = true;
    any = true;
  }
  return any;
}

void workerLoop(CUstream_st *s) {
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    changed.wait(lock, [&] { return s->stopping || !s->jobs.empty(); });
    if (s->jobs.empty())
      return;
    Job &job = s->jobs.front();
    changed.wait(lock, [&] {
      for (auto [other, ticket] : job.waits)
        if (other->completed < ticket)
          return false;
      return true;
    });
    Node work = std::move(job.work);
    CUctx_st *context = s->context;
    bool run = context->live && context->sticky == CUDA_SUCCESS;
    lock.unlock();
    if (run) {
      runningIn = context;
      work();
      runningIn = nullptr;
    }
    // What the work owns (a library double's data) goes before the lock is
    // taken again: its release may call back into the driver.
    work = Node();
    lock.lock();
    s->jobs.pop_front();
    ++s->completed;
    changed.notify_all();
  }
}

CUstream_st *newStream(CUctx_st *context, bool legacy, bool blocking) {
  auto *s = new CUstream_st();
  s->context = context;
  s->legacy = legacy;
  s->blocking = blocking;
  s->worker = std::thread(workerLoop, s);
  return s;
}

/// The stream a call names: null is the current context's legacy stream.
CUstream_st *resolve(CUstream stream) {
  if (stream == CU_STREAM_PER_THREAD)
    return nullptr; // not modelled: no kiln code uses it
  if (stream == nullptr || stream == CU_STREAM_LEGACY) {
    CUctx_st *context = current();
    return context ? context->legacy : nullptr;
  }
  return stream;
}

/// The stream a call names, when its context may be used now; else null with
/// `error` saying why (caller holds the lock).
CUstream_st *callStream(CUstream stream, CUresult &error) {
  CUstream_st *s = resolve(stream);
  error = !s ? CUDA_ERROR_INVALID_CONTEXT : usable(s->context);
  return error == CUDA_SUCCESS ? s : nullptr;
}

/// Whether the legacy stream of `context` may be used now: not while a
/// blocking stream of the context captures (it then breaks that capture).
bool legacyBlockedByCapture(CUctx_st *context) {
  bool blocked = false;
  for (CUstream_st *s : context->streams)
    if (s->blocking && s->capturing) {
      s->invalidated = true;
      blocked = true;
    }
  return blocked;
}

/// Queues `work` on `stream` (caller holds the lock), or records it when the
/// stream captures.
/// `waits` is work of other streams it must also wait for (an event's).
CUresult submitLocked(CUstream stream, Node work,
                      std::vector<std::pair<CUstream_st *, uint64_t>> waits = {}) {
  CUresult error = CUDA_SUCCESS;
  CUstream_st *s = callStream(stream, error);
  if (!s)
    return error;
  if (s->capturing) {
    s->recorded.push_back(std::move(work));
    return CUDA_SUCCESS;
  }
  Job job{std::move(work), std::move(waits)};
  if (s->legacy) {
    if (legacyBlockedByCapture(s->context))
      return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    for (CUstream_st *other : s->context->streams)
      if (other->blocking && other->completed < other->submitted)
        job.waits.push_back({other, other->submitted});
  } else if (s->blocking) {
    CUstream_st *legacy = s->context->legacy;
    if (legacy->completed < legacy->submitted)
      job.waits.push_back({legacy, legacy->submitted});
  }
  s->jobs.push_back(std::move(job));
  ++s->submitted;
  changed.notify_all();
  return CUDA_SUCCESS;
}

CUresult submit(CUstream stream, Node work) {
  std::lock_guard<std::mutex> lock(mutex);
  return submitLocked(stream, std::move(work));
}

/// Marks the running context's sticky fault (from a worker).
void fault(CUresult error) {
  std::lock_guard<std::mutex> lock(mutex);
  if (runningIn && runningIn->sticky == CUDA_SUCCESS)
    runningIn->sticky = error;
}

/// Waits (caller holds `lock`) until `s` has run everything submitted to it
/// so far.
void drain(std::unique_lock<std::mutex> &lock, CUstream_st *s) {
  uint64_t ticket = s->submitted;
  changed.wait(lock, [&] { return s->completed >= ticket; });
}

void drainContext(std::unique_lock<std::mutex> &lock, CUctx_st *context) {
  drain(lock, context->legacy);
  // A copy: drain() lets go of the lock while it waits, and another thread's
  // cuStreamCreate or cuStreamDestroy may grow or shrink the list meanwhile,
  // which would leave a loop over it reading freed memory (streams
  // themselves are never freed).
  std::vector<CUstream_st *> streams = context->streams;
  for (CUstream_st *s : streams)
    drain(lock, s);
}

void logLine(const char *variable, const std::string &line) {
  if (const char *log = std::getenv(variable)) {
    static std::mutex logMutex;
    std::lock_guard<std::mutex> lock(logMutex);
    if (FILE *file = std::fopen(log, "a")) {
      std::fprintf(file, "%s\n", line.c_str());
      std::fclose(file);
    }
  }
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A host-emulation library in $KILN_FAKE_CUDA_KERNELS.
struct KernelLibrary {
  void *handle;
  std::string path;
};
std::mutex librariesMutex; ///< kernelLibraries() (a test adds to it)
/// The host-emulation libraries opened so far, oldest first (callers hold
/// librariesMutex). A cache that outlived a change of the device library
/// holds the same kernel in an older library too: lookups take the newest.
std::vector<KernelLibrary> &kernelLibraries() {
  static auto *libraries = new std::vector<KernelLibrary>();
  return *libraries;
}
/// Opens the libraries in $KILN_FAKE_CUDA_KERNELS not opened yet (callers
/// hold librariesMutex): at the first lookup, and again when a kernel is not
/// found, since a process may build libraries into the cache as it runs.
void scanKernelLibraries() {
  static auto *seen = new std::set<std::string>();
  const char *dir = std::getenv("KILN_FAKE_CUDA_KERNELS");
  DIR *d = dir ? opendir(dir) : nullptr;
  if (!d)
    return;
  std::vector<std::pair<int64_t, std::string>> found; // (modified, path)
  while (dirent *e = readdir(d)) {
    std::string name = e->d_name;
    if ((name.rfind("host-", 0) != 0 && name.rfind("hostvar-", 0) != 0) || name.size() <= 3 ||
        name.compare(name.size() - 3, 3, ".so") != 0 || !seen->insert(name).second)
      continue;
    std::string path = std::string(dir) + "/" + name;
    struct stat st;
    int64_t modified = stat(path.c_str(), &st) == 0
                           ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec
                           : 0;
    found.emplace_back(modified, path);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  for (const auto &[modified, path] : found)
    if (void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))
      kernelLibraries().push_back({h, path});
}

/// Runs a kernel (on a worker): its parameters that point into its context's
/// device memory become the host bytes behind them; one that points into
/// another context's memory, or a fault injected here, is an illegal address.
void runKernel(CUfunc_st *f, const kiln::fake::BlockLauncher *threaded, unsigned grid,
               unsigned block, std::vector<uint64_t> values) {
  logLine("KILN_FAKE_CUDA_LAUNCH_LOG",
          f->name + " " + std::to_string(grid) + " " + std::to_string(block));
  if (faults().now("kernel")) {
    fault(CUDA_ERROR_ILLEGAL_ADDRESS);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (uint64_t &v : values) {
      uintptr_t base = 0;
      Allocation *a = find(static_cast<uintptr_t>(v), 0, &base);
      if (!a)
        continue; // a scalar, or not device memory
      if (a->context != runningIn) {
        if (runningIn && runningIn->sticky == CUDA_SUCCESS)
          runningIn->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
        return;
      }
      v = reinterpret_cast<uint64_t>(a->host + (v - base));
    }
  }
  std::vector<void *> pointers;
  for (uint64_t &v : values)
    pointers.push_back(&v);
  // KILN_FAKE_CUDA_WRITE_LOG: the bytes of device memory the launch changed,
  // "write NAME BYTES" (the allocations its parameters point into, compared
  // before and after; a byte rewritten with its own value is not counted).
  std::vector<std::pair<const char *, std::string>> before;
  if (std::getenv("KILN_FAKE_CUDA_WRITE_LOG")) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &[address, a] : allocations)
      for (uint64_t v : values)
        if (reinterpret_cast<uintptr_t>(a.host) <= v &&
            v <= reinterpret_cast<uintptr_t>(a.host) + a.bytes) {
          before.emplace_back(a.host, std::string(a.host, a.bytes));
          break;
        }
  }
  auto logWrites = [&] {
    if (before.empty() && !std::getenv("KILN_FAKE_CUDA_WRITE_LOG"))
      return;
    size_t changed = 0;
    for (const auto &[host, bytes] : before)
      for (size_t i = 0; i < bytes.size(); ++i)
        changed += host[i] != bytes[i];
    logLine("KILN_FAKE_CUDA_WRITE_LOG", "write " + f->name + " " + std::to_string(changed));
  };
  if (!threaded) {
    f->launch(pointers.data(), grid);
    logWrites();
    return;
  }
  // A barrier its threads do not all reach hangs or races on a GPU; here it
  // is an unspecified launch failure, sticky as a GPU's would be.
  std::string wrong = threaded->run(pointers.data(), grid);
  logWrites();
  if (!wrong.empty()) {
    std::fprintf(stderr, "kiln fake CUDA: kernel %s: a barrier not every thread reaches: %s\n",
                 f->name.c_str(), wrong.c_str());
    fault(CUDA_ERROR_LAUNCH_FAILED);
  }
}

/// The launcher that runs `f` at `block` threads per block (nullptr: the
/// library's own, one thread per block, for a block of one or a kernel whose
/// threads never meet). Called outside the lock: a first launch at a block
/// size builds the library's meeting kernels at it.
CUresult threadedLauncher(CUfunc_st *f, unsigned block, const kiln::fake::BlockLauncher **out) {
  *out = nullptr;
  if (block == 1 || std::getenv("KILN_FAKE_CUDA_ONE_THREAD"))
    return CUDA_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (f->threadedBlock == block) {
      *out = f->threaded;
      return CUDA_SUCCESS;
    }
  }
  std::string error;
  const kiln::fake::BlockLauncher *launcher = kiln::fake::blockLauncher(f->library, f->name, block, error);
  if (!launcher && !error.empty()) {
    std::fprintf(stderr, "kiln fake CUDA: kernel %s: %s\n", f->name.c_str(), error.c_str());
    return CUDA_ERROR_INVALID_IMAGE;
  }
  std::lock_guard<std::mutex> lock(mutex);
  f->threaded = launcher;
  f->threadedBlock = block;
  *out = launcher;
  return CUDA_SUCCESS;
}

/// A copy (on a worker): the device side(s) translated when it runs, so a
/// buffer freed or reset in between is a fault, not a silent read.
void runCopy(uintptr_t to, bool toDevice, uintptr_t from, bool fromDevice, size_t bytes) {
  char *target = reinterpret_cast<char *>(to);
  const char *source = reinterpret_cast<const char *>(from);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (toDevice)
      target = hostBytes(to, bytes, nullptr);
    if (fromDevice)
      source = hostBytes(from, bytes, nullptr);
    if (!target || !source) {
      if (runningIn && runningIn->sticky == CUDA_SUCCESS)
        runningIn->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
      return;
    }
  }
  std::memmove(target, source, bytes);
  if (toDevice)
    logLine("KILN_FAKE_CUDA_WRITE_LOG",
            std::string(fromDevice ? "copy dtod " : "copy htod ") + std::to_string(bytes));
}

/// A copy call: checks its device side(s) at the call, as the driver does
/// (CUDA_ERROR_INVALID_VALUE for an address that is not device memory).
CUresult copy(uintptr_t to, bool toDevice, uintptr_t from, bool fromDevice, size_t bytes,
              CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex);
  CUresult error = CUDA_SUCCESS;
  CUstream_st *s = callStream(stream, error);
  if (!s)
    return error;
  if ((toDevice && !hostBytes(to, bytes, nullptr)) ||
      (fromDevice && !hostBytes(from, bytes, nullptr)) || (!toDevice && !to) ||
      (!fromDevice && !from))
    return CUDA_ERROR_INVALID_VALUE;
  // Copies keep their addresses, as CUDA's copy nodes do: a graph's copy
  // reads the host memory as it is when the graph runs.
  return submitLocked(stream, [=] { runCopy(to, toDevice, from, fromDevice, bytes); });
}

/// Drops a capture from the lists of running captures (caller holds the lock).
void forgetCapture(CUstream stream) {
  for (std::vector<CUstream> *list : {&capturesHere, &globalCaptures})
    for (size_t i = 0; i < list->size(); ++i)
      if ((*list)[i] == stream) {
        list->erase(list->begin() + static_cast<long>(i));
        break;
      }
}

/// Resets a context (caller holds `lock`): its work finishes, its memory is
/// unmapped and it is no longer live; its streams stay valid to destroy.
void resetContext(std::unique_lock<std::mutex> &lock, CUctx_st *context) {
  if (!context->live)
    return; // reset already (a release racing a reset)
  drainContext(lock, context);
  if (!context->live)
    return;
  for (auto it = allocations.begin(); it != allocations.end();)
    if (it->second.context == context)
      unmap(it++);
    else
      ++it;
  context->live = false;
  // Its legacy stream's worker ends (the structure stays: handles of the
  // dead context still name it). Otherwise every load after a release would
  // leave a thread behind, and every notification would wake them all.
  CUstream_st *legacy = context->legacy;
  legacy->stopping = true;
  changed.notify_all();
  lock.unlock();
  legacy->worker.join();
  lock.lock();
}

const char *errorName(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS: return "no error";
  case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
  case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
  case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
  case CUDA_ERROR_CONTEXT_IS_DESTROYED: return "context is destroyed";
  case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
  case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
  case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
  case CUDA_ERROR_NOT_READY: return "device not ready";
  case CUDA_ERROR_ILLEGAL_ADDRESS: return "an illegal memory access was encountered";
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "too many resources requested for launch";
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    return "operation not permitted when stream is capturing";
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    return "operation failed due to a previous error during capture";
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    return "operation would make the legacy stream depend on a capturing blocking stream";
  case CUDA_ERROR_ILLEGAL_STATE: return "the operation is not permitted in this state";
  default: return "unknown error";
  }
}

} // namespace

extern "C" {

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *count) {
  *count = deviceCount();
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal < 0 || ordinal >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "kiln fake CUDA device %d", device);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice device) {
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult r, const char **text) {
  *text = errorName(r);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<CUctx_st *> &contexts = primaries();
  contexts.resize(static_cast<size_t>(deviceCount()), nullptr);
  CUctx_st *&primary = contexts[static_cast<size_t>(device)];
  if (!primary || !primary->live) {
    // A context reset is gone; its structure stays (handles may name it).
    primary = new CUctx_st();
    primary->device = device;
    primary->legacy = newStream(primary, /*legacy=*/true, /*blocking=*/true);
  }
  ++primary->retains;
  *context = primary;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice device) {
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  std::unique_lock<std::mutex> lock(mutex);
  std::vector<CUctx_st *> &contexts = primaries();
  if (contexts.size() <= static_cast<size_t>(device) || !contexts[device] ||
      contexts[device]->retains == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  // The last release resets the primary context, as CUDA documents.
  if (--contexts[device]->retains == 0)
    resetContext(lock, contexts[device]);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxReset(CUdevice device) {
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  std::unique_lock<std::mutex> lock(mutex);
  std::vector<CUctx_st *> &contexts = primaries();
  if (contexts.size() > static_cast<size_t>(device) && contexts[device] &&
      contexts[device]->live) {
    CUctx_st *reset = contexts[device];
    reset->retains = 0; // before the lock is let go: a retain meanwhile makes a new one
    resetContext(lock, reset);
  }
  return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent(CUcontext context) {
  if (!context)
    return CUDA_ERROR_INVALID_CONTEXT;
  currentStack.push_back(context);
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext *context) {
  if (currentStack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (context)
    *context = currentStack.back();
  currentStack.pop_back();
  return CUDA_SUCCESS;
}
/// The entry points a module image defines: a cubin's (ELF) function symbols,
/// or the .entry names of a PTX text; nullopt when it is neither.
std::optional<std::set<std::string>> entryPoints(const void *image) {
  const auto *bytes = static_cast<const uint8_t *>(image);
  std::set<std::string> names;
  // The image has no size (cuModuleLoadData takes none): a header that is
  // not an ELF64 one, or tables past what a kernel's cubin holds, is refused
  // before anything past the header is read.
  if (std::memcmp(bytes, ELFMAG, SELFMAG) == 0) {
    constexpr uint64_t kMostBytes = uint64_t(1) << 30;
    if (bytes[EI_CLASS] != ELFCLASS64)
      return std::nullopt;
    Elf64_Ehdr header;
    std::memcpy(&header, bytes, sizeof(header));
    if (header.e_shentsize != sizeof(Elf64_Shdr) || header.e_shnum > 4096 ||
        header.e_shoff > kMostBytes)
      return std::nullopt;
    for (size_t i = 0; i < header.e_shnum; ++i) {
      Elf64_Shdr s;
      std::memcpy(&s, bytes + header.e_shoff + i * sizeof(Elf64_Shdr), sizeof(s));
      if (s.sh_type != SHT_NOBITS && (s.sh_offset > kMostBytes || s.sh_size > kMostBytes))
        return std::nullopt;
    }
    auto section = [&](size_t i) {
      Elf64_Shdr s;
      std::memcpy(&s, bytes + header.e_shoff + i * sizeof(Elf64_Shdr), sizeof(s));
      return s;
    };
    for (size_t i = 0; i < header.e_shnum; ++i) {
      Elf64_Shdr symtab = section(i);
      if (symtab.sh_type != SHT_SYMTAB || symtab.sh_link >= header.e_shnum)
        continue;
      Elf64_Shdr strtab = section(symtab.sh_link);
      for (size_t at = 0; at + sizeof(Elf64_Sym) <= symtab.sh_size; at += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        std::memcpy(&sym, bytes + symtab.sh_offset + at, sizeof(sym));
        if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_name < strtab.sh_size) {
          const char *name = reinterpret_cast<const char *>(bytes + strtab.sh_offset + sym.st_name);
          names.insert(std::string(name, strnlen(name, strtab.sh_size - sym.st_name)));
        }
      }
    }
    return names;
  }
  // PTX: text with a .version directive (at most 1 GiB of it); entries are
  // ".entry <name>(".
  std::string text(static_cast<const char *>(image), strnlen(static_cast<const char *>(image), 1 << 30));
  if (text.find(".version") == std::string::npos)
    return std::nullopt;
  for (size_t at = text.find(".entry"); at != std::string::npos; at = text.find(".entry", at + 1)) {
    size_t begin = text.find_first_not_of(" \t", at + 6);
    size_t end = begin == std::string::npos ? begin : text.find_first_of(" \t(\n", begin);
    if (end != std::string::npos)
      names.insert(text.substr(begin, end - begin));
  }
  return names;
}

/// The host launcher of entry point `name`, from the newest library that has
/// it (nullptr: none has).
CUfunc_st *findLauncher(const std::string &name) {
  // A kernel's name hashes its device code, not its launcher: a cache may
  // hold libraries from before launchers stated their argument count, so
  // one that states it is preferred.
  CUfunc_st *found = nullptr;
  std::lock_guard<std::mutex> lock(librariesMutex);
  static bool scanned = false;
  for (int attempt = 0; attempt < 2 && !found; ++attempt) {
    if (!scanned || attempt == 1)
      scanKernelLibraries();
    scanned = true;
    const std::vector<KernelLibrary> &libraries = kernelLibraries();
    for (auto it = libraries.rbegin(); it != libraries.rend(); ++it)
      if (const KernelLibrary &library = *it;
          void *symbol = dlsym(library.handle, (name + "_host").c_str())) {
        auto *argc = static_cast<const int *>(dlsym(library.handle, (name + "_host_argc").c_str()));
        if (found && !argc)
          continue;
        delete found;
        found = new CUfunc_st{reinterpret_cast<void (*)(void **, int64_t)>(symbol), name};
        found->library = library.path;
        if (argc) {
          found->argc = *argc;
          break;
        }
      }
  }
  return found;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  std::lock_guard<std::mutex> lock(mutex);
  if (CUresult r = usable(current()); r != CUDA_SUCCESS)
    return r;
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  std::optional<std::set<std::string>> functions = entryPoints(image);
  if (!functions)
    return CUDA_ERROR_INVALID_IMAGE;
  *module = new CUmod_st{std::move(*functions)};
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  if (!function || !module || !name)
    return CUDA_ERROR_INVALID_VALUE;
  if (!module->functions.count(name))
    return CUDA_ERROR_NOT_FOUND;
  // A variant's own host code when a library has it, else its kernel's.
  CUfunc_st *found = findLauncher(name);
  if (std::string generic = kiln::artifact::genericEntryName(name); !found && generic != name)
    found = findLauncher(generic);
  *function = found;
  return found ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
CUresult cuModuleUnload(CUmodule module) {
  delete module;
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  CUctx_st *context = current();
  if (CUresult r = usable(context); r != CUDA_SUCCESS)
    return r;
  if (unsafeDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (faults().now("alloc") || context->allocated + bytes > deviceMemory())
    return CUDA_ERROR_OUT_OF_MEMORY;
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t mapped = (bytes + page - 1) / page * page;
  // The address the runtime sees: reserved, never readable. The bytes: a
  // mapping of their own, zero-filled as fresh pages are.
  void *address = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
  void *host = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (address == MAP_FAILED || host == MAP_FAILED) {
    if (address != MAP_FAILED)
      munmap(address, mapped);
    if (host != MAP_FAILED)
      munmap(host, mapped);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  static const int fill = [] {
    const char *b = std::getenv("KILN_FAKE_CUDA_ALLOC_FILL");
    return b ? std::atoi(b) & 0xFF : 0;
  }();
  if (fill)
    std::memset(host, fill, mapped);
  allocations[reinterpret_cast<uintptr_t>(address)] =
      Allocation{bytes, mapped, static_cast<char *>(host), context};
  context->allocated += bytes;
  *pointer = reinterpret_cast<CUdeviceptr>(address);
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr pointer) {
  std::unique_lock<std::mutex> lock(mutex);
  if (CUresult r = usable(current()); r != CUDA_SUCCESS)
    return r;
  if (unsafeDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  auto it = allocations.find(static_cast<uintptr_t>(pointer));
  if (it == allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  // Freeing memory waits for the device's work that may use it.
  drainContext(lock, it->second.context);
  it = allocations.find(static_cast<uintptr_t>(pointer));
  if (it != allocations.end())
    unmap(it);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr to, const void *from, size_t bytes, CUstream stream) {
  return copy(to, true, reinterpret_cast<uintptr_t>(from), false, bytes, stream);
}
CUresult cuMemcpyDtoHAsync(void *to, CUdeviceptr from, size_t bytes, CUstream stream) {
  return copy(reinterpret_cast<uintptr_t>(to), false, from, true, bytes, stream);
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream stream) {
  return copy(to, true, from, true, bytes, stream);
}
CUresult cuStreamSynchronize(CUstream stream) {
  std::unique_lock<std::mutex> lock(mutex);
  CUresult error = CUDA_SUCCESS;
  CUstream_st *s = callStream(stream, error);
  if (!s)
    return error;
  // Waiting for work that is only being recorded: CUDA refuses, and the
  // capture is broken.
  if (s->capturing) {
    s->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (s->legacy && legacyBlockedByCapture(s->context))
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  drain(lock, s);
  // An asynchronous fault shows at the next synchronization.
  return s->context->sticky;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gridX, unsigned gridY, unsigned gridZ,
                        unsigned blockX, unsigned blockY, unsigned blockZ, unsigned,
                        CUstream stream, void **args, void **extra) {
  // kiln's kernels are built for at most KILN_MAX_BLOCK (256) threads.
  if (!f || gridX == 0 || gridY != 1 || gridZ != 1 || blockX == 0 || blockX > 256 ||
      blockY != 1 || blockZ != 1 || extra || f->argc < 0 || (f->argc > 0 && !args))
    return CUDA_ERROR_INVALID_VALUE;
  if (faults().now("launch"))
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  // A launch (and a graph's kernel node) holds its parameters' values from
  // the time of the call.
  std::vector<uint64_t> values(static_cast<size_t>(f->argc));
  for (int i = 0; i < f->argc; ++i)
    std::memcpy(&values[i], args[i], sizeof(uint64_t));
  const kiln::fake::BlockLauncher *threaded = nullptr;
  if (CUresult r = threadedLauncher(f, blockX, &threaded); r != CUDA_SUCCESS)
    return r;
  return submit(stream, [f, threaded, gridX, blockX, values] {
    runKernel(f, threaded, gridX, blockX, values);
  });
}
CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
  std::lock_guard<std::mutex> lock(mutex);
  CUctx_st *context = current();
  if (CUresult r = usable(context); r != CUDA_SUCCESS)
    return r;
  if (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  CUstream_st *s = newStream(context, false, !(flags & CU_STREAM_NON_BLOCKING));
  context->streams.push_back(s);
  *stream = s;
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy_v2(CUstream stream) {
  std::unique_lock<std::mutex> lock(mutex);
  if (!stream || stream == CU_STREAM_LEGACY || stream->legacy || stream->capturing)
    return CUDA_ERROR_INVALID_HANDLE;
  // Work already queued still runs (CUDA finishes it); then the worker ends.
  drain(lock, stream);
  stream->stopping = true;
  changed.notify_all();
  std::vector<CUstream_st *> &list = stream->context->streams;
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i] == stream) {
      list.erase(list.begin() + static_cast<long>(i));
      break;
    }
  lock.unlock();
  stream->worker.join();
  // The structure stays (a destroyed stream is a few bytes): other streams'
  // jobs and events may still name it in their waits.
  return CUDA_SUCCESS;
}
CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!stream || stream == CU_STREAM_LEGACY)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; // the legacy stream
  if (CUresult r = usable(stream->context); r != CUDA_SUCCESS)
    return r;
  if (stream->capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  stream->capturing = true;
  stream->invalidated = false;
  stream->mode = mode;
  stream->recorded.clear();
  stream->captureThread = std::this_thread::get_id();
  // Relaxed captures forbid nothing, so only the others are listed.
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    capturesHere.push_back(stream);
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
    globalCaptures.push_back(stream);
  return CUDA_SUCCESS;
}
CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status) {
  std::lock_guard<std::mutex> lock(mutex);
  CUstream_st *s = resolve(stream);
  if (!s)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (s->legacy) {
    // Asked of the legacy stream while a blocking stream captures: an error,
    // which does not break the capture.
    for (CUstream_st *other : s->context->streams)
      if (other->blocking && other->capturing)
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  *status = !s->capturing   ? CU_STREAM_CAPTURE_STATUS_NONE
            : s->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                             : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}
CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!stream || stream == CU_STREAM_LEGACY || !stream->capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  // Only a relaxed capture may end on another thread than began it.
  if (stream->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
      stream->captureThread != std::this_thread::get_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  stream->capturing = false;
  forgetCapture(stream);
  std::vector<Node> recorded = std::move(stream->recorded);
  stream->recorded.clear();
  if (stream->invalidated) {
    *graph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  logLine("KILN_FAKE_CUDA_GRAPH_LOG", "capture " + std::to_string(recorded.size()));
  *graph = new CUgraph_st{std::move(recorded)};
  return CUDA_SUCCESS;
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long) {
  if (!graph)
    return CUDA_ERROR_INVALID_VALUE;
  *exec = new CUgraphExec_st{graph->nodes};
  return CUDA_SUCCESS;
}
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  if (!exec)
    return CUDA_ERROR_INVALID_VALUE;
  logLine("KILN_FAKE_CUDA_GRAPH_LOG", "replay " + std::to_string(exec->nodes.size()));
  std::lock_guard<std::mutex> lock(mutex);
  for (const Node &node : exec->nodes)
    if (CUresult r = submitLocked(stream, node); r != CUDA_SUCCESS)
      return r;
  return CUDA_SUCCESS;
}
CUresult cuGraphExecDestroy(CUgraphExec exec) {
  delete exec;
  return CUDA_SUCCESS;
}
CUresult cuGraphDestroy(CUgraph graph) {
  delete graph;
  return CUDA_SUCCESS;
}

/// For the library doubles beside this driver: runs `run(data)` on `stream`
/// in order (or records it when the stream captures); `release(data)` when it
/// is no longer needed (after the run, or with the last graph holding it).
int kiln_fake_cuda_submit(CUstream stream, void (*run)(void *), void (*release)(void *),
                          void *data) {
  std::shared_ptr<void> owned(data, release);
  return submit(stream, [run, owned] { run(owned.get()); });
}
/// For a test's own kernels: adds host-emulation library `path` (a
/// host-<hash>.so, with its .cpp and .flags beside it) to those kernels are
/// looked up in. 0 when it loaded.
int kiln_fake_cuda_add_kernels(const char *path) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return 1;
  std::lock_guard<std::mutex> lock(librariesMutex);
  kernelLibraries().push_back({handle, path}); // the newest: looked in first
  return 0;
}
/// Fault injection for tests in one process: replaces the list (as
/// KILN_FAKE_CUDA_FAULTS gives it) and restarts the counts; null clears it.
void kiln_fake_cuda_set_faults(const char *list) { faults().set(list); }
/// For the library doubles: whether this call of `kind` ("cublaslt-matmul",
/// ...) is the one the fault list fails.
int kiln_fake_cuda_fault_now(const char *kind) { return faults().now(kind) ? 1 : 0; }
/// For the library doubles, while their work runs: the host bytes behind
/// device address `address` for `bytes`, or null (and an illegal-address
/// fault on the running context) when it is not that context's memory.
void *kiln_fake_cuda_host_view(const void *address, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  char *host = hostBytes(reinterpret_cast<uintptr_t>(address), bytes, runningIn);
  if (!host && runningIn && runningIn->sticky == CUDA_SUCCESS)
    runningIn->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
  return host;
}
CUresult cuEventCreate(CUevent *event, unsigned int) {
  std::lock_guard<std::mutex> lock(mutex);
  CUctx_st *context = current();
  if (CUresult r = usable(context); r != CUDA_SUCCESS)
    return r;
  *event = new CUevent_st();
  (*event)->context = context;
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream stream) {
  if (!event)
    return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(mutex);
  CUstream_st *s = resolve(stream);
  bool queued = s && !s->capturing;
  // A captured record is a graph node: it completes the event whenever the
  // graph runs, as the latest record then.
  uint64_t record = queued ? event->records + 1 : 0;
  CUresult r = submitLocked(stream, [event, record] {
    double ms = nowMs();
    std::lock_guard<std::mutex> inner(mutex);
    if (record && record != event->records)
      return; // superseded by a later record
    event->recorded = true;
    event->ms = ms;
    event->done = true;
    changed.notify_all();
  });
  if (r == CUDA_SUCCESS && queued) {
    event->records = record;
    event->recorded = true;
    event->done = false;
    event->stream = s;
    event->ticket = s->submitted;
  }
  return r;
}
CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  if (!event || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(mutex);
  CUresult error = CUDA_SUCCESS;
  CUstream_st *s = callStream(stream, error);
  if (!s)
    return error;
  if (s->capturing) {
    // An event recorded outside the capture: a dependency across its
    // boundary, which CUDA refuses.
    s->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  // Later work of `stream` waits for the event's last record (none: nothing).
  std::vector<std::pair<CUstream_st *, uint64_t>> waits;
  if (event->recorded && event->stream)
    waits.push_back({event->stream, event->ticket});
  return submitLocked(stream, [] {}, std::move(waits));
}
CUresult cuEventSynchronize(CUevent event) {
  if (!event)
    return CUDA_ERROR_INVALID_HANDLE;
  std::unique_lock<std::mutex> lock(mutex);
  if (CUresult r = usable(event->context); r != CUDA_SUCCESS)
    return r;
  changed.wait(lock, [&] {
    return !event->recorded || event->done || event->context->sticky != CUDA_SUCCESS;
  });
  return event->context->sticky;
}
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  if (!start || !end)
    return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(mutex);
  if (CUresult r = usable(start->context); r != CUDA_SUCCESS)
    return r;
  if (!start->recorded || !end->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  // Events the streams have not reached yet: the caller did not wait.
  if (!start->done || !end->done)
    return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(end->ms - start->ms);
  return CUDA_SUCCESS;
}
// NVRTC opens libcuda.so.1 itself and asks for this (undocumented) table; a
// driver without it must say so rather than be missing.
CUresult cuGetExportTable(const void **table, const CUuuid *) {
  *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuEventDestroy(CUevent event) {
  if (!event)
    return CUDA_ERROR_INVALID_HANDLE;
  // CUDA lets an event go while a record of it is pending (or a graph holds
  // one). The structure stays, so such a record never writes freed memory;
  // an event is a few bytes.
  return CUDA_SUCCESS;
}

} // extern "C"
