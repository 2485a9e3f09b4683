//===- FakeCudnn.cpp - cuDNN's conv, bias, ReLU and pooling, on the host ---===//
//
// libcudnn.so.9 beside the fake driver (its work on the driver's streams, its
// operands' bytes through fake::hostView):
// the entry points the runtime resolves (runtime/src/cuda/CudnnSymbols.inc),
// implementing what cuDNN documents for them, so a wrong descriptor fails the
// fake-CUDA runs:
//
// - tensors: N-d descriptors with explicit strides (3 to 8 dims; NHWC data is
//   NCHW dims with NHWC strides); filters: N-d dims [K, C / groups, spatial...]
//   stored in CUDNN_TENSOR_NCHW order or CUDNN_TENSOR_NHWC ([K, spatial..., C]);
// - cudnnConvolutionForward: y = alpha * conv(x, w) + beta * y, with the conv
//   descriptor's pads (symmetric, per spatial dim), strides, dilations, group
//   count and mode (CUDNN_CROSS_CORRELATION; CUDNN_CONVOLUTION flips the
//   filter); y's dims must be 1 + (in + 2 pad - dilation (k - 1) - 1) / stride,
//   C = filter C * groups, K divisible by groups, else CUDNN_STATUS_BAD_PARAM;
// - cudnnConvolutionBiasActivationForward: y = relu(alpha1 * conv(x, w) +
//   alpha2 * z + bias), the bias [1, K, 1...], z of y's dims (and may be y);
//   IDENTITY activation refused;
// - cudnnConvolutionBackwardData: dx = alpha * the data gradient of that conv
//   (x = dx, y = dy) applied to dy + beta * dx (what ConvTranspose computes);
// - cudnnAddTensor: C = alpha * A + beta * C, A broadcast along its dims of 1;
// - cudnnActivationForward: RELU (y = alpha * max(x, 0) + beta * y; x may be y);
// - cudnnPoolingForward: MAX (padding never wins), AVERAGE counting the
//   padding (divide by the window) or not, y's dims by the floor formula;
// - data types FLOAT, DOUBLE, HALF and BFLOAT16 (one per call); alpha and beta
//   are doubles for DOUBLE data, floats otherwise;
// - int8 convolutions (cudnnConvolutionForward) as cuDNN's supported
//   configurations INT8_CONFIG and INT8_EXT_CONFIG have them: x and w INT8,
//   the conv descriptor's compute type INT32, y INT8 or FLOAT; x stored NHWC
//   (C innermost) and w in CUDNN_TENSOR_NHWC format, input and output
//   channels multiples of 4, 2-D, one group (what this double implements),
//   algorithm IMPLICIT_PRECOMP_GEMM only (the heuristic offers no other);
//   anything else CUDNN_STATUS_NOT_SUPPORTED;
// - math types: unless a conv descriptor says CUDNN_FMA_MATH, FLOAT operands
//   of its products (x and w, or dy and w) are rounded to TF32 first, as
//   tensor cores may read them on a real GPU; with FMA math they are exact.
// - algorithms and workspace: the heuristics offer, fastest first, one that
//   needs workspace (IMPLICIT_PRECOMP_GEMM forward, ALGO_1 backward data: an
//   index per filter tap per output position, 4 bytes each) and one that
//   needs none (IMPLICIT_GEMM, ALGO_0); a call given less workspace than its
//   algorithm needs is CUDNN_STATUS_BAD_PARAM. KILN_FAKE_CUDNN_LOG names a
//   file that gets a line per convolution call, "conv|conv-transpose <algo>
//   workspace <given> needs <bytes>".
// Anything else is CUDNN_STATUS_NOT_SUPPORTED. Sums are taken in double.
//
//===----------------------------------------------------------------------===//

#include "FakeElements.h"

#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

