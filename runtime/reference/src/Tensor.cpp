//===- Tensor.cpp - host tensors, element access, float formats -----------===//

#include "kiln/reference/Tensor.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace kiln::ref {

namespace {
const DTypeInfo kInfo[] = {
    {"f16", 2, true, true, 16},         {"bf16", 2, true, true, 16},
    {"f32", 4, true, true, 32},         {"f64", 8, true, true, 64},
    {"i1", 1, false, false, 1},         {"i8", 1, false, true, 8},
    {"i16", 2, false, true, 16},        {"i32", 4, false, true, 32},
    {"i64", 8, false, true, 64},        {"ui8", 1, false, false, 8},
    {"ui16", 2, false, false, 16},      {"ui32", 4, false, false, 32},
    {"ui64", 8, false, false, 64},      {"f8E4M3FN", 1, true, true, 8},
    {"f8E4M3FNUZ", 1, true, true, 8},   {"f8E5M2", 1, true, true, 8},
    {"f8E5M2FNUZ", 1, true, true, 8},   {"f4E2M1FN", 1, true, true, 4},
    {"i4", 1, false, true, 4},          {"ui4", 1, false, false, 4},
    {"i2", 1, false, true, 2},          {"ui2", 1, false, false, 2},
};

/// A binary float format narrower than double.
struct FloatFormat {
  int exponentBits, mantissaBits, bias;
  bool ieee;         // all-ones exponent is inf/NaN
  bool nanIsMinusZero; // "fnuz": 0x80 is the only NaN, no -0, no inf
  double maxFinite;
  bool hasNan = true; // float4e2m1 has neither NaN nor inf
};

FloatFormat formatOf(DType t) {
  switch (t) {
  case DType::f16:
    return {5, 10, 15, true, false, 65504.0};
  case DType::bf16:
    return {8, 7, 127, true, false, 0x1.FEp127};
  case DType::f8e4m3fn:
    return {4, 3, 7, false, false, 448.0};
  case DType::f8e4m3fnuz:
    return {4, 3, 8, false, true, 240.0};
  case DType::f8e5m2:
    return {5, 2, 15, true, false, 57344.0};
  case DType::f8e5m2fnuz:
    return {5, 2, 16, false, true, 57344.0};
  case DType::f4e2m1fn:
    return {2, 1, 1, false, false, 6.0, /*hasNan=*/false};
  default:
    return {0, 0, 0, true, false, 0};
  }
}
} // namespace

const DTypeInfo &info(DType t) { return kInfo[static_cast<int>(t)]; }

int64_t numElements(const Shape &shape) {
  // A zero dim first: [2^62, 2, 0] has no elements though its other dims'
  // product overflows. Past that, an overflow saturates (checked shapes never
  // get there; an unchecked one must not be undefined behaviour).
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX;
  return n;
}

absl::StatusOr<int64_t> checkedNumElements(const Shape &shape) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("a tensor of dims [", shapeToString(shape), "] has a negative dim"));
    overflow = overflow || __builtin_mul_overflow(n, d, &n);
  }
  // A zero dim makes the count 0 even when the other dims' product overflowed.
  if (overflow && std::find(shape.begin(), shape.end(), 0) == shape.end())
    return absl::OutOfRangeError(absl::StrCat("a tensor of dims [", shapeToString(shape),
                                              "] has more elements than 64 bits count"));
  return overflow ? 0 : n;
}

absl::StatusOr<uint64_t> checkedByteSize(DType dtype, const Shape &shape, uint64_t maxBytes) {
  absl::StatusOr<int64_t> count = checkedNumElements(shape);
  if (!count.ok())
    return count.status();
  uint64_t bytes = 0;
  bool overflow = __builtin_mul_overflow(static_cast<uint64_t>(*count),
                                         static_cast<uint64_t>(info(dtype).bytes), &bytes);
  if (overflow || bytes > maxBytes)
    return absl::ResourceExhaustedError(absl::StrCat(
        info(dtype).name, "[", shapeToString(shape), "] is ",
        overflow ? std::string("more than 2^64") : absl::StrCat(bytes), " bytes",
        maxBytes == UINT64_MAX
            ? std::string()
            : absl::StrCat(", over the limit of ", maxBytes, " bytes for one tensor (max tensor bytes)")));
  return bytes;
}

namespace {
thread_local uint64_t threadMaxTensorBytes = kDefaultMaxTensorBytes;
} // namespace

uint64_t maxTensorBytes() { return threadMaxTensorBytes; }

MaxTensorBytesScope::MaxTensorBytesScope(uint64_t maxBytes) : previous(threadMaxTensorBytes) {
  threadMaxTensorBytes = maxBytes;
}
MaxTensorBytesScope::~MaxTensorBytesScope() { threadMaxTensorBytes = previous; }

