//===- Tensor.h - host tensors of the reference kernels ---------*- C++ -*-===//
//
// The reference kernels (kiln's golden numbers, and later the host fallback and
// the library ops of host emulation) work on these host tensors. No MLIR here: the
// runtime links this library too.
//
// Storage is the element type's own bytes (row-major, contiguous). Kernels read
// floats as double and integers as int64 (uint64 as its bit pattern), compute in
// that, and round once when they store.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REFERENCE_TENSOR_H
#define KILN_REFERENCE_TENSOR_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::ref {

enum class DType : uint8_t {
  f16, bf16, f32, f64,
  boolean,
  i8, i16, i32, i64,
  u8, u16, u32, u64,
  // Storage-only float8 and float4 types: computed through double like the others.
  f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f4e2m1fn,
  // Sub-byte integers, one element per byte here (files pack them).
  i4, u4, i2, u2,
};

struct DTypeInfo {
  const char *name; // "f32", "i64", ... as MLIR prints them ("i1" for bool)
  int bytes;
  bool isFloat;
  bool isSigned; // integers only
  int bits;      // integers: value bits (1 for bool)
};

const DTypeInfo &info(DType t);
inline bool isFloat(DType t) { return info(t).isFloat; }

using Shape = std::vector<int64_t>;

/// Number of elements; 1 for a 0-d shape. Unchecked: for shapes already checked
/// (those of existing tensors); use checkedNumElements on computed ones.
int64_t numElements(const Shape &shape);
std::string shapeToString(const Shape &shape);

//===--- Size limits --------------------------------------------------------===//
//
// Every size kiln computes from data, attributes or symbol values is checked
// before anything is allocated: a negative dim, an element or byte count that
// does not fit 64 bits, or a tensor over the size limit is an error naming the
// tensor, never a wrapped size. The limit is per tensor; it defaults to 64 GiB
// (more than any one tensor of a model that fits an H200, small enough that a
// wrapped or hostile size fails before it reaches the allocator) and is
// configurable: kiln-compile/kiln-run/kiln-reference --max-tensor-bytes,
// kiln_run_options_t.max_tensor_bytes.

inline constexpr uint64_t kDefaultMaxTensorBytes = uint64_t{1} << 36;

/// The element count of `shape`, or an error for a negative dim or a count that
/// overflows int64.
absl::StatusOr<int64_t> checkedNumElements(const Shape &shape);
/// The bytes of a `dtype` tensor of `shape`, or an error (as checkedNumElements,
/// or more than `maxBytes`). Messages name the tensor as "f32[2, 3]".
absl::StatusOr<uint64_t> checkedByteSize(DType dtype, const Shape &shape, uint64_t maxBytes);

/// The limit the reference kernels apply on this thread (Tensor::zeros):
/// kDefaultMaxTensorBytes unless a MaxTensorBytesScope is active.
uint64_t maxTensorBytes();
/// Sets this thread's limit for its lifetime (a run, an interpreter session).
class MaxTensorBytesScope {
public:
  explicit MaxTensorBytesScope(uint64_t maxBytes);
  ~MaxTensorBytesScope();
  MaxTensorBytesScope(const MaxTensorBytesScope &) = delete;
  MaxTensorBytesScope &operator=(const MaxTensorBytesScope &) = delete;

private:
  uint64_t previous;
};

class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor of a shape known to be valid (derived from existing
  /// tensors without growing them). Computed shapes go through zeros().
  Tensor(DType dtype, Shape shape);
  /// A zero-filled tensor, or an error when `shape` has a negative dim, its size
  /// overflows, it exceeds maxTensorBytes(), or the memory cannot be had.
  static absl::StatusOr<Tensor> zeros(DType dtype, Shape shape);
  /// A tensor over `data` that someone else owns (a runtime arena, a caller's
  /// buffer): copies of it share those bytes, which must outlive every copy.
  static Tensor view(DType dtype, Shape shape, uint8_t *data);

  DType dtype() const { return type; }
  const Shape &shape() const { return dims; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t numel() const { return count; }
  int64_t dim(int64_t i) const { return dims[i]; }

  uint8_t *bytes() { return external ? external : storage.data(); }
  const uint8_t *bytes() const { return external ? external : storage.data(); }
  size_t byteSize() const { return static_cast<size_t>(count) * info(type).bytes; }
  bool isView() const { return external != nullptr; }

  /// Element i as a double (floats, and integers converted).
  double getF(int64_t i) const;
  /// Element i as an integer (uint64 as its bit pattern; floats truncated).
  int64_t getI(int64_t i) const;
  /// Stores v rounded once to the element type (integers: converted with C++ rules
  /// after range clamping; NaN becomes 0).
  void setF(int64_t i, double v);
  /// Stores v wrapped to the integer width (floats: converted exactly or rounded).
  void setI(int64_t i, int64_t v);

  /// Same bytes, new shape of the same element count.
  Tensor reshaped(Shape shape) const;

  /// "f32[2, 3]"
  std::string describe() const;

private:
  DType type = DType::f32;
  Shape dims;
  int64_t count = 1;
  std::vector<uint8_t> storage;
  uint8_t *external = nullptr;
};

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const Shape &shape);

/// Rounds `v` to the nearest value of the float format `t` (ties to even) and
/// returns its bits; float8 "fn" types saturate to their largest finite value when
/// `saturate` is set (ONNX Cast's default), else overflow to NaN.
uint64_t encodeFloat(DType t, double v, bool saturate = false);
double decodeFloat(DType t, uint64_t bits);

/// Casts every element to `to` (float -> int truncates toward zero; to bool is != 0).
Tensor castTensor(const Tensor &x, DType to, bool saturate = true);

} // namespace kiln::ref

#endif // KILN_REFERENCE_TENSOR_H
