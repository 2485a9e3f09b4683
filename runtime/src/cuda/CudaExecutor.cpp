//===- CudaExecutor.cpp - a plan on a CUDA device --------------------------===//

#include "cuda/CudaExecutor.h"

#include "Model.h"
#include "kiln/artifact/StepWork.h"

#include "absl/strings/str_cat.h"

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>

namespace kiln::rt {
namespace {

/// Threads per block for every generated kernel: the device library sizes its
/// shared scratch for KILN_MAX_BLOCK (256), and kernels are correct for any grid.
constexpr unsigned kBlockThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

/// Makes the model's context current on the calling thread for a scope.
class ContextScope {
public:
  ContextScope(const CudaDriver *driver, CUcontext context) : driver(driver) {
    ok = driver->cuCtxPushCurrent(context) == CUDA_SUCCESS;
  }
  ~ContextScope() {
    CUcontext popped;
    if (ok)
      driver->cuCtxPopCurrent(&popped);
  }
  bool ok = false;

private:
  const CudaDriver *driver;
};

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

/// The profile's kind of a library step the library refused (no algorithm,
/// or a call it does not support), which ran on the host instead.
constexpr const char *kCublasLtRefused = "host:cublasLt-refused";
constexpr const char *kCudnnRefused = "host:cudnn-refused";

/// A library step's answer when the library refuses it: the host runs it
/// (nullptr), and the profile names why.
absl::StatusOr<const char *> refusedByLibrary(ExecutionContext &context, const char *kind) {
  context.hostKind = kind;
  return nullptr;
}

} // namespace

/// How a context runs the steps of a segment (CudaExecutor::runSegment).
enum class SegmentMode {
  Off,     ///< outside segments: launches run, nothing is recorded
  Dry,     ///< bookkeeping only (values placed, arguments built), no device work
  Collect, ///< device work queued and its signature recorded
  Capture, ///< likewise, into a graph: a step that would leave the device stops it
};

/// A context's graphs of one segment, and the signature of the last run
/// that did not replay one (a second run with the same signature captures).
struct SegmentGraphs {
  struct Graph {
    std::vector<uint64_t> signature;
    CUgraphExec exec = nullptr;
  };
  std::vector<Graph> graphs;
  std::vector<uint64_t> lastSignature;
  /// Signatures whose capture failed: they run step by step from then on.
  std::vector<std::vector<uint64_t>> refused;
};

/// A context's device buffers: an arena and a staging buffer per input, each
/// grown to the largest call seen and kept; data-dependent results of the
/// current call; profiling events.
class CudaState : public BackendState {
public:
  CudaState(const CudaExecutor &executor, size_t inputs)
      : executor(executor), staging(inputs, {0, 0}) {}
  ~CudaState() override {
    if (executor.contextWasReset())
      return; // its buffers, streams and graphs went with the context
    const CudaDriver &cu = *executor.driver_;
    ContextScope scope(&cu, executor.context_);
    releaseDynamic();
    if (arena.first)
      cu.cuMemFree(arena.first);
    for (auto [p, size] : staging)
      if (p)
        cu.cuMemFree(p);
    if (errorWords.first)
      cu.cuMemFree(errorWords.first);
    if (workspace.first)
      cu.cuMemFree(workspace.first);
    for (CUevent e : events)
      cu.cuEventDestroy(e);
    if (legacyMark)
      cu.cuEventDestroy(legacyMark);
    for (SegmentGraphs &segment : segments)
      for (SegmentGraphs::Graph &g : segment.graphs)
        cu.cuGraphExecDestroy(g.exec);
    if (ownStream)
      cu.cuStreamDestroy(ownStream);
  }

  /// `buffer` grown to hold `bytes`.
  /// The library workspace grown to `bytes` (a call's algorithm's need):
  /// its address and size (WorkspaceFn).
  absl::StatusOr<std::pair<uintptr_t, size_t>> workspaceOf(size_t bytes) {
    if (bytes)
      if (absl::Status st = ensure(workspace, bytes); !st.ok())
        return st;
    return std::make_pair(static_cast<uintptr_t>(workspace.first), workspace.second);
  }
  absl::Status ensure(std::pair<CUdeviceptr, size_t> &buffer, size_t bytes) {
    bytes = std::max(bytes, artifact::kSlotAlignment);
    if (buffer.second >= bytes)
      return absl::OkStatus();
    const CudaDriver &cu = *executor.driver_;
    if (buffer.first)
      cu.cuMemFree(buffer.first);
    buffer = {0, 0};
    CUdeviceptr p = 0;
    if (CUresult r = cu.cuMemAlloc(&p, bytes); r != CUDA_SUCCESS)
      return isStickyError(r) ? executor.driverError("cuMemAlloc", r)
                              : absl::ResourceExhaustedError(absl::StrCat(
                                    "cannot allocate ", bytes,
                                    " bytes on the device: ", cu.describe("cuMemAlloc", r)));
    buffer = {p, bytes};
    return absl::OkStatus();
  }

