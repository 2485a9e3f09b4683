//===- NvrtcCheck.cpp - every generated kernel through NVRTC --------------===//

#include "codegen/NvrtcCheck.h"

#include "codegen/DeviceLibrary.h"
#include "codegen/KernelCache.h"

#include "kiln/nvrtc/Nvrtc.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <thread>

namespace kiln {
namespace {

/// Each distinct kernel once, ordered by name, cut into translation units by
/// content: a unit ends after a kernel whose name hashes to 0 modulo
/// kMeanBatch (or at kMaxBatch kernels). A kernel more or less then changes
/// one unit, not every unit after it, so runs over nearly the same kernels (the
/// host check and the fake-CUDA run of one mode, two precision modes) compile
/// nearly the same units and share them through the cache.
std::vector<std::vector<const GeneratedKernel *>>
batchesOf(const std::vector<GeneratedKernel> &kernels) {
  constexpr uint64_t kMeanBatch = 100;
  constexpr size_t kMaxBatch = 200;
  std::map<std::string, const GeneratedKernel *> unique;
  for (const GeneratedKernel &k : kernels)
    unique.emplace(k.name, &k);
  std::vector<std::vector<const GeneratedKernel *>> batches(1);
  for (auto &[name, k] : unique) {
    batches.back().push_back(k);
    if (llvm::xxh3_64bits(name) % kMeanBatch == 0 || batches.back().size() == kMaxBatch)
      batches.emplace_back();
  }
  if (batches.back().empty())
    batches.pop_back();
  return batches;
}

/// The options every batch compiles with: ptxas's resource report (the
/// check reads spills from the log) whoever compiles it, so that the check
/// and a run share their cache entries.
nvrtc::NvrtcOptions batchOptions(int sm, bool fastMath) {
  nvrtc::NvrtcOptions options;
  options.smVersion = sm;
  options.extraOptions = {"--ptxas-options=-v"};
  options.headers = {deviceLibraryHeader()};
  if (fastMath)
    options.extraOptions.push_back("-DKILN_FAST_MATH");
  return options;
}

/// The CUDA C of one batch.
std::string translationUnitOf(const std::vector<const GeneratedKernel *> &batch) {
  std::vector<GeneratedKernel> kernels;
  for (const GeneratedKernel *k : batch)
    kernels.push_back(*k);
  return kernelTranslationUnit(kernels);
}

/// Compiles batch unit `tu` (named `name` in errors), or reads it from
/// `cacheDir` (none when empty) as nvrtc-<hash>.{cubin,ptx,log}, keyed by what
/// NVRTC sees.
absl::StatusOr<nvrtc::NvrtcResult> compileBatch(const std::string &tu, const std::string &name,
                                                const nvrtc::NvrtcOptions &options,
                                                const std::string &cacheDir) {
  if (cacheDir.empty())
    return nvrtc::compileWithNvrtc(tu, name, options);
  std::string key = tu + "\nsm_" + std::to_string(options.smVersion) + "\n" + nvrtc::nvrtcVersion();
  for (const std::string &o : options.extraOptions)
    key += "\n" + o;
  for (const auto &[include, text] : options.headers)
    key += "\n" + include + "\n" + text;
  std::string hex;
  llvm::raw_string_ostream(hex) << llvm::format_hex_no_prefix(llvm::xxh3_64bits(key), 16);
  llvm::SmallString<256> base(cacheDir);
  llvm::sys::path::append(base, "nvrtc-" + hex);
  std::string cubinPath = (base + ".cubin").str(), ptxPath = (base + ".ptx").str(),
              logPath = (base + ".log").str();
  std::optional<std::string> cubin = readCacheEntry(cubinPath);
  std::optional<std::string> ptx = cubin ? readCacheEntry(ptxPath) : std::nullopt;
  std::optional<std::string> log = ptx ? readCacheEntry(logPath) : std::nullopt;
  if (cubin && ptx && log)
    return nvrtc::NvrtcResult{std::move(*cubin), std::move(*ptx), std::move(*log)};
  absl::StatusOr<nvrtc::NvrtcResult> result = nvrtc::compileWithNvrtc(tu, name, options);
  if (result.ok()) {
    // A failed write only means no reuse; the log last, so an entry is read
    // only when all three are there.
    llvm::sys::fs::create_directories(cacheDir);
    writeCacheEntry(cubinPath, result->cubin);
    writeCacheEntry(ptxPath, result->ptx);
    writeCacheEntry(logPath, result->log);
  }
  return result;
}

/// Runs `work(b)` for every batch b < `batches` on `jobs` threads (NVRTC
/// programs are independent).
void onThreads(size_t batches, int jobs, const std::function<void(size_t)> &work) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, jobs); ++t)
    threads.emplace_back([&] {
      for (size_t b = next++; b < batches; b = next++)
        work(b);
    });
  for (std::thread &t : threads)
    t.join();
}

} // namespace

