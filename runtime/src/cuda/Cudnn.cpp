//===- Cudnn.cpp - conv and pool steps in cuDNN ---------------------------===//

#include "cuda/Cudnn.h"

#include "kiln/ops/CudnnPool.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <mutex>
#include <dlfcn.h>

#include <limits>
#include <optional>

namespace kiln::rt {

absl::StatusOr<const Cudnn *> Cudnn::load() {
  void *handle = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return absl::UnavailableError(
        absl::StrCat("no cuDNN: cannot load libcudnn.so.9 (", dlerror(), ")"));
  auto *dnn = new Cudnn();
#define KILN_DNN_SYMBOL(name)                                                          \
  dnn->name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));                \
  if (!dnn->name)                                                                      \
    return absl::UnavailableError("cuDNN lacks " #name "; it is too old or too new");
#include "cuda/CudnnSymbols.inc"
#undef KILN_DNN_SYMBOL
  return dnn;
}

absl::StatusOr<const Cudnn *> Cudnn::get() {
  static const absl::StatusOr<const Cudnn *> library = load();
  return library;
}

std::string Cudnn::describe(const char *call, cudnnStatus_t status) const {
  const char *message = cudnnGetErrorString ? cudnnGetErrorString(status) : nullptr;
  return absl::StrCat(call, " failed: status ", static_cast<int>(status),
                      message ? absl::StrCat(" (", message, ")") : "");
}

namespace {

struct DnnTypes {
  cudnnDataType_t data, compute;
  cudnnMathType_t math;
  bool wideScale; ///< alpha/beta are doubles (f64 data), else floats
  /// y's type: the data's, except an int8 convolution's FLOAT.
  cudnnDataType_t result = data;
};

std::optional<DnnTypes> dnnTypes(ref::DType dtype, bool allowTf32 = false) {
  switch (dtype) {
  // fp32 stays IEEE (FMA math only) unless the artifact was compiled with
  // --precision tf32: tensor-op math on fp32 data is TF32.
  case ref::DType::f32:
    return DnnTypes{CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
                    allowTf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH, false};
  case ref::DType::f16: return DnnTypes{CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, false};
  case ref::DType::bf16:
    return DnnTypes{CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, false};
  case ref::DType::f64: return DnnTypes{CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_FMA_MATH, true};
  default: return std::nullopt;
  }
}

/// A convolution's types: dnnTypes', or for int8 operands cuDNN's
/// INT8_EXT_CONFIG (INT8 x and w, INT32 compute, FLOAT y and scales).
std::optional<DnnTypes> convTypes(ref::DType dtype, bool allowTf32 = false) {
  if (dtype == ref::DType::i8)
    return DnnTypes{CUDNN_DATA_INT8, CUDNN_DATA_INT32, CUDNN_DEFAULT_MATH, false, CUDNN_DATA_FLOAT};
  return dnnTypes(dtype, allowTf32);
}

/// `dims` as cuDNN takes them: at least 4 (a 1-D op gets a height of 1), and
/// int-sized; nullopt when a dim does not fit.
std::optional<std::vector<int>> dnnDims(const ref::Shape &dims) {
  std::vector<int> out;
  for (int64_t d : dims) {
    if (d < 0 || d > std::numeric_limits<int>::max())
      return std::nullopt;
    out.push_back(static_cast<int>(d));
  }
  if (out.size() == 3)
    out.insert(out.begin() + 2, 1);
  return out;
}

std::vector<int> packedStrides(const std::vector<int> &dims) {
  std::vector<int> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

/// The strides of channels-first dims [N, C, D1..Dk] stored channels last
/// ([N, D1..Dk, C], cuDNN's NHWC): C innermost, then the spatial dims.
std::vector<int> channelsLastStrides(const std::vector<int> &dims) {
  std::vector<int> strides(dims.size(), 1);
  int step = dims[1];
  for (size_t i = dims.size() - 1; i >= 2; --i) {
    strides[i] = step;
    step *= dims[i];
  }
  strides[0] = step;
  return strides;
}

/// [N, D1..Dk, C] -> [N, C, D1..Dk] (`toFirst`), or back.
ref::Shape rotateChannels(ref::Shape dims, bool toFirst) {
  if (dims.size() >= 3) {
    if (toFirst)
      std::rotate(dims.begin() + 1, dims.end() - 1, dims.end());
    else
      std::rotate(dims.begin() + 1, dims.begin() + 2, dims.end());
  }
  return dims;
}

/// Per spatial dim of a `spatial`-d op, widened to cuDNN's 2-D for a 1-D op
/// with `pad1d` for the added dim; nullopt when pads are asymmetric.
std::optional<std::vector<int>> symmetricPads(const std::vector<int64_t> &pads, size_t spatial) {
  std::vector<int> out;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t begin = pads.empty() ? 0 : pads[i], end = pads.empty() ? 0 : pads[i + spatial];
    if (begin != end || begin < 0 || begin > std::numeric_limits<int>::max())
      return std::nullopt;
    out.push_back(static_cast<int>(begin));
  }
  if (spatial == 1)
    out.insert(out.begin(), 0);
  return out;
}

std::optional<std::vector<int>> perSpatial(const std::vector<int64_t> &values, size_t spatial,
                                           int fill) {
  std::vector<int> out;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t v = values.empty() ? 1 : values[i];
    if (v < 1 || v > std::numeric_limits<int>::max())
      return std::nullopt;
    out.push_back(static_cast<int>(v));
  }
  if (spatial == 1)
    out.insert(out.begin(), fill);
  return out;
}

