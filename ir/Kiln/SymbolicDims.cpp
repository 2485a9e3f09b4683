//===- SymbolicDims.cpp - canonical dim expressions -----------------------===//
//
// Canonical form: an expression is a polynomial with integer coefficients over
// "atoms", where an atom is a symbol or a floordiv/ceildiv/mod whose operands are
// themselves canonical. Terms are sorted by a total order on their factors, and the
// polynomial is rebuilt into an AffineExpr in that order. MLIR uniques AffineExprs,
// so two dims are equal exactly when their canonical AffineExprs are the same
// pointer.
//
//===----------------------------------------------------------------------===//

#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/StepBoundSymbols.h"

#include "mlir/IR/AffineExprVisitor.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <numeric>
#include <mutex>
#include <set>

using namespace mlir;

namespace kiln {

int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t ceilDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}
int64_t floorModInt(int64_t a, int64_t b) { return a - floorDivInt(a, b) * b; }

namespace {

KilnDialect *getKiln(MLIRContext *context) {
  return context->getOrLoadDialect<KilnDialect>();
}

/// Rank of each expression kind in the total order used to sort factors.
int kindRank(AffineExpr e) {
  switch (e.getKind()) {
  case AffineExprKind::Constant:
    return 0;
  case AffineExprKind::SymbolId:
    return 1;
  case AffineExprKind::DimId:
    return 2;
  case AffineExprKind::Add:
    return 3;
  case AffineExprKind::Mul:
    return 4;
  case AffineExprKind::FloorDiv:
    return 5;
  case AffineExprKind::CeilDiv:
    return 6;
  case AffineExprKind::Mod:
    return 7;
  }
  return 8;
}

/// A total order on expressions that depends on symbol *names*, not positions, so
/// the canonical form of an expression does not depend on the order in which a
/// context first met its symbols.
int compareExprs(AffineExpr a, AffineExpr b) {
  if (a == b)
    return 0;
  int ka = kindRank(a), kb = kindRank(b);
  if (ka != kb)
    return ka < kb ? -1 : 1;
  if (auto ca = dyn_cast<AffineConstantExpr>(a)) {
    int64_t va = ca.getValue(), vb = cast<AffineConstantExpr>(b).getValue();
    return va < vb ? -1 : 1;
  }
  if (auto sa = dyn_cast<AffineSymbolExpr>(a)) {
    KilnDialect *kiln = getKiln(a.getContext());
    unsigned pa = sa.getPosition(), pb = cast<AffineSymbolExpr>(b).getPosition();
    int c = kiln->getSymbolName(pa).compare(kiln->getSymbolName(pb));
    if (c != 0)
      return c;
    return pa < pb ? -1 : 1;
  }
  if (auto da = dyn_cast<AffineDimExpr>(a)) {
    unsigned pa = da.getPosition(), pb = cast<AffineDimExpr>(b).getPosition();
    return pa < pb ? -1 : 1;
  }
  auto ba = cast<AffineBinaryOpExpr>(a), bb = cast<AffineBinaryOpExpr>(b);
  if (int c = compareExprs(ba.getLHS(), bb.getLHS()))
    return c;
  return compareExprs(ba.getRHS(), bb.getRHS());
}

using Factors = SmallVector<AffineExpr, 2>; // sorted by compareExprs

struct FactorsLess {
  bool operator()(const Factors &a, const Factors &b) const {
    // Lower-degree terms first, so the constant term leads and rebuilds last.
    if (a.size() != b.size())
      return a.size() < b.size();
    for (size_t i = 0; i < a.size(); ++i)
      if (int c = compareExprs(a[i], b[i]))
        return c < 0;
    return false;
  }
};

/// A polynomial: monomial -> nonzero coefficient.
using Poly = std::map<Factors, int64_t, FactorsLess>;

std::optional<Poly> addPoly(const Poly &a, const Poly &b, int64_t bScale = 1) {
  Poly r = a;
  for (const auto &[m, c] : b) {
    int64_t scaled, sum;
    if (llvm::MulOverflow(c, bScale, scaled) || llvm::AddOverflow(r[m], scaled, sum))
      return std::nullopt;
    if (sum == 0)
      r.erase(m);
    else
      r[m] = sum;
  }
  return r;
}

std::optional<Poly> mulPoly(const Poly &a, const Poly &b) {
  Poly r;
  for (const auto &[ma, ca] : a) {
    for (const auto &[mb, cb] : b) {
      Factors m(ma);
      m.append(mb.begin(), mb.end());
      llvm::sort(m, [](AffineExpr x, AffineExpr y) { return compareExprs(x, y) < 0; });
      int64_t prod, sum;
      if (llvm::MulOverflow(ca, cb, prod) || llvm::AddOverflow(r[m], prod, sum))
        return std::nullopt;
      if (sum == 0)
        r.erase(m);
      else
        r[m] = sum;
    }
  }
  return r;
}

std::optional<int64_t> constantOf(const Poly &p) {
  if (p.empty())
    return 0;
  if (p.size() == 1 && p.begin()->first.empty())
    return p.begin()->second;
  return std::nullopt;
}

Poly constPoly(int64_t v) {
  Poly p;
  if (v != 0)
    p[Factors{}] = v;
  return p;
}

/// Divides `num` by the single monomial `den` exactly, when every term allows it.
std::optional<Poly> divideExactly(const Poly &num, const Poly &den) {
  if (den.size() != 1)
    return std::nullopt;
  const auto &[dm, dc] = *den.begin();
  if (dc == 0)
    return std::nullopt;
  Poly q;
  for (const auto &[m, c] : num) {
    if (c % dc != 0)
      return std::nullopt;
    // Remove dm's factors from m (both sorted multisets).
    Factors rest;
    size_t j = 0;
    for (AffineExpr f : m) {
      if (j < dm.size() && f == dm[j]) {
        ++j;
        continue;
      }
      rest.push_back(f);
    }
    if (j != dm.size())
      return std::nullopt;
    q[rest] = c / dc;
  }
  return q;
}

AffineExpr rebuild(MLIRContext *ctx, const Poly &p);

std::optional<Poly> normalize(AffineExpr e);

/// floordiv, ceildiv and mod of two canonical polynomials.
std::optional<Poly> normalizeDivision(MLIRContext *ctx, AffineExprKind kind,
                                      const Poly &lhs, const Poly &rhs) {
  auto lc = constantOf(lhs), rc = constantOf(rhs);
  if (rc && *rc == 0)
    return std::nullopt; // division by zero has no value
  if (lc && rc) {
    if (*lc == INT64_MIN && *rc == -1)
      return std::nullopt;
    switch (kind) {
    case AffineExprKind::FloorDiv:
      return constPoly(floorDivInt(*lc, *rc));
    case AffineExprKind::CeilDiv:
      return constPoly(ceilDivInt(*lc, *rc));
    default:
      return constPoly(floorModInt(*lc, *rc));
    }
  }
  if (rc && (*rc == 1 || *rc == -1)) {
    if (kind == AffineExprKind::Mod)
      return constPoly(0);
    return addPoly(Poly(), lhs, *rc);
  }
  if (auto q = divideExactly(lhs, rhs)) {
    if (kind == AffineExprKind::Mod)
      return constPoly(0);
    return q;
  }
  AffineExpr l = rebuild(ctx, lhs), r = rebuild(ctx, rhs);
  AffineExpr atom = getAffineBinaryOpExpr(kind, l, r);
  // MLIR may simplify the new expression (e.g. a constant numerator); only keep it
  // opaque when it stayed a division.
  if (!isa<AffineBinaryOpExpr>(atom) || atom.getKind() != kind)
    return normalize(atom);
  Poly p;
  p[Factors{atom}] = 1;
  return p;
}

std::optional<Poly> normalize(AffineExpr e) {
  MLIRContext *ctx = e.getContext();
  switch (e.getKind()) {
  case AffineExprKind::Constant:
    return constPoly(cast<AffineConstantExpr>(e).getValue());
  case AffineExprKind::SymbolId:
  case AffineExprKind::DimId: {
    Poly p;
    p[Factors{e}] = 1;
    return p;
  }
  default:
    break;
  }
  auto bin = cast<AffineBinaryOpExpr>(e);
  auto lhs = normalize(bin.getLHS());
  auto rhs = normalize(bin.getRHS());
  if (!lhs || !rhs)
    return std::nullopt;
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return addPoly(*lhs, *rhs);
  case AffineExprKind::Mul:
    return mulPoly(*lhs, *rhs);
  default:
    return normalizeDivision(ctx, e.getKind(), *lhs, *rhs);
  }
}

