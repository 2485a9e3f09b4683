//===- Executor.cpp - the step loop every backend shares ------------------===//

#include "Executor.h"

#include "Model.h"

#include "kiln/artifact/HostLaunch.h"
#include "kiln/artifact/StepWork.h"

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include <nvtx3/nvToolsExt.h>

#include <cstring>
#include <functional>
#include <mutex>

namespace kiln::rt {

ExecutionContext::ExecutionContext(const Model &model) : model_(model) {
  const Plan &plan = model.plan();
  symbols_.assign(plan.symbols.size(), std::nullopt);
  symbolValues_.reserve(plan.symbols.size());
  values_.resize(plan.values.size());
  stepKinds_.assign(plan.steps.size(), "host");
  size_t maxArgs = 1;
  artifact::forEachStep(plan, [&](const artifact::StepInfo &step) {
    maxArgs = std::max(maxArgs, step.inputs.size() + 1);
  });
  size_t maxSymbols = 0;
  for (const artifact::KernelInfo &k : plan.kernels)
    maxSymbols = std::max(maxSymbols, k.symbols.size());
  // Kernel launches fill these without growing them.
  launch_.pointers.reserve(maxArgs);
  launch_.symbols.reserve(maxSymbols);
  launch_.args.reserve(maxArgs + maxSymbols + 1); // + an error word
  // Weights sit where the backend put them at load; their dims never change.
  for (size_t v = 0; v < plan.values.size(); ++v)
    if (plan.values[v].kind == artifact::ValueKind::Weight)
      values_[v].shape = *artifact::evaluateShape(plan.values[v], {});
}

ExecutionContext::~ExecutionContext() = default;

absl::Span<const int64_t> ExecutionContext::symbolValues() {
  symbolValues_.clear();
  for (const std::optional<int64_t> &value : symbols_)
    symbolValues_.push_back(value.value_or(-1));
  return symbolValues_;
}

void ExecutionContext::choose(std::shared_ptr<const MemoryPlan> memory, int variant) {
  memory_ = std::move(memory);
  memoryFor_ = planning_;
  variantFor_ = symbols_;
  variant_ = variant;
}

void ExecutionContext::setView(int v, const ref::Shape &shape, uintptr_t address) {
  Slot &view = value(v);
  view.shape.assign(shape.begin(), shape.end());
  view.address = address;
}

void ExecutionContext::releaseOwnedValues() {
  for (Slot &slot : values_)
    slot.owned = ref::Tensor();
}

absl::Status Executor::fitsPlannedSlot(const ExecutionContext &context, int v,
                                       const ref::Shape &shape) const {
  const artifact::ValueInfo &info = context.model().plan().values[v];
  if (static_cast<size_t>(ref::numElements(shape)) * ref::info(info.dtype).bytes <=
      context.memory().bytes[v])
    return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("value '", info.name, "' [",
                                                 ref::shapeToString(shape),
                                                 "] is larger than the memory planned for it"));
}

const Bindings &Executor::launchSizes(ExecutionContext &context) const {
  Bindings &sizes = context.gridSymbols_;
  sizes.assign(context.symbols().begin(), context.symbols().end());
  for (const artifact::Plan::DeviceSymbol &d : context.model().plan().deviceSymbols)
    sizes[d.symbol] = context.planning()[d.symbol];
  return sizes;
}

int64_t Executor::workItems(ExecutionContext &context, const StepInfo &step) const {
  const artifact::KernelInfo &kernel = context.model().plan().kernels[step.kernel];
  std::optional<int64_t> items;
  // A pointwise kernel (its threads stride over the elements its symbols
  // count, read when it runs) is launched for the planning symbols: device
  // symbols at their bounds, so its grid is the same for every value up to
  // them. So is attention: its blocks stride over its items, whose count
  // follows the keys (the pieces they are split into) and is read when it
  // runs. Other schedules map blocks to items: their grids follow the values.
  const artifact::Plan &plan = context.model().plan();
  if ((kernel.schedule == schema::Schedule::Pointwise ||
       kernel.schedule == schema::Schedule::Attention) &&
      !plan.deviceSymbols.empty()) {
    const Bindings &sizes = launchSizes(context);
    if (kernel.workItems.known())
      items = kernel.workItems.evaluate(sizes);
    else if (std::optional<ref::Shape> result = artifact::evaluateShape(plan.values[step.outputs[0]], sizes))
      items = ref::numElements(*result);
  } else if (kernel.workItems.known()) {
    items = kernel.workItems.evaluate(context.symbols());
  }
  if (!items)
    items = ref::numElements(context.value(step.outputs[0]).shape);
  return std::max<int64_t>(1, *items);
}