/// A conv's cuDNN problem. Dims are channels first ([N, C, spatial...]) as
/// cuDNN's descriptors take them; `channelsLast` says the buffers are NHWC
/// (tensors with NHWC strides, the filter in CUDNN_TENSOR_NHWC format).
struct ConvPlan {
  std::vector<int> x, w, y, pads, strides, dilations;
  int groups = 1;
  bool channelsLast = false;
};

std::optional<ConvPlan> planConv(const ConvStepParams &params, const DnnCall &call) {
  size_t spatial = call.x.size() >= 3 ? call.x.size() - 2 : 0;
  if (spatial < 1 || spatial > 3 || call.w.size() != call.x.size() ||
      call.result.size() != call.x.size() || !convTypes(call.dtype))
    return std::nullopt;
  ConvPlan p;
  p.channelsLast = params.conv.channelsLast;
  auto channelsFirst = [&](const ref::Shape &dims) {
    return p.channelsLast ? rotateChannels(dims, /*toFirst=*/true) : dims;
  };
  auto x = dnnDims(channelsFirst(call.x)), w = dnnDims(channelsFirst(call.w)),
       y = dnnDims(channelsFirst(call.result));
  auto pads = symmetricPads(params.conv.pads, spatial);
  auto strides = perSpatial(params.conv.strides, spatial, 1);
  auto dilations = perSpatial(params.conv.dilations, spatial, 1);
  if (!x || !w || !y || !pads || !strides || !dilations || params.conv.group < 1 ||
      params.conv.group > std::numeric_limits<int>::max())
    return std::nullopt;
  p.x = std::move(*x), p.w = std::move(*w), p.y = std::move(*y);
  p.pads = *pads, p.strides = *strides, p.dilations = *dilations;
  p.groups = static_cast<int>(params.conv.group);
  // cuDNN's output dims: 1 + (in + 2 pad - dilation (k - 1) - 1) / stride. The
  // plan's must be those (they are for symmetric pads).
  for (size_t i = 2; i < p.x.size(); ++i) {
    size_t s = i - 2;
    int64_t extent = int64_t(p.x[i]) + 2 * p.pads[s] - int64_t(p.dilations[s]) * (p.w[i] - 1) - 1;
    if (extent < 0 || 1 + extent / p.strides[s] != p.y[i])
      return std::nullopt;
  }
  if (ref::numElements(call.x) == 0 || ref::numElements(call.result) == 0)
    return std::nullopt;
  return p;
}

