//===- Misc.cpp - smaller ONNX ops decomposed onto kiln -------------------===//
//
// EyeLike, OneHot, GroupNormalization, LRN, the window functions, CenterCropPad
// and ReverseSequence: each is a handful of core ops.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

#include <cmath>

using namespace mlir;

namespace kiln::onnx_import {

namespace {
FailureOr<Value> x0(NodeImporter &n) { return n.requiredInput(0); }

} // namespace

LogicalResult convertEyeLike(NodeImporter &n) {
  auto x = x0(n);
  auto k = n.intAttr("k", 0), dtype = n.intAttr("dtype", 0);
  if (failed(x) || failed(k) || failed(dtype))
    return failure();
  if (NodeImporter::typeOf(*x).getRank() != 2)
    return n.error("input must be 2-D");
  Type out = elementTypeOf(*x);
  if (*dtype) {
    out = convertElementType(n.context(), *dtype);
    if (!out)
      return n.unsupported("dtype " + onnxTypeName(*dtype));
  }
  // 1 where column - row == k.
  auto rows = iotaAlongAxis(n, *x, 0, 0, 2), cols = iotaAlongAxis(n, *x, 1, 1, 2);
  if (failed(rows) || failed(cols))
    return failure();
  auto diff = binary<SubOp>(n, *cols, *rows);
  auto hit = failed(diff) ? diff : compare(n, CompareDirection::eq, *diff, n.constI64({*k}, true));
  auto r = failed(hit) ? hit : castTo(n, *hit, out);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertOneHot(NodeImporter &n) {
  auto indices = x0(n), depth = n.requiredInput(1), values = n.requiredInput(2);
  auto axis = n.intAttr("axis", -1);
  if (failed(indices) || failed(depth) || failed(values) || failed(axis))
    return failure();
  std::optional<int64_t> d;
  if (auto ints = n.maybeConstantInts(*depth); ints && ints->size() == 1)
    d = (*ints)[0];
  else if (auto floats = n.maybeConstantFloats(*depth); floats && floats->size() == 1)
    d = (int64_t)(*floats)[0];
  if (!d)
    return n.unsupported("a depth that is not a compile-time constant");
  if (*d < 1)
    return n.error("depth must be positive, not " + Twine(*d));
  // A values input of unknown length (a graph input compiled with dynamic
  // dims) is reshaped to [2], a guard checking its length at run time.
  if (NodeImporter::typeOf(*values).getRank() == 1 && NodeImporter::typeOf(*values).isDynamicDim(0))
    values = reshapeTo(n, *values, {getConstantDim(n.context(), 2)});
  if (failed(values))
    return failure();
  if (NodeImporter::typeOf(*values).getRank() != 1 ||
      NodeImporter::typeOf(*values).getDimSize(0) != 2)
    return n.error("values must hold [off_value, on_value]");
  int64_t rank = NodeImporter::typeOf(*indices).getRank() + 1;
  auto axes = normalizeAxes(n, {*axis}, rank);
  if (failed(axes))
    return failure();
  int64_t a = (*axes)[0];
  // Negative indices count from the end of the depth.
  auto idx = castTo(n, *indices, n.builder().getI64Type());
  Value depthValue = n.constI64({*d}, true);
  auto neg = failed(idx) ? idx : compare(n, CompareDirection::lt, *idx, n.constI64({0}, true));
  auto wrapped = failed(neg) ? neg : binary<AddOp>(n, *idx, depthValue);
  auto fixed = failed(wrapped) ? wrapped : select(n, *neg, *wrapped, *idx);
  auto expanded = failed(fixed) ? fixed : insertUnitDims(n, *fixed, {a});
  Value limit = n.constI64({*d}, true);
  auto iota = n.create<RangeOp>({n.constI64({0}, true), limit, n.constI64({1}, true)});
  SmallVector<int64_t> ones;
  for (int64_t i = 0; i < rank; ++i)
    if (i != a)
      ones.push_back(i);
  auto along = failed(iota) ? iota : insertUnitDims(n, *iota, ones);
  if (failed(expanded) || failed(along))
    return failure();
  auto hit = compare(n, CompareDirection::eq, *along, *expanded);
  auto off = n.create<GatherOp>({*values, n.constI64({0}, true)},
                                {n.named("axis", n.builder().getI64IntegerAttr(0))});
  auto on = n.create<GatherOp>({*values, n.constI64({1}, true)},
                               {n.named("axis", n.builder().getI64IntegerAttr(0))});
  if (failed(hit) || failed(off) || failed(on))
    return failure();
  auto r = select(n, *hit, *on, *off);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertGroupNormalization(NodeImporter &n) {
  auto x = x0(n), scale = n.requiredInput(1), bias = n.requiredInput(2);
  auto epsilon = n.floatAttr("epsilon", 1e-5f);
  auto groups = n.intAttr("num_groups");
  if (failed(x) || failed(scale) || failed(bias) || failed(epsilon) || failed(groups))
    return failure();
  SymShape dims = getSymShape(x->getType());
  int64_t rank = dims.size();
  if (rank < 2)
    return n.error("input must have rank >= 2 ([N, C, ...])");
  auto channels = getConstantDimValue(dims[1]);
  if (!channels || *groups < 1 || *channels % *groups != 0)
    return n.error("num_groups must divide a static channel count");
  // [N, C, ...] -> [N, G, C/G * spatial] -> normalize over the last dim -> back.
  MLIRContext *ctx = n.context();
  SmallVector<DimExpr> grouped = {dims[0], getConstantDim(ctx, *groups),
                                  productOfDims(ctx, ArrayRef<DimExpr>(dims).drop_front(1))};
  grouped[2] = floorDivDims(grouped[2], getConstantDim(ctx, *groups));
  auto g = reshapeTo(n, *x, grouped);
  auto mean = failed(g) ? g : reduce(n, *g, ReduceKind::mean, {2}, true);
  auto d = failed(mean) ? mean : binary<SubOp>(n, *g, *mean);
  auto sq = failed(d) ? d : binary<MulOp>(n, *d, *d);
  auto var = failed(sq) ? sq : reduce(n, *sq, ReduceKind::mean, {2}, true);
  auto ve = failed(var) ? var : binary<AddOp>(n, *var, scalarLike(n, *x, *epsilon));
  auto inv = failed(ve) ? ve : unary<RsqrtOp>(n, *ve);
  auto normed = failed(inv) ? inv : binary<MulOp>(n, *d, *inv);
  auto back = failed(normed) ? normed : reshapeTo(n, *normed, dims);
  if (failed(back))
    return failure();
  // Scale and bias are per channel from opset 21, per group before.
  auto perChannel = [&](Value p) -> FailureOr<Value> {
    Value v = p;
    if (n.version() < 21) {
      // [G] -> [G, 1] -> broadcast [G, C/G] -> [C]
      auto u = insertUnitDims(n, p, {1});
      auto b = failed(u) ? u
                         : n.create<BroadcastToOp>(
                               {*u, n.constI64({*groups, *channels / *groups})});
      auto f = failed(b) ? b : n.create<ReshapeOp>({*b, n.constI64({*channels})});
      if (failed(f))
        return failure();
      v = *f;
    }
    SmallVector<int64_t> ones = {0};
    for (int64_t i = 2; i < rank; ++i)
      ones.push_back(i);
    return insertUnitDims(n, v, ones);
  };
  auto s = perChannel(*scale), b = perChannel(*bias);
  auto y = failed(s) || failed(b) ? FailureOr<Value>(failure()) : binary<MulOp>(n, *back, *s);
  y = failed(y) ? y : binary<AddOp>(n, *y, *b);
  return failed(y) ? failure() : n.setResults({*y});
}

LogicalResult convertLRN(NodeImporter &n) {
  auto x = x0(n);
  auto alpha = n.floatAttr("alpha", 1e-4f), beta = n.floatAttr("beta", 0.75f),
       bias = n.floatAttr("bias", 1.0f);
  auto size = n.intAttr("size");
  if (failed(x) || failed(alpha) || failed(beta) || failed(bias) || failed(size))
    return failure();
  SymShape dims = getSymShape(x->getType());
  if (dims.size() < 3)
    return n.error("input must have rank >= 3 ([N, C, spatial...])");
  if (*size < 1)
    return n.error("size must be >= 1");
  // Sum of squares over a channel window: average-pool x^2 seen as [N, 1, C, S].
  MLIRContext *ctx = n.context();
  SmallVector<DimExpr> view = {dims[0], getConstantDim(ctx, 1), dims[1],
                               productOfDims(ctx, ArrayRef<DimExpr>(dims).drop_front(2))};
  int64_t lo = (*size - 1) / 2, hi = *size - 1 - lo;
  auto sq = binary<MulOp>(n, *x, *x);
  auto v = failed(sq) ? sq : reshapeTo(n, *sq, view);
  auto pooled = failed(v) ? v
                          : n.create<PoolOp>(
                                {*v}, {n.named("kind", PoolKindAttr::get(ctx, PoolKind::avg)),
                                       n.named("kernel_shape", n.builder().getDenseI64ArrayAttr({*size, 1})),
                                       n.named("strides", n.builder().getDenseI64ArrayAttr({1, 1})),
                                       n.named("pads", n.builder().getDenseI64ArrayAttr({lo, 0, hi, 0})),
                                       n.named("dilations", n.builder().getDenseI64ArrayAttr({1, 1})),
                                       n.named("count_include_pad", n.builder().getBoolAttr(true))});
  // avg * size = sum; denominator = (bias + alpha / size * sum) ^ beta
  auto sum = failed(pooled) ? pooled : binary<MulOp>(n, *pooled, scalarLike(n, *x, *size));
  auto back = failed(sum) ? sum : reshapeTo(n, *sum, dims);
  auto scaled = failed(back) ? back : binary<MulOp>(n, *back, scalarLike(n, *x, *alpha / *size));
  auto shifted = failed(scaled) ? scaled : binary<AddOp>(n, *scaled, scalarLike(n, *x, *bias));
  auto den = failed(shifted) ? shifted : binary<PowOp>(n, *shifted, scalarLike(n, *x, *beta));
  auto y = failed(den) ? den : binary<DivOp>(n, *x, *den);
  return failed(y) ? failure() : n.setResults({*y});
}

namespace {
/// The window functions: a constant of `size` elements when size is known.
LogicalResult convertWindow(NodeImporter &n, ArrayRef<double> cosineCoefficients) {
  auto periodic = n.intAttr("periodic", 1), dtype = n.intAttr("output_datatype", 1);
  if (failed(periodic) || failed(dtype))
    return failure();
  auto size = n.constantInts(0, "size");
  if (failed(size))
    return failure();
  if (size->size() != 1 || (*size)[0] < 0 || (*size)[0] > (int64_t(1) << 24))
    return n.error("size must be one non-negative value");
  Type out = convertElementType(n.context(), *dtype);
  if (!out || !isa<FloatType>(out))
    return n.unsupported("output_datatype " + onnxTypeName(*dtype));
  int64_t count = (*size)[0];
  double denominator = *periodic ? double(count) : double(count - 1);
  SmallVector<APFloat> values;
  for (int64_t i = 0; i < count; ++i) {
    double v = 0;
    for (auto [k, c] : llvm::enumerate(cosineCoefficients))
      v += (k % 2 ? -c : c) * std::cos(2.0 * M_PI * k * i / denominator);
    APFloat f(v);
    bool losesInfo;
    f.convert(cast<FloatType>(out).getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
    values.push_back(f);
  }
  auto type = RankedTensorType::get({count}, out);
  Value c = ConstantOp::create(n.builder(), n.loc(),
                               cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
  return n.setResults({c});
}
} // namespace

LogicalResult convertHannWindow(NodeImporter &n) { return convertWindow(n, {0.5, 0.5}); }
LogicalResult convertHammingWindow(NodeImporter &n) {
  return convertWindow(n, {25.0 / 46.0, 1.0 - 25.0 / 46.0});
}
LogicalResult convertBlackmanWindow(NodeImporter &n) { return convertWindow(n, {0.42, 0.5, 0.08}); }

LogicalResult convertCenterCropPad(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  auto target = n.constantInts(1, "shape");
  if (failed(target))
    return failure();
  SymShape dims = getSymShape(x->getType());
  int64_t rank = dims.size();
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  auto axesAttr = n.intsAttr("axes", all);
  if (failed(axesAttr))
    return failure();
  auto axes = normalizeAxes(n, *axesAttr, rank);
  if (failed(axes))
    return failure();
  if (target->size() != axes->size())
    return n.error("shape must have one entry per axis");
  for (int64_t want : *target)
    if (want < 0)
      return n.error("shape entries must be non-negative");
  bool anyDynamic = llvm::any_of(*axes, [&](int64_t a) { return !getConstantDimValue(dims[a]); });
  if (anyDynamic) {
    // Whether a dynamic dim is cropped or padded is known only at run time:
    // crop by max(d - want, 0) and pad by max(want - d, 0), both split as the
    // static case splits them, computed from the dims (the result's dims are
    // then known only at run time too).
    Chain c(n);
    Value zero = n.constI64({0}), two = n.constI64({2});
    SmallVector<Value> starts, ends, padBegin, padEnd;
    for (int64_t a = 0; a < rank && c.ok; ++a) {
      auto at = llvm::find(*axes, a);
      if (at == axes->end()) {
        starts.push_back(zero);
        ends.push_back(n.constI64({INT64_MAX}));
        padBegin.push_back(zero);
        padEnd.push_back(zero);
        continue;
      }
      Value want = n.constI64({(*target)[at - axes->begin()]});
      Value d = c(dimPiece(n, *x, a));
      Value excess = c.bin<MaxOp>(c.bin<SubOp>(d, want), zero);
      Value shortfall = c.bin<MaxOp>(c.bin<SubOp>(want, d), zero);
      Value start = c.bin<DivOp>(excess, two);
      starts.push_back(start);
      ends.push_back(c.bin<AddOp>(start, c.bin<MinOp>(d, want)));
      Value before = c.bin<DivOp>(shortfall, two);
      padBegin.push_back(before);
      padEnd.push_back(c.bin<SubOp>(shortfall, before));
    }
    SmallVector<Value> pads(padBegin);
    pads.append(padEnd);
    Value cropped = c.ok ? c(n.create<SliceOp>({*x, c(concatPieces(n, starts)),
                                                c(concatPieces(n, ends)),
                                                n.constI64(SmallVector<int64_t>(rank, 1))}))
                         : Value();
    Value padded = c.ok ? c(n.create<PadOp>({cropped, c(concatPieces(n, pads)),
                                             scalarLike(n, cropped, 0)},
                                            {n.named("mode", PadModeAttr::get(n.context(),
                                                                              PadMode::constant))}))
                        : Value();
    return c.done({padded});
  }
  SmallVector<int64_t> starts(rank, 0), ends(rank, INT64_MAX), pads(2 * rank, 0);
  bool crop = false, pad = false;
  for (auto [i, a] : llvm::enumerate(*axes)) {
    int64_t d = *getConstantDimValue(dims[a]);
    int64_t want = (*target)[i];
    if (want < d) {
      starts[a] = (d - want) / 2;
      ends[a] = starts[a] + want;
      crop = true;
    } else if (want > d) {
      pads[a] = (want - d) / 2;
      pads[a + rank] = want - d - pads[a];
      pad = true;
    }
  }
  Value v = *x;
  if (crop) {
    auto s = n.create<SliceOp>({v, n.constI64(starts), n.constI64(ends),
                                n.constI64(SmallVector<int64_t>(rank, 1))});
    if (failed(s))
      return failure();
    v = *s;
  }
  if (pad) {
    auto p = n.create<PadOp>({v, n.constI64(pads), scalarLike(n, v, 0)},
                             {n.named("mode", PadModeAttr::get(n.context(), PadMode::constant))});
    if (failed(p))
      return failure();
    v = *p;
  }
  return n.setResults({v});
}

LogicalResult convertReverseSequence(NodeImporter &n) {
  auto x = x0(n), lens = n.requiredInput(1);
  auto timeAxis = n.intAttr("time_axis", 0), batchAxis = n.intAttr("batch_axis", 1);
  if (failed(x) || failed(lens) || failed(timeAxis) || failed(batchAxis))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  if (rank < 2 || (*timeAxis != 0 && *timeAxis != 1) || *batchAxis != 1 - *timeAxis)
    return n.error("time_axis and batch_axis must be 0 and 1 in some order");
  // index[t, b] = t < len[b] ? len[b] - 1 - t : t, gathered along the time axis.
  auto t = iotaAlongAxis(n, *x, *timeAxis, *timeAxis, rank);
  SmallVector<int64_t> ones;
  for (int64_t i = 0; i < rank; ++i)
    if (i != *batchAxis)
      ones.push_back(i);
  auto l64 = castTo(n, *lens, n.builder().getI64Type());
  auto len = failed(l64) ? l64 : insertUnitDims(n, *l64, ones);
  if (failed(t) || failed(len))
    return failure();
  auto inside = compare(n, CompareDirection::lt, *t, *len);
  auto last = binary<SubOp>(n, *len, n.constI64({1}, true));
  auto reversed = failed(last) ? last : binary<SubOp>(n, *last, *t);
  auto idx = failed(inside) || failed(reversed) ? FailureOr<Value>(failure())
                                                : select(n, *inside, *reversed, *t);
  auto shape = n.create<ShapeOfOp>({*x});
  auto full = failed(idx) || failed(shape) ? FailureOr<Value>(failure())
                                           : n.create<BroadcastToOp>({*idx, *shape});
  auto r = failed(full) ? full
                        : n.create<GatherElementsOp>(
                              {*x, *full}, {n.named("axis", n.builder().getI64IntegerAttr(*timeAxis))});
  return failed(r) ? failure() : n.setResults({*r});
}


LogicalResult convertSwish(NodeImporter &n) {
  auto x = n.requiredInput(0);
  auto alpha = n.floatAttr("alpha", 1.0f);
  if (failed(x) || failed(alpha))
    return failure();
  // x * sigmoid(alpha * x)
  auto ax = binary<MulOp>(n, *x, scalarLike(n, *x, *alpha));
  auto s = failed(ax) ? ax : unary<SigmoidOp>(n, *ax);
  auto r = failed(s) ? s : binary<MulOp>(n, *x, *s);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertMeanVarianceNormalization(NodeImporter &n) {
  auto x = n.requiredInput(0);
  auto axesAttr = n.intsAttr("axes", SmallVector<int64_t>{0, 2, 3});
  if (failed(x) || failed(axesAttr))
    return failure();
  auto axes = normalizeAxes(n, *axesAttr, NodeImporter::typeOf(*x).getRank());
  if (failed(axes))
    return failure();
  // ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9).
  auto mean = reduce(n, *x, ReduceKind::mean, *axes, true);
  auto sq = binary<MulOp>(n, *x, *x);
  auto meanSq = failed(sq) ? sq : reduce(n, *sq, ReduceKind::mean, *axes, true);
  auto sqMean = failed(mean) ? mean : binary<MulOp>(n, *mean, *mean);
  auto var = failed(meanSq) || failed(sqMean) ? FailureOr<Value>(failure())
                                              : binary<SubOp>(n, *meanSq, *sqMean);
  auto stdv = failed(var) ? var : unary<SqrtOp>(n, *var);
  auto den = failed(stdv) ? stdv : binary<AddOp>(n, *stdv, scalarLike(n, *x, 1e-9));
  auto num = failed(mean) ? mean : binary<SubOp>(n, *x, *mean);
  auto r = failed(num) || failed(den) ? FailureOr<Value>(failure()) : binary<DivOp>(n, *num, *den);
  return failed(r) ? failure() : n.setResults({*r});
}

} // namespace kiln::onnx_import
