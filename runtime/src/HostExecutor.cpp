//===- HostExecutor.cpp - a plan in host emulation -------------------------===//

#include "HostExecutor.h"

#include "HostLibrary.h"
#include "Model.h"

#include "kiln/artifact/HostLaunch.h"

#include "absl/strings/str_cat.h"

#include <cstdlib>
#include <cstring>
#include <map>

namespace kiln::rt {
namespace {

/// A context's host buffers: the arena, grown to the largest plan it has run,
/// and the step marks of a profiled run.
class HostState : public BackendState {
public:
  ~HostState() override { std::free(arena); }
  uint8_t *arena = nullptr;
  size_t arenaBytes = 0;
  std::vector<std::chrono::steady_clock::time_point> marks;
  /// One per step: where kernels report data errors.
  std::vector<int32_t> errorWords;
  /// One word per symbol, the run's values, for kernels that read device
  /// symbols (filled by begin).
  std::vector<int64_t> symbolWords;
  /// The kernel scratch: zero between launches.
  std::vector<uint8_t> scratch;
};

HostState &stateOf(ExecutionContext &context) { return *context.backendState<HostState>(); }

} // namespace

absl::StatusOr<std::unique_ptr<HostExecutor>> HostExecutor::create(const Plan &plan,
                                                                   std::string why) {
  std::unique_ptr<HostExecutor> ex(new HostExecutor());
  ex->description_ = why.empty() ? "host emulation" : "host emulation (" + why + ")";
  ex->plan_ = &plan;
  // The generic kernels' launchers from the host libraries of no variant, then
  // each variant's from its own.
  std::vector<artifact::HostLibraryInfo> generic;
  for (const artifact::HostLibraryInfo &lib : plan.hostLibraries)
    if (lib.variant < 0)
      generic.push_back(lib);
  artifact::VariantInfo none;
  if (absl::Status s = ex->installVariant(-1, none, generic); !s.ok())
    return s;
  for (size_t v = 0; v < plan.variants.size(); ++v) {
    std::vector<artifact::HostLibraryInfo> own;
    for (const artifact::HostLibraryInfo &lib : plan.hostLibraries)
      if (lib.variant == static_cast<int>(v))
        own.push_back(lib);
    if (absl::Status s = ex->installVariant(static_cast<int>(v), plan.variants[v], own); !s.ok())
      return s;
  }
  return ex;
}

absl::Status HostExecutor::installVariant(int variant, const artifact::VariantInfo &info,
                                          absl::Span<const artifact::HostLibraryInfo> libraries) {
  const Plan &plan = *plan_;
  std::map<std::string, size_t> kernelIndex;
  for (size_t k = 0; k < plan.kernels.size(); ++k)
    kernelIndex[plan.kernels[k].name] = k;
  std::vector<artifact::HostLauncher> table =
      variant < 0 ? std::vector<artifact::HostLauncher>(plan.kernels.size(), nullptr)
                  : launchers_.at(-1);
  std::vector<bool> own(plan.kernels.size(), false);
  for (const artifact::HostLibraryInfo &lib : libraries) {
    absl::StatusOr<void *> handle = loadHostLibrary(lib.data, lib.size);
    if (!handle.ok())
      return handle.status();
    for (const std::string &name : lib.kernels) {
      auto it = kernelIndex.find(name);
      if (it == kernelIndex.end())
        continue;
      // A variant's launchers by the values it states (EntryName.h): a
      // library built for other values has other names.
      if (variant >= 0) {
        std::string entry = artifact::variantEntryName(plan.kernels[it->second], info);
        absl::StatusOr<artifact::HostLauncher> launcher = hostLauncher(*handle, entry);
        if (!launcher.ok())
          return absl::InvalidArgumentError(absl::StrCat(
              "corrupt artifact: variant ", info.name, " has no host code for kernel ", name,
              " built for its sizes (", entry, ")"));
        table[it->second] = *launcher;
        own[it->second] = true;
        continue;
      }
      absl::StatusOr<artifact::HostLauncher> launcher = hostLauncher(*handle, name);
      if (!launcher.ok())
        return launcher.status();
      table[it->second] = *launcher;
      own[it->second] = true;
    }
  }
  if (variant < 0) {
    for (size_t k = 0; k < plan.kernels.size(); ++k)
      if (!table[k])
        return absl::FailedPreconditionError(absl::StrCat(
            "the artifact has no host-emulation code for kernel ", plan.kernels[k].name,
            " (compiled without a host library)"));
  } else {
    for (const auto &[k, cubins] : info.kernels)
      if (!own[k])
        return absl::FailedPreconditionError(
            absl::StrCat("no host-emulation code for kernel ", plan.kernels[k].name,
                         " of variant ", info.name));
  }
  launchers_.set(variant, std::move(table));
  return absl::OkStatus();
}

absl::Status HostExecutor::begin(ExecutionContext &context, const RunRequest &request) const {
  if (request.deviceBuffers)
    return absl::FailedPreconditionError(
        "device buffers need the CUDA backend; this model runs in host emulation");
  const Plan &plan = context.model().plan();
  if (!context.backendState<HostState>()) {
    context.setBackendState(std::make_unique<HostState>());
    // Weights stay where the artifact holds them: their addresses are set once
    // per context, not per call.
    for (size_t v = 0; v < plan.values.size(); ++v)
      if (plan.values[v].kind == artifact::ValueKind::Weight)
        context.value(v).address = reinterpret_cast<uintptr_t>(plan.values[v].weightData);
  }
  HostState &state = stateOf(context);
  size_t need = std::max(context.memory().peakBytes, artifact::kSlotAlignment);
  if (state.arenaBytes < need) {
    // Grows to the largest binding the context has seen, then stays.
    size_t bytes =
        (need + artifact::kSlotAlignment - 1) / artifact::kSlotAlignment * artifact::kSlotAlignment;
    void *p = std::aligned_alloc(artifact::kSlotAlignment, bytes);
    if (!p)
      return absl::ResourceExhaustedError(absl::StrCat("cannot allocate a ", bytes, "-byte arena"));
    std::free(state.arena);
    state.arena = static_cast<uint8_t *>(p);
    state.arenaBytes = bytes;
  }
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    Slot &slot = context.value(plan.inputs[i]);
    slot.address = reinterpret_cast<uintptr_t>(request.inputs[i].data);
    slot.shape.assign(request.inputs[i].dims.begin(), request.inputs[i].dims.end());
  }
  if (request.profile)
    state.marks.resize(2 * plan.steps.size() + 1);
  if (context.model().reportsErrors())
    state.errorWords.assign(plan.stepCount, 0);
  if (!plan.deviceSymbols.empty()) {
    absl::Span<const int64_t> values = context.symbolValues();
    state.symbolWords.assign(values.begin(), values.end());
  }
  return absl::OkStatus();
}