/// A pool's cuDNN problem, dims channels first as ConvPlan's.
struct PoolPlan {
  std::vector<int> x, y, window, pads, strides;
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  bool channelsLast = false;
};

std::optional<PoolPlan> planPool(const ref::PoolParams &params, const DnnCall &call) {
  PoolPlan p;
  p.channelsLast = params.channelsLast;
  ref::Shape inDims = p.channelsLast ? rotateChannels(call.x, /*toFirst=*/true) : call.x,
             outDims = p.channelsLast ? rotateChannels(call.result, /*toFirst=*/true) : call.result;
  // The rule kiln-form-kernels applied at compile time, now on every dim.
  kiln::ops::PoolQuery q;
  q.lp = params.kind == ref::PoolKind::lp;
  q.cudnnType = dnnTypes(call.dtype).has_value();
  q.kernel = params.kernel, q.strides = params.strides, q.pads = params.pads;
  q.dilations = params.dilations;
  q.ceilMode = params.ceilMode;
  q.in.assign(inDims.begin(), inDims.end());
  q.out.assign(outDims.begin(), outDims.end());
  if (!kiln::ops::cudnnPools(q))
    return std::nullopt;
  size_t spatial = call.x.size() - 2;
  auto x = dnnDims(inDims), y = dnnDims(outDims);
  auto window = perSpatial(params.kernel, spatial, 1);
  auto pads = symmetricPads(params.pads, spatial);
  auto strides = perSpatial(params.strides, spatial, 1);
  if (!x || !y || !window || !pads || !strides)
    return std::nullopt;
  p.x = *x, p.y = *y, p.window = *window, p.pads = *pads, p.strides = *strides;
  p.mode = params.kind == ref::PoolKind::max ? CUDNN_POOLING_MAX
           : params.countIncludePad          ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                             : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  if (ref::numElements(call.x) == 0 || ref::numElements(call.result) == 0)
    return std::nullopt;
  return p;
}

/// alpha = 1 and beta = 0 in the type cuDNN reads them as.
struct Scales {
  float one32 = 1, zero32 = 0;
  double one64 = 1, zero64 = 0;
  const void *one(bool wide) const { return wide ? static_cast<const void *>(&one64) : &one32; }
  const void *zero(bool wide) const { return wide ? static_cast<const void *>(&zero64) : &zero32; }
};