namespace {

struct Tensor {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::vector<int> dims, strides;
};
struct Filter {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::vector<int> dims;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
};
struct Conv {
  std::vector<int> pads, strides, dilations;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

/// Whether a conv's fp32 operands go through TF32 tensor ops: cuDNN may use
/// them unless the math type is CUDNN_FMA_MATH, so the double always does.
bool roundsToTf32(const Conv &c) { return c.math != CUDNN_FMA_MATH; }
struct Activation {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
};
struct Pool {
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  std::vector<int> window, pads, strides;
};
struct Context {
  void *stream = nullptr; ///< cudnnSetStream's: where calls run (fake::submit)
};

template <typename T, typename D> T *as(D d) { return reinterpret_cast<T *>(d); }
template <typename D, typename T> cudnnStatus_t create(D *out) {
  if (!out)
    return CUDNN_STATUS_BAD_PARAM;
  *out = reinterpret_cast<D>(new T());
  return CUDNN_STATUS_SUCCESS;
}

fake::Element element(cudnnDataType_t t) {
  switch (t) {
  case CUDNN_DATA_FLOAT: return fake::Element::f32;
  case CUDNN_DATA_DOUBLE: return fake::Element::f64;
  case CUDNN_DATA_HALF: return fake::Element::f16;
  case CUDNN_DATA_BFLOAT16: return fake::Element::bf16;
  case CUDNN_DATA_INT8: return fake::Element::i8;
  default: return fake::Element::unknown;
  }
}

double scale(cudnnDataType_t data, const void *p) {
  return data == CUDNN_DATA_DOUBLE ? *static_cast<const double *>(p) : *static_cast<const float *>(p);
}

/// The element offset of multi-index `index` in `t`.
int64_t offset(const Tensor &t, const std::vector<int> &index) {
  int64_t o = 0;
  for (size_t d = 0; d < index.size(); ++d)
    o += int64_t(index[d]) * t.strides[d];
  return o;
}

int64_t count(const std::vector<int> &dims) {
  int64_t n = 1;
  for (int d : dims)
    n *= d;
  return n;
}

/// Calls `fn(index)` for every multi-index of `dims`, row-major.
template <typename Fn> void forEach(const std::vector<int> &dims, Fn fn) {
  std::vector<int> index(dims.size(), 0);
  for (int64_t i = 0, n = count(dims); i < n; ++i) {
    fn(index);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d])
        break;
      index[d] = 0;
    }
  }
}

/// Whether the descriptors ask for an int8 convolution (INT8 x and w).
bool isInt8(const Tensor &x, const Filter &w) {
  return x.type == CUDNN_DATA_INT8 || w.type == CUDNN_DATA_INT8;
}

/// cuDNN's int8 configurations (INT8_CONFIG, INT8_EXT_CONFIG) with the
/// rules this double implements: INT8 x and w, INT32 compute, INT8 or FLOAT
/// y, NHWC x and w, channels multiples of 4, 2-D, one group.
bool int8Supported(const Tensor &x, const Filter &w, const Conv &c, const Tensor &y) {
  return x.type == CUDNN_DATA_INT8 && w.type == CUDNN_DATA_INT8 && c.compute == CUDNN_DATA_INT32 &&
         (y.type == CUDNN_DATA_INT8 || y.type == CUDNN_DATA_FLOAT) && x.dims.size() == 4 &&
         x.strides[1] == 1 && w.format == CUDNN_TENSOR_NHWC && x.dims[1] % 4 == 0 &&
         w.dims[0] % 4 == 0 && c.groups == 1;
}

bool validConv(const Tensor &x, const Filter &w, const Conv &c, const Tensor &y) {
  size_t nb = x.dims.size();
  bool int8 = isInt8(x, w);
  if (nb < 3 || w.dims.size() != nb || y.dims.size() != nb || c.pads.size() != nb - 2 ||
      x.type != w.type || (!int8 && x.type != y.type) || element(x.type) == fake::Element::unknown)
    return false;
  if (c.groups < 1 || x.dims[1] != w.dims[1] * c.groups || w.dims[0] % c.groups != 0 ||
      y.dims[0] != x.dims[0] || y.dims[1] != w.dims[0])
    return false;
  for (size_t s = 0; s < nb - 2; ++s) {
    int64_t extent = int64_t(x.dims[s + 2]) + 2 * c.pads[s] - int64_t(c.dilations[s]) * (w.dims[s + 2] - 1) - 1;
    if (extent < 0 || 1 + extent / c.strides[s] != y.dims[s + 2])
      return false;
  }
  return true;
}

