// Canonical dim expressions: equal values are equal pointers, and canonicalization
// never changes what an expression evaluates to.

#include "ir/Kiln/KilnDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using namespace kiln;

class SymbolicDims : public ::testing::Test {
protected:
  SymbolicDims() { context.loadDialect<KilnDialect>(); }
  DimExpr sym(llvm::StringRef name) { return getSymbolDim(&context, name); }
  DimExpr c(int64_t v) { return getConstantDim(&context, v); }
  mlir::MLIRContext context;
};

TEST_F(SymbolicDims, CommutedProductsAreOneExpression) {
  DimExpr a = sym("batch"), b = sym("seq");
  EXPECT_EQ(mulDims(a, b), mulDims(b, a));
  EXPECT_EQ(dimToString(mulDims(b, a)), "batch * seq");
}

TEST_F(SymbolicDims, PolynomialsCombineLikeTerms) {
  DimExpr a = sym("a"), b = sym("b");
  // (a + 1) * 2 - a == a + 2
  DimExpr lhs = subDims(mulDims(addDims(a, c(1)), c(2)), a);
  EXPECT_EQ(lhs, addDims(a, c(2)));
  EXPECT_EQ(dimToString(lhs), "a + 2");
  // a * b - b * a == 0
  EXPECT_EQ(getConstantDimValue(subDims(mulDims(a, b), mulDims(b, a))), 0);
}

TEST_F(SymbolicDims, ExactDivisionCancels) {
  DimExpr a = sym("batch"), b = sym("seq");
  EXPECT_EQ(floorDivDims(mulDims(a, b), b), a);
  EXPECT_EQ(floorDivDims(mulDims(a, c(12)), c(4)), mulDims(a, c(3)));
  EXPECT_EQ(getConstantDimValue(modDims(mulDims(a, c(8)), c(4))), 0);
  EXPECT_EQ(dimToString(floorDivDims(a, c(2))), "batch floordiv 2");
  EXPECT_EQ(dimToString(mulDims(floorDivDims(a, c(2)), c(3))), "3 * (batch floordiv 2)");
}

TEST_F(SymbolicDims, DivisionByZeroIsUnknown) {
  EXPECT_FALSE(floorDivDims(sym("a"), c(0)));
  EXPECT_FALSE(modDims(c(3), c(0)));
}

TEST_F(SymbolicDims, IntegerDivisionRoundsMathematically) {
  EXPECT_EQ(floorDivInt(-7, 2), -4);
  EXPECT_EQ(ceilDivInt(-7, 2), -3);
  EXPECT_EQ(ceilDivInt(7, 2), 4);
  EXPECT_EQ(floorModInt(-7, 3), 2);
  EXPECT_EQ(getConstantDimValue(floorDivDims(c(-7), c(2))), -4);
}

TEST_F(SymbolicDims, OverflowGivesUnknownNotWrongNumbers) {
  DimExpr big = c(int64_t(1) << 62);
  EXPECT_FALSE(mulDims(big, c(4)));
  EXPECT_FALSE(addDims(c(INT64_MAX), c(1)));
}