absl::StatusOr<LaunchArgs *> Executor::prepareLaunch(ExecutionContext &context,
                                                     const StepInfo &step) const {
  const Plan &plan = context.model().plan();
  LaunchArgs &launch = context.launch_;
  const Slot &out = context.value(step.outputs[0]);
  launch.pointers.clear();
  launch.pointers.push_back(out.address);
  launch.elements = ref::numElements(out.shape);
  for (int v : step.inputs) {
    launch.pointers.push_back(context.value(v).address);
    launch.elements += ref::numElements(context.value(v).shape);
  }
  launch.symbols.clear();
  // A device symbol is passed as the address of its word (symbolWords).
  const artifact::KernelInfo &kernel = plan.kernels[step.kernel];
  for (int s : kernel.symbols)
    launch.symbols.push_back(kernel.readsOnDevice(s)
                                 ? static_cast<int64_t>(symbolWords(context) + s * sizeof(int64_t))
                                 : context.symbols()[s].value_or(0));
  launch.args.clear();
  for (uintptr_t &p : launch.pointers)
    launch.args.push_back(&p);
  for (int64_t &s : launch.symbols)
    launch.args.push_back(&s);
  launch.scratch = 0;
  if (kernel.scratchBytes.known()) {
    // Sized at the planning sizes, so that the buffer, and a graph holding
    // its address, stays put as device symbols change.
    std::optional<int64_t> bytes = kernel.scratchBytes.evaluate(launchSizes(context));
    if (!bytes || *bytes < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "its kernel scratch has no size (", kernel.scratchBytes.toString(plan.symbols), ")"));
    absl::StatusOr<uintptr_t> scratch = kernelScratch(context, static_cast<size_t>(*bytes));
    if (!scratch.ok())
      return scratch.status();
    launch.scratch = *scratch;
    launch.args.push_back(&launch.scratch);
  }
  launch.errorWord = 0;
  if (plan.kernels[step.kernel].reportsErrors) {
    launch.errorWord = errorWords(context) + step.index * sizeof(int32_t);
    launch.args.push_back(&launch.errorWord);
  }
  return &launch;
}

absl::Status Executor::runSteps(ExecutionContext &context, const RunRequest &request,
                                const std::vector<StepInfo> &steps, bool topLevel) const {
  for (size_t s = 0; s < steps.size();) {
    // The backend may run a stretch of the top level at once (CUDA graphs);
    // it says where it stopped. Profiles time every step on its own.
    if (topLevel && !request.profile) {
      absl::StatusOr<size_t> next = runSegment(context, request, s);
      if (!next.ok())
        return next.status();
      if (*next > s) {
        s = *next;
        continue;
      }
    }
    if (absl::Status st = runStep(context, request, steps, s, topLevel); !st.ok())
      return st;
    ++s;
  }
  return absl::OkStatus();
}