/// Descriptors freed at the end of a call.
struct DnnDescriptors {
  const Cudnn &dnn;
  std::vector<cudnnTensorDescriptor_t> tensors;
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t activation = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;
  /// Tensors of this call are stored channels last (a channels_last conv).
  bool channelsLast = false;
  ~DnnDescriptors() {
    for (cudnnTensorDescriptor_t t : tensors)
      dnn.cudnnDestroyTensorDescriptor(t);
    if (filter)
      dnn.cudnnDestroyFilterDescriptor(filter);
    if (conv)
      dnn.cudnnDestroyConvolutionDescriptor(conv);
    if (activation)
      dnn.cudnnDestroyActivationDescriptor(activation);
    if (pool)
      dnn.cudnnDestroyPoolingDescriptor(pool);
  }
  /// A refusal (CUDNN_STATUS_NOT_SUPPORTED) is UNIMPLEMENTED: the executor
  /// then runs the step on the host; any other failure is INTERNAL.
  absl::Status check(const char *call, cudnnStatus_t s) const {
    if (s == CUDNN_STATUS_SUCCESS)
      return absl::OkStatus();
    return s == CUDNN_STATUS_NOT_SUPPORTED ? absl::UnimplementedError(dnn.describe(call, s))
                                           : absl::InternalError(dnn.describe(call, s));
  }
  /// The filter and convolution descriptors of `plan`.
  absl::Status convolution(const DnnTypes &types, const ConvPlan &plan) {
    int nb = static_cast<int>(plan.x.size());
    for (absl::Status s :
         {check("cudnnCreateFilterDescriptor", dnn.cudnnCreateFilterDescriptor(&filter)),
          check("cudnnSetFilterNdDescriptor",
                dnn.cudnnSetFilterNdDescriptor(
                    filter, types.data, plan.channelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                    nb, plan.w.data())),
          check("cudnnCreateConvolutionDescriptor", dnn.cudnnCreateConvolutionDescriptor(&conv)),
          // ONNX Conv is a cross-correlation (the filter is not flipped).
          check("cudnnSetConvolutionNdDescriptor",
                dnn.cudnnSetConvolutionNdDescriptor(conv, nb - 2, plan.pads.data(),
                                                    plan.strides.data(), plan.dilations.data(),
                                                    CUDNN_CROSS_CORRELATION, types.compute)),
          check("cudnnSetConvolutionGroupCount", dnn.cudnnSetConvolutionGroupCount(conv, plan.groups)),
          check("cudnnSetConvolutionMathType", dnn.cudnnSetConvolutionMathType(conv, types.math))})
      if (!s.ok())
        return s;
    return absl::OkStatus();
  }
  /// `plan`'s filter and convolution, and with `hasBias` the descriptor of a
  /// bias over the channels of `result` (else null).
  absl::StatusOr<cudnnTensorDescriptor_t> convolutionAndBias(const DnnTypes &types,
                                                             const ConvPlan &plan, bool hasBias,
                                                             const std::vector<int> &result) {
    if (absl::Status s = convolution(types, plan); !s.ok())
      return s;
    if (!hasBias)
      return static_cast<cudnnTensorDescriptor_t>(nullptr);
    return channels(types.data, result);
  }
  /// A [1, C, 1, ...] descriptor for a bias over the channels of `dims`.
  absl::StatusOr<cudnnTensorDescriptor_t> channels(cudnnDataType_t type, const std::vector<int> &dims) {
    std::vector<int> biasDims(dims.size(), 1);
    biasDims[1] = dims[1];
    return tensor(type, biasDims);
  }
  /// The descriptors of a call's input x and result y.
  absl::Status inputOutput(cudnnDataType_t type, cudnnDataType_t resultType,
                           const std::vector<int> &xDims, const std::vector<int> &yDims,
                           cudnnTensorDescriptor_t &x, cudnnTensorDescriptor_t &y) {
    absl::StatusOr<cudnnTensorDescriptor_t> xd = tensor(type, xDims);
    if (!xd.ok())
      return xd.status();
    absl::StatusOr<cudnnTensorDescriptor_t> yd = tensor(resultType, yDims);
    if (!yd.ok())
      return yd.status();
    x = *xd;
    y = *yd;
    return absl::OkStatus();
  }
  absl::StatusOr<cudnnTensorDescriptor_t> tensor(cudnnDataType_t type, const std::vector<int> &dims) {
    cudnnTensorDescriptor_t t = nullptr;
    if (absl::Status s = check("cudnnCreateTensorDescriptor", dnn.cudnnCreateTensorDescriptor(&t));
        !s.ok())
      return s;
    tensors.push_back(t);
    std::vector<int> strides = channelsLast ? channelsLastStrides(dims) : packedStrides(dims);
    if (absl::Status s = check("cudnnSetTensorNdDescriptor",
                               dnn.cudnnSetTensorNdDescriptor(t, type, static_cast<int>(dims.size()),
                                                              dims.data(), strides.data()));
        !s.ok())
      return s;
    return t;
  }
};

} // namespace

DnnRunner::~DnnRunner() {
  std::lock_guard<std::mutex> lock(mutex_);
  graphPlans_.clear(); // their descriptors before the handle
  if (handle_)
    dnn_->cudnnDestroy(handle_);
}

