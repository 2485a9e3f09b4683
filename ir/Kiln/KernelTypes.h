//===- KernelTypes.h - what generated kernels compute with -----*- C++ -*-===//

#ifndef KILN_IR_KILN_KERNELTYPES_H
#define KILN_IR_KILN_KERNELTYPES_H

#include "mlir/IR/BuiltinTypes.h"

namespace kiln {

/// The most rows a det kernel eliminates in a thread's own array: a larger or
/// unknown matrix stays a graph break (DetOp's kernel facts, CudaEmitter).
constexpr int64_t kMaxDetRows = 16;

/// Why no kernel computes an op whose result size depends on its data
/// (non_zero, compress, unique, non_max_suppression: kernelRefusal).
constexpr const char *kDataDependentSizeRefusal = "its result size depends on the data";

/// How each element of an op's result finds the operand elements it reads
/// (KernelFacts::elementAccess), which codegen's index arithmetic and vector
/// paths depend on.
enum class ElementAccess {
  /// At its own position under numpy broadcasting (elementwise ops,
  /// broadcast_to).
  broadcast,
  /// At a position computed from the shapes and compile-time operands alone
  /// (reshape, transpose, slice, concat, pad).
  moved,
  /// At a position read from an index operand (the gathers).
  gathered,
  /// Otherwise: reductions, rows, scans, scatters, ...
  computed,
};

/// Element types the generated kernels compute with (fusion and the rewrites
/// that feed it ask the same question).
inline bool isKernelElementType(mlir::Type t) {
  if (t.isF16() || t.isBF16() || t.isF32() || t.isF64() ||
      mlir::isa<mlir::Float8E4M3FNType, mlir::Float8E4M3FNUZType, mlir::Float8E5M2Type,
                mlir::Float8E5M2FNUZType, mlir::Float4E2M1FNType>(t))
    return true;
  // 2- and 4-bit integers are held one per byte, as the runtime stores them.
  auto i = mlir::dyn_cast<mlir::IntegerType>(t);
  return i && (i.getWidth() == 1 || i.getWidth() == 2 || i.getWidth() == 4 ||
               i.getWidth() == 8 || i.getWidth() == 16 || i.getWidth() == 32 ||
               i.getWidth() == 64);
}

} // namespace kiln

#endif // KILN_IR_KILN_KERNELTYPES_H
