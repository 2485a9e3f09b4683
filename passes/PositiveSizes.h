//===- PositiveSizes.h - sizes a call that got this far has above 0 -*- C++ -*-===//
//
// torch exports a reshape to a computed size n as `Where(shape == 0,
// input_shape, shape)`: ONNX would read a 0 as "copy the input's dim". For a
// symbolic n the select is undecided, so the reshape's target is data (a read
// and fresh symbols after it), unless n is known to be at least 1. The
// spatial dims of a top-level convolution are whenever it runs: a call whose
// conv would have a dim below 1 fails at the conv (the filter larger than
// the padded input, on every backend). So is a top-level top-k's count where
// its k is computed from such sizes and constants of at least 1 (a detector's
// min(1000, anchors of the level), read on the device): the device computes
// the same k from sizes that are. Those facts bound the symbols too: a conv
// whose output is (h - 1) floordiv 2 + 1 ran only where h - 1 >= 0, which is
// what torch's `(h - 1) // 8` (an integer Div, truncating) needs to be a
// floordiv and the reshape after it to have dims. kiln-infer-shapes and
// kiln-name-unknown-dims note them as they sweep and decide such selects
// (and divisions) after them, with a guard `1 <= n` (`0 <= a`) for each size
// they took to be positive (dividend to be non-negative):
// what the decision relies on is then checked even where the conv does not
// run (a later pass may find it dead), and costs nothing where it does.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_POSITIVESIZES_H
#define KILN_PASSES_POSITIVESIZES_H

#include "ir/Kiln/SymbolicDims.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
class Operation;
} // namespace mlir

namespace kiln {

class PositiveSizes {
public:
  /// Notes `op`'s spatial result dims when it is a convolution at the top
  /// level of its function (one every call runs), and the count of a
  /// top-level top-k (once named) whose k is positive by the noted sizes.
  void note(mlir::Operation *op);
  /// foldSelect or foldDiv, whichever `op` is: what the passes that sweep
  /// call before an op's own folder.
  bool fold(mlir::Operation *op) { return foldSelect(op) || foldDiv(op); }
  /// When `op` is a select of shape vectors that the noted sizes decide,
  /// replaces it by its value, puts the guards it relies on before it, and
  /// returns true; otherwise changes nothing.
  bool foldSelect(mlir::Operation *op);
  /// When `op` is a top-level integer division of shape vectors whose
  /// dividends the noted sizes make non-negative (truncation is floordiv
  /// there), replaces it by its value with a guard `0 <= a` for each such
  /// dividend before it, and returns true; otherwise changes nothing.
  bool foldDiv(mlir::Operation *op);
  /// Whether `d` is at least 1 wherever the noted sizes are.
  bool isPositive(DimExpr d) const;
  /// Whether `d` is at least 0 wherever the noted sizes are at least 1.
  bool isNonNegative(DimExpr d) const;

private:
  /// Whether every element of the i64 value `v` is at least 1 wherever the
  /// noted sizes are; `depth` bounds the walk up its producers.
  bool elementsPositive(mlir::Value v, unsigned depth = 0) const;

  /// In the order noted: the proofs, and so the artifacts, do not depend on
  /// where the expressions live in memory.
  llvm::SetVector<mlir::AffineExpr> sizes;
};

} // namespace kiln

#endif // KILN_PASSES_POSITIVESIZES_H
