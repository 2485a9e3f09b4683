//===- CudaExecutor.cpp - a plan on a CUDA device --------------------------===//

#include "cuda/CudaExecutor.h"

#include "Model.h"
#include "cuda/CudaState.h"
#include "cuda/LibraryCalls.h"
#include "kiln/artifact/DeviceLaunch.h"
#include "kiln/artifact/StepWork.h"

#include "absl/strings/str_cat.h"

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>

namespace kiln::rt {
namespace {

/// Threads per block for every generated kernel (kernels are correct for any
/// grid; some schedules rely on this block: DeviceLaunch.h).
constexpr unsigned kBlockThreads = artifact::kDeviceBlockThreads;
constexpr int64_t kMaxBlocks = 65535;

size_t bytesOf(ref::DType dtype, const ref::Shape &shape) {
  return static_cast<size_t>(ref::numElements(shape)) * ref::info(dtype).bytes;
}

/// The graphs one context keeps per segment (one per signature: shapes,
/// variants, input buffers), the oldest dropped first; likewise the
/// signatures whose capture failed.
constexpr size_t kGraphsPerSegment = 8;

/// What a step that would leave the device says while a segment is being
/// dry-run or captured: the segment then runs step by step.
constexpr absl::string_view kLeavesDevice = "the step runs on the host";

} // namespace

namespace {
/// Per device, how many times a load has reset its primary context (one a
/// sticky error had made unusable).
std::atomic<uint64_t> &primaryResets(CUdevice device) {
  static std::atomic<uint64_t> counts[64];
  return counts[static_cast<size_t>(device) % 64];
}
} // namespace

bool isStickyError(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED: return true;
  default: return false;
  }
}

absl::Status CudaExecutor::driverError(const char *call, CUresult r) const {
  std::string what = driver_->describe(call, r);
  if (!isStickyError(r))
    return absl::InternalError(what);
  {
    std::lock_guard<std::mutex> lock(lostMutex_);
    if (lost_.empty())
      lost_ = absl::StrCat(
          "the CUDA context of this model is lost (", what,
          "; CUDA keeps such an error for the context's life): load the model again");
  }
  return lostStatus();
}

bool CudaExecutor::contextWasReset() const {
  return primaryResets(deviceHandle_).load() != resetsAtRetain_;
}

absl::Status CudaExecutor::lostStatus() const {
  // A later load reset the device's primary context (after another model's
  // sticky error): this executor's memory, modules and streams went with it,
  // and its addresses may now be another model's.
  if (contextWasReset())
    return absl::UnavailableError(
        "the CUDA context of this model was reset after a device error (another model's "
        "load recovered from it): load the model again");
  std::lock_guard<std::mutex> lock(lostMutex_);
  return lost_.empty() ? absl::OkStatus() : absl::UnavailableError(lost_);
}

CudaExecutor::~CudaExecutor() {
  if (!driver_ || !context_)
    return;
  // A reset took this executor's memory, modules and streams and its retain
  // (the same addresses may be another model's now): nothing to free.
  if (contextWasReset()) {
    calls_.reset();
    (void)pool_.release(); // its buffers died with the context; not freed again
    return;
  }
  {
    ContextScope scope(driver_, context_);
    calls_.reset();
    pool_.reset();
    for (CUdeviceptr w : weights_)
      if (w)
        driver_->cuMemFree(w);
    for (CUmodule m : modules_)
      driver_->cuModuleUnload(m);
    if (transfer_)
      driver_->cuStreamDestroy(transfer_);
  }
  driver_->cuDevicePrimaryCtxRelease(deviceHandle_);
}

