//===- Jit.cpp - libkiln_jit: compile models inside a serving process -----===//
//
// The C API of kiln/jit.h. A Jit compiles models with the compiler's own
// pipeline (import, graph pipeline, kernels, artifact) and loads them through
// libkiln_runtime's public C API, like any artifact. Each model it makes gets a
// variant-miss handler: shapes no variant has queue one specialization per
// distinct key on a bounded pool, which compiles the artifact's kernel sources
// again with -DKILN_SYM_<name>=<value> (host emulation or cubins for the
// device), packs them (kiln_variants.fbs) and installs them into the model.
// Artifacts and packs are cached in memory and on disk (DiskCache).
//
//===----------------------------------------------------------------------===//

#include "kiln/jit.h"

#include "jit/DiskCache.h"

#include "codegen/CudaEmitter.h"
#include "codegen/DeviceLibrary.h"
#include "codegen/HostEmulation.h"
#include "codegen/KernelCache.h"
#include "frontend/onnx/OnnxImporter.h"
#include "kiln/artifact/Format.h"
#include "kiln/artifact/Plan.h"
#include "kiln/nvrtc/Nvrtc.h"
#include "kiln/schema/kiln_variants_generated.h"
#include "kiln/reference/Compare.h"
#include "kiln/version.h"
#include "passes/Passes.h"
#include "driver/Compile.h"
#include "driver/Explain.h"
#include "driver/InitAll.h"
#include "driver/LoadModel.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fcntl.h>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace kiln::jit {
class Jit;

thread_local std::string lastError;
thread_local std::string lastExplain; // kiln_jit_explain_memory's text

namespace {

std::string hex(uint64_t v) {
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(v));
  return buffer;
}

/// A regular file's bytes; an error naming the path otherwise (a
/// folder, a FIFO that would block, a device that never ends).
absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> readRegularFile(const std::string &path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  struct stat st;
  bool statted = fstat(fd, &st) == 0;
  if (!statted || !S_ISREG(st.st_mode)) {
    bool folder = statted && S_ISDIR(st.st_mode);
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, folder ? ": is a folder, not a model file"
                                  : ": not a regular file (a model is read from a file)"));
  }
  // Read, not mapped (IsVolatile): a file cut short while it is read is a
  // short read, where a mapping would SIGBUS the process.
  auto buffer = llvm::MemoryBuffer::getOpenFile(fd, path, static_cast<uint64_t>(st.st_size),
                                                /*RequiresNullTerminator=*/false,
                                                /*IsVolatile=*/true);
  ::close(fd);
  if (!buffer)
    return absl::InternalError(
        absl::StrCat("cannot read ", path, ": ", buffer.getError().message()));
  return std::move(*buffer);
}

/// For an ONNX model's cache key: the external data files its tensors name,
/// each with the hash of its contents (a model whose weights changed beside
/// it is another model). An error when it names some but came as bytes with
/// no folder to find them in. A file that cannot be read, or that the
/// importer refuses (outside the folder), is keyed as such: the import then
/// says what is wrong with it, and a failed compile is never cached.
absl::StatusOr<std::string> externalDataKey(llvm::StringRef bytes, const std::string &name,
                                            const std::string &folder) {
  // Only a model that mentions external data pays for a second parse.
  if (!bytes.contains("location"))
    return std::string();
  std::optional<std::vector<std::string>> locations = onnx_import::externalDataLocations(bytes);
  if (!locations || locations->empty())
    return std::string(); // bytes that do not parse: the import says so
  if (folder.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": its weights are in external data files ('", locations->front(),
        "'), and it came as bytes, from no folder: compile it from its file so that they are "
        "found beside it"));
  std::string key;
  for (const std::string &location : *locations) {
    absl::StrAppend(&key, location, "\n");
    if (llvm::sys::path::is_absolute(location) || llvm::StringRef(location).contains("..")) {
      absl::StrAppend(&key, "refused\n");
      continue;
    }
    llvm::SmallString<256> path(folder);
    llvm::sys::path::append(path, location);
    absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> file = readRegularFile(path.str().str());
    if (!file.ok()) {
      absl::StrAppend(&key, "unreadable\n");
      continue;
    }
    absl::StrAppend(&key, (*file)->getBufferSize(), " ",
                    hex(llvm::xxh3_64bits((*file)->getBuffer())), "\n");
  }
  return key;
}

/// For every model's cache key under fp8: the regular files under `folder`
/// (a calibration folder's data sets), each path relative to it with the
/// hash of its contents, in order; calibrating on other data is another
/// model. Hashed at each compile (the compile reads the folder then). An
/// error when the folder cannot be walked or a file read.
absl::StatusOr<std::string> folderKey(const std::string &folder) {
  if (!llvm::sys::fs::is_directory(folder))
    return absl::InvalidArgumentError(absl::StrCat("calibration_dir '", folder, "' is not a folder"));
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(folder, ec), end; it != end && !ec;
       it.increment(ec))
    // is_regular_file follows links, as the calibration's reader does: a
    // linked data set is hashed by what it holds.
    if (llvm::sys::fs::is_regular_file(it->path()))
      files.push_back(it->path());
  if (ec)
    return absl::InvalidArgumentError(
        absl::StrCat("calibration_dir '", folder, "': ", ec.message()));
  std::sort(files.begin(), files.end());
  std::string key;
  for (const std::string &path : files) {
    absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> file = readRegularFile(path);
    if (!file.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("calibration_dir '", folder, "': ", file.status().message()));
    absl::StrAppend(&key, llvm::StringRef(path).drop_front(folder.size()).str(), " ",
                    (*file)->getBufferSize(), " ", hex(llvm::xxh3_64bits((*file)->getBuffer())),
                    "\n");
  }
  return hex(llvm::xxh3_64bits(key));
}

