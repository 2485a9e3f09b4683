//===- Folding.cpp - constant folding shared by the kiln ops --------------===//

#include "ir/Kiln/Folding.h"

#include "ir/Kiln/KilnDialect.h"

#include "llvm/ADT/APFloat.h"

using namespace mlir;

namespace kiln {

bool hasKnownShape(Type type) {
  return llvm::all_of(getSymShape(type), [](DimExpr d) { return static_cast<bool>(d); });
}

namespace {

APFloat toSemantics(double v, Type elementType) {
  APFloat f(v);
  bool losesInfo = false;
  f.convert(cast<FloatType>(elementType).getFloatSemantics(),
            APFloat::rmNearestTiesToEven, &losesInfo);
  return f;
}

double toDouble(const APFloat &v) {
  APFloat d = v;
  bool losesInfo = false;
  d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
  return d.convertToDouble();
}

/// A dense constant small enough to fold, or null.
DenseElementsAttr foldable(Attribute attr) {
  auto dense = dyn_cast_if_present<DenseElementsAttr>(attr);
  if (!dense || dense.getNumElements() > kMaxFoldElements)
    return nullptr;
  return dense;
}

} // namespace

bool isSplatValue(Attribute attr, double value) {
  auto dense = dyn_cast_if_present<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  Type e = dense.getElementType();
  if (isa<FloatType>(e))
    return toDouble(dense.getSplatValue<APFloat>()) == value;
  if (e.isInteger(1))
    return dense.getSplatValue<bool>() == (value != 0);
  if (e.isInteger())
    return static_cast<double>(dense.getSplatValue<APInt>().getSExtValue()) == value;
  return false;
}

OpFoldResult foldUnaryConstant(Attribute input, Type resultType, FloatUnaryFn floatFn,
                               IntUnaryFn intFn) {
  DenseElementsAttr dense = foldable(input);
  auto type = dyn_cast<RankedTensorType>(resultType);
  if (!dense || !type || !type.hasStaticShape())
    return {};
  Type inElement = dense.getElementType(), outElement = type.getElementType();
  if (isa<FloatType>(inElement)) {
    if (!floatFn)
      return {};
    if (outElement.isInteger(1)) {
      SmallVector<bool> out;
      for (const APFloat &v : dense.getValues<APFloat>())
        out.push_back(floatFn(toDouble(v)) != 0);
      return DenseElementsAttr::get(type, out);
    }
    SmallVector<APFloat> out;
    for (const APFloat &v : dense.getValues<APFloat>())
      out.push_back(toSemantics(floatFn(toDouble(v)), outElement));
    return DenseElementsAttr::get(type, out);
  }
  if (!intFn)
    return {};
  bool isUnsigned = inElement.isUnsignedInteger();
  SmallVector<APInt> out;
  for (const APInt &v : dense.getValues<APInt>())
    out.push_back(intFn(v, isUnsigned));
  return DenseElementsAttr::get(type, out);
}

OpFoldResult foldBinaryConstant(Attribute lhs, Attribute rhs, Type resultType,
                                const BinaryFoldFns &fns) {
  auto type = dyn_cast<RankedTensorType>(resultType);
  if (!lhs || !rhs || !type || !type.hasStaticShape() ||
      type.getNumElements() > kMaxFoldElements)
    return {};
  int64_t n = type.getNumElements();
  MLIRContext *ctx = type.getContext();

  // Symbolic integer elements: the shape computations of exported models.
  if (fns.dims && (isa<DimsAttr>(lhs) || isa<DimsAttr>(rhs))) {
    auto l = getKnownElements(lhs, ctx), r = getKnownElements(rhs, ctx);
    if (!l || !r)
      return {};
    auto at = [&](const SymShape &s, int64_t i) -> DimExpr {
      return s.size() == 1 ? s[0] : ((int64_t)s.size() == n ? s[i] : DimExpr());
    };
    SymShape out;
    for (int64_t i = 0; i < n; ++i) {
      DimExpr a = at(*l, i), b = at(*r, i);
      if (!a || !b)
        return {};
      DimExpr v = fns.dims(a, b);
      if (!v)
        return {};
      out.push_back(v);
    }
    return makeKnownElementsAttr(type, out);
  }

  DenseElementsAttr l = foldable(lhs), r = foldable(rhs);
  if (!l || !r)
    return {};
  auto indexOf = [&](DenseElementsAttr a, int64_t i) -> int64_t {
    return a.isSplat() || a.getNumElements() == 1 ? 0 : i;
  };
  if (!(l.isSplat() || l.getNumElements() == 1 || l.getNumElements() == n) ||
      !(r.isSplat() || r.getNumElements() == 1 || r.getNumElements() == n))
    return {};
  Type inElement = l.getElementType(), outElement = type.getElementType();
  if (isa<FloatType>(inElement)) {
    if (!fns.floats)
      return {};
    auto lv = llvm::to_vector(l.getValues<APFloat>());
    auto rv = llvm::to_vector(r.getValues<APFloat>());
    if (outElement.isInteger(1)) {
      SmallVector<bool> out;
      for (int64_t i = 0; i < n; ++i)
        out.push_back(fns.floats(toDouble(lv[indexOf(l, i)]), toDouble(rv[indexOf(r, i)])) != 0);
      return DenseElementsAttr::get(type, out);
    }
    SmallVector<APFloat> out;
    for (int64_t i = 0; i < n; ++i)
      out.push_back(toSemantics(
          fns.floats(toDouble(lv[indexOf(l, i)]), toDouble(rv[indexOf(r, i)])), outElement));
    return DenseElementsAttr::get(type, out);
  }
  if (!fns.ints)
    return {};
  bool isUnsigned = inElement.isUnsignedInteger();
  auto lv = llvm::to_vector(l.getValues<APInt>());
  auto rv = llvm::to_vector(r.getValues<APInt>());
  SmallVector<APInt> out;
  for (int64_t i = 0; i < n; ++i) {
    std::optional<APInt> v = fns.ints(lv[indexOf(l, i)], rv[indexOf(r, i)], isUnsigned);
    if (!v)
      return {};
    out.push_back(*v);
  }
  if (outElement.isInteger(1) && !inElement.isInteger(1)) {
    SmallVector<bool> bools;
    for (const APInt &v : out)
      bools.push_back(!v.isZero());
    return DenseElementsAttr::get(type, bools);
  }
  return DenseElementsAttr::get(type, out);
}

namespace {
/// An integer constant's element as the op table's functions take it: sign- or
/// zero-extended to 64 bits.
int64_t toInt64(const APInt &v, bool isUnsigned) {
  return isUnsigned ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue();
}
/// The 64-bit result wrapped to the element's width.
APInt fromInt64(int64_t v, unsigned width) { return APInt(64, static_cast<uint64_t>(v)).trunc(width); }

bool widerThan64(Attribute a) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(a);
  return dense && dense.getElementType().isInteger() &&
         dense.getElementType().getIntOrFloatBitWidth() > 64;
}
} // namespace

