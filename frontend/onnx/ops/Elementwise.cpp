//===- Elementwise.cpp - ONNX elementwise ops onto kiln -------------------===//
//
// Direct maps for ops kiln has, and decompositions for activations kiln keeps out of
// its core set (Relu is max(x, 0), Elu a select, ...). Decompositions compute in the
// input's element type, as ONNX defines them.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

#include <cmath>

using namespace mlir;

namespace kiln::onnx_import {

namespace {
LogicalResult mapCompare(NodeImporter &n, CompareDirection direction) {
  auto a = n.requiredInput(0), b = n.requiredInput(1);
  if (failed(a) || failed(b))
    return failure();
  auto r = compare(n, direction, *a, *b);
  return failed(r) ? failure() : n.setResults({*r});
}

/// Folds a variadic op (Max, Min, Sum) pairwise, left to right.
template <typename OpTy>
FailureOr<Value> foldVariadic(NodeImporter &n) {
  if (n.numInputs() == 0)
    return n.error("needs at least one input");
  FailureOr<Value> acc = n.requiredInput(0);
  for (size_t i = 1; i < n.numInputs() && succeeded(acc); ++i) {
    auto next = n.requiredInput(i);
    if (failed(next))
      return failure();
    acc = n.create<OpTy>({*acc, *next});
  }
  return acc;
}

FailureOr<Value> x0(NodeImporter &n) { return n.requiredInput(0); }
} // namespace


LogicalResult convertIsInf(NodeImporter &n) {
  auto x = x0(n);
  auto pos = n.intAttr("detect_positive", 1), neg = n.intAttr("detect_negative", 1);
  if (failed(x) || failed(pos) || failed(neg))
    return failure();
  Chain c(n);
  if (*pos && *neg)
    return c.done(c(n.create<IsInfOp>({*x})));
  if (!*pos && !*neg) // nothing is detected: all false, in x's shape
    return c.done(c.bin<AndOp>(c(n.create<IsInfOp>({*x})),
                        n.constScalar(n.builder().getI1Type(), 0)));
  double inf = *pos ? INFINITY : -INFINITY;
  return c.done(c.cmp(CompareDirection::eq, *x, c.k(*x, inf)));
}

LogicalResult convertIdentity(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  return n.setResults({*x});
}

LogicalResult convertRelu(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  Chain c(n);
  return c.done(c.bin<MaxOp>(*x, c.k(*x, 0)));
}

LogicalResult convertLeakyRelu(NodeImporter &n) {
  auto x = x0(n);
  auto alpha = n.floatAttr("alpha", 0.01f);
  if (failed(x) || failed(alpha))
    return failure();
  Chain c(n);
  Value negative = c.cmp(CompareDirection::lt, *x, c.k(*x, 0));
  return c.done(c.sel(negative, c.bin<MulOp>(*x, c.k(*x, *alpha)), *x));
}

LogicalResult convertPRelu(NodeImporter &n) {
  auto x = x0(n), slope = n.requiredInput(1);
  if (failed(x) || failed(slope))
    return failure();
  Chain c(n);
  Value negative = c.cmp(CompareDirection::lt, *x, c.k(*x, 0));
  return c.done(c.sel(negative, c.bin<MulOp>(*x, *slope), *x));
}

LogicalResult convertElu(NodeImporter &n) {
  auto x = x0(n);
  auto alpha = n.floatAttr("alpha", 1.0f);
  if (failed(x) || failed(alpha))
    return failure();
  Chain c(n);
  Value negative = c.cmp(CompareDirection::lt, *x, c.k(*x, 0));
  Value em1 = c.bin<SubOp>(c.un<ExpOp>(*x), c.k(*x, 1));
  return c.done(c.sel(negative, c.bin<MulOp>(em1, c.k(*x, *alpha)), *x));
}

LogicalResult convertSelu(NodeImporter &n) {
  auto x = x0(n);
  auto alpha = n.floatAttr("alpha", 1.67326319217681884765625f);
  auto gamma = n.floatAttr("gamma", 1.05070102214813232421875f);
  if (failed(x) || failed(alpha) || failed(gamma))
    return failure();
  Chain c(n);
  Value positive = c.cmp(CompareDirection::gt, *x, c.k(*x, 0));
  Value neg = c.bin<SubOp>(c.bin<MulOp>(c.un<ExpOp>(*x), c.k(*x, *alpha)), c.k(*x, *alpha));
  return c.done(c.bin<MulOp>(c.sel(positive, *x, neg), c.k(*x, *gamma)));
}

LogicalResult convertCelu(NodeImporter &n) {
  auto x = x0(n);
  auto alpha = n.floatAttr("alpha", 1.0f);
  if (failed(x) || failed(alpha))
    return failure();
  Chain c(n);
  Value a = c.k(*x, *alpha), zero = c.k(*x, 0);
  Value inner = c.bin<SubOp>(c.un<ExpOp>(c.bin<DivOp>(*x, a)), c.k(*x, 1));
  return c.done(c.bin<AddOp>(c.bin<MaxOp>(*x, zero), c.bin<MinOp>(zero, c.bin<MulOp>(a, inner))));
}

LogicalResult convertThresholdedRelu(NodeImporter &n) {
  auto x = x0(n);
  auto alpha = n.floatAttr("alpha", 1.0f);
  if (failed(x) || failed(alpha))
    return failure();
  Chain c(n);
  return c.done(c.sel(c.cmp(CompareDirection::gt, *x, c.k(*x, *alpha)), *x, c.k(*x, 0)));
}

namespace {
} // namespace

Value hardSigmoid(Chain &c, Value x, double alpha, double beta) {
  Value lin = c.bin<AddOp>(c.bin<MulOp>(x, c.k(x, alpha)), c.k(x, beta));
  return c.bin<MaxOp>(c.k(x, 0), c.bin<MinOp>(c.k(x, 1), lin));
}

LogicalResult convertHardSigmoid(NodeImporter &n) {
  auto x = x0(n);
  auto alpha = n.floatAttr("alpha", 0.2f), beta = n.floatAttr("beta", 0.5f);
  if (failed(x) || failed(alpha) || failed(beta))
    return failure();
  Chain c(n);
  return c.done(hardSigmoid(c, *x, *alpha, *beta));
}

LogicalResult convertHardSwish(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  Chain c(n);
  return c.done(c.bin<MulOp>(*x, hardSigmoid(c, *x, 1.0 / 6.0, 0.5)));
}

Value softplus(Chain &c, Value x) {
  Value e = c.un<ExpOp>(c.un<NegOp>(c.un<AbsOp>(x)));
  return c.bin<AddOp>(c.bin<MaxOp>(x, c.k(x, 0)), c.un<LogOp>(c.bin<AddOp>(e, c.k(x, 1))));
}

LogicalResult convertSoftplus(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  Chain c(n);
  return c.done(softplus(c, *x));
}

LogicalResult convertSoftsign(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  Chain c(n);
  return c.done(c.bin<DivOp>(*x, c.bin<AddOp>(c.un<AbsOp>(*x), c.k(*x, 1))));
}

LogicalResult convertMish(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  Chain c(n);
  return c.done(c.bin<MulOp>(*x, c.un<TanhOp>(softplus(c, *x))));
}

LogicalResult convertGelu(NodeImporter &n) {
  auto x = x0(n);
  auto approximate = n.stringAttr("approximate", std::string("none"));
  if (failed(x) || failed(approximate))
    return failure();
  Chain c(n);
  Value half = c.bin<MulOp>(*x, c.k(*x, 0.5));
  if (*approximate == "none")
    return c.done(c.bin<MulOp>(half,
                        c.bin<AddOp>(c.k(*x, 1),
                              c.un<ErfOp>(c.bin<MulOp>(*x, c.k(*x, M_SQRT1_2))))));
  if (*approximate != "tanh")
    return n.error("approximate must be 'none' or 'tanh', not '" + *approximate + "'");
  Value cube = c.bin<MulOp>(c.bin<MulOp>(*x, *x), *x);
  Value inner = c.bin<MulOp>(c.bin<AddOp>(*x, c.bin<MulOp>(cube, c.k(*x, 0.044715))),
                      c.k(*x, std::sqrt(2.0 / M_PI)));
  return c.done(c.bin<MulOp>(half, c.bin<AddOp>(c.k(*x, 1), c.un<TanhOp>(inner))));
}

LogicalResult convertShrink(NodeImporter &n) {
  auto x = x0(n);
  auto bias = n.floatAttr("bias", 0.0f), lambd = n.floatAttr("lambd", 0.5f);
  if (failed(x) || failed(bias) || failed(lambd))
    return failure();
  Chain c(n);
  Value below = c.cmp(CompareDirection::lt, *x, c.k(*x, -*lambd));
  Value above = c.cmp(CompareDirection::gt, *x, c.k(*x, *lambd));
  Value inner = c.sel(above, c.bin<SubOp>(*x, c.k(*x, *bias)), c.k(*x, 0));
  return c.done(c.sel(below, c.bin<AddOp>(*x, c.k(*x, *bias)), inner));
}


LogicalResult convertPow(NodeImporter &n) {
  auto base = n.requiredInput(0), exponent = n.requiredInput(1);
  if (failed(base) || failed(exponent))
    return failure();
  Type bt = elementTypeOf(*base), et = elementTypeOf(*exponent);
  Chain c(n);
  if (bt == et)
    return c.done(c.bin<PowOp>(*base, *exponent));
  // Mixed types: compute in the float one (an int base with a float exponent
  // computes in float and truncates back, as ONNX's reference does).
  if (isa<FloatType>(bt))
    return c.done(c.bin<PowOp>(*base, c(castTo(n, *exponent, bt))));
  if (isa<FloatType>(et))
    return c.done(c(castTo(n, c.bin<PowOp>(c(castTo(n, *base, et)), *exponent), bt)));
  return c.done(c.bin<PowOp>(*base, c(castTo(n, *exponent, bt))));
}

LogicalResult convertMod(NodeImporter &n) {
  auto fmod = n.intAttr("fmod", 0);
  if (failed(fmod))
    return failure();
  if (*fmod == 0 && isa<FloatType>(elementTypeOf(*n.requiredInput(0))))
    return n.error("fmod must be 1 for floating-point inputs");
  return *fmod ? mapBinary<RemOp>(n) : mapBinary<ModOp>(n);
}

LogicalResult convertBitShift(NodeImporter &n) {
  auto direction = n.stringAttr("direction");
  if (failed(direction))
    return failure();
  if (*direction == "LEFT")
    return mapBinary<ShiftLeftOp>(n);
  if (*direction == "RIGHT")
    return mapBinary<ShiftRightOp>(n);
  return n.error("direction must be LEFT or RIGHT, not '" + *direction + "'");
}

LogicalResult convertEqual(NodeImporter &n) { return mapCompare(n, CompareDirection::eq); }
LogicalResult convertLess(NodeImporter &n) { return mapCompare(n, CompareDirection::lt); }
LogicalResult convertLessOrEqual(NodeImporter &n) { return mapCompare(n, CompareDirection::le); }
LogicalResult convertGreater(NodeImporter &n) { return mapCompare(n, CompareDirection::gt); }
LogicalResult convertGreaterOrEqual(NodeImporter &n) {
  return mapCompare(n, CompareDirection::ge);
}

LogicalResult convertMax(NodeImporter &n) {
  auto r = foldVariadic<MaxOp>(n);
  return failed(r) ? failure() : n.setResults({*r});
}
LogicalResult convertMin(NodeImporter &n) {
  auto r = foldVariadic<MinOp>(n);
  return failed(r) ? failure() : n.setResults({*r});
}
LogicalResult convertSum(NodeImporter &n) {
  auto r = foldVariadic<AddOp>(n);
  return failed(r) ? failure() : n.setResults({*r});
}
LogicalResult convertMean(NodeImporter &n) {
  auto sum = foldVariadic<AddOp>(n);
  if (failed(sum))
    return failure();
  Chain c(n);
  return c.done(c.bin<DivOp>(*sum, c.k(*sum, static_cast<double>(n.numInputs()))));
}

LogicalResult convertWhere(NodeImporter &n) {
  auto cond = n.requiredInput(0), a = n.requiredInput(1), b = n.requiredInput(2);
  if (failed(cond) || failed(a) || failed(b))
    return failure();
  auto r = select(n, *cond, *a, *b);
  return failed(r) ? failure() : n.setResults({*r});
}

namespace {
LogicalResult convertCastTo(NodeImporter &n, Value x, Type element) {
  auto saturate = n.intAttr("saturate", 1);
  if (failed(saturate))
    return failure();
  if (elementTypeOf(x) == element)
    return n.setResults({x});
  auto r = n.create<CastOp>({x}, {n.named("to", TypeAttr::get(element)),
                                  n.named("saturate", n.builder().getBoolAttr(*saturate))});
  return failed(r) ? failure() : n.setResults({*r});
}
} // namespace

LogicalResult convertCast(NodeImporter &n) {
  auto x = x0(n);
  auto to = n.intAttr("to");
  if (failed(x) || failed(to))
    return failure();
  Type element = convertElementType(n.context(), *to);
  if (!element)
    return n.unsupported("cast to " + onnxTypeName(*to));
  return convertCastTo(n, *x, element);
}

LogicalResult convertCastLike(NodeImporter &n) {
  auto x = x0(n), like = n.requiredInput(1);
  if (failed(x) || failed(like))
    return failure();
  return convertCastTo(n, *x, elementTypeOf(*like));
}

LogicalResult convertClip(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  Chain c(n);
  Value lo, hi;
  if (n.version() < 11) {
    auto minAttr = n.floatAttr("min", -INFINITY), maxAttr = n.floatAttr("max", INFINITY);
    if (failed(minAttr) || failed(maxAttr))
      return failure();
    lo = c.k(*x, *minAttr);
    hi = c.k(*x, *maxAttr);
  } else {
    lo = n.input(1);
    hi = n.input(2);
  }
  Value r = *x;
  if (lo)
    r = c.bin<MaxOp>(r, lo);
  if (hi)
    r = c.bin<MinOp>(r, hi);
  return c.done(r);
}

} // namespace kiln::onnx_import