std::string defaultFolder() {
  if (const char *dir = std::getenv("KILN_CACHE_DIR"); dir && *dir)
    return std::string(dir) + "/jit";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/kiln/jit";
  // Per user: a shared /tmp folder another user made first is not ours.
  return absl::StrCat("/tmp/kiln-cache-", geteuid(), "/jit");
}

/// A model the JIT made: its artifact (the runtime's model reads it in place),
/// the plan read from it (kernel sources for specializations) and the handle.
struct ModelEntry {
  Jit *jit = nullptr;
  std::string key;
  std::shared_ptr<const AlignedBytes> artifact;
  artifact::Plan plan;
  kiln_model_t *model = nullptr;
  /// What specializations compile for: 0 host emulation, else the device's SM.
  int sm = 0;
  /// Specializations asked for (under the JIT's mutex): a flood of distinct
  /// shapes must not load code without bound.
  int requested = 0;
  /// Handles given out by kiln_jit_compile_* and not yet given back with
  /// kiln_jit_release (under the JIT's mutex); at zero the model is destroyed.
  int handles = 0;
  /// Specializations of it a worker is compiling or installing (under the
  /// mutex): a released model waits for them before it is destroyed.
  int jobsRunning = 0;
};

/// The most variants the JIT compiles for one model; past it the generic code
/// serves every new shape (counted as dropped).
constexpr int kMaxVariantsPerModel = 256;

struct Job {
  ModelEntry *entry;
  std::vector<int64_t> values;
  std::string key;
};

} // namespace

class Jit {
public:
  explicit Jit(const kiln_jit_options_t &o)
      : options_(o), precision_(o.precision && *o.precision ? o.precision : "fp32"),
        weights_(o.weights && *o.weights ? o.weights : "float"),
        groupSize_(o.weight_group_size ? o.weight_group_size : 128),
        calibration_(o.calibration_dir ? o.calibration_dir : ""),
        disk_(o.cache_dir && *o.cache_dir ? o.cache_dir : defaultFolder(),
              o.cache_max_bytes ? o.cache_max_bytes : (uint64_t(4) << 30)) {
    // The caller's strings need not outlive create.
    options_.precision = options_.weights = options_.calibration_dir = nullptr;
  }
  ~Jit();

  absl::Status start();
  /// Drops queued specializations and waits for the running ones, after which
  /// no thread of this JIT runs (idempotent; the destructor and exit call it).
  void stopBackground();
  /// Compiles (or finds) the model in `data`; `name` says what it is and
  /// names it in messages, `folder` is where its external data resolves
  /// (empty: it may have none).
  absl::StatusOr<kiln_model_t *> compile(const void *data, size_t size, const std::string &name,
                                         const std::string &folder);
  void waitIdle();
  /// Gives back one handle of `model`; the last destroys it (kiln_jit_release).
  absl::Status release(kiln_model_t *model);
  /// What kiln-compile --explain prints for the model (compiled for it, not
  /// cached: a diagnostic).
  absl::StatusOr<std::string> explain(const void *data, size_t size, const std::string &name);
  kiln_jit_stats_t stats() const {
    std::lock_guard<std::mutex> lock(statsMutex_);
    return stats_;
  }
  /// The miss handler: queues a specialization (never blocks on compiling).
  void requestVariant(ModelEntry *entry, const int64_t *values, size_t count);

private:
  struct InFlight {
    bool done = false;
    absl::Status status;
    kiln_model_t *model = nullptr;
  };
  absl::StatusOr<std::shared_ptr<const AlignedBytes>> artifactFor(const std::string &key,
                                                                  llvm::StringRef bytes,
                                                                  const std::string &name,
                                                                  const std::string &folder);
  absl::StatusOr<std::shared_ptr<const AlignedBytes>> compileArtifact(llvm::StringRef bytes,
                                                                      const std::string &name,
                                                                      const std::string &folder);
  /// Imports and compiles the model, then hands its artifact to `use` while
  /// the module it came from is alive; a stage's first error is the status.
  absl::Status compileWith(llvm::StringRef bytes, const std::string &name, const std::string &folder,
                           bool deferWeights,
                           const std::function<absl::Status(CompiledArtifact &)> &use);
  absl::StatusOr<std::shared_ptr<const AlignedBytes>> packFor(const Job &job);
  /// Entry `file` from memory, else from disk when `intact` accepts it (a
  /// damaged one is removed with a warning), else built, written and kept.
  absl::StatusOr<std::shared_ptr<const AlignedBytes>>
  cached(const std::string &file, const std::function<bool(const AlignedBytes &)> &intact,
         const std::function<absl::StatusOr<std::shared_ptr<const AlignedBytes>>()> &build);
  absl::StatusOr<std::shared_ptr<const AlignedBytes>> compilePack(const Job &job);
  std::shared_ptr<const AlignedBytes> remembered(const std::string &key);
  void remember(const std::string &key, std::shared_ptr<const AlignedBytes> bytes);
  void bump(uint64_t kiln_jit_stats_t::*field, uint64_t n = 1) {
    std::lock_guard<std::mutex> lock(statsMutex_);
    stats_.*field += n;
  }
  void compiled(double ms) {
    std::lock_guard<std::mutex> lock(statsMutex_);
    ++stats_.compiles;
    stats_.compile_ms += ms;
  }
  void work();