absl::Status Executor::runStep(ExecutionContext &context, const RunRequest &request,
                               const std::vector<StepInfo> &steps, size_t s, bool topLevel) const {
  const Model &model = context.model();
  const Plan &plan = model.plan();
  const StepInfo &step = steps[s];
  auto fail = [&](absl::string_view message) {
    return absl::InvalidArgumentError(
        absl::StrCat("step ", step.index, " (", step.label, "): ", message));
  };
  // Nsight Systems shows each top-level step as an NVTX range named as the
  // profile names it (NVTX 3 is header-only: without a tool attached, a
  // range costs a check of a function pointer).
  struct NvtxRange {
    bool on;
    NvtxRange(bool on, const std::string &name) : on(on) {
      if (!on)
        return;
      // NVTX binds its function pointers at the first call, with plain
      // stores other threads' calls read (ThreadSanitizer saw two runs race
      // there): bind them once, before any range.
      static std::once_flag bound;
      std::call_once(bound, [] { nvtxInitialize(nullptr); });
      nvtxRangePushA(name.c_str());
    }
    ~NvtxRange() {
      if (on)
        nvtxRangePop();
    }
  } nvtx(topLevel, step.label);
  // Profiles time the top level; a control step's time includes its bodies'.
  bool timed = topLevel && request.profile;
  if (timed)
    mark(context, request, 2 * s + 1);
  // (A size read has no output.)
  int out = step.outputs.empty() ? -1 : step.outputs[0];
  // Shape steps compute a small tensor from bound symbols ("shape"); host
  // steps run on the reference kernels unless the backend runs them; a size
  // read waits for the device to read a few bytes ("sync"); a view moves
  // nothing ("view").
  const char *kind = step.kind == artifact::StepKind::Kernel      ? "kernel"
                     : step.kind == artifact::StepKind::Host      ? "host"
                     : step.kind == artifact::StepKind::Control   ? "control"
                     : step.kind == artifact::StepKind::ReadSizes ? "sync"
                     : step.kind == artifact::StepKind::Check     ? "check"
                                                                  : "shape";
  switch (step.kind) {
  case artifact::StepKind::Kernel: {
    if (!artifact::evaluateShapeInto(plan.values[out], context.symbols(), context.scratchShape_))
      return fail("the kernel's result size is unknown before it runs");
    // A kernel that writes into its input's bytes (the KV cache updated in
    // place): the result is that input under the same dims.
    if (step.inPlaceInput >= 0)
      context.setView(out, context.scratchShape_,
                      context.value(step.inputs[step.inPlaceInput]).address);
    else if (absl::Status st = place(context, out, context.scratchShape_); !st.ok())
      return fail(st.message());
    if (absl::Status st = launch(context, step); !st.ok())
      return fail(st.message());
    break;
  }
  case artifact::StepKind::Host: {
    absl::StatusOr<DeviceOutcome> onDevice = runOnDevice(context, step.index, step);
    if (!onDevice.ok())
      return fail(onDevice.status().message());
    if (onDevice->ranAs) {
      kind = onDevice->ranAs;
      break;
    }
    if (onDevice->hostAs)
      kind = onDevice->hostAs;
    std::vector<ref::Tensor> inputs;
    inputs.reserve(step.inputs.size());
    for (int v : step.inputs) {
      absl::StatusOr<ref::Tensor> t = hostValue(context, v);
      if (!t.ok())
        return fail(t.status().message());
      inputs.push_back(std::move(*t));
    }
    std::vector<const ref::Tensor *> pointers;
    for (const ref::Tensor &t : inputs)
      pointers.push_back(&t);
    HostResults results = model.hostStep(step.index).run(pointers);
    if (!results.ok())
      return fail(results.status().message());
    if (results->size() != step.outputs.size())
      return fail(absl::StrCat("it gave ", results->size(), " results, the plan has ",
                               step.outputs.size()));
    for (size_t k = 0; k < results->size(); ++k) {
      int v = step.outputs[k];
      ref::Tensor &got = (*results)[k];
      // (The message is built only when it fails: this runs for every result.)
      if (!artifact::matchesPlan(got, plan.values[v], context.symbols()))
        return fail(fitsPlan(context, v, got.dtype(), got.shape(), absl::StrCat("its result ", k))
                        .message());
      // Results made by Tensor::zeros were checked as they were allocated;
      // this also covers views and reshapes of inputs.
      if (absl::StatusOr<uint64_t> bytes =
              ref::checkedByteSize(got.dtype(), got.shape(), request.maxTensorBytes);
          !bytes.ok())
        return fail(absl::StrCat("its result ", k, ": ", bytes.status().message()));
      if (absl::Status st = store(context, v, std::move(got)); !st.ok())
        return fail(st.message());
    }
    break;
  }
  case artifact::StepKind::SymbolicConstant:
  case artifact::StepKind::ShapeOf: {
    static const ref::Shape kNoShape;
    const ref::Shape &inputShape = step.kind == artifact::StepKind::ShapeOf
                                       ? context.value(step.inputs[0]).shape
                                       : kNoShape;
    absl::StatusOr<ref::Tensor> t =
        artifact::evaluateShapeStep(plan, step, context.symbols(), inputShape);
    if (!t.ok())
      return fail(t.status().message());
    if (absl::Status st = store(context, out, std::move(*t)); !st.ok())
      return fail(st.message());
    break;
  }
  case artifact::StepKind::ReadSizes: {
    absl::StatusOr<ref::Tensor> sizes = hostValue(context, step.inputs[0]);
    if (!sizes.ok())
      return fail(sizes.status().message());
    for (size_t i = 0; i < step.readSymbols.size(); ++i) {
      int64_t value = sizes->getI(static_cast<int64_t>(i));
      int symbol = step.readSymbols[i];
      if (value < 0)
        return fail(step.readWhat.empty()
                        ? absl::StrCat("size ", value, " for ", plan.symbols[symbol],
                                       " is negative")
                        : absl::StrCat(step.readWhat, " is ", value, " for ",
                                       plan.symbols[symbol], ", not a size"));
      context.symbols()[symbol] = value;
    }
    break;
  }
  case artifact::StepKind::Check:
    // Facts over sizes steps bound, on the host from the bound values.
    for (const artifact::PredicateInfo &p : step.checks)
      if (p.holds(context.symbols()) != std::optional<bool>(true))
        return fail(absl::StrCat(p.broken(context.symbols(), plan.symbols), ": ", p.reason));
    break;
  case artifact::StepKind::View: {
    // The input's bytes under the result's dims: nothing moves, on any backend.
    int in = step.inputs[0];
    if (!artifact::evaluateShapeInto(plan.values[out], context.symbols(), context.scratchShape_))
      return fail("the view's dims are unknown when it runs");
    int64_t have = ref::numElements(context.value(in).shape);
    if (ref::numElements(context.scratchShape_) != have)
      return fail(absl::StrCat("a view of ", have, " elements as [",
                               ref::shapeToString(context.scratchShape_), "]"));
    context.setView(out, context.scratchShape_, context.value(in).address);
    kind = "view";
    break;
  }
  case artifact::StepKind::Control: {
    absl::Status st = step.op == schema::StepOp::If     ? runIf(context, request, step)
                      : step.op == schema::StepOp::Loop ? runLoop(context, request, step)
                                                        : runScan(context, request, step);
    if (!st.ok()) {
      // An error inside a body already names its step.
      if (absl::StartsWith(st.message(), "step "))
        return st;
      return fail(st.message());
    }
    break;
  }
  }
  // Sizes only the data decided, named for the steps after this one.
  for (const StepInfo::Binding &b : step.binds) {
    const ref::Shape &shape = context.value(step.outputs[b.output]).shape;
    if (static_cast<size_t>(b.dim) >= shape.size())
      return fail(absl::StrCat("its result ", b.output, " has rank ", shape.size(),
                               "; the plan binds a symbol to its dim ", b.dim));
    context.symbols()[b.symbol] = shape[b.dim];
  }
  if (topLevel)
    context.stepKinds_[s] = kind;
  else if (request.profile)
    context.nestedStepKinds_[step.index] = kind;
  if (timed)
    mark(context, request, 2 * s + 2);
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

absl::StatusOr<int64_t> Executor::readScalar(ExecutionContext &context, int v,
                                             absl::string_view what) const {
  const artifact::ValueInfo &info = context.model().plan().values[v];
  // Constants are read where the artifact holds them: no device round trip.
  absl::StatusOr<ref::Tensor> t =
      info.kind == artifact::ValueKind::Weight
          ? ref::Tensor::view(info.dtype, context.value(v).shape,
                              const_cast<uint8_t *>(info.weightData))
          : hostValue(context, v);
  if (!t.ok())
    return t.status();
  if (t->numel() != 1)
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is ", t->describe(), "; it must hold one value"));
  return t->getI(0);
}

absl::Status Executor::fitsPlan(ExecutionContext &context, int v, ref::DType dtype,
                               const ref::Shape &shape, absl::string_view what) const {
  const Plan &plan = context.model().plan();
  if (artifact::matchesPlan(dtype, shape, plan.values[v], context.symbols()))
    return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " is ", ref::info(dtype).name, "[", ref::shapeToString(shape), "] but the plan says ",
      artifact::describeValue(plan.values[v], plan.symbols)));
}

