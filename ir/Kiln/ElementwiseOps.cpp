//===- ElementwiseOps.cpp - binary, compare, select and cast --------------===//
//
// Unary ops are generated whole from ElementwiseOps.td and their rows in the op
// table; the binary ops' shape functions are generated too. Here are the folders
// of the binary family (constants by the op table, sizes and identities by each
// op) and the compare, select and cast ops.
//
//===----------------------------------------------------------------------===//

#include "ir/Kiln/Folding.h"
#include "ir/Kiln/ShapeInference.h"
#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/OpTables.h"

#include "mlir/IR/Matchers.h"

#include "llvm/ADT/APSInt.h"

#include <cmath>

using namespace mlir;

namespace kiln {

namespace {
/// Folds `x op c` to `x` when `c` is a splat identity and nothing broadcasts.
OpFoldResult foldIdentity(Value x, Attribute c, Type resultType, double identity) {
  if (x.getType() == resultType && isSplatValue(c, identity))
    return x;
  return {};
}

/// Constants fold with the op's row in the op table; `dims` folds sizes.
template <typename Op>
OpFoldResult foldByTable(Op op, typename Op::FoldAdaptor adaptor,
                         llvm::function_ref<DimExpr(DimExpr, DimExpr)> dims = nullptr) {
  return foldBinaryFn(BinaryFnOf<Op>::value, adaptor.getLhs(), adaptor.getRhs(), op.getType(),
                      dims);
}

/// max/min of sizes: only when one side is known to be the larger.
DimExpr maxDims(DimExpr a, DimExpr b) {
  if (a == b)
    return a;
  if (isProvablyNonNegative(subDims(a, b)))
    return a;
  if (isProvablyNonNegative(subDims(b, a)))
    return b;
  return DimExpr();
}
DimExpr minDims(DimExpr a, DimExpr b) {
  DimExpr m = maxDims(a, b);
  if (!m)
    return m;
  return m == a ? b : a;
}
} // namespace

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0))
    return r;
  if (auto r = foldIdentity(getRhs(), adaptor.getLhs(), getType(), 0))
    return r;
  return foldByTable(*this, adaptor, addDims);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0))
    return r;
  return foldByTable(*this, adaptor, subDims);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 1))
    return r;
  if (auto r = foldIdentity(getRhs(), adaptor.getLhs(), getType(), 1))
    return r;
  return foldByTable(*this, adaptor, mulDims);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 1))
    return r;
  // Integer division truncates; on sizes (non-negative) that is floordiv.
  auto dims = [](DimExpr a, DimExpr b) -> DimExpr {
    auto cb = getConstantDimValue(b);
    if (!cb || *cb <= 0 || !isProvablyNonNegative(a))
      return DimExpr();
    return floorDivDims(a, b);
  };
  return foldByTable(*this, adaptor, dims);
}

OpFoldResult RemOp::fold(FoldAdaptor adaptor) { return foldByTable(*this, adaptor); }

OpFoldResult ModOp::fold(FoldAdaptor adaptor) {
  auto dims = [](DimExpr a, DimExpr b) -> DimExpr {
    auto cb = getConstantDimValue(b);
    return cb && *cb > 0 ? modDims(a, b) : DimExpr();
  };
  return foldByTable(*this, adaptor, dims);
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 1))
    return r;
  return foldByTable(*this, adaptor);
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) { return foldByTable(*this, adaptor, maxDims); }
OpFoldResult MinOp::fold(FoldAdaptor adaptor) { return foldByTable(*this, adaptor, minDims); }

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 1))
    return r;
  return foldByTable(*this, adaptor);
}
OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0))
    return r;
  return foldByTable(*this, adaptor);
}
OpFoldResult XorOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0))
    return r;
  return foldByTable(*this, adaptor);
}
OpFoldResult BitwiseAndOp::fold(FoldAdaptor adaptor) { return foldByTable(*this, adaptor); }
OpFoldResult BitwiseOrOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0))
    return r;
  return foldByTable(*this, adaptor);
}
OpFoldResult BitwiseXorOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0))
    return r;
  return foldByTable(*this, adaptor);
}
OpFoldResult ShiftLeftOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0))
    return r;
  return foldByTable(*this, adaptor);
}
OpFoldResult ShiftRightOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0))
    return r;
  return foldByTable(*this, adaptor);
}

