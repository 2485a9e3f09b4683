//===- Model.cpp - load and run a compiled model ---------------------------===//

#include "Model.h"

#include <limits>
#include <mutex>

#include "HostExecutor.h"
#include "cuda/CudaExecutor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::rt {
namespace {

/// The symbol a model .so from kiln-compile exports (see tools/kiln-compile.cpp).
constexpr const char *kEmbeddedArtifactSymbol = "kiln_embedded_artifact";
using EmbeddedArtifactFn = const void *(*)(size_t *);

/// dlopen trusts the file: a truncated shared object faults (SIGBUS) while it is
/// mapped. Check that the ELF headers and every loadable segment lie inside it.
absl::Status checkElfExtent(int fd, size_t fileSize, const std::string &path) {
  Elf64_Ehdr header;
  auto truncated = [&](const char *what) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is a truncated or corrupt shared object (",
                                                   what, " lies past its end)"));
  };
  if (fileSize < sizeof(header) || pread(fd, &header, sizeof(header), 0) != sizeof(header))
    return truncated("the ELF header");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_phentsize != sizeof(Elf64_Phdr))
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a 64-bit shared object"));
  uint64_t phEnd = header.e_phoff + uint64_t(header.e_phnum) * sizeof(Elf64_Phdr);
  if (phEnd > fileSize)
    return truncated("the program header table");
  if (header.e_shoff + uint64_t(header.e_shnum) * header.e_shentsize > fileSize)
    return truncated("the section header table");
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (pread(fd, &ph, sizeof(ph), header.e_phoff + i * sizeof(ph)) != sizeof(ph))
      return truncated("a program header");
    if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > fileSize)
      return truncated("a loadable segment");
  }
  return absl::OkStatus();
}

} // namespace

Model::~Model() {
  if (mapping_)
    munmap(mapping_, size_);
  if (weightsMapping_)
    munmap(weightsMapping_, weightsSize_);
}

namespace {
std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1));
}

/// A regular file opened for reading, and its size.
absl::StatusOr<std::pair<int, size_t>> openRegularFile(const std::string &path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
  }
  return std::make_pair(fd, static_cast<size_t>(st.st_size));
}
} // namespace

absl::StatusOr<std::pair<void *, size_t>> Model::mapFile(const std::string &path) {
  absl::StatusOr<std::pair<int, size_t>> file = openRegularFile(path);
  if (!file.ok())
    return file.status();
  auto [fd, size] = *file;
  void *mapping = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  close(fd);
  if (size && mapping == MAP_FAILED)
    return absl::InternalError(absl::StrCat("cannot map ", path, ": ", std::strerror(errno)));
  return std::make_pair(mapping, size);
}

