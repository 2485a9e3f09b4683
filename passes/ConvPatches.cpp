//===- ConvPatches.cpp - a convolution as a matmul of its input's patches -===//

#include "passes/ConvPatches.h"

#include "passes/ConstantValues.h"

using namespace mlir;

namespace kiln {

std::string ConvPatchBuilder::refusal(ConvOp conv) {
  auto x = dyn_cast<RankedTensorType>(conv.getInput().getType());
  auto w = dyn_cast<RankedTensorType>(conv.getFilter().getType());
  auto y = dyn_cast<RankedTensorType>(conv.getType());
  if (!x || !w || !y || x.getRank() != 4)
    return "only 2-D convolutions run as a matmul over their patches";
  if (conv.getGroup() != 1)
    return "a grouped convolution is no one matmul over its patches";
  if (conv.getChannelsLast())
    return "the conv is channels last already";
  if (!w.hasStaticShape())
    return "its filter's size is not known";
  for (int64_t d : {1, 2, 3})
    if (x.isDynamicDim(d) || y.isDynamicDim(d))
      return "its channels or spatial dims are not known numbers (the patch rows' shape is "
             "static but for the batch)";
  for (int64_t d : {1, 2, 3})
    if (x.getDimSize(d) == 0 || y.getDimSize(d) == 0 || w.getDimSize(d) == 0 || w.getDimSize(0) == 0)
      return "it has an empty dim";
  return "";
}

int64_t ConvPatchBuilder::taps() const {
  auto w = cast<RankedTensorType>(conv.getFilter().getType());
  return w.getDimSize(1) * w.getDimSize(2) * w.getDimSize(3);
}

int64_t ConvPatchBuilder::outputChannels() const {
  return cast<RankedTensorType>(conv.getFilter().getType()).getDimSize(0);
}

Value ConvPatchBuilder::patches(Value x, int64_t kMultiple) {
  auto wType = cast<RankedTensorType>(conv.getFilter().getType());
  auto yType = cast<RankedTensorType>(conv.getType());
  int64_t kh = wType.getDimSize(2), kw = wType.getDimSize(3);
  int64_t oh = yType.getDimSize(2), ow = yType.getDimSize(3);
  ArrayRef<int64_t> pads = conv.getPads(), strides = conv.getStrides(),
                    dilations = conv.getDilations();
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  auto zero = [&]() -> Value {
    auto scalarType = RankedTensorType::get({}, element);
    return ConstantOp::create(
        b, loc, cast<ElementsAttr>(DenseElementsAttr::get(scalarType, b.getZeroAttr(element))));
  };
  auto constantMode = b.getNamedAttr("mode", PadModeAttr::get(b.getContext(), PadMode::constant));
  // [N, H, W, C]: a tap's window is then a strided slice whose rows hold
  // its C channels contiguously, and the taps concatenate along C.
  Value last = transposed(x, {0, 2, 3, 1});
  if (last && llvm::any_of(pads, [](int64_t p) { return p != 0; }))
    last = make(PadOp::getOperationName(),
                {last, i64Vector(b, loc, {0, pads[0], pads[1], 0, 0, pads[2], pads[3], 0}), zero()},
                {constantMode});
  if (!last)
    return {};
  SmallVector<Value> windows;
  for (int64_t r = 0; r < kh; ++r)
    for (int64_t s = 0; s < kw; ++s) {
      int64_t top = r * dilations[0], left = s * dilations[1];
      windows.push_back(make(
          SliceOp::getOperationName(),
          {last, i64Vector(b, loc, {0, top, left, 0}),
           i64Vector(b, loc,
                     {kSliceToEnd, top + (oh - 1) * strides[0] + 1,
                      left + (ow - 1) * strides[1] + 1, kSliceToEnd}),
           i64Vector(b, loc, {1, strides[0], strides[1], 1})}));
    }
  Value joined = windows.size() == 1
                     ? windows.front()
                     : make(ConcatOp::getOperationName(), windows,
                            {b.getNamedAttr("axis", b.getI64IntegerAttr(3))});
  int64_t k = taps(), padded = paddedTaps(kMultiple);
  Value rows = make(ReshapeOp::getOperationName(), {joined, i64Vector(b, loc, {-1, k})});
  if (rows && padded != k)
    rows = make(PadOp::getOperationName(),
                {rows, i64Vector(b, loc, {0, 0, 0, padded - k}), zero()}, {constantMode});
  return rows;
}

std::vector<double> ConvPatchBuilder::filterRows(ArrayRef<double> filter,
                                                 int64_t paddedTaps) const {
  auto w = cast<RankedTensorType>(conv.getFilter().getType());
  int64_t m = w.getDimSize(0), c = w.getDimSize(1), kh = w.getDimSize(2), kw = w.getDimSize(3);
  std::vector<double> rows(static_cast<size_t>(m * paddedTaps), 0.0);
  for (int64_t o = 0; o < m; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t r = 0; r < kh; ++r)
        for (int64_t s = 0; s < kw; ++s)
          rows[static_cast<size_t>(o * paddedTaps + (r * kw + s) * c + ci)] =
              filter[static_cast<size_t>(((o * c + ci) * kh + r) * kw + s)];
  return rows;
}

Value ConvPatchBuilder::asConvResult(Value product) {
  auto y = cast<RankedTensorType>(conv.getType());
  Value spatial =
      product ? make(ReshapeOp::getOperationName(),
                     {product, i64Vector(b, loc,
                                         {-1, y.getDimSize(2), y.getDimSize(3), y.getDimSize(1)})})
              : Value();
  return spatial ? transposed(spatial, {0, 3, 1, 2}) : Value();
}

} // namespace kiln
