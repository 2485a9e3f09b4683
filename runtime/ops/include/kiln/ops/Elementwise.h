//===- Elementwise.h - the elementwise op table, expanded -------*- C++ -*-===//
//
// The rows of ElementwiseOps.def as C++: the function enums (their values are the
// artifact format's numbers), the scalar semantics that the reference kernels and
// the compiler's constant folders share, and the CUDA C the emitter writes. No
// MLIR and no Abseil: both halves include it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_OPS_ELEMENTWISE_H
#define KILN_OPS_ELEMENTWISE_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kiln::ops {

enum class UnaryFn : uint8_t {
#define KILN_UNARY(Fn, Code, ...) Fn = Code,
#include "kiln/ops/ElementwiseOps.def"
};

enum class BinaryFn : uint8_t {
#define KILN_BINARY(Fn, Code, ...) Fn = Code,
#include "kiln/ops/ElementwiseOps.def"
};

enum class ResultType { Same, Bool };

/// Whether the result is i1 (is_nan, is_inf) or of the operand's type.
constexpr ResultType resultType(UnaryFn fn) {
  switch (fn) {
#define KILN_UNARY(Fn, Code, Op, Onnx, OnnxVersion, Result, ...)                                   \
  case UnaryFn::Fn:                                                                                \
    return ResultType::Result;
#include "kiln/ops/ElementwiseOps.def"
  }
  return ResultType::Same;
}

/// The table's rows where a function needs more than an expression.
namespace scalar {
inline double floatMod(double a, double b) {
  double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
inline int64_t intDiv(int64_t a, int64_t b, bool isU, bool &ok) {
  if (b == 0)
    return ok = false, 0;
  if (isU)
    return static_cast<int64_t>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
  if (a == std::numeric_limits<int64_t>::min() && b == -1)
    return a;
  return a / b;
}
inline int64_t intRem(int64_t a, int64_t b, bool isU, bool &ok) {
  if (b == 0)
    return ok = false, 0;
  if (isU)
    return static_cast<int64_t>(static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
  if (b == -1)
    return 0;
  return a % b;
}
inline int64_t intMod(int64_t a, int64_t b, bool isU, bool &ok) {
  int64_t r = intRem(a, b, isU, ok);
  return !isU && r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
/// Integer pow; a negative exponent of a signed type gives 1 / a^-b truncated.
inline int64_t intPow(int64_t a, int64_t b, bool isU) {
  if (!isU && b < 0)
    return a == 1 ? 1 : (a == -1 ? (b % 2 ? -1 : 1) : 0);
  uint64_t result = 1, base = static_cast<uint64_t>(a);
  for (uint64_t e = static_cast<uint64_t>(b); e; e >>= 1, base *= base)
    if (e & 1)
      result *= base;
  return static_cast<int64_t>(result);
}
inline int64_t shiftLeft(int64_t a, int64_t b, int bits) {
  uint64_t ub = static_cast<uint64_t>(b);
  return ub >= static_cast<uint64_t>(bits) ? 0
                                           : static_cast<int64_t>(static_cast<uint64_t>(a) << ub);
}
inline int64_t shiftRight(int64_t a, int64_t b, bool isU, int bits) {
  uint64_t ub = static_cast<uint64_t>(b);
  if (isU) {
    uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
    return ub >= static_cast<uint64_t>(bits)
               ? 0
               : static_cast<int64_t>((static_cast<uint64_t>(a) & mask) >> ub);
  }
  return ub >= static_cast<uint64_t>(bits) ? (a < 0 ? -1 : 0) : (a >> ub);
}
} // namespace scalar

/// fn(x) in double: the reference's value, rounded once by the caller.
inline double evalFloat(UnaryFn fn, double x) {
  switch (fn) {
#define KILN_UNARY(Fn, Code, Op, Onnx, OnnxVersion, Result, RefFloat, ...)                         \
  case UnaryFn::Fn:                                                                                \
    return RefFloat;
#include "kiln/ops/ElementwiseOps.def"
  }
  return x;
}

/// fn(x) of an integer (or bool) value, sign- or zero-extended to 64 bits; the
/// caller wraps the result to its type's width.
inline int64_t evalInt(UnaryFn fn, int64_t x, bool isU) {
  [[maybe_unused]] uint64_t ux = static_cast<uint64_t>(x);
  switch (fn) {
#define KILN_UNARY(Fn, Code, Op, Onnx, OnnxVersion, Result, RefFloat, RefInt, ...)                 \
  case UnaryFn::Fn:                                                                                \
    return RefInt;
#include "kiln/ops/ElementwiseOps.def"
  }
  return x;
}

inline double evalFloat(BinaryFn fn, double a, double b) {
  switch (fn) {
#define KILN_BINARY(Fn, Code, Op, Onnx, OnnxVersion, RefFloat, ...)                                \
  case BinaryFn::Fn:                                                                               \
    return RefFloat;
#include "kiln/ops/ElementwiseOps.def"
  }
  return a;
}

/// fn(a, b) of integers of `bits` bits, extended to 64; `ok` is cleared on an
/// integer division by zero.
inline int64_t evalInt(BinaryFn fn, int64_t a, int64_t b, bool isU, int bits, bool &ok) {
  [[maybe_unused]] uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (fn) {
#define KILN_BINARY(Fn, Code, Op, Onnx, OnnxVersion, RefFloat, RefInt, ...)                        \
  case BinaryFn::Fn:                                                                               \
    return RefInt;
#include "kiln/ops/ElementwiseOps.def"
  }
  return a;
}

/// The CUDA C of fn over a float (`isFloat`) or an integer/bool element:
/// `$x` (`$a`, `$b`) stand for the operands' expressions, `$T` for the compute
/// type.
constexpr const char *cudaTemplate(UnaryFn fn, bool isFloat) {
  switch (fn) {
#define KILN_UNARY(Fn, Code, Op, Onnx, OnnxVersion, Result, RefFloat, RefInt, CudaFloat, CudaInt)  \
  case UnaryFn::Fn:                                                                                \
    return isFloat ? CudaFloat : CudaInt;
#include "kiln/ops/ElementwiseOps.def"
  }
  return "";
}
constexpr const char *cudaTemplate(BinaryFn fn, bool isFloat) {
  switch (fn) {
#define KILN_BINARY(Fn, Code, Op, Onnx, OnnxVersion, RefFloat, RefInt, CudaFloat, CudaInt, ...)    \
  case BinaryFn::Fn:                                                                               \
    return isFloat ? CudaFloat : CudaInt;
#include "kiln/ops/ElementwiseOps.def"
  }
  return "";
}

/// Whether an integer divisor of 0 is a data error the kernel must check.
constexpr bool intDivides(BinaryFn fn) {
  switch (fn) {
#define KILN_BINARY(Fn, Code, Op, Onnx, OnnxVersion, RefFloat, RefInt, CudaFloat, CudaInt,      \
                    IntDivides)                                                                    \
  case BinaryFn::Fn:                                                                               \
    return IntDivides;
#include "kiln/ops/ElementwiseOps.def"
  }
  return false;
}

} // namespace kiln::ops

#endif // KILN_OPS_ELEMENTWISE_H