absl::StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::create(const Plan &plan, int device) {
  absl::StatusOr<const CudaDriver *> driver = CudaDriver::get();
  if (!driver.ok())
    return driver.status();
  absl::StatusOr<int> count = (*driver)->deviceCount();
  if (!count.ok())
    return count.status();
  const CudaDriver &cu = **driver;
  std::unique_ptr<CudaExecutor> ex(new CudaExecutor());
  ex->driver_ = &cu;
  auto check = [&](const char *call, CUresult r) {
    return r == CUDA_SUCCESS ? absl::OkStatus() : absl::UnavailableError(cu.describe(call, r));
  };
  if (device < 0 || device >= *count)
    return absl::UnavailableError(absl::StrCat("no CUDA device ", device, ": the driver reports ",
                                               *count, *count == 1 ? " device" : " devices"));
  if (absl::Status s = check("cuDeviceGet", cu.cuDeviceGet(&ex->deviceHandle_, device)); !s.ok())
    return s;
  int major = 0, minor = 0;
  cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ex->deviceHandle_);
  cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ex->deviceHandle_);
  int sm = major * 10 + minor;
  char name[256] = {0};
  cu.cuDeviceGetName(name, sizeof(name) - 1, ex->deviceHandle_);
  // The ordinal is named where there is a choice of devices.
  ex->device_ = *count > 1 ? absl::StrCat(name, " (device ", device, ", sm_", sm, ")")
                           : absl::StrCat(name, " (sm_", sm, ")");
  auto retain = [&]() -> absl::Status {
    ex->resetsAtRetain_ = primaryResets(ex->deviceHandle_).load();
    absl::Status s = check("cuDevicePrimaryCtxRetain",
                           cu.cuDevicePrimaryCtxRetain(&ex->context_, ex->deviceHandle_));
    if (!s.ok())
      ex->context_ = nullptr;
    return s;
  };
  if (absl::Status s = retain(); !s.ok())
    return s;
  // The stream of the executor's own copies (weights at load, the C API's
  // copies): non-blocking, so a load never touches the legacy stream, which
  // another thread's capture would make unusable. Its creation is also the
  // first call in the primary context: one a sticky error has poisoned (an
  // earlier model's fault) fails it, and is reset once, so a new load works.
  CUresult made = CUDA_SUCCESS;
  for (int attempt = 0; attempt < 2; ++attempt) {
    ContextScope scope(&cu, ex->context_);
    if (!scope.ok)
      return absl::UnavailableError("cannot make the CUDA context current");
    made = cu.cuStreamCreate(&ex->transfer_, CU_STREAM_NON_BLOCKING);
    if (made == CUDA_SUCCESS || !isStickyError(made) || attempt == 1)
      break;
    {
      // One reset per poisoning: a load that finds another already reset
      // it only retains the new context.
      static std::mutex resetting;
      std::lock_guard<std::mutex> lock(resetting);
      cu.cuDevicePrimaryCtxRelease(ex->deviceHandle_);
      if (primaryResets(ex->deviceHandle_).load() == ex->resetsAtRetain_) {
        cu.cuDevicePrimaryCtxReset(ex->deviceHandle_);
        ++primaryResets(ex->deviceHandle_);
      }
    }
    if (absl::Status s = retain(); !s.ok())
      return s;
  }
  if (made != CUDA_SUCCESS) {
    ex->transfer_ = nullptr;
    return absl::UnavailableError(cu.describe("cuStreamCreate", made));
  }
  ContextScope scope(&cu, ex->context_);
  if (!scope.ok)
    return absl::UnavailableError("cannot make the CUDA context current");
  const CudaDriver *d = &cu; // the process-wide driver outlives every executor
  const CudaExecutor *owner = ex.get(); // owns the pool, so outlives it
  ex->pool_ = std::make_unique<BufferPool<CUdeviceptr>>(
      [d, owner](size_t bytes) -> absl::StatusOr<CUdeviceptr> {
        CUdeviceptr p = 0;
        if (CUresult r = d->cuMemAlloc(&p, bytes); r != CUDA_SUCCESS)
          return isStickyError(r)
                     ? owner->driverError("cuMemAlloc", r)
                     : absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes,
                                                                 " bytes on the device: ",
                                                                 d->describe("cuMemAlloc", r)));
        return p;
      },
      [d](CUdeviceptr p) { d->cuMemFree(p); });

  ex->plan_ = &plan;
  ex->sm_ = sm;
  // Matmul, conv and pool steps run in cuBLASLt and cuDNN where they load;
  // without them they run on the host, and the description says why.
  ex->calls_ = LibraryCalls::create(plan);
  // Stretches of device steps (kernels, library calls, views) that a context
  // may replay as one CUDA graph: at least two launches, or no gain.
  // KILN_CUDA_GRAPHS=0 turns graphs off.
  const char *graphs = std::getenv("KILN_CUDA_GRAPHS");
  if (!graphs || std::string(graphs) != "0") {
    ex->segmentAt_.assign(plan.steps.size(), -1);
    for (size_t first = 0; first < plan.steps.size();) {
      size_t end = first, launches = 0;
      for (; end < plan.steps.size(); ++end) {
        const StepInfo &step = plan.steps[end];
        bool device = step.kind == artifact::StepKind::Kernel ||
                      step.kind == artifact::StepKind::View ||
                      (step.kind == artifact::StepKind::Host && artifact::isLibraryStep(step.op));
        if (!device || !step.binds.empty())
          break;
        launches += step.kind != artifact::StepKind::View;
      }
      if (launches >= 2) {
        ex->segmentAt_[first] = static_cast<int>(ex->segments_.size());
        ex->segments_.push_back({first, end});
      }
      first = std::max(end, first + 1);
    }
  }
  // The generic kernels, then each variant's own.
  artifact::VariantInfo none;
  if (absl::Status s = ex->installVariant(-1, none, {}); !s.ok())
    return s;
  for (size_t v = 0; v < plan.variants.size(); ++v)
    if (absl::Status s = ex->installVariant(static_cast<int>(v), plan.variants[v], {}); !s.ok())
      return s;

  // Weights go to the device once; every call reads them in place.
  ex->weights_.assign(plan.values.size(), 0);
  for (size_t v = 0; v < plan.values.size(); ++v) {
    const artifact::ValueInfo &value = plan.values[v];
    if (value.kind != artifact::ValueKind::Weight)
      continue;
    CUdeviceptr p = 0;
    size_t bytes = std::max<size_t>(value.weightSize, artifact::kSlotAlignment);
    if (CUresult r = cu.cuMemAlloc(&p, bytes); r != CUDA_SUCCESS)
      return isStickyError(r) ? ex->driverError("cuMemAlloc", r)
                              : absl::ResourceExhaustedError(absl::StrCat(
                                    "cannot place the weights on the device: ",
                                    cu.describe("cuMemAlloc", r)));
    ex->weights_[v] = p;
    if (value.weightSize)
      if (CUresult r = cu.cuMemcpyHtoDAsync(p, value.weightData, value.weightSize, ex->transfer_);
          r != CUDA_SUCCESS)
        return ex->driverError("cuMemcpyHtoDAsync", r);
  }
  if (CUresult r = cu.cuStreamSynchronize(ex->transfer_); r != CUDA_SUCCESS)
    return ex->driverError("cuStreamSynchronize", r);
  return ex;
}