absl::StatusOr<std::unique_ptr<Model>> Model::loadFile(const std::string &path, Backend backend,
                                                       int device) {
  absl::StatusOr<std::pair<int, size_t>> file = openRegularFile(path);
  if (!file.ok())
    return file.status();
  auto [fd, fileSize] = *file;
  char magic[4] = {0, 0, 0, 0};
  ssize_t got = pread(fd, magic, 4, 0);
  if (got == 4 && std::memcmp(magic, "\x7f" "ELF", 4) == 0) {
    absl::Status extent = checkElfExtent(fd, fileSize, path);
    close(fd);
    if (!extent.ok())
      return extent;
    // A model .so from kiln-compile: its artifact is in its read-only data.
    void *handle = dlopen(path.find('/') == std::string::npos ? ("./" + path).c_str() : path.c_str(),
                          RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return absl::InvalidArgumentError(absl::StrCat("cannot load ", path, ": ", dlerror()));
    auto embedded = reinterpret_cast<EmbeddedArtifactFn>(dlsym(handle, kEmbeddedArtifactSymbol));
    if (!embedded)
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is a shared object but not a model from kiln-compile (no ",
                       kEmbeddedArtifactSymbol, ")"));
    size_t size = 0;
    const void *data = embedded(&size);
    absl::StatusOr<std::unique_ptr<Model>> model =
        loadWith(data, size, backend, device, folderOf(path), nullptr);
    if (!model.ok())
      return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
    return model;
  }
  close(fd);
  absl::StatusOr<std::pair<void *, size_t>> mapped = mapFile(path);
  if (!mapped.ok())
    return mapped.status();
  absl::StatusOr<std::unique_ptr<Model>> model =
      loadWith(static_cast<const uint8_t *>(mapped->first), mapped->second, backend, device,
               folderOf(path), mapped->first);
  if (!model.ok())
    return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> Model::loadWith(const void *data, size_t size,
                                                       Backend backend, int device,
                                                       std::string folder, void *mapping) {
  std::unique_ptr<Model> model(new Model());
  model->mapping_ = mapping;
  model->data_ = static_cast<const uint8_t *>(data);
  model->size_ = size;
  model->folder_ = std::move(folder);
  if (absl::Status s = model->prepare(backend, device); !s.ok())
    return s;
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> Model::loadEmbedded(const void *data, size_t size,
                                                           Backend backend, int device) {
  if (!data && size)
    return absl::InvalidArgumentError("artifact data is NULL");
  // The data of a model .so: its weights file, if any, lies beside the .so.
  Dl_info info;
  std::string folder;
  if (data && dladdr(data, &info) && info.dli_fname && *info.dli_fname)
    folder = folderOf(info.dli_fname);
  return loadWith(data, size, backend, device, folder, nullptr);
}

absl::StatusOr<std::unique_ptr<Model>> Model::loadMemory(const void *data, size_t size,
                                                         Backend backend, int device) {
  if (!data && size)
    return absl::InvalidArgumentError("artifact data is NULL");
  std::unique_ptr<Model> model(new Model());
  // A private copy, aligned as the weights inside it expect.
  constexpr size_t kAlign = artifact::kWeightAlignment;
  size_t padded = (size + kAlign - 1) / kAlign * kAlign;
  void *copy = std::aligned_alloc(kAlign, std::max<size_t>(padded, kAlign));
  if (!copy)
    return absl::ResourceExhaustedError("cannot allocate memory for the artifact");
  if (size)
    std::memcpy(copy, data, size);
  model->copy_ = std::unique_ptr<uint8_t, void (*)(void *)>(static_cast<uint8_t *>(copy), std::free);
  model->data_ = model->copy_.get();
  model->size_ = size;
  if (absl::Status s = model->prepare(backend, device); !s.ok())
    return s;
  return model;
}

absl::Status Model::prepare(Backend requested, int device) {
  auto resolveWeights = [&](const std::string &name)
      -> absl::StatusOr<std::pair<const uint8_t *, size_t>> {
    if (folder_.empty())
      return absl::FailedPreconditionError(absl::StrCat(
          "the artifact's weights are in the separate file '", name,
          "'; load the artifact from its file (kiln_model_load_file) so it can be found"));
    absl::StatusOr<std::pair<void *, size_t>> mapped = mapFile(folder_ + "/" + name);
    if (!mapped.ok())
      return mapped.status();
    weightsMapping_ = mapped->first;
    weightsSize_ = mapped->second;
    return std::make_pair(static_cast<const uint8_t *>(weightsMapping_), weightsSize_);
  };
  absl::StatusOr<Plan> plan = artifact::readArtifact(data_, size_, resolveWeights);
  if (!plan.ok())
    return plan.status();
  plan_ = std::move(*plan);
  // Host steps decoded once, indexed as StepInfo::index numbers every level.
  hostSteps_.resize(plan_.stepCount);
  stepLabels_.resize(plan_.stepCount);
  absl::Status decoded = absl::OkStatus();
  artifact::forEachStep(plan_, [&](const artifact::StepInfo &info) {
    stepLabels_[info.index] = info.label;
    if (info.kind == artifact::StepKind::Kernel && plan_.kernels[info.kernel].reportsErrors)
      reportsErrors_ = true;
    if (info.kind != artifact::StepKind::Host || !decoded.ok())
      return;
    absl::StatusOr<HostStep> step = decodeHostStep(info, info.index);
    if (!step.ok()) {
      decoded = step.status();
      return;
    }
    hostSteps_[info.index] = std::move(*step);
  });
  if (!decoded.ok())
    return decoded;

  // The artifact's variants: the first dispatch table (the executors load
  // their code below).
  auto table = std::make_unique<DispatchTable>();
  if (plan_.variants.size() > static_cast<size_t>(kMaxVariants))
    return absl::InvalidArgumentError(absl::StrCat("the artifact has ", plan_.variants.size(),
                                                   " variants; the runtime holds at most ",
                                                   kMaxVariants));
  for (size_t v = 0; v < plan_.variants.size(); ++v) {
    if (chooseIn(*table, plan_.variants[v]) >= 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "corrupt artifact: variant ", plan_.variants[v].name, " repeats the values of another"));
    addToTable(*table, plan_.variants[v], static_cast<int>(v));
  }
  dispatch_.store(table.get(), std::memory_order_release);
  tables_.push_back(std::move(table));

  std::string noCuda;
  if (requested == Backend::Cuda || requested == Backend::Auto) {
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::create(plan_, device);
    if (cuda.ok()) {
      executor_ = std::move(*cuda);
      device_ = device;
      description_ = executor_->description();
      return absl::OkStatus();
    }
    if (requested == Backend::Cuda)
      return cuda.status();
    noCuda = std::string(cuda.status().message());
  }
  absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::create(plan_, noCuda);
  if (!host.ok())
    return host.status();
  executor_ = std::move(*host);
  description_ = executor_->description();
  return absl::OkStatus();
}

std::string Model::describeInput(size_t i) const {
  return absl::StrCat("input '", plan_.values[plan_.inputs[i]].name, "'");
}

absl::Status Model::bindSymbols(absl::Span<const TensorRef> inputs, Bindings &symbols) const {
  if (inputs.size() != plan_.inputs.size())
    return absl::InvalidArgumentError(absl::StrCat("the model takes ", plan_.inputs.size(),
                                                   " inputs, got ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const artifact::ValueInfo &want = plan_.values[plan_.inputs[i]];
    if (inputs[i].dtype != want.dtype || inputs[i].dims.size() != want.shape.size())
      return absl::InvalidArgumentError(absl::StrCat(
          describeInput(i), " is ", artifact::dtypeName(inputs[i].dtype), "[",
          ref::shapeToString(ref::Shape(inputs[i].dims.begin(), inputs[i].dims.end())),
          "] but the model expects ", artifact::describeValue(want, plan_.symbols)));
  }
  symbols.assign(plan_.symbols.size(), std::nullopt);
  for (const artifact::GuardInfo &g : plan_.guards) {
    int64_t actual = inputs[g.input].dims[g.dim];
    if (g.binds) {
      int64_t s = *g.expected.soleSymbol();
      if (!symbols[s]) {
        symbols[s] = actual;
        continue;
      }
    }
    std::optional<int64_t> expected = g.expected.evaluate(symbols);
    if (expected && *expected == actual)
      continue;
    std::string where = absl::StrCat(describeInput(g.input), " dim ", g.dim);
    if (!expected)
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": its expected size ", g.expected.toString(plan_.symbols),
          " cannot be evaluated (an unbound symbol or a division by zero)"));
    if (*expected != actual) {
      std::string because;
      if (std::optional<int64_t> s = g.expected.soleSymbol()) {
        // Name the guard that bound the symbol.
        for (const artifact::GuardInfo &binder : plan_.guards)
          if (binder.binds && binder.expected.soleSymbol() == s) {
            because = absl::StrCat(" (", plan_.symbols[*s], " = ", *expected, " from ",
                                   describeInput(binder.input), " dim ", binder.dim, ")");
            break;
          }
      } else if (g.expected.ops.size() > 1) {
        because = absl::StrCat(" (", g.expected.toString(plan_.symbols), ")");
      }
      return absl::InvalidArgumentError(absl::StrCat(where, " is ", actual, " but the model expects ",
                                                     *expected, because));
    }
  }
  for (const artifact::PredicateInfo &p : plan_.predicates)
    if (p.holds(symbols) != std::optional<bool>(true))
      return brokenPredicate(p, inputs, symbols);
  return absl::OkStatus();
}

