//===- IntegerConvs.cpp - dequantized convolutions as int8 cuDNN calls ----===//
//
// A Q/DQ graph convolves a dequantized 8-bit activation by a dequantized
// 8-bit filter in float:  conv((x - zx) * sx, (w - zw) * sw) + bias.
// With sx one scale, sw one scale or one an output channel and zw 0 (the
// symmetric weights every Q/DQ tool writes by default), that is
//   sx * sw[m] * (conv(x, w) - zx * sum(w[m])) + bias[m]
// if the padding of x holds zx, which is what a dequantized 0 is: x is
// padded with zx explicitly (a pad that fuses into the kernel that quantized
// x) and the conv itself pads nothing. conv(x, w) of int8 operands is
// cuDNN's int8 convolution (INT8_EXT_CONFIG: int32 sums, an f32 result),
// which reads NHWC only: the conv is channels last, the filter stored
// [M, KH, KW, C] at compile time, the activation and the result through
// transposes that fuse into the kernels around it. The correction, the
// scale, the bias and the next QuantizeLinear are elementwise ops that fuse
// into one kernel. uint8 operands become int8 by subtracting 128 from the
// values and the zero point.
//
// Runs first in the graph pipeline, with --kiln-integer-matmuls. What does
// not match (a 1-D or 3-D conv, groups, a filter with zero points, channels
// that are not known multiples of 4, which cuDNN's int8 convolution needs,
// a scale along another axis, a result narrower than f32) stays the float
// conv it was; the function's kiln.float_quantized_ops lists it.
//
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Dequantized.h"
#include "passes/Matching.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_INTEGERCONVSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Input and output channels must be multiples of this (cuDNN's int8
/// convolution).
constexpr int64_t kChannelMultiple = 4;

class Rewriter : public IntegerOpBuilder {
public:
  explicit Rewriter(ConvOp conv) : IntegerOpBuilder(conv) {}

  /// The replacement of `conv`'s result, or null (the conv stays; `why`
  /// says why when a rule refused it).
  Value rewrite(ConvOp conv, const Dequantized &x, const Dequantized &w, std::string &why);

private:
  /// One value a channel as a float constant [M, 1, 1] of `element`.
  Value perChannel(RankedTensorType like, ArrayRef<double> values) {
    auto type = RankedTensorType::get({static_cast<int64_t>(values.size()), 1, 1},
                                      like.getElementType());
    return makeConstant(b, loc, type, values);
  }
};

constexpr int64_t kToLast[] = {0, 2, 3, 1}, kToFirst[] = {0, 3, 1, 2};

