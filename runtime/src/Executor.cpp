//===- Executor.cpp - the step loop every backend shares ------------------===//

#include "Executor.h"

#include "Model.h"

#include "kiln/artifact/HostLaunch.h"

#include "absl/strings/str_cat.h"

namespace kiln::rt {

ExecutionContext::ExecutionContext(const Model &model) : model_(model) {
  const Plan &plan = model.plan();
  symbols.assign(plan.symbols.size(), std::nullopt);
  values.resize(plan.values.size());
  stepKinds.assign(plan.steps.size(), "host");
  size_t maxArgs = 1;
  for (const artifact::StepInfo &step : plan.steps)
    maxArgs = std::max(maxArgs, step.inputs.size() + 1);
  size_t maxSymbols = 0;
  for (const artifact::KernelInfo &k : plan.kernels)
    maxSymbols = std::max(maxSymbols, k.symbols.size());
  // Kernel launches fill these without growing them.
  pointers.reserve(maxArgs);
  symbolArgs.reserve(maxSymbols);
  args.reserve(maxArgs + maxSymbols + 1); // + an error word
  // Weights sit where the backend put them at load; their dims never change.
  for (size_t v = 0; v < plan.values.size(); ++v)
    if (plan.values[v].kind == artifact::ValueKind::Weight)
      values[v].shape = *artifact::evaluateShape(plan.values[v], {});
}

ExecutionContext::~ExecutionContext() = default;


int64_t Executor::workItems(ExecutionContext &context, const StepInfo &step) const {
  const artifact::KernelInfo &kernel = context.model().plan().kernels[step.kernel];
  std::optional<int64_t> items;
  if (kernel.workItems.known())
    items = kernel.workItems.evaluate(context.symbols);
  if (!items)
    items = ref::numElements(context.values[step.outputs[0]].shape);
  return std::max<int64_t>(1, *items);
}

int64_t Executor::prepareLaunch(ExecutionContext &context, const StepInfo &step) const {
  const Plan &plan = context.model().plan();
  const Slot &out = context.values[step.outputs[0]];
  context.pointers.clear();
  context.pointers.push_back(out.address);
  int64_t work = ref::numElements(out.shape);
  for (int v : step.inputs) {
    context.pointers.push_back(context.values[v].address);
    work += ref::numElements(context.values[v].shape);
  }
  context.symbolArgs.clear();
  for (int s : plan.kernels[step.kernel].symbols)
    context.symbolArgs.push_back(context.symbols[s].value_or(0));
  context.args.clear();
  for (uintptr_t &p : context.pointers)
    context.args.push_back(&p);
  for (int64_t &s : context.symbolArgs)
    context.args.push_back(&s);
  if (plan.kernels[step.kernel].reportsErrors) {
    size_t index = static_cast<size_t>(&step - plan.steps.data());
    context.errorWordArg = errorWords(context) + index * sizeof(int32_t);
    context.args.push_back(&context.errorWordArg);
  }
  return work;
}

absl::Status Executor::runSteps(ExecutionContext &context, const RunRequest &request) const {
  const Model &model = context.model();
  const Plan &plan = model.plan();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const StepInfo &step = plan.steps[s];
    auto fail = [&](absl::string_view message) {
      return absl::InvalidArgumentError(absl::StrCat("step ", s, " (", step.label, "): ", message));
    };
    if (request.profile)
      mark(context, request, 2 * s + 1);
    int out = step.outputs[0];
    // Shape steps compute a small tensor from bound symbols ("shape"); host
    // steps run on the reference kernels unless the backend runs them.
    context.stepKinds[s] = step.kind == artifact::StepKind::Kernel ? "kernel"
                           : step.kind == artifact::StepKind::Host ? "host"
                                                                   : "shape";
    switch (step.kind) {
    case artifact::StepKind::Kernel: {
      if (!artifact::evaluateShapeInto(plan.values[out], context.symbols, context.scratchShape))
        return fail("the kernel's result size is unknown before it runs");
      if (absl::Status st = place(context, out, context.scratchShape); !st.ok())
        return fail(st.message());
      if (absl::Status st = launch(context, step); !st.ok())
        return fail(st.message());
      break;
    }
    case artifact::StepKind::Host: {
      absl::StatusOr<const char *> onDevice = runOnDevice(context, s, step);
      if (!onDevice.ok())
        return fail(onDevice.status().message());
      if (*onDevice) {
        context.stepKinds[s] = *onDevice;
        break;
      }
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
      HostResults results = model.hostStep(s).run(pointers);
      if (!results.ok())
        return fail(results.status().message());
      if (results->size() != step.outputs.size())
        return fail(absl::StrCat("it gave ", results->size(), " results, the plan has ",
                                 step.outputs.size()));
      for (size_t k = 0; k < results->size(); ++k) {
        int v = step.outputs[k];
        const artifact::ValueInfo &info = plan.values[v];
        ref::Tensor &got = (*results)[k];
        if (!artifact::matchesPlan(got, info, context.symbols))
          return fail(absl::StrCat("its result ", k, " is ", got.describe(), " but the plan says ",
                                   artifact::describeValue(info, plan.symbols)));
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
                                         ? context.values[step.inputs[0]].shape
                                         : kNoShape;
      absl::StatusOr<ref::Tensor> t =
          artifact::evaluateShapeStep(plan, step, context.symbols, inputShape);
      if (!t.ok())
        return fail(t.status().message());
      if (absl::Status st = store(context, out, std::move(*t)); !st.ok())
        return fail(st.message());
      break;
    }
    }
    if (request.profile)
      mark(context, request, 2 * s + 2);
  }
  return absl::OkStatus();
}

namespace {
absl::Status noDevice() {
  return absl::FailedPreconditionError(
      "the model runs in host emulation: device memory needs the CUDA backend");
}
} // namespace

absl::StatusOr<void *> Executor::allocateDevice(size_t) const { return noDevice(); }
absl::Status Executor::freeDevice(void *) const { return noDevice(); }
absl::Status Executor::copyToDevice(void *, const void *, size_t) const { return noDevice(); }
absl::Status Executor::copyToHost(void *, const void *, size_t) const { return noDevice(); }

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
  if (request.profile)
    mark(context, request, 0);
  if (absl::Status s = runSteps(context, request); !s.ok()) {
    abandon(context, request);
    return s;
  }
  if (absl::Status s = finish(context, request, sink); !s.ok())
    return s;
  if (context.model().reportsErrors()) {
    // Kernels that met bad data (an index out of range, an integer division by
    // zero) went on safely and left a code in their step's word: the call fails
    // as the reference would.
    if (absl::Status s = readErrorWords(context, context.errorCodes); !s.ok())
      return s;
    for (size_t s = 0; s < plan.steps.size(); ++s)
      if (int32_t code = context.errorCodes[s])
        return absl::InvalidArgumentError(
            absl::StrCat("step ", s, " (", plan.steps[s].label, "): ", artifact::kernelErrorText(code)));
  }
  if (!request.profile)
    return absl::OkStatus();
  std::vector<ProfileEvent> timed;
  // Which code ran: the variant the bound symbols chose (or the generic one).
  timed.push_back({context.model().variantName(context.variant), "variant", originUs, 0});
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    absl::StatusOr<double> start = elapsedUs(context, 0, 2 * s + 1);
    absl::StatusOr<double> duration = elapsedUs(context, 2 * s + 1, 2 * s + 2);
    if (!start.ok() || !duration.ok())
      return !start.ok() ? start.status() : duration.status();
    const StepInfo &step = plan.steps[s];
    timed.push_back({step.label, context.stepKinds[s], originUs + *start, *duration});
  }
  absl::MutexLock lock(&request.profile->mutex);
  request.profile->events.insert(request.profile->events.end(), timed.begin(), timed.end());
  return absl::OkStatus();
}

} // namespace kiln::rt