  kiln_jit_options_t options_;
  std::string precision_; ///< kiln-compile --precision's mode for every model
  std::string weights_;   ///< kiln-compile --weights' (float, int8, int4)
  int64_t groupSize_;     ///< kiln-compile --group-size
  std::string calibration_; ///< kiln-compile --calibrate's folder (fp8)
  DiskCache disk_;
  /// Where kernels build (host libraries, cubins): the cache's `kernels`
  /// folder, or privateFolder_ when the cache cannot be written.
  std::string kernelFolder_;
  /// A folder of this process's own (mkdtemp), removed with the JIT; empty
  /// when the cache is written.
  std::string privateFolder_;
  std::vector<int> cubinArchs_; ///< what artifacts carry cubins for; empty: host only
  std::vector<std::thread> threads_;

  std::mutex mutex_; ///< models, single-flight, memory cache, queue
  std::condition_variable changed_;
  std::map<std::string, std::unique_ptr<ModelEntry>> models_;
  /// Models given back while a specialization of theirs ran (under mutex_).
  std::vector<std::unique_ptr<ModelEntry>> released_;
  std::map<std::string, std::shared_ptr<InFlight>> compiling_;
  std::list<std::pair<std::string, std::shared_ptr<const AlignedBytes>>> memory_;
  std::deque<Job> queue_;
  std::set<std::string> variantKeys_; ///< queued, running or done: one compile per key
  int running_ = 0;
  bool stopping_ = false;

  mutable std::mutex statsMutex_;
  kiln_jit_stats_t stats_{};
};

namespace {
/// The JITs alive in the process, so that exit can stop their threads.
///
/// Servers and the Python package keep their JIT for the life of the process
/// and never destroy it. Left alone, a background compile would go on running
/// while exit() tears the process down: after glibc's _dl_fini has run a
/// library's destructors it marks the library uninitialized, and a worker's
/// dlopen of a new kernel library then runs libgomp's constructors a second
/// time (an assertion in goacc_register aborts the process), besides touching
/// statics already destroyed. A handler registered with atexit when the first
/// JIT starts runs before _dl_fini (that one was registered first, and
/// handlers run last-in first-out) and stops every live JIT: queued
/// specializations are dropped, running ones finish and install.
class LiveJits {
public:
  static LiveJits &instance() {
    // Never destroyed: the exit handler may run after static destructors.
    static LiveJits *jits = new LiveJits();
    return *jits;
  }
  void add(Jit *jit) {
    std::lock_guard<std::mutex> lock(mutex_);
    jits_.insert(jit);
    std::call_once(registered_, [] { std::atexit([] { instance().stopAll(); }); });
  }
  void remove(Jit *jit) {
    std::lock_guard<std::mutex> lock(mutex_);
    jits_.erase(jit);
  }
  void stopAll() {
    // Under the lock: a JIT destroyed on another thread meanwhile waits in
    // remove() and cannot join its threads twice.
    std::lock_guard<std::mutex> lock(mutex_);
    for (Jit *jit : jits_)
      jit->stopBackground();
  }

private:
  std::mutex mutex_;
  std::set<Jit *> jits_;
  std::once_flag registered_;
};

void onVariantMiss(void *user, const int64_t *values, size_t count) {
  auto *entry = static_cast<ModelEntry *>(user);
  entry->jit->requestVariant(entry, values, count);
}
} // namespace

absl::Status Jit::start() {
  // A cache folder the JIT may not write (read-only, another user's, or one
  // others may write) costs reuse, never a compile: the kernels then build in
  // a private folder of this process's own.
  if (absl::Status s = disk_.open(); !s.ok())
    std::fprintf(stderr, "kiln-jit: warning: %s\n", std::string(s.message()).c_str());
  if (disk_.writable()) {
    kernelFolder_ = disk_.folder() + "/kernels";
  } else {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/kiln-jit-XXXXXX");
    if (!mkdtemp(pattern.data()))
      return absl::FailedPreconditionError(absl::StrCat(
          "the cache folder ", disk_.folder(), " cannot be written and no private folder "
          "could be made for the kernels (", pattern, ": ", std::strerror(errno), ")"));
    kernelFolder_ = privateFolder_ = pattern;
  }
  // Cubins only where a device may run them (part of every model's key).
  int devices = 0;
  if (options_.backend != KILN_BACKEND_HOST && kiln_cuda_device_count(&devices) == KILN_OK &&
      devices > 0)
    // FP8 tensor cores start at sm_89 (Ada), whose devices load sm_89
    // cubins only: fp8's artifacts carry sm_89's and sm_90's (an older
    // device finds no cubin for its arch and the load says so).
    cubinArchs_ = precision_ == "fp8" ? std::vector<int>{89, 90} : std::vector<int>{80, 90};
  // The folder's contents are read (and hashed) at each compile.
  if (!calibration_.empty() && !llvm::sys::fs::is_directory(calibration_))
    return absl::InvalidArgumentError(absl::StrCat(
        "kiln_jit_create: options->calibration_dir '", calibration_, "' is not a folder"));
  int n = options_.background_threads > 0 ? options_.background_threads : 2;
  for (int i = 0; i < n; ++i)
    threads_.emplace_back([this] { work(); });
  LiveJits::instance().add(this);
  return absl::OkStatus();
}

