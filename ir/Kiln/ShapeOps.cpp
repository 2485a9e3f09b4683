//===- ShapeOps.cpp - constants and shape computations --------------------===//

#include "ir/Kiln/Folding.h"
#include "ir/Kiln/KilnDialect.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <limits>

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

namespace {
/// The largest integer every smaller non-negative one of which `type` holds
/// exactly: 2^31 - 1 for i32, 2^24 for f32 (its 24-bit significand).
std::optional<int64_t> largestExactInteger(Type type) {
  if (auto i = dyn_cast<IntegerType>(type)) {
    if (i.getWidth() < 2 || i.getWidth() > 64)
      return std::nullopt;
    unsigned bits = i.isUnsigned() ? i.getWidth() : i.getWidth() - 1;
    return bits >= 63 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << bits) - 1;
  }
  // The formats whose largest finite value is past 2^p (not fp8's or
  // smaller's, some of which hold no zero or nothing past 2^p).
  if (isa<Float16Type, BFloat16Type, Float32Type, Float64Type>(type))
    return int64_t{1} << cast<FloatType>(type).getFPMantissaWidth();
  return std::nullopt;
}

/// What a cast a range operand was read through assumes: `value <= largest`.
struct ExactCast {
  DimExpr value;
  int64_t largest;
  std::string what;
};

/// A 0-d range operand as a dim: an integer constant or known symbolic
/// value, an integral float constant, or a kiln.cast to the range's type of
/// a known non-negative integer (torchvision's anchor grids are arange over
/// a feature map's width cast to int32). Such a cast is exact while the
/// value fits the type: `assumed` gets that fact, for the shape function to
/// assume (a guard checks it) when it uses the value.
std::optional<DimExpr> rangeOperandDim(Value v, MLIRContext *context, StringRef name,
                                       SmallVectorImpl<ExactCast> &assumed) {
  auto type = cast<RankedTensorType>(v.getType());
  if (isa<IntegerType>(type.getElementType()))
    if (std::optional<SymShape> known = getKnownElements(v); known && known->size() == 1 &&
                                                             (*known)[0])
      return (*known)[0];
  Attribute constant;
  if (matchPattern(v, m_Constant(&constant)))
    if (auto dense = dyn_cast<DenseFPElementsAttr>(constant)) {
      double x = (*dense.getValues<APFloat>().begin()).convertToDouble();
      if (std::trunc(x) == x && std::fabs(x) < 0x1p53)
        return getConstantDim(context, static_cast<int64_t>(x));
      return std::nullopt;
    }
  auto cast = v.getDefiningOp<CastOp>();
  if (!cast || !isa<IntegerType>(getElementTypeOrSelf(cast.getInput().getType())))
    return std::nullopt;
  std::optional<SymShape> known = getKnownElements(cast.getInput());
  std::optional<int64_t> largest = largestExactInteger(type.getElementType());
  if (!known || known->size() != 1 || !(*known)[0] || !largest ||
      !isProvablyNonNegative((*known)[0]))
    return std::nullopt;
  DimExpr value = (*known)[0];
  std::string typeName;
  llvm::raw_string_ostream os(typeName);
  os << type.getElementType();
  assumed.push_back({value, *largest,
                     (name + " is a size cast to " + typeName + ", exact only up to " +
                      Twine(*largest))
                         .str()});
  return value;
}
} // namespace

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
  // Integer-valued operands (of any type) as dims; an integral float delta
  // counts too, so a float range over a size cast to float has a length.
  SmallVector<ExactCast> casts;
  std::optional<DimExpr> s = rangeOperandDim(adaptor.getStart(), context, "start", casts),
                         l = rangeOperandDim(adaptor.getLimit(), context, "limit", casts),
                         dk = rangeOperandDim(adaptor.getDelta(), context, "delta", casts);
  std::optional<int64_t> step = dk ? getConstantDimValue(*dk) : std::nullopt;
  std::optional<double> d = floatOf(delta), sf = floatOf(start), lf = floatOf(limit);
  if ((d && *d == 0) || (step && *step == 0))
    return emitShapeError(location, getOperationName(), "delta must not be zero");
  if (d && sf && lf) {
    // Float constants: the length as ONNX computes it, in double.
    length = getConstantDim(context,
                            std::max<int64_t>((int64_t)std::ceil((*lf - *sf) / *d), 0));
  } else {
    if (s && l && step && *step > 0) {
      DimExpr span = subDims(*l, *s);
      auto c = getConstantDimValue(span);
      if (c)
        length = getConstantDim(context, std::max<int64_t>(ceilDivInt(*c, *step), 0));
      else if (isProvablyNonNegative(span))
        length = ceilDivDims(span, getConstantDim(context, *step));
    } else if (s && l && step && *step < 0) {
      auto span = getConstantDimValue(subDims(*l, *s));
      if (span)
        length = getConstantDim(context, std::max<int64_t>(ceilDivInt(*span, *step), 0));
    }
  }
  // A length read through casts holds while they are exact, a constant one
  // too (the span of cast(n) to cast(n + 10) is 10 only while n + 10 fits).
  if (length)
    for (const ExactCast &c : casts)
      recordShapeAssumption(ShapeAssumption::Kind::LessEqual, c.value,
                            getConstantDim(context, c.largest), c.what);
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
