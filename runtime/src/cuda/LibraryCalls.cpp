//===- LibraryCalls.cpp - host steps the CUDA device runs in a library ------===//

#include "cuda/LibraryCalls.h"

#include "Model.h"
#include "cuda/CudaExecutor.h"
#include "cuda/CudaState.h"

#include "absl/strings/str_cat.h"

namespace kiln::rt {

namespace {

/// The profile's kind of a library step the library refused (no algorithm,
/// or a call it does not support), which ran on the host instead.
constexpr const char *kCublasLtRefused = "host:cublasLt-refused";
constexpr const char *kCudnnRefused = "host:cudnn-refused";
/// The profile's kind of a fused erf-GELU matmul that cuDNN refused (or that
/// no cuDNN could run), run by cuBLASLt with its tanh GELU instead.
constexpr const char *kTanhForCudnn = "cublasLt:tanh-gelu";

size_t bytesOf(ref::DType dtype, const ref::Shape &shape) {
  return static_cast<size_t>(ref::numElements(shape)) * ref::info(dtype).bytes;
}

/// A library call's element type: false (run the step on the host) when its
/// operands' dtypes differ.
bool libraryDtype(const ExecutionContext &context, const StepInfo &step, ref::DType &dtype) {
  const Plan &plan = context.model().plan();
  dtype = plan.values[step.outputs[0]].dtype;
  for (int v : step.inputs)
    if (plan.values[v].dtype != dtype)
      return false;
  return true;
}

/// A product's element types (a matmul or conv step): `dtype` its operands',
/// the result's `narrowResult` for int8 operands (an int8 matmul's int32, an
/// int8 conv's f32), `float8Result` for float8 ones (a float8 matmul's
/// MatMul.float8_result) and the operands' otherwise, a bias or residual the
/// result's. False (run the step on the host) when the step's values differ.
bool productDtype(const ExecutionContext &context, const StepInfo &step, ref::DType narrowResult,
                  ref::DType float8Result, ref::DType &dtype) {
  const Plan &plan = context.model().plan();
  dtype = plan.values[step.inputs[0]].dtype;
  ref::DType result = dtype == ref::DType::i8         ? narrowResult
                      : dtype == ref::DType::f8e4m3fn ? float8Result
                                                      : dtype;
  if (plan.values[step.outputs[0]].dtype != result)
    return false;
  for (size_t i = 1; i < step.inputs.size(); ++i)
    if (plan.values[step.inputs[i]].dtype != (i == 1 ? dtype : result))
      return false;
  return true;
}

/// A library step's result dims: the plan's at this call's symbol values, or,
/// where the plan leaves a dim unknown (a `?` of a dynamic import), what
/// `derive` computes from the operands' dims, known by now. False (run the
/// step on the host, which reports why) when neither gives them.
template <typename Derive>
bool libraryResultDims(const ExecutionContext &context, int out, ref::Shape &result,
                       Derive derive) {
  if (artifact::evaluateShapeInto(context.model().plan().values[out], context.symbols(), result))
    return true;
  std::optional<ref::Shape> derived = derive();
  if (!derived)
    return false;
  result = std::move(*derived);
  return true;
}

/// A MatMul step whose activation cuBLASLt lacks: a cuDNN graph.
bool fusedInCudnn(const StepInfo &step) {
  const schema::MatMul *m = step.table ? step.table->op_as_MatMul() : nullptr;
  std::optional<artifact::Epilogue> activation =
      m ? ops::enumFromNumber<artifact::Epilogue>(static_cast<int>(m->activation())) : std::nullopt;
  return activation && !MatmulRunner::takesActivation(*activation);
}

} // namespace

struct LibraryCalls::Site {
  const CudaExecutor &executor;
  ExecutionContext &context;
  CudaState &state;
  size_t s;
  const StepInfo &step;
  const artifact::HostStep &host;

