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

namespace {
double unaryFloat(UnaryFn fn, double x) {
  switch (fn) {
  case UnaryFn::neg: return -x;
  case UnaryFn::abs: return std::fabs(x);
  case UnaryFn::sign: return x > 0 ? 1.0 : (x < 0 ? -1.0 : x);
  case UnaryFn::exp: return std::exp(x);
  case UnaryFn::log: return std::log(x);
  case UnaryFn::sqrt: return std::sqrt(x);
  case UnaryFn::rsqrt: return 1.0 / std::sqrt(x);
  case UnaryFn::reciprocal: return 1.0 / x;
  case UnaryFn::tanh: return std::tanh(x);
  case UnaryFn::sigmoid: return 1.0 / (1.0 + std::exp(-x));
  case UnaryFn::erf: return std::erf(x);
  case UnaryFn::sin: return std::sin(x);
  case UnaryFn::cos: return std::cos(x);
  case UnaryFn::tan: return std::tan(x);
  case UnaryFn::asin: return std::asin(x);
  case UnaryFn::acos: return std::acos(x);
  case UnaryFn::atan: return std::atan(x);
  case UnaryFn::sinh: return std::sinh(x);
  case UnaryFn::cosh: return std::cosh(x);
  case UnaryFn::asinh: return std::asinh(x);
  case UnaryFn::acosh: return std::acosh(x);
  case UnaryFn::atanh: return std::atanh(x);
  case UnaryFn::floor: return std::floor(x);
  case UnaryFn::ceil: return std::ceil(x);
  case UnaryFn::round: return std::nearbyint(x);
  case UnaryFn::is_nan: return std::isnan(x) ? 1 : 0;
  case UnaryFn::is_inf: return std::isinf(x) ? 1 : 0;
  case UnaryFn::logical_not: return x == 0;
  case UnaryFn::bitwise_not: return x;
  }
  return x;
}

int64_t unaryInt(UnaryFn fn, int64_t x, bool isUnsignedType) {
  switch (fn) {
  case UnaryFn::neg: return static_cast<int64_t>(0 - static_cast<uint64_t>(x));
  case UnaryFn::abs: return isUnsignedType || x >= 0 ? x : static_cast<int64_t>(0 - static_cast<uint64_t>(x));
  case UnaryFn::sign: return x == 0 ? 0 : (isUnsignedType || x > 0 ? 1 : -1);
  case UnaryFn::logical_not: return x == 0;
  case UnaryFn::bitwise_not: return ~x;
  default: return x; // float-only functions never reach integers (the IR verified it)
  }
}
} // namespace

Tensor geluTanh(const Tensor &x) {
  Tensor out(x.dtype(), x.shape());
  const double c = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.getF(i);
    out.setF(i, 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))));
  }
  return out;
}

Tensor unary(UnaryFn fn, const Tensor &x) {
  bool predicate = fn == UnaryFn::is_nan || fn == UnaryFn::is_inf;
  Tensor out(predicate ? DType::boolean : x.dtype(), x.shape());
  if (isFloat(x.dtype())) {
    for (int64_t i = 0; i < x.numel(); ++i)
      out.setF(i, unaryFloat(fn, x.getF(i)));
    return out;
  }
  bool isU = isUnsigned(x.dtype());
  for (int64_t i = 0; i < x.numel(); ++i)
    out.setI(i, unaryInt(fn, x.getI(i), isU));
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

double binaryFloat(BinaryFn fn, double a, double b) {
  switch (fn) {
  case BinaryFn::add: return a + b;
  case BinaryFn::sub: return a - b;
  case BinaryFn::mul: return a * b;
  case BinaryFn::div: return a / b;
  case BinaryFn::rem: return std::fmod(a, b);
  case BinaryFn::mod: {
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  case BinaryFn::pow: return std::pow(a, b);
  case BinaryFn::max: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case BinaryFn::min: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  default: return 0;
  }
}

/// Integer binary op; false on division by zero.
bool binaryInt(BinaryFn fn, int64_t a, int64_t b, bool isU, int bits, int64_t &out) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (fn) {
  case BinaryFn::add: out = static_cast<int64_t>(ua + ub); return true;
  case BinaryFn::sub: out = static_cast<int64_t>(ua - ub); return true;
  case BinaryFn::mul: out = static_cast<int64_t>(ua * ub); return true;
  case BinaryFn::div:
  case BinaryFn::rem:
  case BinaryFn::mod:
    if (b == 0)
      return false;
    if (isU) {
      out = static_cast<int64_t>(fn == BinaryFn::div ? ua / ub : ua % ub);
      return true;
    }
    if (a == std::numeric_limits<int64_t>::min() && b == -1) {
      out = fn == BinaryFn::div ? a : 0;
      return true;
    }
    if (fn == BinaryFn::div) {
      out = a / b;
    } else {
      out = a % b;
      if (fn == BinaryFn::mod && out != 0 && ((out < 0) != (b < 0)))
        out += b;
    }
    return true;
  case BinaryFn::pow: {
    if (!isU && b < 0) {
      out = a == 1 ? 1 : (a == -1 ? (b % 2 ? -1 : 1) : 0);
      return true;
    }
    uint64_t result = 1, base = ua;
    for (uint64_t e = ub; e; e >>= 1, base *= base)
      if (e & 1)
        result *= base;
    out = static_cast<int64_t>(result);
    return true;
  }
  case BinaryFn::max: out = isU ? static_cast<int64_t>(std::max(ua, ub)) : std::max(a, b); return true;
  case BinaryFn::min: out = isU ? static_cast<int64_t>(std::min(ua, ub)) : std::min(a, b); return true;
  case BinaryFn::logical_and: out = (a != 0) && (b != 0); return true;
  case BinaryFn::logical_or: out = (a != 0) || (b != 0); return true;
  case BinaryFn::logical_xor: out = (a != 0) != (b != 0); return true;
  case BinaryFn::bitwise_and: out = a & b; return true;
  case BinaryFn::bitwise_or: out = a | b; return true;
  case BinaryFn::bitwise_xor: out = a ^ b; return true;
  case BinaryFn::shift_left:
    out = ub >= static_cast<uint64_t>(bits) ? 0 : static_cast<int64_t>(ua << ub);
    return true;
  case BinaryFn::shift_right:
    if (isU) {
      uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
      out = ub >= static_cast<uint64_t>(bits) ? 0 : static_cast<int64_t>((ua & mask) >> ub);
    } else {
      out = ub >= static_cast<uint64_t>(bits) ? (a < 0 ? -1 : 0) : (a >> ub);
    }
    return true;
  }
  return true;
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
      out.setF(i, binaryFloat(fn, a.getF(ia), b.getF(ib)));
    });
    if (!done.ok())
      return done.status();
    return out;
  }
  bool isU = isUnsigned(a.dtype()), divByZero = false;
  int bits = info(a.dtype()).bits;
  auto done = forEachBroadcast(a, b, [&](int64_t i, int64_t ia, int64_t ib) {
    int64_t v = 0;
    if (!binaryInt(fn, a.getI(ia), b.getI(ib), isU, bits, v))
      divByZero = true;
    out.setI(i, v);
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
