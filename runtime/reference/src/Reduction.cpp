//===- Reduction.cpp - reduce, arg_reduce, cumulative, top_k --------------===//

#include "Common.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kiln::ref {

using namespace detail;

namespace {
/// Splits `shape` around `axis`: outer * n * inner.
void splitAround(const Shape &shape, int64_t axis, int64_t &outer, int64_t &n, int64_t &inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  n = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
}
} // namespace

Tensor reduce(const Tensor &x, ReduceKind kind, const std::vector<int64_t> &axesIn,
              bool keepDims) {
  int64_t rank = x.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axesIn)
    reduced[normalizeAxis(a, rank)] = true;
  Shape kept(rank), outShape;
  for (int64_t d = 0; d < rank; ++d) {
    kept[d] = reduced[d] ? 1 : x.dim(d);
    if (!reduced[d] || keepDims)
      outShape.push_back(kept[d]);
  }
  int64_t outCount = numElements(kept);
  bool isF = isFloat(x.dtype()), isU = isUnsigned(x.dtype());
  std::vector<double> accF(outCount);
  std::vector<int64_t> accI(outCount);
  std::vector<bool> seen(outCount, false);
  std::vector<int64_t> counts(outCount, 0);
  std::vector<int64_t> keptStrides = stridesOf(kept), index;
  for (int64_t i = 0; i < x.numel(); ++i) {
    unravel(i, x.shape(), index);
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d])
        o += index[d] * keptStrides[d];
    ++counts[o];
    if (isF) {
      double v = x.getF(i), &a = accF[o];
      if (!seen[o]) {
        a = kind == ReduceKind::any || kind == ReduceKind::all ? (v != 0) : v;
      } else {
        switch (kind) {
        case ReduceKind::sum: case ReduceKind::mean: a += v; break;
        case ReduceKind::prod: a *= v; break;
        case ReduceKind::max: a = std::isnan(a) || std::isnan(v) ? NAN : std::max(a, v); break;
        case ReduceKind::min: a = std::isnan(a) || std::isnan(v) ? NAN : std::min(a, v); break;
        case ReduceKind::any: a = a || v != 0; break;
        case ReduceKind::all: a = a && v != 0; break;
        }
      }
    } else {
      int64_t v = x.getI(i), &a = accI[o];
      if (!seen[o]) {
        a = kind == ReduceKind::any || kind == ReduceKind::all ? (v != 0) : v;
      } else {
        switch (kind) {
        case ReduceKind::sum: case ReduceKind::mean: a = int64_t(uint64_t(a) + uint64_t(v)); break;
        case ReduceKind::prod: a = int64_t(uint64_t(a) * uint64_t(v)); break;
        case ReduceKind::max: a = isU ? int64_t(std::max(uint64_t(a), uint64_t(v))) : std::max(a, v); break;
        case ReduceKind::min: a = isU ? int64_t(std::min(uint64_t(a), uint64_t(v))) : std::min(a, v); break;
        case ReduceKind::any: a = a || v != 0; break;
        case ReduceKind::all: a = a && v != 0; break;
        }
      }
    }
    seen[o] = true;
  }
  Tensor out(x.dtype(), outShape);
  for (int64_t o = 0; o < outCount; ++o) {
    if (!seen[o]) { // an empty reduction: the combiner's identity
      switch (kind) {
      case ReduceKind::sum: case ReduceKind::any: out.setF(o, 0); break;
      case ReduceKind::prod: case ReduceKind::all: out.setF(o, 1); break;
      case ReduceKind::mean: out.setF(o, NAN); break;
      case ReduceKind::max:
        if (isF) out.setF(o, -INFINITY);
        else out.setI(o, isU ? 0 : std::numeric_limits<int64_t>::min() >> (64 - info(x.dtype()).bits));
        break;
      case ReduceKind::min:
        if (isF) out.setF(o, INFINITY);
        else out.setI(o, isU ? -1 : std::numeric_limits<int64_t>::max() >> (64 - info(x.dtype()).bits));
        break;
      }
      continue;
    }
    if (isF)
      out.setF(o, kind == ReduceKind::mean ? accF[o] / counts[o] : accF[o]);
    else
      out.setI(o, kind == ReduceKind::mean ? accI[o] / counts[o] : accI[o]);
  }
  return out;
}

