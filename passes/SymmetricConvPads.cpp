//===- SymmetricConvPads.cpp - asymmetric conv pads for cuDNN ----------------===//
//
// cuDNN's convolution descriptors take one pad per spatial dim, applied at both
// ends; ONNX pads begin and end apart (auto_pad SAME_UPPER/SAME_LOWER with an
// even window gives one more at one end). Rather than running such convs on
// the host, the part both ends share stays the library call's pad and the rest
// becomes a generated kernel: a zero pad of the input before a Conv, a slice of
// the output after a ConvTranspose (whose pads crop its result).
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_SYMMETRICCONVPADSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Per spatial dim: the pad both ends share and what is left at each end.
struct PadSplit {
  SmallVector<int64_t> shared, extraBegin, extraEnd;
  bool asymmetric = false;
};

PadSplit splitPads(ArrayRef<int64_t> pads, int64_t spatial) {
  PadSplit s;
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t begin = pads.empty() ? 0 : pads[d], end = pads.empty() ? 0 : pads[d + spatial];
    int64_t shared = std::min(begin, end);
    s.shared.push_back(shared);
    s.extraBegin.push_back(begin - shared);
    s.extraEnd.push_back(end - shared);
    s.asymmetric |= begin != end;
  }
  return s;
}

/// The op's attributes with `pads` replaced by the shared, symmetric pads.
SmallVector<NamedAttribute> withSymmetricPads(Operation *op, const PadSplit &split) {
  SmallVector<int64_t> pads(split.shared);
  pads.append(split.shared.begin(), split.shared.end());
  Builder b(op->getContext());
  SmallVector<NamedAttribute> attributes;
  for (NamedAttribute a : op->getAttrs())
    attributes.push_back(a.getName() == "pads" ? b.getNamedAttr("pads", b.getDenseI64ArrayAttr(pads))
                                               : a);
  return attributes;
}

/// conv(x, pads = [b, e]) == conv(pad(x, [b - s, e - s]), pads = [s, s]), s = min(b, e).
bool splitConvPads(ConvOp conv) {
  auto input = cast<RankedTensorType>(conv.getInput().getType());
  int64_t rank = input.getRank(), spatial = rank - 2;
  PadSplit split = splitPads(conv.getPads(), spatial);
  // The spatial dims are 2.. channels first; a channels-last conv (an int8
  // one, whose padding kiln-integer-convs made explicit) is left as it is.
  if (!split.asymmetric || conv.getChannelsLast())
    return false;
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  SmallVector<int64_t> pads(2 * rank, 0);
  for (int64_t d = 0; d < spatial; ++d) {
    pads[2 + d] = split.extraBegin[d];
    pads[rank + 2 + d] = split.extraEnd[d];
  }
  auto zeroType = RankedTensorType::get({}, input.getElementType());
  Value zero = ConstantOp::create(b, loc, cast<ElementsAttr>(DenseElementsAttr::get(
                                              zeroType, b.getZeroAttr(input.getElementType()))))
                   .getResult();
  auto padded = PadOp::create(b, loc, conv.getInput(), i64Vector(b, loc, pads), zero,
                              PadModeAttr::get(b.getContext(), PadMode::constant));
  SmallVector<Value> operands(conv->getOperands());
  operands[0] = padded.getResult();
  auto symmetric = ConvOp::create(b, loc, operands, withSymmetricPads(conv, split));
  if (symmetric.getType() != conv.getType()) {
    symmetric.erase();
    padded.erase();
    return false;
  }
  conv.getResult().replaceAllUsesWith(symmetric.getResult());
  conv.erase();
  return true;
}

/// A ConvTranspose's pads crop its full result: with the shared pads s it
/// keeps [s, full - s), so the asymmetric result [b, full - e) is a slice of
/// that from b - s to e - s before its end.
bool splitConvTransposePads(ConvTransposeOp conv) {
  int64_t rank = cast<RankedTensorType>(conv.getInput().getType()).getRank(), spatial = rank - 2;
  PadSplit split = splitPads(conv.getPads(), spatial);
  if (!split.asymmetric)
    return false;
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  auto symmetric =
      ConvTransposeOp::create(b, loc, ValueRange(conv->getOperands()), withSymmetricPads(conv, split));
  SmallVector<int64_t> starts(rank, 0), ends(rank, kSliceToEnd), steps(rank, 1);
  for (int64_t d = 0; d < spatial; ++d) {
    starts[2 + d] = split.extraBegin[d];
    if (split.extraEnd[d] > 0)
      ends[2 + d] = -split.extraEnd[d];
  }
  auto slice = SliceOp::create(b, loc,
                               ValueRange{symmetric.getResult(), i64Vector(b, loc, starts),
                                          i64Vector(b, loc, ends), i64Vector(b, loc, steps)});
  if (slice.getType() != conv.getType()) {
    Operation *constants[] = {slice.getStarts().getDefiningOp(), slice.getEnds().getDefiningOp(),
                              slice.getSteps().getDefiningOp()};
    slice.erase();
    for (Operation *c : constants)
      c->erase();
    symmetric.erase();
    return false;
  }
  conv.getResult().replaceAllUsesWith(slice.getResult());
  conv.erase();
  return true;
}

struct SymmetricConvPadsPass : public impl::SymmetricConvPadsPassBase<SymmetricConvPadsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> convs;
    getOperation().walk([&](Operation *op) {
      if (isa<ConvOp, ConvTransposeOp>(op))
        convs.push_back(op);
    });
    for (Operation *op : convs) {
      if (auto conv = dyn_cast<ConvOp>(op))
        splitConvPads(conv);
      else
        splitConvTransposePads(cast<ConvTransposeOp>(op));
    }
  }
};

} // namespace
} // namespace kiln