void Jit::stopBackground() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear(); // queued work is dropped; running work finishes
    changed_.notify_all();
  }
  for (std::thread &t : threads_)
    // Not itself: a worker that calls exit (LLVM's fatal errors do) would wait forever.
    if (t.joinable() && t.get_id() != std::this_thread::get_id())
      t.join();
}

Jit::~Jit() {
  // Out of the registry first: once this returns, exit cannot reach this JIT.
  LiveJits::instance().remove(this);
  stopBackground();
  for (auto &[key, entry] : models_)
    kiln_model_destroy(entry->model);
  for (auto &entry : released_)
    kiln_model_destroy(entry->model);
  // The libraries built there stay loaded (their files may go).
  if (!privateFolder_.empty())
    llvm::sys::fs::remove_directories(privateFolder_);
}

void Jit::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

std::shared_ptr<const AlignedBytes> Jit::remembered(const std::string &key) {
  // Under mutex_.
  for (auto it = memory_.begin(); it != memory_.end(); ++it)
    if (it->first == key) {
      memory_.splice(memory_.begin(), memory_, it); // most recently used first
      return memory_.front().second;
    }
  return nullptr;
}

void Jit::remember(const std::string &key, std::shared_ptr<const AlignedBytes> bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.emplace_front(key, std::move(bytes));
  size_t bound = options_.memory_max_entries ? options_.memory_max_entries : 64;
  while (memory_.size() > bound)
    memory_.pop_back();
}

absl::StatusOr<kiln_model_t *> Jit::compile(const void *data, size_t size,
                                            const std::string &name, const std::string &folder) {
  if (!data || !size)
    return absl::InvalidArgumentError(absl::StrCat(name, ": the model is empty (0 bytes)"));
  llvm::StringRef bytes(static_cast<const char *>(data), size);
  bool mlir = llvm::StringRef(name).ends_with(".mlir");
  // What a compile reads besides the bytes: the external data files, by
  // their contents (a model's weights changed beside it are another model).
  absl::StatusOr<std::string> external =
      mlir ? std::string() : externalDataKey(bytes, name, folder);
  if (!external.ok())
    return external.status();
  // The calibration data the compile reads, by its contents (fp8).
  std::string calibration;
  if (!calibration_.empty()) {
    absl::StatusOr<std::string> read = folderKey(calibration_);
    if (!read.ok())
      return absl::InvalidArgumentError(absl::StrCat(name, ": options->", read.status().message()));
    calibration = *read;
  }
  // Weights as the model has them take no group size.
  std::string weights = weights_ == "float" ? weights_ : absl::StrCat(weights_, " ", groupSize_);
  std::string key = hex(llvm::xxh3_64bits(llvm::StringRef(
      // The format version too: a disk cache written by an older build is
      // recompiled rather than refused at load.
      absl::StrCat("kiln-jit model\n", KILN_VERSION, "\nformat ", artifact::kFormatVersion, "\n",
                   cubinArchs_.empty() ? "host" : absl::StrJoin(cubinArchs_, ","), "\n",
                   "precision ", precision_, "\n", "weights ", weights, "\n",
                   "calibration ", calibration, "\n", mlir ? "mlir" : "onnx", "\n",
                   hex(llvm::xxh3_64bits(bytes)), "\n",
                   *external))));
  // Single flight: the first asker compiles, the others wait for its handle.
  std::shared_ptr<InFlight> flight;
  bool mine = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (auto it = models_.find(key); it != models_.end()) {
        ++it->second->handles;
        return it->second->model;
      }
      auto [it, inserted] = compiling_.try_emplace(key, nullptr);
      if (inserted) {
        it->second = std::make_shared<InFlight>();
        mine = true;
      }
      flight = it->second;
      if (mine)
        break;
      changed_.wait(lock, [&] { return flight->done; });
      if (!flight->status.ok())
        return flight->status;
      // The model is in models_ now (unless every handle was given back
      // since, when the loop compiles it again); take a handle of it there.
    }
  }
  auto finish = [&](absl::Status status, kiln_model_t *model) -> absl::StatusOr<kiln_model_t *> {
    std::lock_guard<std::mutex> lock(mutex_);
    flight->done = true;
    flight->status = status;
    flight->model = model;
    compiling_.erase(key);
    changed_.notify_all();
    if (!status.ok())
      return status;
    return model;
  };
  absl::StatusOr<std::shared_ptr<const AlignedBytes>> artifact =
      artifactFor(key, bytes, name, folder);
  if (!artifact.ok())
    return finish(artifact.status(), nullptr);
  auto entry = std::make_unique<ModelEntry>();
  entry->jit = this;
  entry->key = key;
  entry->artifact = *artifact;
  absl::StatusOr<artifact::Plan> plan =
      artifact::readArtifact((*artifact)->data(), (*artifact)->size);
  if (!plan.ok())
    return finish(plan.status(), nullptr);
  entry->plan = std::move(*plan);
  kiln_model_t *model = nullptr;
  kiln_load_options_t load = KILN_LOAD_OPTIONS_INIT;
  load.backend = options_.backend;
  load.device = options_.device;
  if (kiln_model_load_memory_with((*artifact)->data(), (*artifact)->size, &load, &model) != KILN_OK)
    return finish(absl::FailedPreconditionError(absl::StrCat(name, ": ", kiln_last_error())),
                  nullptr);
  entry->model = model;
  kiln_backend_t backend = KILN_BACKEND_HOST;
  kiln_model_backend(model, &backend);
  if (backend == KILN_BACKEND_CUDA) {
    const char *description = "";
    kiln_model_backend_description(model, &description);
    // "cuda on NVIDIA H200 (sm_90)": the SM specializations compile for.
    if (const char *sm = std::strstr(description, "(sm_"))
      entry->sm = std::atoi(sm + 4);
  }
  if (options_.specialize)
    kiln_model_set_variant_miss_handler(model, onVariantMiss, entry.get());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entry->handles = 1; // the asker's
    models_.emplace(key, std::move(entry));
  }
  return finish(absl::OkStatus(), model);
}