uintptr_t HostExecutor::symbolWords(ExecutionContext &context) const {
  return reinterpret_cast<uintptr_t>(stateOf(context).symbolWords.data());
}

uintptr_t HostExecutor::errorWords(ExecutionContext &context) const {
  return reinterpret_cast<uintptr_t>(stateOf(context).errorWords.data());
}

absl::Status HostExecutor::readErrorWords(ExecutionContext &context,
                                          std::vector<int32_t> &words) const {
  words = stateOf(context).errorWords;
  return absl::OkStatus();
}

absl::Status HostExecutor::place(ExecutionContext &context, int v, const ref::Shape &shape) const {
  Slot &slot = context.value(v);
  slot.shape.assign(shape.begin(), shape.end());
  int64_t offset = context.memory().offsets[v];
  if (offset >= 0) {
    if (absl::Status s = fitsPlannedSlot(context, v, shape); !s.ok())
      return s;
    slot.address = reinterpret_cast<uintptr_t>(stateOf(context).arena + offset);
    return absl::OkStatus();
  }
  // Sized at run time (by the data, or by symbols steps bind): within the
  // run's tensor limit before anything is allocated.
  absl::StatusOr<ref::Tensor> owned = ref::Tensor::zeros(context.model().plan().values[v].dtype, shape);
  if (!owned.ok())
    return owned.status();
  slot.owned = std::move(*owned);
  slot.address = reinterpret_cast<uintptr_t>(slot.owned.bytes());
  return absl::OkStatus();
}