absl::Status Model::brokenPredicate(const artifact::PredicateInfo &p,
                                    absl::Span<const TensorRef> inputs,
                                    const Bindings &symbols) const {
  // The guard with the values of the symbols it reads, then every input's
  // dims: what a user needs to see which input is off.
  std::vector<std::string> dims;
  for (size_t i = 0; i < inputs.size(); ++i)
    dims.push_back(absl::StrCat(
        plan_.values[plan_.inputs[i]].name, " [",
        ref::shapeToString(ref::Shape(inputs[i].dims.begin(), inputs[i].dims.end())), "]"));
  return absl::InvalidArgumentError(absl::StrCat(p.broken(symbols, plan_.symbols), " for inputs ",
                                                 absl::StrJoin(dims, ", "), ": ", p.reason));
}

Model::VariantKey Model::keyOf(const artifact::VariantInfo &variant) {
  VariantKey key{};
  std::copy(variant.values.begin(), variant.values.end(), key.begin());
  return key;
}

Model::VariantKey Model::keyOf(const std::vector<int> &symbols, const Bindings &values) {
  VariantKey key{};
  for (size_t i = 0; i < symbols.size(); ++i)
    key[i] = values[symbols[i]].value_or(-1);
  return key;
}

void Model::addToTable(DispatchTable &table, const artifact::VariantInfo &variant, int index) {
  auto group = std::find_if(table.groups.begin(), table.groups.end(),
                            [&](const VariantGroup &g) { return g.symbols == variant.symbols; });
  if (group == table.groups.end()) {
    table.groups.push_back({variant.symbols, {}});
    // Groups fixing more symbols are probed first: the most specific wins.
    std::stable_sort(table.groups.begin(), table.groups.end(),
                     [](const VariantGroup &a, const VariantGroup &b) {
                       return a.symbols.size() > b.symbols.size();
                     });
    group = std::find_if(table.groups.begin(), table.groups.end(),
                         [&](const VariantGroup &g) { return g.symbols == variant.symbols; });
  }
  group->byValues.emplace(keyOf(variant), index);
  if (table.names.size() <= static_cast<size_t>(index))
    table.names.resize(index + 1);
  table.names[index] = variant.name;
}