std::string CudaExecutor::description() const {
  return absl::StrCat("cuda on ", device_, calls_->unavailable());
}

absl::StatusOr<DeviceOutcome> CudaExecutor::runOnDevice(ExecutionContext &context, size_t s,
                                                        const StepInfo &step) const {
  absl::StatusOr<DeviceOutcome> ran =
      calls_->run(*this, context, s, step, context.model().hostStep(s));
  // Inside a segment a step that falls back to the host would read device
  // values back mid-capture: the segment runs step by step instead.
  SegmentMode mode = stateOf(context).mode;
  if (ran.ok() && !ran->ranAs && (mode == SegmentMode::Dry || mode == SegmentMode::Capture)) {
    stateOf(context).leftDevice = true;
    return absl::AbortedError(kLeavesDevice);
  }
  return ran;
}

absl::StatusOr<size_t> CudaExecutor::runSegment(ExecutionContext &context,
                                                 const RunRequest &request, size_t s) const {
  if (segmentAt_.empty() || segmentAt_[s] < 0)
    return s;
  const CudaDriver &cu = *driver_;
  CudaState &state = stateOf(context);
  // A caller capturing its own stream gets our steps in its graph as they are.
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cu.cuStreamIsCapturing(state.stream, &capturing) != CUDA_SUCCESS ||
      capturing != CU_STREAM_CAPTURE_STATUS_NONE)
    return s;
  const std::vector<StepInfo> &steps = context.model().plan().steps;
  auto [first, end] = segments_[segmentAt_[s]];
  SegmentGraphs &graphs = state.segments[segmentAt_[s]];
  auto runAll = [&](SegmentMode mode) {
    state.mode = mode;
    state.signature.clear();
    state.leftDevice = false;
    for (size_t i = first; i < end; ++i)
      if (absl::Status st = runStep(context, request, steps, i, /*topLevel=*/true); !st.ok()) {
        state.mode = SegmentMode::Off;
        return st;
      }
    state.mode = SegmentMode::Off;
    return absl::OkStatus();
  };
  auto launchGraph = [&](CUgraphExec exec) -> absl::StatusOr<size_t> {
    if (CUresult r = cu.cuGraphLaunch(exec, state.stream); r != CUDA_SUCCESS)
      return driverError("cuGraphLaunch", r);
    return end;
  };

  // Every value placed and every argument built, nothing run: the signature
  // says whether a graph already holds exactly this work.
  if (absl::Status st = runAll(SegmentMode::Dry); !st.ok())
    return state.leftDevice ? absl::StatusOr<size_t>(s) : st;
  std::vector<uint64_t> signature = std::move(state.signature);
  for (const SegmentGraphs::Graph &g : graphs.graphs)
    if (g.signature == signature)
      return launchGraph(g.exec);

  // Seen once before (the warm-up: libraries initialized, buffers sized):
  // capture this run's work into a graph and launch it. Anything the
  // capture refuses (an allocation, a synchronization) leaves it to run
  // step by step, now and for this signature from then on.
  if (signature == graphs.lastSignature &&
      std::find(graphs.refused.begin(), graphs.refused.end(), signature) == graphs.refused.end()) {
    if (cu.cuStreamBeginCapture(state.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) ==
        CUDA_SUCCESS) {
      absl::Status recorded = runAll(SegmentMode::Capture);
      CUgraph graph = nullptr;
      CUresult ended = cu.cuStreamEndCapture(state.stream, &graph);
      CUgraphExec exec = nullptr;
      bool made = recorded.ok() && ended == CUDA_SUCCESS && graph &&
                  cu.cuGraphInstantiate(&exec, graph, 0) == CUDA_SUCCESS;
      if (graph)
        cu.cuGraphDestroy(graph);
      if (made && state.signature == signature) {
        if (graphs.graphs.size() == kGraphsPerSegment) {
          cu.cuGraphExecDestroy(graphs.graphs.front().exec);
          graphs.graphs.erase(graphs.graphs.begin());
        }
        graphs.graphs.push_back({std::move(signature), exec});
        return launchGraph(exec);
      }
      if (exec)
        cu.cuGraphExecDestroy(exec);
    }
    // The recorded work never ran: the steps run below.
    if (graphs.refused.size() == kGraphsPerSegment)
      graphs.refused.erase(graphs.refused.begin());
    graphs.refused.push_back(signature);
  }
  if (absl::Status st = runAll(SegmentMode::Collect); !st.ok())
    return st;
  graphs.lastSignature = std::move(state.signature);
  return end;
}