absl::StatusOr<std::shared_ptr<const AlignedBytes>>
Jit::cached(const std::string &file, const std::function<bool(const AlignedBytes &)> &intact,
            const std::function<absl::StatusOr<std::shared_ptr<const AlignedBytes>>()> &build) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::shared_ptr<const AlignedBytes> bytes = remembered(file)) {
      bump(&kiln_jit_stats_t::memory_hits);
      return bytes;
    }
  }
  DiskCache::Entry entry = disk_.read(file);
  if (entry.bytes && intact(*entry.bytes)) {
    bump(&kiln_jit_stats_t::disk_hits);
    remember(file, entry.bytes);
    return entry.bytes;
  }
  if (!entry.writtenFor.empty()) {
    // Another key's entry under this one's name (copied, renamed): never
    // taken for it. Its bytes are whole, so it is left to be replaced.
    std::fprintf(stderr,
                 "kiln-jit: warning: cache entry %s/%s was written for %s, not for this key; "
                 "compiling it again\n",
                 disk_.folder().c_str(), file.c_str(), entry.writtenFor.c_str());
    bump(&kiln_jit_stats_t::damaged);
  } else if (entry.bytes || entry.damaged) {
    std::fprintf(stderr, "kiln-jit: warning: cache entry %s/%s is damaged; compiling it again\n",
                 disk_.folder().c_str(), file.c_str());
    disk_.remove(file);
    bump(&kiln_jit_stats_t::damaged);
  }
  bump(&kiln_jit_stats_t::misses);
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::shared_ptr<const AlignedBytes>> bytes = build();
  if (!bytes.ok())
    return bytes.status();
  compiled(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  bump(&kiln_jit_stats_t::evictions, disk_.write(file, **bytes));
  remember(file, *bytes);
  return bytes;
}

absl::StatusOr<std::shared_ptr<const AlignedBytes>>
Jit::artifactFor(const std::string &key, llvm::StringRef bytes, const std::string &name,
                 const std::string &folder) {
  return cached(
      "model-" + key + ".kiln",
      [](const AlignedBytes &b) { return artifact::readArtifact(b.data(), b.size).ok(); },
      [&] { return compileArtifact(bytes, name, folder); });
}

absl::Status Jit::compileWith(llvm::StringRef bytes, const std::string &name,
                              const std::string &folder, bool deferWeights,
                              const std::function<absl::Status(CompiledArtifact &)> &use) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error && diagnostics.empty())
      diagnostics = d.str();
    return mlir::success();
  });
  LoadOptions load;
  load.optimize = true;
  // Imported from the bytes themselves: no copy of the model is written
  // anywhere (a shared cache folder is no place for one).
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModelBytes(context, bytes, name, folder, load);
  auto failed = [&](const char *stage) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", diagnostics.empty() ? stage : diagnostics));
  };
  if (!module || mlir::failed(checkTensorSizes(*module, uint64_t(1) << 36)))
    return failed("cannot be imported");
  ArtifactOptions options;
  options.cubinArchs = cubinArchs_;
  options.cacheDir = kernelFolder_;
  options.jobs = 1;
  options.source = name;
  options.deferWeights = deferWeights;
  options.pipeline.precision = precision_;
  options.pipeline.calibration = calibration_;
  options.pipeline.weightBits = weights_ == "int4" ? 4 : weights_ == "int8" ? 8 : 0;
  options.pipeline.weightGroupSize = groupSize_;
  mlir::FailureOr<CompiledArtifact> artifact = compileToArtifact(*module, options);
  if (mlir::failed(artifact))
    return failed("cannot be compiled");
  absl::Status status = use(*artifact);
  return status.ok() || !status.message().empty() ? status : failed("cannot be compiled");
}

absl::StatusOr<std::shared_ptr<const AlignedBytes>>
Jit::compileArtifact(llvm::StringRef bytes, const std::string &name, const std::string &folder) {
  auto out = std::make_shared<AlignedBytes>();
  // The weights go from the module's constants straight into the bytes the
  // JIT keeps: in memory twice at the peak, not three times.
  absl::Status status =
      compileWith(bytes, name, folder, /*deferWeights=*/true, [&](CompiledArtifact &artifact) {
        out->size = artifact.size();
        out->words.reset(new uint64_t[out->size / 8 + 1]);
        auto *at = reinterpret_cast<char *>(out->words.get());
        if (mlir::failed(forEachArtifactPiece(artifact, [&](llvm::ArrayRef<char> piece) {
              if (!piece.empty())
                std::memcpy(at, piece.data(), piece.size());
              at += piece.size();
            })))
          return absl::InternalError("");
        return absl::OkStatus();
      });
  if (!status.ok())
    return status;
  return std::shared_ptr<const AlignedBytes>(std::move(out));
}

