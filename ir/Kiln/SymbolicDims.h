//===- SymbolicDims.h - dim expressions over named symbols ------*- C++ -*-===//
//
// A dim of a kiln tensor is a DimExpr: an mlir::AffineExpr over symbols whose names
// live in the kiln dialect's symbol table (`batch`, `seq`, ...), or null when
// nothing is known. Expressions are kept canonical (a polynomial with sorted terms,
// with floordiv/ceildiv/mod kept as opaque factors), so equal dims compare equal as
// pointers: `seq * batch` and `batch * seq` are the same AffineExpr.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILN_SYMBOLICDIMS_H
#define KILN_IR_KILN_SYMBOLICDIMS_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace kiln {

using DimExpr = mlir::AffineExpr;
using SymShape = llvm::SmallVector<DimExpr, 4>;

/// Rewrites `expr` into kiln's canonical form. Null stays null.
DimExpr canonicalizeDim(DimExpr expr);

/// The dim that is the named symbol.
DimExpr getSymbolDim(mlir::MLIRContext *context, llvm::StringRef name);
/// A fresh symbol whose name starts with `hint`.
DimExpr getFreshSymbolDim(mlir::MLIRContext *context, llvm::StringRef hint);
DimExpr getConstantDim(mlir::MLIRContext *context, int64_t value);

/// The value of a dim that is a constant.
std::optional<int64_t> getConstantDimValue(DimExpr dim);
inline bool isSymbolicDim(DimExpr dim) { return dim && !getConstantDimValue(dim); }

// Arithmetic on dims, canonical results; any null operand gives null, and so does an
// overflow or a division by zero.
DimExpr addDims(DimExpr a, DimExpr b);
DimExpr subDims(DimExpr a, DimExpr b);
DimExpr mulDims(DimExpr a, DimExpr b);
DimExpr floorDivDims(DimExpr a, DimExpr b);
DimExpr ceilDivDims(DimExpr a, DimExpr b);
DimExpr modDims(DimExpr a, DimExpr b);
/// The first symbol position past every symbol `dim` uses: where a proof may
/// number symbols of its own (a size standing for a sub-expression) without
/// meeting one of the expression's.
unsigned firstUnusedSymbolPosition(DimExpr dim);

/// k when `a` is exactly k times `b` for a constant k (a reshape's -1 over
/// symbolic counts: 60·h·w elements as [1, -1, 4·h·w] is 15, not a quotient
/// of polynomials); nullopt when that cannot be shown.
std::optional<int64_t> constantQuotient(DimExpr a, DimExpr b);
/// The product of `dims`; 1 for none.
DimExpr productOfDims(mlir::MLIRContext *context, llvm::ArrayRef<DimExpr> dims);

/// The dims of `type`: static sizes as constants, dynamic ones from the `#kiln.dims`
/// encoding or null.
SymShape getSymShape(mlir::RankedTensorType type);
SymShape getSymShape(mlir::Type type);

/// The ranked tensor type with these dims: constants become static sizes, anything
/// symbolic is recorded in a `#kiln.dims` encoding. Returns null when a constant dim
/// is negative.
mlir::RankedTensorType makeTensorType(llvm::ArrayRef<DimExpr> dims,
                                      mlir::Type elementType);

/// True when `dim` is non-negative for every non-negative value of its symbols: a
/// polynomial with non-negative coefficients over symbols and divisions of such,
/// or a sum whose negative terms are cancelled once each division by a constant is
/// read as an exact quotient less a bounded remainder (`h - 4 * ((h floordiv 2)
/// floordiv 2) + 32`, a crop margin).
bool isProvablyNonNegative(DimExpr dim);

/// True for names a symbol may have in printed IR: an identifier that is not one of
/// the operator keywords (floordiv, ceildiv, mod).
bool isValidSymbolName(llvm::StringRef name);

/// Evaluates `dim` with each symbol position bound through `symbolValue`; nullopt
/// when a symbol is unbound, on division by zero, or on overflow.
std::optional<int64_t>
evaluateDim(DimExpr dim,
            llvm::function_ref<std::optional<int64_t>(unsigned)> symbolValue);

/// Prints `dim` with symbol names, `?` for null.
void printDim(llvm::raw_ostream &os, DimExpr dim);
std::string dimToString(DimExpr dim);

/// Floor and ceil division with the mathematical (not C) rounding of negatives.
int64_t floorDivInt(int64_t a, int64_t b);
int64_t ceilDivInt(int64_t a, int64_t b);
int64_t floorModInt(int64_t a, int64_t b);

} // namespace kiln

#endif // KILN_IR_KILN_SYMBOLICDIMS_H
