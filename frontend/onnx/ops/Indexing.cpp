//===- Indexing.cpp - ONNX gather/scatter, top-k, cumulative, resize, trilu ---===//

#include "frontend/onnx/ops/Converters.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;

namespace kiln::onnx_import {

namespace {
FailureOr<Value> x0(NodeImporter &n) { return n.requiredInput(0); }
NamedAttribute axisAttr(NodeImporter &n, int64_t axis) {
  return n.named("axis", n.builder().getI64IntegerAttr(axis));
}
} // namespace

LogicalResult convertGatherElements(NodeImporter &n) {
  auto data = x0(n), indices = n.requiredInput(1);
  auto axis = n.intAttr("axis", 0);
  if (failed(data) || failed(indices) || failed(axis))
    return failure();
  auto r = n.create<GatherElementsOp>({*data, *indices}, {axisAttr(n, *axis)});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertScatterElements(NodeImporter &n) {
  auto data = x0(n), indices = n.requiredInput(1), updates = n.requiredInput(2);
  auto axis = n.intAttr("axis", 0);
  auto reduction = scatterReduction(n);
  if (failed(data) || failed(indices) || failed(updates) || failed(axis) || failed(reduction))
    return failure();
  auto r = n.create<ScatterElementsOp>(
      {*data, *indices, *updates},
      {axisAttr(n, *axis),
       n.named("reduction", ScatterReductionAttr::get(n.context(), *reduction))});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertTopK(NodeImporter &n) {
  auto x = x0(n);
  auto axis = n.intAttr("axis", -1), largest = n.intAttr("largest", 1),
       sorted = n.intAttr("sorted", 1);
  if (failed(x) || failed(axis) || failed(largest) || failed(sorted))
    return failure();
  Value k;
  if (n.version() < 10) {
    auto kAttr = n.intAttr("k");
    if (failed(kAttr))
      return failure();
    k = n.constI64({*kAttr});
  } else {
    auto kInput = n.requiredInput(1);
    if (failed(kInput))
      return failure();
    k = *kInput;
    if (auto known = n.maybeConstantInts(k))
      k = n.constI64(*known);
  }
  auto r = n.createMultiResultOp(TopKOp::getOperationName(), {*x, k},
                                 {axisAttr(n, *axis),
                                  n.named("largest", n.builder().getBoolAttr(*largest)),
                                  n.named("sorted", n.builder().getBoolAttr(*sorted))},
                                 2);
  return failed(r) ? failure() : n.setResults(*r);
}

namespace {
LogicalResult convertCumulative(NodeImporter &n, CumulativeKind kind) {
  auto x = x0(n);
  auto exclusive = n.intAttr("exclusive", 0), reverse = n.intAttr("reverse", 0);
  if (failed(x) || failed(exclusive) || failed(reverse))
    return failure();
  auto axis = n.constantInts(1, "axis");
  if (failed(axis))
    return failure();
  if (axis->size() != 1)
    return n.error("axis must hold exactly one value");
  auto r = n.create<CumulativeOp>(
      {*x}, {n.named("kind", CumulativeKindAttr::get(n.context(), kind)),
             axisAttr(n, (*axis)[0]),
             n.named("exclusive", n.builder().getBoolAttr(*exclusive)),
             n.named("reverse", n.builder().getBoolAttr(*reverse))});
  return failed(r) ? failure() : n.setResults({*r});
}
} // namespace

LogicalResult convertCumSum(NodeImporter &n) { return convertCumulative(n, CumulativeKind::sum); }
LogicalResult convertCumProd(NodeImporter &n) {
  return convertCumulative(n, CumulativeKind::prod);
}

LogicalResult convertTrilu(NodeImporter &n) {
  auto x = x0(n);
  auto upper = n.intAttr("upper", 1);
  if (failed(x) || failed(upper))
    return failure();
  SymShape dims = getSymShape(x->getType());
  int64_t rank = dims.size();
  if (rank < 2)
    return n.error("input must have rank >= 2");
  // k: a constant, or a value computed at run time (a sliding window from
  // the past length): it is only compared with, so either is one scalar.
  Value k = n.constI64({0}, true);
  if (Value kIn = n.input(1)) {
    auto kType = NodeImporter::typeOf(kIn);
    if (!kType.getElementType().isInteger(64) || !kType.hasStaticShape() ||
        kType.getNumElements() != 1)
      return n.error("k must hold exactly one int64 value");
    auto scalar = reshapeTo(n, kIn, {});
    if (failed(scalar))
      return failure();
    k = *scalar;
  }
  DimExpr rows = dims[rank - 2], cols = dims[rank - 1];
  if (!rows || !cols)
    return n.unsupported("Trilu over matrix dims of unknown size");
  // keep where (col - row) >= k (upper) or <= k (lower), on an iota grid.
  auto iota = [&](DimExpr size) -> FailureOr<Value> {
    Value limit = SymbolicConstantOp::create(n.builder(), 
        n.loc(), RankedTensorType::get({}, n.builder().getI64Type()),
        DimsAttr::getCanonical(n.context(), {size}));
    return n.create<RangeOp>({n.constI64({0}, true), limit, n.constI64({1}, true)});
  };
  MLIRContext *ctx = n.context();
  auto r = iota(rows), c = iota(cols);
  if (failed(r) || failed(c))
    return failure();
  auto rowCol = reshapeTo(n, *r, {rows, getConstantDim(ctx, 1)});
  auto diff = failed(rowCol) ? rowCol : binary<SubOp>(n, *c, *rowCol);
  auto keep = failed(diff) ? diff
                           : compare(n, *upper ? CompareDirection::ge : CompareDirection::le,
                                     *diff, k);
  auto out = failed(keep) ? keep : select(n, *keep, *x, scalarLike(n, *x, 0));
  return failed(out) ? failure() : n.setResults({*out});
}

LogicalResult convertResize(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  std::string modeName = "nearest", ctmName = "half_pixel", nearestName = "round_prefer_floor",
              policy = "stretch";
  auto modeAttr = n.stringAttr("mode", modeName);
  if (failed(modeAttr))
    return failure();
  modeName = *modeAttr;
  float cubicA = -0.75f, extrapolation = 0.0f;
  int64_t excludeOutside = 0, antialias = 0;
  SmallVector<int64_t> axes;
  if (n.version() < 11) {
    // Resize-10 is Upsample's semantics: asymmetric coordinates, nearest rounds down.
    ctmName = "asymmetric";
    nearestName = "floor";
  } else {
    auto ctm = n.stringAttr("coordinate_transformation_mode", ctmName);
    auto nearest = n.stringAttr("nearest_mode", nearestName);
    auto a = n.floatAttr("cubic_coeff_a", cubicA);
    auto exclude = n.intAttr("exclude_outside", 0);
    auto extra = n.floatAttr("extrapolation_value", 0.0f);
    auto anti = n.intAttr("antialias", 0);
    auto pol = n.stringAttr("keep_aspect_ratio_policy", policy);
    auto ax = n.intsAttr("axes", SmallVector<int64_t>{});
    if (failed(ctm) || failed(nearest) || failed(a) || failed(exclude) || failed(extra) ||
        failed(anti) || failed(pol) || failed(ax))
      return failure();
    ctmName = *ctm;
    nearestName = *nearest;
    cubicA = *a;
    excludeOutside = *exclude;
    extrapolation = *extra;
    antialias = *anti;
    policy = *pol;
    axes = *ax;
  }
  // The modes' names are ONNX's (kiln/ops/OpEnums.def).
  std::optional<ResizeMode> mode = symbolizeResizeMode(modeName);
  std::optional<CoordinateMode> ctm = symbolizeCoordinateMode(ctmName);
  std::optional<NearestMode> nearest = symbolizeNearestMode(nearestName);
  if (!mode || !ctm || !nearest)
    return n.error("mode '" + modeName + "', coordinate_transformation_mode '" + ctmName +
                   "' or nearest_mode '" + nearestName + "' is not an ONNX Resize mode");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return n.error("keep_aspect_ratio_policy '" + policy + "' is not stretch, not_larger or "
                                                          "not_smaller");

  SymShape dims = getSymShape(x->getType());
  int64_t rank = dims.size();
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  auto normalized = normalizeAxes(n, axes, rank);
  if (failed(normalized))
    return failure();
  auto floatsOf = [&](size_t i) -> std::optional<SmallVector<float>> {
    auto values = n.maybeConstantFloats(n.input(i));
    if (!values)
      return std::nullopt;
    return SmallVector<float>(values->begin(), values->end());
  };
  size_t scalesIndex = n.version() < 11 ? 1 : 2, sizesIndex = 3;
  SmallVector<float> scales(rank, 1.0f), roi;
  SymShape out(dims.begin(), dims.end());
  MLIRContext *ctx = n.context();
  Value sizesInput = n.version() >= 11 ? n.input(sizesIndex) : Value();
  if (n.version() >= 11 && n.input(1)) {
    auto r = floatsOf(1);
    if (!r)
      return n.unsupported("a roi that is not a compile-time constant");
    if (!r->empty()) {
      if ((int64_t)r->size() != 2 * (int64_t)normalized->size())
        return n.error("roi must have 2 entries per resized axis");
      roi.assign(rank, 0.0f);
      roi.append(rank, 1.0f);
      for (auto [i, a] : llvm::enumerate(*normalized)) {
        roi[a] = (*r)[i];
        roi[rank + a] = (*r)[normalized->size() + i];
      }
    }
  }
  // Sizes that are data (read from a tensor), full rank: the result's dims
  // are decided when the call runs (a symbol each that the step binds, or a
  // read of the sizes on the device, kiln-sizes-on-device).
  Value dataSizes;
  if (sizesInput && !n.maybeConstantInts(sizesInput)) {
    // Sizes computed from shapes (Shape, Gather, Concat, arithmetic: an
    // upsample back to another tensor's H and W) are dims, not data: the
    // result has those dims, and the scales are size / input at run time.
    std::optional<SymShape> known = getKnownElements(sizesInput);
    auto sizesType = NodeImporter::typeOf(sizesInput);
    if (sizesType.getRank() != 1 ||
        (!sizesType.isDynamicDim(0) && sizesType.getDimSize(0) != (int64_t)normalized->size()))
      return n.error("sizes must have one entry per resized axis");
    if (policy != "stretch")
      return n.unsupported("keep_aspect_ratio_policy with sizes known only at run time");
    if (known && known->size() == normalized->size() &&
        llvm::all_of(*known, [](DimExpr d) { return (bool)d; })) {
      for (auto [i, a] : llvm::enumerate(*normalized))
        out[a] = (*known)[i];
    } else {
      Chain c(n);
      Value entries = c(castTo(n, sizesInput, n.builder().getI64Type()));
      // Sizes of unknown length (a graph input of a model compiled with
      // dynamic dims) must still hold one entry per resized axis: reshaped to
      // that length, a guard checks it on every call.
      if (sizesType.isDynamicDim(0))
        entries = c.reshape(entries, {getConstantDim(ctx, (int64_t)normalized->size())});
      SmallVector<Value> pieces;
      for (int64_t d = 0; d < rank && c.ok; ++d) {
        auto it = llvm::find(*normalized, d);
        if (it == normalized->end()) {
          pieces.push_back(c(dimPiece(n, *x, d)));
          continue;
        }
        out[d] = DimExpr();
        pieces.push_back(c(n.create<GatherOp>(
            {entries, n.constI64({int64_t(it - normalized->begin())})},
            {n.named("axis", n.builder().getI64IntegerAttr(0))})));
      }
      dataSizes = c.ok ? c(concatPieces(n, pieces)) : Value();
      if (!c.ok)
        return failure();
    }
    scales.clear();
  } else if (sizesInput) {
    auto sizes = n.maybeConstantInts(sizesInput);
    if (sizes->size() != normalized->size())
      return n.error("sizes must have one entry per resized axis");
    SmallVector<double> ratio(rank, 1.0);
    bool runtimeScales = false;
    for (auto [i, a] : llvm::enumerate(*normalized)) {
      out[a] = getConstantDim(ctx, (*sizes)[i]);
      auto d = getConstantDimValue(dims[a]);
      if (!d) { // the scale is size / input, known only at run time
        runtimeScales = true;
        continue;
      }
      ratio[a] = double((*sizes)[i]) / double(*d);
    }
    if (runtimeScales && policy != "stretch")
      return n.unsupported("keep_aspect_ratio_policy on a dynamic dim");
    if (runtimeScales)
      ratio.clear();
    if (policy != "stretch") {
      double s = policy == "not_larger" ? INFINITY : 0;
      for (int64_t a : *normalized)
        s = policy == "not_larger" ? std::min(s, ratio[a]) : std::max(s, ratio[a]);
      for (int64_t a : *normalized) {
        ratio[a] = s;
        out[a] = getConstantDim(ctx, (int64_t)(s * *getConstantDimValue(dims[a]) + 0.5));
      }
    }
    if (ratio.empty())
      scales.clear();
    for (size_t a = 0; a < ratio.size(); ++a)
      scales[a] = ratio[a];
  } else {
    auto s = floatsOf(scalesIndex);
    if (!s)
      return n.unsupported("scales that are not compile-time constants");
    if (s->size() != normalized->size())
      return n.error("scales must have one entry per resized axis");
    for (auto [i, a] : llvm::enumerate(*normalized)) {
      float scale = (*s)[i];
      if (!(scale > 0))
        return n.error("scales must be positive");
      scales[a] = scale;
      if (auto d = getConstantDimValue(dims[a]))
        out[a] = getConstantDim(ctx, (int64_t)std::floor(double(*d) * scale));
      else if (scale == std::floor(scale))
        out[a] = mulDims(dims[a], getConstantDim(ctx, (int64_t)scale));
      else
        out[a] = DimExpr(); // floor(d * scale): computed from the dim at run time
    }
  }
  // A size no dim expression states (a fractional scale of a symbolic dim) is
  // computed from the input's dim as the static case does, floor(d * scale)
  // in double; the result dim is unknown until run time.
  Value size = dataSizes;
  if (size) {
    // (the data's sizes, above)
  } else if (llvm::is_contained(out, DimExpr())) {
    Chain c(n);
    SmallVector<Value> pieces;
    Type f64 = n.builder().getF64Type();
    for (int64_t a = 0; a < rank && c.ok; ++a) {
      if (out[a]) {
        pieces.push_back(shapeConstant(n, {out[a]}));
        continue;
      }
      Value d = c(castTo(n, c(dimPiece(n, *x, a)), f64));
      Value scaled = c.bin<MulOp>(d, n.constScalar(f64, double(scales[a])));
      pieces.push_back(c(castTo(n, c.un<FloorOp>(scaled), n.builder().getI64Type())));
    }
    size = c.ok ? c(concatPieces(n, pieces)) : Value();
    if (!c.ok)
      return failure();
  } else {
    size = shapeConstant(n, out);
  }
  auto r = n.create<ResizeOp>(
      {*x, size},
      {n.named("mode", ResizeModeAttr::get(ctx, *mode)),
       n.named("coordinate_mode", CoordinateModeAttr::get(ctx, *ctm)),
       n.named("nearest_mode", NearestModeAttr::get(ctx, *nearest)),
       n.named("scales", n.builder().getDenseF32ArrayAttr(scales)),
       n.named("roi", n.builder().getDenseF32ArrayAttr(roi)),
       n.named("cubic_coeff_a", n.builder().getF32FloatAttr(cubicA)),
       n.named("exclude_outside", n.builder().getBoolAttr(excludeOutside)),
       n.named("extrapolation_value", n.builder().getF32FloatAttr(extrapolation)),
       n.named("antialias", n.builder().getBoolAttr(antialias))});
  return failed(r) ? failure() : n.setResults({*r});
}


LogicalResult convertGatherND(NodeImporter &n) {
  auto data = n.requiredInput(0), indices = n.requiredInput(1);
  auto batch = n.intAttr("batch_dims", 0);
  if (failed(data) || failed(indices) || failed(batch))
    return failure();
  auto r = n.create<GatherNDOp>({*data, *indices},
                                {n.named("batch_dims", n.builder().getI64IntegerAttr(*batch))});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertScatterND(NodeImporter &n) {
  auto data = n.requiredInput(0), indices = n.requiredInput(1), updates = n.requiredInput(2);
  auto reduction = scatterReduction(n);
  if (failed(data) || failed(indices) || failed(updates) || failed(reduction))
    return failure();
  auto r = n.create<ScatterNDOp>(
      {*data, *indices, *updates},
      {n.named("reduction", ScatterReductionAttr::get(n.context(), *reduction))});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertBitCast(NodeImporter &n) {
  auto x = n.requiredInput(0);
  auto to = n.intAttr("to");
  if (failed(x) || failed(to))
    return failure();
  Type element = convertElementType(n.context(), *to);
  if (!element)
    return n.unsupported("bitcast to " + onnxTypeName(*to));
  if (elementTypeOf(*x) == element)
    return n.setResults({*x});
  auto r = n.create<BitcastOp>({*x}, {n.named("to", TypeAttr::get(element))});
  return failed(r) ? failure() : n.setResults({*r});
}


LogicalResult convertScatter(NodeImporter &n) {
  // Scatter (opsets 9-10) is ScatterElements without a reduction.
  return convertScatterElements(n);
}

LogicalResult convertUpsample(NodeImporter &n) {
  auto x = n.requiredInput(0);
  auto modeName = n.stringAttr("mode", std::string("nearest"));
  if (failed(x) || failed(modeName))
    return failure();
  if (*modeName != "nearest" && *modeName != "linear" && *modeName != "bilinear")
    return n.error("mode must be nearest or linear, not '" + *modeName + "'");
  SmallVector<double> scales;
  if (n.version() < 9) {
    auto s = n.floatsAttr("scales");
    if (failed(s))
      return failure();
    scales.assign(s->begin(), s->end());
  } else {
    auto s = n.maybeConstantFloats(n.input(1));
    if (!s)
      return n.unsupported("scales that are not compile-time constants");
    scales = *s;
  }
  SymShape dims = getSymShape(x->getType());
  if (scales.size() != dims.size())
    return n.error("scales must have one entry per dim");
  SmallVector<float> f32Scales;
  MLIRContext *ctx = n.context();
  for (auto [d, s] : llvm::zip(dims, scales)) {
    if (!(s > 0))
      return n.error("scales must be positive");
    f32Scales.push_back(s);
    if (auto c = getConstantDimValue(d))
      d = getConstantDim(ctx, (int64_t)std::floor(double(*c) * s));
    else if (s == std::floor(s))
      d = mulDims(d, getConstantDim(ctx, (int64_t)s));
    else
      return n.unsupported("a fractional scale on a dynamic dim");
  }
  // Upsample is Resize with asymmetric coordinates, nearest rounding down.
  auto r = n.create<ResizeOp>(
      {*x, shapeConstant(n, dims)},
      {n.named("mode", ResizeModeAttr::get(ctx, *modeName == "nearest" ? ResizeMode::nearest
                                                                        : ResizeMode::linear)),
       n.named("coordinate_mode", CoordinateModeAttr::get(ctx, CoordinateMode::asymmetric)),
       n.named("nearest_mode", NearestModeAttr::get(ctx, NearestMode::floor)),
       n.named("scales", n.builder().getDenseF32ArrayAttr(f32Scales)),
       n.named("roi", n.builder().getDenseF32ArrayAttr({}))});
  return failed(r) ? failure() : n.setResults({*r});
}


LogicalResult convertNonZero(NodeImporter &n) {
  auto x = n.requiredInput(0);
  if (failed(x))
    return failure();
  auto r = n.create<NonZeroOp>({*x});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertCompress(NodeImporter &n) {
  auto x = n.requiredInput(0), condition = n.requiredInput(1);
  if (failed(x) || failed(condition))
    return failure();
  SmallVector<NamedAttribute> attrs;
  if (n.hasAttr("axis")) {
    auto axis = n.intAttr("axis");
    if (failed(axis))
      return failure();
    attrs.push_back(n.named("axis", n.builder().getI64IntegerAttr(*axis)));
  }
  auto r = n.create<CompressOp>({*x, *condition}, attrs);
  return failed(r) ? failure() : n.setResults({*r});
}

} // namespace kiln::onnx_import