std::string shapeToString(const Shape &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s;
}

std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

uint64_t encodeFloat(DType t, double v, bool saturate) {
  FloatFormat f = formatOf(t);
  const int E = f.exponentBits, M = f.mantissaBits;
  const uint64_t signBit = uint64_t(1) << (E + M);
  const uint64_t expAllOnes = (uint64_t(1) << E) - 1;
  uint64_t nan = f.nanIsMinusZero ? signBit
                 : f.ieee          ? (expAllOnes << M) | (uint64_t(1) << (M - 1))
                                   : (expAllOnes << M) | ((uint64_t(1) << M) - 1);
  // A format without NaN stores it as -0 (what ml_dtypes, ONNX's reference, does).
  if (std::isnan(v))
    return f.hasNan ? nan : signBit;
  uint64_t sign = std::signbit(v) ? signBit : 0;
  double a = std::fabs(v);
  auto encodeMagnitude = [&](double value) -> uint64_t {
    if (value == 0)
      return f.nanIsMinusZero ? 0 : sign;
    const int emin = 1 - f.bias;
    int ex;
    std::frexp(value, &ex);
    int e = ex - 1;
    if (e < emin)
      return sign | static_cast<uint64_t>(std::ldexp(value, M - emin));
    uint64_t mantissa = static_cast<uint64_t>(std::ldexp(value, M - e)) - (uint64_t(1) << M);
    return sign | (static_cast<uint64_t>(e + f.bias) << M) | mantissa;
  };
  auto overflow = [&]() -> uint64_t {
    if (f.ieee && !(saturate && t == DType::f8e5m2))
      return sign | (expAllOnes << M); // inf
    if (saturate || !f.hasNan)
      return encodeMagnitude(f.maxFinite);
    return nan;
  };
  if (std::isinf(a))
    return overflow();
  const int emin = 1 - f.bias;
  int ex;
  std::frexp(a, &ex);
  int e = std::max(ex - 1, emin);
  double quantum = std::ldexp(1.0, e - M);
  double rounded = std::nearbyint(a / quantum) * quantum; // ties to even
  if (rounded > f.maxFinite)
    return overflow();
  return encodeMagnitude(rounded);
}

double decodeFloat(DType t, uint64_t bits) {
  FloatFormat f = formatOf(t);
  const int E = f.exponentBits, M = f.mantissaBits;
  const uint64_t signBit = uint64_t(1) << (E + M);
  const uint64_t expAllOnes = (uint64_t(1) << E) - 1;
  uint64_t exponent = (bits >> M) & expAllOnes, mantissa = bits & ((uint64_t(1) << M) - 1);
  bool negative = bits & signBit;
  if (f.nanIsMinusZero && bits == signBit)
    return std::numeric_limits<double>::quiet_NaN();
  if (f.ieee && exponent == expAllOnes)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : (negative ? -INFINITY : INFINITY);
  if (!f.ieee && !f.nanIsMinusZero && f.hasNan && exponent == expAllOnes &&
      mantissa == (uint64_t(1) << M) - 1)
    return std::numeric_limits<double>::quiet_NaN();
  double value = exponent == 0
                     ? std::ldexp(static_cast<double>(mantissa), 1 - f.bias - M)
                     : std::ldexp(static_cast<double>(mantissa + (uint64_t(1) << M)),
                                  static_cast<int>(exponent) - f.bias - M);
  return negative ? -value : value;
}

Tensor::Tensor(DType dtype, Shape shape)
    : type(dtype), dims(std::move(shape)), count(numElements(dims)),
      storage(static_cast<size_t>(count) * info(dtype).bytes, 0) {}

absl::StatusOr<Tensor> Tensor::zeros(DType dtype, Shape shape) {
  absl::StatusOr<uint64_t> bytes = checkedByteSize(dtype, shape, maxTensorBytes());
  if (!bytes.ok())
    return bytes.status();
  Tensor t;
  t.type = dtype;
  t.dims = std::move(shape);
  t.count = numElements(t.dims);
  try {
    t.storage.assign(*bytes, 0);
  } catch (const std::bad_alloc &) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of host memory for ", t.describe(), " (", *bytes, " bytes)"));
  }
  return t;
}

Tensor Tensor::view(DType dtype, Shape shape, uint8_t *data) {
  Tensor t;
  t.type = dtype;
  t.dims = std::move(shape);
  t.count = numElements(t.dims);
  t.external = data;
  return t;
}