AffineExpr rebuild(MLIRContext *ctx, const Poly &p) {
  AffineExpr sum;
  // Highest degree first reads naturally (`batch * seq + 1`); map order is lowest
  // first, so walk it backwards.
  for (auto it = p.rbegin(); it != p.rend(); ++it) {
    const auto &[m, c] = *it;
    AffineExpr term;
    for (AffineExpr f : m)
      term = term ? getAffineBinaryOpExpr(AffineExprKind::Mul, term, f) : f;
    if (!term)
      term = getAffineConstantExpr(c, ctx);
    else if (c != 1)
      term = getAffineBinaryOpExpr(AffineExprKind::Mul, term, getAffineConstantExpr(c, ctx));
    sum = sum ? getAffineBinaryOpExpr(AffineExprKind::Add, sum, term) : term;
  }
  return sum ? sum : getAffineConstantExpr(0, ctx);
}

DimExpr combine(AffineExprKind kind, DimExpr a, DimExpr b) {
  if (!a || !b)
    return DimExpr();
  auto pa = normalize(a), pb = normalize(b);
  if (!pa || !pb)
    return DimExpr();
  std::optional<Poly> r;
  switch (kind) {
  case AffineExprKind::Add:
    r = addPoly(*pa, *pb);
    break;
  case AffineExprKind::Mul:
    r = mulPoly(*pa, *pb);
    break;
  default:
    r = normalizeDivision(a.getContext(), kind, *pa, *pb);
    break;
  }
  return r ? rebuild(a.getContext(), *r) : DimExpr();
}

} // namespace

