//===- Composite.cpp - matmul(_nbits), conv, conv_transpose, pool, softmax, norm -===//

#include "Common.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::ref {

using namespace detail;

absl::StatusOr<Tensor> matmulNBits(const Tensor &x, const Tensor &weights, const Tensor &scales,
                                   const Tensor *zeroPoints, const Tensor *bias, int64_t bits,
                                   int64_t blockSize, bool glu) {
  const int64_t k = x.rank() == 0 ? -1 : x.dim(x.rank() - 1);
  const int64_t blocks = blockSize > 0 && k >= 0 ? (k + blockSize - 1) / blockSize : -1;
  const int64_t n = weights.rank() == 3 ? weights.dim(0) : -1;
  const int64_t zpBytes = (blocks * bits + 7) / 8;
  bool packedZp = zeroPoints && zeroPoints->dtype() == DType::u8;
  if ((bits != 2 && bits != 4 && bits != 8) || blockSize < 16 || blockSize > (1 << 20) ||
      blocks < 0 || n < 0 || weights.dtype() != DType::u8 ||
      weights.dim(1) != blocks || weights.dim(2) != blockSize * bits / 8 ||
      scales.shape() != Shape{n, blocks} ||
      (zeroPoints && zeroPoints->shape() != Shape{n, packedZp ? zpBytes : blocks}))
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul_nbits: input ", x.describe(), ", weights ", weights.describe(), ", scales ",
        scales.describe(), zeroPoints ? ", zero points " + zeroPoints->describe() : "",
        " do not fit ", bits, " bits in blocks of ", blockSize));
  Shape shape = x.shape();
  shape.back() = n;
  const bool biasRow = bias && bias->shape() == Shape{n};
  if (bias && !biasRow && (glu || bias->shape() != shape))
    return absl::InvalidArgumentError(absl::StrCat("matmul_nbits: bias ", bias->describe(),
                                                   " is neither [", n, "] nor the result's shape"));
  if (glu && n % 16 != 0)
    return absl::InvalidArgumentError(
        absl::StrCat("matmul_nbits: glu needs columns in groups of 16, not ", n));
  const int64_t rows = k == 0 ? numElements(shape) / std::max<int64_t>(n, 1) : x.numel() / k;
  // The products (bias added) in double; stored as they are, or gated.
  std::vector<double> sums(static_cast<size_t>(rows * n));
  Shape outShape = shape;
  if (glu)
    outShape.back() = n / 2;
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(x.dtype(), outShape));
  const uint8_t *codes = weights.bytes();
  const int64_t blob = blockSize * bits / 8, mask = (1 << bits) - 1;
  // Column n's weights, dequantized once.
  std::vector<double> w(static_cast<size_t>(k));
  for (int64_t col = 0; col < n; ++col) {
    for (int64_t kk = 0; kk < k; ++kk) {
      int64_t j = kk / blockSize, within = kk % blockSize;
      int64_t bit = within * bits;
      int64_t q = (codes[(col * blocks + j) * blob + bit / 8] >> (bit % 8)) & mask;
      double z = static_cast<double>(1 << (bits - 1));
      if (packedZp) {
        int64_t zbit = j * bits;
        z = static_cast<double>((zeroPoints->bytes()[col * zpBytes + zbit / 8] >> (zbit % 8)) & mask);
      } else if (zeroPoints) {
        z = zeroPoints->getF(col * blocks + j);
      }
      w[kk] = (static_cast<double>(q) - z) * scales.getF(col * blocks + j);
    }
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        acc += x.getF(r * k + kk) * w[kk];
      if (bias)
        acc += bias->getF(biasRow ? col : r * n + col);
      sums[r * n + col] = acc;
    }
  }
  if (!glu) {
    for (int64_t i = 0; i < rows * n; ++i)
      out.setF(i, sums[i]);
    return out;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n / 2; ++j) {
      double gate = sums[r * n + 16 * (j / 8) + j % 8], up = sums[r * n + 16 * (j / 8) + 8 + j % 8];
      out.setF(r * (n / 2) + j, gate / (1.0 + std::exp(-gate)) * up);
    }
  return out;
}

