//===- HostEmulation.cpp - generated kernels run on the CPU ---------------===//

#include "codegen/HostEmulation.h"

#include "codegen/DeviceLibrary.h"
#include "codegen/KernelCache.h"
#include "codegen/StepEncoding.h"

#include "kiln/artifact/EntryName.h"
#include "kiln/artifact/HostLaunch.h"
#include "ir/Kiln/KilnDialect.h"

#include "absl/strings/str_cat.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <set>

namespace kiln {

std::string defaultCacheDir() {
  if (std::optional<std::string> dir = llvm::sys::Process::GetEnv("KILN_CACHE_DIR"))
    return *dir;
  llvm::SmallString<256> home;
  if (llvm::sys::path::home_directory(home)) {
    llvm::sys::path::append(home, ".cache", "kiln");
    return home.str().str();
  }
  return "/tmp/kiln-cache";
}

namespace {
/// Numbers this process's temporary files (threads build at once: the JIT).
std::atomic<int> temporaries{0};

/// The host compiler and the flags kernels build with (part of the cache key).
struct Compiler {
  std::string path;
  std::vector<std::string> flags;
};

absl::StatusOr<Compiler> findCompiler(const std::string &cacheDir) {
  std::string name = llvm::sys::Process::GetEnv("CXX").value_or("c++");
  llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(name);
  if (!path)
    return absl::NotFoundError(absl::StrCat("host emulation needs a C++ compiler; '", name,
                                            "' is not on PATH (set CXX)"));
  absl::StatusOr<std::string> include = deviceLibraryIncludeDir(cacheDir);
  if (!include.ok())
    return include.status();
  // The include folder's name is the device library's content hash, so the
  // flags (part of the cache key) change when the library does.
  Compiler compiler{
      *path, {"-std=c++17", "-O1", "-fPIC", "-shared", "-fopenmp", "-w", "-I" + *include}};
  // A test mode: N threads per block (kiln_device.h says what it checks).
  if (std::optional<std::string> threads = llvm::sys::Process::GetEnv("KILN_HOST_BLOCK_THREADS")) {
    int n = 0;
    if (!llvm::to_integer(*threads, n, 10) || n < 1 || n > 256)
      return absl::InvalidArgumentError(
          absl::StrCat("KILN_HOST_BLOCK_THREADS='", *threads,
                       "': threads per block in host emulation must be 1 to 256"));
    compiler.flags.push_back("-pthread");
    compiler.flags.push_back("-DKILN_HOST_BLOCK_THREADS=" + std::to_string(n));
  }
  return compiler;
}

/// The compiler, then a flag per line (the fake CUDA driver's .flags).
std::string buildFlags(const Compiler &compiler) {
  std::string text = compiler.path + "\n";
  for (const std::string &f : compiler.flags)
    text += f + "\n";
  return text;
}

/// Writes `text()` to `path` unless it is there (the text is made only then),
/// aside and renamed as the sources are; best effort (nothing when it cannot).
void writeAside(const std::string &path, llvm::function_ref<std::string()> text) {
  if (!llvm::sys::fs::exists(path))
    (void)writeFileAtomically(path, text());
}
} // namespace

// The libraries stay loaded for the life of the process: OpenMP's worker threads
// started from their code outlive any one HostKernels, and unloading the code
// under them crashes.
HostKernels::~HostKernels() = default;

/// The entry point `kernel` exports when built with `defines`: tagged with
/// the value of each of its symbols a -DKILN_SYM_<name>=<value> fixes
/// (kiln/artifact/EntryName.h).
static std::string entryName(const GeneratedKernel &kernel, const std::vector<std::string> &defines) {
  std::vector<std::pair<int, int64_t>> fixed;
  for (size_t i = 0; i < kernel.symbols.size(); ++i) {
    std::string prefix = "-DKILN_SYM_" + kernel.symbols[i] + "=";
    for (const std::string &d : defines) {
      int64_t value = 0;
      if (d.rfind(prefix, 0) == 0 && !llvm::StringRef(d).drop_front(prefix.size()).getAsInteger(10, value))
        fixed.emplace_back(static_cast<int>(i), value);
    }
  }
  return artifact::variantEntryName(kernel.name, fixed);
}

absl::StatusOr<std::unique_ptr<HostKernels>>
HostKernels::build(const std::vector<GeneratedKernel> &kernels, std::string cacheDir,
                   int chunkSize, int jobs, const std::vector<std::string> &defines) {
  if (cacheDir.empty())
    cacheDir = defaultCacheDir();
  if (std::error_code ec = llvm::sys::fs::create_directories(cacheDir))
    return absl::InternalError(absl::StrCat("cannot create ", cacheDir, ": ", ec.message()));
  // Absolute, so the flags (the include folder) mean the same from any
  // working directory: the fake CUDA driver builds from them again.
  {
    llvm::SmallString<256> absolute(cacheDir);
    if (!llvm::sys::fs::make_absolute(absolute))
      cacheDir = absolute.str().str();
  }
  absl::StatusOr<Compiler> compiler = findCompiler(cacheDir);
  if (!compiler.ok())
    return compiler.status();
  // Part of the flags, so of every cache key too.
  compiler->flags.insert(compiler->flags.end(), defines.begin(), defines.end());
  // Kernels sorted by name, so a chunk (and its cache key) depends only on its
  // kernels, not on the order they were generated in.
  std::vector<const GeneratedKernel *> unique;
  std::set<std::string> seen;
  for (const GeneratedKernel &k : kernels)
    if (seen.insert(k.name).second)
      unique.push_back(&k);
  std::sort(unique.begin(), unique.end(),
            [](const GeneratedKernel *a, const GeneratedKernel *b) { return a->name < b->name; });

  struct Job {
    std::string source, library;
    bool cached = false; ///< an intact library is in the cache
    std::vector<const GeneratedKernel *> kernels;
  };
  std::vector<Job> work;
  for (size_t i = 0; i < unique.size(); i += chunkSize) {
    Job job;
    std::vector<GeneratedKernel> chunk;
    for (size_t j = i; j < std::min(unique.size(), i + chunkSize); ++j) {
      job.kernels.push_back(unique[j]);
      chunk.push_back(*unique[j]);
    }
    std::string tu = kernelTranslationUnit(chunk);
    std::string key = tu;
    for (const std::string &f : compiler->flags)
      key += "\n" + f;
    // The device library is part of what the shared object was built from.
    key += deviceLibraryText();
    std::string hex;
    llvm::raw_string_ostream(hex) << llvm::format_hex_no_prefix(llvm::xxh3_64bits(key), 16);
    llvm::SmallString<256> base(cacheDir);
    // Libraries specialized for a variant (defines) are named apart, hostvar-:
    // their entry points carry the values they were built for (EntryName.h).
    llvm::sys::path::append(base, (defines.empty() ? "host-" : "hostvar-") + hex);
    job.source = (base + ".cpp").str();
    job.library = (base + ".so").str();
    job.cached = verifyCacheEntry(job.library);
    // How the library is built, and the source of its kernels whose threads
    // meet, beside it: the fake CUDA driver builds those again at a launch's
    // block size (KILN_HOST_BLOCK_THREADS); the others run as they are, one
    // thread per block being right for them. Best effort: a cache built
    // before may be read-only, and only the fake driver needs the files (it
    // says so when they are missing).
    writeAside((base + ".flags").str(), [&] { return buildFlags(*compiler); });
    writeAside((base + ".threads.cpp").str(), [&] {
      std::vector<GeneratedKernel> meeting;
      for (const GeneratedKernel &k : chunk)
        if (k.threadsMeet)
          meeting.push_back(k);
      return kernelTranslationUnit(meeting);
    });
    if (!job.cached) {
      // Written aside and renamed: another process building the same library
      // from this cache must never compile half a file.
      if (std::error_code ec = writeFileAtomically(job.source, tu))
        return absl::InternalError(absl::StrCat("cannot write ", job.source, ": ", ec.message()));
    }
    work.push_back(std::move(job));
  }

  // Compile what the cache lacks, `jobs` at a time; each writes a temporary file
  // and renames it, so a concurrent or interrupted build never leaves half a library.
  struct Running {
    llvm::sys::ProcessInfo process;
    const Job *job;
    std::string temporary;
  };
  std::vector<Running> running;
  auto finish = [](Running &r) -> absl::Status {
    std::string error;
    llvm::sys::ProcessInfo done = llvm::sys::Wait(r.process, std::nullopt, &error);
    if (done.ReturnCode != 0) {
      llvm::sys::fs::remove(r.temporary);
      return absl::InternalError(absl::StrCat("the host compiler failed on ", r.job->source,
                                              " (exit ", done.ReturnCode, ") ", error));
    }
    if (std::error_code ec = llvm::sys::fs::rename(r.temporary, r.job->library))
      return absl::InternalError(absl::StrCat("cannot rename ", r.temporary, ": ", ec.message()));
    // Unsealed, the library would be rebuilt next time rather than trusted.
    sealCacheEntry(r.job->library);
    return absl::OkStatus();
  };
  for (const Job &job : work) {
    if (job.cached)
      continue;
    while (static_cast<int>(running.size()) >= std::max(jobs, 1)) {
      absl::Status s = finish(running.front());
      running.erase(running.begin());
      if (!s.ok())
        return s;
    }
    std::string temporary = absl::StrCat(job.library, ".tmp", llvm::sys::Process::getProcessId(),
                                         "-", ++temporaries);
    std::vector<std::string> args = {compiler->path};
    args.insert(args.end(), compiler->flags.begin(), compiler->flags.end());
    args.insert(args.end(), {"-o", temporary, job.source});
    std::vector<llvm::StringRef> argv(args.begin(), args.end());
    std::string error;
    bool failedToStart = false;
    llvm::sys::ProcessInfo pi =
        llvm::sys::ExecuteNoWait(compiler->path, argv, std::nullopt, {}, 0, &error, &failedToStart);
    if (failedToStart)
      return absl::InternalError(absl::StrCat("cannot run ", compiler->path, ": ", error));
    running.push_back({pi, &job, temporary});
  }
  for (Running &r : running) {
    absl::Status s = finish(r);
    if (!s.ok())
      return s;
  }

  std::unique_ptr<HostKernels> lib(new HostKernels());
  for (const Job &job : work) {
    void *handle = dlopen(job.library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!handle)
      return absl::InternalError(absl::StrCat("cannot load ", job.library, ": ", dlerror()));
    lib->handles.push_back(handle);
    Library built{job.library, {}};
    for (const GeneratedKernel *k : job.kernels)
      built.kernels.push_back(k->name);
    lib->built.push_back(std::move(built));
    for (const GeneratedKernel *k : job.kernels) {
      std::string entry = entryName(*k, defines);
      void *sym = dlsym(handle, (entry + "_host").c_str());
      if (!sym)
        return absl::InternalError(absl::StrCat(job.library, " lacks ", entry));
      lib->launchers[k->name] = reinterpret_cast<void (*)(void **, int64_t)>(sym);
    }
  }
  return lib;
}

absl::Status HostKernels::run(const GeneratedKernel &kernel,
                              const std::vector<const ref::Tensor *> &inputs,
                              ref::Tensor &result, const std::vector<int64_t> &symbolValues) const {
  auto it = launchers.find(kernel.name);
  if (it == launchers.end())
    return absl::NotFoundError(absl::StrCat("kernel ", kernel.name, " was not built"));
  std::vector<void *> pointers = {result.bytes()};
  for (const ref::Tensor *t : inputs)
    pointers.push_back(const_cast<uint8_t *>(t->bytes()));
  std::vector<int64_t> symbols = symbolValues;
  std::vector<void *> args;
  for (void *&p : pointers)
    args.push_back(&p);
  for (int64_t &s : symbols)
    args.push_back(&s);
  // The kernel scratch: zero, as the runtime keeps it (a constant size:
  // the schedules that take one size it by their constants alone).
  std::vector<uint8_t> scratch;
  uint8_t *scratchPointer = nullptr;
  if (kernel.scratchBytes) {
    std::optional<int64_t> bytes = getConstantDimValue(kernel.scratchBytes);
    if (!bytes || *bytes < 0)
      return absl::InternalError(absl::StrCat(kernel.name, ": its scratch has no constant size"));
    scratch.assign(static_cast<size_t>(*bytes), 0);
    scratchPointer = scratch.data();
    args.push_back(&scratchPointer);
  }
  int32_t errorWord = 0;
  int32_t *errorPointer = &errorWord;
  if (kernel.reportsErrors)
    args.push_back(&errorPointer);
  int64_t work = result.numel();
  for (const ref::Tensor *t : inputs)
    work += t->numel();
  int64_t grid = artifact::hostGrid(result.numel(), work);
  it->second(args.data(), grid);
  // Bad data the kernel met fails the run, as it does in the runtime.
  if (errorWord)
    return absl::InvalidArgumentError(absl::StrCat(kernel.name, ": ", artifact::kernelErrorText(errorWord)));
  return absl::OkStatus();
}

std::function<mlir::FailureOr<ref::Tensor>(KernelOp, llvm::ArrayRef<ref::Tensor>,
                                           InterpretOptions::Evaluate)>
hostKernelRunner(const HostKernels &kernels) {
  return [&kernels](KernelOp kernel, llvm::ArrayRef<ref::Tensor> inputs,
                    InterpretOptions::Evaluate evaluate) -> mlir::FailureOr<ref::Tensor> {
    mlir::FailureOr<GeneratedKernel> g = emitKernel(kernel);
    if (mlir::failed(g))
      return mlir::failure();
    auto type = mlir::cast<mlir::RankedTensorType>(kernel.getResult(0).getType());
    ref::Shape shape;
    for (DimExpr d : getSymShape(type)) {
      std::optional<int64_t> size = evaluate(d);
      if (!size)
        return kernel.emitError("a result dim has no value at run time");
      shape.push_back(*size);
    }
    std::vector<int64_t> symbols;
    for (const std::string &name : g->symbols)
      symbols.push_back(evaluate(getSymbolDim(kernel.getContext(), name)).value_or(0));
    ref::Tensor result(*toRefType(type.getElementType()), shape);
    std::vector<const ref::Tensor *> pointers;
    for (const ref::Tensor &t : inputs)
      pointers.push_back(&t);
    absl::Status status = kernels.run(*g, pointers, result, symbols);
    if (!status.ok())
      return kernel.emitError() << std::string(status.message());
    return result;
  };
}

} // namespace kiln