DimExpr canonicalizeDim(DimExpr expr) {
  // MLIR's expression builder simplifies as it goes, and a rebuilt polynomial can
  // occasionally simplify further (e.g. `(x floordiv 4) * 4 + x mod 4` to `x`);
  // iterate to a fixed point so the result is canonical in its own right.
  for (int i = 0; expr && i < 4; ++i) {
    auto p = normalize(expr);
    if (!p)
      return DimExpr();
    AffineExpr next = rebuild(expr.getContext(), *p);
    if (next == expr)
      break;
    expr = next;
  }
  return expr;
}

DimExpr getSymbolDim(MLIRContext *context, StringRef name) {
  return getAffineSymbolExpr(getKiln(context)->getOrCreateSymbol(name), context);
}

DimExpr getFreshSymbolDim(MLIRContext *context, StringRef hint) {
  return getAffineSymbolExpr(getKiln(context)->createFreshSymbol(hint), context);
}

DimExpr getConstantDim(MLIRContext *context, int64_t value) {
  return getAffineConstantExpr(value, context);
}

std::optional<int64_t> getConstantDimValue(DimExpr dim) {
  if (auto c = dyn_cast_if_present<AffineConstantExpr>(dim))
    return c.getValue();
  return std::nullopt;
}

DimExpr addDims(DimExpr a, DimExpr b) { return combine(AffineExprKind::Add, a, b); }
DimExpr subDims(DimExpr a, DimExpr b) {
  if (!b)
    return DimExpr();
  return combine(AffineExprKind::Add, a, mulDims(b, getConstantDim(b.getContext(), -1)));
}
DimExpr mulDims(DimExpr a, DimExpr b) { return combine(AffineExprKind::Mul, a, b); }
DimExpr floorDivDims(DimExpr a, DimExpr b) { return combine(AffineExprKind::FloorDiv, a, b); }
DimExpr ceilDivDims(DimExpr a, DimExpr b) { return combine(AffineExprKind::CeilDiv, a, b); }
DimExpr modDims(DimExpr a, DimExpr b) { return combine(AffineExprKind::Mod, a, b); }

