//===- QuantizeWeights.cpp - constant matmul weights to 4 or 8 bits -------===//
//
// kiln-compile --weights int4|int8: every kiln.matmul whose right operand is a
// constant float matrix becomes a kiln.matmul_nbits over that matrix
// quantized per column in blocks of `group-size` along K, round to nearest:
// each block's range (widened to hold 0, so a zero weight stays exact) over
// the 2^bits codes, a scale and a zero point a block. The result is what
// onnxruntime's quantizer writes for MatMulNBits (asymmetric, packed zero
// points), and runs the same kernel: the weights are read packed, 2 or 4
// times fewer bytes than fp16 (docs/precision.md has the accuracy cost).
// Runs after the transposes are absorbed (a weight stored [N, K], torch's
// Linear, is read as it is) and before the epilogues are (the kernel has
// none: a matmul with an epilogue already is left alone).
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/MapVector.h"

#include <cmath>
#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_QUANTIZEWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The largest --group-size: a block's codes are bytes of one weight column.
constexpr int64_t kMaxGroupSize = 1 << 16;

/// The weight's values as floats, row-major: f64/f32 through readFloats,
/// f16/bf16 from their bytes.
std::optional<std::vector<float>> weightValues(Value v) {
  Type element = cast<RankedTensorType>(v.getType()).getElementType();
  if (element.isF32() || element.isF64()) {
    std::optional<std::vector<double>> d = readFloats(v);
    if (!d)
      return std::nullopt;
    return std::vector<float>(d->begin(), d->end());
  }
  if (!element.isF16() && !element.isBF16())
    return std::nullopt;
  std::vector<char> storage;
  std::optional<ArrayRef<char>> bytes = constantBytes(v, storage);
  if (!bytes)
    return std::nullopt;
  std::vector<float> out(bytes->size() / 2);
  const llvm::fltSemantics &semantics = cast<FloatType>(element).getFloatSemantics();
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes->data() + 2 * i, 2);
    out[i] = APFloat(semantics, APInt(16, bits)).convertToFloat();
  }
  return out;
}

struct QuantizeWeightsPass : public impl::QuantizeWeightsPassBase<QuantizeWeightsPass> {
  using QuantizeWeightsPassBase::QuantizeWeightsPassBase;

  void runOnOperation() override {
    if (bits != 4 && bits != 8) {
      getOperation().emitError() << "kiln-quantize-weights: bits must be 4 or 8, not " << bits.getValue();
      return signalPassFailure();
    }
    if (groupSize < 16 || groupSize > kMaxGroupSize || !llvm::isPowerOf2_64(groupSize)) {
      getOperation().emitError()
          << "kiln-quantize-weights: group-size must be a power of 2 from 16 to "
          << kMaxGroupSize << ", not " << groupSize.getValue();
      return signalPassFailure();
    }
    // Siblings (one input, one weight type) become one kernel over their
    // columns side by side, each reading its slice of the result: the
    // projections of one input (Q, K and V; gate and up) read it once, as
    // --kiln-merge-sibling-matmuls merges float ones.
    using Key = std::pair<const void *, const void *>;
    llvm::MapVector<Key, SmallVector<Member>> groups;
    getOperation().walk([&](MatmulOp m) {
      if (std::optional<Member> member = candidate(m))
        groups[{m.getLhs().getAsOpaquePointer(), m->getBlock()}].push_back(std::move(*member));
    });
    for (auto &[key, group] : groups)
      quantize(group);
  }

  struct Member {
    MatmulOp op;
    int64_t k = 0, n = 0;
    bool stored = false; ///< [N, K] rather than [K, N]
  };