  /// After the stream has finished (or been abandoned): the call's
  /// data-dependent buffers go back to the pool, its uploads' host copies go.
  void releaseDynamic() {
    for (auto [p, size] : dynamic)
      executor.pool_->give(p, size);
    dynamic.clear();
    valueBuffers.clear();
    uploads.clear();
  }

  const CudaExecutor &executor;
  std::pair<CUdeviceptr, size_t> arena = {0, 0}; ///< address, bytes
  std::vector<std::pair<CUdeviceptr, size_t>> staging;
  std::vector<std::pair<CUdeviceptr, size_t>> dynamic;
  /// Per value: the buffer of `dynamic` it was last placed in this call.
  std::vector<std::pair<CUdeviceptr, size_t>> valueBuffers;
  /// Host results of this call's host steps, queued for copying to the device:
  /// kept until the call's last synchronization, so no step waits for its copy.
  std::deque<ref::Tensor> uploads; // a deque: queued copies read from stable addresses
  /// One int32 per step where kernels report data errors, and the zeros that
  /// reset them (copied at the start of each call, on the call's stream).
  std::pair<CUdeviceptr, size_t> errorWords = {0, 0};
  /// cuBLASLt's workspace, allocated at the context's first matmul.
  std::pair<CUdeviceptr, size_t> workspace = {0, 0};
  std::vector<int32_t> errorZeros;
  std::vector<CUevent> events;
  /// The call's stream: the caller's, or `ownStream` (made at the context's
  /// first call that gives none: the legacy stream cannot be captured). It
  /// is non-blocking: a blocking stream's capture would make the legacy
  /// stream unusable to every other thread of the process (CUDA fails its
  /// calls with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT); the call waits for the
  /// legacy stream's earlier work through `legacyMark` instead.
  CUstream stream = nullptr;
  CUstream ownStream = nullptr;
  /// Marks the legacy stream's work at a call without a stream (begin).
  CUevent legacyMark = nullptr;
  std::unique_ptr<ContextScope> scope;
  /// CUDA graphs: per executor segment; the mode of the steps running now
  /// and the signature they have recorded (every value the device work of
  /// the segment takes: kernels, grids, addresses, sizes).
  std::vector<SegmentGraphs> segments;
  SegmentMode mode = SegmentMode::Off;
  std::vector<uint64_t> signature;
  /// Set when a step of a dry run or capture would have run on the host.
  bool leftDevice = false;