absl::StatusOr<std::unique_ptr<DnnRunner>> DnnRunner::create() {
  absl::StatusOr<const Cudnn *> dnn = Cudnn::get();
  if (!dnn.ok())
    return dnn.status();
  std::unique_ptr<DnnRunner> runner(new DnnRunner());
  runner->dnn_ = *dnn;
  std::lock_guard<std::mutex> lock(runner->mutex_);
  if (cudnnStatus_t s = (*dnn)->cudnnCreate(&runner->handle_); s != CUDNN_STATUS_SUCCESS) {
    runner->handle_ = nullptr;
    return absl::UnavailableError((*dnn)->describe("cudnnCreate", s));
  }
  return runner;
}

bool DnnRunner::supportsConv(const ConvStepParams &params, const DnnCall &call) {
  return planConv(params, call).has_value();
}

namespace {
/// What the algorithm caches key a convolution problem by.
std::string convKey(ref::DType dtype, bool allowTf32, const ConvPlan &plan) {
  return absl::StrCat(static_cast<int>(dtype), allowTf32 ? "tf32|" : "|", absl::StrJoin(plan.x, ","), "|",
                      absl::StrJoin(plan.w, ","), "|", absl::StrJoin(plan.pads, ","), "|",
                      absl::StrJoin(plan.strides, ","), "|", absl::StrJoin(plan.dilations, ","),
                      "|", plan.groups, plan.channelsLast ? "|nhwc" : "");
}

/// The first of the heuristic's `returned` results (forward or backward-data
/// perf structs, fastest first) that succeeded and fits in `workspaceBytes`.
template <typename Perf>
absl::StatusOr<const Perf *> firstFitting(const Perf *perf, int returned, size_t workspaceBytes,
                                          const char *what, const std::string &key) {
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= workspaceBytes)
      return &perf[i];
  return absl::UnimplementedError(absl::StrCat("cuDNN has no algorithm for this ", what,
                                               " within ", workspaceBytes,
                                               " bytes of workspace (", key, ")"));
}

/// A ConvTranspose as the conv whose data gradient it is: that conv reads the
/// ConvTranspose's result (as its x) and makes its input (as its y).
std::optional<ConvPlan> planConvTranspose(const ConvStepParams &params, const DnnCall &call) {
  // cuDNN's int8 configurations are forward convolutions only.
  if (!dnnTypes(call.dtype))
    return std::nullopt;
  DnnCall forward = call;
  forward.x = call.result;
  forward.result = call.x;
  return planConv(params, forward);
}
} // namespace

bool DnnRunner::supportsConvTranspose(const ConvStepParams &params, const DnnCall &call) {
  return planConvTranspose(params, call).has_value();
}

