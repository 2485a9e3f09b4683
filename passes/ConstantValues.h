//===- ConstantValues.h - float weight constants for weight rewrites -*- C++ -*-===//
//
// Passes that rewrite weights at compile time (batch norms folded into convs,
// sibling matmuls merged) read a kiln.constant's values and write new ones.
// Values as doubles only for f32 and f64; bytes of any float type. Dense or
// resource blobs (how large weights are imported).
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_CONSTANTVALUES_H
#define KILN_PASSES_CONSTANTVALUES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <vector>

namespace kiln {

/// The values of `v` when it is an f32 or f64 kiln.constant with a static
/// shape (dense, or a resource blob), as doubles in row-major order.
std::optional<std::vector<double>> readFloats(mlir::Value v);

/// The value of a float constant with one element (any shape of ones, any
/// float type: an fp16 model's scale is an fp16 constant), else none.
std::optional<double> scalarConstant(mlir::Value v);

/// The bytes of `v` when it is a kiln.constant of whole-byte elements (f64,
/// f32, f16, bf16, fp8, and integers of 8 to 64 bits) with a static shape, in row-major order: a view of the constant's own storage (dense data
/// or a resource blob), or a copy in `storage` for a splat. Nothing is
/// converted: weight rewrites that only move elements copy bytes.
std::optional<llvm::ArrayRef<char>> constantBytes(mlir::Value v, std::vector<char> &storage);

/// A kiln.constant of `type` (f32, f64, f16 or bf16; narrow types rounded to
/// nearest even) holding `values`.
mlir::Value makeConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                         llvm::ArrayRef<double> values);

/// A kiln.constant of `type` whose `bytes` bytes (the elements in row-major
/// order) `fill` writes. A large constant is a resource blob that `fill`
/// writes in place (no copy, and the context neither hashes nor uniques it);
/// a small one or a splat is dense.
mlir::Value makeConstantFromBytes(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::RankedTensorType type, size_t bytes,
                                  llvm::function_ref<void(llvm::MutableArrayRef<char>)> fill);

/// Erases `old`'s kiln.constant when nothing uses it any more, and frees its
/// resource blob when no other constant refers to it: a weight a pass
/// rewrote is then in memory once, not once per rewrite. The blob is freed
/// only in a module of one function (passes run per function, perhaps in
/// parallel: another function's constants are not a pass's to read).
void eraseDeadWeight(mlir::Value old);

/// A slice end past any dim (kiln.slice clamps it): "to the end".
constexpr int64_t kSliceToEnd = int64_t(1) << 62;

/// A 1-D i64 kiln.constant (the shape operands of slice, pad, reshape).
mlir::Value i64Vector(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> values);

} // namespace kiln

#endif // KILN_PASSES_CONSTANTVALUES_H