  void sign(uint64_t v) { signature.push_back(v); }
  void sign(const ref::Shape &shape) {
    signature.push_back(shape.size());
    for (int64_t d : shape)
      signature.push_back(static_cast<uint64_t>(d));
  }
  /// A library call's part of the signature: its step (which fixes its
  /// parameters), element type, operand dims, addresses and workspace.
  void signCall(size_t step, ref::DType dtype, std::initializer_list<const ref::Shape *> shapes,
                std::initializer_list<uintptr_t> addresses, CUdeviceptr workspaceAddress) {
    sign(step);
    sign(static_cast<uint64_t>(dtype));
    for (const ref::Shape *shape : shapes)
      sign(*shape);
    for (uintptr_t address : addresses)
      sign(address);
    sign(workspaceAddress);
  }
};

namespace {
CudaState &stateOf(ExecutionContext &context) {
  return static_cast<CudaState &>(*context.state);
}
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
    matmul_.reset();
    dnn_.reset();
    pool_.release(); // its buffers died with the context; not freed again
    return;
  }
  {
    ContextScope scope(driver_, context_);
    matmul_.reset();
    dnn_.reset();
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
  // Matmul steps run in cuBLASLt where it loads; without it they run on the
  // host as before, and the description says why.
  bool hasMatmul = false, hasDnn = false;
  artifact::forEachStep(plan, [&](const StepInfo &step) {
    hasMatmul = hasMatmul || step.op == schema::StepOp::MatMul;
    hasDnn = hasDnn || step.op == schema::StepOp::Conv ||
             step.op == schema::StepOp::ConvTranspose || step.op == schema::StepOp::Pool;
  });
  if (hasMatmul) {
    absl::StatusOr<std::unique_ptr<MatmulRunner>> runner = MatmulRunner::create();
    if (runner.ok())
      ex->matmul_ = std::move(*runner);
    else
      ex->matmulUnavailable_ = std::string(runner.status().message());
  }
  if (hasDnn) {
    absl::StatusOr<std::unique_ptr<DnnRunner>> runner = DnnRunner::create();
    if (runner.ok())
      ex->dnn_ = std::move(*runner);
    else
      ex->dnnUnavailable_ = std::string(runner.status().message());
  }
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
  std::string text = "cuda on " + device_;
  if (!matmulUnavailable_.empty())
    absl::StrAppend(&text, " (matmuls on the host: ", matmulUnavailable_, ")");
  if (!dnnUnavailable_.empty())
    absl::StrAppend(&text, " (conv and pool on the host: ", dnnUnavailable_, ")");
  return text;
}

namespace {
/// A library call's element type: false (run the step on the host) when its
/// operands' dtypes differ.
bool libraryDtype(ExecutionContext &context, const StepInfo &step, ref::DType &dtype) {
  const Plan &plan = context.model().plan();
  dtype = plan.values[step.outputs[0]].dtype;
  for (int v : step.inputs)
    if (plan.values[v].dtype != dtype)
      return false;
  return true;
}

/// A library step's result dims: the plan's at this call's symbol values, or,
/// where the plan leaves a dim unknown (a `?` of a dynamic import), what
/// `derive` computes from the operands' dims, known by now. False (run the
/// step on the host, which reports why) when neither gives them.
template <typename Derive>
bool libraryResultDims(ExecutionContext &context, int out, ref::Shape &result, Derive derive) {
  if (artifact::evaluateShapeInto(context.model().plan().values[out], context.symbols, result))
    return true;
  std::optional<ref::Shape> derived = derive();
  if (!derived)
    return false;
  result = std::move(*derived);
  return true;
}

} // namespace

absl::StatusOr<const char *> CudaExecutor::runDnnStep(ExecutionContext &context, size_t s,
                                                      const StepInfo &step) const {
  const HostStep &host = context.model().hostStep(s);
  if ((!host.conv && !host.convTranspose && !host.pool) || !dnn_)
    return nullptr;
  int out = step.outputs[0];
  DnnCall call;
  if (!libraryDtype(context, step, call.dtype))
    return nullptr;
  const Slot &x = context.values[step.inputs[0]];
  call.x = x.shape;
  call.xAddress = x.address;
  const std::optional<ConvStepParams> &convParams = host.conv ? host.conv : host.convTranspose;
  if (convParams)
    call.w = context.values[step.inputs[1]].shape;
  if (!libraryResultDims(context, out, call.result, [&] {
        return convParams ? DnnRunner::convResultShape(*convParams, !host.conv, call.x, call.w)
                          : DnnRunner::poolResultShape(*host.pool, call.x);
      }))
    return nullptr;
  if (const std::optional<ConvStepParams> &conv = convParams) {
    const Slot &w = context.values[step.inputs[1]];
    call.wAddress = w.address;
    if (conv->hasBias)
      call.biasAddress = context.values[step.inputs[2]].address;
    if (conv->hasResidual) {
      const Slot &residual = context.values[step.inputs[conv->hasBias ? 3 : 2]];
      if (residual.shape != call.result)
        return nullptr; // the host step reports the mismatch
      call.residualAddress = residual.address;
    }
    if (host.conv ? !DnnRunner::supportsConv(*conv, call)
                  : !DnnRunner::supportsConvTranspose(*conv, call))
      return nullptr;
  } else if (!DnnRunner::supportsPool(*host.pool, call)) {
    return nullptr;
  }
  if (absl::Status st = place(context, out, call.result); !st.ok())
    return st;
  call.resultAddress = context.values[out].address;
  CudaState &state = stateOf(context);
  // The call's signature, with the workspace as it is after the call (a
  // dry run's is the workspace as it is: a first run that grows it then
  // signs what the next run will see, and that run captures).
  auto sign = [&] {
    if (state.mode != SegmentMode::Off)
      state.signCall(s, call.dtype, {&call.x, &call.w, &call.result},
                     {call.xAddress, call.wAddress, call.biasAddress, call.residualAddress,
                      call.resultAddress},
                     host.pool ? 0 : state.workspace.first);
  };
  if (state.mode == SegmentMode::Dry) {
    sign();
    return "cudnn";
  }
  // A convolution's workspace is what its algorithm needs (the fastest
  // within DnnRunner::kMaxWorkspaceBytes), the context's grown to it, as a
  // matmul's is.
  auto workspaceFor = [&](size_t bytes) { return state.workspaceOf(bytes); };
  absl::Status ran =
      host.pool   ? dnn_->pool(*host.pool, call, state.stream)
      : host.conv ? dnn_->conv(*host.conv, call, state.stream, workspaceFor)
                  : dnn_->convTranspose(*host.convTranspose, call, state.stream, workspaceFor);
  sign();
  // What cuDNN refuses (no algorithm within the workspace, a call it does
  // not support) runs on the host, and the profile says so.
  if (absl::IsUnimplemented(ran))
    return refusedByLibrary(context, kCudnnRefused);
  if (!ran.ok())
    return ran;
  return "cudnn";
}

absl::StatusOr<const char *> CudaExecutor::runOnDevice(ExecutionContext &context, size_t s,
                                                       const StepInfo &step) const {
  absl::StatusOr<const char *> ran = runLibraryStep(context, s, step);
  // Inside a segment a step that falls back to the host would read device
  // values back mid-capture: the segment runs step by step instead.
  SegmentMode mode = stateOf(context).mode;
  if (ran.ok() && !*ran && (mode == SegmentMode::Dry || mode == SegmentMode::Capture)) {
    stateOf(context).leftDevice = true;
    return absl::AbortedError(kLeavesDevice);
  }
  return ran;
}

absl::StatusOr<const char *> CudaExecutor::runLibraryStep(ExecutionContext &context, size_t s,
                                                          const StepInfo &step) const {
  const HostStep &host = context.model().hostStep(s);
  if (host.conv || host.convTranspose || host.pool)
    return runDnnStep(context, s, step);
  if (host.reshape)
    return runReshape(context, step);
  if (!host.matmul || !matmul_)
    return nullptr;
  int out = step.outputs[0];
  MatmulCall call;
  if (!libraryDtype(context, step, call.dtype))
    return nullptr;
  const Slot &a = context.values[step.inputs[0]], &b = context.values[step.inputs[1]];
  call.a = a.shape;
  call.b = b.shape;
  if (!libraryResultDims(context, out, call.result,
                         [&] { return MatmulRunner::resultShape(*host.matmul, a.shape, b.shape); }))
    return nullptr;
  call.aAddress = a.address;
  call.bAddress = b.address;
  if (host.matmul->hasBias) {
    const Slot &bias = context.values[step.inputs[2]];
    call.bias = bias.shape;
    call.biasAddress = bias.address;
  }
  if (!MatmulRunner::supports(*host.matmul, call))
    return nullptr;
  if (absl::Status st = place(context, out, call.result); !st.ok())
    return st;
  call.resultAddress = context.values[out].address;
  CudaState &state = stateOf(context);
  // Signed with the workspace as the call leaves it (a dry run's as it is),
  // as a convolution's is.
  auto sign = [&] {
    if (state.mode != SegmentMode::Off)
      state.signCall(s, call.dtype, {&call.a, &call.b, &call.bias, &call.result},
                     {call.aAddress, call.bAddress, call.biasAddress, call.resultAddress},
                     state.workspace.first);
  };
  if (state.mode == SegmentMode::Dry) {
    sign();
    return "cublasLt";
  }
  // The algorithm (the heuristic's, told the operands' real alignment) and
  // the workspace it needs, which the context's grows to. A refusal leaves
  // the step to the host, and the profile says so.
  absl::Status ran = matmul_->run(
      *host.matmul, call, state.stream,
      [&](size_t bytes) { return state.workspaceOf(bytes); });
  sign();
  if (!ran.ok())
    return absl::IsUnimplemented(ran) ? refusedByLibrary(context, kCublasLtRefused) : ran;
  return "cublasLt";
}

absl::StatusOr<const char *> CudaExecutor::runReshape(ExecutionContext &context,
                                                      const StepInfo &step) const {
  // The result's dims are the shape operand's values: that small tensor comes
  // to the host (the one synchronization a size that depends on data needs);
  // the data never leaves the device. At the top level the result is the
  // input's bytes (the memory plan keeps them live while it is read, as for
  // a View); in a body a copy, since a body's results are copied into its
  // parameters, which an alias could overlap.
  const Plan &plan = context.model().plan();
  int in = step.inputs[0], out = step.outputs[0];
  absl::StatusOr<ref::Tensor> target = hostValue(context, step.inputs[1]);
  if (!target.ok())
    return target.status();
  ref::DType dtype = plan.values[in].dtype;
  const ref::Shape inputShape = context.values[in].shape;
  absl::StatusOr<ref::Shape> shape = ref::reshapeResult(
      inputShape, ref::integerValues(*target),
      absl::StrCat(ref::info(dtype).name, "[", ref::shapeToString(inputShape), "]"));
  if (!shape.ok())
    return shape.status();
  if (absl::Status st = fitsPlan(context, out, dtype, *shape, "its result"); !st.ok())
    return st;
  if (static_cast<size_t>(step.index) < plan.steps.size()) {
    Slot &view = context.values[out];
    view.shape = *shape;
    view.address = context.values[in].address;
    return "view";
  }
  if (absl::Status st = place(context, out, *shape); !st.ok())
    return st;
  if (size_t bytes = bytesOf(dtype, *shape))
    if (CUresult r = driver_->cuMemcpyDtoDAsync(static_cast<CUdeviceptr>(context.values[out].address),
                                                static_cast<CUdeviceptr>(context.values[in].address),
                                                bytes, stateOf(context).stream);
        r != CUDA_SUCCESS)
      return driverError("cuMemcpyDtoDAsync", r);
  return "copy";
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

absl::StatusOr<void *> CudaExecutor::allocateDevice(size_t bytes) const {
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

absl::Status CudaExecutor::freeDevice(void *address) const {
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
      return absl::InvalidArgumentError(absl::StrCat("corrupt artifact: kernel ", name, of, ": ",
                                                     cu.describe("cuModuleGetFunction", f)));
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
      absl::StatusOr<CUfunction> function =
          loadFunction(plan.kernels[k].name, cubins, " of variant " + info.name);
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
  if (!context.state) {
    context.state = std::make_unique<CudaState>(*this, plan.inputs.size());
    // Weights were uploaded at load and stay put: their addresses are set once
    // per context, not per call.
    for (size_t v = 0; v < plan.values.size(); ++v)
      if (plan.values[v].kind == artifact::ValueKind::Weight)
        context.values[v].address = static_cast<uintptr_t>(weights_[v]);
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
  if (absl::Status s = state.ensure(state.arena, context.memory->peakBytes); !s.ok())
    return s;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const TensorRef &in = request.inputs[i];
    Slot &slot = context.values[plan.inputs[i]];
    slot.shape.assign(in.dims.begin(), in.dims.end());
    if (request.deviceBuffers) {
      slot.address = reinterpret_cast<uintptr_t>(in.data);
      continue;
    }
    size_t bytes = bytesOf(in.dtype, slot.shape);
    if (absl::Status s = state.ensure(state.staging[i], bytes); !s.ok())
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
  Slot &slot = context.values[v];
  slot.shape.assign(shape.begin(), shape.end());
  int64_t offset = context.memory->offsets[v];
  if (offset >= 0) {
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
    state.valueBuffers.resize(context.values.size(), {0, 0});
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
  prepareLaunch(context, step);
  int64_t items = workItems(context, step);
  int64_t blocks = plan.kernels[step.kernel].blockPerItem
                       ? items
                       : (items + kBlockThreads - 1) / kBlockThreads;
  unsigned grid = static_cast<unsigned>(std::min(std::max<int64_t>(blocks, 1), kMaxBlocks));
  CUfunction function = functions_.at(context.variant)[step.kernel];
  CudaState &state = stateOf(context);
  if (state.mode != SegmentMode::Off) {
    // What a graph's kernel node keeps: the code, the grid, every argument.
    state.sign(reinterpret_cast<uint64_t>(function));
    state.sign(grid);
    for (uintptr_t p : context.pointers)
      state.sign(p);
    for (int64_t v : context.symbolArgs)
      state.sign(static_cast<uint64_t>(v));
    state.sign(plan.kernels[step.kernel].reportsErrors ? context.errorWordArg : 0);
    if (state.mode == SegmentMode::Dry)
      return absl::OkStatus();
  }
  CUresult r = cu.cuLaunchKernel(function, grid, 1, 1, kBlockThreads, 1, 1, 0, state.stream,
                                 context.args.data(), nullptr);
  return r == CUDA_SUCCESS ? absl::OkStatus()
                           : driverError("cuLaunchKernel", r);
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
  const Slot &slot = context.values[v];
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
  if (CUresult r = cu.cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(context.values[v].address),
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
    const Slot &slot = context.values[v];
    ref::DType dtype = plan.values[v].dtype;
    absl::StatusOr<void *> destination = sink(i, dtype, slot.shape);
    if (!destination.ok()) {
      status = destination.status();
      break;
    }
    size_t bytes = bytesOf(dtype, slot.shape);
    if (!bytes)
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
  if (!context.state)
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