absl::StatusOr<Tensor> matmul(const Tensor &aIn, const Tensor &bIn) {
  // numpy matmul: 1-D operands are promoted to matrices and the promoted dim dropped.
  if (aIn.rank() == 0 || bIn.rank() == 0)
    return absl::InvalidArgumentError(absl::StrCat("matmul: ", aIn.describe(), " times ",
                                                   bIn.describe(), ": scalars do not multiply"));
  bool aVector = aIn.rank() == 1, bVector = bIn.rank() == 1;
  Tensor a = aVector ? aIn.reshaped({1, aIn.dim(0)}) : aIn;
  Tensor b = bVector ? bIn.reshaped({bIn.dim(0), 1}) : bIn;
  int64_t m = a.dim(a.rank() - 2), k = a.dim(a.rank() - 1), k2 = b.dim(b.rank() - 2),
          n = b.dim(b.rank() - 1);
  if (k != k2)
    return absl::InvalidArgumentError(absl::StrCat("matmul: ", a.describe(), " times ",
                                                   b.describe(), ": inner dims differ"));
  Shape aBatch(a.shape().begin(), a.shape().end() - 2), bBatch(b.shape().begin(), b.shape().end() - 2);
  absl::StatusOr<Shape> batch = broadcastShapes(aBatch, bBatch);
  if (!batch.ok())
    return batch.status();
  std::vector<int64_t> sa = broadcastStrides(aBatch, batch->size()),
                       sb = broadcastStrides(bBatch, batch->size()), index;
  Shape shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  if (a.dtype() != b.dtype())
    return absl::InvalidArgumentError(absl::StrCat("matmul: ", a.describe(), " times ",
                                                   b.describe(), ": element types differ"));
  // 8-bit integers multiply into int32 (kiln.matmul's rule, cuBLASLt's int8
  // matmul), float8 into f32 (cuBLASLt's FP8 matmul accumulates in fp32);
  // every other type into itself.
  bool int8 = a.dtype() == DType::i8 || a.dtype() == DType::u8;
  bool float8 = a.dtype() == DType::f8e4m3fn || a.dtype() == DType::f8e5m2;
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(
      out, Tensor::zeros(int8 ? DType::i32 : float8 ? DType::f32 : a.dtype(), shape));
  bool isF = isFloat(a.dtype());
  // The loops go over the result's matrices: an empty one ([2^33, 0, 16]) is
  // no work, however many of them the batch holds.
  int64_t batches = m == 0 || n == 0 ? 0 : numElements(*batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    unravel(bi, *batch, index);
    int64_t offA = 0, offB = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      offA += index[d] * sa[d];
      offB += index[d] * sb[d];
    }
    offA *= m * k;
    offB *= k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t dst = (bi * m + i) * n + j;
        if (isF) {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += a.getF(offA + i * k + p) * b.getF(offB + p * n + j);
          out.setF(dst, acc);
        } else {
          uint64_t acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += uint64_t(a.getI(offA + i * k + p)) * uint64_t(b.getI(offB + p * n + j));
          out.setI(dst, int64_t(acc));
        }
      }
  }
  if (aVector || bVector) {
    Shape finalShape = *batch;
    if (!aVector)
      finalShape.push_back(m);
    if (!bVector)
      finalShape.push_back(n);
    return out.reshaped(finalShape);
  }
  return out;
}

namespace {
/// Calls f(position) for every multi-index of `shape`.
template <typename F> void forEachIndex(const Shape &shape, F f) {
  std::vector<int64_t> index;
  int64_t n = numElements(shape);
  for (int64_t i = 0; i < n; ++i) {
    unravel(i, shape, index);
    f(i, index);
  }
}
} // namespace

