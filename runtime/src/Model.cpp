//===- Model.cpp - load and run a compiled model ---------------------------===//

#include "Model.h"

#include "HostLibrary.h"
#include "cuda/CudaDriver.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

double microsSince(std::chrono::steady_clock::time_point origin) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin)
      .count();
}

std::string shapeText(const ValueInfo &v, const std::vector<std::string> &symbols) {
  std::vector<std::string> dims;
  for (const Dim &d : v.shape)
    dims.push_back(d.toString(symbols));
  return absl::StrCat(dtypeName(v.dtype), "[", absl::StrJoin(dims, ", "), "]");
}

} // namespace

std::string dtypeName(ref::DType t) {
  return t == ref::DType::boolean ? "bool" : ref::info(t).name;
}

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
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
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

absl::StatusOr<std::unique_ptr<Model>> Model::loadFile(const std::string &path, Backend backend) {
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
        loadWith(data, size, backend, folderOf(path), nullptr);
    if (!model.ok())
      return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
    return model;
  }
  close(fd);
  absl::StatusOr<std::pair<void *, size_t>> mapped = mapFile(path);
  if (!mapped.ok())
    return mapped.status();
  absl::StatusOr<std::unique_ptr<Model>> model =
      loadWith(static_cast<const uint8_t *>(mapped->first), mapped->second, backend,
               folderOf(path), mapped->first);
  if (!model.ok())
    return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> Model::loadWith(const void *data, size_t size,
                                                       Backend backend, std::string folder,
                                                       void *mapping) {
  std::unique_ptr<Model> model(new Model());
  model->mapping_ = mapping;
  model->data_ = static_cast<const uint8_t *>(data);
  model->size_ = size;
  model->folder_ = std::move(folder);
  if (absl::Status s = model->prepare(backend); !s.ok())
    return s;
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> Model::loadEmbedded(const void *data, size_t size,
                                                           Backend backend) {
  if (!data && size)
    return absl::InvalidArgumentError("artifact data is NULL");
  // The data of a model .so: its weights file, if any, lies beside the .so.
  Dl_info info;
  std::string folder;
  if (data && dladdr(data, &info) && info.dli_fname && *info.dli_fname)
    folder = folderOf(info.dli_fname);
  return loadWith(data, size, backend, folder, nullptr);
}

absl::StatusOr<std::unique_ptr<Model>> Model::loadMemory(const void *data, size_t size,
                                                         Backend backend) {
  if (!data && size)
    return absl::InvalidArgumentError("artifact data is NULL");
  std::unique_ptr<Model> model(new Model());
  // A private copy, aligned as the weights inside it expect.
  size_t padded = (size + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  void *copy = std::aligned_alloc(kWeightAlignment, std::max<size_t>(padded, kWeightAlignment));
  if (!copy)
    return absl::ResourceExhaustedError("cannot allocate memory for the artifact");
  if (size)
    std::memcpy(copy, data, size);
  model->copy_ = std::unique_ptr<uint8_t, void (*)(void *)>(static_cast<uint8_t *>(copy), std::free);
  model->data_ = model->copy_.get();
  model->size_ = size;
  if (absl::Status s = model->prepare(backend); !s.ok())
    return s;
  return model;
}

absl::Status Model::prepare(Backend requested) {
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
  absl::StatusOr<Plan> plan = readArtifact(data_, size_, resolveWeights);
  if (!plan.ok())
    return plan.status();
  plan_ = std::move(*plan);

  std::string noCuda;
  if (requested == Backend::Cuda || requested == Backend::Auto) {
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda = CudaExecutor::create(plan_);
    if (cuda.ok()) {
      cuda_ = std::move(*cuda);
      backend_ = Backend::Cuda;
      backendDescription_ = "cuda on " + cuda_->description();
      return absl::OkStatus();
    }
    if (requested == Backend::Cuda)
      return cuda.status();
    noCuda = std::string(cuda.status().message());
  }
  backend_ = Backend::Host;
  backendDescription_ = noCuda.empty() ? "host emulation" : "host emulation (" + noCuda + ")";

  // Host emulation: resolve each kernel's launcher in the libraries that list it.
  hostLaunchers_.assign(plan_.kernels.size(), nullptr);
  std::map<std::string, size_t> kernelIndex;
  for (size_t k = 0; k < plan_.kernels.size(); ++k)
    kernelIndex[plan_.kernels[k].name] = k;
  for (const HostLibraryInfo &lib : plan_.hostLibraries) {
    absl::StatusOr<void *> handle = loadHostLibrary(lib.data, lib.size);
    if (!handle.ok())
      return handle.status();
    for (const std::string &name : lib.kernels) {
      auto it = kernelIndex.find(name);
      if (it == kernelIndex.end())
        continue;
      absl::StatusOr<HostLauncher> launcher = hostLauncher(*handle, name);
      if (!launcher.ok())
        return launcher.status();
      hostLaunchers_[it->second] = *launcher;
    }
  }
  for (size_t k = 0; k < plan_.kernels.size(); ++k)
    if (!hostLaunchers_[k])
      return absl::FailedPreconditionError(absl::StrCat(
          "the artifact has no host-emulation code for kernel ", plan_.kernels[k].name,
          " (compiled without a host library)"));
  return absl::OkStatus();
}

std::string Model::describeInput(size_t i) const {
  return absl::StrCat("input '", plan_.values[plan_.inputs[i]].name, "'");
}

absl::StatusOr<std::vector<std::optional<int64_t>>>
Model::bindSymbols(const std::vector<ref::Tensor> &inputs) const {
  if (inputs.size() != plan_.inputs.size())
    return absl::InvalidArgumentError(absl::StrCat("the model takes ", plan_.inputs.size(),
                                                   " inputs, got ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo &want = plan_.values[plan_.inputs[i]];
    if (inputs[i].dtype() != want.dtype || inputs[i].rank() != static_cast<int64_t>(want.shape.size()))
      return absl::InvalidArgumentError(absl::StrCat(
          describeInput(i), " is ", inputs[i].describe(), " but the model expects ",
          shapeText(want, plan_.symbols)));
  }
  std::vector<std::optional<int64_t>> symbols(plan_.symbols.size());
  std::vector<std::string> boundBy(plan_.symbols.size());
  for (const GuardInfo &g : plan_.guards) {
    int64_t actual = inputs[g.input].dim(g.dim);
    std::string where = absl::StrCat(describeInput(g.input), " dim ", g.dim);
    if (g.binds) {
      int64_t s = *g.expected.soleSymbol();
      if (!symbols[s]) {
        symbols[s] = actual;
        boundBy[s] = where;
        continue;
      }
    }
    std::optional<int64_t> expected = g.expected.evaluate(symbols);
    if (!expected)
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": its expected size ", g.expected.toString(plan_.symbols),
          " cannot be evaluated (an unbound symbol or a division by zero)"));
    if (*expected != actual) {
      std::string because;
      if (std::optional<int64_t> s = g.expected.soleSymbol())
        because = absl::StrCat(" (", plan_.symbols[*s], " = ", *expected, " from ", boundBy[*s], ")");
      else if (g.expected.ops.size() > 1)
        because = absl::StrCat(" (", g.expected.toString(plan_.symbols), ")");
      return absl::InvalidArgumentError(absl::StrCat(where, " is ", actual, " but the model expects ",
                                                     *expected, because));
    }
  }
  return symbols;
}

std::shared_ptr<const MemoryPlan>
Model::memoryPlan(const std::vector<std::optional<int64_t>> &symbols) const {
  {
    absl::MutexLock lock(&cacheMutex_);
    if (auto it = memoryPlans_.find(symbols); it != memoryPlans_.end())
      return it->second;
  }
  auto plan = std::make_shared<const MemoryPlan>(planMemory(plan_, symbols));
  absl::MutexLock lock(&cacheMutex_);
  // A server sees few distinct shapes; a flood of new ones must not grow this forever.
  if (memoryPlans_.size() >= 256)
    memoryPlans_.clear();
  memoryPlans_.emplace(symbols, plan);
  return plan;
}

absl::Status Model::runStep(size_t index, std::vector<ref::Tensor> &values,
                            const std::vector<std::optional<int64_t>> &symbols,
                            const MemoryPlan &memory, uint8_t *arena) const {
  const StepInfo &step = plan_.steps[index];
  int out = step.outputs[0];
  auto fail = [&](const std::string &message) {
    return absl::InvalidArgumentError(
        absl::StrCat("step ", index, " (", step.label, "): ", message));
  };
  // Value v's storage: its arena slot when its size was known in advance.
  auto allocate = [&](int v, const ref::Shape &shape) {
    if (memory.offsets[v] >= 0)
      values[v] = ref::Tensor::view(plan_.values[v].dtype, shape, arena + memory.offsets[v]);
    else
      values[v] = ref::Tensor(plan_.values[v].dtype, shape);
  };
  // A result computed on the host: copied into its slot, or kept as it is.
  auto store = [&](int v, ref::Tensor t) {
    if (memory.offsets[v] < 0) {
      values[v] = std::move(t);
      return;
    }
    allocate(v, t.shape());
    if (t.byteSize())
      std::memcpy(values[v].bytes(), t.bytes(), t.byteSize());
  };
  switch (step.kind) {
  case StepKind::Kernel: {
    std::optional<ref::Shape> planned = evaluateShape(plan_.values[out], symbols);
    if (!planned)
      return fail("the kernel's result size is unknown before it runs");
    allocate(out, *planned);
    const KernelInfo &kernel = plan_.kernels[step.kernel];
    std::vector<void *> pointers = {values[out].bytes()};
    for (int v : step.inputs)
      pointers.push_back(values[v].bytes());
    std::vector<int64_t> symbolArgs;
    for (int s : kernel.symbols)
      symbolArgs.push_back(symbols[s].value_or(0));
    std::vector<void *> args;
    for (void *&p : pointers)
      args.push_back(&p);
    for (int64_t &s : symbolArgs)
      args.push_back(&s);
    int64_t work = values[out].numel();
    for (int v : step.inputs)
      work += values[v].numel();
    int64_t grid = hostGrid(values[out].numel(), work);
    hostLaunchers_[step.kernel](args.data(), grid);
    return absl::OkStatus();
  }
  case StepKind::Library: {
    std::vector<const ref::Tensor *> inputs;
    for (int v : step.inputs)
      inputs.push_back(&values[v]);
    absl::StatusOr<std::vector<ref::Tensor>> r = ref::runLibraryCall(step.call, inputs);
    if (!r.ok())
      return fail(std::string(r.status().message()));
    if (r->size() != step.outputs.size())
      return fail(absl::StrCat("it gave ", r->size(), " results, the plan has ",
                               step.outputs.size()));
    for (size_t k = 0; k < r->size(); ++k) {
      int v = step.outputs[k];
      const ValueInfo &info = plan_.values[v];
      ref::Tensor &got = (*r)[k];
      if (!matchesPlan(got, info, symbols))
        return fail(absl::StrCat("its result ", k, " is ", got.describe(), " but the plan says ",
                                 shapeText(info, plan_.symbols)));
      store(v, std::move(got));
    }
    return absl::OkStatus();
  }
  case StepKind::SymbolicConstant:
  case StepKind::ShapeOf: {
    ref::Shape inputShape =
        step.kind == StepKind::ShapeOf ? values[step.inputs[0]].shape() : ref::Shape();
    absl::StatusOr<ref::Tensor> t = evaluateShapeStep(plan_, step, symbols, inputShape);
    if (!t.ok())
      return fail(std::string(t.status().message()));
    store(out, std::move(*t));
    return absl::OkStatus();
  }
  }
  return fail("unknown step kind");
}

absl::Status Model::run(const std::vector<ref::Tensor> &inputs, bool deviceBuffers, void *stream,
                        const OutputSink &sink, Profile *profile) const {
  absl::StatusOr<std::vector<std::optional<int64_t>>> symbols = bindSymbols(inputs);
  if (!symbols.ok())
    return symbols.status();
  std::shared_ptr<const MemoryPlan> memory = memoryPlan(*symbols);
  if (backend_ == Backend::Cuda)
    return cuda_->run(plan_, *symbols, *memory, inputs, deviceBuffers, stream, sink, profile);
  if (deviceBuffers)
    return absl::FailedPreconditionError(
        "device buffers need the CUDA backend; this model runs in host emulation");

  // This call's arena, from the pool: concurrent runs take different ones.
  absl::StatusOr<std::pair<uint8_t *, size_t>> taken =
      arenas_.take(std::max(memory->peakBytes, kSlotAlignment));
  if (!taken.ok())
    return taken.status();
  struct GiveBack {
    BufferPool<uint8_t *> &pool;
    std::pair<uint8_t *, size_t> buffer;
    ~GiveBack() { pool.give(buffer.first, buffer.second); }
  } giveBack{arenas_, *taken};
  uint8_t *arena = taken->first;

  std::vector<ref::Tensor> values(plan_.values.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    values[plan_.inputs[i]] = inputs[i];
  for (size_t v = 0; v < plan_.values.size(); ++v) {
    const ValueInfo &info = plan_.values[v];
    if (info.kind == ValueKind::Weight)
      values[v] = ref::Tensor::view(info.dtype, *evaluateShape(info, {}),
                                    const_cast<uint8_t *>(info.weightData));
  }
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    double start = profile ? microsSince(profile->origin) : 0;
    if (absl::Status status = runStep(s, values, *symbols, *memory, arena); !status.ok())
      return status;
    if (profile) {
      double end = microsSince(profile->origin);
      const StepInfo &step = plan_.steps[s];
      const char *kind = step.kind == StepKind::Kernel    ? "kernel"
                         : step.kind == StepKind::Library ? "library"
                                                          : "host";
      absl::MutexLock lock(&profile->mutex);
      profile->events.push_back({step.label, kind, start, end - start});
    }
  }
  for (size_t i = 0; i < plan_.outputs.size(); ++i) {
    const ref::Tensor &value = values[plan_.outputs[i]];
    absl::StatusOr<void *> destination = sink(i, value.dtype(), value.shape());
    if (!destination.ok())
      return destination.status();
    if (value.byteSize())
      std::memcpy(*destination, value.bytes(), value.byteSize());
  }
  return absl::OkStatus();
}

} // namespace kiln::rt