absl::Status Executor::copyRuns(ExecutionContext &context, uintptr_t to, size_t toStride,
                                uintptr_t from, size_t fromStride, int64_t runs,
                                size_t runBytes) const {
  if (!runBytes)
    return absl::OkStatus();
  for (int64_t r = 0; r < runs; ++r)
    if (absl::Status st = copyBytes(context, to + r * toStride, from + r * fromStride, runBytes);
        !st.ok())
      return st;
  return absl::OkStatus();
}

absl::StatusOr<ref::Tensor> Executor::hostCopy(ExecutionContext &context, int v) const {
  // hostValue may be a view of memory a later step rewrites: own the bytes.
  absl::StatusOr<ref::Tensor> value = hostValue(context, v);
  if (!value.ok())
    return value.status();
  ref::Tensor copy(value->dtype(), value->shape());
  if (copy.byteSize())
    std::memcpy(copy.bytes(), value->bytes(), copy.byteSize());
  return copy;
}

absl::Status Executor::copyValue(ExecutionContext &context, int to, int from,
                                 absl::string_view what) const {
  if (to == from)
    return absl::OkStatus();
  const Plan &plan = context.model().plan();
  ref::DType dtype = plan.values[from].dtype;
  ref::Shape shape = context.value(from).shape;
  if (absl::Status st = fitsPlan(context, to, dtype, shape, what); !st.ok())
    return st;
  if (absl::Status st = place(context, to, shape); !st.ok())
    return st;
  size_t bytes = static_cast<size_t>(ref::numElements(shape)) * ref::info(dtype).bytes;
  if (!bytes)
    return absl::OkStatus();
  return copyBytes(context, context.value(to).address, context.value(from).address, bytes);
}