namespace {
template <typename T> T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T> void store(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

/// The raw bits of a narrow float, or an integer's bits, zero-extended.
uint64_t loadBits(const uint8_t *p, int bytes) {
  switch (bytes) {
  case 1:
    return *p;
  case 2:
    return load<uint16_t>(p);
  case 4:
    return load<uint32_t>(p);
  default:
    return load<uint64_t>(p);
  }
}
void storeBits(uint8_t *p, int bytes, uint64_t v) {
  switch (bytes) {
  case 1:
    *p = static_cast<uint8_t>(v);
    return;
  case 2:
    store<uint16_t>(p, static_cast<uint16_t>(v));
    return;
  case 4:
    store<uint32_t>(p, static_cast<uint32_t>(v));
    return;
  default:
    store<uint64_t>(p, v);
  }
}

/// An integer's value from its bits: sign-extended for signed types.
int64_t intFromBits(const DTypeInfo &in, uint64_t bits) {
  if (in.bits == 1)
    return bits != 0;
  if (in.isSigned && in.bits < 64) {
    uint64_t signBit = uint64_t(1) << (in.bits - 1);
    return static_cast<int64_t>((bits ^ signBit) - signBit);
  }
  return static_cast<int64_t>(bits);
}

/// double -> int64 without undefined behaviour: truncates toward zero and clamps.
int64_t truncateToInt(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}
} // namespace

double Tensor::getF(int64_t i) const {
  const DTypeInfo &in = info(type);
  const uint8_t *p = bytes() + i * in.bytes;
  switch (type) {
  case DType::f32:
    return load<float>(p);
  case DType::f64:
    return load<double>(p);
  case DType::u64:
    return static_cast<double>(load<uint64_t>(p));
  default:
    break;
  }
  uint64_t bits = loadBits(p, in.bytes);
  if (in.isFloat)
    return decodeFloat(type, bits);
  return static_cast<double>(intFromBits(in, bits));
}

int64_t Tensor::getI(int64_t i) const {
  const DTypeInfo &in = info(type);
  if (in.isFloat)
    return truncateToInt(getF(i));
  return intFromBits(in, loadBits(bytes() + i * in.bytes, in.bytes));
}

void Tensor::setF(int64_t i, double v) {
  const DTypeInfo &in = info(type);
  uint8_t *p = bytes() + i * in.bytes;
  switch (type) {
  case DType::f32:
    store<float>(p, static_cast<float>(v));
    return;
  case DType::f64:
    store<double>(p, v);
    return;
  case DType::boolean:
    *p = v != 0 ? 1 : 0; // NaN is true, as numpy's astype(bool)
    return;
  case DType::u64:
    if (v >= 0 && v < 1.8446744073709552e19) {
      store<uint64_t>(p, static_cast<uint64_t>(v));
      return;
    }
    break;
  default:
    break;
  }
  if (in.isFloat) {
    storeBits(p, in.bytes, encodeFloat(type, v));
    return;
  }
  setI(i, truncateToInt(v));
}

void Tensor::setI(int64_t i, int64_t v) {
  const DTypeInfo &in = info(type);
  uint8_t *p = bytes() + i * in.bytes;
  if (in.isFloat) {
    setF(i, static_cast<double>(v));
    return;
  }
  if (in.bits == 1) {
    *p = v != 0;
    return;
  }
  uint64_t bits = static_cast<uint64_t>(v);
  if (in.bits < 8)
    bits &= (uint64_t(1) << in.bits) - 1;
  storeBits(p, in.bytes, bits);
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.dims = std::move(shape);
  return t;
}

std::string Tensor::describe() const {
  return std::string(info(type).name) + "[" + shapeToString(dims) + "]";
}

Tensor castTensor(const Tensor &x, DType to, bool saturate) {
  Tensor out(to, x.shape());
  const DTypeInfo &from = info(x.dtype()), &target = info(to);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (from.isFloat && target.isFloat) {
      double v = x.getF(i);
      if (to == DType::f32 || to == DType::f64 || to == DType::f16 || to == DType::bf16 ||
          to == DType::f4e2m1fn)
        out.setF(i, v);
      else
        storeBits(out.bytes() + i * target.bytes, target.bytes, encodeFloat(to, v, saturate));
    } else if (from.isFloat) {
      double v = x.getF(i);
      if (to == DType::boolean)
        out.setI(i, v != 0);
      else
        out.setI(i, truncateToInt(v)); // wraps to the width, as C casts through int64
    } else if (target.isFloat) {
      out.setF(i, x.getF(i));
    } else {
      out.setI(i, to == DType::boolean ? x.getI(i) != 0 : x.getI(i));
    }
  }
  return out;
}

} // namespace kiln::ref