absl::StatusOr<void *> CudaExecutor::allocate(size_t bytes) const {
  ContextScope scope(driver_, context_);
  if (!scope.ok)
    return absl::InternalError("cannot make the model's CUDA context current");
  if (absl::Status lost = lostStatus(); !lost.ok())
    return lost;
  CUdeviceptr p = 0;
  if (CUresult r = driver_->cuMemAlloc(&p, std::max<size_t>(bytes, 1)); r != CUDA_SUCCESS)
    return isStickyError(r) ? driverError("cuMemAlloc", r)
                            : absl::ResourceExhaustedError(
                                  absl::StrCat("cannot allocate ", bytes, " bytes on the device: ",
                                               driver_->describe("cuMemAlloc", r)));
  return reinterpret_cast<void *>(p);
}

absl::Status CudaExecutor::free(void *address) const {
  ContextScope scope(driver_, context_);
  if (!scope.ok)
    return absl::InternalError("cannot make the model's CUDA context current");
  if (absl::Status lost = lostStatus(); !lost.ok())
    return lost;
  if (CUresult r = driver_->cuMemFree(reinterpret_cast<CUdeviceptr>(address)); r != CUDA_SUCCESS)
    return isStickyError(r) ? driverError("cuMemFree", r)
                            : absl::InvalidArgumentError(driver_->describe("cuMemFree", r));
  return absl::OkStatus();
}

// On the executor's own non-blocking stream, after the legacy stream's work,
// and complete on return.
absl::Status CudaExecutor::copyToDevice(void *device, const void *host, size_t bytes) const {
  return copySynchronously("cuMemcpyHtoDAsync", [&] {
    return driver_->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(device), host, bytes,
                                      transfer_);
  });
}

absl::Status CudaExecutor::copyToHost(void *host, const void *device, size_t bytes) const {
  return copySynchronously("cuMemcpyDtoHAsync", [&] {
    return driver_->cuMemcpyDtoHAsync(host, reinterpret_cast<CUdeviceptr>(device), bytes,
                                      transfer_);
  });
}

absl::Status CudaExecutor::copySynchronously(const char *call,
                                             absl::FunctionRef<CUresult()> copy) const {
  ContextScope scope(driver_, context_);
  if (!scope.ok)
    return absl::InternalError("cannot make the model's CUDA context current");
  if (absl::Status lost = lostStatus(); !lost.ok())
    return lost;
  // Ordered after the legacy stream's work, as the C API promises, without
  // queueing on it (an event, waited for by the copies' own stream).
  CUevent mark = nullptr;
  if (CUresult r = driver_->cuEventCreate(&mark, CU_EVENT_DISABLE_TIMING); r != CUDA_SUCCESS)
    return driverError("cuEventCreate", r);
  const char *marking = "cuEventRecord";
  CUresult marked = driver_->cuEventRecord(mark, nullptr);
  if (marked == CUDA_SUCCESS) {
    marking = "cuStreamWaitEvent";
    marked = driver_->cuStreamWaitEvent(transfer_, mark, 0);
  }
  driver_->cuEventDestroy(mark);
  if (marked != CUDA_SUCCESS)
    return driverError(marking, marked);
  if (CUresult r = copy(); r != CUDA_SUCCESS)
    return isStickyError(r) ? driverError(call, r)
                            : absl::InvalidArgumentError(driver_->describe(call, r));
  if (CUresult r = driver_->cuStreamSynchronize(transfer_); r != CUDA_SUCCESS)
    return driverError("cuStreamSynchronize", r);
  return absl::OkStatus();
}