unsigned firstUnusedSymbolPosition(DimExpr dim) {
  unsigned next = 0;
  if (dim)
    dim.walk([&](AffineExpr e) {
      if (auto s = dyn_cast<AffineSymbolExpr>(e))
        next = std::max(next, s.getPosition() + 1);
    });
  return next;
}

std::optional<int64_t> constantQuotient(DimExpr a, DimExpr b) {
  if (!a || !b)
    return std::nullopt;
  // The candidate from one point (every symbol 61, past the floordivs'
  // small divisors), then checked as an identity of the expressions.
  auto at61 = [](unsigned) -> std::optional<int64_t> { return 61; };
  std::optional<int64_t> x = evaluateDim(a, at61), y = evaluateDim(b, at61);
  if (!x || !y || *y == 0 || *x % *y != 0)
    return std::nullopt;
  int64_t k = *x / *y;
  DimExpr rest = subDims(a, mulDims(b, getConstantDim(a.getContext(), k)));
  if (getConstantDimValue(rest) != std::optional<int64_t>(0))
    return std::nullopt;
  return k;
}

DimExpr productOfDims(MLIRContext *context, ArrayRef<DimExpr> dims) {
  DimExpr p = getConstantDim(context, 1);
  for (DimExpr d : dims)
    p = mulDims(p, d);
  return p;
}

SymShape getSymShape(RankedTensorType type) {
  SymShape dims;
  auto encoding = dyn_cast_if_present<DimsAttr>(type.getEncoding());
  MLIRContext *ctx = type.getContext();
  for (auto [i, size] : llvm::enumerate(type.getShape())) {
    if (!ShapedType::isDynamic(size))
      dims.push_back(getConstantDim(ctx, size));
    else if (encoding && i < encoding.getDims().size())
      dims.push_back(encoding.getDims()[i]);
    else
      dims.push_back(DimExpr());
  }
  return dims;
}

SymShape getSymShape(Type type) {
  if (auto ranked = dyn_cast<RankedTensorType>(type))
    return getSymShape(ranked);
  return {};
}

RankedTensorType makeTensorType(ArrayRef<DimExpr> dims, Type elementType) {
  SmallVector<int64_t> shape;
  SmallVector<DimExpr> canonical;
  bool anySymbolic = false;
  for (DimExpr d : dims) {
    d = canonicalizeDim(d);
    canonical.push_back(d);
    if (auto c = getConstantDimValue(d)) {
      if (*c < 0)
        return nullptr;
      shape.push_back(*c);
    } else {
      shape.push_back(ShapedType::kDynamic);
      anySymbolic |= static_cast<bool>(d);
    }
  }
  Attribute encoding;
  if (anySymbolic)
    encoding = DimsAttr::get(elementType.getContext(), canonical);
  return RankedTensorType::get(shape, elementType, encoding);
}