bool checkWithNvrtc(const std::vector<GeneratedKernel> &kernels, int jobs,
                    const std::string &cubinDir, const std::string &cacheDir,
                    const std::vector<int> &architectures) {
  if (architectures.empty()) {
    llvm::errs() << "error: the NVRTC check was given no architecture\n";
    return false;
  }
  std::vector<std::vector<const GeneratedKernel *>> batches = batchesOf(kernels);
  size_t kernelCount = 0;
  for (const auto &batch : batches)
    kernelCount += batch.size();
  if (!cubinDir.empty()) {
    // A fresh folder: cubins of an earlier run with more batches would linger.
    llvm::sys::fs::remove_directories(cubinDir);
    llvm::sys::fs::create_directories(cubinDir);
    llvm::json::Array manifest;
    for (const auto &batch : batches)
      for (const GeneratedKernel *k : batch) {
        llvm::json::Object entry{{"name", k->name}, {"schedule", k->schedule}};
        addLintFacts(entry, *k);
        manifest.push_back(std::move(entry));
      }
    std::string json;
    llvm::raw_string_ostream os(json);
    os << llvm::json::Value(llvm::json::Object{{"kernels", std::move(manifest)}});
    if (std::error_code ec = writeFile(cubinDir + "/kernels.json", json)) {
      llvm::errs() << "error: cannot write " << cubinDir << "/kernels.json: " << ec.message() << "\n";
      return false;
    }
  }
  struct Result {
    bool ok = true;
    size_t spills = 0;
    std::string messages;
  };
  std::vector<Result> results(batches.size());
  auto check = [&](size_t b) {
    Result &result = results[b];
    std::string tu = translationUnitOf(batches[b]);
    std::string name = "kernels-" + std::to_string(b) + ".cu";
    // The first batch also compiles with the fast-math variant of the device library.
    std::vector<std::pair<int, bool>> variants;
    for (int sm : architectures)
      variants.push_back({sm, false});
    if (b == 0)
      variants.push_back({architectures.back(), true});
    for (auto [sm, fastMath] : variants) {
      absl::StatusOr<nvrtc::NvrtcResult> r =
          compileBatch(tu, name, batchOptions(sm, fastMath), cacheDir);
      if (!r.ok()) {
        result.messages += "error: " + std::string(r.status().message()) + "\n";
        result.ok = false;
        continue;
      }
      if (!cubinDir.empty() && sm == 90 && !fastMath) {
        std::error_code ec =
            writeFile(cubinDir + "/kernels-" + std::to_string(b) + ".sm_90.cubin", r->cubin);
        // The source beside it, to read a violation's kernel.
        if (!ec)
          ec = writeFile(cubinDir + "/" + name, tu);
        if (ec) {
          result.messages += "error: cannot write a cubin to " + cubinDir + ": " + ec.message() + "\n";
          result.ok = false;
        }
      }
      // ptxas reports per function: "Compiling entry function 'NAME' ..." and then
      // "N bytes spill stores, M bytes spill loads".
      std::string current;
      for (llvm::StringRef line : llvm::split(r->log, '\n')) {
        size_t at = line.find("Compiling entry function '");
        if (at != llvm::StringRef::npos) {
          current = line.drop_front(at + 26).split('\'').first.str();
          continue;
        }
        if (line.contains("bytes spill stores") && !line.contains(" 0 bytes spill stores")) {
          ++result.spills;
          if (llvm::StringRef(current).starts_with("kiln_pointwise_")) {
            result.messages += "error: " + current + " spills registers on sm_" +
                               std::to_string(sm) + ": " + line.trim().str() + "\n";
            result.ok = false;
          }
        }
      }
    }
  };
  onThreads(batches.size(), jobs, check);
  bool ok = true;
  size_t spills = 0;
  for (const Result &r : results) {
    ok &= r.ok;
    spills += r.spills;
    llvm::errs() << r.messages;
  }
  llvm::outs() << "NVRTC compiled " << kernelCount << " kernels for sm_80 and sm_90; " << spills
         << " spill reports (none allowed in pointwise kernels)\n";
  return ok;
}

absl::StatusOr<std::map<std::string, std::shared_ptr<const nvrtc::NvrtcResult>>>
compileKernelsForArch(const std::vector<GeneratedKernel> &kernels, int sm, int jobs,
                      const std::string &cacheDir) {
  std::vector<std::vector<const GeneratedKernel *>> batches = batchesOf(kernels);
  std::vector<absl::StatusOr<nvrtc::NvrtcResult>> results(batches.size(),
                                                          absl::UnknownError("not run"));
  onThreads(batches.size(), jobs, [&](size_t b) {
    results[b] = compileBatch(translationUnitOf(batches[b]), "kernels-" + std::to_string(b) + ".cu",
                              batchOptions(sm, /*fastMath=*/false), cacheDir);
  });
  std::map<std::string, std::shared_ptr<const nvrtc::NvrtcResult>> out;
  for (size_t b = 0; b < batches.size(); ++b) {
    if (!results[b].ok())
      return results[b].status();
    auto shared = std::make_shared<const nvrtc::NvrtcResult>(std::move(*results[b]));
    for (const GeneratedKernel *k : batches[b])
      out[k->name] = shared;
  }
  return out;
}

} // namespace kiln