absl::Status CudaExecutor::installVariant(int variant, const artifact::VariantInfo &info,
                                          absl::Span<const artifact::HostLibraryInfo>) {
  const CudaDriver &cu = *driver_;
  const Plan &plan = *plan_;
  ContextScope scope(&cu, context_);
  if (!scope.ok)
    return absl::UnavailableError("cannot make the CUDA context current");
  // Each kernel from the cubin built for exactly this SM, else the PTX of the
  // newest SM not above it (the driver compiles PTX for newer devices).
  auto loadFunction = [&](const std::string &name, const std::vector<artifact::CubinInfo> &cubins,
                          const std::string &of) -> absl::StatusOr<CUfunction> {
    const artifact::CubinInfo *exact = nullptr, *ptx = nullptr;
    for (const artifact::CubinInfo &c : cubins) {
      if (c.sm == sm_ && c.size)
        exact = &c;
      if (c.sm <= sm_ && !c.ptx.empty() && (!ptx || c.sm > ptx->sm))
        ptx = &c;
    }
    if (!exact && !ptx)
      return absl::FailedPreconditionError(absl::StrCat(
          "the artifact has no cubin or PTX for sm_", sm_, " (kernel ", name, of,
          "); recompile with kiln-compile --arch sm_", sm_));
    CUmodule module = nullptr;
    CUresult r = exact ? cu.cuModuleLoadData(&module, exact->data)
                       : cu.cuModuleLoadData(&module, ptx->ptx.c_str());
    if (r != CUDA_SUCCESS)
      return absl::FailedPreconditionError(
          absl::StrCat("kernel ", name, of, ": ", cu.describe("cuModuleLoadData", r)));
    modules_.push_back(module);
    CUfunction function = nullptr;
    if (CUresult f = cu.cuModuleGetFunction(&function, module, name.c_str()); f != CUDA_SUCCESS)
      return absl::InvalidArgumentError(absl::StrCat(
          "corrupt artifact: kernel ", name, of, ": ", cu.describe("cuModuleGetFunction", f),
          f == CUDA_ERROR_NOT_FOUND && variant >= 0
              ? " (its code was built for other sizes than the variant states)"
              : ""));
    return function;
  };
  std::vector<CUfunction> table;
  if (variant < 0) {
    for (const artifact::KernelInfo &k : plan.kernels) {
      absl::StatusOr<CUfunction> function = loadFunction(k.name, k.cubins, "");
      if (!function.ok())
        return function.status();
      table.push_back(*function);
    }
  } else {
    table = functions_.at(-1);
    for (const auto &[k, cubins] : info.kernels) {
      // By the values the variant states (EntryName.h): a cubin built for
      // other values has another entry point, and the lookup fails.
      absl::StatusOr<CUfunction> function = loadFunction(
          artifact::variantEntryName(plan.kernels[k], info), cubins, " of variant " + info.name);
      if (!function.ok())
        return function.status();
      table[k] = *function;
    }
  }
  functions_.set(variant, std::move(table));
  return absl::OkStatus();
}