//===----------------------------------------------------------------------===//
// compare
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> location,
                                          Adaptor adaptor, InferredTypes &inferred) {
  return inferBroadcastElementwise(location, getOperationName(),
                                   {adaptor.getLhs(), adaptor.getRhs()},
                                   {adaptor.getLhs(), adaptor.getRhs()},
                                   IntegerType::get(context, 1), inferred);
}

namespace {
/// The order of two symbolic dims when it holds for every value of the symbols
/// (sizes, never negative): equal expressions, or a difference provably >= 1
/// (a size against a negative constant, `n + 1` against `n`).
std::optional<int> orderOf(DimExpr a, DimExpr b) {
  if (a == b)
    return 0;
  DimExpr one = getAffineConstantExpr(1, a.getContext());
  if (isProvablyNonNegative(subDims(subDims(a, b), one)))
    return 1;
  if (isProvablyNonNegative(subDims(subDims(b, a), one)))
    return -1;
  return std::nullopt;
}

/// The flattened element lists of a folder's operands broadcast to `count`
/// elements (each has `count` or one), or nullopt when an element is unknown.
std::optional<std::pair<SymShape, SymShape>> knownPair(Attribute lhs, Attribute rhs,
                                                       int64_t count, MLIRContext *context) {
  std::optional<SymShape> a = lhs ? getKnownElements(lhs, context) : std::nullopt;
  std::optional<SymShape> b = rhs ? getKnownElements(rhs, context) : std::nullopt;
  if (!a || !b)
    return std::nullopt;
  SymShape x, y;
  for (int64_t i = 0; i < count; ++i) {
    if ((a->size() != 1 && static_cast<int64_t>(a->size()) != count) ||
        (b->size() != 1 && static_cast<int64_t>(b->size()) != count))
      return std::nullopt;
    x.push_back((*a)[a->size() == 1 ? 0 : i]);
    y.push_back((*b)[b->size() == 1 ? 0 : i]);
    if (!x.back() || !y.back())
      return std::nullopt;
  }
  return std::make_pair(x, y);
}
} // namespace

namespace {
/// `a <direction> b` for a three-way `order` (-1, 0, 1), or either order
/// being unordered (a NaN).
bool decideCompare(CompareDirection direction, int order, bool unordered) {
  if (unordered)
    return direction == CompareDirection::ne;
  switch (direction) {
  case CompareDirection::eq:
    return order == 0;
  case CompareDirection::ne:
    return order != 0;
  case CompareDirection::lt:
    return order < 0;
  case CompareDirection::le:
    return order <= 0;
  case CompareDirection::gt:
    return order > 0;
  case CompareDirection::ge:
    return order >= 0;
  }
  return false;
}

/// Per element, the two dims a compare of integer vectors relates (null
/// where unknown), broadcast to `count`; nullopt when an operand is not known.
std::optional<std::pair<SymShape, SymShape>> comparedElements(CompareOp compare, int64_t count) {
  auto lhsType = dyn_cast<RankedTensorType>(compare.getLhs().getType());
  if (!lhsType || !lhsType.getElementType().isInteger(64))
    return std::nullopt;
  std::optional<SymShape> a = getKnownElements(compare.getLhs());
  std::optional<SymShape> b = getKnownElements(compare.getRhs());
  if (!a || !b || (a->size() != 1 && static_cast<int64_t>(a->size()) != count) ||
      (b->size() != 1 && static_cast<int64_t>(b->size()) != count))
    return std::nullopt;
  SymShape x, y;
  for (int64_t i = 0; i < count; ++i) {
    x.push_back((*a)[a->size() == 1 ? 0 : i]);
    y.push_back((*b)[b->size() == 1 ? 0 : i]);
  }
  return std::make_pair(x, y);
}

/// Element by element, what a compare of two known shape vectors yields
/// where no symbol value could change it (nullopt where one could), for
/// `count` elements; nullopt when an operand is not known.
std::optional<SmallVector<std::optional<bool>>> decideCompareElements(CompareOp compare,
                                                                      int64_t count) {
  std::optional<std::pair<SymShape, SymShape>> compared = comparedElements(compare, count);
  if (!compared)
    return std::nullopt;
  SmallVector<std::optional<bool>> decided;
  for (auto [x, y] : llvm::zip(compared->first, compared->second)) {
    std::optional<int> order = x && y ? orderOf(x, y) : std::nullopt;
    decided.push_back(order ? std::optional<bool>(decideCompare(compare.getDirection(), *order,
                                                                false))
                            : std::nullopt);
  }
  return decided;
}
} // namespace