/// Row-major strides of packed `dims`.
std::vector<int64_t> packed(const std::vector<int> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

/// The element strides of a filter's dims [K, C, spatial...] in its format:
/// packed NCHW, or NHWC (C innermost, then the spatial dims, K outermost).
std::vector<int64_t> filterStrides(const Filter &w) {
  if (w.format == CUDNN_TENSOR_NCHW)
    return packed(w.dims);
  std::vector<int64_t> strides(w.dims.size(), 1);
  int64_t step = w.dims[1];
  for (size_t i = w.dims.size() - 1; i >= 2; --i) {
    strides[i] = step;
    step *= w.dims[i];
  }
  strides[0] = step;
  return strides;
}

/// Calls fn(yi, yFlat, xi, xFlat, wFlat) for every product the conv of x by w
/// into y (valid descriptors) takes: y's and x's multi-indices and packed
/// row-major positions, and the weight's offset in the filter (its format's).
template <typename Fn>
void forEachTap(const Tensor &xt, const Filter &wf, const Conv &c, const Tensor &yt, Fn fn) {
  size_t spatial = xt.dims.size() - 2;
  int perGroupIn = wf.dims[1], perGroupOut = wf.dims[0] / c.groups;
  std::vector<int> kernel(wf.dims.begin() + 2, wf.dims.end());
  std::vector<int64_t> wStrides = filterStrides(wf), xPacked = packed(xt.dims);
  int64_t yFlat = 0;
  forEach(yt.dims, [&](const std::vector<int> &yi) {
    int k = yi[1], group = k / perGroupOut;
    std::vector<int> xi(xt.dims.size());
    xi[0] = yi[0];
    for (int ci = 0; ci < perGroupIn; ++ci) {
      xi[1] = group * perGroupIn + ci;
      forEach(kernel, [&](const std::vector<int> &ki) {
        for (size_t s = 0; s < spatial; ++s) {
          int tap = c.mode == CUDNN_CONVOLUTION ? kernel[s] - 1 - ki[s] : ki[s];
          xi[s + 2] = yi[s + 2] * c.strides[s] - c.pads[s] + tap * c.dilations[s];
          if (xi[s + 2] < 0 || xi[s + 2] >= xt.dims[s + 2])
            return;
        }
        int64_t wo = k * wStrides[0] + ci * wStrides[1], xFlat = 0;
        for (size_t s = 0; s < spatial; ++s)
          wo += ki[s] * wStrides[s + 2];
        for (size_t d = 0; d < xi.size(); ++d)
          xFlat += xi[d] * xPacked[d];
        fn(yi, yFlat, xi, xFlat, wo);
      });
    }
    ++yFlat;
  });
}

/// Stores alpha * acc + beta * (the old value) into every element of `t` at
/// `base`, `acc` in row-major order; beta = 0 does not read the old value.
void storeScaled(const Tensor &t, void *base, const std::vector<double> &acc, double alpha,
                 double beta) {
  fake::Element e = element(t.type);
  int64_t flat = 0;
  forEach(t.dims, [&](const std::vector<int> &i) {
    int64_t o = offset(t, i);
    fake::store(e, base, o, alpha * acc[flat++] + (beta != 0 ? beta * fake::load(e, base, o) : 0.0));
  });
}

} // namespace

const char *cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
  case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS (fake cuDNN)";
  case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM (fake cuDNN)";
  case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED (fake cuDNN)";
  default: return "cuDNN error (fake cuDNN)";
  }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) { return create<cudnnHandle_t, Context>(handle); }
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  delete as<Context>(handle);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle)
    return CUDNN_STATUS_BAD_PARAM;
  as<Context>(handle)->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