absl::Status CudaExecutor::begin(ExecutionContext &context, const RunRequest &request) const {
  if (absl::Status lost = lostStatus(); !lost.ok())
    return lost;
  const CudaDriver &cu = *driver_;
  const Plan &plan = context.model().plan();
  if (!context.backendState<CudaState>()) {
    context.setBackendState(std::make_unique<CudaState>(*this, plan.inputs.size()));
    // Weights were uploaded at load and stay put: their addresses are set once
    // per context, not per call.
    for (size_t v = 0; v < plan.values.size(); ++v)
      if (plan.values[v].kind == artifact::ValueKind::Weight)
        context.value(v).address = static_cast<uintptr_t>(weights_[v]);
  }
  CudaState &state = stateOf(context);
  state.scope = std::make_unique<ContextScope>(driver_, context_);
  if (!state.scope->ok)
    return absl::UnavailableError("cannot make the CUDA context current on this thread");
  state.stream = static_cast<CUstream>(request.stream);
  if (!state.stream) {
    if (!state.ownStream)
      if (CUresult r = cu.cuStreamCreate(&state.ownStream, CU_STREAM_NON_BLOCKING);
          r != CUDA_SUCCESS)
        return driverError("cuStreamCreate", r);
    state.stream = state.ownStream;
    // A run without a stream is ordered after the work already on the legacy
    // stream (the C API's promise), through an event rather than a blocking
    // stream: the legacy stream itself is used only here, by the caller's
    // choice.
    if (!state.legacyMark)
      if (CUresult r = cu.cuEventCreate(&state.legacyMark, CU_EVENT_DISABLE_TIMING);
          r != CUDA_SUCCESS)
        return driverError("cuEventCreate", r);
    if (CUresult r = cu.cuEventRecord(state.legacyMark, nullptr); r != CUDA_SUCCESS)
      return driverError("cuEventRecord", r);
    if (CUresult r = cu.cuStreamWaitEvent(state.stream, state.legacyMark, 0); r != CUDA_SUCCESS)
      return driverError("cuStreamWaitEvent", r);
  }
  state.segments.resize(segments_.size());
  state.mode = SegmentMode::Off;
  if (absl::Status s = state.ensure(state.arena, context.memory().peakBytes); !s.ok())
    return s;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const TensorRef &in = request.inputs[i];
    Slot &slot = context.value(plan.inputs[i]);
    slot.shape.assign(in.dims.begin(), in.dims.end());
    if (request.deviceBuffers) {
      slot.address = reinterpret_cast<uintptr_t>(in.data);
      continue;
    }
    size_t bytes = bytesOf(in.dtype, slot.shape);
    // Sized for the device symbols' bounds (a decode step's mask), so the
    // buffer, and a graph that reads it, stays put while the input grows.
    size_t room = bytes;
    if (!plan.deviceSymbols.empty())
      if (std::optional<ref::Shape> most =
              artifact::evaluateShape(plan.values[plan.inputs[i]], context.planning()))
        room = std::max(room, bytesOf(in.dtype, *most));
    if (absl::Status s = state.ensure(state.staging[i], room); !s.ok())
      return s;
    slot.address = static_cast<uintptr_t>(state.staging[i].first);
    if (bytes)
      if (CUresult r = cu.cuMemcpyHtoDAsync(state.staging[i].first, in.data, bytes, state.stream);
          r != CUDA_SUCCESS)
        return driverError("cuMemcpyHtoDAsync", r);
  }
  if (context.model().reportsErrors()) {
    size_t bytes = plan.stepCount * sizeof(int32_t);
    if (absl::Status s = state.ensure(state.errorWords, bytes); !s.ok())
      return s;
    state.errorZeros.assign(plan.stepCount, 0);
    if (CUresult r = cu.cuMemcpyHtoDAsync(state.errorWords.first, state.errorZeros.data(), bytes,
                                          state.stream);
        r != CUDA_SUCCESS)
      return driverError("cuMemcpyHtoDAsync", r);
  }
  if (!plan.deviceSymbols.empty()) {
    // The words every launch and graph of the call reads device symbols
    // from: written before any of them, on the call's stream.
    size_t bytes = plan.symbols.size() * sizeof(int64_t);
    if (absl::Status s = state.ensure(state.symbolWords, bytes); !s.ok())
      return s;
    absl::Span<const int64_t> values = context.symbolValues();
    state.symbolValues.assign(values.begin(), values.end());
    if (CUresult r = cu.cuMemcpyHtoDAsync(state.symbolWords.first, state.symbolValues.data(),
                                          bytes, state.stream);
        r != CUDA_SUCCESS)
      return driverError("cuMemcpyHtoDAsync", r);
  }
  if (request.profile && state.events.size() != 2 * plan.steps.size() + 1) {
    for (CUevent e : state.events)
      cu.cuEventDestroy(e);
    state.events.assign(2 * plan.steps.size() + 1, nullptr);
    for (CUevent &e : state.events)
      cu.cuEventCreate(&e, CU_EVENT_DEFAULT);
  }
  return absl::OkStatus();
}

absl::Status CudaExecutor::place(ExecutionContext &context, int v, const ref::Shape &shape) const {
  CudaState &state = stateOf(context);
  Slot &slot = context.value(v);
  slot.shape.assign(shape.begin(), shape.end());
  int64_t offset = context.memory().offsets[v];
  if (offset >= 0) {
    if (absl::Status s = fitsPlannedSlot(context, v, shape); !s.ok())
      return s;
    slot.address = static_cast<uintptr_t>(state.arena.first) + static_cast<uintptr_t>(offset);
    return absl::OkStatus();
  }
  // Sized at run time (by the data, or from operands' dims): within the run's
  // tensor limit before anything is allocated.
  ref::DType dtype = context.model().plan().values[v].dtype;
  if (absl::Status s = ref::checkedByteSize(dtype, shape, ref::maxTensorBytes()).status(); !s.ok())
    return s;
  // A value placed again in the same call (a loop body's, each iteration)
  // reuses its buffer when it fits: its previous contents are dead by then,
  // and the stream orders the reuse after their last reader.
  size_t bytes = std::max(bytesOf(dtype, shape), artifact::kSlotAlignment);
  if (state.valueBuffers.size() <= static_cast<size_t>(v))
    state.valueBuffers.resize(context.valueCount(), {0, 0});
  std::pair<CUdeviceptr, size_t> &current = state.valueBuffers[v];
  if (current.first && current.second >= bytes) {
    slot.address = static_cast<uintptr_t>(current.first);
    return absl::OkStatus();
  }
  absl::StatusOr<std::pair<CUdeviceptr, size_t>> buffer = pool_->take(bytes);
  if (!buffer.ok())
    return buffer.status();
  state.dynamic.push_back(*buffer);
  current = *buffer;
  slot.address = static_cast<uintptr_t>(buffer->first);
  return absl::OkStatus();
}

