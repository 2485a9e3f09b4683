//===- ReferenceKernelsTest.cpp - the reference kernels' hard cases -------===//
//
// The conformance suite covers the kernels broadly; these pin down the cases it
// reaches only by luck: float formats rounding once from double, integer
// semantics at the edges, and indexing corner cases.

#include "kiln/reference/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace kiln::ref;

namespace {
Tensor vec(DType t, std::vector<double> values) {
  Tensor x(t, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    x.setF(i, values[i]);
  return x;
}
Tensor ivec(DType t, std::vector<int64_t> values) {
  Tensor x(t, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    x.setI(i, values[i]);
  return x;
}
} // namespace

TEST(ReferenceFloat, HalfRoundsToNearestEven) {
  EXPECT_EQ(encodeFloat(DType::f16, 1.0), 0x3C00u);
  EXPECT_EQ(encodeFloat(DType::f16, 65504.0), 0x7BFFu);
  EXPECT_EQ(encodeFloat(DType::f16, 65520.0), 0x7C00u); // rounds up to inf
  EXPECT_EQ(encodeFloat(DType::f16, 65519.99), 0x7BFFu);
  // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1).
  EXPECT_EQ(encodeFloat(DType::f16, 1.0 + std::ldexp(1.0, -11)), 0x3C00u);
  EXPECT_EQ(encodeFloat(DType::f16, 1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02u);
  EXPECT_EQ(encodeFloat(DType::f16, std::ldexp(1.0, -24)), 0x0001u); // smallest subnormal
  EXPECT_EQ(encodeFloat(DType::f16, std::ldexp(1.0, -26)), 0x0000u);
  EXPECT_EQ(encodeFloat(DType::f16, -0.0), 0x8000u);
  EXPECT_TRUE(std::isnan(decodeFloat(DType::f16, encodeFloat(DType::f16, NAN))));
  EXPECT_EQ(decodeFloat(DType::f16, 0x3555), 0.333251953125);
}

TEST(ReferenceFloat, Bfloat16RoundsOnceFromDouble) {
  // 1 + 2^-8 + 2^-30 is just above the tie between 1 and 1 + 2^-7: rounding it to
  // float first would land on the tie and then round to even (1); once from double
  // it rounds up.
  double v = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(encodeFloat(DType::bf16, v), 0x3F81u);
  EXPECT_EQ(encodeFloat(DType::bf16, 1.0 + std::ldexp(1.0, -8)), 0x3F80u);
  EXPECT_EQ(decodeFloat(DType::bf16, 0x4049), 3.140625);
}

TEST(ReferenceFloat, Float8Variants) {
  EXPECT_EQ(decodeFloat(DType::f8e4m3fn, 0x7E), 448.0);
  EXPECT_TRUE(std::isnan(decodeFloat(DType::f8e4m3fn, 0x7F)));
  EXPECT_EQ(encodeFloat(DType::f8e4m3fn, 1000.0, /*saturate=*/true), 0x7Eu);
  EXPECT_TRUE(std::isnan(decodeFloat(DType::f8e4m3fn, encodeFloat(DType::f8e4m3fn, 1000.0))));
  EXPECT_EQ(encodeFloat(DType::f8e4m3fnuz, -0.0), 0x00u); // no negative zero
  EXPECT_TRUE(std::isnan(decodeFloat(DType::f8e4m3fnuz, 0x80)));
  EXPECT_EQ(decodeFloat(DType::f8e5m2, 0x7C), INFINITY);
  EXPECT_EQ(encodeFloat(DType::f8e5m2, 1e9, /*saturate=*/true), 0x7Bu);
  EXPECT_EQ(decodeFloat(DType::f4e2m1fn, 0x7), 6.0);
  EXPECT_EQ(encodeFloat(DType::f4e2m1fn, 5.0), 0x6u); // 4 and 6 tie: even mantissa
  EXPECT_EQ(encodeFloat(DType::f4e2m1fn, 100.0), 0x7u); // saturates: no inf
}

TEST(ReferenceInt, WrapsAndSignExtends) {
  Tensor x(DType::i8, {1});
  x.setI(0, 200);
  EXPECT_EQ(x.getI(0), -56);
  Tensor u(DType::u4, {1});
  u.setI(0, 17);
  EXPECT_EQ(u.getI(0), 1);
  Tensor s(DType::i4, {1});
  s.setI(0, 9);
  EXPECT_EQ(s.getI(0), -7);
  Tensor big(DType::u64, {1});
  big.setI(0, -1);
  EXPECT_EQ(big.getF(0), 18446744073709551615.0);
}

TEST(ReferenceElementwise, IntegerDivisionTruncatesModFollowsDivisor) {
  Tensor a = ivec(DType::i32, {-7, 7, -7}), b = ivec(DType::i32, {2, -2, -2});
  Tensor div = *binary(BinaryFn::Div, a, b), rem = *binary(BinaryFn::Rem, a, b),
         mod = *binary(BinaryFn::Mod, a, b);
  EXPECT_EQ(div.getI(0), -3);
  EXPECT_EQ(rem.getI(0), -1);
  EXPECT_EQ(mod.getI(0), 1);
  EXPECT_EQ(mod.getI(1), -1);
  EXPECT_EQ(mod.getI(2), -1);
  EXPECT_FALSE(binary(BinaryFn::Div, a, ivec(DType::i32, {0})).ok());
  Tensor u = ivec(DType::u8, {200}), v = ivec(DType::u8, {3});
  EXPECT_EQ(binary(BinaryFn::Div, u, v)->getI(0), 66); // unsigned, not -56 / 3
  EXPECT_EQ(binary(BinaryFn::ShiftRight, ivec(DType::i8, {-128}), ivec(DType::i8, {9}))->getI(0), -1);
}

TEST(ReferenceElementwise, NanPropagates) {
  Tensor a = vec(DType::f32, {NAN, 1}), b = vec(DType::f32, {1, NAN});
  Tensor mx = *binary(BinaryFn::Max, a, b);
  EXPECT_TRUE(std::isnan(mx.getF(0)));
  EXPECT_TRUE(std::isnan(mx.getF(1)));
  Tensor ne = *compare(CompareFn::ne, a, a);
  EXPECT_EQ(ne.getI(0), 1);
  Tensor eq = *compare(CompareFn::eq, a, a);
  EXPECT_EQ(eq.getI(0), 0);
}

TEST(ReferenceElementwise, Broadcasts) {
  Tensor a(DType::f32, {2, 1}), b(DType::f32, {3});
  a.setF(0, 1), a.setF(1, 2);
  b.setF(0, 10), b.setF(1, 20), b.setF(2, 30);
  Tensor c = *binary(BinaryFn::Add, a, b);
  ASSERT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(c.getF(5), 32);
  EXPECT_FALSE(binary(BinaryFn::Add, Tensor(DType::f32, {2}), Tensor(DType::f32, {3})).ok());
}

TEST(ReferenceDataMovement, SliceClampsAndWalksBackwards) {
  Tensor x = ivec(DType::i64, {0, 1, 2, 3, 4});
  Tensor r = *slice(x, {-1}, {std::numeric_limits<int64_t>::min()}, {-2});
  ASSERT_EQ(r.shape(), (Shape{3}));
  EXPECT_EQ(r.getI(0), 4);
  EXPECT_EQ(r.getI(2), 0);
  Tensor e = *slice(x, {10}, {20}, {1});
  EXPECT_EQ(e.numel(), 0);
}

TEST(ReferenceDataMovement, GatherChecksIndices) {
  Tensor x = ivec(DType::i64, {5, 6, 7});
  EXPECT_EQ(gather(x, ivec(DType::i64, {-1}), 0)->getI(0), 7);
  absl::StatusOr<Tensor> bad = gather(x, ivec(DType::i64, {3}), 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("out of range"), std::string::npos);
}

TEST(ReferenceDataMovement, PadModes) {
  Tensor x = ivec(DType::i32, {1, 2, 3});
  Tensor zero(DType::i32, {});
  Tensor reflect = *pad(x, {2, 2}, PadMode::reflect, zero);
  std::vector<int64_t> want = {3, 2, 1, 2, 3, 2, 1};
  for (int i = 0; i < 7; ++i)
    EXPECT_EQ(reflect.getI(i), want[i]);
  Tensor wrap = *pad(x, {1, 1}, PadMode::wrap, zero);
  EXPECT_EQ(wrap.getI(0), 3);
  EXPECT_EQ(wrap.getI(4), 1);
  Tensor crop = *pad(x, {-1, 0}, PadMode::constant, zero);
  EXPECT_EQ(crop.numel(), 2);
}

TEST(ReferenceReduction, EmptyReductionsGiveIdentities) {
  Tensor x(DType::f32, {0, 3});
  EXPECT_EQ(reduce(x, ReduceKind::sum, {0}, false).getF(0), 0);
  EXPECT_EQ(reduce(x, ReduceKind::prod, {0}, false).getF(0), 1);
  EXPECT_EQ(reduce(x, ReduceKind::max, {0}, false).getF(0), -INFINITY);
}

TEST(ReferenceReduction, TopKBreaksTiesByIndex) {
  Tensor x = vec(DType::f32, {1, 3, 3, 2});
  auto [values, indices] = *topK(x, 2, 0, /*largest=*/true, /*sorted=*/true);
  EXPECT_EQ(indices.getI(0), 1);
  EXPECT_EQ(indices.getI(1), 2);
}

TEST(ReferenceComposite, MatmulPromotesVectors) {
  Tensor a = vec(DType::f64, {1, 2}), b(DType::f64, {2, 2});
  b.setF(0, 1), b.setF(1, 2), b.setF(2, 3), b.setF(3, 4);
  Tensor r = *matmul(a, b);
  ASSERT_EQ(r.shape(), (Shape{2}));
  EXPECT_EQ(r.getF(0), 7);
  EXPECT_EQ(r.getF(1), 10);
}

TEST(ReferenceComposite, SoftmaxOfInfinities) {
  Tensor x = vec(DType::f32, {-INFINITY, 0});
  Tensor s = softmax(x, 0, false);
  EXPECT_EQ(s.getF(0), 0);
  EXPECT_EQ(s.getF(1), 1);
}

TEST(ReferenceComposite, RmsNormDividesByTheRootMeanSquare) {
  // Rows [3, 4] and [0, 0] over the last dim: 1 / sqrt((9 + 16) / 2 + 0.5) =
  // 1 / sqrt(13), and a row of zeros stays zero; then times [1, 2].
  Tensor x(DType::f64, {2, 2});
  x.setF(0, 3), x.setF(1, 4), x.setF(2, 0), x.setF(3, 0);
  Tensor scale = vec(DType::f64, {1, 2});
  absl::StatusOr<Tensor> y = rmsNorm(x, &scale, -1, 0.5);
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_DOUBLE_EQ(y->getF(0), 3 / std::sqrt(13.0));
  EXPECT_DOUBLE_EQ(y->getF(1), 8 / std::sqrt(13.0));
  EXPECT_EQ(y->getF(2), 0);
  // Without a scale; a scale that does not broadcast is an error.
  EXPECT_DOUBLE_EQ(rmsNorm(x, nullptr, -1, 0.5)->getF(1), 4 / std::sqrt(13.0));
  Tensor wrong = vec(DType::f64, {1, 2, 3});
  EXPECT_FALSE(rmsNorm(x, &wrong, -1, 0.5).ok());
}

TEST(ReferenceComposite, AttentionGroupsQueryHeadsOnKeyHeads) {
  // 4 query heads on 2 key/value heads, one query row, one feature, two keys:
  // query head h reads key/value head h / 2 (repeat_kv's order). Keys 0 and
  // ln 3 (scale 1, query 1): weights 1/4 and 3/4 of the values.
  Tensor q(DType::f64, {1, 4, 1, 1}), k(DType::f64, {1, 2, 2, 1}), v(DType::f64, {1, 2, 2, 1});
  for (int64_t h = 0; h < 4; ++h)
    q.setF(h, 1);
  k.setF(0, 0), k.setF(1, std::log(3.0)), k.setF(2, 0), k.setF(3, std::log(3.0));
  v.setF(0, 4), v.setF(1, 8), v.setF(2, 40), v.setF(3, 80);
  absl::StatusOr<Tensor> y = attention(q, k, v, nullptr, 1.0);
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_DOUBLE_EQ(y->getF(0), 7);
  EXPECT_DOUBLE_EQ(y->getF(1), 7);
  EXPECT_DOUBLE_EQ(y->getF(2), 70);
  EXPECT_DOUBLE_EQ(y->getF(3), 70);
  // A boolean mask: the score where true, -inf where false (key 1 unseen:
  // all the weight on key 0); a row that sees no key is NaN.
  Tensor seen(DType::boolean, {1, 1, 1, 2});
  seen.setI(0, 1), seen.setI(1, 0);
  absl::StatusOr<Tensor> masked = attention(q, k, v, &seen, 1.0);
  ASSERT_TRUE(masked.ok()) << masked.status().message();
  EXPECT_DOUBLE_EQ(masked->getF(0), 4);
  EXPECT_DOUBLE_EQ(masked->getF(3), 40);
  Tensor none(DType::boolean, {1, 1, 1, 2});
  EXPECT_TRUE(std::isnan(attention(q, k, v, &none, 1.0)->getF(0)));
  // Key heads that do not divide the query's, or values with other heads.
  Tensor three(DType::f64, {1, 3, 2, 1});
  EXPECT_FALSE(attention(q, three, three, nullptr, 1.0).ok());
  Tensor one(DType::f64, {1, 1, 2, 1});
  EXPECT_FALSE(attention(q, k, one, nullptr, 1.0).ok());
}

TEST(ReferenceDataMovement, CacheUpdateWritesRowsAtTheOffset) {
  // A [2, 4, 1] cache (batch 2, 4 rows) of 0..7; rows 1..2 of each batch
  // written with 100, 101 and 200, 201; the other rows keep their values.
  Tensor cache(DType::i64, {2, 4, 1});
  for (int64_t i = 0; i < 8; ++i)
    cache.setI(i, i);
  Tensor rows(DType::i64, {2, 2, 1});
  rows.setI(0, 100), rows.setI(1, 101), rows.setI(2, 200), rows.setI(3, 201);
  absl::StatusOr<Tensor> out = cacheUpdate(cache, rows, 1, 1);
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<int64_t> got;
  for (int64_t i = 0; i < 8; ++i)
    got.push_back(out->getI(i));
  EXPECT_EQ(got, (std::vector<int64_t>{0, 100, 101, 3, 4, 200, 201, 7}));
  EXPECT_EQ(cache.getI(1), 1); // the input is not changed
  // Rows that would pass the end, or start before the cache, are errors.
  EXPECT_FALSE(cacheUpdate(cache, rows, 3, 1).ok());
  EXPECT_FALSE(cacheUpdate(cache, rows, -1, 1).ok());
  Tensor otherBatch(DType::i64, {3, 2, 1});
  EXPECT_FALSE(cacheUpdate(cache, otherBatch, 0, 1).ok());
}

namespace {
/// An integer tensor's elements, in order.
std::vector<int64_t> integers(const Tensor &t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i)
    v.push_back(t.getI(i));
  return v;
}

/// A [2, 1, 4, 1] cache (batch 2, a head, 4 rows) of 0..7, and two rows a
/// sequence: 100, 101 and 200, 201.
std::pair<Tensor, Tensor> cacheAndRows() {
  Tensor cache(DType::i64, {2, 1, 4, 1});
  for (int64_t i = 0; i < 8; ++i)
    cache.setI(i, i);
  Tensor rows(DType::i64, {2, 1, 2, 1});
  rows.setI(0, 100), rows.setI(1, 101), rows.setI(2, 200), rows.setI(3, 201);
  return {std::move(cache), std::move(rows)};
}
} // namespace

TEST(ReferenceDataMovement, CacheWriteWritesEachSequenceAtItsPosition) {
  // Sequence 0's two rows written at row 0, sequence 1's at row 2.
  auto [cache, rows] = cacheAndRows();
  Tensor at(DType::i64, {2});
  at.setI(0, 0), at.setI(1, 2);
  absl::StatusOr<Tensor> out = cacheWrite(cache, rows, at, 2, /*zeroTail=*/false);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(integers(*out), (std::vector<int64_t>{100, 101, 2, 3, 4, 5, 200, 201}));
  // zero_tail: sequence 0's rows after its written ones are 0 (sequence 1
  // has none after).
  out = cacheWrite(cache, rows, at, 2, /*zeroTail=*/true);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(integers(*out), (std::vector<int64_t>{100, 101, 0, 0, 4, 5, 200, 201}));
  // A sequence whose rows would leave the cache, a position before it, one
  // position for two sequences, and the batch axis are errors.
  at.setI(1, 3);
  EXPECT_FALSE(cacheWrite(cache, rows, at, 2, false).ok());
  at.setI(1, -1);
  EXPECT_FALSE(cacheWrite(cache, rows, at, 2, false).ok());
  EXPECT_FALSE(cacheWrite(cache, rows, Tensor(DType::i64, {1}), 2, false).ok());
  EXPECT_FALSE(cacheWrite(cache, rows, Tensor(DType::i64, {2}), 0, false).ok());
}

TEST(ReferenceDataMovement, CircularCacheWriteWrapsAroundTheCache) {
  // Sequence 0's two rows from row 3 (the second wraps to row 0), sequence
  // 1's from -1 (row 3, then row 0) and, next, from 4 + 4k (row 0): any
  // position is in the ring.
  auto [cache, rows] = cacheAndRows();
  Tensor at(DType::i64, {2});
  at.setI(0, 3), at.setI(1, -1);
  absl::StatusOr<Tensor> out =
      cacheWrite(cache, rows, at, 2, /*zeroTail=*/false, /*circular=*/true);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(integers(*out), (std::vector<int64_t>{101, 1, 2, 100, 201, 5, 6, 200}));
  at.setI(1, 4 + 4 * 1000000000000LL);
  out = cacheWrite(cache, rows, at, 2, false, true);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(integers(*out), (std::vector<int64_t>{101, 1, 2, 100, 200, 201, 6, 7}));
  // More rows than the ring holds would write a row twice; a circular write
  // has no zero tail.
  Tensor tooMany(DType::i64, {2, 1, 5, 1});
  EXPECT_FALSE(cacheWrite(cache, tooMany, at, 2, false, true).ok());
  EXPECT_FALSE(cacheWrite(cache, rows, at, 2, true, true).ok());
}

TEST(ReferenceSpecial, DeterminantWithPivoting) {
  Tensor m(DType::f64, {2, 2});
  m.setF(0, 0), m.setF(1, 1), m.setF(2, 1), m.setF(3, 0); // needs a row swap
  absl::StatusOr<Tensor> d = det(m);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->getF(0), -1);
}

TEST(ReferenceSpecial, DeterminantOfANonSquareInputIsAnError) {
  // A corrupt artifact can hand the Det step any shape: an error, no read past
  // the input.
  absl::StatusOr<Tensor> d = det(Tensor(DType::f32, {2, 3}));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "det: the input f32[2, 3] is not a stack of square matrices");
  EXPECT_FALSE(det(Tensor(DType::f32, {4})).ok());
}