namespace {
/// Window parameters as the IR verifies them (the interpreter's callers) and as
/// an artifact may not have them (the runtime's): k spatial dims, k strides and
/// dilations >= 1, 2k pads >= 0, all at most 2^20 (far past any real model) so
/// that the size arithmetic of the kernels cannot overflow.
absl::Status checkWindow(const char *op, const Tensor &x, const std::vector<int64_t> &strides,
                         const std::vector<int64_t> &dilations, const std::vector<int64_t> &pads,
                         const std::vector<int64_t> *kernel = nullptr,
                         const std::vector<int64_t> *outputPadding = nullptr) {
  constexpr int64_t kLimit = int64_t(1) << 20;
  int64_t k = x.rank() - 2;
  auto bad = [&](const char *what) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ", what, " do not fit an input of rank ", x.rank()));
  };
  if (k < 1)
    return bad("spatial dims");
  if (static_cast<int64_t>(strides.size()) != k || static_cast<int64_t>(dilations.size()) != k ||
      static_cast<int64_t>(pads.size()) != 2 * k)
    return bad("the strides, dilations or pads");
  for (int64_t d = 0; d < k; ++d)
    if (strides[d] < 1 || strides[d] > kLimit || dilations[d] < 1 || dilations[d] > kLimit)
      return bad("the strides or dilations");
  for (int64_t v : pads)
    if (v < 0 || v > kLimit)
      return bad("the pads");
  if (kernel && (static_cast<int64_t>(kernel->size()) != k ||
                 std::any_of(kernel->begin(), kernel->end(),
                             [&](int64_t v) { return v < 1 || v > kLimit; })))
    return bad("the kernel shape");
  if (outputPadding && !outputPadding->empty() &&
      (static_cast<int64_t>(outputPadding->size()) != k ||
       std::any_of(outputPadding->begin(), outputPadding->end(),
                   [&](int64_t v) { return v < 0 || v > kLimit; })))
    return bad("the output padding");
  return absl::OkStatus();
}
} // namespace

namespace {
/// The permutation from [N, D1..Dk, C] to [N, C, D1..Dk] for a tensor of `rank`.
std::vector<int64_t> channelsFirstOrder(int64_t rank) {
  std::vector<int64_t> order = {0, rank - 1};
  for (int64_t d = 1; d + 1 < rank; ++d)
    order.push_back(d);
  return order;
}
/// Its inverse: [N, C, D1..Dk] to [N, D1..Dk, C].
std::vector<int64_t> channelsLastOrder(int64_t rank) {
  std::vector<int64_t> order = {0};
  for (int64_t d = 2; d < rank; ++d)
    order.push_back(d);
  order.push_back(1);
  return order;
}
} // namespace