/// Where `handle`'s calls run. Calls copy their descriptors (a captured call
/// runs after they may be gone) and read alpha and beta at the call.
void *streamOf(cudnnHandle_t handle) { return as<Context>(handle)->stream; }

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) {
  return create<cudnnTensorDescriptor_t, Tensor>(d);
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  delete as<Tensor>(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d, cudnnDataType_t type, int nbDims,
                                         const int dims[], const int strides[]) {
  if (!d || nbDims < 3 || nbDims > 8 || !dims || !strides)
    return CUDNN_STATUS_BAD_PARAM;
  if (element(type) == fake::Element::unknown)
    return CUDNN_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < nbDims; ++i)
    if (dims[i] < 1 || strides[i] < 1)
      return CUDNN_STATUS_BAD_PARAM;
  Tensor *t = as<Tensor>(d);
  t->type = type;
  t->dims.assign(dims, dims + nbDims);
  t->strides.assign(strides, strides + nbDims);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) {
  return create<cudnnFilterDescriptor_t, Filter>(d);
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  delete as<Filter>(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int nbDims, const int dims[]) {
  if (!d || nbDims < 3 || nbDims > 8 || !dims)
    return CUDNN_STATUS_BAD_PARAM;
  if ((format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) ||
      element(type) == fake::Element::unknown)
    return CUDNN_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < nbDims; ++i)
    if (dims[i] < 1)
      return CUDNN_STATUS_BAD_PARAM;
  as<Filter>(d)->type = type;
  as<Filter>(d)->dims.assign(dims, dims + nbDims);
  as<Filter>(d)->format = format;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d) {
  return create<cudnnConvolutionDescriptor_t, Conv>(d);
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  delete as<Conv>(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int length,
                                              const int pads[], const int strides[],
                                              const int dilations[], cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  if (!d || length < 1 || length > 6 || !pads || !strides || !dilations)
    return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < length; ++i)
    if (pads[i] < 0 || strides[i] < 1 || dilations[i] < 1)
      return CUDNN_STATUS_BAD_PARAM;
  Conv *c = as<Conv>(d);
  c->pads.assign(pads, pads + length);
  c->strides.assign(strides, strides + length);
  c->dilations.assign(dilations, dilations + length);
  c->mode = mode;
  c->compute = compute;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (!d || groups < 1)
    return CUDNN_STATUS_BAD_PARAM;
  as<Conv>(d)->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  if (!d)
    return CUDNN_STATUS_BAD_PARAM;
  if (math != CUDNN_DEFAULT_MATH && math != CUDNN_TENSOR_OP_MATH && math != CUDNN_FMA_MATH &&
      math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
    return CUDNN_STATUS_BAD_PARAM;
  as<Conv>(d)->math = math;
  return CUDNN_STATUS_SUCCESS;
}

/// The workspace the algorithms that need one take for a conv of filter `wf`
/// and (forward) output `yt`: a 4-byte index per filter tap (C / groups x
/// the window) per output position (N x y's spatial dims).
static size_t tapWorkspace(const Filter &wf, const Tensor &yt) {
  int64_t taps = count(wf.dims) / std::max(wf.dims[0], 1);
  int64_t positions = count(yt.dims) / std::max(yt.dims[1], 1);
  return static_cast<size_t>(taps * positions) * 4;
}

/// Whether `given` bytes at `workspace` are enough for `algo` (forward: those
/// but IMPLICIT_GEMM need tapWorkspace), with a log line when asked for.
static bool workspaceSuffices(const char *call, int algo, bool needsWorkspace, const void *workspace,
                       size_t given, const Filter &wf, const Tensor &yt) {
  size_t need = needsWorkspace ? tapWorkspace(wf, yt) : 0;
  if (const char *log = std::getenv("KILN_FAKE_CUDNN_LOG"))
    if (FILE *f = std::fopen(log, "a")) {
      std::fprintf(f, "%s %d workspace %zu needs %zu\n", call, algo, given, need);
      std::fclose(f);
    }
  return given >= need && (need == 0 || workspace);
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
                                                     const cudnnFilterDescriptor_t w,
                                                     const cudnnConvolutionDescriptor_t c,
                                                     const cudnnTensorDescriptor_t y, int requested,
                                                     int *returned, cudnnConvolutionFwdAlgoPerf_t *perf) {
  if (!handle || !x || !w || !c || !y || requested < 1 || !returned || !perf)
    return CUDNN_STATUS_BAD_PARAM;
  if (!validConv(*as<Tensor>(x), *as<Filter>(w), *as<Conv>(c), *as<Tensor>(y)))
    return CUDNN_STATUS_BAD_PARAM;
  if (isInt8(*as<Tensor>(x), *as<Filter>(w))) {
    // int8: IMPLICIT_PRECOMP_GEMM, the one algorithm of its configurations.
    if (!int8Supported(*as<Tensor>(x), *as<Filter>(w), *as<Conv>(c), *as<Tensor>(y)))
      return CUDNN_STATUS_NOT_SUPPORTED;
    *returned = 1;
    std::memset(perf, 0, sizeof(*perf));
    perf[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    perf[0].status = CUDNN_STATUS_SUCCESS;
    perf[0].memory = tapWorkspace(*as<Filter>(w), *as<Tensor>(y));
    return CUDNN_STATUS_SUCCESS;
  }
  *returned = std::min(requested, 2);
  std::memset(perf, 0, sizeof(*perf) * static_cast<size_t>(*returned));
  perf[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  perf[0].status = CUDNN_STATUS_SUCCESS;
  perf[0].memory = tapWorkspace(*as<Filter>(w), *as<Tensor>(y));
  if (*returned > 1) {
    perf[1].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    perf[1].status = CUDNN_STATUS_SUCCESS;
    perf[1].memory = 0;
  }
  return CUDNN_STATUS_SUCCESS;
}

/// conv(x, w) at every position of y, summed in double (fp32 operands rounded
/// to TF32 unless the descriptor asks for FMA math). The products are those
/// forEachTap visits, in its order (so the sums are the same to the bit), over
/// operands converted to double once: this double's conv was most of the
/// fake-CUDA time of the CNN tests when it converted each operand per tap.
std::vector<double> convolve(const Tensor &xt, const void *x, const Filter &wf, const void *w,
                             const Conv &c, const Tensor &yt) {
  fake::Element e = element(xt.type);
  bool tf32 = roundsToTf32(c);
  std::vector<double> xs(count(xt.dims)), ws(count(wf.dims));
  int64_t flat = 0;
  forEach(xt.dims, [&](const std::vector<int> &i) { xs[flat++] = fake::loadOperand(e, x, offset(xt, i), tf32); });
  for (int64_t i = 0; i < int64_t(ws.size()); ++i) // the filter is packed in its format
    ws[i] = fake::loadOperand(e, w, i, tf32);

  size_t spatial = xt.dims.size() - 2;
  int perGroupIn = wf.dims[1], perGroupOut = wf.dims[0] / c.groups;
  std::vector<int> kernel(wf.dims.begin() + 2, wf.dims.end());
  std::vector<int64_t> wStrides = filterStrides(wf), xPacked = packed(xt.dims);
  // Per filter tap (row-major over the kernel): the shift it adds to each
  // spatial input index and its offset in the filter.
  int64_t taps = count(kernel);
  std::vector<int64_t> shift(taps * spatial), tapOffset(taps, 0);
  {
    int64_t t = 0;
    forEach(kernel, [&](const std::vector<int> &ki) {
      for (size_t s = 0; s < spatial; ++s) {
        int tap = c.mode == CUDNN_CONVOLUTION ? kernel[s] - 1 - ki[s] : ki[s];
        shift[t * spatial + s] = int64_t(tap) * c.dilations[s] - c.pads[s];
        tapOffset[t] += ki[s] * wStrides[s + 2];
      }
      ++t;
    });
  }
  std::vector<double> sums(count(yt.dims), 0.0);
  int64_t yFlat = 0;
  forEach(yt.dims, [&](const std::vector<int> &yi) {
    int k = yi[1], group = k / perGroupOut;
    double sum = 0.0;
    for (int ci = 0; ci < perGroupIn; ++ci) {
      int64_t xBase = yi[0] * xPacked[0] + int64_t(group * perGroupIn + ci) * xPacked[1];
      int64_t wBase = k * wStrides[0] + ci * wStrides[1];
      for (int64_t t = 0; t < taps; ++t) {
        int64_t xo = xBase;
        bool inside = true;
        for (size_t s = 0; s < spatial && inside; ++s) {
          int64_t v = int64_t(yi[s + 2]) * c.strides[s] + shift[t * spatial + s];
          inside = v >= 0 && v < xt.dims[s + 2];
          xo += v * xPacked[s + 2];
        }
        if (inside)
          sum += xs[xo] * ws[wBase + tapOffset[t]];
      }
    }
    sums[yFlat++] = sum;
  });
  return sums;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha,
                                      const cudnnTensorDescriptor_t xDesc, const void *x,
                                      const cudnnFilterDescriptor_t wDesc, const void *w,
                                      const cudnnConvolutionDescriptor_t cDesc, cudnnConvolutionFwdAlgo_t algo,
                                      void *workspace, size_t workspaceBytes, const void *beta,
                                      const cudnnTensorDescriptor_t yDesc, void *y) {
  if (!handle || !alpha || !beta || !xDesc || !x || !wDesc || !w || !cDesc || !yDesc || !y)
    return CUDNN_STATUS_BAD_PARAM;
  const Tensor xt = *as<Tensor>(xDesc), yt = *as<Tensor>(yDesc);
  const Filter wf = *as<Filter>(wDesc);
  const Conv c = *as<Conv>(cDesc);
  if (!validConv(xt, wf, c, yt))
    return CUDNN_STATUS_BAD_PARAM;
  if (isInt8(xt, wf) &&
      (!int8Supported(xt, wf, c, yt) || algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (!workspaceSuffices("conv", algo, algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, workspace,
                         workspaceBytes, wf, yt))
    return CUDNN_STATUS_BAD_PARAM;
  double a = scale(xt.type, alpha), b = scale(xt.type, beta);
  fake::submit(streamOf(handle), [=] {
    const void *hx = fake::hostView(x), *hw = fake::hostView(w);
    void *hy = fake::hostView(y);
    if (!hx || !hw || !hy)
      return;
    std::vector<double> sums = convolve(xt, hx, wf, hw, c, yt);
    // All of y is computed before it is stored: beta reads the old y.
    storeScaled(yt, hy, sums, a, b);
  });
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t aDesc,
                             const void *A, const void *beta, const cudnnTensorDescriptor_t cDesc, void *C) {
  if (!handle || !alpha || !beta || !aDesc || !A || !cDesc || !C)
    return CUDNN_STATUS_BAD_PARAM;
  const Tensor at = *as<Tensor>(aDesc), ct = *as<Tensor>(cDesc);
  if (at.dims.size() != ct.dims.size() || at.type != ct.type)
    return CUDNN_STATUS_BAD_PARAM;
  for (size_t d = 0; d < at.dims.size(); ++d)
    if (at.dims[d] != 1 && at.dims[d] != ct.dims[d])
      return CUDNN_STATUS_BAD_PARAM;
  fake::Element e = element(ct.type);
  double a = scale(ct.type, alpha), b = scale(ct.type, beta);
  fake::submit(streamOf(handle), [=] {
    const void *hA = fake::hostView(A);
    void *hC = fake::hostView(C);
    if (!hA || !hC)
      return;
    forEach(ct.dims, [&](const std::vector<int> &ci) {
      std::vector<int> ai(ci);
      for (size_t d = 0; d < ai.size(); ++d)
        if (at.dims[d] == 1)
          ai[d] = 0;
      int64_t co = offset(ct, ci);
      fake::store(e, hC, co, a * fake::load(e, hA, offset(at, ai)) + b * fake::load(e, hC, co));
    });
  });
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *d) {
  return create<cudnnActivationDescriptor_t, Activation>(d);
}
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
  delete as<Activation>(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d, cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t, double) {
  if (!d)
    return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_ACTIVATION_RELU)
    return CUDNN_STATUS_NOT_SUPPORTED;
  as<Activation>(d)->mode = mode;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle, cudnnActivationDescriptor_t act,
                                     const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
                                     const void *beta, const cudnnTensorDescriptor_t yDesc, void *y) {
  if (!handle || !act || !alpha || !beta || !xDesc || !x || !yDesc || !y)
    return CUDNN_STATUS_BAD_PARAM;
  const Tensor xt = *as<Tensor>(xDesc), yt = *as<Tensor>(yDesc);
  if (xt.dims != yt.dims || xt.type != yt.type)
    return CUDNN_STATUS_BAD_PARAM;
  fake::Element e = element(xt.type);
  double a = scale(xt.type, alpha), b = scale(xt.type, beta);
  fake::submit(streamOf(handle), [=] {
    const void *hx = fake::hostView(x);
    void *hy = fake::hostView(y);
    if (!hx || !hy)
      return;
    forEach(xt.dims, [&](const std::vector<int> &i) {
      double v = fake::load(e, hx, offset(xt, i));
      double r = std::isnan(v) ? v : std::max(v, 0.0);
      int64_t yo = offset(yt, i);
      fake::store(e, hy, yo, a * r + (b != 0 ? b * fake::load(e, hy, yo) : 0.0));
    });
  });
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t *d) {
  return create<cudnnPoolingDescriptor_t, Pool>(d);
}
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) {
  delete as<Pool>(d);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t d, const cudnnPoolingMode_t mode,
                                          const cudnnNanPropagation_t, int nbDims, const int window[],
                                          const int pads[], const int strides[]) {
  if (!d || nbDims < 1 || nbDims > 6 || !window || !pads || !strides)
    return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_POOLING_MAX && mode != CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING &&
      mode != CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING)
    return CUDNN_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < nbDims; ++i)
    if (window[i] < 1 || pads[i] < 0 || strides[i] < 1)
      return CUDNN_STATUS_BAD_PARAM;
  Pool *p = as<Pool>(d);
  p->mode = mode;
  p->window.assign(window, window + nbDims);
  p->pads.assign(pads, pads + nbDims);
  p->strides.assign(strides, strides + nbDims);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t pDesc,
                                  const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
                                  const void *beta, const cudnnTensorDescriptor_t yDesc, void *y) {
  if (!handle || !pDesc || !alpha || !beta || !xDesc || !x || !yDesc || !y)
    return CUDNN_STATUS_BAD_PARAM;
  const Pool p = *as<Pool>(pDesc);
  const Tensor xt = *as<Tensor>(xDesc), yt = *as<Tensor>(yDesc);
  size_t spatial = p.window.size();
  if (xt.dims.size() != spatial + 2 || yt.dims.size() != xt.dims.size() || xt.type != yt.type ||
      yt.dims[0] != xt.dims[0] || yt.dims[1] != xt.dims[1])
    return CUDNN_STATUS_BAD_PARAM;
  for (size_t s = 0; s < spatial; ++s) {
    int64_t extent = int64_t(xt.dims[s + 2]) + 2 * p.pads[s] - p.window[s];
    if (extent < 0 || 1 + extent / p.strides[s] != yt.dims[s + 2])
      return CUDNN_STATUS_BAD_PARAM;
  }
  fake::Element e = element(xt.type);
  double a = scale(xt.type, alpha), b = scale(xt.type, beta);
  fake::submit(streamOf(handle), [=] {
    const void *hx = fake::hostView(x);
    void *hy = fake::hostView(y);
    if (!hx || !hy)
      return;
    forEach(yt.dims, [&](const std::vector<int> &yi) {
      std::vector<int> xi(yi);
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      bool nan = false;
      int64_t inside = 0;
      forEach(p.window, [&](const std::vector<int> &wi) {
        for (size_t s = 0; s < spatial; ++s) {
          xi[s + 2] = yi[s + 2] * p.strides[s] - p.pads[s] + wi[s];
          if (xi[s + 2] < 0 || xi[s + 2] >= xt.dims[s + 2])
            return;
        }
        double v = fake::load(e, hx, offset(xt, xi));
        nan = nan || std::isnan(v);
        best = std::max(best, v);
        sum += v;
        ++inside;
      });
      double r = p.mode == CUDNN_POOLING_MAX ? (nan ? std::nan("") : best)
                 : p.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                     ? sum / double(count(p.window))
                     : sum / double(std::max<int64_t>(inside, 1));
      int64_t yo = offset(yt, yi);
      fake::store(e, hy, yo, a * r + (b != 0 ? b * fake::load(e, hy, yo) : 0.0));
    });
  });
  return CUDNN_STATUS_SUCCESS;
}

/// y = relu(alpha1 * conv(x, w) + alpha2 * z + bias), cuDNN's fused
/// conv-bias-activation: the activation must be RELU (IDENTITY needs the
/// IMPLICIT_PRECOMP_GEMM algorithm, which this double never offers, so it is
/// refused), the bias one value per output channel ([1, K, 1...]), z of y's
/// dims and type. z may be y: all of it is read before y is stored.
cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void *alpha1, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t cDesc,
    cudnnConvolutionFwdAlgo_t algo, void *workspace, size_t workspaceBytes, const void *alpha2,
    const cudnnTensorDescriptor_t zDesc, const void *z, const cudnnTensorDescriptor_t biasDesc,
    const void *bias, const cudnnActivationDescriptor_t act, const cudnnTensorDescriptor_t yDesc,
    void *y) {
  if (!handle || !alpha1 || !alpha2 || !xDesc || !x || !wDesc || !w || !cDesc || !zDesc || !z ||
      !biasDesc || !bias || !act || !yDesc || !y)
    return CUDNN_STATUS_BAD_PARAM;
  const Tensor xt = *as<Tensor>(xDesc), yt = *as<Tensor>(yDesc), zt = *as<Tensor>(zDesc),
               bt = *as<Tensor>(biasDesc);
  const Filter wf = *as<Filter>(wDesc);
  const Conv c = *as<Conv>(cDesc);
  // int8 with a bias and an activation: not a configuration this double
  // implements.
  if (isInt8(xt, wf))
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (!validConv(xt, wf, c, yt) || zt.dims != yt.dims || zt.type != yt.type)
    return CUDNN_STATUS_BAD_PARAM;
  if (as<Activation>(act)->mode != CUDNN_ACTIVATION_RELU)
    return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ? CUDNN_STATUS_NOT_SUPPORTED
                                                                   : CUDNN_STATUS_BAD_PARAM;
  if (bt.dims.size() != yt.dims.size() || bt.dims[1] != yt.dims[1] || bt.type != yt.type)
    return CUDNN_STATUS_BAD_PARAM;
  for (size_t d = 0; d < bt.dims.size(); ++d)
    if (d != 1 && bt.dims[d] != 1)
      return CUDNN_STATUS_BAD_PARAM;
  if (!workspaceSuffices("conv", algo, algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, workspace,
                         workspaceBytes, wf, yt))
    return CUDNN_STATUS_BAD_PARAM;
  fake::Element e = element(xt.type);
  double a1 = scale(xt.type, alpha1), a2 = scale(xt.type, alpha2);
  fake::submit(streamOf(handle), [=] {
    const void *hx = fake::hostView(x), *hw = fake::hostView(w), *hz = fake::hostView(z),
               *hbias = fake::hostView(bias);
    void *hy = fake::hostView(y);
    if (!hx || !hw || !hz || !hbias || !hy)
      return;
    std::vector<double> sums = convolve(xt, hx, wf, hw, c, yt);
    int64_t flat = 0;
    forEach(yt.dims, [&](const std::vector<int> &i) {
      std::vector<int> channel(i.size(), 0);
      channel[1] = i[1];
      double v = a1 * sums[flat] + (a2 != 0 ? a2 * fake::load(e, hz, offset(zt, i)) : 0.0) +
                 fake::load(e, hbias, offset(bt, channel));
      sums[flat++] = std::isnan(v) ? v : std::max(v, 0.0);
    });
    flat = 0;
    forEach(yt.dims,
            [&](const std::vector<int> &i) { fake::store(e, hy, offset(yt, i), sums[flat++]); });
  });
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
                                                          const cudnnTensorDescriptor_t dy,
                                                          const cudnnConvolutionDescriptor_t c,
                                                          const cudnnTensorDescriptor_t dx, int requested,
                                                          int *returned, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
  if (!handle || !w || !dy || !c || !dx || requested < 1 || !returned || !perf)
    return CUDNN_STATUS_BAD_PARAM;
  // The forward conv these are the gradient of: dx is its x, dy its y.
  if (!validConv(*as<Tensor>(dx), *as<Filter>(w), *as<Conv>(c), *as<Tensor>(dy)))
    return CUDNN_STATUS_BAD_PARAM;
  // The forward conv's output is dy: positions are dy's.
  *returned = std::min(requested, 2);
  std::memset(perf, 0, sizeof(*perf) * static_cast<size_t>(*returned));
  perf[0].algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  perf[0].status = CUDNN_STATUS_SUCCESS;
  perf[0].memory = tapWorkspace(*as<Filter>(w), *as<Tensor>(dy));
  if (*returned > 1) {
    perf[1].algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
    perf[1].status = CUDNN_STATUS_SUCCESS;
    perf[1].memory = 0;
  }
  return CUDNN_STATUS_SUCCESS;
}