absl::Status Executor::updateCarried(ExecutionContext &context, const artifact::BodyInfo &body,
                                     size_t firstParameter, size_t firstResult, size_t count,
                                     absl::string_view what) const {
  // A result that is itself a parameter (a value passed through to another
  // position) is read before any parameter is overwritten.
  std::vector<std::pair<int, ref::Tensor>> staged;
  for (size_t k = 0; k < count; ++k) {
    int to = body.parameters[firstParameter + k], from = body.results[firstResult + k];
    if (to == from || !absl::c_linear_search(body.parameters, from))
      continue;
    absl::StatusOr<ref::Tensor> copy = hostCopy(context, from);
    if (!copy.ok())
      return copy.status();
    staged.emplace_back(to, std::move(*copy));
  }
  for (size_t k = 0; k < count; ++k) {
    int to = body.parameters[firstParameter + k], from = body.results[firstResult + k];
    if (absl::c_linear_search(body.parameters, from))
      continue;
    if (absl::Status st = copyValue(context, to, from, absl::StrCat(what, " ", k)); !st.ok())
      return st;
  }
  for (auto &[to, value] : staged) {
    if (absl::Status st = fitsPlan(context, to, value.dtype(), value.shape(), what); !st.ok())
      return st;
    if (absl::Status st = store(context, to, std::move(value)); !st.ok())
      return st;
  }
  return absl::OkStatus();
}

absl::Status Executor::runIf(ExecutionContext &context, const RunRequest &request,
                             const StepInfo &step) const {
  absl::StatusOr<int64_t> condition = readScalar(context, step.inputs[0], "its condition");
  if (!condition.ok())
    return condition.status();
  const artifact::BodyInfo &branch = step.bodies[*condition ? 0 : 1];
  if (absl::Status st = runSteps(context, request, branch.steps, false); !st.ok())
    return st;
  for (size_t k = 0; k < step.outputs.size(); ++k)
    if (absl::Status st = copyValue(context, step.outputs[k], branch.results[k],
                                    absl::StrCat(*condition ? "the then" : "the else",
                                                 " branch's result ", k));
        !st.ok())
      return st;
  return absl::OkStatus();
}

namespace {
/// Where slice `position` of a stack of `count` slices along `axis` lies:
/// `rows` runs of `rowBytes` contiguous bytes, run r of the slice at
/// r * rowBytes and of the stack at (r * count + position) * rowBytes.
struct StackLayout {
  int64_t rows = 1;
  size_t rowBytes = 0;
};
StackLayout stackLayout(const ref::Shape &slice, int64_t axis, ref::DType dtype) {
  StackLayout layout;
  layout.rowBytes = ref::info(dtype).bytes;
  for (int64_t d = 0; d < axis; ++d)
    layout.rows *= slice[d];
  for (int64_t d = axis; d < static_cast<int64_t>(slice.size()); ++d)
    layout.rowBytes *= static_cast<size_t>(slice[d]);
  return layout;
}
} // namespace

absl::Status Executor::stackSlice(ExecutionContext &context, int stack, int slice, int64_t axis,
                                  int64_t position, int64_t count, bool first,
                                  absl::string_view what) const {
  const Plan &plan = context.model().plan();
  ref::DType dtype = plan.values[slice].dtype;
  ref::Shape sliceShape = context.value(slice).shape;
  if (axis < 0 || axis > static_cast<int64_t>(sliceShape.size()))
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", ref::info(dtype).name, "[",
                                                   ref::shapeToString(sliceShape),
                                                   "], which has no axis ", axis));
  ref::Shape stacked = sliceShape;
  stacked.insert(stacked.begin() + axis, count);
  if (!first && context.value(stack).shape != stacked)
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is ", ref::info(dtype).name, "[", ref::shapeToString(sliceShape),
        "], unlike the slices before it (stacked as [",
        ref::shapeToString(context.value(stack).shape), "])"));
  if (first) {
    // The first slice places the stack; every later one must have its dims.
    if (absl::Status st = fitsPlan(context, stack, dtype, stacked, absl::StrCat(what, "s' stack"));
        !st.ok())
      return st;
    if (absl::Status st = ref::checkedByteSize(dtype, stacked, ref::maxTensorBytes()).status();
        !st.ok())
      return absl::Status(st.code(), absl::StrCat(what, "s: ", st.message()));
    if (absl::Status st = place(context, stack, stacked); !st.ok())
      return st;
  }
  StackLayout layout = stackLayout(sliceShape, axis, dtype);
  return copyRuns(context, context.value(stack).address + position * layout.rowBytes,
                  count * layout.rowBytes, context.value(slice).address, layout.rowBytes,
                  layout.rows, layout.rowBytes);
}