absl::StatusOr<Tensor> argReduce(const Tensor &x, ArgReduceKind kind, int64_t axis,
                                 bool keepDims, bool selectLastIndex) {
  axis = normalizeAxis(axis, x.rank());
  int64_t outer, n, inner;
  splitAround(x.shape(), axis, outer, n, inner);
  if (n == 0)
    return absl::InvalidArgumentError("arg_reduce over an empty axis");
  Shape shape = x.shape();
  if (keepDims)
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(DType::i64, shape));
  bool isF = isFloat(x.dtype()), isU = isUnsigned(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k) {
        int64_t i = (o * n + k) * inner + in, b = (o * n + best) * inner + in;
        int cmp; // sign of (x[i] - x[b])
        if (isF) {
          double vi = x.getF(i), vb = x.getF(b);
          if (std::isnan(vb)) continue; // the first NaN wins, as numpy
          if (std::isnan(vi)) { best = k; continue; }
          cmp = vi < vb ? -1 : (vi > vb ? 1 : 0);
        } else if (isU) {
          uint64_t vi = x.getI(i), vb = x.getI(b);
          cmp = vi < vb ? -1 : (vi > vb ? 1 : 0);
        } else {
          int64_t vi = x.getI(i), vb = x.getI(b);
          cmp = vi < vb ? -1 : (vi > vb ? 1 : 0);
        }
        if (kind == ArgReduceKind::argmin)
          cmp = -cmp;
        if (cmp > 0 || (cmp == 0 && selectLastIndex))
          best = k;
      }
      out.setI(o * inner + in, best);
    }
  return out;
}

Tensor cumulative(const Tensor &x, CumulativeKind kind, int64_t axis, bool exclusive,
                  bool reverse) {
  axis = normalizeAxis(axis, x.rank());
  int64_t outer, n, inner;
  splitAround(x.shape(), axis, outer, n, inner);
  Tensor out(x.dtype(), x.shape());
  if (out.numel() == 0)
    return out; // no work, however many empty rows
  bool isF = isFloat(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double accF = kind == CumulativeKind::sum ? 0 : 1;
      int64_t accI = kind == CumulativeKind::sum ? 0 : 1;
      for (int64_t step = 0; step < n; ++step) {
        int64_t k = reverse ? n - 1 - step : step;
        int64_t i = (o * n + k) * inner + in;
        if (exclusive) {
          if (isF) out.setF(i, accF); else out.setI(i, accI);
        }
        if (isF)
          accF = kind == CumulativeKind::sum ? accF + x.getF(i) : accF * x.getF(i);
        else
          accI = kind == CumulativeKind::sum ? int64_t(uint64_t(accI) + uint64_t(x.getI(i)))
                                             : int64_t(uint64_t(accI) * uint64_t(x.getI(i)));
        if (!exclusive) {
          if (isF) out.setF(i, accF); else out.setI(i, accI);
        }
      }
    }
  return out;
}

absl::StatusOr<std::pair<Tensor, Tensor>> topK(const Tensor &x, int64_t k, int64_t axis,
                                               bool largest, bool sorted) {
  axis = normalizeAxis(axis, x.rank());
  int64_t outer, n, inner;
  splitAround(x.shape(), axis, outer, n, inner);
  if (k < 0 || k > n)
    return absl::InvalidArgumentError(absl::StrCat("top_k: k = ", k, " for an axis of ", n));
  Shape shape = x.shape();
  shape[axis] = k;
  Tensor values(x.dtype(), shape), indices(DType::i64, shape);
  if (values.numel() == 0) // k = 0, or rows of nothing: no work however many
    return std::make_pair(std::move(values), std::move(indices));
  bool isF = isFloat(x.dtype()), isU = isUnsigned(x.dtype());
  std::vector<int64_t> order(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t j) { return (o * n + j) * inner + in; };
      // Strict weak order: larger (or smaller) first, NaN as the largest, ties by index.
      auto before = [&](int64_t a, int64_t b) {
        int cmp;
        if (isF) {
          double va = x.getF(at(a)), vb = x.getF(at(b));
          bool na = std::isnan(va), nb = std::isnan(vb);
          cmp = na || nb ? (na == nb ? 0 : (na ? 1 : -1)) : (va < vb ? -1 : (va > vb ? 1 : 0));
        } else if (isU) {
          uint64_t va = x.getI(at(a)), vb = x.getI(at(b));
          cmp = va < vb ? -1 : (va > vb ? 1 : 0);
        } else {
          int64_t va = x.getI(at(a)), vb = x.getI(at(b));
          cmp = va < vb ? -1 : (va > vb ? 1 : 0);
        }
        if (cmp == 0)
          return a < b;
        return largest ? cmp > 0 : cmp < 0;
      };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), before);
      (void)sorted; // kiln always returns them sorted, which an unsorted request allows
      for (int64_t j = 0; j < k; ++j) {
        int64_t dst = (o * k + j) * inner + in;
        copyElement(x, at(order[j]), values, dst);
        indices.setI(dst, order[j]);
      }
    }
  return std::make_pair(std::move(values), std::move(indices));
}

} // namespace kiln::ref
