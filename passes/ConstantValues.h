//===- ConstantValues.h - float weight constants for weight rewrites -*- C++ -*-===//
//
// Passes that rewrite weights at compile time (batch norms folded into convs,
// sibling matmuls merged) read a kiln.constant's values and write new ones.
// Only f32 and f64, dense or resource blobs (how large weights are imported).
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_CONSTANTVALUES_H
#define KILN_PASSES_CONSTANTVALUES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <vector>

namespace kiln {

/// The values of `v` when it is an f32 or f64 kiln.constant with a static
/// shape (dense, or a resource blob), as doubles in row-major order.
std::optional<std::vector<double>> readFloats(mlir::Value v);

/// A kiln.constant of `type` (f32, f64, f16 or bf16; narrow types rounded to
/// nearest even) holding `values`.
mlir::Value makeConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                         llvm::ArrayRef<double> values);

/// A slice end past any dim (kiln.slice clamps it): "to the end".
constexpr int64_t kSliceToEnd = int64_t(1) << 62;

/// A 1-D i64 kiln.constant (the shape operands of slice, pad, reshape).
mlir::Value i64Vector(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> values);

} // namespace kiln

#endif // KILN_PASSES_CONSTANTVALUES_H
