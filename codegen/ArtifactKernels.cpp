//===- ArtifactKernels.cpp - kernels, cubins and variants -------------------===//
//
// ArtifactWriter's kernels: their table entries, cubins compiled through NVRTC
// (cached by content), host-emulation libraries, and the shape-bucket
// variants that recompile them with symbols fixed.
//
//===----------------------------------------------------------------------===//

#include "codegen/ArtifactWriter.h"

#include "kiln/nvrtc/Nvrtc.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <atomic>
#include <thread>

using namespace mlir;

namespace kiln {

/// The schema's schedule for codegen's name of one.
std::optional<fb::Schedule> scheduleOf(llvm::StringRef name) {
  if (name == "pointwise")
    return fb::Schedule::Pointwise;
  if (name == "reduction")
    return fb::Schedule::Reduction;
  if (name == "row")
    return fb::Schedule::Row;
  if (name == "compaction")
    return fb::Schedule::Compaction;
  if (name == "attention")
    return fb::Schedule::Attention;
  return std::nullopt;
}


LogicalResult
ArtifactWriter::compileCubins(const std::vector<size_t> &kernelIds, const std::vector<std::string> &defines,
                      std::vector<std::vector<flatbuffers::Offset<fb::Cubin>>> &cubins,
                      const std::string &variantName, const std::set<size_t> &index32) {
  struct Job {
    size_t kernel; ///< index into kernelIds
    int sm;
    absl::StatusOr<nvrtc::NvrtcResult> result = absl::UnknownError("not run");
  };
  std::vector<Job> jobs;
  for (size_t k = 0; k < kernelIds.size(); ++k)
    for (int sm : options.cubinArchs)
      jobs.push_back({k, sm});
  std::string defineKey;
  for (const std::string &d : defines)
    defineKey += "\n" + d;
  std::string version = nvrtc::nvrtcVersion();
  if (!jobs.empty())
    llvm::sys::fs::create_directories(cacheDir); // a missing cache only means no reuse
  auto run = [&](Job &job) {
    const GeneratedKernel kernel = index32.count(kernelIds[job.kernel])
                                       ? withIndex32(kernels[kernelIds[job.kernel]])
                                       : kernels[kernelIds[job.kernel]];
    if (options.prebuiltCubins && defines.empty()) {
      auto it = options.prebuiltCubins->find(kernel.name);
      if (it != options.prebuiltCubins->end()) {
        job.result = *it->second;
        return;
      }
    }
    std::string tu = kernelTranslationUnit({kernel});
    // Cached by what NVRTC sees: the source, the device library, the arch,
    // NVRTC's version and a variant's defines.
    std::string key = tu + "\n" + deviceLibrary + "\nsm_" + std::to_string(job.sm) + "\n" +
                      version + defineKey;
    llvm::SmallString<256> base(cacheDir);
    std::string hex;
    llvm::raw_string_ostream(hex) << llvm::format_hex_no_prefix(llvm::xxh3_64bits(key), 16);
    llvm::sys::path::append(base, "cubin-" + hex);
    std::string cubinPath = (base + ".cubin").str(), ptxPath = (base + ".ptx").str();
    std::optional<std::string> cachedCubin = readCacheEntry(cubinPath);
    std::optional<std::string> cachedPtx = cachedCubin ? readCacheEntry(ptxPath) : std::nullopt;
    if (cachedCubin && cachedPtx) {
      job.result = nvrtc::NvrtcResult{std::move(*cachedCubin), std::move(*cachedPtx), ""};
      return;
    }
    nvrtc::NvrtcOptions nvrtcOptions;
    nvrtcOptions.smVersion = job.sm;
    nvrtcOptions.headers = {deviceLibraryHeader()};
    nvrtcOptions.extraOptions = defines;
    job.result = nvrtc::compileWithNvrtc(tu, kernel.name + ".cu", nvrtcOptions);
    if (job.result.ok()) {
      writeCacheEntry(cubinPath, job.result->cubin); // a failed write only means no reuse
      writeCacheEntry(ptxPath, job.result->ptx);
    }
  };
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, options.jobs); ++t)
    threads.emplace_back([&] {
      for (size_t j = next++; j < jobs.size(); j = next++)
        run(jobs[j]);
    });
  for (std::thread &t : threads)
    t.join();
  cubins.assign(kernelIds.size(), {});
  for (Job &job : jobs) {
    if (!job.result.ok())
      return func.emitError() << "NVRTC failed on " << kernels[kernelIds[job.kernel]].name << " for sm_"
                              << job.sm << ": " << std::string(job.result.status().message());
    const std::string &bin = job.result->cubin;
    if (!options.cubinDumpDir.empty()) {
      // A variant's cubins go to variants/<its name>/ below the dump.
      llvm::SmallString<256> path(options.cubinDumpDir);
      if (!variantName.empty()) {
        llvm::sys::path::append(path, "variants", variantName);
        if (std::error_code ec = llvm::sys::fs::create_directories(path))
          return func.emitError() << "cannot create " << path << ": " << ec.message();
      }
      llvm::sys::path::append(path, kernels[kernelIds[job.kernel]].name + ".sm_" +
                                        std::to_string(job.sm) + ".cubin");
      if (std::error_code ec = writeFile(path, bin))
        return func.emitError() << "cannot write " << path << ": " << ec.message();
    }
    cubins[job.kernel].push_back(fb::CreateCubin(
        builder, job.sm,
        builder.CreateVector(reinterpret_cast<const uint8_t *>(bin.data()), bin.size()),
        builder.CreateString(options.includePtx ? job.result->ptx : std::string())));
  }
  return success();
}