TEST_F(SymbolicDims, NonNegativity) {
  DimExpr a = sym("a"), b = sym("b");
  EXPECT_TRUE(isProvablyNonNegative(addDims(mulDims(a, b), c(3))));
  EXPECT_FALSE(isProvablyNonNegative(subDims(a, c(1))));
  EXPECT_TRUE(isProvablyNonNegative(floorDivDims(a, c(2))));
  // What whole tiles of c leave of a size: a - c (a floordiv c), in either
  // order of the terms; not with another factor or another size.
  EXPECT_TRUE(isProvablyNonNegative(subDims(a, mulDims(c(2), floorDivDims(a, c(2))))));
  EXPECT_TRUE(isProvablyNonNegative(addDims(mulDims(floorDivDims(a, c(3)), c(-3)), a)));
  EXPECT_FALSE(isProvablyNonNegative(subDims(a, mulDims(c(3), floorDivDims(a, c(2))))));
  EXPECT_FALSE(isProvablyNonNegative(subDims(b, mulDims(c(2), floorDivDims(a, c(2))))));
  // By bounds: a mod 8 is in [0, 7], so 8 - a mod 8 is in [1, 8]; not 6 - a mod 8.
  EXPECT_TRUE(isProvablyNonNegative(subDims(c(8), modDims(a, c(8)))));
  EXPECT_TRUE(isProvablyNonNegative(modDims(subDims(c(8), modDims(a, c(8))), c(8))));
  EXPECT_FALSE(isProvablyNonNegative(subDims(c(6), modDims(a, c(8)))));
  EXPECT_FALSE(isProvablyNonNegative(subDims(mulDims(a, b), c(1))));
  // Divisions read as quotient less remainder: nested, offset, and over
  // products; a torch U-Net's second crop margin is h - 4 ((h fd 2) fd 2) + 32.
  DimExpr quarter = floorDivDims(floorDivDims(a, c(2)), c(2));
  EXPECT_TRUE(isProvablyNonNegative(addDims(subDims(a, mulDims(c(4), quarter)), c(32))));
  EXPECT_TRUE(isProvablyNonNegative(subDims(a, mulDims(c(4), quarter))));
  EXPECT_FALSE(isProvablyNonNegative(subDims(subDims(a, mulDims(c(4), quarter)), c(1))));
  EXPECT_FALSE(isProvablyNonNegative(subDims(a, mulDims(c(5), quarter))));
  EXPECT_TRUE(isProvablyNonNegative(
      subDims(mulDims(a, b), mulDims(c(2), floorDivDims(mulDims(a, b), c(2))))));
  EXPECT_TRUE(isProvablyNonNegative(subDims(mulDims(c(3), ceilDivDims(a, c(3))), a)));
  EXPECT_FALSE(isProvablyNonNegative(subDims(a, mulDims(c(3), ceilDivDims(a, c(3))))));
  // (a - 4) floordiv 2 may be negative (a < 4); a - 2 ((a - 4) floordiv 2) - 4 is not.
  EXPECT_FALSE(isProvablyNonNegative(floorDivDims(subDims(a, c(4)), c(2))));
  EXPECT_TRUE(isProvablyNonNegative(
      subDims(subDims(a, mulDims(c(2), floorDivDims(subDims(a, c(4)), c(2)))), c(4))));
  // Divisions bounded below by -1 in a polynomial: with c = (a - 1) fd 2 and
  // d = (b - 1) fd 2 (a conv chain's sizes less one), 15 (c + 1)(d + 1)
  // expands to 15cd + 15c + 15d + 15, which the form alone cannot show
  // non-negative; each division taken as a size less one, it can. It is
  // 0 at a = b = 0, so not 1 or more; and 15cd alone may be negative.
  DimExpr cc = floorDivDims(subDims(a, c(1)), c(2)), dd = floorDivDims(subDims(b, c(1)), c(2));
  DimExpr grid = mulDims(c(15), mulDims(addDims(cc, c(1)), addDims(dd, c(1))));
  EXPECT_TRUE(isProvablyNonNegative(grid));
  EXPECT_TRUE(isProvablyNonNegative(addDims(grid, mulDims(c(30), mulDims(a, b)))));
  EXPECT_FALSE(isProvablyNonNegative(subDims(grid, c(1))));
  EXPECT_FALSE(isProvablyNonNegative(mulDims(c(15), mulDims(cc, dd))));
  // Two huge coprime divisors: their common denominator overflows int64, and
  // nothing is claimed (a floordiv 4294967101 - a floordiv 4294967096 + 1 is -2
  // at a = 9223372036854755808).
  EXPECT_FALSE(isProvablyNonNegative(
      addDims(subDims(floorDivDims(a, c(4294967101)), floorDivDims(a, c(4294967096))), c(1))));
}

