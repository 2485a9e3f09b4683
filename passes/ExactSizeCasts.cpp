//===- ExactSizeCasts.cpp - sizes computed in floats, read as sizes -------===//
//
// See ExactSizeCasts.h. Why the arithmetic is exact: every value of a chain is
// a non-negative integer x <= 2^p - 1, which the float holds exactly (the
// guards say so where it is not provable). A sum or product of two such is
// exact when it is no larger (guarded too). For x / c with c a positive
// integer and division correctly rounded (IEEE), the float quotient q' is
// within (x / c) * 2^-p of the real q = x / c, which is below 1/c because
// x <= 2^p - 1; a q that is not an integer lies at least 1/c from the
// nearest integers, and an integer q is exact, so ceil and floor of q' are
// ceil and floor of q: ceildiv and floordiv of integers. Only f16, bf16, f32
// and f64 chains count: narrower formats hold nothing up to 2^p - 1 (fp6's
// largest is 7.5) or no zero (float8e8m0).
//
//===----------------------------------------------------------------------===//

#include "passes/ExactSizeCasts.h"

#include "ir/Kiln/KilnDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <set>

using namespace mlir;

namespace kiln {
namespace {

/// The most elements a chain value may have: shape vectors, not tensors.
constexpr int64_t kMaxChainElements = 16;
/// How deep a chain is followed.
constexpr int kMaxChainDepth = 32;

/// A bound the float arithmetic needs: `value <= largest`, for a value held
/// in `type`.
struct ExactBound {
  DimExpr value;
  int64_t largest;
  Type type;
};

class Chain {
public:
  explicit Chain(MLIRContext *context) : context(context) {}

  /// The elements of float value `v` (broadcast to `count`) as non-negative
  /// integer sizes, each exact in its float type under `bounds`; nullopt when
  /// `v` is not such a chain.
  std::optional<SymShape> values(Value v, int64_t count, int depth = 0) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape() ||
        !isa<Float16Type, BFloat16Type, Float32Type, Float64Type>(type.getElementType()) ||
        depth > kMaxChainDepth)
      return std::nullopt;
    int64_t have = type.getNumElements();
    if (have > kMaxChainElements || (have != 1 && have != count))
      return std::nullopt;
    std::optional<SymShape> elements = own(v, have, depth);
    if (!elements || static_cast<int64_t>(elements->size()) != have)
      return std::nullopt;
    if (have == count)
      return elements;
    return SymShape(count, (*elements)[0]);
  }

  std::vector<ExactBound> bounds;

private:
  /// 2^p - 1 for a float of p significand bits: below it, and for integers
  /// up to it, division rounds on the right side of every integer.
  static int64_t largestExact(Type floatType) {
    unsigned p = cast<FloatType>(floatType).getFPMantissaWidth();
    return (int64_t{1} << std::min(62u, p)) - 1;
  }

  /// Records that each of `elements` must fit `type` (constants checked now).
  bool fits(ArrayRef<DimExpr> elements, Type type) {
    int64_t largest = largestExact(type);
    for (DimExpr e : elements) {
      if (!e || !isProvablyNonNegative(e))
        return false;
      if (std::optional<int64_t> c = getConstantDimValue(e)) {
        if (*c > largest)
          return false;
        continue;
      }
      bounds.push_back({e, largest, type});
    }
    return true;
  }

  /// Integral non-negative float constants, exact in their type.
  std::optional<SymShape> constants(Value v) {
    Attribute attr;
    if (!matchPattern(v, m_Constant(&attr)))
      return std::nullopt;
    auto dense = dyn_cast<DenseFPElementsAttr>(attr);
    if (!dense)
      return std::nullopt;
    SymShape out;
    for (const APFloat &f : dense.getValues<APFloat>()) {
      double x = f.convertToDouble();
      if (std::trunc(x) != x || x < 0 || x > double(largestExact(dense.getElementType())))
        return std::nullopt;
      out.push_back(getConstantDim(context, static_cast<int64_t>(x)));
    }
    return out;
  }