LogicalResult ArtifactWriter::hostLibraries(const std::vector<size_t> &kernelIds,
                                    const std::vector<std::string> &defines, int variant,
                                    std::vector<flatbuffers::Offset<fb::HostLibrary>> &out,
                                    const std::set<size_t> &index32) {
  if (!options.hostLibrary || kernelIds.empty())
    return success();
  std::vector<GeneratedKernel> wantedKernels;
  for (size_t k : kernelIds)
    wantedKernels.push_back(index32.count(k) ? withIndex32(kernels[k]) : kernels[k]);
  std::unique_ptr<HostKernels> own;
  const HostKernels *host = defines.empty() ? options.hostKernels : nullptr;
  if (!host) {
    absl::StatusOr<std::unique_ptr<HostKernels>> built =
        HostKernels::build(wantedKernels, cacheDir, /*chunkSize=*/100, options.jobs, defines);
    if (!built.ok())
      return func.emitError() << std::string(built.status().message());
    own = std::move(*built);
    host = own.get();
  }
  std::set<std::string> wanted;
  for (const GeneratedKernel &k : wantedKernels)
    wanted.insert(k.name);
  for (const HostKernels::Library &lib : host->libraries()) {
    std::vector<std::string> names;
    for (const std::string &k : lib.kernels)
      if (wanted.count(k))
        names.push_back(k);
    if (names.empty())
      continue;
    // Checked once more as it goes into the artifact, which seals it: damage
    // here would otherwise ship under a valid checksum.
    std::optional<std::string> bytes = readCacheEntry(lib.path);
    if (!bytes || bytes->empty())
      return func.emitError() << "the host-emulation library " << lib.path
                              << " is missing or changed while compiling; compile again";
    std::vector<flatbuffers::Offset<flatbuffers::String>> nameOffsets;
    for (const std::string &n : names)
      nameOffsets.push_back(builder.CreateString(n));
    out.push_back(fb::CreateHostLibrary(
        builder, builder.CreateVector(nameOffsets),
        builder.CreateVector(reinterpret_cast<const uint8_t *>(bytes->data()), bytes->size()),
        variant));
  }
  return success();
}

FailureOr<std::vector<flatbuffers::Offset<fb::Variant>>>
ArtifactWriter::buildVariants(std::vector<flatbuffers::Offset<fb::HostLibrary>> &hostLibs) {
  std::vector<flatbuffers::Offset<fb::Variant>> out;
  std::set<std::vector<std::pair<int, int64_t>>> seen;
  llvm::json::Array report;
  for (const std::vector<std::pair<std::string, int64_t>> &spec : options.variants) {
    // The symbols by number, ascending, as the runtime keys variants.
    std::vector<std::pair<int, int64_t>> fixed;
    for (const auto &[name, value] : spec) {
      auto it = symbolIds.find(name);
      if (it == symbolIds.end() || !boundSymbols.count(name)) {
        std::string known;
        for (const std::string &s : boundSymbols)
          known += (known.empty() ? "" : ", ") + s;
        return func.emitError() << "a bucket names symbol '" << name
                                << "', which no input dim of the model has (its symbols: "
                                << (known.empty() ? "none" : known) << ")";
      }
      if (value < 0)
        return func.emitError() << "a bucket gives symbol '" << name << "' the value " << value
                                << "; sizes are >= 0";
      fixed.emplace_back(it->second, value);
    }
    std::sort(fixed.begin(), fixed.end());
    if (fixed.empty() || fixed.size() > static_cast<size_t>(artifact::kMaxVariantSymbols))
      return func.emitError() << "a bucket fixes " << fixed.size() << " symbols; 1 to "
                              << artifact::kMaxVariantSymbols << " are allowed";
    if (!seen.insert(fixed).second)
      continue; // the same bucket twice is one variant
    std::vector<std::string> defines;
    std::vector<int> ids;
    std::vector<int64_t> values;
    std::string name;
    std::map<std::string, int64_t> fixedValues;
    for (auto [id, value] : fixed) {
      defines.push_back("-DKILN_SYM_" + symbols[id] + "=" + std::to_string(value));
      ids.push_back(id);
      values.push_back(value);
      fixedValues[symbols[id]] = value;
      name += (name.empty() ? "" : ",") + symbols[id] + "=" + std::to_string(value);
    }
    // Only kernels that take a fixed symbol have anything to specialize;
    // those whose sizes all become constants that fit take their 32-bit body
    // (withIndex32).
    std::vector<size_t> specialized;
    std::set<size_t> narrowed;
    for (size_t k = 0; k < kernels.size(); ++k)
      if (llvm::any_of(kernels[k].symbols, [&](const std::string &s) { return fixedValues.count(s); })) {
        specialized.push_back(k);
        if (index32Fits(kernels[k], fixedValues))
          narrowed.insert(k);
      }
    std::vector<std::vector<flatbuffers::Offset<fb::Cubin>>> cubins;
    if (failed(compileCubins(specialized, defines, cubins, name, narrowed)) ||
        failed(hostLibraries(specialized, defines, static_cast<int>(out.size()), hostLibs, narrowed)))
      return failure();
    std::vector<flatbuffers::Offset<fb::VariantKernel>> variantKernels;
    for (size_t i = 0; i < specialized.size(); ++i)
      variantKernels.push_back(fb::CreateVariantKernel(builder, static_cast<int>(specialized[i]),
                                                       builder.CreateVector(cubins[i])));
    out.push_back(fb::CreateVariant(builder, builder.CreateString(name), builder.CreateVector(ids),
                                    builder.CreateVector(values),
                                    builder.CreateVector(variantKernels)));
    report.push_back(llvm::json::Object{{"name", name},
                                        {"specialized_kernels", static_cast<int64_t>(specialized.size())},
                                        {"index32_kernels", static_cast<int64_t>(narrowed.size())}});
  }
  variantReport = std::move(report);
  return out;
}