absl::Status DnnRunner::convTranspose(const ConvStepParams &params, const DnnCall &call,
                                      CUstream stream, WorkspaceFn workspaceFor) const {
  std::optional<ConvPlan> plan = planConvTranspose(params, call);
  if (!plan)
    return absl::InternalError("the conv transpose does not map onto cuDNN");
  DnnTypes types = *dnnTypes(call.dtype, params.allowTf32);
  const Cudnn &dnn = *dnn_;
  DnnDescriptors d{dnn};
  // dx: the ConvTranspose's result (the forward conv's x); dy: its input.
  cudnnTensorDescriptor_t dx = nullptr, dy = nullptr;
  if (absl::Status s = d.inputOutput(types.data, types.data, plan->x, plan->y, dx, dy); !s.ok())
    return s;
  absl::StatusOr<cudnnTensorDescriptor_t> bias =
      d.convolutionAndBias(types, *plan, params.hasBias, plan->x);
  if (!bias.ok())
    return bias.status();
  Scales scales;
  const void *one = scales.one(types.wideScale), *zero = scales.zero(types.wideScale);
  std::string key = convKey(call.dtype, params.allowTf32, *plan);
  std::lock_guard<std::mutex> lock(mutex_);
  if (absl::Status s = d.check("cudnnSetStream", dnn.cudnnSetStream(handle_, stream)); !s.ok())
    return s;
  auto found = backwardAlgorithms_.find(key);
  if (found == backwardAlgorithms_.end()) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[8];
    int returned = 0;
    if (absl::Status s = d.check("cudnnGetConvolutionBackwardDataAlgorithm_v7",
                                 dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(
                                     handle_, d.filter, dy, d.conv, dx, 8, &returned, perf));
        !s.ok())
      return s;
    absl::StatusOr<const cudnnConvolutionBwdDataAlgoPerf_t *> chosen =
        firstFitting(perf, returned, kMaxWorkspaceBytes, "conv transpose", key);
    if (!chosen.ok())
      return chosen.status();
    found = backwardAlgorithms_.emplace(key, Chosen<cudnnConvolutionBwdDataAlgo_t>{(*chosen)->algo,
                                                                                   (*chosen)->memory})
                .first;
  }
  absl::StatusOr<std::pair<uintptr_t, size_t>> space = workspaceFor(found->second.workspaceBytes);
  if (!space.ok())
    return space.status();
  auto [workspace, workspaceBytes] = *space;
  auto pointer = [](uintptr_t a) { return reinterpret_cast<void *>(a); };
  if (absl::Status s = d.check("cudnnConvolutionBackwardData",
                               dnn.cudnnConvolutionBackwardData(
                                   handle_, one, d.filter, pointer(call.wAddress), dy,
                                   pointer(call.xAddress), d.conv, found->second.algo,
                                   pointer(workspace), workspaceBytes, zero, dx,
                                   pointer(call.resultAddress)));
      !s.ok())
    return s;
  if (params.hasBias)
    return d.check("cudnnAddTensor",
                   dnn.cudnnAddTensor(handle_, one, *bias, pointer(call.biasAddress), one, dx,
                                      pointer(call.resultAddress)));
  return absl::OkStatus();
}

namespace {
int64_t valueOr(const std::vector<int64_t> &v, size_t i, int64_t otherwise) {
  return i < v.size() ? v[i] : otherwise;
}
} // namespace

std::optional<ref::Shape> DnnRunner::convResultShape(const ConvStepParams &params, bool transpose,
                                                     const ref::Shape &xIn, const ref::Shape &wIn) {
  if (xIn.size() < 3 || wIn.size() != xIn.size())
    return std::nullopt;
  if (params.conv.channelsLast && !transpose) {
    ConvStepParams first = params;
    first.conv.channelsLast = false;
    std::optional<ref::Shape> y =
        convResultShape(first, false, rotateChannels(xIn, true), rotateChannels(wIn, true));
    return y ? std::optional<ref::Shape>(rotateChannels(*y, false)) : std::nullopt;
  }
  const ref::Shape &x = xIn, &w = wIn;
  const ref::ConvParams &p = params.conv;
  size_t spatial = x.size() - 2;
  ref::Shape result = {x[0], transpose ? w[1] * p.group : w[0]};
  for (size_t d = 0; d < spatial; ++d) {
    int64_t stride = valueOr(p.strides, d, 1), dilation = valueOr(p.dilations, d, 1);
    int64_t pads = valueOr(p.pads, d, 0) + valueOr(p.pads, d + spatial, 0);
    int64_t extent = dilation * (w[2 + d] - 1) + 1;
    int64_t out = transpose ? stride * (x[2 + d] - 1) + valueOr(p.outputPadding, d, 0) + extent - pads
                            : x[2 + d] + pads - extent;
    if (out < 0 || stride <= 0)
      return std::nullopt;
    result.push_back(transpose ? out : out / stride + 1);
  }
  return result;
}