absl::Status HostExecutor::launch(ExecutionContext &context, const StepInfo &step) const {
  absl::StatusOr<LaunchArgs *> prepared = prepareLaunch(context, step);
  if (!prepared.ok())
    return prepared.status();
  LaunchArgs &launch = **prepared;
  launchers_.at(context.variant())[step.kernel](
      launch.args.data(),
      artifact::hostGrid(workItems(context, step), launch.elements));
  return absl::OkStatus();
}

absl::StatusOr<uintptr_t> HostExecutor::kernelScratch(ExecutionContext &context,
                                                      size_t bytes) const {
  std::vector<uint8_t> &scratch = stateOf(context).scratch;
  if (scratch.size() < bytes) {
    if (absl::Status s = ref::checkedByteSize(ref::DType::u8, {static_cast<int64_t>(bytes)},
                                              ref::maxTensorBytes())
                             .status();
        !s.ok())
      return s;
    scratch.resize(bytes, 0); // what it held is zero, and so is what it gains
  }
  return reinterpret_cast<uintptr_t>(scratch.data());
}

absl::StatusOr<ref::Tensor> HostExecutor::hostValue(ExecutionContext &context, int v) const {
  const Slot &slot = context.value(v);
  return ref::Tensor::view(context.model().plan().values[v].dtype, slot.shape,
                           reinterpret_cast<uint8_t *>(slot.address));
}

absl::Status HostExecutor::store(ExecutionContext &context, int v, ref::Tensor result) const {
  if (context.memory().offsets[v] < 0) {
    Slot &slot = context.value(v);
    slot.shape = result.shape();
    slot.owned = std::move(result);
    slot.address = reinterpret_cast<uintptr_t>(slot.owned.bytes());
    return absl::OkStatus();
  }
  if (absl::Status s = place(context, v, result.shape()); !s.ok())
    return s;
  if (result.byteSize())
    std::memcpy(reinterpret_cast<void *>(context.value(v).address), result.bytes(),
                result.byteSize());
  return absl::OkStatus();
}

absl::Status HostExecutor::finish(ExecutionContext &context, const RunRequest &request,
                                  OutputSink sink) const {
  (void)request;
  const Plan &plan = context.model().plan();
  absl::Status status = absl::OkStatus();
  for (size_t i = 0; i < plan.outputs.size() && status.ok(); ++i) {
    const Slot &slot = context.value(plan.outputs[i]);
    ref::DType dtype = plan.values[plan.outputs[i]].dtype;
    absl::StatusOr<void *> destination = sink(i, dtype, slot.shape);
    if (!destination.ok()) {
      status = destination.status();
      break;
    }
    size_t bytes = static_cast<size_t>(ref::numElements(slot.shape)) * ref::info(dtype).bytes;
    // An output already where the caller wants it (a KV cache updated in
    // place in the buffer the caller passed as input and output) moves nothing.
    if (bytes && *destination != reinterpret_cast<const void *>(slot.address))
      std::memcpy(*destination, reinterpret_cast<const void *>(slot.address), bytes);
  }
  abandon(context, request);
  return status;
}

void HostExecutor::abandon(ExecutionContext &context, const RunRequest &) const {
  // Data-dependent results are the only per-call memory; let them go.
  context.releaseOwnedValues();
}

absl::Status HostExecutor::copyBytes(ExecutionContext &, uintptr_t to, uintptr_t from,
                                     size_t bytes) const {
  std::memmove(reinterpret_cast<void *>(to), reinterpret_cast<const void *>(from), bytes);
  return absl::OkStatus();
}

void HostExecutor::mark(ExecutionContext &context, const RunRequest &, size_t index) const {
  stateOf(context).marks[index] = std::chrono::steady_clock::now();
}

absl::StatusOr<double> HostExecutor::elapsedUs(ExecutionContext &context, size_t from,
                                               size_t to) const {
  const auto &marks = stateOf(context).marks;
  return std::chrono::duration<double, std::micro>(marks[to] - marks[from]).count();
}

} // namespace kiln::rt
