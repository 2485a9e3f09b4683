//===- PositiveSizes.cpp - sizes a call that got this far has above 0 -----===//
//
// See PositiveSizes.h.
//
//===----------------------------------------------------------------------===//

#include "passes/PositiveSizes.h"

#include "ir/Kiln/Folding.h"
#include "ir/Kiln/KilnDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace kiln {

void PositiveSizes::note(Operation *op) {
  auto conv = dyn_cast<ConvOp>(op);
  if (!conv || !isa_and_nonnull<func::FuncOp>(op->getParentOp()))
    return;
  SymShape dims = getSymShape(conv.getType());
  if (dims.size() < 3)
    return;
  // [N, C, spatial...], or [N, spatial..., C] channels last.
  size_t first = conv.getChannelsLast() ? 1 : 2, end = first + dims.size() - 2;
  for (size_t d = first; d < end; ++d)
    if (isSymbolicDim(dims[d]))
      sizes.insert(dims[d]);
}

bool PositiveSizes::isPositive(DimExpr d) const {
  if (!d)
    return false;
  if (sizes.contains(d))
    return true;
  // d - 1 >= 0 for every value of its symbols where each noted size
  // e + c is at least 1: e stands for s + 1 - c, s a size (>= 0) that no
  // expression here names (numbered past their symbols; the expression is
  // only asked about, never kept).
  DimExpr one = getConstantDim(d.getContext(), 1);
  unsigned unnamed = firstUnusedSymbolPosition(d);
  for (AffineExpr size : sizes)
    unnamed = std::max(unnamed, firstUnusedSymbolPosition(size));
  for (AffineExpr size : sizes) {
    DimExpr e = size;
    int64_t c = 0;
    if (auto sum = dyn_cast<AffineBinaryOpExpr>(size);
        sum && sum.getKind() == AffineExprKind::Add && getConstantDimValue(sum.getRHS())) {
      e = sum.getLHS();
      c = *getConstantDimValue(sum.getRHS());
    }
    if (getConstantDimValue(e))
      continue;
    DimExpr fresh = addDims(getAffineSymbolExpr(unnamed++, d.getContext()),
                            getConstantDim(d.getContext(), 1 - c));
    d = d.replace(e, fresh);
  }
  return isProvablyNonNegative(subDims(d, one));
}

bool PositiveSizes::foldSelect(Operation *op) {
  auto select = dyn_cast<SelectOp>(op);
  if (!select || sizes.empty())
    return false;
  SmallVector<DimExpr> relied;
  Attribute value = foldSelectOfShapes(select, [&](DimExpr d) {
    if (!isPositive(d))
      return false;
    if (!llvm::is_contained(relied, d))
      relied.push_back(d);
    return true;
  });
  if (!value)
    return false;
  OpBuilder builder(op);
  Operation *constant =
      op->getDialect()->materializeConstant(builder, value, select.getType(), op->getLoc());
  if (!constant)
    return false;
  for (DimExpr d : relied)
    GuardOp::create(builder, op->getLoc(), GuardKind::less_equal,
                    DimsAttr::getCanonical(op->getContext(), {getConstantDim(op->getContext(), 1), d}),
                    builder.getStringAttr(describeOp(op) +
                                          ": a convolution's output size is at least 1"));
  select.getResult().replaceAllUsesWith(constant->getResult(0));
  select.erase();
  return true;
}

} // namespace kiln