std::optional<ref::Shape> DnnRunner::poolResultShape(const ref::PoolParams &params,
                                                     const ref::Shape &xIn) {
  if (xIn.size() < 3 || params.kernel.size() != xIn.size() - 2)
    return std::nullopt;
  if (params.channelsLast) {
    ref::PoolParams first = params;
    first.channelsLast = false;
    std::optional<ref::Shape> y = poolResultShape(first, rotateChannels(xIn, /*toFirst=*/true));
    return y ? std::optional<ref::Shape>(rotateChannels(*y, /*toFirst=*/false)) : std::nullopt;
  }
  const ref::Shape &x = xIn;
  size_t spatial = x.size() - 2;
  ref::Shape result = {x[0], x[1]};
  for (size_t d = 0; d < spatial; ++d) {
    int64_t stride = valueOr(params.strides, d, 1), begin = valueOr(params.pads, d, 0);
    int64_t extent = valueOr(params.dilations, d, 1) * (params.kernel[d] - 1) + 1;
    int64_t span = x[2 + d] + begin + valueOr(params.pads, d + spatial, 0) - extent;
    if (span < 0 || stride <= 0)
      return std::nullopt;
    int64_t out = (params.ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
    // ceil_mode drops a last window that would start inside the end padding.
    if (params.ceilMode && (out - 1) * stride >= x[2 + d] + begin)
      --out;
    result.push_back(out);
  }
  return result;
}

bool DnnRunner::supportsPool(const ref::PoolParams &params, const DnnCall &call) {
  return planPool(params, call).has_value();
}

absl::Status DnnRunner::conv(const ConvStepParams &params, const DnnCall &call, CUstream stream,
                             WorkspaceFn workspaceFor) const {
  std::optional<ConvPlan> plan = planConv(params, call);
  if (!plan)
    return absl::InternalError("the conv does not map onto cuDNN");
  DnnTypes types = *convTypes(call.dtype, params.allowTf32);
  const Cudnn &dnn = *dnn_;
  DnnDescriptors d{dnn};
  d.channelsLast = plan->channelsLast;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  if (absl::Status s = d.inputOutput(types.data, types.result, plan->x, plan->y, x, y); !s.ok())
    return s;
  absl::StatusOr<cudnnTensorDescriptor_t> bias =
      d.convolutionAndBias(types, *plan, params.hasBias, plan->y);
  if (!bias.ok())
    return bias.status();
  if (params.relu)
    for (absl::Status s :
         {d.check("cudnnCreateActivationDescriptor", dnn.cudnnCreateActivationDescriptor(&d.activation)),
          d.check("cudnnSetActivationDescriptor",
                  dnn.cudnnSetActivationDescriptor(d.activation, CUDNN_ACTIVATION_RELU,
                                                   CUDNN_PROPAGATE_NAN, 0.0))})
      if (!s.ok())
        return s;

  Scales scales;
  const void *one = scales.one(types.wideScale), *zero = scales.zero(types.wideScale);
  std::string key = convKey(call.dtype, params.allowTf32, *plan);
  std::lock_guard<std::mutex> lock(mutex_);
  if (absl::Status s = d.check("cudnnSetStream", dnn.cudnnSetStream(handle_, stream)); !s.ok())
    return s;
  auto found = algorithms_.find(key);
  if (found == algorithms_.end()) {
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int returned = 0;
    if (absl::Status s = d.check("cudnnGetConvolutionForwardAlgorithm_v7",
                                 dnn.cudnnGetConvolutionForwardAlgorithm_v7(
                                     handle_, x, d.filter, d.conv, y, 8, &returned, perf));
        !s.ok())
      return s;
    absl::StatusOr<const cudnnConvolutionFwdAlgoPerf_t *> chosen =
        firstFitting(perf, returned, kMaxWorkspaceBytes, "conv", key);
    if (!chosen.ok())
      return chosen.status();
    found = algorithms_.emplace(key, Chosen<cudnnConvolutionFwdAlgo_t>{(*chosen)->algo, (*chosen)->memory})
                .first;
  }
  absl::StatusOr<std::pair<uintptr_t, size_t>> space = workspaceFor(found->second.workspaceBytes);
  if (!space.ok())
    return space.status();
  auto [workspace, workspaceBytes] = *space;
  auto pointer = [](uintptr_t a) { return reinterpret_cast<void *>(a); };
  // With a bias and a ReLU, one fused call: relu(conv + residual + bias),
  // the residual z weighted 1 (or y itself weighted 0 when there is none).
  if (params.hasBias && params.relu) {
    uintptr_t z = params.hasResidual ? call.residualAddress : call.resultAddress;
    return d.check("cudnnConvolutionBiasActivationForward",
                   dnn.cudnnConvolutionBiasActivationForward(
                       handle_, one, x, pointer(call.xAddress), d.filter, pointer(call.wAddress),
                       d.conv, found->second.algo, pointer(workspace), workspaceBytes,
                       params.hasResidual ? one : zero, y, pointer(z), *bias,
                       pointer(call.biasAddress), d.activation, y, pointer(call.resultAddress)));
  }
  if (absl::Status s = d.check("cudnnConvolutionForward",
                               dnn.cudnnConvolutionForward(
                                   handle_, one, x, pointer(call.xAddress), d.filter,
                                   pointer(call.wAddress), d.conv, found->second.algo,
                                   pointer(workspace), workspaceBytes, zero, y,
                                   pointer(call.resultAddress)));
      !s.ok())
    return s;
  if (params.hasBias)
    if (absl::Status s = d.check("cudnnAddTensor",
                                 dnn.cudnnAddTensor(handle_, one, *bias, pointer(call.biasAddress),
                                                    one, y, pointer(call.resultAddress)));
        !s.ok())
      return s;
  if (params.hasResidual)
    if (absl::Status s = d.check("cudnnAddTensor",
                                 dnn.cudnnAddTensor(handle_, one, y, pointer(call.residualAddress),
                                                    one, y, pointer(call.resultAddress)));
        !s.ok())
      return s;
  if (params.relu)
    return d.check("cudnnActivationForward",
                   dnn.cudnnActivationForward(handle_, d.activation, one, y,
                                              pointer(call.resultAddress), zero, y,
                                              pointer(call.resultAddress)));
  return absl::OkStatus();
}

absl::Status DnnRunner::pool(const ref::PoolParams &params, const DnnCall &call,
                             CUstream stream) const {
  std::optional<PoolPlan> plan = planPool(params, call);
  if (!plan)
    return absl::InternalError("the pool does not map onto cuDNN");
  DnnTypes types = *dnnTypes(call.dtype);
  const Cudnn &dnn = *dnn_;
  DnnDescriptors d{dnn};
  d.channelsLast = plan->channelsLast;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  if (absl::Status s = d.inputOutput(types.data, types.data, plan->x, plan->y, x, y); !s.ok())
    return s;
  int spatial = static_cast<int>(plan->window.size());
  for (absl::Status s :
       {d.check("cudnnCreatePoolingDescriptor", dnn.cudnnCreatePoolingDescriptor(&d.pool)),
        d.check("cudnnSetPoolingNdDescriptor",
                dnn.cudnnSetPoolingNdDescriptor(d.pool, plan->mode, CUDNN_PROPAGATE_NAN, spatial,
                                                plan->window.data(), plan->pads.data(),
                                                plan->strides.data()))})
    if (!s.ok())
      return s;
  Scales scales;
  const void *one = scales.one(types.wideScale), *zero = scales.zero(types.wideScale);
  std::lock_guard<std::mutex> lock(mutex_);
  if (absl::Status s = d.check("cudnnSetStream", dnn.cudnnSetStream(handle_, stream)); !s.ok())
    return s;
  return d.check("cudnnPoolingForward",
                 dnn.cudnnPoolingForward(handle_, d.pool, one, x,
                                         reinterpret_cast<const void *>(call.xAddress), zero, y,
                                         reinterpret_cast<void *>(call.resultAddress)));
}

} // namespace kiln::rt