absl::StatusOr<std::string> Jit::explain(const void *data, size_t size, const std::string &name) {
  std::string text;
  absl::Status status =
      compileWith(llvm::StringRef(static_cast<const char *>(data), size), name, "",
                  /*deferWeights=*/false, [&](CompiledArtifact &artifact) {
                    text = explainText(artifact.report, name);
                    return absl::OkStatus();
                  });
  if (!status.ok())
    return status;
  return text;
}

void Jit::requestVariant(ModelEntry *entry, const int64_t *values, size_t count) {
  if (count != entry->plan.symbols.size() || count == 0)
    return;
  for (size_t i = 0; i < count; ++i)
    if (values[i] < 0)
      return; // an unbound symbol cannot be fixed
  std::string key = entry->key;
  for (size_t i = 0; i < count; ++i)
    absl::StrAppend(&key, ",", values[i]);
  absl::StrAppend(&key, entry->sm ? absl::StrCat(",sm_", entry->sm) : ",host");
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || variantKeys_.count(key))
    return;
  size_t limit = options_.queue_limit ? options_.queue_limit : 64;
  if (queue_.size() >= limit || entry->requested >= kMaxVariantsPerModel) {
    bump(&kiln_jit_stats_t::dropped); // a later miss may queue it when there is room
    return;
  }
  variantKeys_.insert(key);
  ++entry->requested;
  queue_.push_back({entry, std::vector<int64_t>(values, values + count), key});
  changed_.notify_all();
}

void Jit::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return; // stopping
      job = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      ++job.entry->jobsRunning;
    }
    absl::StatusOr<std::shared_ptr<const AlignedBytes>> pack = packFor(job);
    bool installed = false;
    if (pack.ok()) {
      size_t added = 0;
      installed = kiln_model_add_variants(job.entry->model, (*pack)->data(), (*pack)->size,
                                          &added) == KILN_OK;
      if (!installed)
        std::fprintf(stderr, "kiln-jit: warning: variant %s not installed: %s\n",
                     job.key.c_str(), kiln_last_error());
    } else {
      std::fprintf(stderr, "kiln-jit: warning: variant %s not compiled: %s\n", job.key.c_str(),
                   std::string(pack.status().message()).c_str());
    }
    bump(installed ? &kiln_jit_stats_t::specializations : &kiln_jit_stats_t::failed);
    std::unique_ptr<ModelEntry> retire;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
      if (--job.entry->jobsRunning == 0)
        for (auto it = released_.begin(); it != released_.end(); ++it)
          if (it->get() == job.entry) {
            retire = std::move(*it);
            released_.erase(it);
            break;
          }
      changed_.notify_all();
    }
    if (retire) // given back while this job ran: destroyed now that it is done
      kiln_model_destroy(retire->model);
  }
}

absl::Status Jit::release(kiln_model_t *model) {
  std::unique_ptr<ModelEntry> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = models_.begin();
    while (it != models_.end() && it->second->model != model)
      ++it;
    if (it == models_.end())
      return absl::InvalidArgumentError(
          "kiln_jit_release: the model is not one this JIT compiled, or every handle of it "
          "was given back already");
    if (--it->second->handles > 0)
      return absl::OkStatus();
    entry = std::move(it->second);
    models_.erase(it);
    // Its queued specializations go, and with them their keys, so that the
    // same model compiled again specializes again.
    for (auto job = queue_.begin(); job != queue_.end();)
      job = job->entry == entry.get() ? queue_.erase(job) : std::next(job);
    std::string prefix = entry->key + ",";
    for (auto key = variantKeys_.lower_bound(prefix);
         key != variantKeys_.end() && key->compare(0, prefix.size(), prefix) == 0;)
      key = variantKeys_.erase(key);
    // Its artifact's bytes leave memory (the disk cache keeps them).
    std::string file = "model-" + entry->key + ".kiln";
    memory_.remove_if([&](const auto &kept) { return kept.first == file; });
    if (entry->jobsRunning > 0) {
      released_.push_back(std::move(entry)); // the worker destroys it
      return absl::OkStatus();
    }
  }
  kiln_model_destroy(entry->model);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const AlignedBytes>> Jit::packFor(const Job &job) {
  return cached(
      "variant-" + hex(llvm::xxh3_64bits(llvm::StringRef(job.key))) + ".kvar",
      [&](const AlignedBytes &b) {
        return artifact::readVariantPack(b.data(), b.size, job.entry->plan).ok();
      },
      [&] { return compilePack(job); });
}