// Work goes with elements, not dims: an empty tensor with a batch of 2^40 is no
// work for any kernel (matmul looped over such a batch for minutes, issue 32).
// A kernel that still loops over the batch takes hours here, and ctest's
// timeout fails the test.
TEST(ReferenceWork, EmptyTensorsWithHugeDimsAreNoWork) {
  constexpr int64_t kHuge = int64_t(1) << 40;
  Tensor rowsOfNothing(DType::f32, {kHuge, 16, 0}), noRows(DType::f32, {kHuge, 0, 16});
  absl::StatusOr<Tensor> product = matmul(noRows, Tensor(DType::f32, {16, 4}));
  ASSERT_TRUE(product.ok()) << product.status().message();
  EXPECT_EQ(product->shape(), (Shape{kHuge, 0, 4}));
  // N = 0: matrices of M rows and no columns, 2^40 of them.
  product = matmul(Tensor(DType::f32, {kHuge, 2, 0}), Tensor(DType::f32, {0, 0}));
  ASSERT_TRUE(product.ok()) << product.status().message();
  EXPECT_EQ(product->shape(), (Shape{kHuge, 2, 0}));
  EXPECT_EQ(softmax(rowsOfNothing, -1, false).shape(), rowsOfNothing.shape());
  absl::StatusOr<Tensor> normalized =
      layerNorm(rowsOfNothing, Tensor(DType::f32, {0}), nullptr, -1, 1e-5);
  ASSERT_TRUE(normalized.ok()) << normalized.status().message();
  normalized = rmsNorm(rowsOfNothing, nullptr, 1, 1e-5);
  ASSERT_TRUE(normalized.ok()) << normalized.status().message();
  EXPECT_EQ(cumulative(rowsOfNothing, CumulativeKind::sum, 2, false, false).numel(), 0);
  absl::StatusOr<std::pair<Tensor, Tensor>> top = topK(rowsOfNothing, 0, 2, true, true);
  ASSERT_TRUE(top.ok()) << top.status().message();
  absl::StatusOr<Tensor> gathered = gather(rowsOfNothing, ivec(DType::i64, {1, 2}), 1);
  ASSERT_TRUE(gathered.ok()) << gathered.status().message();
  EXPECT_EQ(gathered->shape(), (Shape{kHuge, 2, 0}));
  // Out-of-range indices are an error even where the result is empty.
  EXPECT_FALSE(gather(rowsOfNothing, ivec(DType::i64, {16}), 1).ok());
  ConvParams p;
  p.strides = {1}, p.dilations = {1}, p.pads = {0, 0};
  absl::StatusOr<Tensor> convolved =
      conv(Tensor(DType::f32, {kHuge, 0, 8}), Tensor(DType::f32, {0, 0, 1}), nullptr, p);
  ASSERT_TRUE(convolved.ok()) << convolved.status().message();
  EXPECT_EQ(convolved->shape(), (Shape{kHuge, 0, 8}));
}