// dx = alpha * (the gradient of conv(dx) with respect to dx, applied to dy)
// + beta * dx: every dy element spreads over the inputs its window read.
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha,
                                           const cudnnFilterDescriptor_t wDesc, const void *w,
                                           const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                           const cudnnConvolutionDescriptor_t cDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *workspace,
                                           size_t workspaceBytes, const void *beta,
                                           const cudnnTensorDescriptor_t dxDesc, void *dx) {
  if (!handle || !alpha || !beta || !wDesc || !w || !dyDesc || !dy || !cDesc || !dxDesc || !dx)
    return CUDNN_STATUS_BAD_PARAM;
  const Tensor xt = *as<Tensor>(dxDesc), yt = *as<Tensor>(dyDesc);
  const Filter wf = *as<Filter>(wDesc);
  const Conv c = *as<Conv>(cDesc);
  if (isInt8(xt, wf))
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (!validConv(xt, wf, c, yt))
    return CUDNN_STATUS_BAD_PARAM;
  if (!workspaceSuffices("conv-transpose", algo, algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, workspace,
                         workspaceBytes, wf, yt))
    return CUDNN_STATUS_BAD_PARAM;
  fake::Element e = element(xt.type);
  bool tf32 = roundsToTf32(c);
  double a = scale(xt.type, alpha), b = scale(xt.type, beta);
  fake::submit(streamOf(handle), [=] {
    const void *hdy = fake::hostView(dy), *hw = fake::hostView(w);
    void *hdx = fake::hostView(dx);
    if (!hdy || !hw || !hdx)
      return;
    std::vector<double> grad(count(xt.dims), 0.0);
    forEachTap(xt, wf, c, yt,
               [&](const std::vector<int> &yi, int64_t, const std::vector<int> &, int64_t xFlat,
                   int64_t wo) {
                 grad[xFlat] += fake::loadOperand(e, hdy, offset(yt, yi), tf32) *
                                fake::loadOperand(e, hw, wo, tf32);
               });
    storeScaled(xt, hdx, grad, a, b);
  });
  return CUDNN_STATUS_SUCCESS;
}