OpFoldResult CompareOp::fold(FoldAdaptor adaptor) {
  CompareDirection direction = getDirection();
  auto decide = [direction](int order, bool unordered) {
    return decideCompare(direction, order, unordered);
  };
  // Shape vectors with symbolic dims (torch's `Where(Equal(shape, -1), 1, shape)`
  // for expand(-1)): decided where no symbol value could change the answer.
  auto type = dyn_cast<RankedTensorType>(getType());
  if (type && type.hasStaticShape() && type.getRank() <= 1 &&
      (isa_and_present<DimsAttr>(adaptor.getLhs()) || isa_and_present<DimsAttr>(adaptor.getRhs()))) {
    std::optional<std::pair<SymShape, SymShape>> pair =
        knownPair(adaptor.getLhs(), adaptor.getRhs(), type.getNumElements(), getContext());
    if (!pair)
      return {};
    SmallVector<bool> values;
    for (auto [a, b] : llvm::zip(pair->first, pair->second)) {
      std::optional<int> order = orderOf(a, b);
      if (!order)
        return {};
      values.push_back(decide(*order, false));
    }
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  return foldBinaryConstant(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      {nullptr,
       [&](double a, double b) -> double {
         return decide(a < b ? -1 : (a > b ? 1 : 0), std::isnan(a) || std::isnan(b));
       },
       [&](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
         int order = isUnsigned ? (a.ult(b) ? -1 : a.ugt(b) ? 1 : 0)
                                : (a.slt(b) ? -1 : a.sgt(b) ? 1 : 0);
         return APInt(a.getBitWidth(), decide(order, false) ? 1 : 0);
       }});
}

//===----------------------------------------------------------------------===//
// select
//===----------------------------------------------------------------------===//

LogicalResult SelectOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                         Adaptor adaptor, InferredTypes &inferred) {
  return inferBroadcastElementwise(
      location, getOperationName(),
      {adaptor.getCondition(), adaptor.getOnTrue(), adaptor.getOnFalse()},
      {adaptor.getOnTrue(), adaptor.getOnFalse()}, Type(), inferred);
}