namespace {
/// The least and greatest values of an expression over every non-negative
/// value of its symbols; nullopt: unbounded on that side (or not worked out,
/// which is as safe). Overflow gives unbounded.
struct Bounds {
  std::optional<int64_t> lo, hi;
};

Bounds boundsOf(AffineExpr e) {
  switch (e.getKind()) {
  case AffineExprKind::Constant: {
    int64_t v = cast<AffineConstantExpr>(e).getValue();
    return {v, v};
  }
  case AffineExprKind::SymbolId:
    return {0, std::nullopt}; // symbols are sizes
  case AffineExprKind::DimId:
    return {};
  default:
    break;
  }
  auto bin = cast<AffineBinaryOpExpr>(e);
  Bounds l = boundsOf(bin.getLHS()), r = boundsOf(bin.getRHS());
  auto sum = [](std::optional<int64_t> a, std::optional<int64_t> b) -> std::optional<int64_t> {
    return a && b ? llvm::checkedAdd(*a, *b) : std::nullopt;
  };
  auto product = [](std::optional<int64_t> a, int64_t k) -> std::optional<int64_t> {
    return a ? llvm::checkedMul(*a, k) : std::nullopt;
  };
  auto constant = [](const Bounds &b) -> std::optional<int64_t> {
    return b.lo && b.hi && *b.lo == *b.hi ? b.lo : std::nullopt;
  };
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return {sum(l.lo, r.lo), sum(l.hi, r.hi)};
  case AffineExprKind::Mul: {
    if (auto k = constant(r).has_value() ? constant(r) : constant(l)) {
      const Bounds &x = constant(r) ? l : r;
      return *k >= 0 ? Bounds{product(x.lo, *k), product(x.hi, *k)}
                     : Bounds{product(x.hi, *k), product(x.lo, *k)};
    }
    if (l.lo && r.lo && *l.lo >= 0 && *r.lo >= 0)
      return {llvm::checkedMul(*l.lo, *r.lo),
              l.hi && r.hi ? llvm::checkedMul(*l.hi, *r.hi) : std::nullopt};
    return {};
  }
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv: {
    std::optional<int64_t> c = constant(r);
    if (!c || *c <= 0)
      return {};
    auto divide = [&](std::optional<int64_t> v) -> std::optional<int64_t> {
      if (!v)
        return std::nullopt;
      return e.getKind() == AffineExprKind::FloorDiv ? floorDivInt(*v, *c) : ceilDivInt(*v, *c);
    };
    return {divide(l.lo), divide(l.hi)};
  }
  case AffineExprKind::Mod: {
    std::optional<int64_t> c = constant(r);
    if (!c || *c <= 0)
      return {};
    if (l.lo && l.hi && *l.lo >= 0 && *l.hi < *c)
      return l;
    return {0, *c - 1}; // affine mod is never negative for a positive divisor
  }
  default:
    return {};
  }
}
/// An expression as (sum of coefficient * atom + c) / denominator, with c known
/// only to lie in [lo, hi]: each `x floordiv k` is (x - r) / k and each
/// `x ceildiv k` is (x + r) / k for an unknown remainder r in [0, k - 1], and each
/// `x mod k` is such an r. Atoms are symbols and products that are not linear.
/// So `h - 4 * ((h floordiv 2) floordiv 2) + 32`, a U-Net's second crop margin,
/// is (0 * h + c) / 4 with c in [128, 140]: at least 32.
struct LinearForm {
  int64_t denominator = 1;
  llvm::MapVector<AffineExpr, int64_t> terms;
  int64_t lo = 0, hi = 0;
};

std::optional<LinearForm> scaled(LinearForm f, int64_t k) {
  for (auto &term : f.terms) {
    auto product = llvm::checkedMul(term.second, k);
    if (!product)
      return std::nullopt;
    term.second = *product;
  }
  auto lo = llvm::checkedMul(f.lo, k), hi = llvm::checkedMul(f.hi, k);
  if (!lo || !hi)
    return std::nullopt;
  f.lo = k >= 0 ? *lo : *hi;
  f.hi = k >= 0 ? *hi : *lo;
  return f;
}

