//===- ShapeInference.cpp - shared shape-function helpers -----------------===//

#include "ir/Kiln/KilnDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln {

LogicalResult emitShapeError(std::optional<Location> location, StringRef opName,
                             const Twine &message) {
  return emitOptionalError(location, "'", opName, "' op ", message.str());
}

FailureOr<int64_t> normalizeAxis(std::optional<Location> location, StringRef opName,
                                 int64_t axis, int64_t rank, StringRef what) {
  if (axis < -rank || axis >= rank || (rank == 0))
    return emitShapeError(location, opName,
                          what + " " + Twine(axis) + " is out of range for rank " +
                              Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

static bool isOne(DimExpr d) {
  auto c = getConstantDimValue(d);
  return c && *c == 1;
}

static thread_local std::vector<ShapeAssumption> *activeAssumptions = nullptr;

ShapeAssumptionScope::ShapeAssumptionScope(std::vector<ShapeAssumption> &sink)
    : previous(activeAssumptions) {
  activeAssumptions = &sink;
}

ShapeAssumptionScope::~ShapeAssumptionScope() { activeAssumptions = previous; }

std::optional<bool> decideShapeAssumption(ShapeAssumption::Kind kind, DimExpr lhs,
                                          DimExpr rhs) {
  using Kind = ShapeAssumption::Kind;
  if (kind == Kind::LessEqual) {
    DimExpr slack = subDims(rhs, lhs);
    if (!slack)
      return std::nullopt;
    if (auto c = getConstantDimValue(slack))
      return *c >= 0;
    if (isProvablyNonNegative(slack))
      return true;
    return std::nullopt;
  }
  if (lhs == rhs || (kind == Kind::EqualOrOne && isOne(lhs)))
    return true;
  auto cl = getConstantDimValue(lhs), cr = getConstantDimValue(rhs);
  if (cl && cr)
    return false; // canonical constants that differ (and lhs is not 1 when it may be)
  // `a + 1` is never `a`; it may still be 1 where that is allowed.
  DimExpr difference = subDims(lhs, rhs);
  if (kind == Kind::Equal && difference && getConstantDimValue(difference))
    return false;
  return std::nullopt;
}

void recordShapeAssumption(ShapeAssumption::Kind kind, DimExpr lhs, DimExpr rhs,
                           const Twine &what) {
  if (!activeAssumptions || !lhs || !rhs)
    return;
  if (decideShapeAssumption(kind, lhs, rhs) == std::optional<bool>(true))
    return;
  activeAssumptions->push_back({kind, lhs, rhs, what.str()});
}

LogicalResult checkEntries(std::optional<Location> location, StringRef opName,
                           ArrayRef<int64_t> values, size_t expected, int64_t minimum,
                           StringRef what) {
  if (values.size() != expected)
    return emitShapeError(location, opName,
                          what + " has " + Twine(values.size()) + " entries; expected " +
                              Twine(expected));
  for (int64_t v : values)
    if (v < minimum)
      return emitShapeError(location, opName,
                            what + " entries must be >= " + Twine(minimum) + ", got " +
                                Twine(v));
  return success();
}

FailureOr<SymShape> broadcastShapes(std::optional<Location> location, StringRef opName,
                                    ArrayRef<SymShape> shapes) {
  size_t rank = 0;
  MLIRContext *ctx = nullptr;
  for (const SymShape &s : shapes)
    rank = std::max(rank, s.size());
  SymShape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    DimExpr r;
    bool haveDim = false, ambiguous = false;
    for (const SymShape &s : shapes) {
      if (i + s.size() < rank)
        continue; // this operand has no dim here: it broadcasts as 1
      DimExpr d = s[i + s.size() - rank];
      if (d)
        ctx = d.getContext();
      if (isOne(d))
        continue;
      if (!haveDim || isOne(r)) {
        r = d;
        haveDim = true;
        continue;
      }
      if (d == r)
        continue;
      if (!d || !r) {
        // An unknown dim is 1 or equal to the others: against a static size that
        // size wins, but against a symbol either one may be the 1.
        DimExpr known = d ? d : r;
        if (getConstantDimValue(known))
          r = known;
        else
          ambiguous = true;
        continue;
      }
      auto cd = getConstantDimValue(d), cr = getConstantDimValue(r);
      if (cd && cr)
        return emitShapeError(location, opName,
                              "operands are not broadcast-compatible: dim " +
                                  Twine(i) + " (from the right: " + Twine(rank - i) +
                                  ") is " + Twine(*cr) + " in one and " + Twine(*cd) +
                                  " in another");
      if (cd) {
        r = d; // a symbolic dim against a static one must be 1 or equal to it
        continue;
      }
      if (!cr)
        ambiguous = true; // two different symbolic dims: either may be 1
    }
    if (!haveDim)
      r = ctx ? getConstantDim(ctx, 1) : DimExpr();
    result[i] = (ambiguous && !getConstantDimValue(r)) ? DimExpr() : r;
    // Every operand's dim here is 1 or the result's; kernels index by that.
    for (auto [k, s] : llvm::enumerate(shapes))
      if (i + s.size() >= rank)
        recordShapeAssumption(ShapeAssumption::Kind::EqualOrOne, s[i + s.size() - rank],
                              result[i],
                              "operand " + Twine(k) + " dim " + Twine(i + s.size() - rank) +
                                  " must be 1 or the broadcast size");
  }
  return result;
}

FailureOr<DimExpr> unifyDims(std::optional<Location> location, StringRef opName,
                             DimExpr a, DimExpr b, const Twine &what) {
  if (!a)
    return b;
  if (!b || a == b)
    return a;
  auto ca = getConstantDimValue(a), cb = getConstantDimValue(b);
  if (ca && cb)
    return emitShapeError(location, opName,
                          what + " must match, but is " + Twine(*ca) + " and " +
                              Twine(*cb));
  recordShapeAssumption(ShapeAssumption::Kind::Equal, a, b, what + " must match");
  return cb ? b : a;
}

std::string shapeFactKey(ShapeAssumption::Kind kind, DimExpr lhs, DimExpr rhs) {
  // As guards store them (canonical), so a fact asked again finds its guard.
  std::string l = dimToString(canonicalizeDim(lhs)), r = dimToString(canonicalizeDim(rhs));
  if (kind == ShapeAssumption::Kind::Equal && r < l)
    std::swap(l, r);
  return std::to_string(static_cast<int>(kind)) + ":" + l + ":" + r;
}

LogicalResult OpTrait::verifyShapeFunction(Operation *op) {
  SmallVector<Type> inferred;
  if (failed(cast<InferTypeOpInterface>(op).inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(), op->getRawDictionaryAttrs(),
          op->getPropertiesStorage(), op->getRegions(), inferred)))
    return failure();
  for (auto [i, declared, type] : llvm::enumerate(op->getResultTypes(), inferred))
    if (!areRefinementCompatible(type, declared))
      return op->emitOpError("result #")
             << i << " has type " << declared << ", which contradicts the inferred type "
             << type;
  return success();
}

