//===- SpecialOps.cpp - grid_sample, roi_align, nms, unique, det, col2im --===//

#include "ir/Kiln/KernelTypes.h"
#include "ir/Kiln/KilnDialect.h"

using namespace mlir;

namespace kiln {

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A 1-element (or 0-d) operand such as a threshold.
LogicalResult checkScalarLike(std::optional<Location> location, StringRef name, Value v,
                              StringRef what) {
  RankedTensorType type = tensorType(v);
  if (type.getRank() > 1 || (type.getRank() == 1 && type.getDimSize(0) != 1))
    return emitShapeError(location, name, what + " must hold exactly one value");
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// grid_sample
//===----------------------------------------------------------------------===//

LogicalResult GridSampleOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                             Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType input = tensorType(adaptor.getInput()), grid = tensorType(adaptor.getGrid());
  int64_t rank = input.getRank();
  if (rank < 3)
    return emitShapeError(location, name, "input must have rank >= 3 ([N, C, spatial...])");
  if (grid.getRank() != rank)
    return emitShapeError(location, name,
                          "grid must have the input's rank " + Twine(rank) + ", got " +
                              Twine(grid.getRank()));
  if (!grid.isDynamicDim(rank - 1) && grid.getDimSize(rank - 1) != rank - 2)
    return emitShapeError(location, name,
                          "grid's last dim must be the spatial rank " + Twine(rank - 2) +
                              ", got " + Twine(grid.getDimSize(rank - 1)));
  SymShape in = getSymShape(input), g = getSymShape(grid);
  FailureOr<DimExpr> batch = unifyDims(location, name, in[0], g[0], "batch dim of grid");
  if (failed(batch))
    return failure();
  SymShape dims = {*batch, in[1]};
  dims.append(g.begin() + 1, g.end() - 1);
  inferred.push_back(makeTensorType(dims, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// roi_align
//===----------------------------------------------------------------------===//

LogicalResult RoiAlignOp::inferReturnTypes(MLIRContext *context,
                                           std::optional<Location> location, Adaptor adaptor,
                                           InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType input = tensorType(adaptor.getInput()), rois = tensorType(adaptor.getRois()),
                   batch = tensorType(adaptor.getBatchIndices());
  if (input.getRank() != 4)
    return emitShapeError(location, name, "input must be [N, C, H, W]");
  if (rois.getRank() != 2 || (!rois.isDynamicDim(1) && rois.getDimSize(1) != 4))
    return emitShapeError(location, name, "rois must be [num_rois, 4]");
  if (rois.getElementType() != input.getElementType())
    return emitShapeError(location, name, "rois must have the input's element type");
  if (batch.getRank() != 1)
    return emitShapeError(location, name, "batch_indices must be 1-D");
  if (adaptor.getMode() == PoolKind::lp)
    return emitShapeError(location, name, "mode must be max or avg");
  // I64Attr getters return uint64_t; compare signed.
  int64_t height = adaptor.getOutputHeight(), width = adaptor.getOutputWidth();
  if (height < 1 || width < 1)
    return emitShapeError(location, name, "output_height and output_width must be >= 1");
  if (int64_t(adaptor.getSamplingRatio()) < 0)
    return emitShapeError(location, name, "sampling_ratio must be >= 0");
  FailureOr<DimExpr> count = unifyDims(location, name, getSymShape(rois)[0],
                                       getSymShape(batch)[0], "count of batch_indices");
  if (failed(count))
    return failure();
  inferred.push_back(makeTensorType(
      {*count, getSymShape(input)[1], getConstantDim(context, height),
       getConstantDim(context, width)},
      input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// non_max_suppression
//===----------------------------------------------------------------------===//

LogicalResult NonMaxSuppressionOp::inferReturnTypes(MLIRContext *context,
                                                    std::optional<Location> location,
                                                    Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType boxes = tensorType(adaptor.getBoxes()),
                   scores = tensorType(adaptor.getScores());
  if (boxes.getRank() != 3 || (!boxes.isDynamicDim(2) && boxes.getDimSize(2) != 4))
    return emitShapeError(location, name, "boxes must be [batch, boxes, 4]");
  if (scores.getRank() != 3)
    return emitShapeError(location, name, "scores must be [batch, classes, boxes]");
  SymShape b = getSymShape(boxes), s = getSymShape(scores);
  if (failed(unifyDims(location, name, b[0], s[0], "batch dim of scores")) ||
      failed(unifyDims(location, name, b[1], s[2], "box count of scores")))
    return failure();
  if (failed(checkScalarLike(location, name, adaptor.getMaxOutputBoxesPerClass(),
                             "max_output_boxes_per_class")) ||
      failed(checkScalarLike(location, name, adaptor.getIouThreshold(), "iou_threshold")) ||
      (adaptor.getScoreThreshold() &&
       failed(checkScalarLike(location, name, adaptor.getScoreThreshold(),
                              "score_threshold"))))
    return failure();
  inferred.push_back(
      makeTensorType({DimExpr(), getConstantDim(context, 3)}, IntegerType::get(context, 64)));
  return success();
}

LogicalResult NmsSelectOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> location, Adaptor adaptor,
                                            InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType boxes = tensorType(adaptor.getBoxes()),
                   scores = tensorType(adaptor.getScores()), rank = tensorType(adaptor.getRank());
  if (boxes.getRank() != 3 || (!boxes.isDynamicDim(2) && boxes.getDimSize(2) != 4))
    return emitShapeError(location, name, "boxes must be [batch, boxes, 4]");
  if (scores.getRank() != 3)
    return emitShapeError(location, name, "scores must be [batch, classes, boxes]");
  if (rank.getRank() != 3)
    return emitShapeError(location, name, "rank must be [batch, classes, boxes]");
  SymShape b = getSymShape(boxes), s = getSymShape(scores), r = getSymShape(rank);
  if (failed(unifyDims(location, name, b[0], s[0], "batch dim of scores")) ||
      failed(unifyDims(location, name, b[1], s[2], "box count of scores")))
    return failure();
  for (int d = 0; d < 3; ++d)
    if (failed(unifyDims(location, name, s[d], r[d], "dim of rank")))
      return failure();
  if (failed(checkScalarLike(location, name, adaptor.getMaxOutputBoxesPerClass(),
                             "max_output_boxes_per_class")) ||
      failed(checkScalarLike(location, name, adaptor.getIouThreshold(), "iou_threshold")) ||
      (adaptor.getScoreThreshold() &&
       failed(checkScalarLike(location, name, adaptor.getScoreThreshold(), "score_threshold"))))
    return failure();
  inferred.push_back(makeTensorType(s, IntegerType::get(context, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// unique
//===----------------------------------------------------------------------===//

LogicalResult UniqueOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                         Adaptor adaptor, InferredTypes &inferred) {
  RankedTensorType input = tensorType(adaptor.getInput());
  Type i64 = IntegerType::get(context, 64);
  SymShape in = getSymShape(input);
  SymShape values = {DimExpr()};
  DimExpr inverseLength = productOfDims(context, in);
  if (adaptor.getAxis()) {
    FailureOr<int64_t> axis =
        normalizeAxis(location, getOperationName(), *adaptor.getAxis(), input.getRank());
    if (failed(axis))
      return failure();
    values = in;
    values[*axis] = DimExpr();
    inverseLength = in[*axis];
  }
  inferred.push_back(makeTensorType(values, input.getElementType()));
  inferred.push_back(makeTensorType({DimExpr()}, i64));
  inferred.push_back(makeTensorType({inverseLength}, i64));
  inferred.push_back(makeTensorType({DimExpr()}, i64));
  return success();
}

//===----------------------------------------------------------------------===//
// det
//===----------------------------------------------------------------------===//

LogicalResult DetOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                      Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType input = tensorType(adaptor.getInput());
  int64_t rank = input.getRank();
  if (rank < 2)
    return emitShapeError(location, name, "input must have rank >= 2 ([*, M, M])");
  SymShape dims = getSymShape(input);
  if (failed(unifyDims(location, name, dims[rank - 2], dims[rank - 1],
                       "matrix width (matrices must be square)")))
    return failure();
  dims.resize(rank - 2);
  inferred.push_back(makeTensorType(dims, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// col2im
//===----------------------------------------------------------------------===//

LogicalResult Col2ImOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                         Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType input = tensorType(adaptor.getInput());
  ArrayRef<int64_t> image = adaptor.getImageShape(), block = adaptor.getBlockShape();
  size_t k = image.size();
  if (input.getRank() != 3)
    return emitShapeError(location, name, "input must be [N, C * prod(block_shape), L]");
  if (k == 0)
    return emitShapeError(location, name, "image_shape must have at least one entry");
  if (failed(checkEntries(location, name, image, k, 1, "image_shape")) ||
      failed(checkEntries(location, name, block, k, 1, "block_shape")) ||
      failed(checkEntries(location, name, adaptor.getStrides(), k, 1, "strides")) ||
      failed(checkEntries(location, name, adaptor.getDilations(), k, 1, "dilations")) ||
      failed(checkEntries(location, name, adaptor.getPads(), 2 * k, 0, "pads")))
    return failure();
  int64_t blockSize = 1, positions = 1;
  for (size_t i = 0; i < k; ++i) {
    int64_t padded = image[i] + adaptor.getPads()[i] + adaptor.getPads()[i + k];
    int64_t extent = adaptor.getDilations()[i] * (block[i] - 1) + 1;
    if (padded < extent)
      return emitShapeError(location, name,
                            "block dim " + Twine(i) + " (extent " + Twine(extent) +
                                ") does not fit the padded image (" + Twine(padded) + ")");
    blockSize *= block[i];
    positions *= (padded - extent) / adaptor.getStrides()[i] + 1;
    if (blockSize > (int64_t(1) << 40) || positions > (int64_t(1) << 40))
      return emitShapeError(location, name, "block_shape or image_shape is absurdly large");
  }
  SymShape in = getSymShape(input);
  if (auto l = getConstantDimValue(in[2]); l && *l != positions)
    return emitShapeError(location, name,
                          "input has " + Twine(*l) + " block positions; the image holds " +
                              Twine(positions));
  DimExpr channels;
  if (auto c = getConstantDimValue(in[1])) {
    if (*c % blockSize != 0)
      return emitShapeError(location, name,
                            "input dim 1 (" + Twine(*c) +
                                ") is not a multiple of prod(block_shape) = " +
                                Twine(blockSize));
    channels = getConstantDim(context, *c / blockSize);
  } else {
    channels = floorDivDims(in[1], getConstantDim(context, blockSize));
  }
  SymShape dims = {in[0], channels};
  for (int64_t d : image)
    dims.push_back(getConstantDim(context, d));
  inferred.push_back(makeTensorType(dims, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel facts (KernelFacts.td)
//===----------------------------------------------------------------------===//

// Sampled in double and rounded once, as the reference: float data only.
bool GridSampleOp::isInlinable() { return isa<FloatType>(getType().getElementType()); }
bool RoiAlignOp::isInlinable() { return true; }
// Summed in double, as the reference: float data.
bool Col2ImOp::isInlinable() { return isa<FloatType>(getType().getElementType()); }
// Eliminated in a thread's own array: a known matrix of at most kMaxDetRows.
bool DetOp::isInlinable() {
  std::optional<int64_t> m = getConstantDimValue(getSymShape(getInput().getType()).back());
  return m && *m <= kMaxDetRows;
}
std::string DetOp::kernelRefusal() {
  return "its matrices are of unknown size or larger than 16x16";
}
std::optional<Schedule> NmsSelectOp::rootSchedule() { return Schedule::compaction; }
bool NmsSelectOp::fusesProducers() { return false; }
std::string UniqueOp::kernelRefusal() { return kDataDependentSizeRefusal; }
std::string NonMaxSuppressionOp::kernelRefusal() { return kDataDependentSizeRefusal; }

} // namespace kiln