OpFoldResult foldUnaryFn(ops::UnaryFn fn, Attribute input, Type resultType) {
  if (widerThan64(input))
    return {};
  return foldUnaryConstant(
      input, resultType, [fn](double x) { return ops::evalFloat(fn, x); },
      [fn](const APInt &x, bool isUnsigned) {
        return fromInt64(ops::evalInt(fn, toInt64(x, isUnsigned), isUnsigned), x.getBitWidth());
      });
}

OpFoldResult foldBinaryFn(ops::BinaryFn fn, Attribute lhs, Attribute rhs, Type resultType,
                          llvm::function_ref<DimExpr(DimExpr, DimExpr)> dims) {
  if (widerThan64(lhs) || widerThan64(rhs))
    return {};
  auto floats = [fn](double a, double b) { return ops::evalFloat(fn, a, b); };
  auto ints = [fn](const APInt &a, const APInt &b, bool isUnsigned) -> std::optional<APInt> {
    bool ok = true;
    unsigned width = a.getBitWidth();
    int64_t r = ops::evalInt(fn, toInt64(a, isUnsigned), toInt64(b, isUnsigned), isUnsigned,
                             static_cast<int>(width), ok);
    if (!ok)
      return std::nullopt;
    return fromInt64(r, width);
  };
  return foldBinaryConstant(lhs, rhs, resultType, {dims, floats, ints});
}

} // namespace kiln