absl::StatusOr<std::shared_ptr<const AlignedBytes>> Jit::compilePack(const Job &job) {
  namespace fb = kiln::schema;
  const artifact::Plan &plan = job.entry->plan;
  // Every symbol fixed to the call's value: the kernels that take any of them
  // are compiled again with those values as constants.
  std::vector<std::string> defines;
  std::vector<int> ids;
  std::string name;
  for (size_t i = 0; i < plan.symbols.size(); ++i) {
    defines.push_back(absl::StrCat("-DKILN_SYM_", plan.symbols[i], "=", job.values[i]));
    ids.push_back(static_cast<int>(i));
    absl::StrAppend(&name, name.empty() ? "" : ",", plan.symbols[i], "=", job.values[i]);
  }
  // Kernels whose sizes all fit at these values take their 32-bit body
  // (Kernel.index32_sizes, withIndex32).
  artifact::Bindings bindings(job.values.begin(), job.values.end());
  std::vector<GeneratedKernel> kernels;
  std::vector<int> kernelIds;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    if (plan.kernels[k].symbols.empty())
      continue;
    GeneratedKernel g;
    g.name = plan.kernels[k].name;
    g.source = plan.kernels[k].source;
    for (int s : plan.kernels[k].symbols)
      g.symbols.push_back(plan.symbols[s]);
    kernels.push_back(artifact::index32Fits(plan.kernels[k], bindings) ? withIndex32(std::move(g))
                                                                       : std::move(g));
    kernelIds.push_back(static_cast<int>(k));
  }
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::VariantKernel>> variantKernels;
  std::vector<flatbuffers::Offset<fb::HostLibrary>> libraries;
  if (job.entry->sm) {
    nvrtc::NvrtcOptions options;
    options.smVersion = job.entry->sm;
    options.extraOptions = defines;
    // The device library the artifact was compiled with.
    options.headers = {{"kiln/device/kiln_device.h", plan.deviceLibrary}};
    for (size_t i = 0; i < kernels.size(); ++i) {
      absl::StatusOr<nvrtc::NvrtcResult> r = nvrtc::compileWithNvrtc(
          kernelTranslationUnit({kernels[i]}), kernels[i].name + ".cu", options);
      if (!r.ok())
        return r.status();
      std::vector<flatbuffers::Offset<fb::Cubin>> cubins = {fb::CreateCubin(
          b, job.entry->sm,
          b.CreateVector(reinterpret_cast<const uint8_t *>(r->cubin.data()), r->cubin.size()),
          b.CreateString(r->ptx))};
      variantKernels.push_back(fb::CreateVariantKernel(b, kernelIds[i], b.CreateVector(cubins)));
    }
  } else {
    for (int k : kernelIds)
      variantKernels.push_back(fb::CreateVariantKernel(b, k));
    if (!kernels.empty()) {
      absl::StatusOr<std::unique_ptr<HostKernels>> host =
          HostKernels::build(kernels, kernelFolder_, /*chunkSize=*/100, 1, defines);
      if (!host.ok())
        return host.status();
      for (const HostKernels::Library &lib : (*host)->libraries()) {
        std::optional<std::string> bytes = readCacheEntry(lib.path);
        if (!bytes)
          return absl::InternalError(absl::StrCat("the host library ", lib.path, " vanished"));
        // The pack is what the JIT caches (under its bound): the build's own
        // files would otherwise grow the kernels folder without one.
        for (const char *suffix : {"", ".xxh3"})
          std::remove((lib.path + suffix).c_str());
        std::remove((lib.path.substr(0, lib.path.size() - 3) + ".cpp").c_str());
        std::vector<flatbuffers::Offset<flatbuffers::String>> names;
        for (const std::string &n : lib.kernels)
          names.push_back(b.CreateString(n));
        libraries.push_back(fb::CreateHostLibrary(
            b, b.CreateVector(names),
            b.CreateVector(reinterpret_cast<const uint8_t *>(bytes->data()), bytes->size()), 0));
      }
    }
  }
  std::vector<int64_t> values(job.values.begin(), job.values.end());
  std::vector<flatbuffers::Offset<fb::Variant>> variants = {
      fb::CreateVariant(b, b.CreateString(name), b.CreateVector(ids), b.CreateVector(values),
                        b.CreateVector(variantKernels))};
  b.ForceDefaults(true);
  auto pack = fb::CreateVariantPack(b, artifact::kFormatVersion, plan.checksum,
                                    b.CreateVector(variants), b.CreateVector(libraries), 0);
  fb::FinishVariantPackBuffer(b, pack);
  auto bytes = AlignedBytes::copy(b.GetBufferPointer(), b.GetSize());
  artifact::sealVariantPack(const_cast<uint8_t *>(bytes->data()), bytes->size);
  return bytes;
}

} // namespace kiln::jit

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

struct kiln_jit_t {
  std::unique_ptr<kiln::jit::Jit> jit;
};

namespace {
kiln_status_t fail(const absl::Status &s) {
  kiln::jit::lastError = std::string(s.message());
  switch (s.code()) {
  case absl::StatusCode::kInvalidArgument:
  case absl::StatusCode::kNotFound:
  case absl::StatusCode::kResourceExhausted:
  case absl::StatusCode::kFailedPrecondition:
  case absl::StatusCode::kOutOfRange:
  case absl::StatusCode::kUnimplemented:
  case absl::StatusCode::kUnavailable:
    return static_cast<kiln_status_t>(s.code());
  default:
    return KILN_INTERNAL;
  }
}

template <typename Body> kiln_status_t guarded(const char *what, Body body) {
  try {
    return body();
  } catch (const std::exception &e) {
    return fail(absl::InternalError(absl::StrCat(what, ": ", e.what())));
  } catch (...) {
    return fail(absl::InternalError(absl::StrCat(what, ": an unknown exception")));
  }
}
} // namespace

void kiln_jit_options_init(kiln_jit_options_t *options) {
  if (!options)
    return;
  *options = kiln_jit_options_t{};
  options->struct_size = sizeof(kiln_jit_options_t);
  options->backend = KILN_BACKEND_AUTO;
  options->specialize = 1;
}