absl::Status CudaExecutor::launch(ExecutionContext &context, const StepInfo &step) const {
  const CudaDriver &cu = *driver_;
  const Plan &plan = context.model().plan();
  absl::StatusOr<LaunchArgs *> prepared = prepareLaunch(context, step);
  if (!prepared.ok())
    return prepared.status();
  LaunchArgs &launch = **prepared;
  int64_t items = workItems(context, step);
  int64_t blocks = plan.kernels[step.kernel].blockPerItem
                       ? items
                       : (items + kBlockThreads - 1) / kBlockThreads;
  unsigned grid = static_cast<unsigned>(std::min(std::max<int64_t>(blocks, 1), kMaxBlocks));
  CUfunction function = functions_.at(context.variant())[step.kernel];
  CudaState &state = stateOf(context);
  if (state.mode != SegmentMode::Off) {
    // What a graph's kernel node keeps: the code, the grid, every argument.
    state.sign(reinterpret_cast<uint64_t>(function));
    state.sign(grid);
    for (uintptr_t p : launch.pointers)
      state.sign(p);
    for (int64_t v : launch.symbols)
      state.sign(static_cast<uint64_t>(v));
    state.sign(launch.scratch);
    state.sign(plan.kernels[step.kernel].reportsErrors ? launch.errorWord : 0);
    if (state.mode == SegmentMode::Dry)
      return absl::OkStatus();
  }
  CUresult r = cu.cuLaunchKernel(function, grid, 1, 1, kBlockThreads, 1, 1, 0, state.stream,
                                 launch.args.data(), nullptr);
  return r == CUDA_SUCCESS ? absl::OkStatus()
                           : driverError("cuLaunchKernel", r);
}

uintptr_t CudaExecutor::symbolWords(ExecutionContext &context) const {
  return static_cast<uintptr_t>(stateOf(context).symbolWords.first);
}

absl::StatusOr<uintptr_t> CudaExecutor::kernelScratch(ExecutionContext &context,
                                                      size_t bytes) const {
  CudaState &state = stateOf(context);
  if (state.kernelScratch.second < bytes) {
    // A new buffer, zeroed on the call's stream before any launch that
    // reads it. (A segment's dry run grows it before its capture.)
    if (absl::Status s = state.ensure(state.kernelScratch, bytes); !s.ok())
      return s;
    state.scratchZeros.assign(state.kernelScratch.second, 0);
    if (CUresult r = driver_->cuMemcpyHtoDAsync(state.kernelScratch.first,
                                                state.scratchZeros.data(),
                                                state.scratchZeros.size(), state.stream);
        r != CUDA_SUCCESS)
      return driverError("cuMemcpyHtoDAsync", r);
  }
  return static_cast<uintptr_t>(state.kernelScratch.first);
}

uintptr_t CudaExecutor::errorWords(ExecutionContext &context) const {
  return static_cast<uintptr_t>(stateOf(context).errorWords.first);
}

absl::Status CudaExecutor::readErrorWords(ExecutionContext &context,
                                          std::vector<int32_t> &words) const {
  const CudaDriver &cu = *driver_;
  CudaState &state = stateOf(context);
  words.assign(context.model().plan().stepCount, 0);
  if (words.empty())
    return absl::OkStatus();
  ContextScope scope(driver_, context_);
  if (CUresult r = cu.cuMemcpyDtoHAsync(words.data(), state.errorWords.first,
                                        words.size() * sizeof(int32_t), state.stream);
      r != CUDA_SUCCESS)
    return driverError("cuMemcpyDtoHAsync", r);
  if (CUresult r = cu.cuStreamSynchronize(state.stream); r != CUDA_SUCCESS)
    return driverError("cuStreamSynchronize", r);
  return absl::OkStatus();
}

absl::StatusOr<ref::Tensor> CudaExecutor::hostValue(ExecutionContext &context, int v) const {
  const CudaDriver &cu = *driver_;
  CUstream stream = stateOf(context).stream;
  const Slot &slot = context.value(v);
  ref::Tensor t(context.model().plan().values[v].dtype, slot.shape);
  if (t.byteSize())
    if (CUresult r = cu.cuMemcpyDtoHAsync(t.bytes(), static_cast<CUdeviceptr>(slot.address),
                                          t.byteSize(), stream);
        r != CUDA_SUCCESS)
      return driverError("cuMemcpyDtoHAsync", r);
  if (CUresult r = cu.cuStreamSynchronize(stream); r != CUDA_SUCCESS)
    return driverError("cuStreamSynchronize", r);
  // Every queued upload has completed: their host copies can go (a loop that
  // reads its condition each iteration keeps no more than one iteration's).
  stateOf(context).uploads.clear();
  return t;
}