std::optional<LinearForm> linearFormOf(AffineExpr e) {
  LinearForm f;
  switch (e.getKind()) {
  case AffineExprKind::Constant:
    f.lo = f.hi = cast<AffineConstantExpr>(e).getValue();
    return f;
  case AffineExprKind::SymbolId:
    f.terms[e] = 1;
    return f;
  case AffineExprKind::DimId:
    return std::nullopt;
  default:
    break;
  }
  auto bin = cast<AffineBinaryOpExpr>(e);
  auto rhsConstant = dyn_cast<AffineConstantExpr>(bin.getRHS());
  auto lhsConstant = dyn_cast<AffineConstantExpr>(bin.getLHS());
  switch (e.getKind()) {
  case AffineExprKind::Add: {
    auto l = linearFormOf(bin.getLHS()), r = linearFormOf(bin.getRHS());
    if (!l || !r)
      return std::nullopt;
    // The least common denominator, checked (std::lcm wraps on overflow).
    int64_t g = std::gcd(l->denominator, r->denominator);
    std::optional<int64_t> lcd = llvm::checkedMul(l->denominator / g, r->denominator);
    if (!lcd)
      return std::nullopt;
    int64_t common = *lcd;
    l = scaled(*l, common / l->denominator);
    r = scaled(*r, common / r->denominator);
    if (!l || !r)
      return std::nullopt;
    auto lo = llvm::checkedAdd(l->lo, r->lo), hi = llvm::checkedAdd(l->hi, r->hi);
    if (!lo || !hi)
      return std::nullopt;
    l->lo = *lo;
    l->hi = *hi;
    l->denominator = common;
    for (auto [atom, k] : r->terms) {
      auto sum = llvm::checkedAdd(l->terms.lookup(atom), k);
      if (!sum)
        return std::nullopt;
      l->terms[atom] = *sum;
    }
    return l;
  }
  case AffineExprKind::Mul: {
    if (!rhsConstant && !lhsConstant) {
      f.terms[e] = 1; // a product of sizes: an atom
      return f;
    }
    auto x = linearFormOf(rhsConstant ? bin.getLHS() : bin.getRHS());
    if (!x)
      return std::nullopt;
    return scaled(*x, (rhsConstant ? rhsConstant : lhsConstant).getValue());
  }
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
  case AffineExprKind::Mod: {
    if (!rhsConstant || rhsConstant.getValue() <= 0)
      return std::nullopt;
    int64_t k = rhsConstant.getValue();
    if (e.getKind() == AffineExprKind::Mod) {
      f.hi = k - 1;
      return f;
    }
    auto x = linearFormOf(bin.getLHS());
    auto denominator = x ? llvm::checkedMul(x->denominator, k) : std::nullopt;
    auto spread = x ? llvm::checkedMul(x->denominator, k - 1) : std::nullopt;
    if (!x || !denominator || !spread)
      return std::nullopt;
    x->denominator = *denominator;
    auto bound = e.getKind() == AffineExprKind::FloorDiv ? llvm::checkedSub(x->lo, *spread)
                                                          : llvm::checkedAdd(x->hi, *spread);
    if (!bound)
      return std::nullopt;
    (e.getKind() == AffineExprKind::FloorDiv ? x->lo : x->hi) = *bound;
    return x;
  }
  default:
    return std::nullopt;
  }
}
} // namespace

namespace {
bool isProvablyNonNegativeAsWritten(DimExpr dim);

/// Divisions bounded below by a negative constant, a conv chain's
/// `(h - 1) floordiv 2 >= -1` for a size h, keep a polynomial of them from
/// the form (15·(c + 1)·(d + 1) expanded has the negative terms of c and d):
/// each stands for a size no expression names plus its bound, and the form
/// is asked again. Sound because every value of such a division is one of
/// those sums (taking them as independent only widens what must hold).
bool isProvablyNonNegativeShifted(DimExpr dim) {
  SmallVector<std::pair<AffineExpr, int64_t>> atoms;
  dim.walk([&](AffineExpr e) {
    if (e.getKind() != AffineExprKind::FloorDiv && e.getKind() != AffineExprKind::CeilDiv)
      return;
    std::optional<int64_t> lo = boundsOf(e).lo;
    if (lo && *lo < 0 && llvm::none_of(atoms, [&](const auto &a) { return a.first == e; }))
      atoms.push_back({e, *lo});
  });
  if (atoms.empty() || atoms.size() > 8)
    return false;
  // Outer divisions first: replacing one takes the ones inside it along.
  // The sizes standing for them are numbered past the expression's symbols
  // (a caller's own stand-ins included), so no two are one.
  unsigned unnamed = firstUnusedSymbolPosition(dim);
  DimExpr shifted = dim;
  for (auto it = atoms.rbegin(); it != atoms.rend(); ++it)
    shifted = shifted.replace(
        it->first, getAffineSymbolExpr(unnamed++, dim.getContext()) + it->second);
  // As a polynomial again: the products of shifted atoms expand, and their
  // negative terms cancel.
  shifted = canonicalizeDim(shifted);
  return shifted && shifted != dim && isProvablyNonNegativeAsWritten(shifted);
}
} // namespace

