//===- Folding.h - constant folding shared by the kiln ops ------*- C++ -*-===//
//
// Folders evaluate on constants of up to kMaxFoldElements elements: enough for the
// shape computations exported models carry, without copying large weights around
// at compile time. Floats compute in double and round once, as the reference
// interpreter does.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILN_FOLDING_H
#define KILN_IR_KILN_FOLDING_H

#include "ir/Kiln/SymbolicDims.h"
#include "kiln/ops/Elementwise.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"

namespace kiln {

constexpr int64_t kMaxFoldElements = 1 << 16;
/// Folders that walk elements one by one (a DimExpr each for a slice of an
/// integer table, a double each for a reduction) take tables of shape size only.
constexpr int64_t kMaxShapeTableElements = 1024;

/// Whether two values of this type are known to have one shape: every dim
/// static or a symbolic expression, none unknown. Equal types say nothing
/// about dims that are `?` without a symbol (two such tensors may differ in
/// size), so a folder that returns an operand because the types match
/// (reshape to the same type, select whose operands broadcast) checks this.
bool hasKnownShape(mlir::Type type);

using FloatUnaryFn = llvm::function_ref<double(double)>;
using IntUnaryFn = llvm::function_ref<llvm::APInt(const llvm::APInt &, bool isUnsigned)>;

/// Folds an elementwise unary op on a dense constant. Either function may be null
/// when the op has no meaning for that element kind. A float op whose result is i1
/// (is_nan) maps a nonzero result to true.
mlir::OpFoldResult foldUnaryConstant(mlir::Attribute input, mlir::Type resultType,
                                     FloatUnaryFn floatFn, IntUnaryFn intFn);

/// How a binary op computes, per element kind; a null function skips that kind. The
/// int function returns nullopt when it cannot fold (division by zero).
struct BinaryFoldFns {
  llvm::function_ref<DimExpr(DimExpr, DimExpr)> dims;
  llvm::function_ref<double(double, double)> floats;
  llvm::function_ref<std::optional<llvm::APInt>(const llvm::APInt &, const llvm::APInt &,
                                                bool isUnsigned)>
      ints;
};

/// Folds an elementwise binary op when both operands are known: symbolic integer
/// elements through `dims`, dense constants through `floats`/`ints`. Operands must
/// have the result's number of elements or be a single element.
mlir::OpFoldResult foldBinaryConstant(mlir::Attribute lhs, mlir::Attribute rhs,
                                      mlir::Type resultType, const BinaryFoldFns &fns);

/// Folds a unary op of the op table on a dense constant with its row's semantics
/// (kiln::ops::evalFloat/evalInt, which the reference kernels compute too).
/// Integers wider than 64 bits are not folded.
mlir::OpFoldResult foldUnaryFn(ops::UnaryFn fn, mlir::Attribute input, mlir::Type resultType);
/// Folds a binary op of the op table: dense constants with its row's semantics,
/// symbolic sizes through `dims` (null: not folded). An integer division by
/// zero, and integers wider than 64 bits, are not folded.
mlir::OpFoldResult foldBinaryFn(ops::BinaryFn fn, mlir::Attribute lhs, mlir::Attribute rhs,
                                mlir::Type resultType,
                                llvm::function_ref<DimExpr(DimExpr, DimExpr)> dims);


/// The elements `step`/`start` (constants, one per axis) read from a small
/// static table `data` of type `inType` into `type`, as Slice reads them;
/// nullopt when a position is not constant or falls outside.
std::optional<SymShape> sliceTable(llvm::ArrayRef<DimExpr> data, mlir::RankedTensorType inType,
                                   mlir::RankedTensorType type, llvm::ArrayRef<DimExpr> start,
                                   llvm::ArrayRef<DimExpr> step);

/// The row-major elements of a small static i64 table `v`, known (constants
/// or symbolic) or rearranged from known ones through reshapes, transposes
/// and slices of any rank; nullopt otherwise.
std::optional<SymShape> evaluateShapeTable(mlir::Value v, int depth);

class SelectOp;
/// The shape vector `select` picks element by element from known ones
/// (symbolic dims or constants), its condition a constant or a compare of
/// known vectors: #kiln.dims or a dense constant, null when an element is
/// undecided. `isPositive` (may be null) names sizes known to be at least 1
/// where the select runs, which decides `size == 0` (kiln-infer-shapes and
/// kiln-name-unknown-dims know the outputs of convs that ran before it).
mlir::Attribute foldSelectOfShapes(SelectOp select,
                                   llvm::function_ref<bool(DimExpr)> isPositive);

/// True when `attr` is a splat constant equal to `value`.
bool isSplatValue(mlir::Attribute attr, double value);

} // namespace kiln

#endif // KILN_IR_KILN_FOLDING_H