namespace {
/// `x == y ? t : f` (or `x != y ? f : t`) where t and f are each x or y:
/// when the equality holds all of them are one value, so the select is `f`
/// (`t` for !=) whatever x and y are. torch writes Reshape's "0 copies the
/// input's dim" as `Where(shape == 0, input_shape, shape)`; with a symbolic
/// dim n it picks between 0 and n exactly when n is 0. Null when the rule
/// does not apply.
DimExpr equalWhereCompared(const std::optional<std::pair<SymShape, SymShape>> &compared,
                           int64_t i, DimExpr onTrue, DimExpr onFalse, CompareOp compare) {
  if (!compared || !compare)
    return {};
  DimExpr x = compared->first[i], y = compared->second[i];
  if (!x || !y)
    return {};
  auto isXOrY = [&](DimExpr d) { return d == x || d == y; };
  if (!isXOrY(onTrue) || !isXOrY(onFalse))
    return {};
  return compare.getDirection() == CompareDirection::eq ? onFalse : onTrue;
}
} // namespace

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  auto condition = dyn_cast_if_present<DenseElementsAttr>(adaptor.getCondition());
  if (condition && condition.isSplat()) {
    Value chosen = condition.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
    if (chosen.getType() == getType() && hasKnownShape(getType()))
      return chosen;
  }
  // (With unknown dims the other operands may broadcast the result larger.)
  if (getOnTrue() == getOnFalse() && getOnTrue().getType() == getType() &&
      hasKnownShape(getType()))
    return getOnTrue();
  return foldSelectOfShapes(*this, nullptr);
}

Attribute foldSelectOfShapes(SelectOp select, llvm::function_ref<bool(DimExpr)> isPositive) {
  // A shape vector picked element by element from known ones (symbolic dims or
  // constants) is known too.
  auto type = dyn_cast<RankedTensorType>(select.getType());
  if (!type || !type.hasStaticShape() || type.getRank() > 1 ||
      !type.getElementType().isInteger(64))
    return {};
  Attribute conditionAttr, onTrue, onFalse;
  matchPattern(select.getCondition(), m_Constant(&conditionAttr));
  matchPattern(select.getOnTrue(), m_Constant(&onTrue));
  matchPattern(select.getOnFalse(), m_Constant(&onFalse));
  auto condition = dyn_cast_if_present<DenseElementsAttr>(conditionAttr);
  int64_t count = type.getNumElements();
  std::optional<std::pair<SymShape, SymShape>> pair =
      knownPair(onTrue, onFalse, count, select.getContext());
  if (!pair)
    return {};
  // The condition per element: a constant's, or what a compare of known
  // vectors decides. torch exports expand and reshape targets as
  // `Where(Equal(shape, 0), input_shape, shape)`: `n == 0` is undecided for a
  // symbolic n, but where both choices are n the pick does not matter.
  SmallVector<std::optional<bool>> picks;
  std::optional<std::pair<SymShape, SymShape>> compared;
  if (condition) {
    if (condition.getNumElements() != 1 && condition.getNumElements() != count)
      return {};
    for (int64_t i = 0; i < count; ++i)
      picks.push_back(condition.getValues<bool>()[condition.getNumElements() == 1 ? 0 : i]);
  } else if (auto compare = select.getCondition().getDefiningOp<CompareOp>()) {
    std::optional<SmallVector<std::optional<bool>>> decided =
        decideCompareElements(compare, count);
    if (!decided)
      return {};
    picks = std::move(*decided);
    compared = comparedElements(compare, count);
  } else {
    return {};
  }
  auto compare = select.getCondition().getDefiningOp<CompareOp>();
  // Last, what a size known to be at least 1 decides against a constant up
  // to 0 (asked only where nothing else decides: the caller guards what it
  // answered).
  auto byPositiveSize = [&](int64_t i) -> std::optional<bool> {
    if (!isPositive || !compare || !compared)
      return std::nullopt;
    DimExpr x = compared->first[i], y = compared->second[i];
    auto above = [&](DimExpr size, DimExpr other) {
      std::optional<int64_t> c = getConstantDimValue(other);
      return size && c && *c <= 0 && isPositive(size);
    };
    if (above(x, y))
      return decideCompare(compare.getDirection(), 1, false);
    if (above(y, x))
      return decideCompare(compare.getDirection(), -1, false);
    return std::nullopt;
  };
  SymShape chosen;
  for (int64_t i = 0; i < count; ++i) {
    if (pair->first[i] == pair->second[i]) {
      chosen.push_back(pair->first[i]);
    } else if (picks[i]) {
      chosen.push_back(*picks[i] ? pair->first[i] : pair->second[i]);
    } else if (DimExpr same = compare && (compare.getDirection() == CompareDirection::eq ||
                                          compare.getDirection() == CompareDirection::ne)
                                  ? equalWhereCompared(compared, i, pair->first[i],
                                                       pair->second[i], compare)
                                  : DimExpr()) {
      chosen.push_back(same);
    } else if (std::optional<bool> pick = byPositiveSize(i)) {
      chosen.push_back(*pick ? pair->first[i] : pair->second[i]);
    } else {
      return {};
    }
  }
  return makeKnownElementsAttr(type, chosen);
}

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

