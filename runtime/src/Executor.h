//===- Executor.h - one step loop for every backend -------------*- C++ -*-===//
//
// An Executor runs a loaded model's plan on one backend (host emulation, CUDA).
// The step loop, the profiler and the use of the memory plan live here once;
// a backend says where a value's bytes are, how a kernel launches, how a host
// step reads its inputs and stores its results, and how outputs leave.
//
// Everything one run needs that outlives it (bound symbols, the value table,
// the arena and staging buffers, profiling events, launch scratch) lives in an
// ExecutionContext: one per thread or stream, reused call after call, so a call
// in steady state allocates nothing on the context's side.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_EXECUTOR_H
#define KILN_RUNTIME_EXECUTOR_H

#include "kiln/artifact/MemoryPlan.h"
#include "kiln/artifact/Plan.h"

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"

#include <chrono>
#include <memory>
#include <mutex>

namespace kiln::rt {

using artifact::Bindings;
using artifact::MemoryPlan;
using artifact::Plan;
using artifact::StepInfo;

class Model;

struct ProfileEvent {
  std::string name, kind;
  double startUs = 0, durationUs = 0;
  /// artifact::stepWork at the run's sizes; -1 unknown.
  int64_t bytes = -1;
  double flops = -1;
};

struct Profile {
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  std::mutex mutex;
  std::vector<ProfileEvent> events;
};

/// A caller's tensor: dims and bytes it owns (host memory, or device memory when
/// the run says so).
struct TensorRef {
  ref::DType dtype = ref::DType::f32;
  absl::Span<const int64_t> dims;
  uint8_t *data = nullptr;
};

/// Where output `index` (of this dtype and shape) goes: an address with room for
/// it (host or device, as the run's buffers are), or an error.
using OutputSink = absl::FunctionRef<absl::StatusOr<void *>(size_t index, ref::DType dtype,
                                                            const ref::Shape &shape)>;

/// What one run asks for.
struct RunRequest {
  absl::Span<const TensorRef> inputs;
  bool deviceBuffers = false;
  void *stream = nullptr;
  Profile *profile = nullptr;
  /// No tensor of the run (planned, or computed by a host step) may be larger.
  uint64_t maxTensorBytes = ref::kDefaultMaxTensorBytes;
};

/// A value during a run: its bytes (a host pointer, or a device address) and dims.
struct Slot {
  uintptr_t address = 0;
  ref::Shape shape;
  /// A host result whose size was not planned (data-dependent) owns its bytes.
  ref::Tensor owned;
};

/// What a backend made of a host step it was offered (Executor::runOnDevice):
/// it ran on the device as `ranAs` ("cublasLt", "cudnn", "view", "copy"), or
/// it is the host's to run (`ranAs` null), `hostAs` then naming why for the
/// profile where a library refused it ("host:cublasLt-refused").
struct DeviceOutcome {
  const char *ranAs = nullptr;
  const char *hostAs = nullptr;

  static DeviceOutcome ran(const char *kind) { return {kind, nullptr}; }
  static DeviceOutcome onHost(const char *why = nullptr) { return {nullptr, why}; }
};

/// What a backend keeps per context (arena, staging buffers, events).
class BackendState {
public:
  virtual ~BackendState() = default;
};

/// The arguments of one kernel launch (Executor::prepareLaunch): buffer
/// addresses (output first, then inputs), symbol values, the kernel scratch
/// for a kernel that takes it, the step's error word for a kernel that
/// reports errors, and `args` pointing at each as
/// cuLaunchKernel and the host launchers take them.
struct LaunchArgs {
  std::vector<uintptr_t> pointers;
  std::vector<int64_t> symbols;
  /// The kernel scratch, for a kernel that takes it (KernelInfo::scratchBytes).
  uintptr_t scratch = 0;
  uintptr_t errorWord = 0;
  std::vector<void *> args;
  /// The elements the kernel reads and writes.
  int64_t elements = 0;
};

/// Per thread or stream: see the file comment. Not for two threads at once.
/// Its state is read and changed through methods; the step loop's own scratch
/// (launch arguments, profile kinds) is private to the Executor's loop.
class ExecutionContext {
public:
  explicit ExecutionContext(const Model &model);
  ~ExecutionContext();

  const Model &model() const { return model_; }

  /// The symbols' values in this run: bound from the inputs (Model::prepare),
  /// then by the steps that read sizes or bind them from results.
  Bindings &symbols() { return symbols_; }
  const Bindings &symbols() const { return symbols_; }
  /// The symbols' values as int64 (-1 where unbound), in the context's
  /// scratch: valid until the next call.
  absl::Span<const int64_t> symbolValues();