  std::optional<Member> candidate(MatmulOp m) {
    auto lhs = cast<RankedTensorType>(m.getLhs().getType());
    auto rhs = cast<RankedTensorType>(m.getRhs().getType());
    Type element = rhs.getElementType();
    if (m.getBias() || m.getActivation() != Activation::none || m.getTransposeLhs() ||
        lhs.getRank() < 1 || rhs.getRank() != 2 || !rhs.hasStaticShape() ||
        lhs.getElementType() != element || !isa<FloatType>(element) ||
        !m.getRhs().getDefiningOp<ConstantOp>())
      return std::nullopt;
    Member c;
    c.op = m;
    c.stored = m.getTransposeRhs();
    c.k = rhs.getDimSize(c.stored ? 1 : 0);
    c.n = rhs.getDimSize(c.stored ? 0 : 1);
    if (lhs.isDynamicDim(lhs.getRank() - 1) || lhs.getDimSize(lhs.getRank() - 1) != c.k ||
        c.k == 0 || c.n == 0)
      return std::nullopt;
    // A type weightValues reads (the values are read one group at a time,
    // when quantized: a model's weights are not all held twice in f32).
    if (!element.isF64() && !element.isF32() && !element.isF16() && !element.isBF16())
      return std::nullopt;
    return c;
  }