absl::Status Executor::placeEmptyStack(ExecutionContext &context, int stack, int64_t axis) const {
  // No iteration ran: the stack has no slices; dims the plan cannot say are 0.
  const artifact::ValueInfo &info = context.model().plan().values[stack];
  ref::Shape shape;
  for (size_t d = 0; d < info.shape.size(); ++d) {
    std::optional<int64_t> known = info.shape[d].evaluate(context.symbols());
    shape.push_back(static_cast<int64_t>(d) == axis ? 0 : known.value_or(0));
  }
  return place(context, stack, shape);
}

absl::Status Executor::runLoop(ExecutionContext &context, const RunRequest &request,
                               const StepInfo &step) const {
  const artifact::BodyInfo &body = step.bodies[0];
  size_t carried = step.inputs.size() - 2;
  size_t scans = step.outputs.size() - carried;
  absl::StatusOr<int64_t> maxTrips = readScalar(context, step.inputs[0], "its trip count");
  if (!maxTrips.ok())
    return maxTrips.status();
  absl::StatusOr<int64_t> initial = readScalar(context, step.inputs[1], "its condition");
  if (!initial.ok())
    return initial.status();
  bool condition = *initial != 0;
  for (size_t k = 0; k < carried; ++k)
    if (absl::Status st = copyValue(context, body.parameters[2 + k], step.inputs[2 + k],
                                    absl::StrCat("initial carried value ", k));
        !st.ok())
      return st;
  // The condition the body yields is read back each iteration only when it is
  // data: a constant is read once, the condition parameter passed through
  // stays true. Then the trip count is known up front and scan slices are
  // stacked in place; otherwise they are gathered and stacked at the end.
  int conditionResult = body.results[0];
  const artifact::ValueInfo &conditionInfo = context.model().plan().values[conditionResult];
  bool constantCondition = conditionInfo.kind == artifact::ValueKind::Weight;
  bool passedThrough = conditionResult == body.parameters[1];
  bool conditionIsData = !constantCondition && !passedThrough;
  bool stayTrue = true;
  if (constantCondition) {
    absl::StatusOr<int64_t> c = readScalar(context, conditionResult, "the body's condition");
    if (!c.ok())
      return c.status();
    stayTrue = *c != 0;
  }
  int64_t knownTrips = !conditionIsData && condition ? std::max<int64_t>(*maxTrips, 0) : 0;
  if (!conditionIsData && condition && !stayTrue)
    knownTrips = std::min<int64_t>(knownTrips, 1);
  std::vector<std::vector<ref::Tensor>> gathered(conditionIsData ? scans : 0);
  ref::Tensor iteration(ref::DType::i64, {}), isTrue(ref::DType::boolean, {});
  isTrue.setI(0, 1);
  int64_t i = 0;
  for (; i < *maxTrips && condition; ++i) {
    iteration.setI(0, i);
    if (absl::Status st = store(context, body.parameters[0], iteration); !st.ok())
      return st;
    if (absl::Status st = store(context, body.parameters[1], isTrue); !st.ok())
      return st;
    if (absl::Status st = runSteps(context, request, body.steps, false); !st.ok())
      return st;
    for (size_t k = 0; k < scans; ++k) {
      int slice = body.results[1 + carried + k];
      std::string what = absl::StrCat("scan output ", k, "'s slice");
      if (!conditionIsData) {
        if (absl::Status st = stackSlice(context, step.outputs[carried + k], slice, 0, i,
                                         knownTrips, i == 0, what);
            !st.ok())
          return st;
        continue;
      }
      absl::StatusOr<ref::Tensor> copy = hostCopy(context, slice);
      if (!copy.ok())
        return copy.status();
      gathered[k].push_back(std::move(*copy));
    }
    if (absl::Status st = updateCarried(context, body, 2, 1, carried, "carried value");
        !st.ok())
      return st;
    if (conditionIsData) {
      absl::StatusOr<int64_t> c = readScalar(context, conditionResult, "the body's condition");
      if (!c.ok())
        return c.status();
      condition = *c != 0;
    } else {
      condition = stayTrue;
      // Nothing read back: each iteration's number is still held for its
      // upload. One wait every kSettleIterations bounds that memory.
      constexpr int64_t kSettleIterations = 1024;
      if ((i + 1) % kSettleIterations == 0)
        if (absl::Status st = settle(context); !st.ok())
          return st;
    }
  }
  for (size_t k = 0; k < carried; ++k)
    if (absl::Status st = copyValue(context, step.outputs[k], body.parameters[2 + k],
                                    absl::StrCat("carried value ", k));
        !st.ok())
      return st;
  for (size_t k = 0; k < scans; ++k) {
    int out = step.outputs[carried + k];
    if (i == 0) {
      if (absl::Status st = placeEmptyStack(context, out, 0); !st.ok())
        return st;
      continue;
    }
    if (!conditionIsData)
      continue;
    std::vector<ref::Tensor> expanded;
    std::vector<const ref::Tensor *> parts;
    for (const ref::Tensor &t : gathered[k]) {
      ref::Shape shape = t.shape();
      shape.insert(shape.begin(), 1);
      expanded.push_back(t.reshaped(shape));
    }
    for (const ref::Tensor &t : expanded)
      parts.push_back(&t);
    absl::StatusOr<ref::Tensor> stacked = ref::concat(parts, 0);
    if (!stacked.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("scan output ", k, ": ", stacked.status().message()));
    if (absl::Status st = fitsPlan(context, out, stacked->dtype(), stacked->shape(),
                                   absl::StrCat("scan output ", k));
        !st.ok())
      return st;
    if (absl::Status st = store(context, out, std::move(*stacked)); !st.ok())
      return st;
  }
  return absl::OkStatus();
}