absl::Status CudaExecutor::store(ExecutionContext &context, int v, ref::Tensor result) const {
  const CudaDriver &cu = *driver_;
  CUstream stream = stateOf(context).stream;
  if (absl::Status s = place(context, v, result.shape()); !s.ok())
    return s;
  if (!result.byteSize())
    return absl::OkStatus();
  // The host copy lives until the call's end (CudaState::uploads), so the
  // stream runs on: the next steps queue behind the copy without a wait here.
  CudaState &state = stateOf(context);
  state.uploads.push_back(std::move(result));
  const ref::Tensor &queued = state.uploads.back();
  if (CUresult r = cu.cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(context.value(v).address),
                                        queued.bytes(), queued.byteSize(), stream);
      r != CUDA_SUCCESS)
    return driverError("cuMemcpyHtoDAsync", r);
  return absl::OkStatus();
}

absl::Status CudaExecutor::finish(ExecutionContext &context, const RunRequest &request,
                                  OutputSink sink) const {
  const CudaDriver &cu = *driver_;
  CudaState &state = stateOf(context);
  const Plan &plan = context.model().plan();
  absl::Status status = absl::OkStatus();
  for (size_t i = 0; i < plan.outputs.size() && status.ok(); ++i) {
    int v = plan.outputs[i];
    const Slot &slot = context.value(v);
    ref::DType dtype = plan.values[v].dtype;
    absl::StatusOr<void *> destination = sink(i, dtype, slot.shape);
    if (!destination.ok()) {
      status = destination.status();
      break;
    }
    size_t bytes = bytesOf(dtype, slot.shape);
    // An output already where the caller wants it (a KV cache updated in
    // place in the device buffer passed as input and output) moves nothing.
    if (!bytes || (request.deviceBuffers &&
                   reinterpret_cast<uintptr_t>(*destination) == slot.address))
      continue;
    auto from = static_cast<CUdeviceptr>(slot.address);
    CUresult r = request.deviceBuffers
                     ? cu.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(*destination), from,
                                            bytes, state.stream)
                     : cu.cuMemcpyDtoHAsync(*destination, from, bytes, state.stream);
    if (r != CUDA_SUCCESS)
      status = driverError("cuMemcpy (output)", r);
  }
  // The run is complete when this returns: outputs are in place and the
  // context's buffers are free for the next call.
  CUresult r = cu.cuStreamSynchronize(state.stream);
  if (status.ok() && r != CUDA_SUCCESS)
    status = driverError("cuStreamSynchronize", r);
  state.releaseDynamic();
  state.scope.reset();
  return status;
}

void CudaExecutor::abandon(ExecutionContext &context, const RunRequest &) const {
  if (!context.backendState<CudaState>())
    return;
  CudaState &state = stateOf(context);
  if (state.scope && state.scope->ok)
    driver_->cuStreamSynchronize(state.stream);
  state.releaseDynamic();
  state.scope.reset();
}

absl::Status CudaExecutor::settle(ExecutionContext &context) const {
  CudaState &state = stateOf(context);
  if (CUresult r = driver_->cuStreamSynchronize(state.stream); r != CUDA_SUCCESS)
    return driverError("cuStreamSynchronize", r);
  state.uploads.clear();
  return absl::OkStatus();
}

absl::Status CudaExecutor::copyBytes(ExecutionContext &context, uintptr_t to, uintptr_t from,
                                     size_t bytes) const {
  if (CUresult r = driver_->cuMemcpyDtoDAsync(static_cast<CUdeviceptr>(to),
                                              static_cast<CUdeviceptr>(from), bytes,
                                              stateOf(context).stream);
      r != CUDA_SUCCESS)
    return driverError("cuMemcpyDtoDAsync", r);
  return absl::OkStatus();
}

void CudaExecutor::mark(ExecutionContext &context, const RunRequest &, size_t index) const {
  CudaState &state = stateOf(context);
  driver_->cuEventRecord(state.events[index], state.stream);
}

absl::StatusOr<double> CudaExecutor::elapsedUs(ExecutionContext &context, size_t from,
                                               size_t to) const {
  CudaState &state = stateOf(context);
  ContextScope scope(driver_, context_);
  float ms = 0;
  if (CUresult r = driver_->cuEventElapsedTime(&ms, state.events[from], state.events[to]);
      r != CUDA_SUCCESS)
    return driverError("cuEventElapsedTime", r);
  return 1000.0 * ms;
}

} // namespace kiln::rt
