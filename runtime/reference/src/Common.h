//===- Common.h - helpers the reference kernels share -----------*- C++ -*-===//

#ifndef KILN_REFERENCE_COMMON_H
#define KILN_REFERENCE_COMMON_H

#include "kiln/reference/Kernels.h"

#include "absl/strings/str_cat.h"

#include <cstring>

/// `lhs = *(expr)` for an absl::StatusOr expression, or returns its error. For
/// results whose size is computed (Tensor::zeros) in kernels returning StatusOr.
#define KILN_REF_ASSIGN_OR_RETURN(lhs, expr)                                            \
  do {                                                                                  \
    auto orError = (expr);                                                              \
    if (!orError.ok())                                                                  \
      return orError.status();                                                          \
    lhs = std::move(*orError);                                                          \
  } while (false)

namespace kiln::ref::detail {

/// Row-major multi-index of linear index `i` in `shape`.
inline void unravel(int64_t i, const Shape &shape, std::vector<int64_t> &index) {
  index.resize(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    int64_t n = shape[d];
    index[d] = n ? i % n : 0;
    i = n ? i / n : 0;
  }
}

/// Strides of `shape` aligned right to a rank-`rank` result, 0 where it broadcasts.
inline std::vector<int64_t> broadcastStrides(const Shape &shape, size_t rank) {
  std::vector<int64_t> strides(rank, 0), own = stridesOf(shape);
  size_t offset = rank - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    strides[offset + d] = shape[d] == 1 ? 0 : own[d];
  return strides;
}

/// Copies element `from` of `src` to element `to` of `dst` (same dtype).
inline void copyElement(const Tensor &src, int64_t from, Tensor &dst, int64_t to) {
  int bytes = info(src.dtype()).bytes;
  std::memcpy(dst.bytes() + to * bytes, src.bytes() + from * bytes, bytes);
}

inline bool isUnsigned(DType t) { return !info(t).isFloat && !info(t).isSigned; }

/// axis in [-rank, rank) made non-negative (the IR verified it).
inline int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Keys' cubic convolution kernel at distance s with coefficient a (Resize's
/// cubic_coeff_a; GridSample uses -0.75).
inline double cubicWeight(double s, double a) {
  s = s < 0 ? -s : s;
  if (s <= 1)
    return ((a + 2) * s - (a + 3)) * s * s + 1;
  if (s < 2)
    return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  return 0;
}

inline absl::Status indexError(const char *op, int64_t index, int64_t size) {
  return absl::OutOfRangeError(absl::StrCat(op, ": index ", index,
                                            " is out of range for a dim of size ", size));
}

} // namespace kiln::ref::detail

#endif // KILN_REFERENCE_COMMON_H