absl::StatusOr<Tensor> conv(const Tensor &x, const Tensor &w, const Tensor *bias,
                            const ConvParams &p) {
  if (p.channelsLast) {
    // The same conv on channels-first views, its result moved back.
    if (x.rank() < 3 || w.rank() != x.rank())
      return absl::InvalidArgumentError(absl::StrCat("conv: input ", x.describe(), " and filter ",
                                                     w.describe(), " are not channels-last operands"));
    ConvParams first = p;
    first.channelsLast = false;
    absl::StatusOr<Tensor> y =
        conv(transpose(x, channelsFirstOrder(x.rank())), transpose(w, channelsFirstOrder(x.rank())),
             bias, first);
    if (!y.ok())
      return y.status();
    return transpose(*y, channelsLastOrder(x.rank()));
  }
  if (absl::Status s = checkWindow("conv", x, p.strides, p.dilations, p.pads); !s.ok())
    return s;
  if (p.group < 1 || p.group > (int64_t(1) << 20) || w.rank() != x.rank() ||
      (bias && bias->numel() != w.dim(0)))
    return absl::InvalidArgumentError(absl::StrCat("conv: input ", x.describe(), ", filter ",
                                                   w.describe(), " and group ", p.group,
                                                   " do not match"));
  int64_t k = x.rank() - 2, n = x.dim(0), c = x.dim(1), m = w.dim(0), g = p.group;
  if (w.rank() != x.rank() || c % g || m % g || w.dim(1) * g != c)
    return absl::InvalidArgumentError(absl::StrCat("conv: input ", x.describe(), " and filter ",
                                                   w.describe(), " do not match group ", g));
  Shape out = {n, m}, window(w.shape().begin() + 2, w.shape().end());
  for (int64_t d = 0; d < k; ++d) {
    int64_t span = x.dim(2 + d) + p.pads[d] + p.pads[d + k] - p.dilations[d] * (window[d] - 1) - 1;
    if (span < 0)
      return absl::InvalidArgumentError("conv: the filter is larger than the padded input");
    out.push_back(span / p.strides[d] + 1);
  }
  // 8-bit integers convolve into f32 (kiln.conv's rule, cuDNN's int8
  // convolution); floats into their own type.
  bool int8 = x.dtype() == DType::i8 || x.dtype() == DType::u8;
  Tensor y;
  KILN_REF_ASSIGN_OR_RETURN(y, Tensor::zeros(int8 ? DType::f32 : x.dtype(), out));
  if (y.numel() == 0)
    return y; // no work, whatever the batch or channel counts
  std::vector<int64_t> xs = stridesOf(x.shape()), ws = stridesOf(w.shape());
  int64_t cPerGroup = c / g, mPerGroup = m / g;
  Shape spatial(out.begin() + 2, out.end());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc) {
      int64_t group = oc / mPerGroup;
      forEachIndex(spatial, [&](int64_t flat, const std::vector<int64_t> &o) {
        double acc = bias ? bias->getF(oc) : 0;
        for (int64_t ic = 0; ic < cPerGroup; ++ic)
          forEachIndex(window, [&](int64_t, const std::vector<int64_t> &kk) {
            int64_t xOff = b * xs[0] + (group * cPerGroup + ic) * xs[1];
            int64_t wOff = oc * ws[0] + ic * ws[1];
            for (int64_t d = 0; d < k; ++d) {
              int64_t pos = o[d] * p.strides[d] - p.pads[d] + kk[d] * p.dilations[d];
              if (pos < 0 || pos >= x.dim(2 + d))
                return;
              xOff += pos * xs[2 + d];
              wOff += kk[d] * ws[2 + d];
            }
            acc += x.getF(xOff) * w.getF(wOff);
          });
        y.setF((b * m + oc) * numElements(spatial) + flat, acc);
      });
    }
  return y;
}

absl::StatusOr<Tensor> convTranspose(const Tensor &x, const Tensor &w, const Tensor *bias,
                                     const ConvParams &p) {
  if (absl::Status s = checkWindow("conv_transpose", x, p.strides, p.dilations, p.pads, nullptr,
                                   &p.outputPadding);
      !s.ok())
    return s;
  if (p.group < 1 || p.group > (int64_t(1) << 20) || w.rank() != x.rank() ||
      (bias && bias->numel() != w.dim(1) * p.group))
    return absl::InvalidArgumentError(absl::StrCat("conv_transpose: input ", x.describe(),
                                                   ", filter ", w.describe(), " and group ",
                                                   p.group, " do not match"));
  int64_t k = x.rank() - 2, n = x.dim(0), c = x.dim(1), g = p.group;
  int64_t mPerGroup = w.dim(1), m = mPerGroup * g, cPerGroup = c / g;
  if (w.rank() != x.rank() || w.dim(0) != c || c % g)
    return absl::InvalidArgumentError(absl::StrCat("conv_transpose: input ", x.describe(),
                                                   " and filter ", w.describe(),
                                                   " do not match group ", g));
  Shape outputShape = {n, m};
  for (int64_t d = 0; d < k; ++d) {
    int64_t size = p.strides[d] * (x.dim(2 + d) - 1) +
                   (p.outputPadding.empty() ? 0 : p.outputPadding[d]) +
                   p.dilations[d] * (w.dim(2 + d) - 1) + 1 - p.pads[d] - p.pads[d + k];
    if (size < 0)
      return absl::InvalidArgumentError("conv_transpose: the pads crop more than the output");
    outputShape.push_back(size);
  }
  Tensor y;
  KILN_REF_ASSIGN_OR_RETURN(y, Tensor::zeros(x.dtype(), outputShape));
  std::vector<double> acc(y.numel(), 0);
  std::vector<int64_t> xs = stridesOf(x.shape()), ws = stridesOf(w.shape()),
                       ys = stridesOf(outputShape);
  Shape inSpatial(x.shape().begin() + 2, x.shape().end()), window(w.shape().begin() + 2, w.shape().end());
  // An empty input adds nothing (the result is the bias), whatever its batch
  // or channel counts: the loops go over its elements.
  for (int64_t b = 0; b < (x.numel() == 0 ? 0 : n); ++b)
    for (int64_t ic = 0; ic < c; ++ic) {
      int64_t group = ic / cPerGroup;
      forEachIndex(inSpatial, [&](int64_t flat, const std::vector<int64_t> &i) {
        double xv = x.getF(b * xs[0] + ic * xs[1] + flat);
        forEachIndex(window, [&](int64_t, const std::vector<int64_t> &kk) {
          int64_t yOff = 0, wOff = ic * ws[0];
          for (int64_t d = 0; d < k; ++d) {
            int64_t pos = i[d] * p.strides[d] - p.pads[d] + kk[d] * p.dilations[d];
            if (pos < 0 || pos >= outputShape[2 + d])
              return;
            yOff += pos * ys[2 + d];
            wOff += kk[d] * ws[2 + d];
          }
          for (int64_t oc = 0; oc < mPerGroup; ++oc)
            acc[b * ys[0] + (group * mPerGroup + oc) * ys[1] + yOff] +=
                xv * w.getF(wOff + oc * ws[1]);
        });
      });
    }
  for (int64_t i = 0; i < y.numel(); ++i) {
    double v = acc[i];
    if (bias)
      v += bias->getF((i / ys[1]) % m);
    y.setF(i, v);
  }
  return y;
}