  void quantize(ArrayRef<Member> group) {
    MatmulOp first = group.front().op;
    auto lhs = cast<RankedTensorType>(first.getLhs().getType());
    Type element = cast<RankedTensorType>(first.getRhs().getType()).getElementType();
    // Column `col` of the group: its member's values and its column there.
    std::vector<std::vector<float>> values;
    for (const Member &m : group) {
      MatmulOp op = m.op;
      std::optional<std::vector<float>> w = weightValues(op.getRhs());
      if (!w)
        return;
      values.push_back(std::move(*w));
    }
    // The scales' type: the weight's, or the narrow type the precision mode
    // will store an f32 model in (chosen here, so that the codes are chosen
    // for the scales the kernel reads, not rounded again after).
    Type scaleType = element;
    if (element.isF32() && (precision == "bf16" || precision == "fp8")) // fp8 stores bf16
      scaleType = BFloat16Type::get(first.getContext());
    else if (element.isF32() && precision == "fp16")
      scaleType = Float16Type::get(first.getContext());
    // fp16 stops at 65504: a group whose widest block needs a larger scale
    // keeps f32 scales (the kernel reads either).
    if (scaleType.isF16() && !element.isF16()) {
      double widest = 0;
      for (const std::vector<float> &v : values) {
        float lo = 0.0f, hi = 0.0f;
        for (float w : v) {
          lo = std::min(lo, w);
          hi = std::max(hi, w);
        }
        widest = std::max(widest, static_cast<double>(hi) - lo);
      }
      if (widest / ((1 << bits) - 1) > 65504.0 / 2)
        scaleType = element;
    }
    const int64_t k = group.front().k;
    std::vector<std::pair<size_t, int64_t>> columns;
    for (size_t i = 0; i < group.size(); ++i)
      for (int64_t c = 0; c < group[i].n; ++c)
        columns.push_back({i, c});
    const int64_t n = static_cast<int64_t>(columns.size());
    // A group longer than K is one block of K's next power of 2: the same
    // numbers, without the padding.
    const int64_t group_ = std::min<int64_t>(groupSize, llvm::PowerOf2Ceil(std::max<int64_t>(k, 16)));
    const int64_t blocks = (k + group_ - 1) / group_;
    const int64_t blob = group_ * bits / 8, top = (1 << bits) - 1;
    const int64_t zpBytes = (blocks * bits + 7) / 8;
    std::vector<uint8_t> packed(static_cast<size_t>(n * blocks * blob), 0);
    std::vector<uint8_t> zeros(static_cast<size_t>(n * zpBytes), 0);
    std::vector<double> scales(static_cast<size_t>(n * blocks));
    for (int64_t col = 0; col < n; ++col) {
      const Member &m = group[columns[col].first];
      const std::vector<float> &v = values[columns[col].first];
      const int64_t c = columns[col].second;
      auto at = [&](int64_t kk) { return v[m.stored ? c * k + kk : kk * m.n + c]; };
      for (int64_t j = 0; j < blocks; ++j) {
        int64_t begin = j * group_, end = std::min(k, begin + group_);
        float lo = 0.0f, hi = 0.0f;
        for (int64_t kk = begin; kk < end; ++kk) {
          lo = std::min(lo, at(kk));
          hi = std::max(hi, at(kk));
        }
        // A block of zeros has scale 1 and codes at its zero point.
        double scale = hi > lo ? (static_cast<double>(hi) - lo) / top : 1.0;
        // The scale as the kernel reads it (the weight's type), rounded up
        // so that the block's extremes stay within the codes.
        if (!scaleType.isF32() && !scaleType.isF64()) {
          APFloat f(scale);
          bool lost;
          f.convert(cast<FloatType>(scaleType).getFloatSemantics(), APFloat::rmTowardPositive,
                    &lost);
          scale = f.convertToDouble();
          if (scale == 0)
            scale = 1.0;
        }
        int64_t zero = std::clamp<int64_t>(std::llround(-lo / scale), 0, top);
        scales[col * blocks + j] = scale;
        zeros[col * zpBytes + j * bits / 8] |= static_cast<uint8_t>(zero << ((j * bits) % 8));
        // The padding past K holds the zero point: it stands for 0 (the
        // kernel never reads it).
        for (int64_t kk = begin; kk < begin + group_; ++kk) {
          int64_t q = kk < end ? std::clamp<int64_t>(std::llround(at(kk) / scale) + zero, 0, top)
                               : zero;
          int64_t bit = (kk - begin) * bits;
          packed[(col * blocks + j) * blob + bit / 8] |= static_cast<uint8_t>(q << (bit % 8));
        }
      }
    }
    OpBuilder b(first);
    Location loc = first.getLoc();
    auto u8 = IntegerType::get(first.getContext(), 8, IntegerType::Unsigned);
    auto bytes = [&](ArrayRef<int64_t> shape, const std::vector<uint8_t> &data) {
      return makeConstantFromBytes(b, loc, RankedTensorType::get(shape, u8), data.size(),
                                   [&](MutableArrayRef<char> out) {
                                     std::memcpy(out.data(), data.data(), data.size());
                                   });
    };
    Value weights = bytes({n, blocks, blob}, packed);
    Value scale = makeConstant(b, loc, RankedTensorType::get({n, blocks}, scaleType), scales);
    Value zero = bytes({n, zpBytes}, zeros);
    // A 1-D input: one row, [K] -> [1, K] and back.
    Value x = first.getLhs();
    if (lhs.getRank() == 1)
      x = ReshapeOp::create(b, loc, x, i64Vector(b, loc, {1, k}));
    Value y = MatmulNBitsOp::create(b, loc, x, weights, scale, zero, /*bias=*/Value(),
                                    bits.getValue(), group_);
    int64_t rank = cast<RankedTensorType>(y.getType()).getRank(), offset = 0;
    for (const Member &m : group) {
      MatmulOp op = m.op;
      // Before the member, which is erased next (a builder at an erased op
      // would insert nowhere).
      OpBuilder b(op);
      Value out = y;
      if (group.size() > 1) {
        SmallVector<int64_t> starts(rank, 0), ends(rank, kSliceToEnd), steps(rank, 1);
        starts.back() = offset;
        ends.back() = offset + m.n;
        out = SliceOp::create(b, loc, ValueRange{y, i64Vector(b, loc, starts), i64Vector(b, loc, ends),
                                                 i64Vector(b, loc, steps)});
      }
      offset += m.n;
      if (lhs.getRank() == 1)
        out = ReshapeOp::create(b, loc, out, i64Vector(b, loc, {m.n}));
      Value old = op.getRhs();
      op.getResult().replaceAllUsesWith(out);
      op.erase();
      eraseDeadWeight(old);
    }
  }
};

} // namespace
} // namespace kiln
