//===- CudaExecutor.cpp - a plan on a CUDA device --------------------------===//

#include "cuda/CudaExecutor.h"

#include "BufferPool.h"
#include "Model.h"

#include "absl/strings/str_cat.h"

#include <chrono>
#include <cstring>

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

/// Device buffers of one call, from the executor's pool and back to it when the
/// call ends, on every path: only once the stream has finished with them, or a
/// concurrent call could take a buffer a kernel is still writing.
class Allocations {
public:
  Allocations(BufferPool<CUdeviceptr> &pool, const CudaDriver &driver, CUstream stream)
      : pool(pool), driver(driver), stream(stream) {}
  ~Allocations() {
    if (!taken.empty())
      driver.cuStreamSynchronize(stream);
    for (auto [p, size] : taken)
      pool.give(p, size);
  }
  absl::StatusOr<CUdeviceptr> allocate(size_t bytes) {
    absl::StatusOr<std::pair<CUdeviceptr, size_t>> buffer =
        pool.take(std::max<size_t>(bytes, kSlotAlignment));
    if (!buffer.ok())
      return buffer.status();
    taken.push_back(*buffer);
    return buffer->first;
  }

private:
  BufferPool<CUdeviceptr> &pool;
  const CudaDriver &driver;
  CUstream stream;
  std::vector<std::pair<CUdeviceptr, size_t>> taken;
};

} // namespace

CudaExecutor::~CudaExecutor() {
  if (!driver_ || !context_)
    return;
  {
    ContextScope scope(driver_, context_);
    pool_.reset();
    for (CUdeviceptr w : weights_)
      if (w)
        driver_->cuMemFree(w);
    for (CUmodule m : modules_)
      driver_->cuModuleUnload(m);
  }
  driver_->cuDevicePrimaryCtxRelease(device_);
}

absl::StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::create(const Plan &plan) {
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
  if (absl::Status s = check("cuDeviceGet", cu.cuDeviceGet(&ex->device_, 0)); !s.ok())
    return s;
  int major = 0, minor = 0;
  cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ex->device_);
  cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ex->device_);
  int sm = major * 10 + minor;
  char name[256] = {0};
  cu.cuDeviceGetName(name, sizeof(name) - 1, ex->device_);
  ex->description_ = absl::StrCat(name, " (sm_", sm, ")");
  if (absl::Status s = check("cuDevicePrimaryCtxRetain",
                             cu.cuDevicePrimaryCtxRetain(&ex->context_, ex->device_));
      !s.ok()) {
    ex->context_ = nullptr;
    return s;
  }
  ContextScope scope(&cu, ex->context_);
  if (!scope.ok)
    return absl::UnavailableError("cannot make the CUDA context current");
  const CudaDriver *d = &cu; // the process-wide driver outlives every executor
  ex->pool_ = std::make_unique<BufferPool<CUdeviceptr>>(
      [d](size_t bytes) -> absl::StatusOr<CUdeviceptr> {
        CUdeviceptr p = 0;
        if (CUresult r = d->cuMemAlloc(&p, bytes); r != CUDA_SUCCESS)
          return absl::ResourceExhaustedError(absl::StrCat(
              "cannot allocate ", bytes, " bytes on the device: ", d->describe("cuMemAlloc", r)));
        return p;
      },
      [d](CUdeviceptr p) { d->cuMemFree(p); });

  // Each kernel from the cubin built for exactly this SM, else the PTX of the
  // newest SM not above it (the driver compiles PTX for newer devices).
  for (const KernelInfo &k : plan.kernels) {
    const CubinInfo *exact = nullptr, *ptx = nullptr;
    for (const CubinInfo &c : k.cubins) {
      if (c.sm == sm && c.size)
        exact = &c;
      if (c.sm <= sm && !c.ptx.empty() && (!ptx || c.sm > ptx->sm))
        ptx = &c;
    }
    if (!exact && !ptx)
      return absl::FailedPreconditionError(absl::StrCat(
          "the artifact has no cubin or PTX for sm_", sm, " (kernel ", k.name,
          "); recompile with kiln-compile --arch sm_", sm));
    CUmodule module = nullptr;
    CUresult r = exact ? cu.cuModuleLoadData(&module, exact->data)
                       : cu.cuModuleLoadData(&module, ptx->ptx.c_str());
    if (r != CUDA_SUCCESS)
      return absl::FailedPreconditionError(
          absl::StrCat("kernel ", k.name, ": ", cu.describe("cuModuleLoadData", r)));
    ex->modules_.push_back(module);
    CUfunction function = nullptr;
    if (CUresult f = cu.cuModuleGetFunction(&function, module, k.name.c_str()); f != CUDA_SUCCESS)
      return absl::InvalidArgumentError(
          absl::StrCat("corrupt artifact: kernel ", k.name, ": ", cu.describe("cuModuleGetFunction", f)));
    ex->functions_.push_back(function);
  }

  // Weights go to the device once; every call reads them in place.
  ex->weights_.assign(plan.values.size(), 0);
  for (size_t v = 0; v < plan.values.size(); ++v) {
    const ValueInfo &value = plan.values[v];
    if (value.kind != ValueKind::Weight)
      continue;
    CUdeviceptr p = 0;
    if (CUresult r = cu.cuMemAlloc(&p, std::max<size_t>(value.weightSize, kSlotAlignment));
        r != CUDA_SUCCESS)
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot place the weights on the device: ", cu.describe("cuMemAlloc", r)));
    ex->weights_[v] = p;
    if (value.weightSize)
      if (CUresult r = cu.cuMemcpyHtoDAsync(p, value.weightData, value.weightSize, nullptr);
          r != CUDA_SUCCESS)
        return absl::InternalError(cu.describe("cuMemcpyHtoD", r));
  }
  if (CUresult r = cu.cuStreamSynchronize(nullptr); r != CUDA_SUCCESS)
    return absl::InternalError(cu.describe("cuStreamSynchronize", r));
  return ex;
}