absl::StatusOr<Tensor> pool(const Tensor &x, const PoolParams &p) {
  if (p.channelsLast) {
    if (x.rank() < 3)
      return absl::InvalidArgumentError("pool: input " + x.describe() + " is not channels last");
    PoolParams first = p;
    first.channelsLast = false;
    absl::StatusOr<Tensor> y = pool(transpose(x, channelsFirstOrder(x.rank())), first);
    if (!y.ok())
      return y.status();
    return transpose(*y, channelsLastOrder(x.rank()));
  }
  if (absl::Status s = checkWindow("pool", x, p.strides, p.dilations, p.pads, &p.kernel); !s.ok())
    return s;
  int64_t k = x.rank() - 2;
  Shape outputShape = {x.dim(0), x.dim(1)};
  for (int64_t d = 0; d < k; ++d) {
    int64_t in = x.dim(2 + d), extent = p.dilations[d] * (p.kernel[d] - 1) + 1;
    int64_t span = in + p.pads[d] + p.pads[d + k] - extent;
    if (span < 0)
      return absl::InvalidArgumentError("pool: the window is larger than the padded input");
    int64_t out = (p.ceilMode ? (span + p.strides[d] - 1) / p.strides[d] : span / p.strides[d]) + 1;
    // ceil_mode drops a last window that would start inside the end padding.
    if (p.ceilMode && (out - 1) * p.strides[d] >= in + p.pads[d])
      --out;
    outputShape.push_back(out);
  }
  Tensor y;
  KILN_REF_ASSIGN_OR_RETURN(y, Tensor::zeros(x.dtype(), outputShape));
  if (y.numel() == 0)
    return y; // no work, whatever the batch or channel counts
  std::vector<int64_t> xs = stridesOf(x.shape());
  Shape spatial(outputShape.begin() + 2, outputShape.end());
  int64_t spatialCount = numElements(spatial);
  for (int64_t nc = 0; nc < x.dim(0) * x.dim(1); ++nc)
    forEachIndex(spatial, [&](int64_t flat, const std::vector<int64_t> &o) {
      double acc = p.kind == PoolKind::max ? -INFINITY : 0;
      int64_t valid = 0, padded = 0;
      bool nan = false;
      forEachIndex(p.kernel, [&](int64_t, const std::vector<int64_t> &kk) {
        int64_t off = nc * xs[1];
        bool inside = true, inPadding = true;
        for (int64_t d = 0; d < k; ++d) {
          int64_t pos = o[d] * p.strides[d] - p.pads[d] + kk[d] * p.dilations[d];
          if (pos < 0 || pos >= x.dim(2 + d))
            inside = false;
          if (pos < -p.pads[d] || pos >= x.dim(2 + d) + p.pads[d + k])
            inPadding = false;
          off += pos * xs[2 + d];
        }
        if (inPadding)
          ++padded;
        if (!inside)
          return;
        ++valid;
        double v = x.getF(off);
        switch (p.kind) {
        case PoolKind::max:
          nan |= std::isnan(v);
          acc = std::max(acc, v);
          break;
        case PoolKind::avg:
          acc += v;
          break;
        case PoolKind::lp:
          acc += std::pow(std::fabs(v), double(p.p));
          break;
        }
      });
      double r = acc;
      if (p.kind == PoolKind::max && nan)
        r = NAN;
      if (p.kind == PoolKind::avg)
        r = acc / double(p.countIncludePad ? padded : valid);
      if (p.kind == PoolKind::lp)
        r = std::pow(acc, 1.0 / double(p.p));
      y.setF(nc * spatialCount + flat, r);
    });
  return y;
}

