//===- Special.cpp - ONNX GridSample, RoiAlign, NMS, Unique, Det, Col2Im --===//
//
// The ONNX ops that map one-to-one onto kiln's irregular ops (ir/Kiln/SpecialOps.td).
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"


using namespace mlir;

namespace kiln::onnx_import {

namespace {
/// A scalar-like operand (a count, a threshold) as one value: a 1-D tensor of
/// unknown length (a graph input of a model compiled with dynamic dims) is
/// reshaped to [1], a guard checking at run time that it holds one value.
FailureOr<Value> oneValue(NodeImporter &n, Value v) {
  auto type = NodeImporter::typeOf(v);
  if (type.getRank() == 0 || (type.getRank() == 1 && !type.isDynamicDim(0)))
    return v;
  if (type.getRank() > 1)
    return v; // the op's shape function says what is wrong
  return reshapeTo(n, v, {getConstantDim(n.context(), 1)});
}

/// The 1-element i64 form of an optional integer input such as a count, or
/// `dflt` when the input is absent.
FailureOr<Value> countInput(NodeImporter &n, size_t i, int64_t dflt) {
  Value v = n.input(i);
  if (!v)
    return n.constI64({dflt});
  return oneValue(n, v);
}
} // namespace

LogicalResult convertGridSample(NodeImporter &n) {
  auto x = n.requiredInput(0), grid = n.requiredInput(1);
  bool oldNames = n.version() < 20;
  auto mode = n.stringAttr("mode", oldNames ? "bilinear" : "linear");
  auto padding = n.stringAttr("padding_mode", "zeros");
  auto alignCorners = n.intAttr("align_corners", 0);
  if (failed(x) || failed(grid) || failed(mode) || failed(padding) || failed(alignCorners))
    return failure();
  // Version 20 renamed bilinear/bicubic to linear/cubic when it went N-d.
  std::optional<ResizeMode> interpolation;
  if (*mode == "nearest")
    interpolation = ResizeMode::nearest;
  else if (*mode == (oldNames ? "bilinear" : "linear"))
    interpolation = ResizeMode::linear;
  else if (*mode == (oldNames ? "bicubic" : "cubic"))
    interpolation = ResizeMode::cubic;
  if (!interpolation)
    return n.error("mode '" + *mode + "' is not a GridSample mode of version " +
                   Twine(n.version()));
  // The padding modes' names are ONNX's (kiln/ops/OpEnums.def).
  std::optional<GridPadding> pad = symbolizeGridPadding(*padding);
  if (!pad)
    return n.error("padding_mode '" + *padding + "' is not zeros, border or reflection");
  if (n.version() < 20 && NodeImporter::typeOf(*x).getRank() != 4)
    return n.error("GridSample before version 20 takes 4-D input only");
  auto r = n.create<GridSampleOp>(
      {*x, *grid}, {n.named("mode", ResizeModeAttr::get(n.context(), *interpolation)),
                    n.named("padding", GridPaddingAttr::get(n.context(), *pad)),
                    n.named("align_corners", n.builder().getBoolAttr(*alignCorners != 0))});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertRoiAlign(NodeImporter &n) {
  auto x = n.requiredInput(0), rois = n.requiredInput(1), batch = n.requiredInput(2);
  auto mode = n.stringAttr("mode", "avg");
  auto height = n.intAttr("output_height", 1), width = n.intAttr("output_width", 1),
       ratio = n.intAttr("sampling_ratio", 0);
  auto scale = n.floatAttr("spatial_scale", 1.0f);
  // Version 10 had no coordinate_transformation_mode and did not shift by half a pixel.
  auto transform =
      n.stringAttr("coordinate_transformation_mode",
                   n.version() < 16 ? "output_half_pixel" : "half_pixel");
  if (failed(x) || failed(rois) || failed(batch) || failed(mode) || failed(height) ||
      failed(width) || failed(ratio) || failed(scale) || failed(transform))
    return failure();
  if (*mode != "avg" && *mode != "max")
    return n.error("mode '" + *mode + "' is not avg or max");
  if (*transform != "half_pixel" && *transform != "output_half_pixel")
    return n.error("coordinate_transformation_mode '" + *transform +
                   "' is not half_pixel or output_half_pixel");
  Value indices = *batch;
  if (!elementTypeOf(indices).isInteger(64)) {
    auto cast = castTo(n, indices, n.builder().getI64Type());
    if (failed(cast))
      return failure();
    indices = *cast;
  }
  auto r = n.create<RoiAlignOp>(
      {*x, *rois, indices},
      {n.named("mode", PoolKindAttr::get(n.context(),
                                         *mode == "max" ? PoolKind::max : PoolKind::avg)),
       n.named("output_height", n.builder().getI64IntegerAttr(*height)),
       n.named("output_width", n.builder().getI64IntegerAttr(*width)),
       n.named("sampling_ratio", n.builder().getI64IntegerAttr(*ratio)),
       n.named("spatial_scale", n.builder().getF32FloatAttr(*scale)),
       n.named("half_pixel", n.builder().getBoolAttr(*transform == "half_pixel"))});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertNonMaxSuppression(NodeImporter &n) {
  auto boxes = n.requiredInput(0), scores = n.requiredInput(1);
  auto centerPointBox = n.intAttr("center_point_box", 0);
  // ONNX's default of 0 boxes per class selects nothing.
  auto maxOutput = countInput(n, 2, 0);
  if (failed(boxes) || failed(scores) || failed(centerPointBox) || failed(maxOutput))
    return failure();
  if (*centerPointBox != 0 && *centerPointBox != 1)
    return n.error("center_point_box must be 0 or 1, got " + Twine(*centerPointBox));
  FailureOr<Value> iou = n.input(3) ? oneValue(n, n.input(3))
                                     : FailureOr<Value>(n.constScalar(n.builder().getF32Type(), 0.0));
  if (failed(iou))
    return failure();
  SmallVector<Value> operands = {*boxes, *scores, *maxOutput, *iou};
  if (Value score = n.input(4)) {
    auto one = oneValue(n, score);
    if (failed(one))
      return failure();
    operands.push_back(*one);
  }
  auto r = n.create<NonMaxSuppressionOp>(
      operands, {n.named("center_point_box", n.builder().getBoolAttr(*centerPointBox == 1))});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertUnique(NodeImporter &n) {
  auto x = n.requiredInput(0);
  auto sorted = n.intAttr("sorted", 1);
  if (failed(x) || failed(sorted))
    return failure();
  SmallVector<NamedAttribute> attrs = {
      n.named("sorted", n.builder().getBoolAttr(*sorted != 0))};
  if (n.hasAttr("axis")) {
    auto axis = n.intAttr("axis");
    if (failed(axis))
      return failure();
    attrs.push_back(n.named("axis", n.builder().getI64IntegerAttr(*axis)));
  }
  auto r = n.createMultiResultOp(UniqueOp::getOperationName(), {*x}, attrs, 4);
  return failed(r) ? failure() : n.setResults(*r);
}

LogicalResult convertDet(NodeImporter &n) {
  auto x = n.requiredInput(0);
  if (failed(x))
    return failure();
  auto r = n.create<DetOp>({*x});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertCol2Im(NodeImporter &n) {
  auto x = n.requiredInput(0);
  auto image = n.constantInts(1, "image_shape"), block = n.constantInts(2, "block_shape");
  if (failed(x) || failed(image) || failed(block))
    return failure();
  size_t k = image->size();
  auto strides = n.intsAttr("strides", SmallVector<int64_t>(k, 1)),
       dilations = n.intsAttr("dilations", SmallVector<int64_t>(k, 1)),
       pads = n.intsAttr("pads", SmallVector<int64_t>(2 * k, 0));
  if (failed(strides) || failed(dilations) || failed(pads))
    return failure();
  OpBuilder &b = n.builder();
  auto r = n.create<Col2ImOp>({*x}, {n.named("image_shape", b.getDenseI64ArrayAttr(*image)),
                                     n.named("block_shape", b.getDenseI64ArrayAttr(*block)),
                                     n.named("strides", b.getDenseI64ArrayAttr(*strides)),
                                     n.named("dilations", b.getDenseI64ArrayAttr(*dilations)),
                                     n.named("pads", b.getDenseI64ArrayAttr(*pads))});
  return failed(r) ? failure() : n.setResults({*r});
}

} // namespace kiln::onnx_import