absl::Status CudaExecutor::run(const Plan &plan,
                               const std::vector<std::optional<int64_t>> &symbols,
                               const MemoryPlan &memory, const std::vector<ref::Tensor> &inputs,
                               bool deviceBuffers, void *streamHandle, const OutputSink &sink,
                               Profile *profile) const {
  const CudaDriver &cu = *driver_;
  auto stream = static_cast<CUstream>(streamHandle);
  ContextScope scope(driver_, context_);
  if (!scope.ok)
    return absl::UnavailableError("cannot make the CUDA context current on this thread");
  auto check = [&](const char *call, CUresult r) {
    return r == CUDA_SUCCESS ? absl::OkStatus() : absl::InternalError(cu.describe(call, r));
  };
  Allocations allocations(*pool_, cu, stream);
  absl::StatusOr<CUdeviceptr> arena = allocations.allocate(memory.peakBytes);
  if (!arena.ok())
    return arena.status();

  size_t n = plan.values.size();
  std::vector<CUdeviceptr> address(n, 0);
  std::vector<ref::Shape> shapes(n);
  std::vector<ref::DType> dtypes(n);
  for (size_t v = 0; v < n; ++v)
    dtypes[v] = plan.values[v].dtype;
  for (size_t v = 0; v < n; ++v)
    if (plan.values[v].kind == ValueKind::Weight) {
      address[v] = weights_[v];
      shapes[v] = *evaluateShape(plan.values[v], {});
    }
  for (size_t i = 0; i < inputs.size(); ++i) {
    int v = plan.inputs[i];
    shapes[v] = inputs[i].shape();
    if (deviceBuffers) {
      address[v] = reinterpret_cast<CUdeviceptr>(inputs[i].bytes());
      continue;
    }
    absl::StatusOr<CUdeviceptr> p = allocations.allocate(inputs[i].byteSize());
    if (!p.ok())
      return p.status();
    address[v] = *p;
    if (inputs[i].byteSize())
      if (absl::Status s = check("cuMemcpyHtoDAsync",
                                 cu.cuMemcpyHtoDAsync(*p, inputs[i].bytes(), inputs[i].byteSize(), stream));
          !s.ok())
        return s;
  }
  // A result's device bytes: its arena slot, or its own allocation.
  auto place = [&](int v, const ref::Shape &shape) -> absl::Status {
    shapes[v] = shape;
    if (memory.offsets[v] >= 0) {
      address[v] = *arena + static_cast<CUdeviceptr>(memory.offsets[v]);
      return absl::OkStatus();
    }
    absl::StatusOr<CUdeviceptr> p = allocations.allocate(
        static_cast<size_t>(ref::numElements(shape)) * ref::info(dtypes[v]).bytes);
    if (!p.ok())
      return p.status();
    address[v] = *p;
    return absl::OkStatus();
  };
  auto download = [&](int v) -> absl::StatusOr<ref::Tensor> {
    ref::Tensor t(dtypes[v], shapes[v]);
    if (t.byteSize())
      if (absl::Status s = check("cuMemcpyDtoHAsync",
                                 cu.cuMemcpyDtoHAsync(t.bytes(), address[v], t.byteSize(), stream));
          !s.ok())
        return s;
    if (absl::Status s = check("cuStreamSynchronize", cu.cuStreamSynchronize(stream)); !s.ok())
      return s;
    return t;
  };
  auto upload = [&](int v, const ref::Tensor &t) -> absl::Status {
    if (absl::Status s = place(v, t.shape()); !s.ok())
      return s;
    if (!t.byteSize())
      return absl::OkStatus();
    if (absl::Status s = check("cuMemcpyHtoDAsync",
                               cu.cuMemcpyHtoDAsync(address[v], t.bytes(), t.byteSize(), stream));
        !s.ok())
      return s;
    // The host tensor dies with this step: the copy must finish first.
    return check("cuStreamSynchronize", cu.cuStreamSynchronize(stream));
  };

  // Per-step CUDA events when profiling; times are read after the last step.
  std::vector<CUevent> events;
  double originUs = 0;
  if (profile) {
    events.resize(2 * plan.steps.size() + 1, nullptr);
    for (CUevent &e : events)
      cu.cuEventCreate(&e, CU_EVENT_DEFAULT);
    originUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
                                                         profile->origin)
                   .count();
    cu.cuEventRecord(events[0], stream);
  }
  auto destroyEvents = [&] {
    for (CUevent e : events)
      if (e)
        cu.cuEventDestroy(e);
  };

  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const StepInfo &step = plan.steps[s];
    int out = step.outputs[0];
    const ValueInfo &result = plan.values[out];
    auto fail = [&](const std::string &message) {
      destroyEvents();
      return absl::InvalidArgumentError(absl::StrCat("step ", s, " (", step.label, "): ", message));
    };
    if (profile)
      cu.cuEventRecord(events[2 * s + 1], stream);
    std::optional<ref::Shape> planned = evaluateShape(result, symbols);
    absl::Status status = absl::OkStatus();
    if (step.kind == StepKind::Kernel) {
      if (!planned)
        return fail("the kernel's result size is unknown before it runs");
      if (status = place(out, *planned); !status.ok())
        return fail(std::string(status.message()));
      std::vector<CUdeviceptr> pointers = {address[out]};
      for (int v : step.inputs)
        pointers.push_back(address[v]);
      std::vector<int64_t> symbolArgs;
      for (int sym : plan.kernels[step.kernel].symbols)
        symbolArgs.push_back(symbols[sym].value_or(0));
      std::vector<void *> args;
      for (CUdeviceptr &p : pointers)
        args.push_back(&p);
      for (int64_t &v : symbolArgs)
        args.push_back(&v);
      int64_t items = std::max<int64_t>(1, ref::numElements(*planned));
      int64_t blocks = plan.kernels[step.kernel].blockPerItem
                           ? items
                           : (items + kBlockThreads - 1) / kBlockThreads;
      unsigned grid = static_cast<unsigned>(std::min(std::max<int64_t>(blocks, 1), kMaxBlocks));
      status = check("cuLaunchKernel",
                     cu.cuLaunchKernel(functions_[step.kernel], grid, 1, 1, kBlockThreads, 1, 1, 0,
                                       stream, args.data(), nullptr));
    } else if (step.kind == StepKind::Library) {
      // Host fallback until the cuBLASLt/cuDNN calls land.
      std::vector<ref::Tensor> hostInputs;
      for (int v : step.inputs) {
        absl::StatusOr<ref::Tensor> t = download(v);
        if (!t.ok())
          return fail(std::string(t.status().message()));
        hostInputs.push_back(std::move(*t));
      }
      std::vector<const ref::Tensor *> pointers;
      for (const ref::Tensor &t : hostInputs)
        pointers.push_back(&t);
      absl::StatusOr<std::vector<ref::Tensor>> r = ref::runLibraryCall(step.call, pointers);
      if (!r.ok())
        return fail(std::string(r.status().message()));
      if (r->size() != step.outputs.size())
        return fail("its number of results differs from the plan's");
      for (size_t k = 0; k < r->size() && status.ok(); ++k) {
        if (!matchesPlan((*r)[k], plan.values[step.outputs[k]], symbols))
          return fail(absl::StrCat("its result ", k, " is ", (*r)[k].describe(),
                                   ", not what the plan says"));
        status = upload(step.outputs[k], (*r)[k]);
      }
    } else {
      // Shape steps: small i64 tensors computed from the symbols or a shape.
      absl::StatusOr<ref::Tensor> t = evaluateShapeStep(
          plan, step, symbols,
          step.kind == StepKind::ShapeOf ? shapes[step.inputs[0]] : ref::Shape());
      if (!t.ok())
        return fail(std::string(t.status().message()));
      status = upload(out, *t);
    }
    if (!status.ok())
      return fail(std::string(status.message()));
    if (profile)
      cu.cuEventRecord(events[2 * s + 2], stream);
  }

  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    int v = plan.outputs[i];
    absl::StatusOr<void *> destination = sink(i, dtypes[v], shapes[v]);
    if (!destination.ok()) {
      destroyEvents();
      return destination.status();
    }
    size_t bytes = static_cast<size_t>(ref::numElements(shapes[v])) * ref::info(dtypes[v]).bytes;
    if (!bytes)
      continue;
    CUresult r = deviceBuffers
                     ? cu.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(*destination), address[v],
                                            bytes, stream)
                     : cu.cuMemcpyDtoHAsync(*destination, address[v], bytes, stream);
    if (r != CUDA_SUCCESS) {
      destroyEvents();
      return absl::InternalError(cu.describe("cuMemcpy (output)", r));
    }
  }
  absl::Status done = check("cuStreamSynchronize", cu.cuStreamSynchronize(stream));
  if (profile && done.ok()) {
    std::vector<ProfileEvent> timed;
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      float start = 0, duration = 0;
      cu.cuEventElapsedTime(&start, events[0], events[2 * s + 1]);
      cu.cuEventElapsedTime(&duration, events[2 * s + 1], events[2 * s + 2]);
      const StepInfo &step = plan.steps[s];
      timed.push_back({step.label,
                       step.kind == StepKind::Kernel    ? "kernel"
                       : step.kind == StepKind::Library ? "library"
                                                        : "host",
                       originUs + 1000.0 * start, 1000.0 * duration});
    }
    absl::MutexLock lock(&profile->mutex);
    profile->events.insert(profile->events.end(), timed.begin(), timed.end());
  }
  destroyEvents();
  return done;
}

} // namespace kiln::rt