  /// The symbols the memory plan and pointwise grids are sized by: the bound
  /// symbols with each of the plan's device symbols at its bound
  /// (Plan::deviceSymbols), so that a stretch of launches has the same
  /// addresses and grids for every value up to it. Set by Model::run.
  const Bindings &planning() const { return planning_; }
  Bindings &planning() { return planning_; }
  /// Whether the memory plan and variant chosen last (`choose`) were chosen
  /// for the symbols as they are now.
  bool planned() const { return memory_ && memoryFor_ == planning_ && variantFor_ == symbols_; }
  /// Records the memory plan (for the planning symbols) and variant
  /// (Model::chooseVariant, for the symbols; -1 generic) as they are now.
  void choose(std::shared_ptr<const MemoryPlan> memory, int variant);
  /// The memory plan chosen last: where the arena holds each value.
  const MemoryPlan &memory() const { return *memory_; }
  /// The variant chosen last: whose kernel code launches run.
  int variant() const { return variant_; }

  /// Value `v`'s bytes and dims in this run.
  Slot &value(int v) { return values_[static_cast<size_t>(v)]; }
  const Slot &value(int v) const { return values_[static_cast<size_t>(v)]; }
  size_t valueCount() const { return values_.size(); }
  /// Value `v` is `shape` over bytes another value holds, at `address`.
  void setView(int v, const ref::Shape &shape, uintptr_t address);
  /// Lets go of every value's bytes a host result owned (the end of a run).
  void releaseOwnedValues();

  /// The backend's state for this context (null before the backend's first
  /// run in it made one).
  template <typename State> State *backendState() { return static_cast<State *>(state_.get()); }
  void setBackendState(std::unique_ptr<BackendState> state) { state_ = std::move(state); }

private:
  friend class Executor;

  const Model &model_;
  Bindings symbols_;
  std::vector<int64_t> symbolValues_;
  std::shared_ptr<const MemoryPlan> memory_;
  Bindings planning_, memoryFor_, variantFor_;
  int variant_ = -1;
  std::vector<Slot> values_;
  std::unique_ptr<BackendState> state_;

  // The step loop's scratch (Executor.cpp), reused call after call.
  LaunchArgs launch_;
  ref::Shape scratchShape_;
  /// Symbols with the device symbols at their bounds, for a pointwise
  /// launch's grid (workItems).
  Bindings gridSymbols_;
  std::vector<int32_t> errorCodes_;
  /// What ran each step of the last run, for profiles: "kernel", a library
  /// call's kind ("cublasLt", "cudnn", "copy", "view"), "host" (a host step on
  /// the reference kernels; "host:cublasLt-refused" where a library refused
  /// it), "shape" (a shape step), "sync", "control".
  std::vector<const char *> stepKinds_;
  /// For profiles: what ran each nested step (StepInfo::index) in the last
  /// run, null for those that did not run.
  std::vector<const char *> nestedStepKinds_;
};

/// Device memory for callers' device-buffer runs (kiln_model_device_alloc
/// and friends): on the device an executor runs on, in its context; every
/// call complete on return.
class DeviceMemory {
public:
  virtual ~DeviceMemory() = default;
  virtual absl::StatusOr<void *> allocate(size_t bytes) const = 0;
  virtual absl::Status free(void *address) const = 0;
  virtual absl::Status copyToDevice(void *device, const void *host, size_t bytes) const = 0;
  virtual absl::Status copyToHost(void *host, const void *device, size_t bytes) const = 0;
};

/// The most variants one model holds: the artifact's and those installed
/// later (kiln_model_add_variants).
constexpr int kMaxVariants = 4096;

/// A backend's kernel code per variant: slot 0 the generic kernels, slot v + 1
/// variant v's (one entry per Plan::kernels). A slot is written once, before the
/// model publishes the variant to callers, and never moves: runs read slots
/// without a lock while later variants are installed.
template <typename Function> class VariantTables {
public:
  VariantTables() : slots_(new std::unique_ptr<const std::vector<Function>>[kMaxVariants + 1]) {}
  const std::vector<Function> &at(int variant) const { return *slots_[variant + 1]; }
  void set(int variant, std::vector<Function> table) {
    slots_[variant + 1] = std::make_unique<const std::vector<Function>>(std::move(table));
  }

private:
  std::unique_ptr<std::unique_ptr<const std::vector<Function>>[]> slots_;
};

class Executor {
public:
  virtual ~Executor() = default;

