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
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace kiln {

void PositiveSizes::note(Operation *op) {
  if (!isa_and_nonnull<func::FuncOp>(op->getParentOp()))
    return;
  if (auto topK = dyn_cast<TopKOp>(op)) {
    // ONNX refuses k above the axis's length, so the count is k itself.
    SymShape dims = getSymShape(topK.getValues().getType());
    int64_t axis = static_cast<int64_t>(topK.getAxis());
    if (axis < 0)
      axis += static_cast<int64_t>(dims.size());
    if (axis >= 0 && axis < (int64_t)dims.size() && isSymbolicDim(dims[axis]) &&
        elementsPositive(topK.getK()))
      sizes.insert(dims[axis]);
    return;
  }
  auto conv = dyn_cast<ConvOp>(op);
  if (!conv)
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

bool PositiveSizes::elementsPositive(Value v, unsigned depth) const {
  Operation *def = v.getDefiningOp();
  if (!def || depth > 16)
    return false;
  auto positive = [&](Value operand) { return elementsPositive(operand, depth + 1); };
  auto dimPositive = [&](DimExpr d) {
    std::optional<int64_t> c = getConstantDimValue(d);
    return c ? *c >= 1 : isPositive(d);
  };
  if (auto constant = dyn_cast<ConstantOp>(def)) {
    auto values = dyn_cast<DenseIntElementsAttr>(constant.getValue());
    return values && values.getElementType().getIntOrFloatBitWidth() > 1 &&
           llvm::all_of(values, [](const APInt &x) { return x.sge(1); });
  }
  if (auto symbolic = dyn_cast<SymbolicConstantOp>(def))
    return llvm::all_of(symbolic.getValue().getDims(), dimPositive);
  if (auto shape = dyn_cast<ShapeOfOp>(def)) {
    SymShape dims = getSymShape(shape.getInput().getType());
    return llvm::all_of(dims, [&](DimExpr d) { return d && dimPositive(d); });
  }
  // Ops that only move or pick elements.
  if (isa<ReshapeOp>(def))
    return positive(def->getOperand(0));
  if (auto gather = dyn_cast<GatherOp>(def))
    return positive(gather.getData());
  if (auto slice = dyn_cast<SliceOp>(def))
    return positive(slice.getInput());
  if (auto concat = dyn_cast<ConcatOp>(def))
    return llvm::all_of(concat.getInputs(), positive);
  // A min or max of positive elements. Not a max reduce: over an empty axis
  // it is the type's lowest value (a min reduce's is its highest).
  if (isa<MinOp, MaxOp>(def))
    return llvm::all_of(def->getOperands(), positive);
  if (auto reduce = dyn_cast<ReduceOp>(def))
    return reduce.getKind() == ReduceKind::min && positive(reduce.getInput());
  return false;
}

bool PositiveSizes::isPositive(DimExpr d) const {
  if (!d)
    return false;
  if (sizes.contains(d))
    return true;
  return isNonNegative(subDims(d, getConstantDim(d.getContext(), 1)));
}

bool PositiveSizes::isNonNegative(DimExpr d) const {
  if (!d)
    return false;
  if (isProvablyNonNegative(d))
    return true;
  MLIRContext *ctx = d.getContext();
  // d >= 0 for every value of its symbols where each noted size e + c is at
  // least 1: e stands for s + 1 - c, s a size (>= 0) that no expression here
  // names (numbered past their symbols; the expression is only asked about,
  // never kept). Where e is (x + a) floordiv k with x a symbol (a conv's
  // (h + 2p - window) floordiv stride), e >= m says x >= k * m - a, so x
  // stands for t + k * m - a as well: the stem conv of (h - 1) floordiv 2 + 1
  // makes h at least 1, and h - 1 (torch's `(h - 1) // 8`) non-negative.
  unsigned unnamed = firstUnusedSymbolPosition(d);
  for (AffineExpr size : sizes)
    unnamed = std::max(unnamed, firstUnusedSymbolPosition(size));
  SmallVector<std::pair<DimExpr, int64_t>> atLeast; // e >= m
  llvm::MapVector<AffineExpr, int64_t> symbolAtLeast;
  // Each symbol once, at its largest bound, and at least 0 (it is a size).
  auto boundSymbol = [&](AffineExpr x, int64_t bound) {
    auto [it, inserted] = symbolAtLeast.insert({x, std::max<int64_t>(bound, 0)});
    if (!inserted)
      it->second = std::max(it->second, bound);
  };
  for (AffineExpr size : sizes) {
    DimExpr e = size;
    int64_t c = 0;
    if (auto sum = dyn_cast<AffineBinaryOpExpr>(size);
        sum && sum.getKind() == AffineExprKind::Add && getConstantDimValue(sum.getRHS())) {
      e = sum.getLHS();
      c = *getConstantDimValue(sum.getRHS());
    }
    int64_t m;
    if (getConstantDimValue(e) || __builtin_sub_overflow(int64_t(1), c, &m))
      continue;
    // A bare symbol (a stride-1 conv's h - 2) is a bound on it.
    if (e.getKind() == AffineExprKind::SymbolId) {
      boundSymbol(e, m);
      continue;
    }
    // Each expression once, at its largest bound.
    auto known = llvm::find_if(atLeast, [&](auto &entry) { return entry.first == e; });
    if (known == atLeast.end())
      atLeast.push_back({e, m});
    else
      known->second = std::max(known->second, m);
    auto div = dyn_cast<AffineBinaryOpExpr>(e);
    std::optional<int64_t> k =
        div && div.getKind() == AffineExprKind::FloorDiv ? getConstantDimValue(div.getRHS())
                                                          : std::nullopt;
    if (!k || *k <= 0)
      continue;
    DimExpr x = div.getLHS();
    int64_t a = 0, bound;
    if (auto sum = dyn_cast<AffineBinaryOpExpr>(x);
        sum && sum.getKind() == AffineExprKind::Add && getConstantDimValue(sum.getRHS())) {
      x = sum.getLHS();
      a = *getConstantDimValue(sum.getRHS());
    }
    if (x.getKind() != AffineExprKind::SymbolId || __builtin_mul_overflow(*k, m, &bound) ||
        __builtin_sub_overflow(bound, a, &bound))
      continue;
    boundSymbol(x, bound);
  }
  // The noted expressions first: they name the symbols replaced after them.
  for (auto [e, m] : atLeast)
    d = d.replace(e, addDims(getAffineSymbolExpr(unnamed++, ctx), getConstantDim(ctx, m)));
  for (auto [x, bound] : symbolAtLeast)
    d = d.replace(x, addDims(getAffineSymbolExpr(unnamed++, ctx), getConstantDim(ctx, bound)));
  return isProvablyNonNegative(canonicalizeDim(d));
}

namespace {
/// Replaces `op`'s one result by the constant `value`, with a guard
/// `lower <= d` before it for each size in `relied` (what deciding it took
/// on trust). False, changing nothing, when the constant cannot be made.
bool replaceGuarded(Operation *op, Attribute value, int64_t lower, ArrayRef<DimExpr> relied,
                    StringRef why) {
  OpBuilder builder(op);
  Type type = op->getResult(0).getType();
  Operation *constant = op->getDialect()->materializeConstant(builder, value, type, op->getLoc());
  if (!constant)
    return false;
  MLIRContext *ctx = op->getContext();
  for (DimExpr d : relied)
    GuardOp::create(builder, op->getLoc(), GuardKind::less_equal,
                    DimsAttr::getCanonical(ctx, {getConstantDim(ctx, lower), d}),
                    builder.getStringAttr(describeOp(op) + ": " + why));
  op->getResult(0).replaceAllUsesWith(constant->getResult(0));
  op->erase();
  return true;
}
} // namespace

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
  return value && replaceGuarded(op, value, 1, relied,
                                 "a size made of convolution outputs (and top-k counts of "
                                 "them) is at least 1");
}

bool PositiveSizes::foldDiv(Operation *op) {
  auto div = dyn_cast<DivOp>(op);
  if (!div || sizes.empty() || !isa_and_nonnull<func::FuncOp>(op->getParentOp()) ||
      !isa<IntegerType>(getElementTypeOrSelf(div.getType())))
    return false;
  Attribute lhs, rhs;
  if (!matchPattern(div.getLhs(), m_Constant(&lhs)) ||
      !matchPattern(div.getRhs(), m_Constant(&rhs)))
    return false;
  // Integer division truncates, which is floordiv only for a dividend that
  // is not negative: where the op's own folder cannot prove that, the noted
  // sizes may.
  SmallVector<DimExpr> relied;
  auto dims = [&](DimExpr a, DimExpr b) -> DimExpr {
    std::optional<int64_t> k = getConstantDimValue(b);
    if (!k || *k <= 0)
      return DimExpr();
    if (!isProvablyNonNegative(a)) {
      if (!isNonNegative(a))
        return DimExpr();
      if (!llvm::is_contained(relied, a))
        relied.push_back(a);
    }
    return floorDivDims(a, b);
  };
  Attribute value = dyn_cast_if_present<Attribute>(
      foldBinaryConstant(lhs, rhs, div.getType(), {dims, nullptr, nullptr}));
  // Nothing relied on: the op's own folder does it.
  return value && !relied.empty() &&
         replaceGuarded(op, value, 0, relied,
                        "a dividend the convolutions' sizes bound is not negative (integer "
                        "division truncates)");
}

} // namespace kiln