absl::Status Executor::runScan(ExecutionContext &context, const RunRequest &request,
                               const StepInfo &step) const {
  const Plan &plan = context.model().plan();
  const StepInfo::ScanInfo &table = step.scan;
  const artifact::BodyInfo &body = step.bodies[0];
  size_t scanned = static_cast<size_t>(table.numScanInputs);
  size_t states = step.inputs.size() - scanned;
  size_t scanOutputs = step.outputs.size() - states;
  auto entry = [](const auto &list, size_t i, auto otherwise) {
    return i < list.size() ? static_cast<decltype(otherwise)>(list[i]) : otherwise;
  };
  int64_t length = -1;
  std::vector<int64_t> axes(scanned);
  for (size_t j = 0; j < scanned; ++j) {
    const ref::Shape &shape = context.value(step.inputs[states + j]).shape;
    axes[j] = entry(table.inputAxes, j, int64_t{0});
    if (axes[j] < 0 || axes[j] >= static_cast<int64_t>(shape.size()))
      return absl::InvalidArgumentError(absl::StrCat("scanned input ", j, " has rank ",
                                                     shape.size(), " and no axis ", axes[j]));
    if (length >= 0 && shape[axes[j]] != length)
      return absl::InvalidArgumentError(absl::StrCat("scanned input ", j, " has ",
                                                     shape[axes[j]], " slices, input 0 has ",
                                                     length));
    length = shape[axes[j]];
  }
  // Each scanned input's slice: its dims and layout are the same every
  // iteration, checked against the plan once.
  std::vector<ref::Shape> sliceShapes(scanned);
  std::vector<StackLayout> layouts(scanned);
  for (size_t j = 0; j < scanned; ++j) {
    int x = step.inputs[states + j];
    sliceShapes[j] = context.value(x).shape;
    sliceShapes[j].erase(sliceShapes[j].begin() + axes[j]);
    if (absl::Status st = fitsPlan(context, body.parameters[states + j], plan.values[x].dtype,
                                   sliceShapes[j], absl::StrCat("scanned input ", j, "'s slice"));
        !st.ok())
      return st;
    layouts[j] = stackLayout(sliceShapes[j], axes[j], plan.values[x].dtype);
  }
  for (size_t k = 0; k < states; ++k)
    if (absl::Status st = copyValue(context, body.parameters[k], step.inputs[k],
                                    absl::StrCat("initial state ", k));
        !st.ok())
      return st;
  for (int64_t t = 0; t < length; ++t) {
    for (size_t j = 0; j < scanned; ++j) {
      int slice = body.parameters[states + j];
      int64_t at = entry(table.inputReverse, j, false) ? length - 1 - t : t;
      const StackLayout &layout = layouts[j];
      uintptr_t source = context.value(step.inputs[states + j]).address + at * layout.rowBytes;
      if (layout.rows == 1) {
        // One contiguous run: the slice is a view of the input, no copy.
        Slot &view = context.value(slice);
        view.shape = sliceShapes[j];
        view.address = source;
        continue;
      }
      if (absl::Status st = place(context, slice, sliceShapes[j]); !st.ok())
        return st;
      if (absl::Status st = copyRuns(context, context.value(slice).address, layout.rowBytes,
                                     source, length * layout.rowBytes, layout.rows,
                                     layout.rowBytes);
          !st.ok())
        return st;
    }
    if (absl::Status st = runSteps(context, request, body.steps, false); !st.ok())
      return st;
    for (size_t k = 0; k < scanOutputs; ++k) {
      bool reverse = entry(table.outputReverse, k, false);
      if (absl::Status st = stackSlice(context, step.outputs[states + k],
                                       body.results[states + k],
                                       entry(table.outputAxes, k, int64_t{0}),
                                       reverse ? length - 1 - t : t, length, t == 0,
                                       absl::StrCat("scan output ", k, "'s slice"));
          !st.ok())
        return st;
    }
    if (absl::Status st = updateCarried(context, body, 0, 0, states, "state"); !st.ok())
      return st;
  }
  for (size_t k = 0; k < states; ++k)
    if (absl::Status st = copyValue(context, step.outputs[k], body.parameters[k],
                                    absl::StrCat("state ", k));
        !st.ok())
      return st;
  if (length <= 0)
    for (size_t k = 0; k < scanOutputs; ++k)
      if (absl::Status st = placeEmptyStack(context, step.outputs[states + k],
                                            entry(table.outputAxes, k, int64_t{0}));
          !st.ok())
        return st;
  return absl::OkStatus();
}