Value Rewriter::rewrite(ConvOp conv, const Dequantized &x, const Dequantized &w, std::string &why) {
  auto xType = cast<RankedTensorType>(x.q.getType()), wType = cast<RankedTensorType>(w.q.getType());
  auto resultType = cast<RankedTensorType>(conv.getType());
  int64_t c = xType.getDimSize(1), m = wType.getDimSize(0);
  std::vector<char> storage;
  std::optional<ArrayRef<char>> bytes = constantBytes(w.q, storage);
  std::vector<int64_t> wz = int8Zeros(w, m);
  if (xType.getRank() != 4 || conv.getGroup() != 1)
    why = "only 2-D convolutions of one group map onto cuDNN's int8 convolution";
  else if (!bytes)
    why = "its filter is not a constant";
  else if (llvm::any_of(wz, [](int64_t z) { return z != 0; }))
    why = "its filter has zero points";
  else if (ShapedType::isDynamic(c))
    why = "its input channels are an unknown count";
  else if (m % kChannelMultiple != 0)
    why = "its output channels are not a multiple of 4, which cuDNN's int8 convolution needs";
  // cuDNN sums int8 products in int32: taps * 128 * 128 must fit (the
  // correction is added in float, after).
  else if ((c + kChannelMultiple) * wType.getDimSize(2) * wType.getDimSize(3) * 128 * 128 >=
           (int64_t(1) << 31))
    why = "its windows are so large that int32 sums could overflow";
  else if (!(resultType.getElementType().isF32() || resultType.getElementType().isF64()))
    why = "its result is narrower than f32";
  if (!why.empty())
    return {};
  // The zero points as the int8 operands see them: the filter's is 0 (a
  // uint8 filter centered at 128 is int8 centered at 0).
  int64_t zx = int8Zeros(x, 1).front();
  Type i8 = b.getI8Type();
  Value x8 = asInt8(x);
  // Padding: what a dequantized 0 is, zx, placed explicitly; and input
  // channels up to a multiple of 4 (cuDNN's int8 rule; an RGB stem's 3),
  // which meet zero filter taps.
  ArrayRef<int64_t> pads = conv.getPads();
  SmallVector<int64_t> convPads(pads.begin(), pads.end());
  int64_t channels = (c + kChannelMultiple - 1) / kChannelMultiple * kChannelMultiple;
  // Any padding is explicit: zx where it is not 0, and always so that the
  // conv itself pads nothing (cuDNN pads symmetrically only, and a channels-
  // last conv's asymmetric pads would not be split along the right dims).
  bool padSpatial = llvm::any_of(pads, [](int64_t p) { return p != 0; });
  if (padSpatial || channels != c) {
    SmallVector<int64_t> full = {0, 0, 0, 0, 0, channels - c, 0, 0};
    if (padSpatial) {
      full = {0, 0, pads[0], pads[1], 0, channels - c, pads[2], pads[3]};
      convPads.assign(4, 0);
    }
    x8 = x8 ? make("kiln.pad", {x8, i64Vector(b, loc, full), scalar(i8, zx)},
                   {b.getNamedAttr("mode", PadModeAttr::get(b.getContext(), PadMode::constant))})
            : Value();
  }
  // The filter [M, C, KH, KW] stored [M, KH, KW, C'] as int8 (C' the padded
  // channels, their taps 0), and each output channel's sum.
  int64_t kh = wType.getDimSize(2), kw = wType.getDimSize(3);
  std::vector<double> filterSums(static_cast<size_t>(m), 0);
  auto lastType = RankedTensorType::get({m, kh, kw, channels}, i8);
  Value filter = makeConstantFromBytes(
      b, loc, lastType, static_cast<size_t>(m * kh * kw * channels), [&](MutableArrayRef<char> out) {
        std::fill(out.begin(), out.end(), 0);
        for (int64_t o = 0; o < m; ++o)
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t r = 0; r < kh; ++r)
              for (int64_t s = 0; s < kw; ++s) {
                auto byte = static_cast<uint8_t>(
                    (*bytes)[static_cast<size_t>(((o * c + ci) * kh + r) * kw + s)]);
                int64_t value = w.isUnsigned ? int64_t(byte) - 128 : int64_t(int8_t(byte));
                out[static_cast<size_t>(((o * kh + r) * kw + s) * channels + ci)] =
                    static_cast<char>(static_cast<int8_t>(value));
                filterSums[static_cast<size_t>(o)] += static_cast<double>(value);
              }
      });
  Value input = transposed(x8, kToLast);
  Value sums = input ? make("kiln.conv", {input, filter},
                            {b.getNamedAttr("strides", conv.getStridesAttr()),
                             b.getNamedAttr("dilations", conv.getDilationsAttr()),
                             b.getNamedAttr("pads", b.getDenseI64ArrayAttr(convPads)),
                             b.getNamedAttr("group", b.getI64IntegerAttr(1)),
                             b.getNamedAttr("channels_last", b.getBoolAttr(true)),
                             b.getNamedAttr("operandSegmentSizes",
                                            b.getDenseI32ArrayAttr({1, 1, 0, 0}))})
                     : Value();
  Value first = transposed(sums, kToFirst);
  if (!first)
    return {};
  Value real = resultType.getElementType().isF32() ? first : castTo(first, resultType.getElementType());
  // - zx * sum(w[m]), then sx * sw[m], then the bias.
  std::vector<double> correction, scales;
  for (int64_t o = 0; o < m; ++o) {
    correction.push_back(-static_cast<double>(zx) * filterSums[static_cast<size_t>(o)]);
    scales.push_back(x.scale[0] * at(w.scale, o));
  }
  Value y = real;
  if (zx != 0)
    y = y ? make("kiln.add", {y, perChannel(resultType, correction)}) : Value();
  y = y ? make("kiln.mul", {y, perChannel(resultType, scales)}) : Value();
  if (Value bias = conv.getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    Value shaped = make("kiln.reshape", {bias, i64Vector(b, loc, {biasType.getDimSize(0), 1, 1})});
    y = y && shaped ? make("kiln.add", {y, shaped}) : Value();
  }
  return y && y.getType() == resultType ? y : Value();
}

struct IntegerConvsPass : public impl::IntegerConvsPassBase<IntegerConvsPass> {
  void runOnOperation() override {
    // Dequantized convs that stay float, and why (beside the matmuls').
    SmallVector<Attribute> keptFloat;
    if (auto kept = getOperation()->getAttrOfType<ArrayAttr>(kFloatQuantizedOpsAttr))
      keptFloat.append(kept.begin(), kept.end());
    size_t before = keptFloat.size();
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp c) { convs.push_back(c); });
    for (ConvOp c : convs) {
      if (c.getResidual() || c.getChannelsLast() || c.getActivation() != Activation::none ||
          c.isInt8Conv())
        continue;
      std::optional<Dequantized> x = dequantized(c.getInput(), /*axis=*/-1);
      std::optional<Dequantized> w = dequantized(c.getFilter(), /*axis=*/0);
      if (!x || !w)
        continue;
      Value input = c.getInput(), filter = c.getFilter();
      std::string why;
      Value replacement = Rewriter(c).rewrite(c, *x, *w, why);
      if (!replacement) {
        recordKeptFloat(c, why, keptFloat);
        continue;
      }
      c.getResult().replaceAllUsesWith(replacement);
      c->erase();
      eraseUnreadProducers(input);
      eraseUnreadProducers(filter);
    }
    if (keptFloat.size() != before)
      getOperation()->setAttr(kFloatQuantizedOpsAttr, ArrayAttr::get(&getContext(), keptFloat));
  }
};

} // namespace
} // namespace kiln