/// Each kernel's table entry, with its cubins.
FailureOr<std::vector<flatbuffers::Offset<fb::Kernel>>>
ArtifactWriter::buildKernelTable(const std::vector<size_t> &allKernels) {
  std::vector<std::vector<flatbuffers::Offset<fb::Cubin>>> cubins;
  if (failed(compileCubins(allKernels, {}, cubins)))
    return failure();
  std::vector<flatbuffers::Offset<fb::Kernel>> kernelTable;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::optional<fb::Schedule> schedule = scheduleOf(kernels[k].schedule);
    if (!schedule)
      return func.emitError() << "kernel " << kernels[k].name << " has schedule '"
                              << kernels[k].schedule << "', which the artifact has no value for";
    std::vector<int> syms, deviceSyms;
    for (const std::string &s : kernels[k].symbols)
      syms.push_back(symbolId(s));
    for (const std::string &s : kernels[k].deviceSymbols)
      deviceSyms.push_back(symbolId(s));
    std::vector<flatbuffers::Offset<fb::Dim>> index32Sizes;
    for (DimExpr size : kernels[k].index32Sizes)
      index32Sizes.push_back(dim(size));
    std::vector<flatbuffers::Offset<fb::BoundedRead>> boundedReads;
    for (const auto &[input, elements] : kernels[k].boundedReads)
      boundedReads.push_back(fb::CreateBoundedRead(builder, input, dim(elements)));
    // Tensor cores from some rows on (matmul_nbits): the rows and their L2.
    bool tensorCoreSwitch = kernels[k].tensorCoreRows && kernels[k].tensorCoreMinRows > 0;
    kernelTable.push_back(fb::CreateKernel(
        builder, builder.CreateString(kernels[k].name), builder.CreateString(kernels[k].source),
        *schedule, builder.CreateVector(syms), kernels[k].blockPerItem,
        builder.CreateVector(cubins[k]),
        builder.CreateVector(kernelSignatures[k]), builder.CreateVector(kernelShapes[k]),
        kernels[k].reportsErrors,
        kernels[k].workItems ? dim(kernels[k].workItems) : flatbuffers::Offset<fb::Dim>(),
        kernels[k].flops ? dim(kernels[k].flops) : flatbuffers::Offset<fb::Dim>(),
        index32Sizes.empty() ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Dim>>>()
                             : builder.CreateVector(index32Sizes),
        boundedReads.empty()
            ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::BoundedRead>>>()
            : builder.CreateVector(boundedReads),
        kernels[k].l2Bytes ? dim(kernels[k].l2Bytes) : flatbuffers::Offset<fb::Dim>(),
        deviceSyms.empty() ? flatbuffers::Offset<flatbuffers::Vector<int32_t>>()
                           : builder.CreateVector(deviceSyms),
        kernels[k].scratchBytes ? dim(kernels[k].scratchBytes) : flatbuffers::Offset<fb::Dim>(),
        kernels[k].halfTensorCoreFlops ? fb::FlopUnit::Half : fb::FlopUnit::Fp32,
        tensorCoreSwitch ? dim(kernels[k].tensorCoreRows) : flatbuffers::Offset<fb::Dim>(),
        tensorCoreSwitch ? kernels[k].tensorCoreMinRows : 0,
        tensorCoreSwitch && kernels[k].tensorCoreL2Bytes ? dim(kernels[k].tensorCoreL2Bytes)
                                                         : flatbuffers::Offset<fb::Dim>()));
  }
  return kernelTable;
}

} // namespace kiln