int Model::chooseIn(const DispatchTable &table, const artifact::VariantInfo &variant) {
  for (const VariantGroup &group : table.groups) {
    if (group.symbols != variant.symbols)
      continue;
    auto it = group.byValues.find(keyOf(variant));
    return it == group.byValues.end() ? -1 : it->second;
  }
  return -1;
}

int Model::chooseVariant(const Bindings &symbols) const {
  const DispatchTable &table = *dispatch_.load(std::memory_order_acquire);
  for (const VariantGroup &group : table.groups)
    if (auto it = group.byValues.find(keyOf(group.symbols, symbols));
        it != group.byValues.end())
      return it->second;
  return -1;
}

const std::string &Model::variantName(int variant) const {
  if (variant < 0)
    return genericName_;
  // The newest table names every variant any call can have chosen.
  return dispatch_.load(std::memory_order_acquire)->names[variant];
}

absl::StatusOr<int> Model::addVariants(const void *pack, size_t size) {
  if (!pack && size)
    return absl::InvalidArgumentError("variant pack data is NULL");
  std::lock_guard<std::mutex> lock(installMutex_);
  // An aligned copy for the reader; the executors load the code from it (host
  // libraries into memory files, cubins into the driver), so it goes after.
  auto copy = std::unique_ptr<uint64_t[]>(new uint64_t[(size + 7) / 8 + 1]);
  if (size)
    std::memcpy(copy.get(), pack, size);
  absl::StatusOr<artifact::VariantPackInfo> read =
      artifact::readVariantPack(reinterpret_cast<const uint8_t *>(copy.get()), size, plan_);
  if (!read.ok())
    return read.status();
  const DispatchTable &current = *dispatch_.load(std::memory_order_acquire);
  auto next = std::make_unique<DispatchTable>(current);
  int added = 0;
  for (size_t v = 0; v < read->variants.size(); ++v) {
    const artifact::VariantInfo &variant = read->variants[v];
    if (chooseIn(*next, variant) >= 0)
      continue; // installed already (another thread's pack for the same shapes)
    int index = static_cast<int>(next->names.size());
    if (index >= kMaxVariants)
      return absl::ResourceExhaustedError(
          absl::StrCat("the model holds ", kMaxVariants, " variants already"));
    std::vector<artifact::HostLibraryInfo> libraries;
    for (const artifact::HostLibraryInfo &lib : read->hostLibraries)
      if (lib.variant == static_cast<int>(v))
        libraries.push_back(lib);
    if (absl::Status s = executor_->installVariant(index, variant, libraries); !s.ok())
      return s;
    addToTable(*next, variant, index);
    ++added;
  }
  if (!added)
    return 0;
  dispatch_.store(next.get(), std::memory_order_release);
  tables_.push_back(std::move(next));
  return added;
}