bool isProvablyNonNegative(DimExpr dim) {
  return isProvablyNonNegativeAsWritten(dim) ||
         (dim && isProvablyNonNegativeShifted(dim));
}

namespace {
bool isProvablyNonNegativeAsWritten(DimExpr dim) {
  if (!dim)
    return false;
  if (std::optional<int64_t> lo = boundsOf(dim).lo; lo && *lo >= 0)
    return true; // e.g. (8 - h mod 8) mod 8, the padding to a multiple of 8
  if (std::optional<LinearForm> f = linearFormOf(dim);
      f && f->lo >= 0 && llvm::all_of(f->terms, [&](const auto &term) {
        // Symbols are sizes; a product atom must be shown non-negative
        // without this form (it is its own form).
        return term.second == 0 ||
               (term.second > 0 && (isa<AffineSymbolExpr>(term.first) ||
                                    (term.first != dim && isProvablyNonNegativeAsWritten(term.first))));
      }))
    return true;
  switch (dim.getKind()) {
  case AffineExprKind::Constant:
    return cast<AffineConstantExpr>(dim).getValue() >= 0;
  case AffineExprKind::SymbolId:
    return true; // symbols are sizes
  case AffineExprKind::DimId:
    return false;
  default: {
    auto bin = cast<AffineBinaryOpExpr>(dim);
    // A product of non-negative factors (the sum's cases are the form's).
    return isProvablyNonNegativeAsWritten(bin.getLHS()) &&
           isProvablyNonNegativeAsWritten(bin.getRHS());
  }
  }
}
} // namespace

std::optional<int64_t>
evaluateDim(DimExpr dim, llvm::function_ref<std::optional<int64_t>(unsigned)> symbolValue) {
  if (!dim)
    return std::nullopt;
  switch (dim.getKind()) {
  case AffineExprKind::Constant:
    return cast<AffineConstantExpr>(dim).getValue();
  case AffineExprKind::SymbolId:
    return symbolValue(cast<AffineSymbolExpr>(dim).getPosition());
  case AffineExprKind::DimId:
    return std::nullopt;
  default:
    break;
  }
  auto bin = cast<AffineBinaryOpExpr>(dim);
  auto l = evaluateDim(bin.getLHS(), symbolValue);
  auto r = evaluateDim(bin.getRHS(), symbolValue);
  if (!l || !r)
    return std::nullopt;
  int64_t out;
  switch (dim.getKind()) {
  case AffineExprKind::Add:
    if (llvm::AddOverflow(*l, *r, out))
      return std::nullopt;
    return out;
  case AffineExprKind::Mul:
    if (llvm::MulOverflow(*l, *r, out))
      return std::nullopt;
    return out;
  default:
    if (*r == 0 || (*l == INT64_MIN && *r == -1))
      return std::nullopt;
    if (dim.getKind() == AffineExprKind::FloorDiv)
      return floorDivInt(*l, *r);
    if (dim.getKind() == AffineExprKind::CeilDiv)
      return ceilDivInt(*l, *r);
    return floorModInt(*l, *r);
  }
}

namespace {
/// Prints canonical expressions as a sum of terms with symbol names.
class DimPrinter {
public:
  explicit DimPrinter(raw_ostream &os) : os(os) {}

  void printExpr(AffineExpr e) {
    auto p = normalize(e);
    if (!p) { // not representable canonically: print MLIR's own form
      os << e;
      return;
    }
    printPoly(*p);
  }

private:
  void printPoly(const Poly &p) {
    if (p.empty()) {
      os << 0;
      return;
    }
    bool first = true;
    for (auto it = p.rbegin(); it != p.rend(); ++it) {
      const auto &[m, c] = *it;
      int64_t coeff = c;
      if (!first) {
        os << (coeff < 0 ? " - " : " + ");
        if (coeff < 0 && coeff != INT64_MIN)
          coeff = -coeff;
      }
      first = false;
      printTerm(m, coeff);
    }
  }