absl::StatusOr<const DeviceMemory *> Executor::deviceMemoryOrError() const {
  if (const DeviceMemory *memory = deviceMemory())
    return memory;
  return absl::FailedPreconditionError(
      "the model runs in host emulation: device memory needs the CUDA backend");
}

absl::Status Executor::run(ExecutionContext &context, const RunRequest &request,
                           OutputSink sink) const {
  const Plan &plan = context.model().plan();
  // Host steps size their results from data: the reference kernels check those
  // sizes against the run's limit before allocating.
  ref::MaxTensorBytesScope sizeLimit(request.maxTensorBytes);
  double originUs = 0;
  if (request.profile)
    originUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
                                                         request.profile->origin)
                   .count();
  if (absl::Status s = begin(context, request); !s.ok()) {
    abandon(context, request);
    return s;
  }
  if (request.profile) {
    mark(context, request, 0);
    context.nestedStepKinds_.assign(plan.stepCount, nullptr);
  }
  if (absl::Status s = runSteps(context, request, plan.steps, true); !s.ok()) {
    abandon(context, request);
    return s;
  }
  if (absl::Status s = finish(context, request, sink); !s.ok())
    return s;
  if (context.model().reportsErrors()) {
    // Kernels that met bad data (an index out of range, an integer division by
    // zero) went on safely and left a code in their step's word: the call fails
    // as the reference would.
    if (absl::Status s = readErrorWords(context, context.errorCodes_); !s.ok())
      return s;
    for (size_t s = 0; s < plan.stepCount; ++s)
      if (int32_t code = context.errorCodes_[s])
        return absl::InvalidArgumentError(absl::StrCat("step ", s, " (", context.model().stepLabel(s),
                                                       "): ", artifact::kernelErrorText(code)));
  }
  if (!request.profile)
    return absl::OkStatus();
  std::vector<ProfileEvent> timed;
  // Which code ran: the variant the bound symbols chose (or the generic one).
  timed.push_back({context.model().variantName(context.variant()), "variant", originUs, 0});
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    absl::StatusOr<double> start = elapsedUs(context, 0, 2 * s + 1);
    absl::StatusOr<double> duration = elapsedUs(context, 2 * s + 1, 2 * s + 2);
    if (!start.ok() || !duration.ok())
      return !start.ok() ? start.status() : duration.status();
    const StepInfo &step = plan.steps[s];
    artifact::StepWork work = artifact::stepWork(plan, step, context.symbols());
    timed.push_back({step.label, context.stepKinds_[s], originUs + *start, *duration,
                     work.bytes ? *work.bytes : -1, work.flops ? *work.flops : -1.0});
    // The steps a control step's bodies ran: once each, with what ran them,
    // and no time of their own (the control step's includes theirs).
    std::function<void(const std::vector<StepInfo> &)> nested = [&](const std::vector<StepInfo> &steps) {
      for (const StepInfo &inner : steps) {
        if (const char *kind = context.nestedStepKinds_[inner.index])
          timed.push_back({absl::StrCat(step.label, "/", inner.label), kind, originUs + *start, 0});
        for (const artifact::BodyInfo &body : inner.bodies)
          nested(body.steps);
      }
    };
    for (const artifact::BodyInfo &body : step.bodies)
      nested(body.steps);
  }
  std::lock_guard<std::mutex> lock(request.profile->mutex);
  request.profile->events.insert(request.profile->events.end(), timed.begin(), timed.end());
  return absl::OkStatus();
}

} // namespace kiln::rt
