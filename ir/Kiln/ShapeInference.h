//===- ShapeInference.h - helpers behind the kiln ops' shape functions -*- C++ -*-===//
//
// Shape functions are each op's InferTypeOpInterface. The helpers here are shared by
// families of ops (broadcasting elementwise, softmax-like, ...) and by the folders.
// Errors go through emitOptionalError: verification passes a location and gets a
// diagnostic; builders pass none and just see failure().
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILN_SHAPEINFERENCE_H
#define KILN_IR_KILN_SHAPEINFERENCE_H

#include "ir/Kiln/SymbolicDims.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "mlir/IR/ValueRange.h"

#include <string>
#include <vector>

namespace kiln {

using InferredTypes = llvm::SmallVectorImpl<mlir::Type>;

/// The largest rank kiln builds a tensor of. A shape operand longer than this is
/// corrupt input, not a reason to create a type with a billion dims.
constexpr int64_t kMaxRank = 64;

/// Emits "'<op>' op <message>" at `location` when there is one; always fails.
mlir::LogicalResult emitShapeError(std::optional<mlir::Location> location,
                                   llvm::StringRef opName, const llvm::Twine &message);

/// `axis` in [-rank, rank) made non-negative, or an error naming `what`.
mlir::FailureOr<int64_t> normalizeAxis(std::optional<mlir::Location> location,
                                       llvm::StringRef opName, int64_t axis,
                                       int64_t rank, llvm::StringRef what = "axis");

/// Checks that an attribute list has `expected` entries, each >= `minimum`, or
/// emits "<what> has N entries; expected M" / "<what> entries must be >= ...".
mlir::LogicalResult checkEntries(std::optional<mlir::Location> location,
                                 llvm::StringRef opName, llvm::ArrayRef<int64_t> values,
                                 size_t expected, int64_t minimum, llvm::StringRef what);

/// A fact about symbolic dims that a shape function relied on without being able
/// to prove it: two dims taken equal (matmul's contraction, concat's other dims),
/// a dim broadcast against another (it must be 1 or equal), a position taken to be
/// inside a dim (slices), element counts taken equal (reshape). Each one becomes a
/// `kiln.guard` (kiln-materialize-guards) that the runtime checks on every call.
struct ShapeAssumption {
  /// Numbered as kiln.guard's GuardKind (ShapeOps.cpp checks).
  enum class Kind { Equal = 0, EqualOrOne = 1, LessEqual = 2 };
  Kind kind;
  DimExpr lhs, rhs;
  std::string what; ///< "dim 1 of input 2", without the op
};

/// While alive, shape functions that run on this thread record their unproven
/// assumptions into `sink` (shape functions run many times, in verifiers and
/// folders; only a pass that asks collects). Scopes nest: the innermost collects.
class ShapeAssumptionScope {
public:
  explicit ShapeAssumptionScope(std::vector<ShapeAssumption> &sink);
  ~ShapeAssumptionScope();
  ShapeAssumptionScope(const ShapeAssumptionScope &) = delete;
  ShapeAssumptionScope &operator=(const ShapeAssumptionScope &) = delete;

private:
  std::vector<ShapeAssumption> *previous;
};

/// Records `lhs <kind> rhs` in the active scope, unless there is none, a dim is
/// unknown, or the fact is provably true.
void recordShapeAssumption(ShapeAssumption::Kind kind, DimExpr lhs, DimExpr rhs,
                           const llvm::Twine &what);

/// One key per fact however it is written (a == b and b == a are one): what
/// kiln-materialize-guards dedups guards by, and kiln-form-kernels looks
/// guarded facts up by.
std::string shapeFactKey(ShapeAssumption::Kind kind, DimExpr lhs, DimExpr rhs);

/// Whether an assumption holds for every non-negative value of its symbols
/// (true), never holds (false: two constants that differ), or depends on them.
std::optional<bool> decideShapeAssumption(ShapeAssumption::Kind kind, DimExpr lhs,
                                          DimExpr rhs);

/// numpy broadcasting of several shapes. Fails on two different static sizes
/// neither of which is 1; two different symbolic sizes give `?`.
mlir::FailureOr<SymShape> broadcastShapes(std::optional<mlir::Location> location,
                                          llvm::StringRef opName,
                                          llvm::ArrayRef<SymShape> shapes);

/// Merges two dims that must be equal: the more informative wins (static over
/// symbolic over unknown). Fails on two different static sizes.
mlir::FailureOr<DimExpr> unifyDims(std::optional<mlir::Location> location,
                                   llvm::StringRef opName, DimExpr a, DimExpr b,
                                   const llvm::Twine &what);

/// The input's type with element type `resultElement` (or its own, when null).
mlir::LogicalResult inferUnaryElementwise(mlir::Value input, mlir::Type resultElement,
                                          InferredTypes &inferred);

/// Broadcasts `operands`' shapes; every value in `sameElementOperands` must share one
/// element type, which is the result's unless `resultElement` is given.
mlir::LogicalResult inferBroadcastElementwise(std::optional<mlir::Location> location,
                                              llvm::StringRef opName,
                                              mlir::ValueRange operands,
                                              mlir::ValueRange sameElementOperands,
                                              mlir::Type resultElement,
                                              InferredTypes &inferred);

/// Same type as `input`, after checking that `axis` is one of its dims.
mlir::LogicalResult inferSameShapeAlongAxis(std::optional<mlir::Location> location,
                                            llvm::StringRef opName, mlir::Value input,
                                            int64_t axis, InferredTypes &inferred);

/// What is known of the elements of an integer tensor, flattened: from a dense
/// integer attribute, a #kiln.dims value, or (for values) the op that defines it.
/// Unknown elements are null; nullopt when nothing is known.
std::optional<SymShape> getKnownElements(mlir::Attribute attr,
                                         mlir::MLIRContext *context);
std::optional<SymShape> getKnownElements(mlir::Value value);

/// The attribute a folder returns for an integer tensor of `type` holding `elements`:
/// dense when every element is a constant, #kiln.dims when some are symbolic (i64
/// only), null when an element is unknown.
mlir::Attribute makeKnownElementsAttr(mlir::RankedTensorType type,
                                      llvm::ArrayRef<DimExpr> elements);

} // namespace kiln

#endif // KILN_IR_KILN_SHAPEINFERENCE_H
