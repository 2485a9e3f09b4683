//===- Elementwise.cpp - unary, binary, compare, select, bitcast, range ---===//

#include "Common.h"

#include <cmath>
#include <limits>

namespace kiln::ref {

using namespace detail;

absl::StatusOr<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return absl::InvalidArgumentError(absl::StrCat("shapes ", shapeToString(a), " and ",
                                                     shapeToString(b),
                                                     " do not broadcast"));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor activation(ops::Activation a, const Tensor &x) {
  Tensor out(x.dtype(), x.shape());
  const double c = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.getF(i);
    switch (a) {
    case ops::Activation::none: break;
    case ops::Activation::relu: v = v > 0 ? v : 0.0; break;
    case ops::Activation::gelu_tanh: v = 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))); break;
    case ops::Activation::gelu_erf: v = 0.5 * v * (1.0 + std::erf(v * M_SQRT1_2)); break;
    case ops::Activation::silu: v = v / (1.0 + std::exp(-v)); break;
    }
    out.setF(i, v);
  }
  return out;
}

Tensor unary(UnaryFn fn, const Tensor &x) {
  bool predicate = ops::resultType(fn) == ops::ResultType::Bool;
  Tensor out(predicate ? DType::boolean : x.dtype(), x.shape());
  if (isFloat(x.dtype())) {
    for (int64_t i = 0; i < x.numel(); ++i)
      out.setF(i, ops::evalFloat(fn, x.getF(i)));
    return out;
  }
  bool isU = isUnsigned(x.dtype());
  for (int64_t i = 0; i < x.numel(); ++i)
    out.setI(i, ops::evalInt(fn, x.getI(i), isU));
  return out;
}

namespace {
/// Calls f(outIndex, aIndex, bIndex) over the broadcast of a and b.
template <typename F>
absl::StatusOr<Shape> forEachBroadcast(const Tensor &a, const Tensor &b, F f) {
  absl::StatusOr<Shape> shape = broadcastShapes(a.shape(), b.shape());
  if (!shape.ok())
    return shape.status();
  size_t rank = shape->size();
  std::vector<int64_t> sa = broadcastStrides(a.shape(), rank),
                       sb = broadcastStrides(b.shape(), rank), index;
  int64_t n = numElements(*shape);
  for (int64_t i = 0; i < n; ++i) {
    unravel(i, *shape, index);
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      ia += index[d] * sa[d];
      ib += index[d] * sb[d];
    }
    f(i, ia, ib);
  }
  return shape;
}
} // namespace

absl::StatusOr<Tensor> binary(BinaryFn fn, const Tensor &a, const Tensor &b) {
  absl::StatusOr<Shape> shape = broadcastShapes(a.shape(), b.shape());
  if (!shape.ok())
    return shape.status();
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(a.dtype(), *shape));
  if (isFloat(a.dtype())) {
    auto done = forEachBroadcast(a, b, [&](int64_t i, int64_t ia, int64_t ib) {
      out.setF(i, ops::evalFloat(fn, a.getF(ia), b.getF(ib)));
    });
    if (!done.ok())
      return done.status();
    return out;
  }
  bool isU = isUnsigned(a.dtype()), divByZero = false;
  int bits = info(a.dtype()).bits;
  auto done = forEachBroadcast(a, b, [&](int64_t i, int64_t ia, int64_t ib) {
    bool ok = true;
    out.setI(i, ops::evalInt(fn, a.getI(ia), b.getI(ib), isU, bits, ok));
    divByZero = divByZero || !ok;
  });
  if (!done.ok())
    return done.status();
  if (divByZero)
    return absl::InvalidArgumentError("integer division by zero");
  return out;
}