LogicalResult CastOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor, InferredTypes &inferred) {
  return inferUnaryElementwise(adaptor.getInput(), adaptor.getTo(), inferred);
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
  auto type = dyn_cast<RankedTensorType>(getType());
  if (!dense || !type.hasStaticShape() || dense.getNumElements() > kMaxFoldElements)
    return {};
  Type from = dense.getElementType(), to = type.getElementType();
  bool fromUnsigned = from.isUnsignedInteger();
  if (isa<FloatType>(to)) {
    SmallVector<APFloat> out;
    const llvm::fltSemantics &sem = cast<FloatType>(to).getFloatSemantics();
    bool losesInfo;
    if (isa<FloatType>(from)) {
      for (APFloat v : dense.getValues<APFloat>()) {
        v.convert(sem, APFloat::rmNearestTiesToEven, &losesInfo);
        out.push_back(v);
      }
    } else {
      for (const APInt &v : dense.getValues<APInt>()) {
        APFloat f(sem);
        f.convertFromAPInt(v, /*isSigned=*/!fromUnsigned && !from.isInteger(1),
                           APFloat::rmNearestTiesToEven);
        out.push_back(f);
      }
    }
    return DenseElementsAttr::get(type, out);
  }
  unsigned width = to.getIntOrFloatBitWidth();
  SmallVector<APInt> out;
  if (isa<FloatType>(from)) {
    for (const APFloat &v : dense.getValues<APFloat>()) {
      if (width == 1) {
        out.push_back(APInt(1, v.isZero() ? 0 : 1));
        continue;
      }
      if (v.isNaN() || v.isInfinity())
        return {}; // undefined in ONNX; leave it to run time
      APSInt i(width, to.isUnsignedInteger());
      bool exact;
      if (v.convertToInteger(i, APFloat::rmTowardZero, &exact) & APFloat::opInvalidOp)
        return {};
      out.push_back(i);
    }
  } else {
    for (const APInt &v : dense.getValues<APInt>()) {
      if (width == 1)
        out.push_back(APInt(1, v.isZero() ? 0 : 1));
      else
        out.push_back(fromUnsigned || from.isInteger(1) ? v.zextOrTrunc(width)
                                                        : v.sextOrTrunc(width));
    }
  }
  return DenseElementsAttr::get(type, out);
}

LogicalResult BitcastOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                          Adaptor adaptor, InferredTypes &inferred) {
  Type from = cast<RankedTensorType>(adaptor.getInput().getType()).getElementType();
  Type to = adaptor.getTo();
  // A bool is stored as one byte, as ONNX stores it.
  auto storageBits = [](Type t) { return t.isInteger(1) ? 8u : t.getIntOrFloatBitWidth(); };
  if (storageBits(from) != storageBits(to))
    return emitShapeError(location, getOperationName(),
                          "cannot reinterpret " + Twine(storageBits(from)) + "-bit elements as " +
                              Twine(storageBits(to)) + "-bit ones");
  return inferUnaryElementwise(adaptor.getInput(), to, inferred);
}

//===----------------------------------------------------------------------===//
// Kernel facts (KernelFacts.td); the other elementwise ops take the defaults
//===----------------------------------------------------------------------===//

// A cast changes the type itself (kiln-lower-precision handles it apart).
bool CastOp::runsNarrow() { return false; }
bool BitcastOp::runsNarrow() { return false; }

} // namespace kiln