LogicalResult inferUnaryElementwise(Value input, Type resultElement,
                                    InferredTypes &inferred) {
  auto type = cast<RankedTensorType>(input.getType());
  inferred.push_back(RankedTensorType::get(
      type.getShape(), resultElement ? resultElement : type.getElementType(),
      type.getEncoding()));
  return success();
}

LogicalResult inferBroadcastElementwise(std::optional<Location> location,
                                        StringRef opName, ValueRange operands,
                                        ValueRange sameElementOperands,
                                        Type resultElement, InferredTypes &inferred) {
  Type element;
  for (Value v : sameElementOperands) {
    Type e = cast<RankedTensorType>(v.getType()).getElementType();
    if (element && e != element) {
      std::string msg;
      llvm::raw_string_ostream os(msg);
      os << "operands have different element types (" << element << " vs " << e << ")";
      return emitShapeError(location, opName, msg);
    }
    element = e;
  }
  SmallVector<SymShape> shapes;
  for (Value v : operands)
    shapes.push_back(getSymShape(v.getType()));
  FailureOr<SymShape> shape = broadcastShapes(location, opName, shapes);
  if (failed(shape))
    return failure();
  inferred.push_back(makeTensorType(*shape, resultElement ? resultElement : element));
  return success();
}

LogicalResult inferSameShapeAlongAxis(std::optional<Location> location,
                                      StringRef opName, Value input, int64_t axis,
                                      InferredTypes &inferred) {
  auto type = cast<RankedTensorType>(input.getType());
  if (failed(normalizeAxis(location, opName, axis, type.getRank())))
    return failure();
  inferred.push_back(type);
  return success();
}

std::optional<SymShape> getKnownElements(Attribute attr, MLIRContext *context) {
  if (!attr)
    return std::nullopt;
  if (auto dims = dyn_cast<DimsAttr>(attr))
    return SymShape(dims.getDims().begin(), dims.getDims().end());
  auto dense = dyn_cast<DenseIntElementsAttr>(attr);
  if (!dense || dense.getElementType().isInteger(1))
    return std::nullopt;
  SymShape out;
  bool isUnsigned = dense.getElementType().isUnsignedInteger();
  for (const APInt &v : dense.getValues<APInt>()) {
    if (isUnsigned && v.getActiveBits() > 63)
      out.push_back(DimExpr());
    else
      out.push_back(getConstantDim(context, isUnsigned ? static_cast<int64_t>(v.getZExtValue())
                                                       : v.getSExtValue()));
  }
  return out;
}

std::optional<SymShape> getKnownElements(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto shapeOf = dyn_cast<ShapeOfOp>(def))
    return getSymShape(shapeOf.getInput().getType());
  Attribute attr;
  if (matchPattern(value, m_Constant(&attr)))
    return getKnownElements(attr, value.getContext());
  return std::nullopt;
}

Attribute makeKnownElementsAttr(RankedTensorType type, ArrayRef<DimExpr> elements) {
  if (!type.hasStaticShape() || type.getNumElements() != (int64_t)elements.size())
    return {};
  SmallVector<APInt> values;
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  if (!type.getElementType().isInteger())
    return {};
  bool allConstant = true;
  for (DimExpr e : elements) {
    if (!e)
      return {};
    if (auto c = getConstantDimValue(e))
      values.push_back(APInt(width, *c, /*isSigned=*/true, /*implicitTrunc=*/true));
    else
      allConstant = false;
  }
  if (allConstant)
    return DenseElementsAttr::get(type, values);
  if (!type.getElementType().isSignlessInteger(64) || type.getRank() > 1)
    return {};
  return DimsAttr::getCanonical(type.getContext(), elements);
}

} // namespace kiln