Tensor softmax(const Tensor &x, int64_t axis, bool logarithm) {
  axis = normalizeAxis(axis, x.rank());
  int64_t outer = 1, n = x.dim(axis), inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d)
    inner *= x.dim(d);
  Tensor y(x.dtype(), x.shape());
  if (y.numel() == 0)
    return y; // no rows, or rows of nothing: no work either way
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t j) { return (o * n + j) * inner + in; };
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j)
        mx = std::max(mx, x.getF(at(j)));
      if (std::isinf(mx))
        mx = 0;
      double sum = 0;
      for (int64_t j = 0; j < n; ++j)
        sum += std::exp(x.getF(at(j)) - mx);
      for (int64_t j = 0; j < n; ++j) {
        double v = x.getF(at(j)) - mx;
        y.setF(at(j), logarithm ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  return y;
}

absl::StatusOr<Tensor> attention(const Tensor &q, const Tensor &k, const Tensor &v,
                                 const Tensor *mask, double scale, bool zeroMaskedRows) {
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank())
    return absl::InvalidArgumentError(absl::StrCat("attention: q ", q.describe(), ", k ",
                                                   k.describe(), " and v ", v.describe(),
                                                   " must be of one rank, at least 2"));
  // Grouped-query heads: each key/value head serves `groups` query heads in
  // a row (transformers' repeat_kv), repeated here to the query's count.
  int64_t rank = q.rank();
  int64_t groups = 1;
  if (rank >= 3 && k.dim(rank - 3) != q.dim(rank - 3)) {
    int64_t qHeads = q.dim(rank - 3), kHeads = k.dim(rank - 3);
    if (kHeads <= 0 || qHeads % kHeads != 0 || v.dim(rank - 3) != kHeads)
      return absl::InvalidArgumentError(absl::StrCat(
          "attention: key and value heads (", kHeads, ", ", v.dim(rank - 3),
          ") must be equal and divide the query's (", qHeads, ")"));
    groups = qHeads / kHeads;
  }
  auto repeatHeads = [&](const Tensor &t) {
    if (groups == 1)
      return t;
    Shape shape = t.shape();
    int64_t outer = 1, inner = shape[rank - 2] * shape[rank - 1];
    for (int64_t d = 0; d + 3 < rank; ++d)
      outer *= shape[d];
    int64_t heads = shape[rank - 3];
    shape[rank - 3] = heads * groups;
    Tensor out(t.dtype(), shape);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t h = 0; h < heads * groups; ++h)
        for (int64_t i = 0; i < inner; ++i)
          out.setF((o * heads * groups + h) * inner + i,
                   t.getF((o * heads + h / groups) * inner + i));
    return out;
  };
  // The chain kiln-fuse-attention replaced, in double, rounded once at the end.
  auto wide = [&](const Tensor &t) { return castTensor(repeatHeads(t), DType::f64); };
  absl::StatusOr<Tensor> scores = matmul(castTensor(q, DType::f64), transposeLastTwo(wide(k)));
  Tensor factor(DType::f64, {});
  factor.setF(0, scale);
  if (scores.ok())
    scores = binary(BinaryFn::Mul, *scores, factor);
  if (scores.ok() && mask && mask->dtype() == DType::boolean) {
    // A boolean mask keeps a score where it is true, -inf where false.
    Tensor ninf(DType::f64, {});
    ninf.setF(0, -std::numeric_limits<double>::infinity());
    scores = select(*mask, *scores, ninf);
  } else if (scores.ok() && mask) {
    scores = binary(BinaryFn::Add, *scores, castTensor(*mask, DType::f64));
  }
  if (!scores.ok())
    return absl::InvalidArgumentError(absl::StrCat("attention: ", scores.status().message()));
  Tensor weights = softmax(*scores, -1, false);
  if (zeroMaskedRows) {
    // A row of scores that is all -inf: its weights are 0 instead of NaN.
    int64_t keys = scores->dim(scores->rank() - 1);
    for (int64_t row = 0; keys > 0 && row < scores->numel() / keys; ++row) {
      bool seesNone = true;
      for (int64_t j = 0; j < keys && seesNone; ++j)
        seesNone = scores->getF(row * keys + j) == -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; seesNone && j < keys; ++j)
        weights.setF(row * keys + j, 0.0);
    }
  }
  absl::StatusOr<Tensor> result = matmul(weights, wide(v));
  if (!result.ok())
    return result.status();
  return castTensor(*result, q.dtype(), /*saturate=*/false);
}

