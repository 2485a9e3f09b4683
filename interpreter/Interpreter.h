//===- Interpreter.h - runs kiln IR on the reference kernels ----*- C++ -*-===//
//
// The golden reference: walks a kiln function op by op, binds its symbolic dims
// from the inputs' shapes, checks every value's shape against what the IR says,
// and computes each op with the host reference kernels (runtime/reference).
// Problems (wrong inputs, a shape the IR did not promise, an index out of range)
// are one diagnostic at the op or argument concerned.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_INTERPRETER_INTERPRETER_H
#define KILN_INTERPRETER_INTERPRETER_H

#include "kiln/reference/Tensor.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/Support/LLVM.h"

#include <functional>
#include <vector>

namespace mlir {
class Operation;
class Type;
class ElementsAttr;
class Location;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace kiln {

class KernelOp;

struct InterpretOptions {
  /// The value of a dim expression under the symbols bound so far (nullopt when
  /// one is unbound).
  using Evaluate = llvm::function_ref<std::optional<int64_t>(mlir::AffineExpr)>;
  /// Runs a kiln.kernel (host emulation, a GPU); unset, the interpreter runs the
  /// kernel's body on the reference kernels. Returns the kernel's one result.
  std::function<mlir::FailureOr<ref::Tensor>(KernelOp, llvm::ArrayRef<ref::Tensor>, Evaluate)>
      runKernel;
  /// Called before each op runs, with its operands' values (null for one
  /// the interpreter does not hold, a region's captured value): what
  /// calibration reads (kiln-fp8-matmuls' activation ranges).
  std::function<void(mlir::Operation *, llvm::ArrayRef<const ref::Tensor *>)> observe;
  /// A Loop running more iterations than this stops with an error naming the
  /// limit: a trip count from bad data (2^62) must not hang the oracle.
  int64_t maxLoopIterations = int64_t(1) << 20;
};

/// The contents of a constant as a reference tensor; a diagnostic at `loc` when its
/// element type has no reference dtype or its data is missing.
mlir::FailureOr<ref::Tensor> tensorFromElements(mlir::ElementsAttr attr, mlir::Location loc);

/// The bytes tensorFromElements(attr) would hold; a diagnostic at `loc` when it
/// would fail for the element type or the size.
mlir::FailureOr<size_t> elementsByteSize(mlir::ElementsAttr attr, mlir::Location loc);

/// The bytes of tensorFromElements(attr) as the attribute itself stores them,
/// when it does (a resource blob, dense data of 8- to 64-bit elements that is
/// not a splat); nullopt for the others.
std::optional<llvm::ArrayRef<char>> elementsView(mlir::ElementsAttr attr);

/// Writes the bytes of tensorFromElements(attr) to `out` (elementsByteSize
/// bytes), with no tensor in between where the attribute already stores that
/// layout (a resource blob, dense data of 8- to 64-bit elements): weights are
/// copied once on their way into an artifact.
mlir::LogicalResult writeElements(mlir::ElementsAttr attr, mlir::Location loc,
                                  llvm::MutableArrayRef<char> out);

/// Runs `func` on `inputs` (one per argument, in order).
mlir::FailureOr<std::vector<ref::Tensor>> interpret(mlir::func::FuncOp func,
                                                    llvm::ArrayRef<ref::Tensor> inputs,
                                                    const InterpretOptions &options = {});

} // namespace kiln

#endif // KILN_INTERPRETER_INTERPRETER_H