TEST_F(SymbolicDims, ConstantQuotient) {
  DimExpr h = sym("h"), w = sym("w");
  DimExpr cells = addDims(mulDims(h, w), w); // h w + w: no monomial divides it
  EXPECT_EQ(constantQuotient(mulDims(c(60), cells), mulDims(c(4), cells)), 15);
  EXPECT_EQ(constantQuotient(cells, cells), 1);
  // Not a constant multiple (only at some values), or not a multiple at all.
  EXPECT_EQ(constantQuotient(mulDims(c(60), cells), mulDims(c(4), addDims(cells, c(1)))),
            std::nullopt);
  EXPECT_EQ(constantQuotient(mulDims(c(6), h), mulDims(c(4), h)), std::nullopt);
  EXPECT_EQ(constantQuotient(mulDims(h, w), h), std::nullopt);
}

TEST_F(SymbolicDims, TensorTypesCarrySymbolsInTheirEncoding) {
  auto f32 = mlir::Float32Type::get(&context);
  auto type = makeTensorType({mulDims(sym("batch"), sym("seq")), c(768)}, f32);
  ASSERT_TRUE(type);
  EXPECT_TRUE(type.isDynamicDim(0));
  EXPECT_EQ(type.getDimSize(1), 768);
  SymShape back = getSymShape(type);
  EXPECT_EQ(back[0], mulDims(sym("seq"), sym("batch")));
  // Fully static dims need no encoding; negative sizes are rejected.
  EXPECT_FALSE(makeTensorType({c(2), c(3)}, f32).getEncoding());
  EXPECT_FALSE(makeTensorType({c(-1)}, f32));
}

TEST_F(SymbolicDims, FreshSymbolsNeverCollide) {
  DimExpr taken = sym("n");
  DimExpr fresh = getFreshSymbolDim(&context, "n");
  EXPECT_NE(taken, fresh);
  EXPECT_NE(dimToString(fresh), "n");
}

// Property: canonicalization preserves value. Build random expressions, evaluate
// them directly and after canonicalization at random symbol values.
TEST_F(SymbolicDims, CanonicalizationPreservesValue) {
  std::mt19937 rng(1234);
  std::vector<DimExpr> symbols = {sym("x"), sym("y"), sym("z")};
  std::function<mlir::AffineExpr(int)> build = [&](int depth) -> mlir::AffineExpr {
    if (depth == 0 || rng() % 4 == 0)
      return rng() % 2 ? symbols[rng() % 3] : c(static_cast<int64_t>(rng() % 7) - 2);
    mlir::AffineExpr l = build(depth - 1), r = build(depth - 1);
    switch (rng() % 5) {
    case 0:
      return l + r;
    case 1:
      return l * r;
    case 2:
      return l - r;
    case 3:
      return l.floorDiv(c(static_cast<int64_t>(rng() % 4) + 1));
    default:
      return l % c(static_cast<int64_t>(rng() % 4) + 1);
    }
  };
  for (int trial = 0; trial < 2000; ++trial) {
    mlir::AffineExpr e = build(4);
    DimExpr canonical = canonicalizeDim(e);
    ASSERT_TRUE(canonical);
    EXPECT_EQ(canonicalizeDim(canonical), canonical) << "not idempotent";
    for (int point = 0; point < 5; ++point) {
      int64_t values[3] = {static_cast<int64_t>(rng() % 20), static_cast<int64_t>(rng() % 20),
                           static_cast<int64_t>(rng() % 20)};
      auto bind = [&](unsigned position) -> std::optional<int64_t> {
        for (int i = 0; i < 3; ++i)
          if (llvm::cast<mlir::AffineSymbolExpr>(symbols[i]).getPosition() == position)
            return values[i];
        return std::nullopt;
      };
      EXPECT_EQ(evaluateDim(e, bind), evaluateDim(canonical, bind))
          << dimToString(e) << " vs " << dimToString(canonical);
    }
  }
}

} // namespace
