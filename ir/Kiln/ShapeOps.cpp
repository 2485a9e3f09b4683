//===- ShapeOps.cpp - constants and shape computations --------------------===//

#include "ir/Kiln/Folding.h"
#include "ir/Kiln/KilnDialect.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;

namespace kiln {

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                           Adaptor adaptor, InferredTypes &inferred) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type || !type.hasStaticShape())
    return emitShapeError(location, getOperationName(),
                          "value must be a statically shaped tensor");
  inferred.push_back(type);
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult SymbolicConstantOp::verify() {
  DimsAttr value = getValue();
  if (!value.isFullyKnown())
    return emitOpError("value has an unknown ('?') element; every element must be known");
  int64_t count = value.getDims().size();
  auto type = cast<RankedTensorType>(getType());
  if (type.getEncoding())
    return emitOpError("result must be a plain tensor type, without encoding");
  if (type.getRank() == 0 ? count != 1 : type.getDimSize(0) != count)
    return emitOpError("value has ") << count << " elements but the result type is " << type;
  return success();
}

static_assert(int(ShapeAssumption::Kind::Equal) == int(GuardKind::equal) &&
              int(ShapeAssumption::Kind::EqualOrOne) == int(GuardKind::equal_or_one) &&
              int(ShapeAssumption::Kind::LessEqual) == int(GuardKind::less_equal));

LogicalResult GuardOp::verify() {
  DimsAttr dims = getDims();
  if (dims.getDims().size() != 2 || !dims.isFullyKnown())
    return emitOpError("needs exactly two known dims, got ") << dims;
  auto kind = static_cast<ShapeAssumption::Kind>(getKind());
  if (decideShapeAssumption(kind, getLhs(), getRhs()) == std::optional<bool>(false))
    return emitOpError("can never hold: ") << describe();
  return success();
}

LogicalResult ReadSizesOp::verify() {
  auto type = cast<RankedTensorType>(getSizes().getType());
  if (type.getRank() > 1 || !type.hasStaticShape())
    return emitOpError("sizes must be a 0-d or 1-D tensor of static size, got ") << type;
  int64_t count = type.getNumElements();
  if (count != static_cast<int64_t>(getSymbols().size()))
    return emitOpError("names ") << getSymbols().size() << " symbols for " << count
                                 << " sizes";
  for (Attribute a : getSymbols())
    if (cast<StringAttr>(a).getValue().empty())
      return emitOpError("names an empty symbol");
  return success();
}

std::string GuardOp::describe() {
  std::string lhs = dimToString(getLhs()), rhs = dimToString(getRhs());
  switch (getKind()) {
  case GuardKind::equal:
    return lhs + " == " + rhs;
  case GuardKind::equal_or_one:
    return lhs + " == " + rhs + " or " + lhs + " == 1";
  case GuardKind::less_equal:
    return lhs + " <= " + rhs;
  }
  return lhs + " ? " + rhs;
}

OpFoldResult SymbolicConstantOp::fold(FoldAdaptor) {
  // All-constant values belong in a plain kiln.constant.
  if (Attribute dense = makeKnownElementsAttr(cast<RankedTensorType>(getType()), getValue().getDims());
      dense && isa<DenseElementsAttr>(dense))
    return dense;
  return getValue();
}

LogicalResult ShapeOfOp::inferReturnTypes(MLIRContext *context, std::optional<Location>,
                                          Adaptor adaptor, InferredTypes &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  inferred.push_back(RankedTensorType::get({type.getRank()}, IntegerType::get(context, 64)));
  return success();
}

OpFoldResult ShapeOfOp::fold(FoldAdaptor) {
  return makeKnownElementsAttr(cast<RankedTensorType>(getType()),
                               getSymShape(getInput().getType()));
}

