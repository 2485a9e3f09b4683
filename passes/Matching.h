//===- Matching.h - what the op-chain fusion passes share --------*- C++ -*-===//
//
// The passes that rewrite chains of ops match values read only by the chain
// (--kiln-fuse-attention, --kiln-fuse-rms-norm) and build ops with the types
// their shape functions infer (those two, --kiln-sizes-on-device).
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_MATCHING_H
#define KILN_PASSES_MATCHING_H

#include "mlir/IR/Builders.h"

namespace kiln {

/// `v`'s defining op when it is an `OpT` whose result only the chain reads.
template <typename OpT> OpT singleUseDef(mlir::Value v) {
  auto op = v.getDefiningOp<OpT>();
  return op && op->getResult(0).hasOneUse() ? op : OpT();
}

/// Builds op `name` of one result from `operands` and `attributes` with the
/// type its shape function infers, asked silently (a refusal is no
/// diagnostic). Builds nothing and returns null when the shape function
/// refuses, or when `expected` is given and the type is another: a fusion
/// then keeps its chain instead of failing the compile (the generated
/// builders abort on a refusal).
mlir::Operation *createInferred(mlir::OpBuilder &b, mlir::Location location,
                                llvm::StringRef name, mlir::ValueRange operands,
                                llvm::ArrayRef<mlir::NamedAttribute> attributes,
                                mlir::Type expected = {});

/// Erases `v`'s producer when nothing reads it and it has no effect, then
/// theirs, back through the operands: what a rewrite left behind (the chain
/// it replaced, shape constants of a reshape no longer built).
void eraseUnreadProducers(mlir::Value v);

} // namespace kiln

#endif // KILN_PASSES_MATCHING_H
