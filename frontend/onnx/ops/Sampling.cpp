//===- Sampling.cpp - ONNX AffineGrid and MaxUnpool -----------------------===//
//
// AffineGrid is the constant grid of normalized output coordinates times each
// batch's transposed affine matrix (one batched matmul). MaxUnpool scatters the
// pooled values to the flat positions MaxPool's Indices recorded, into zeros.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

using namespace mlir;

namespace kiln::onnx_import {

LogicalResult convertAffineGrid(NodeImporter &n) {
  auto theta = n.requiredInput(0);
  auto size = n.constantInts(1, "size");
  auto alignCorners = n.intAttr("align_corners", 0);
  if (failed(theta) || failed(size) || failed(alignCorners))
    return failure();
  RankedTensorType thetaType = NodeImporter::typeOf(*theta);
  int64_t spatial = static_cast<int64_t>(size->size()) - 2;
  if (spatial != 2 && spatial != 3)
    return n.error("size must be [N, C, H, W] or [N, C, D, H, W]");
  if (thetaType.getRank() != 3)
    return n.error("theta must be [N, " + Twine(spatial) + ", " + Twine(spatial + 1) + "]");
  int64_t points = 1;
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t s = (*size)[2 + d];
    if (s < 1 || s > (int64_t(1) << 24))
      return n.error("size entry " + Twine(2 + d) + " is " + Twine(s));
    points *= s;
  }
  if (points > (int64_t(1) << 24))
    return n.error("the grid has more than 2^24 points");
  // Homogeneous coordinates of every output point, innermost dim first: (x, y[, z], 1).
  auto coordinate = [&](int64_t i, int64_t length) {
    if (*alignCorners)
      return length == 1 ? 0.0 : -1.0 + 2.0 * i / (length - 1);
    return (2.0 * i + 1.0) / length - 1.0;
  };
  SmallVector<double> base;
  base.reserve(points * (spatial + 1));
  SmallVector<int64_t> index(spatial, 0);
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    for (int64_t d = spatial - 1; d >= 0; --d) {
      index[d] = rest % (*size)[2 + d];
      rest /= (*size)[2 + d];
    }
    for (int64_t d = spatial - 1; d >= 0; --d)
      base.push_back(coordinate(index[d], (*size)[2 + d]));
    base.push_back(1.0);
  }
  OpBuilder &b = n.builder();
  auto baseType = RankedTensorType::get({points, spatial + 1}, b.getF64Type());
  Value grid = ConstantOp::create(b, n.loc(), DenseElementsAttr::get(baseType, ArrayRef<double>(base)));
  Chain c(n);
  Type element = elementTypeOf(*theta);
  if (!element.isF64())
    grid = c(castTo(n, grid, element));
  // [points, s+1] @ [N, s+1, s] -> [N, points, s] -> [N, D.., s]
  Value out = c.matmul(grid, c.transpose(*theta, {0, 2, 1}));
  SmallVector<DimExpr> dims = {getSymShape(thetaType)[0]};
  for (int64_t d = 0; d < spatial; ++d)
    dims.push_back(getConstantDim(n.context(), (*size)[2 + d]));
  dims.push_back(getConstantDim(n.context(), spatial));
  return c.done({c.reshape(out, dims)});
}

LogicalResult convertMaxUnpool(NodeImporter &n) {
  auto x = n.requiredInput(0), indices = n.requiredInput(1);
  if (failed(x) || failed(indices))
    return failure();
  RankedTensorType type = NodeImporter::typeOf(*x);
  int64_t k = type.getRank() - 2;
  if (k < 1)
    return n.error("X must be [N, C, spatial...]");
  // Indices address the shape the pooling came from, inferred from the window
  // attributes; output_shape, when given, pads that with zeros at the end.
  auto kernel = n.intsAttr("kernel_shape");
  auto strides = n.intsAttr("strides", SmallVector<int64_t>(k, 1));
  auto pads = n.intsAttr("pads", SmallVector<int64_t>(2 * k, 0));
  if (failed(kernel) || failed(strides) || failed(pads))
    return failure();
  if (static_cast<int64_t>(kernel->size()) != k || static_cast<int64_t>(strides->size()) != k ||
      static_cast<int64_t>(pads->size()) != 2 * k)
    return n.error("kernel_shape, strides and pads must match the spatial rank " + Twine(k));
  SymShape in = getSymShape(type);
  SmallVector<DimExpr> inferred = {in[0], in[1]};
  {
    MLIRContext *ctx = n.context();
    for (int64_t d = 0; d < k; ++d)
      inferred.push_back(addDims(mulDims(subDims(in[2 + d], getConstantDim(ctx, 1)),
                                         getConstantDim(ctx, (*strides)[d])),
                                 getConstantDim(ctx, (*kernel)[d] - (*pads)[d] - (*pads)[d + k])));
  }
  SmallVector<int64_t> padEnd;
  if (n.input(2)) {
    auto shape = n.constantInts(2, "output_shape");
    if (failed(shape))
      return failure();
    if (static_cast<int64_t>(shape->size()) != type.getRank())
      return n.error("output_shape must have one entry per dim of X");
    for (auto [d, size] : llvm::enumerate(*shape)) {
      std::optional<int64_t> have = getConstantDimValue(inferred[d]);
      if (!have)
        return n.unsupported("output_shape with dynamic input dims");
      if (size < *have)
        return n.error("output_shape entry " + Twine(d) + " (" + Twine(size) +
                       ") is smaller than the unpooled size " + Twine(*have));
      padEnd.push_back(size - *have);
    }
  }
  Chain c(n);
  MLIRContext *ctx = n.context();
  DimExpr total = productOfDims(ctx, inferred);
  Value zeros = c(n.create<BroadcastToOp>({c.k(*x, 0), shapeConstant(n, {total})}));
  DimExpr count = productOfDims(ctx, getSymShape(type));
  Value flatIndices = c.reshape(*indices, {count, getConstantDim(ctx, 1)});
  Value flatValues = c.reshape(*x, {count});
  Value scattered = c(n.create<ScatterNDOp>(
      {zeros, flatIndices, flatValues},
      {n.named("reduction", ScatterReductionAttr::get(ctx, ScatterReduction::none))}));
  Value unpooled = c.reshape(scattered, inferred);
  if (padEnd.empty() || llvm::all_of(padEnd, [](int64_t p) { return p == 0; }))
    return c.done({unpooled});
  SmallVector<int64_t> allPads(type.getRank(), 0);
  allPads.append(padEnd.begin(), padEnd.end());
  return c.done({c(n.create<PadOp>({unpooled, n.constI64(allPads), c.k(*x, 0)},
                                   {n.named("mode", PadModeAttr::get(ctx, PadMode::constant))}))});
}

} // namespace kiln::onnx_import