  /// Loads variant `variant`'s kernel code (its cubins, or `libraries`' host
  /// launchers) into its slot; kernels it does not specialize keep the generic
  /// code. Called once per variant, serialized by the model, before the
  /// variant is published.
  virtual absl::Status installVariant(int variant, const artifact::VariantInfo &info,
                                      absl::Span<const artifact::HostLibraryInfo> libraries) = 0;

  /// "cuda on NVIDIA H200 (sm_90)", "host emulation".
  virtual std::string description() const = 0;
  virtual bool isCuda() const = 0;

  /// The device memory callers' device-buffer runs use; null when the
  /// executor runs in host memory.
  virtual const DeviceMemory *deviceMemory() const { return nullptr; }
  /// deviceMemory(), or FAILED_PRECONDITION saying the model has no device.
  absl::StatusOr<const DeviceMemory *> deviceMemoryOrError() const;

  /// Runs the model on `request.inputs` (guards already checked, `context`'s
  /// symbols bound and memory plan chosen): the one step loop.
  absl::Status run(ExecutionContext &context, const RunRequest &request, OutputSink sink) const;

protected:
  /// Readies the context for a run: buffers sized for its memory plan, inputs
  /// and weights placed.
  virtual absl::Status begin(ExecutionContext &context, const RunRequest &request) const = 0;
  /// Gives value `v` its bytes for a result of `shape`.
  virtual absl::Status place(ExecutionContext &context, int v, const ref::Shape &shape) const = 0;
  /// Launches kernel step `step` (its output already placed).
  virtual absl::Status launch(ExecutionContext &context, const StepInfo &step) const = 0;
  /// Value `v` as a host tensor (a view, or a copy from the device).
  virtual absl::StatusOr<ref::Tensor> hostValue(ExecutionContext &context, int v) const = 0;
  /// Stores a host-computed result into value `v` (placing it).
  virtual absl::Status store(ExecutionContext &context, int v, ref::Tensor result) const = 0;
  /// Copies the outputs where `sink` says and completes the run.
  virtual absl::Status finish(ExecutionContext &context, const RunRequest &request,
                              OutputSink sink) const = 0;
  /// Runs host-kind step `s` on the device when the backend has a library call
  /// for it (the CUDA backend's LibraryCalls), or leaves it to the host.
  virtual absl::StatusOr<DeviceOutcome> runOnDevice(ExecutionContext &context, size_t s,
                                                    const StepInfo &step) const {
    return DeviceOutcome::onHost();
  }
  /// Ends a run that failed before finish (waits for work still queued).
  virtual void abandon(ExecutionContext &context, const RunRequest &request) const = 0;

  /// Whether value `v` of `shape` fits the arena slot the memory plan gave
  /// it (planned at the device symbols' bounds, which a damaged artifact's
  /// sizes need not respect): an error naming it otherwise. Backends' place()
  /// calls it before using a slot.
  absl::Status fitsPlannedSlot(const ExecutionContext &context, int v,
                               const ref::Shape &shape) const;

  /// The run's error words (host or device address): one int32 per step,
  /// zeroed by begin() when the plan has kernels that report data errors.
  virtual uintptr_t errorWords(ExecutionContext &context) const = 0;
  /// Where kernels read device symbols (Plan::deviceSymbols): one int64 per
  /// symbol of the plan, holding the run's values, written by begin() (host
  /// or device address; meaningful when the plan has device symbols).
  virtual uintptr_t symbolWords(ExecutionContext &context) const = 0;
  /// The context's kernel scratch (KernelInfo::scratchBytes) grown to at
  /// least `bytes`: all zero when a launch begins (a new buffer is zeroed,
  /// and every kernel leaves what it used zero). Host or device address.
  virtual absl::StatusOr<uintptr_t> kernelScratch(ExecutionContext &context,
                                                  size_t bytes) const = 0;
  /// The error words after finish (the run's work complete).
  virtual absl::Status readErrorWords(ExecutionContext &context,
                                      std::vector<int32_t> &words) const = 0;

  /// Step timing for profiles: mark 0 at the start, 2s+1 before and 2s+2 after
  /// step s; then read the microseconds between two marks.
  virtual void mark(ExecutionContext &context, const RunRequest &request, size_t index) const = 0;
  virtual absl::StatusOr<double> elapsedUs(ExecutionContext &context, size_t from,
                                           size_t to) const = 0;