  void printTerm(const Factors &m, int64_t coeff) {
    if (m.empty()) {
      os << coeff;
      return;
    }
    bool alone = m.size() == 1 && coeff == 1;
    if (coeff == -1)
      os << "-";
    else if (coeff != 1)
      os << coeff << " * ";
    llvm::interleave(
        m, os, [&](AffineExpr f) { printAtom(f, /*parenthesize=*/!alone); }, " * ");
  }

  void printAtom(AffineExpr f, bool parenthesize) {
    if (auto s = dyn_cast<AffineSymbolExpr>(f)) {
      os << getKiln(f.getContext())->getSymbolName(s.getPosition());
      return;
    }
    if (auto d = dyn_cast<AffineDimExpr>(f)) {
      os << "d" << d.getPosition();
      return;
    }
    auto bin = cast<AffineBinaryOpExpr>(f);
    StringRef op = bin.getKind() == AffineExprKind::FloorDiv  ? "floordiv"
                   : bin.getKind() == AffineExprKind::CeilDiv ? "ceildiv"
                                                              : "mod";
    if (parenthesize)
      os << "(";
    printOperand(bin.getLHS());
    os << " " << op << " ";
    printOperand(bin.getRHS());
    if (parenthesize)
      os << ")";
  }

  /// An operand of floordiv/ceildiv/mod: bare when it is one symbol or a
  /// non-negative constant, parenthesized otherwise.
  void printOperand(AffineExpr e) {
    if (isa<AffineSymbolExpr>(e) ||
        (isa<AffineConstantExpr>(e) && cast<AffineConstantExpr>(e).getValue() >= 0)) {
      printExpr(e);
      return;
    }
    os << "(";
    printExpr(e);
    os << ")";
  }

  raw_ostream &os;
};
} // namespace

void printDim(raw_ostream &os, DimExpr dim) {
  if (!dim) {
    os << "?";
    return;
  }
  DimPrinter(os).printExpr(dim);
}

std::string dimToString(DimExpr dim) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printDim(os, dim);
  return s;
}

} // namespace kiln

//===----------------------------------------------------------------------===//
// Step-bound symbols (StepBoundSymbols.h)
//===----------------------------------------------------------------------===//

namespace kiln {
namespace {
/// Per context, the names of its step-bound symbols. Names, not positions: a
/// context that ends leaves its entry, and a later one at the same address
/// (the JIT's compile after compile) numbers its own symbols from 0 again. It
/// inherits marks only for symbols named like the earlier ones' (runN, which
/// kiln-name-unknown-dims gives its step-bound symbols there too); an input
/// dim of that name would only see fewer assumptions, never a wrong size.
std::mutex stepBoundMutex;
std::map<mlir::MLIRContext *, std::set<std::string>> &stepBound() {
  static auto *marks = new std::map<mlir::MLIRContext *, std::set<std::string>>();
  return *marks;
}
} // namespace

void markStepBound(DimExpr symbol) {
  auto s = dyn_cast_if_present<AffineSymbolExpr>(symbol);
  if (!s)
    return;
  std::string name = dimToString(s);
  std::lock_guard<std::mutex> lock(stepBoundMutex);
  stepBound()[s.getContext()].insert(std::move(name));
}

bool involvesStepBound(DimExpr dim) {
  if (!dim)
    return false;
  std::vector<std::string> names;
  dim.walk([&](AffineExpr e) {
    if (isa<AffineSymbolExpr>(e))
      names.push_back(dimToString(e));
  });
  std::lock_guard<std::mutex> lock(stepBoundMutex);
  auto it = stepBound().find(dim.getContext());
  return it != stepBound().end() &&
         llvm::any_of(names, [&](const std::string &n) { return it->second.count(n) != 0; });
}

} // namespace kiln