absl::StatusOr<std::shared_ptr<const MemoryPlan>>
Model::memoryPlan(const Bindings &symbols) const {
  {
    std::lock_guard<std::mutex> lock(cacheMutex_);
    if (auto it = memoryPlans_.find(symbols); it != memoryPlans_.end())
      return it->second;
  }
  absl::StatusOr<MemoryPlan> planned =
      artifact::planMemory(plan_, symbols, std::numeric_limits<uint64_t>::max());
  if (!planned.ok())
    return planned.status();
  auto plan = std::make_shared<const MemoryPlan>(std::move(*planned));
  std::lock_guard<std::mutex> lock(cacheMutex_);
  // A server sees few distinct shapes; a flood of new ones must not grow this forever.
  if (memoryPlans_.size() >= 256)
    memoryPlans_.clear();
  memoryPlans_.emplace(symbols, plan);
  return plan;
}

absl::Status Model::run(ExecutionContext &context, const RunRequest &request,
                        OutputSink sink) const {
  if (absl::Status s = bindSymbols(request.inputs, context.symbols()); !s.ok())
    return s;
  // Device symbols at their bounds (a guard keeps them there): memory is
  // planned for the largest value, the same for every value up to it.
  artifact::planningSymbolsInto(plan_, context.symbols(), context.planning());
  // The plan of the binding the context ran last is kept: a repeated shape skips
  // the cache lookup.
  if (!context.planned()) {
    absl::StatusOr<std::shared_ptr<const MemoryPlan>> memory = memoryPlan(context.planning());
    if (!memory.ok())
      return memory.status();
    // The variant is a function of the binding too: chosen once per new shape.
    context.choose(std::move(*memory), chooseVariant(context.symbols()));
    // (Not for device symbols: their values change call after call within
    // one plan, and a variant fixing one would serve a single call.)
    if (context.variant() < 0 && missHandler_ && plan_.deviceSymbols.empty()) {
      // A JIT may compile a variant for these shapes in the background.
      absl::Span<const int64_t> values = context.symbolValues();
      missHandler_(missUser_, values.data(), values.size());
    }
  }
  const MemoryPlan &memory = context.memory();
  if (memory.largestBytes > request.maxTensorBytes) {
    const artifact::ValueInfo &v = plan_.values[memory.largestValue];
    absl::Status over =
        ref::checkedByteSize(v.dtype, *artifact::evaluateShape(v, context.planning()),
                             request.maxTensorBytes)
            .status();
    return absl::Status(over.code(), absl::StrCat("value '", v.name, "': ", over.message()));
  }
  return executor_->run(context, request, sink);
}

std::unique_ptr<ExecutionContext> Model::takeContext() const {
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    if (!idleContexts_.empty()) {
      std::unique_ptr<ExecutionContext> context = std::move(idleContexts_.back());
      idleContexts_.pop_back();
      return context;
    }
  }
  return std::make_unique<ExecutionContext>(*this);
}

void Model::giveContext(std::unique_ptr<ExecutionContext> context) const {
  std::lock_guard<std::mutex> lock(poolMutex_);
  // As many as threads ran at once, up to a bound: each holds an arena.
  if (idleContexts_.size() < 16)
    idleContexts_.push_back(std::move(context));
}

} // namespace kiln::rt