  std::optional<SymShape> own(Value v, int64_t count, int depth) {
    Type element = getElementTypeOrSelf(v.getType());
    if (std::optional<SymShape> c = constants(v))
      return c;
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt;
    // A size converted to float: exact while it fits.
    if (auto cast = dyn_cast<CastOp>(def)) {
      Type from = getElementTypeOrSelf(cast.getInput().getType());
      std::optional<SymShape> in;
      if (isa<IntegerType>(from)) {
        auto inType = dyn_cast<RankedTensorType>(cast.getInput().getType());
        if (!inType || !inType.hasStaticShape() || inType.getNumElements() != count)
          return std::nullopt;
        in = getKnownElements(cast.getInput());
      } else {
        in = values(cast.getInput(), count, depth + 1);
      }
      if (!in || !fits(*in, element))
        return std::nullopt;
      return in;
    }
    // ceil(a / c) and floor(a / c) of a chain and positive integers c.
    if (isa<CeilOp, FloorOp>(def)) {
      Value in = def->getOperand(0);
      bool ceil = isa<CeilOp>(def);
      auto div = in.getDefiningOp<DivOp>();
      if (!div)
        return values(in, count, depth + 1); // integers already
      std::optional<SymShape> a = values(div.getLhs(), count, depth + 1);
      std::optional<SymShape> c = constants(div.getRhs());
      if (!a || !c || (c->size() != 1 && static_cast<int64_t>(c->size()) != count))
        return std::nullopt;
      SymShape out;
      for (int64_t i = 0; i < count; ++i) {
        DimExpr d = (*c)[c->size() == 1 ? 0 : i];
        if (getConstantDimValue(d).value_or(0) < 1)
          return std::nullopt;
        out.push_back(ceil ? ceilDivDims((*a)[i], d) : floorDivDims((*a)[i], d));
      }
      return out;
    }
    // Sums, differences and products, exact while they fit.
    if (isa<AddOp, SubOp, MulOp>(def)) {
      std::optional<SymShape> a = values(def->getOperand(0), count, depth + 1);
      std::optional<SymShape> b = values(def->getOperand(1), count, depth + 1);
      if (!a || !b)
        return std::nullopt;
      SymShape out;
      for (int64_t i = 0; i < count; ++i)
        out.push_back(isa<AddOp>(def)   ? addDims((*a)[i], (*b)[i])
                      : isa<SubOp>(def) ? subDims((*a)[i], (*b)[i])
                                        : mulDims((*a)[i], (*b)[i]));
      // (A difference of fitting values fits; it must not be negative.)
      if (isa<SubOp>(def) ? !llvm::all_of(out, [](DimExpr d) { return d && isProvablyNonNegative(d); })
                          : !fits(out, element))
        return std::nullopt;
      return out;
    }
    // The one element of a one-element reduction (torchvision's max over a
    // list of one image size).
    if (auto reduce = dyn_cast<ReduceOp>(def)) {
      auto inType = dyn_cast<RankedTensorType>(reduce.getInput().getType());
      if (count != 1 || !inType || !inType.hasStaticShape() || inType.getNumElements() != 1 ||
          (reduce.getKind() != ReduceKind::max && reduce.getKind() != ReduceKind::min &&
           reduce.getKind() != ReduceKind::sum && reduce.getKind() != ReduceKind::mean &&
           reduce.getKind() != ReduceKind::prod))
        return std::nullopt;
      return values(reduce.getInput(), 1, depth + 1);
    }
    // The same elements in another shape.
    if (auto reshape = dyn_cast<ReshapeOp>(def))
      return values(reshape.getInput(), count, depth + 1);
    return std::nullopt;
  }

  MLIRContext *context;
};

} // namespace

bool foldExactSizeCast(Operation *op) {
  auto cast = dyn_cast<CastOp>(op);
  // At the top level only: a guard in a body would be checked on every call,
  // for a fact that may need to hold only when the body runs.
  if (!cast || !isa_and_nonnull<func::FuncOp>(op->getParentOp()))
    return false;
  auto type = dyn_cast<RankedTensorType>(cast.getType());
  if (!type || !type.hasStaticShape() || type.getRank() > 1 ||
      !type.getElementType().isSignlessInteger(64) ||
      !isa<FloatType>(getElementTypeOrSelf(cast.getInput().getType())))
    return false;
  Chain chain(op->getContext());
  std::optional<SymShape> elements = chain.values(cast.getInput(), type.getNumElements());
  if (!elements || !llvm::all_of(*elements, [](DimExpr d) { return bool(d); }))
    return false;
  // A chain of constants is the folder's; one that can never fit is left to
  // compute (and fail) as written.
  if (chain.bounds.empty())
    return false;
  for (const ExactBound &b : chain.bounds)
    if (decideShapeAssumption(ShapeAssumption::Kind::LessEqual, b.value,
                              getConstantDim(op->getContext(), b.largest)) ==
        std::optional<bool>(false))
      return false;
  OpBuilder builder(op);
  Attribute value = makeKnownElementsAttr(type, *elements);
  Operation *constant = op->getDialect()->materializeConstant(builder, value, type, op->getLoc());
  if (!constant)
    return false;
  std::set<std::string> guarded;
  for (const ExactBound &b : chain.bounds) {
    DimExpr largest = getConstantDim(op->getContext(), b.largest);
    if (decideShapeAssumption(ShapeAssumption::Kind::LessEqual, b.value, largest) ==
            std::optional<bool>(true) ||
        !guarded.insert(shapeFactKey(ShapeAssumption::Kind::LessEqual, b.value, largest)).second)
      continue;
    std::string typeName;
    llvm::raw_string_ostream os(typeName);
    os << b.type;
    GuardOp::create(builder, op->getLoc(), GuardKind::less_equal,
                    DimsAttr::getCanonical(op->getContext(), {b.value, largest}),
                    builder.getStringAttr(describeOp(op) + ": a size computed in " + typeName +
                                          " is exact only up to " +
                                          std::to_string(b.largest)));
  }
  cast.getResult().replaceAllUsesWith(constant->getResult(0));
  cast.erase();
  return true;
}

} // namespace kiln