  const Slot &value(int v) const { return context.value(v); }
};

std::unique_ptr<LibraryCalls> LibraryCalls::create(const Plan &plan) {
  auto calls = std::make_unique<LibraryCalls>();
  bool hasMatmul = false, hasDnn = false;
  artifact::forEachStep(plan, [&](const StepInfo &step) {
    hasMatmul = hasMatmul || step.op == schema::StepOp::MatMul;
    hasDnn = hasDnn || step.op == schema::StepOp::Conv ||
             step.op == schema::StepOp::ConvTranspose || step.op == schema::StepOp::Pool ||
             (step.op == schema::StepOp::MatMul && fusedInCudnn(step));
  });
  if (hasMatmul) {
    absl::StatusOr<std::unique_ptr<MatmulRunner>> runner = MatmulRunner::create();
    if (runner.ok())
      calls->matmul_ = std::move(*runner);
    else
      calls->matmulUnavailable_ = std::string(runner.status().message());
  }
  if (hasDnn) {
    absl::StatusOr<std::unique_ptr<DnnRunner>> runner = DnnRunner::create();
    if (runner.ok())
      calls->dnn_ = std::move(*runner);
    else
      calls->dnnUnavailable_ = std::string(runner.status().message());
  }
  return calls;
}

std::string LibraryCalls::unavailable() const {
  std::string text;
  if (!matmulUnavailable_.empty())
    absl::StrAppend(&text, " (matmuls on the host: ", matmulUnavailable_, ")");
  if (!dnnUnavailable_.empty())
    absl::StrAppend(&text,
                    " (conv, pool and SiLU-fused matmuls on the host, erf-GELU-fused ones on "
                    "cuBLASLt's tanh GELU: ",
                    dnnUnavailable_, ")");
  return text;
}

absl::StatusOr<DeviceOutcome> LibraryCalls::run(const CudaExecutor &executor,
                                                ExecutionContext &context, size_t s,
                                                const StepInfo &step,
                                                const artifact::HostStep &host) const {
  Site site{executor, context, stateOf(context), s, step, host};
  switch (host.deviceCall()) {
  case artifact::DeviceCall::none: return DeviceOutcome::onHost();
  case artifact::DeviceCall::matmul: return matmul(site);
  case artifact::DeviceCall::conv:
  case artifact::DeviceCall::convTranspose:
  case artifact::DeviceCall::pool: return dnn(site);
  case artifact::DeviceCall::reshape: return reshape(site);
  }
  return DeviceOutcome::onHost();
}

absl::StatusOr<DeviceOutcome> LibraryCalls::dnn(const Site &site) const {
  const artifact::HostStep &host = site.host;
  const StepInfo &step = site.step;
  if (!dnn_)
    return DeviceOutcome::onHost();
  int out = step.outputs[0];
  DnnCall call;
  // A conv of int8 operands gives f32 (cuDNN's int8 convolution); any other
  // op has one element type throughout.
  if (host.conv ? !productDtype(site.context, step, ref::DType::f32, ref::DType::f32, call.dtype)
                : !libraryDtype(site.context, step, call.dtype))
    return DeviceOutcome::onHost();
  const Slot &x = site.value(step.inputs[0]);
  call.x = x.shape;
  call.xAddress = x.address;
  const std::optional<ConvStepParams> &convParams = host.conv ? host.conv : host.convTranspose;
  if (convParams)
    call.w = site.value(step.inputs[1]).shape;
  if (!libraryResultDims(site.context, out, call.result, [&] {
        return convParams ? DnnRunner::convResultShape(*convParams, !host.conv, call.x, call.w)
                          : DnnRunner::poolResultShape(*host.pool, call.x);
      }))
    return DeviceOutcome::onHost();
  if (const std::optional<ConvStepParams> &conv = convParams) {
    const Slot &w = site.value(step.inputs[1]);
    call.wAddress = w.address;
    if (conv->hasBias)
      call.biasAddress = site.value(step.inputs[2]).address;
    if (conv->hasResidual) {
      const Slot &residual = site.value(step.inputs[conv->hasBias ? 3 : 2]);
      if (residual.shape != call.result)
        return DeviceOutcome::onHost(); // the host step reports the mismatch
      call.residualAddress = residual.address;
    }
    if (host.conv ? !DnnRunner::supportsConv(*conv, call)
                  : !DnnRunner::supportsConvTranspose(*conv, call))
      return DeviceOutcome::onHost();
  } else if (!DnnRunner::supportsPool(*host.pool, call)) {
    return DeviceOutcome::onHost();
  }
  if (absl::Status st = site.executor.place(site.context, out, call.result); !st.ok())
    return st;
  call.resultAddress = site.value(out).address;
  CudaState &state = site.state;
  // The call's signature, with the workspace as it is after the call (a
  // dry run's is the workspace as it is: a first run that grows it then
  // signs what the next run will see, and that run captures).
  auto sign = [&] {
    if (state.mode != SegmentMode::Off)
      state.signCall(site.s, call.dtype, {&call.x, &call.w, &call.result},
                     {call.xAddress, call.wAddress, call.biasAddress, call.residualAddress,
                      call.resultAddress},
                     host.pool ? 0 : state.workspace.first);
  };
  if (state.mode == SegmentMode::Dry) {
    sign();
    return DeviceOutcome::ran("cudnn");
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
    return DeviceOutcome::onHost(kCudnnRefused);
  if (!ran.ok())
    return ran;
  return DeviceOutcome::ran("cudnn");
}

absl::StatusOr<DeviceOutcome> LibraryCalls::matmul(const Site &site) const {
  const artifact::HostStep &host = site.host;
  const StepInfo &step = site.step;
  const MatMulParams &params = *host.matmul;
  // cuBLASLt's epilogues, or a cuDNN graph for an activation it lacks.
  bool viaDnn = !MatmulRunner::takesActivation(params.activation);
  // An erf GELU cuDNN cannot fuse (no cuDNN, a graph it refuses) is
  // cuBLASLt's tanh GELU instead of the host: the erf GELU goes into
  // products whose mode rounds by more than the two differ (bf16, fp16 and
  // TF32 products; |tanh - erf GELU| <= 4.8e-4), and the profile says so.
  MatMulParams tanhGelu = params;
  tanhGelu.activation = Epilogue::gelu_tanh;
  const bool tanhFallback = params.activation == Epilogue::gelu_erf && matmul_;
  const MatMulParams *run = &params;
  auto toTanh = [&] {
    viaDnn = false;
    run = &tanhGelu;
  };
  if (viaDnn && !dnn_) {
    if (!tanhFallback)
      return DeviceOutcome::onHost();
    toTanh();
  }
  if (!viaDnn && !matmul_)
    return DeviceOutcome::onHost();
  int out = step.outputs[0];
  MatmulCall call;
  // One element type throughout, except an int8 product's int32 result and
  // a float8 product's (and its bias's) float8_result.
  if (!productDtype(site.context, step, ref::DType::i32, params.float8Result, call.dtype))
    return DeviceOutcome::onHost();
  call.resultDtype = site.context.model().plan().values[out].dtype;
  const Slot &a = site.value(step.inputs[0]), &b = site.value(step.inputs[1]);
  call.a = a.shape;
  call.b = b.shape;
  if (!libraryResultDims(site.context, out, call.result,
                         [&] { return MatmulRunner::resultShape(params, a.shape, b.shape); }))
    return DeviceOutcome::onHost();
  call.aAddress = a.address;
  call.bAddress = b.address;
  if (params.hasBias) {
    const Slot &bias = site.value(step.inputs[2]);
    call.bias = bias.shape;
    call.biasAddress = bias.address;
  }
  if (viaDnn && !DnnRunner::supportsMatmul(params, call)) {
    if (!tanhFallback)
      return DeviceOutcome::onHost();
    toTanh();
  }
  if (!viaDnn && !MatmulRunner::supports(*run, call))
    return DeviceOutcome::onHost();
  if (absl::Status st = site.executor.place(site.context, out, call.result); !st.ok())
    return st;
  call.resultAddress = site.value(out).address;
  CudaState &state = site.state;
  // Signed with the workspace as the call leaves it (a dry run's as it is),
  // as a convolution's is.
  auto sign = [&] {
    if (state.mode != SegmentMode::Off)
      state.signCall(site.s, call.dtype, {&call.a, &call.b, &call.bias, &call.result},
                     {call.aAddress, call.bAddress, call.biasAddress, call.resultAddress},
                     state.workspace.first);
  };
  auto kind = [&] { return viaDnn ? "cudnn" : run == &tanhGelu ? kTanhForCudnn : "cublasLt"; };
  if (state.mode == SegmentMode::Dry) {
    sign();
    return DeviceOutcome::ran(kind());
  }
  // The algorithm or plan (the heuristic's, told the operands' real
  // alignment) and the workspace it needs, which the context's grows to. A
  // refusal leaves the step to the host, and the profile says so.
  auto workspaceFor = [&](size_t bytes) { return state.workspaceOf(bytes); };
  absl::Status ran = viaDnn ? dnn_->matmul(params, call, state.stream, workspaceFor)
                            : matmul_->run(*run, call, state.stream, workspaceFor);
  if (viaDnn && absl::IsUnimplemented(ran) && tanhFallback &&
      MatmulRunner::supports(tanhGelu, call)) {
    toTanh();
    ran = matmul_->run(tanhGelu, call, state.stream, workspaceFor);
  }
  sign();
  if (!ran.ok())
    return absl::IsUnimplemented(ran) ? absl::StatusOr<DeviceOutcome>(DeviceOutcome::onHost(
                                            viaDnn ? kCudnnRefused : kCublasLtRefused))
                                      : ran;
  return DeviceOutcome::ran(kind());
}

absl::StatusOr<DeviceOutcome> LibraryCalls::reshape(const Site &site) const {
  // The result's dims are the shape operand's values: that small tensor comes
  // to the host (the one synchronization a size that depends on data needs);
  // the data never leaves the device. At the top level the result is the
  // input's bytes (the memory plan keeps them live while it is read, as for
  // a View); in a body a copy, since a body's results are copied into its
  // parameters, which an alias could overlap.
  const StepInfo &step = site.step;
  ExecutionContext &context = site.context;
  const Plan &plan = context.model().plan();
  int in = step.inputs[0], out = step.outputs[0];
  absl::StatusOr<ref::Tensor> target = site.executor.hostValue(context, step.inputs[1]);
  if (!target.ok())
    return target.status();
  ref::DType dtype = plan.values[in].dtype;
  const ref::Shape inputShape = context.value(in).shape;
  absl::StatusOr<ref::Shape> shape = ref::reshapeResult(
      inputShape, ref::integerValues(*target),
      absl::StrCat(ref::info(dtype).name, "[", ref::shapeToString(inputShape), "]"));
  if (!shape.ok())
    return shape.status();
  if (absl::Status st = site.executor.fitsPlan(context, out, dtype, *shape, "its result"); !st.ok())
    return st;
  if (static_cast<size_t>(step.index) < plan.steps.size()) {
    context.setView(out, *shape, context.value(in).address);
    return DeviceOutcome::ran("view");
  }
  if (absl::Status st = site.executor.place(context, out, *shape); !st.ok())
    return st;
  if (size_t bytes = bytesOf(dtype, *shape))
    if (absl::Status st = site.executor.copyBytes(context, context.value(out).address,
                                                  context.value(in).address, bytes);
        !st.ok())
      return st;
  return DeviceOutcome::ran("copy");
}

} // namespace kiln::rt
