//===- NvrtcCheck.cpp - every generated kernel through NVRTC --------------===//

#include "codegen/NvrtcCheck.h"

#include "codegen/DeviceLibrary.h"

#include "kiln/nvrtc/Nvrtc.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <thread>

namespace kiln {
namespace {

/// Each distinct kernel once, ordered by name (so batches do not depend on the
/// order kernels were generated in).
std::vector<const GeneratedKernel *> distinctKernels(const std::vector<GeneratedKernel> &kernels) {
  std::map<std::string, const GeneratedKernel *> unique;
  for (const GeneratedKernel &k : kernels)
    unique.emplace(k.name, &k);
  std::vector<const GeneratedKernel *> all;
  for (auto &[name, k] : unique)
    all.push_back(k);
  return all;
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
                    const std::string &cubinDir) {
  std::vector<const GeneratedKernel *> all = distinctKernels(kernels);
  if (!cubinDir.empty()) {
    // A fresh folder: cubins of an earlier run with more batches would linger.
    llvm::sys::fs::remove_directories(cubinDir);
    llvm::sys::fs::create_directories(cubinDir);
    llvm::json::Array manifest;
    for (const GeneratedKernel *k : all) {
      llvm::json::Object entry{{"name", k->name}, {"schedule", k->schedule}};
      addLintFacts(entry, *k);
      manifest.push_back(std::move(entry));
    }
    std::error_code ec;
    llvm::raw_fd_ostream os(cubinDir + "/kernels.json", ec);
    if (ec) {
      llvm::errs() << "error: cannot write " << cubinDir << "/kernels.json: " << ec.message() << "\n";
      return false;
    }
    os << llvm::json::Object{{"kernels", std::move(manifest)}};
  }
  // Batches compile on separate threads (NVRTC programs are independent).
  const size_t chunk = 100;
  struct Result {
    bool ok = true;
    size_t spills = 0;
    std::string messages;
  };
  size_t batches = (all.size() + chunk - 1) / chunk;
  std::vector<Result> results(batches);
  auto compileBatch = [&](size_t b) {
    Result &result = results[b];
    std::vector<GeneratedKernel> batch;
    for (size_t j = b * chunk; j < std::min(all.size(), (b + 1) * chunk); ++j)
      batch.push_back(*all[j]);
    std::string tu = kernelTranslationUnit(batch);
    // The first batch also compiles with the fast-math variant of the device library.
    std::vector<std::pair<int, bool>> variants = {{80, false}, {90, false}};
    if (b == 0)
      variants.push_back({90, true});
    for (auto [sm, fastMath] : variants) {
      nvrtc::NvrtcOptions options;
      options.smVersion = sm;
      options.extraOptions = {"--ptxas-options=-v"};
      options.headers = {deviceLibraryHeader()};
      if (fastMath)
        options.extraOptions.push_back("-DKILN_FAST_MATH");
      absl::StatusOr<nvrtc::NvrtcResult> r =
          nvrtc::compileWithNvrtc(tu, "kernels-" + std::to_string(b) + ".cu", options);
      if (!r.ok()) {
        result.messages += "error: " + std::string(r.status().message()) + "\n";
        result.ok = false;
        continue;
      }
      if (!cubinDir.empty() && sm == 90 && !fastMath) {
        std::error_code ec;
        llvm::raw_fd_ostream os(cubinDir + "/kernels-" + std::to_string(b) + ".sm_90.cubin", ec);
        if (ec) {
          result.messages += "error: cannot write a cubin to " + cubinDir + ": " + ec.message() + "\n";
          result.ok = false;
        } else {
          os << r->cubin;
          // The source beside it, to read a violation's kernel.
          llvm::raw_fd_ostream(cubinDir + "/kernels-" + std::to_string(b) + ".cu", ec) << tu;
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
  onThreads(batches, jobs, compileBatch);
  bool ok = true;
  size_t spills = 0;
  for (const Result &r : results) {
    ok &= r.ok;
    spills += r.spills;
    llvm::errs() << r.messages;
  }
  llvm::outs() << "NVRTC compiled " << all.size() << " kernels for sm_80 and sm_90; " << spills
         << " spill reports (none allowed in pointwise kernels)\n";
  return ok;
}

absl::StatusOr<std::map<std::string, std::shared_ptr<const nvrtc::NvrtcResult>>>
compileKernelsForArch(const std::vector<GeneratedKernel> &kernels, int sm, int jobs) {
  std::vector<const GeneratedKernel *> all = distinctKernels(kernels);
  const size_t chunk = 100;
  size_t batches = (all.size() + chunk - 1) / chunk;
  std::vector<absl::StatusOr<nvrtc::NvrtcResult>> results(batches, absl::UnknownError("not run"));
  onThreads(batches, jobs, [&](size_t b) {
    std::vector<GeneratedKernel> batch;
    for (size_t j = b * chunk; j < std::min(all.size(), (b + 1) * chunk); ++j)
      batch.push_back(*all[j]);
    nvrtc::NvrtcOptions options;
    options.smVersion = sm;
    options.headers = {deviceLibraryHeader()};
    results[b] = nvrtc::compileWithNvrtc(kernelTranslationUnit(batch),
                                      "kernels-" + std::to_string(b) + ".cu", options);
  });
  std::map<std::string, std::shared_ptr<const nvrtc::NvrtcResult>> out;
  for (size_t b = 0; b < batches; ++b) {
    if (!results[b].ok())
      return results[b].status();
    auto shared = std::make_shared<const nvrtc::NvrtcResult>(std::move(*results[b]));
    for (size_t j = b * chunk; j < std::min(all.size(), (b + 1) * chunk); ++j)
      out[all[j]->name] = shared;
  }
  return out;
}

} // namespace kiln