kiln_status_t kiln_jit_create(const kiln_jit_options_t *options, kiln_jit_t **out_jit) {
  return guarded("kiln_jit_create", [&] {
    if (!out_jit)
      return fail(absl::InvalidArgumentError("kiln_jit_create: out_jit is NULL"));
    kiln_jit_options_t o;
    kiln_jit_options_init(&o);
    if (options) {
      if (options->struct_size < offsetof(kiln_jit_options_t, cache_dir) + sizeof(void *))
        return fail(absl::InvalidArgumentError("kiln_jit_create: options->struct_size is too small"));
      std::memcpy(&o, options, std::min(options->struct_size, sizeof(o)));
    }
    bool fp8 = o.precision && std::string_view(o.precision) == "fp8";
    if (o.precision && *o.precision && !fp8 && kiln::ref::precisionTolerance(o.precision) < 0)
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "kiln_jit_create: options->precision '", o.precision,
          "' is not one of fp32, tf32, fp16, bf16, fp8")));
    bool calibrated = o.calibration_dir && *o.calibration_dir;
    if (fp8 && !calibrated)
      return fail(absl::InvalidArgumentError(
          "kiln_jit_create: options->precision 'fp8' needs options->calibration_dir: the "
          "activations' scales come from the range they reach on its data sets"));
    if (calibrated && !fp8)
      return fail(absl::InvalidArgumentError(
          "kiln_jit_create: options->calibration_dir sets FP8 scales: it needs precision 'fp8'"));
    if (o.weights && *o.weights && std::string_view(o.weights) != "float" &&
        std::string_view(o.weights) != "int8" && std::string_view(o.weights) != "int4")
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "kiln_jit_create: options->weights '", o.weights, "' is not one of float, int8, int4")));
    if (int64_t g = o.weight_group_size; g && (g < 16 || g > 65536 || (g & (g - 1)) != 0))
      return fail(absl::InvalidArgumentError(
          absl::StrCat("kiln_jit_create: options->weight_group_size ", g,
                       " is not a power of 2 from 16 to 65536")));
    if (o.device < 0)
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "kiln_jit_create: options->device is ", o.device, ", not a device ordinal")));
    auto jit = std::make_unique<kiln_jit_t>();
    jit->jit = std::make_unique<kiln::jit::Jit>(o);
    if (absl::Status s = jit->jit->start(); !s.ok())
      return fail(s);
    *out_jit = jit.release();
    return KILN_OK;
  });
}

void kiln_jit_destroy(kiln_jit_t *jit) { delete jit; }

kiln_status_t kiln_jit_compile_memory(kiln_jit_t *jit, const void *data, size_t size,
                                      const char *name, kiln_model_t **out_model) {
  return guarded("kiln_jit_compile_memory", [&] {
    if (!jit || !out_model)
      return fail(absl::InvalidArgumentError("kiln_jit_compile_memory: a NULL argument"));
    absl::StatusOr<kiln_model_t *> model =
        jit->jit->compile(data, size, name ? name : "model.onnx", /*folder=*/"");
    if (!model.ok())
      return fail(model.status());
    *out_model = *model;
    return KILN_OK;
  });
}

kiln_status_t kiln_jit_compile_file(kiln_jit_t *jit, const char *path, kiln_model_t **out_model) {
  return guarded("kiln_jit_compile_file", [&] {
    if (!jit || !path || !out_model)
      return fail(absl::InvalidArgumentError("kiln_jit_compile_file: a NULL argument"));
    absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> file = kiln::jit::readRegularFile(path);
    if (!file.ok())
      return fail(file.status());
    // External data resolves beside the model, never in the cache folder.
    llvm::StringRef folder = llvm::sys::path::parent_path(path);
    absl::StatusOr<kiln_model_t *> model =
        jit->jit->compile((*file)->getBufferStart(), (*file)->getBufferSize(),
                          llvm::sys::path::filename(path).str(),
                          folder.empty() ? std::string(".") : folder.str());
    if (!model.ok())
      return fail(model.status());
    *out_model = *model;
    return KILN_OK;
  });
}

kiln_status_t kiln_jit_explain_memory(kiln_jit_t *jit, const void *data, size_t size,
                                      const char *name, const char **out_text) {
  return guarded("kiln_jit_explain_memory", [&] {
    if (!jit || !data || !out_text)
      return fail(absl::InvalidArgumentError("kiln_jit_explain_memory: a NULL argument"));
    absl::StatusOr<std::string> text = jit->jit->explain(data, size, name ? name : "model.onnx");
    if (!text.ok())
      return fail(text.status());
    kiln::jit::lastExplain = std::move(*text);
    *out_text = kiln::jit::lastExplain.c_str();
    return KILN_OK;
  });
}

kiln_status_t kiln_jit_release(kiln_jit_t *jit, kiln_model_t *model) {
  return guarded("kiln_jit_release", [&] {
    if (!jit || !model)
      return fail(absl::InvalidArgumentError("kiln_jit_release: a NULL argument"));
    if (absl::Status s = jit->jit->release(model); !s.ok())
      return fail(s);
    return KILN_OK;
  });
}

kiln_status_t kiln_jit_wait_idle(kiln_jit_t *jit) {
  return guarded("kiln_jit_wait_idle", [&] {
    if (!jit)
      return fail(absl::InvalidArgumentError("kiln_jit_wait_idle: jit is NULL"));
    jit->jit->waitIdle();
    return KILN_OK;
  });
}

kiln_status_t kiln_jit_stats(const kiln_jit_t *jit, kiln_jit_stats_t *out_stats) {
  return guarded("kiln_jit_stats", [&] {
    if (!jit || !out_stats)
      return fail(absl::InvalidArgumentError("kiln_jit_stats: a NULL argument"));
    *out_stats = jit->jit->stats();
    return KILN_OK;
  });
}

const char *kiln_jit_last_error(void) { return kiln::jit::lastError.c_str(); }