/// x normalized over the dims from `axis` in float64: (x - mean) / sqrt(var +
/// epsilon), or without `center` x / sqrt(mean(x^2) + epsilon).
static Tensor normalizeRows(const Tensor &x, int64_t axis, double epsilon, bool center) {
  axis = normalizeAxis(axis, x.rank());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.dim(d);
  for (int64_t d = axis; d < x.rank(); ++d)
    inner *= x.dim(d);
  Tensor normalized(DType::f64, x.shape());
  // Rows of nothing are no work, however many there are.
  for (int64_t o = 0; o < (inner == 0 ? 0 : outer); ++o) {
    double mean = 0, var = 0;
    if (center) {
      for (int64_t i = 0; i < inner; ++i)
        mean += x.getF(o * inner + i);
      mean /= double(inner);
    }
    for (int64_t i = 0; i < inner; ++i) {
      double d = x.getF(o * inner + i) - mean;
      var += d * d;
    }
    var /= double(inner);
    double inv = 1.0 / std::sqrt(var + epsilon);
    for (int64_t i = 0; i < inner; ++i)
      normalized.setF(o * inner + i, (x.getF(o * inner + i) - mean) * inv);
  }
  return normalized;
}

absl::StatusOr<Tensor> layerNorm(const Tensor &x, const Tensor &scale, const Tensor *bias,
                                 int64_t axis, double epsilon) {
  Tensor scale64 = castTensor(scale, DType::f64);
  absl::StatusOr<Tensor> y =
      binary(BinaryFn::Mul, normalizeRows(x, axis, epsilon, /*center=*/true), scale64);
  if (!y.ok())
    return y.status();
  if (bias) {
    y = binary(BinaryFn::Add, *y, castTensor(*bias, DType::f64));
    if (!y.ok())
      return y.status();
  }
  if (y->shape() != x.shape())
    return absl::InvalidArgumentError("layer_norm: scale or bias does not broadcast to the input");
  return castTensor(*y, x.dtype());
}

absl::StatusOr<Tensor> rmsNorm(const Tensor &x, const Tensor *scale, int64_t axis,
                               double epsilon) {
  absl::StatusOr<Tensor> y = normalizeRows(x, axis, epsilon, /*center=*/false);
  if (scale)
    y = binary(BinaryFn::Mul, *y, castTensor(*scale, DType::f64));
  if (!y.ok())
    return y.status();
  if (y->shape() != x.shape())
    return absl::InvalidArgumentError("rms_norm: scale does not broadcast to the input");
  return castTensor(*y, x.dtype());
}

} // namespace kiln::ref