  /// The arguments of kernel step `step`, in the context's scratch (valid
  /// until the next launch); an error when its kernel scratch cannot be had.
  absl::StatusOr<LaunchArgs *> prepareLaunch(ExecutionContext &context,
                                             const StepInfo &step) const;
  /// The run's symbols with each device symbol at its bound (in the
  /// context's scratch, valid until the next call): what grids that stride
  /// over their work and the kernel scratch are sized by, so that they stay
  /// the same for every value up to the bounds.
  const Bindings &launchSizes(ExecutionContext &context) const;
  /// The work items of kernel step `step` (its kernel's work_items under the
  /// context's symbols, or the result's elements), at least 1: grids are sized
  /// by it.
  int64_t workItems(ExecutionContext &context, const StepInfo &step) const;

  /// Waits until the work queued so far has run, so what it reads from the
  /// host (uploads of host results, a loop's iteration numbers) can be let go.
  /// A loop that never reads back calls it now and then to bound that memory.
  virtual absl::Status settle(ExecutionContext &context) const { return absl::OkStatus(); }
  /// Copies `bytes` from `from` to `to` (both the backend's addresses: host
  /// memory, or device memory queued on the run's stream); control flow moves
  /// loop-carried values and scan slices with it.
  virtual absl::Status copyBytes(ExecutionContext &context, uintptr_t to, uintptr_t from,
                                 size_t bytes) const = 0;

  /// Runs top-level step `s` and perhaps those after it in one go; returns
  /// the step to go on from (`s` when it ran nothing: the loop runs step
  /// `s`). Not called for profiled runs. CudaExecutor replays stretches of
  /// device steps as CUDA graphs.
  virtual absl::StatusOr<size_t> runSegment(ExecutionContext &context, const RunRequest &request,
                                            size_t s) const {
    return s;
  }
  /// Runs step `s` of `steps` (the plan's when `topLevel`, else a body's).
  absl::Status runStep(ExecutionContext &context, const RunRequest &request,
                       const std::vector<StepInfo> &steps, size_t s, bool topLevel) const;

  /// OK when `dtype` and `shape` fit value `v`'s plan (dims where known), else
  /// "WHAT is f32[2, 3] but the plan says f32[batch, 4]".
  absl::Status fitsPlan(ExecutionContext &context, int v, ref::DType dtype,
                        const ref::Shape &shape, absl::string_view what) const;

private:
  /// Runs `steps` in order (the plan's, or a body's: profiles time only the
  /// top level).
  absl::Status runSteps(ExecutionContext &context, const RunRequest &request,
                        const std::vector<StepInfo> &steps, bool topLevel) const;
  // Control steps (docs/runtime.md, "Control flow"). Their errors name no step:
  // runSteps adds the control step's.
  absl::Status runIf(ExecutionContext &context, const RunRequest &request,
                     const StepInfo &step) const;
  absl::Status runLoop(ExecutionContext &context, const RunRequest &request,
                       const StepInfo &step) const;
  absl::Status runScan(ExecutionContext &context, const RunRequest &request,
                       const StepInfo &step) const;
  /// The one value of a condition or trip count (a device round trip unless
  /// it is a constant).
  absl::StatusOr<int64_t> readScalar(ExecutionContext &context, int v,
                                     absl::string_view what) const;
  /// Copies `runs` runs of `runBytes`, run r from `from + r * fromStride` to
  /// `to + r * toStride` (a slice into or out of a stack along some axis).
  absl::Status copyRuns(ExecutionContext &context, uintptr_t to, size_t toStride, uintptr_t from,
                        size_t fromStride, int64_t runs, size_t runBytes) const;
  /// Value `v` on the host in a tensor that owns its bytes.
  absl::StatusOr<ref::Tensor> hostCopy(ExecutionContext &context, int v) const;
  /// Value `to` becomes a copy of value `from`, whose dims must fit `to`'s plan.
  absl::Status copyValue(ExecutionContext &context, int to, int from,
                         absl::string_view what) const;
  /// Parameters [firstParameter, +count) of `body` take results
  /// [firstResult, +count): a loop's carried values, a scan's states.
  absl::Status updateCarried(ExecutionContext &context, const artifact::BodyInfo &body,
                             size_t firstParameter, size_t firstResult, size_t count,
                             absl::string_view what) const;
  /// Copies value `slice` into value `stack` as slice `position` of `count`
  /// along `axis`; the `first` slice copied places the stack.
  absl::Status stackSlice(ExecutionContext &context, int stack, int slice, int64_t axis,
                          int64_t position, int64_t count, bool first,
                          absl::string_view what) const;
  /// Places a stack of no slices.
  absl::Status placeEmptyStack(ExecutionContext &context, int stack, int64_t axis) const;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_EXECUTOR_H
