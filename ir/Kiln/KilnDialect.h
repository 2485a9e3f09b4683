//===- KilnDialect.h - the kiln graph dialect -------------------*- C++ -*-===//
//
// Everything a pass needs to build or inspect kiln IR: the dialect, its attributes,
// its ops, and the symbolic-dim helpers their shape functions use.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILN_KILNDIALECT_H
#define KILN_IR_KILN_KILNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TensorEncoding.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ir/Kiln/SymbolicDims.h"

namespace kiln {
namespace OpTrait {
/// Marks kiln's broadcasting elementwise ops. Unlike upstream's Elementwise it
/// allows operands of different (broadcast-compatible) shapes.
template <typename ConcreteType>
class Elementwise : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {};

mlir::LogicalResult verifyShapeFunction(mlir::Operation *op);

/// Verifies an op by running its shape function with diagnostics on.
template <typename ConcreteType>
class VerifyShapeFunction : public mlir::OpTrait::TraitBase<ConcreteType, VerifyShapeFunction> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) { return verifyShapeFunction(op); }
};
} // namespace OpTrait

/// True when `declared` may stand where `inferred` was computed: same element types
/// and ranks, and per dim either equal, one side unknown, or two symbolic
/// expressions (which may be equal under assumptions the runtime guards). Two
/// different sizes, or a size against a symbol, are incompatible.
bool areRefinementCompatible(mlir::TypeRange inferred, mlir::TypeRange declared);
/// Parses and prints a bracketed list of dim expressions, `[batch * seq, ?, 768]`,
/// the body of `#kiln.dims`. Parsed expressions come back canonical.
mlir::ParseResult parseDimList(mlir::AsmParser &parser,
                               llvm::SmallVectorImpl<mlir::AffineExpr> &dims);
void printDimList(mlir::AsmPrinter &printer, llvm::ArrayRef<mlir::AffineExpr> dims);

/// The model node an op came from ("Conv_3", the importer's NameLoc), or "" when
/// its location names none.
std::string nodeNameOf(mlir::Location loc);
} // namespace kiln

#include "ir/Kiln/KilnDialect.h.inc"
#include "ir/Kiln/KilnEnums.h.inc"

namespace kiln {
/// Whether `v` is known at compile time, as numbers or symbols: a constant or
/// a symbolic constant (a shape operand codegen reads while emitting).
bool isCompileTimeValue(mlir::Value v);

/// The symbols a function's kernels read from device memory rather than take
/// as arguments (an array of their names; kiln-kv-cache-in-place sets it to
/// the mask's length, which changes every decode step), and, per symbol, the
/// dim its value never exceeds (a DimsAttr in the same order), at which the
/// runtime sizes those kernels' grids and the memory plan.
inline constexpr llvm::StringLiteral kDeviceSymbolsAttr = "kiln.device_symbols";
inline constexpr llvm::StringLiteral kDeviceSymbolBoundsAttr = "kiln.device_symbol_bounds";

/// A cast kiln-fp8-matmuls made to quantize a matmul's activation to e4m3:
/// kiln-lower-precision lets its input go narrow (rounding to bf16 before
/// e4m3 moves a value by far less than e4m3's step), where it keeps the
/// inputs of a model's own float8 casts in fp32.
inline constexpr llvm::StringLiteral kFp8OperandAttr = "kiln.fp8_operand";

/// A function argument's or result's name as the model gives it (the ONNX
/// input's or output's name): what callers bind inputs and read outputs by.
inline constexpr llvm::StringLiteral kNameAttr = "kiln.name";

/// The attribute kiln-name-unknown-dims puts on an op whose data decides some
/// of its result dims: `[[result, dim, "symbol"], ...]`, the symbols it binds
/// when it runs (the artifact writer makes them Step.binds). An if's verifier
/// reads it: a dim its step binds is whatever the branch that ran yields.
inline constexpr llvm::StringLiteral kBindsDimsAttr = "kiln.binds_dims";

/// The attribute kiln-lower-precision puts on a function it ran on in a mode
/// other than fp32 (a PrecisionAttr).
inline constexpr llvm::StringLiteral kPrecisionAttr = "kiln.precision";

/// The precision mode recorded on `func` (fp32 when none is).
Precision precisionOf(mlir::Operation *func);

} // namespace kiln

/// What codegen and the passes know of an op (KernelFacts.td).
#include "ir/Kiln/KernelTypes.h"
#include "ir/Kiln/KernelFacts.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/Kiln/KilnAttrs.h.inc"

#include "ir/Kiln/ShapeInference.h"

#define GET_OP_CLASSES
#include "ir/Kiln/KilnOps.h.inc"

#endif // KILN_IR_KILN_KILNDIALECT_H