LogicalResult RangeOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                        Adaptor adaptor, InferredTypes &inferred) {
  Type element = cast<RankedTensorType>(adaptor.getStart().getType()).getElementType();
  for (Value v : {adaptor.getStart(), adaptor.getLimit(), adaptor.getDelta()}) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() != element)
      return emitShapeError(location, getOperationName(),
                            "start, limit and delta must have one element type");
    if (t.getRank() != 0)
      return emitShapeError(location, getOperationName(),
                            "start, limit and delta must be 0-d tensors");
  }
  DimExpr length;
  Attribute start, limit, delta;
  matchPattern(adaptor.getStart(), m_Constant(&start));
  matchPattern(adaptor.getLimit(), m_Constant(&limit));
  matchPattern(adaptor.getDelta(), m_Constant(&delta));
  auto floatOf = [](Attribute a) -> std::optional<double> {
    auto dense = dyn_cast_if_present<DenseFPElementsAttr>(a);
    if (!dense)
      return std::nullopt;
    return (*dense.getValues<APFloat>().begin()).convertToDouble();
  };
  if (auto d = floatOf(delta)) {
    if (*d == 0)
      return emitShapeError(location, getOperationName(), "delta must not be zero");
    auto s = floatOf(start), l = floatOf(limit);
    if (s && l)
      length = getConstantDim(context,
                              std::max<int64_t>((int64_t)std::ceil((*l - *s) / *d), 0));
  } else {
    auto s = getKnownElements(adaptor.getStart()), l = getKnownElements(adaptor.getLimit()),
         dk = getKnownElements(adaptor.getDelta());
    std::optional<int64_t> step = dk ? getConstantDimValue((*dk)[0]) : std::nullopt;
    if (step && *step == 0)
      return emitShapeError(location, getOperationName(), "delta must not be zero");
    if (s && l && step && *step > 0) {
      DimExpr span = subDims((*l)[0], (*s)[0]);
      auto c = getConstantDimValue(span);
      if (c)
        length = getConstantDim(context, std::max<int64_t>(ceilDivInt(*c, *step), 0));
      else if (isProvablyNonNegative(span))
        length = ceilDivDims(span, getConstantDim(context, *step));
    } else if (s && l && step && *step < 0) {
      auto span = getConstantDimValue(subDims((*l)[0], (*s)[0]));
      if (span)
        length = getConstantDim(context, std::max<int64_t>(ceilDivInt(*span, *step), 0));
    }
  }
  inferred.push_back(makeTensorType({length}, element));
  return success();
}

OpFoldResult RangeOp::fold(FoldAdaptor adaptor) {
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape() || type.getNumElements() > kMaxFoldElements)
    return {};
  auto start = dyn_cast_if_present<DenseElementsAttr>(adaptor.getStart());
  auto delta = dyn_cast_if_present<DenseElementsAttr>(adaptor.getDelta());
  if (!start || !delta)
    return {};
  int64_t n = type.getNumElements();
  Type element = type.getElementType();
  if (auto f = dyn_cast<FloatType>(element)) {
    // ONNX Range accumulates: start + i * delta, computed in double.
    double s = (*start.getValues<APFloat>().begin()).convertToDouble();
    double d = (*delta.getValues<APFloat>().begin()).convertToDouble();
    SmallVector<APFloat> values;
    for (int64_t i = 0; i < n; ++i) {
      APFloat v(s + double(i) * d);
      bool losesInfo;
      v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
      values.push_back(v);
    }
    return DenseElementsAttr::get(type, values);
  }
  APInt s = *start.getValues<APInt>().begin(), d = *delta.getValues<APInt>().begin();
  SmallVector<APInt> values;
  APInt v = s;
  for (int64_t i = 0; i < n; ++i, v += d)
    values.push_back(v);
  return DenseElementsAttr::get(type, values);
}

//===----------------------------------------------------------------------===//
// Kernel facts (KernelFacts.td)
//===----------------------------------------------------------------------===//

bool isCompileTimeValue(Value v) {
  return isa_and_nonnull<ConstantOp, SymbolicConstantOp>(v.getDefiningOp());
}

// A range whose length the shape function knows (constants, or symbols:
// arange(seq) in exported models): element i is start + i * delta. It keeps
// fp32: its float operands are positions.
bool RangeOp::isInlinable() { return true; }

} // namespace kiln