absl::StatusOr<Tensor> compare(CompareFn fn, const Tensor &a, const Tensor &b) {
  absl::StatusOr<Shape> shape = broadcastShapes(a.shape(), b.shape());
  if (!shape.ok())
    return shape.status();
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(DType::boolean, *shape));
  auto decide = [fn](auto x, auto y) {
    switch (fn) {
    case CompareFn::eq: return x == y;
    case CompareFn::ne: return x != y;
    case CompareFn::lt: return x < y;
    case CompareFn::le: return x <= y;
    case CompareFn::gt: return x > y;
    case CompareFn::ge: return x >= y;
    }
    return false;
  };
  bool isF = isFloat(a.dtype()), isU = isUnsigned(a.dtype());
  auto done = forEachBroadcast(a, b, [&](int64_t i, int64_t ia, int64_t ib) {
    bool r;
    if (isF)
      r = decide(a.getF(ia), b.getF(ib));
    else if (isU)
      r = decide(static_cast<uint64_t>(a.getI(ia)), static_cast<uint64_t>(b.getI(ib)));
    else
      r = decide(a.getI(ia), b.getI(ib));
    out.setI(i, r);
  });
  if (!done.ok())
    return done.status();
  return out;
}

absl::StatusOr<Tensor> select(const Tensor &condition, const Tensor &onTrue,
                              const Tensor &onFalse) {
  absl::StatusOr<Shape> inner = broadcastShapes(onTrue.shape(), onFalse.shape());
  if (!inner.ok())
    return inner.status();
  absl::StatusOr<Shape> shape = broadcastShapes(condition.shape(), *inner);
  if (!shape.ok())
    return shape.status();
  size_t rank = shape->size();
  std::vector<int64_t> sc = broadcastStrides(condition.shape(), rank),
                       st = broadcastStrides(onTrue.shape(), rank),
                       sf = broadcastStrides(onFalse.shape(), rank), index;
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(onTrue.dtype(), *shape));
  for (int64_t i = 0; i < out.numel(); ++i) {
    unravel(i, *shape, index);
    int64_t ic = 0, it = 0, iff = 0;
    for (size_t d = 0; d < rank; ++d) {
      ic += index[d] * sc[d];
      it += index[d] * st[d];
      iff += index[d] * sf[d];
    }
    if (condition.getI(ic))
      copyElement(onTrue, it, out, i);
    else
      copyElement(onFalse, iff, out, i);
  }
  return out;
}

absl::StatusOr<Tensor> bitcast(const Tensor &x, DType to) {
  if (info(x.dtype()).bytes != info(to).bytes)
    return absl::InvalidArgumentError(absl::StrCat("bitcast from ", info(x.dtype()).name,
                                                   " to ", info(to).name,
                                                   " changes the element width"));
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(to, x.shape()));
  std::memcpy(out.bytes(), x.bytes(), x.byteSize());
  return out;
}

absl::StatusOr<Tensor> range(const Tensor &start, const Tensor &limit, const Tensor &delta) {
  DType t = start.dtype();
  if (isFloat(t)) {
    double s = start.getF(0), l = limit.getF(0), d = delta.getF(0);
    if (d == 0 || std::isnan(s) || std::isnan(l) || std::isnan(d))
      return absl::InvalidArgumentError("range: delta is 0 or a bound is NaN");
    double count = std::ceil((l - s) / d);
    if (!(count < 0x1p62)) // inf, or beyond what a size holds: zeros() names the limit
      return absl::OutOfRangeError(absl::StrCat("range: from ", s, " to ", l, " by ", d,
                                                " has more elements than a tensor holds"));
    int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
    Tensor out;
    KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(t, Shape{n}));
    for (int64_t i = 0; i < n; ++i)
      out.setF(i, s + static_cast<double>(i) * d);
    return out;
  }
  int64_t s = start.getI(0), l = limit.getI(0), d = delta.getI(0);
  if (d == 0)
    return absl::InvalidArgumentError("range: delta is 0");
  double count = std::ceil((static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d));
  if (!(count < 0x1p62))
    return absl::OutOfRangeError(absl::StrCat("range: from ", s, " to ", l, " by ", d,
                                              " has more elements than a tensor holds"));
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(t, Shape{n}));
  for (int64_t i = 0; i < n; ++i)
    out.setI(i, s + i * d);
  return out;
}

} // namespace kiln::ref
