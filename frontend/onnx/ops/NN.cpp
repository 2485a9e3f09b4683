//===- NN.cpp - ONNX matmul, conv, pooling, normalization onto kiln -------===//

#include "frontend/onnx/ops/Converters.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {
FailureOr<Value> x0(NodeImporter &n) { return n.requiredInput(0); }

/// Reshapes a per-channel parameter [C] to [C, 1, ..., 1] so it broadcasts against
/// an [N, C, spatial...] tensor of rank `rank`.
FailureOr<Value> perChannel(NodeImporter &n, Value p, int64_t rank) {
  if (rank <= 2)
    return p;
  SymShape dims = getSymShape(p.getType());
  if (dims.size() != 1)
    return n.error("per-channel parameters must be 1-D");
  SmallVector<DimExpr> target = {dims[0]};
  for (int64_t i = 2; i < rank; ++i)
    target.push_back(getConstantDim(n.context(), 1));
  return reshapeTo(n, p, target);
}

/// Window attributes of Conv and the pools, with auto_pad resolved to explicit pads.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, pads;
  /// SAME padding with a stride above 1 on a symbolic spatial dim: the pads
  /// depend on the size, so they are not attributes but a pad of the input,
  /// `[begin..., end...]` over all its dims (N and C: 0), and `pads` is 0.
  /// Empty otherwise.
  SmallVector<DimExpr> inputPads;
};

/// SAME padding's total over a symbolic size `in`: ONNX's
/// max(0, (ceil(in / s) - 1) * s + eff - in). With m = s * (in ceildiv s) - in,
/// in [0, s - 1], that is m + eff - s when eff >= s (always >= 0), and for
/// eff < s, with c = s - eff >= 1, max(0, m - c) = (m - c) * [m >= c], where
/// [m >= c] = (m + s - c) floordiv s (m + s - c lies in [s - c, 2s - c - 1]).
DimExpr samePaddingTotal(DimExpr in, int64_t s, int64_t eff) {
  MLIRContext *ctx = in.getContext();
  auto c = [&](int64_t v) { return getConstantDim(ctx, v); };
  DimExpr m = subDims(mulDims(c(s), ceilDivDims(in, c(s))), in);
  if (eff >= s)
    return addDims(m, c(eff - s));
  DimExpr under = subDims(m, c(s - eff));
  return mulDims(under, floorDivDims(addDims(under, c(s)), c(s)));
}

FailureOr<Window> windowAttrs(NodeImporter &n, Value x, ArrayRef<int64_t> kernel) {
  int64_t k = NodeImporter::typeOf(x).getRank() - 2;
  if (k < 1)
    return n.error("input must have rank >= 3 ([N, C, spatial...])");
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  if ((int64_t)w.kernel.size() != k)
    return n.error("kernel_shape has " + Twine(w.kernel.size()) + " entries for " + Twine(k) +
                   " spatial dims");
  auto strides = n.intsAttr("strides", SmallVector<int64_t>(k, 1));
  auto dilations = n.intsAttr("dilations", SmallVector<int64_t>(k, 1));
  auto pads = n.intsAttr("pads", SmallVector<int64_t>(2 * k, 0));
  auto autoPad = n.stringAttr("auto_pad", std::string("NOTSET"));
  if (failed(strides) || failed(dilations) || failed(pads) || failed(autoPad))
    return failure();
  w.strides = *strides;
  w.dilations = *dilations;
  w.pads = *pads;
  if ((int64_t)w.strides.size() != k || (int64_t)w.dilations.size() != k ||
      (int64_t)w.pads.size() != 2 * k)
    return n.error("strides, dilations and pads must have one entry per spatial dim "
                   "(pads two)");
  if (*autoPad == "NOTSET")
    return w;
  if (*autoPad == "VALID") {
    w.pads.assign(2 * k, 0);
    return w;
  }
  if (*autoPad != "SAME_UPPER" && *autoPad != "SAME_LOWER")
    return n.error("auto_pad '" + *autoPad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  SymShape dims = getSymShape(x.getType());
  bool upper = *autoPad == "SAME_UPPER", sizeDependent = false;
  SmallVector<DimExpr> symbolicPads(2 * (k + 2), getConstantDim(n.context(), 0));
  for (int64_t i = 0; i < k; ++i) {
    if (w.kernel[i] < 0)
      return n.unsupported("SAME padding with a dynamic kernel size");
    int64_t s = w.strides[i], eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
    auto d = getConstantDimValue(dims[i + 2]);
    // Independent of the size where the stride is 1 (eff - 1) or the window
    // one element (0).
    if (d || s == 1 || eff == 1) {
      int64_t total = d ? std::max<int64_t>((ceilDivInt(*d, s) - 1) * s + eff - *d, 0)
                        : s == 1 ? eff - 1 : 0;
      int64_t small = total / 2, large = total - small;
      w.pads[i] = upper ? small : large;
      w.pads[i + k] = upper ? large : small;
      symbolicPads[i + 2] = getConstantDim(n.context(), w.pads[i]);
      symbolicPads[i + 2 + k + 2] = getConstantDim(n.context(), w.pads[i + k]);
      continue;
    }
    if (!dims[i + 2])
      return n.unsupported("SAME padding with stride > 1 on a spatial dim of unknown size");
    DimExpr total = samePaddingTotal(dims[i + 2], s, eff);
    DimExpr small = floorDivDims(total, getConstantDim(n.context(), 2));
    DimExpr large = subDims(total, small);
    if (!small || !large)
      return n.unsupported("SAME padding: the pads of a spatial dim overflow");
    symbolicPads[i + 2] = upper ? small : large;
    symbolicPads[i + 2 + k + 2] = upper ? large : small;
    sizeDependent = true;
  }
  if (sizeDependent) {
    w.inputPads = symbolicPads;
    w.pads.assign(2 * k, 0);
  }
  return w;
}

/// `x` padded by `w.inputPads` with `fill` (a 0-d tensor of its element type).
FailureOr<Value> padInput(NodeImporter &n, Value x, const Window &w, Value fill) {
  return n.create<PadOp>({x, shapeConstant(n, w.inputPads), fill},
                         {n.named("mode", PadModeAttr::get(n.context(), PadMode::constant))});
}

NamedAttribute arrayAttr(NodeImporter &n, StringRef name, ArrayRef<int64_t> v) {
  return n.named(name, n.builder().getDenseI64ArrayAttr(v));
}
} // namespace

LogicalResult convertMatMul(NodeImporter &n) {
  auto a = x0(n), b = n.requiredInput(1);
  if (failed(a) || failed(b))
    return failure();
  auto r = n.create<MatmulOp>({*a, *b});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertGemm(NodeImporter &n) {
  auto a = x0(n), b = n.requiredInput(1);
  auto alpha = n.floatAttr("alpha", 1.0f), beta = n.floatAttr("beta", 1.0f);
  auto transA = n.intAttr("transA", 0), transB = n.intAttr("transB", 0);
  if (failed(a) || failed(b) || failed(alpha) || failed(beta) || failed(transA) ||
      failed(transB))
    return failure();
  if (NodeImporter::typeOf(*a).getRank() != 2 || NodeImporter::typeOf(*b).getRank() != 2)
    return n.error("A and B must be matrices");
  auto transpose = [&](Value v) {
    return n.create<TransposeOp>({v}, {arrayAttr(n, "permutation", {1, 0})});
  };
  FailureOr<Value> lhs = *transA ? transpose(*a) : a;
  FailureOr<Value> rhs = *transB ? transpose(*b) : b;
  if (failed(lhs) || failed(rhs))
    return failure();
  auto y = n.create<MatmulOp>({*lhs, *rhs});
  if (failed(y))
    return failure();
  if (*alpha != 1.0f) {
    y = binary<MulOp>(n, *y, scalarLike(n, *y, *alpha));
    if (failed(y))
      return failure();
  }
  if (Value c = n.input(2)) {
    FailureOr<Value> scaled = c;
    if (*beta != 1.0f)
      scaled = binary<MulOp>(n, c, scalarLike(n, c, *beta));
    if (failed(scaled))
      return failure();
    y = binary<AddOp>(n, *y, *scaled);
    if (failed(y))
      return failure();
  }
  return n.setResults({*y});
}

LogicalResult convertConv(NodeImporter &n) {
  auto x = x0(n), w = n.requiredInput(1);
  if (failed(x) || failed(w))
    return failure();
  auto r = buildConv(n, *x, *w, n.input(2));
  return failed(r) ? failure() : n.setResults({*r});
}

FailureOr<Value> buildConv(NodeImporter &n, Value x, Value w, Value bias) {
  auto group = n.intAttr("group", 1);
  if (failed(group))
    return failure();
  if (NodeImporter::typeOf(w).getRank() < 3 || NodeImporter::typeOf(x).getRank() < 3)
    return n.error("input and filter must have rank >= 3 ([N, C, spatial...])");
  // The filter's spatial dims are the kernel; -1 where they are dynamic (the conv's
  // shape function handles symbolic kernels; only SAME padding needs numbers).
  SmallVector<int64_t> kernel;
  for (int64_t d : NodeImporter::typeOf(w).getShape().drop_front(2))
    kernel.push_back(ShapedType::isDynamic(d) ? -1 : d);
  auto kernelAttr = n.intsAttr("kernel_shape", kernel);
  if (failed(kernelAttr))
    return failure();
  if (kernelAttr->size() != kernel.size())
    return n.error("kernel_shape does not match the filter's spatial dims");
  for (auto [k, a] : llvm::zip(kernel, *kernelAttr)) {
    if (k >= 0 && k != a)
      return n.error("kernel_shape does not match the filter's spatial dims");
    k = a;
  }
  auto window = windowAttrs(n, x, kernel);
  if (failed(window))
    return failure();
  // Zeros around the input are what a conv's padding is.
  if (!window->inputPads.empty()) {
    auto padded = padInput(n, x, *window, scalarLike(n, x, 0));
    if (failed(padded))
      return failure();
    x = *padded;
  }
  SmallVector<Value> operands = {x, w};
  if (bias)
    operands.push_back(bias);
  int32_t hasBias = operands.size() == 3 ? 1 : 0;
  return n.create<ConvOp>(operands, {arrayAttr(n, "strides", window->strides),
                                     arrayAttr(n, "dilations", window->dilations),
                                     arrayAttr(n, "pads", window->pads),
                                     n.named("group", n.builder().getI64IntegerAttr(*group)),
                                     n.named("operandSegmentSizes",
                                             n.builder().getDenseI32ArrayAttr(
                                                 {1, 1, hasBias, 0}))});
}

namespace {
LogicalResult convertPool(NodeImporter &n, PoolKind kind) {
  auto x = x0(n);
  auto kernel = n.intsAttr("kernel_shape");
  auto ceilMode = n.intAttr("ceil_mode", 0);
  auto countIncludePad = n.intAttr("count_include_pad", 0);
  auto p = n.intAttr("p", 2);
  if (failed(x) || failed(kernel) || failed(ceilMode) || failed(countIncludePad) || failed(p))
    return failure();
  if (kind == PoolKind::max && n.proto().output_size() > 1 && !n.proto().output(1).empty())
    return n.unsupported("MaxPool's Indices output");
  // MaxPool-12's int8 and uint8: pooled in f32, which holds every 8-bit
  // value exactly, so the max (one of the inputs) casts back exactly.
  Type element = elementTypeOf(*x);
  bool eightBit = kind == PoolKind::max && element.isInteger(8);
  if (!isa<FloatType>(element) && !eightBit)
    return n.unsupported("pooling over integer tensors other than MaxPool's int8 and uint8");
  if (eightBit) {
    auto widened = castTo(n, *x, n.builder().getF32Type());
    if (failed(widened))
      return failure();
    x = *widened;
  }
  if (n.hasAttr("storage_order")) {
    auto order = n.intAttr("storage_order");
    if (failed(order))
      return failure();
  }
  auto window = windowAttrs(n, *x, *kernel);
  if (failed(window))
    return failure();
  // Pads that depend on the size (SAME with a stride above 1 on a symbolic
  // dim) pad the input instead: with -inf for a max, zeros for an average or
  // an Lp norm. An average that leaves the padding out of its count is the
  // sum over the zero-padded input divided by the count of real elements in
  // each window, a pool of ones padded alike (both pools divide by the
  // window's size, which cancels).
  Value counts;
  if (!window->inputPads.empty()) {
    if (*ceilMode)
      return n.unsupported("SAME padding with ceil_mode on a dynamic spatial dim");
    bool max = kind == PoolKind::max;
    auto padded = padInput(n, *x, *window, scalarLike(n, *x, max ? -INFINITY : 0.0));
    if (failed(padded))
      return failure();
    if (kind == PoolKind::avg && !*countIncludePad) {
      // (A dilated window that covers only padding counts 0 and gives NaN,
      // as it does with the same pads written out.)
      SymShape dims = getSymShape(x->getType());
      dims[0] = dims[1] = getConstantDim(n.context(), 1);
      if (llvm::any_of(dims, [](DimExpr d) { return !d; }))
        return n.unsupported("SAME padding with stride > 1 beside a spatial dim of unknown size");
      auto ones = n.create<BroadcastToOp>({scalarLike(n, *x, 1), shapeConstant(n, dims)});
      auto paddedOnes = failed(ones) ? ones : padInput(n, *ones, *window, scalarLike(n, *x, 0));
      if (failed(paddedOnes))
        return failure();
      counts = *paddedOnes;
    }
    x = *padded;
  }
  auto pool = [&](Value input) {
    return n.create<PoolOp>(
        {input},
        {n.named("kind", PoolKindAttr::get(n.context(), kind)),
         arrayAttr(n, "kernel_shape", window->kernel), arrayAttr(n, "strides", window->strides),
         arrayAttr(n, "pads", window->pads), arrayAttr(n, "dilations", window->dilations),
         n.named("ceil_mode", n.builder().getBoolAttr(*ceilMode)),
         n.named("count_include_pad", n.builder().getBoolAttr(*countIncludePad)),
         n.named("p", n.builder().getI64IntegerAttr(*p))});
  };
  auto r = pool(*x);
  if (succeeded(r) && counts) {
    auto counted = pool(counts);
    r = failed(counted) ? counted : binary<DivOp>(n, *r, *counted);
  }
  // A window that covers only padding has no input to take the max of: f32
  // gives -inf there, which no cast defines; the type's lowest value is what
  // an integer max over nothing starts from.
  if (succeeded(r) && eightBit)
    r = binary<MaxOp>(n, *r, n.constScalar(n.builder().getF32Type(),
                                             element.isUnsignedInteger() ? 0.0 : -128.0));
  if (succeeded(r) && eightBit)
    r = castTo(n, *r, element);
  return failed(r) ? failure() : n.setResults({*r});
}

FailureOr<Value> reduceSpatial(NodeImporter &n, Value x, ReduceKind kind) {
  int64_t rank = NodeImporter::typeOf(x).getRank();
  if (rank < 3)
    return n.error("input must have rank >= 3 ([N, C, spatial...])");
  return reduce(n, x, kind, ArrayRef<int64_t>(allAxes(rank)).drop_front(2), true);
}
} // namespace

LogicalResult convertMaxPool(NodeImporter &n) { return convertPool(n, PoolKind::max); }
LogicalResult convertAveragePool(NodeImporter &n) { return convertPool(n, PoolKind::avg); }
LogicalResult convertLpPool(NodeImporter &n) { return convertPool(n, PoolKind::lp); }

LogicalResult convertGlobalAveragePool(NodeImporter &n) {
  auto x = x0(n);
  auto r = failed(x) ? FailureOr<Value>(failure()) : reduceSpatial(n, *x, ReduceKind::mean);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertGlobalMaxPool(NodeImporter &n) {
  auto x = x0(n);
  auto r = failed(x) ? FailureOr<Value>(failure()) : reduceSpatial(n, *x, ReduceKind::max);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertGlobalLpPool(NodeImporter &n) {
  auto x = x0(n);
  auto p = n.intAttr("p", 2);
  if (failed(x) || failed(p))
    return failure();
  // (sum |x|^p)^(1/p) over the spatial dims.
  auto a = unary<AbsOp>(n, *x);
  auto powered = failed(a) ? a : binary<PowOp>(n, *a, scalarLike(n, *x, *p));
  auto s = failed(powered) ? powered : reduceSpatial(n, *powered, ReduceKind::sum);
  auto r = failed(s) ? s : binary<PowOp>(n, *s, scalarLike(n, *x, 1.0 / *p));
  return failed(r) ? failure() : n.setResults({*r});
}

namespace {
/// Softmax-like ops before opset 13 flatten the input to 2-D at `axis` and work on
/// the second dim; from 13 they work on `axis` alone.
template <typename OpTy> LogicalResult convertSoftmaxLike(NodeImporter &n) {
  auto x = x0(n);
  auto axis = n.intAttr("axis", n.version() < 13 ? 1 : -1);
  if (failed(x) || failed(axis))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  auto axisAttr = [&](int64_t a) { return n.named("axis", n.builder().getI64IntegerAttr(a)); };
  if (n.version() >= 13 || rank <= 1) {
    auto r = n.create<OpTy>({*x}, {axisAttr(*axis)});
    return failed(r) ? failure() : n.setResults({*r});
  }
  int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (a < 0 || a >= rank)
    return n.error("axis " + Twine(*axis) + " is out of range for rank " + Twine(rank));
  SymShape dims = getSymShape(x->getType());
  MLIRContext *ctx = n.context();
  SmallVector<DimExpr> flat = {productOfDims(ctx, ArrayRef<DimExpr>(dims).take_front(a)),
                               productOfDims(ctx, ArrayRef<DimExpr>(dims).drop_front(a))};
  auto f = reshapeTo(n, *x, flat);
  auto s = failed(f) ? f : n.create<OpTy>({*f}, {axisAttr(1)});
  auto r = failed(s) ? s : reshapeTo(n, *s, dims);
  return failed(r) ? failure() : n.setResults({*r});
}
} // namespace

LogicalResult convertSoftmax(NodeImporter &n) { return convertSoftmaxLike<SoftmaxOp>(n); }
LogicalResult convertLogSoftmax(NodeImporter &n) {
  return convertSoftmaxLike<LogSoftmaxOp>(n);
}

LogicalResult convertHardmax(NodeImporter &n) {
  auto x = x0(n);
  auto axisAttr = n.intAttr("axis", n.version() < 13 ? 1 : -1);
  if (failed(x) || failed(axisAttr))
    return failure();
  SymShape dims = getSymShape(x->getType());
  int64_t rank = dims.size();
  if (n.version() < 13 && rank > 1 && *axisAttr != rank - 1 && *axisAttr != -1)
    return n.unsupported("Hardmax before opset 13 over an axis other than the last");
  auto axes = normalizeAxes(n, {*axisAttr}, rank);
  if (failed(axes))
    return failure();
  int64_t a = (*axes)[0];
  if (!dims[a])
    return n.unsupported("Hardmax over a dim of unknown size");
  // one_hot(argmax): compare an iota along the axis with the first argmax.
  auto am = n.create<ArgReduceOp>(
      {*x}, {n.named("kind", ArgReduceKindAttr::get(n.context(), ArgReduceKind::argmax)),
             n.named("axis", n.builder().getI64IntegerAttr(a)),
             n.named("keep_dims", n.builder().getBoolAttr(true))});
  Value limit = SymbolicConstantOp::create(n.builder(), 
      n.loc(), RankedTensorType::get({}, n.builder().getI64Type()),
      DimsAttr::getCanonical(n.context(), {dims[a]}));
  auto iota = n.create<RangeOp>({n.constI64({0}, true), limit, n.constI64({1}, true)});
  if (failed(am) || failed(iota))
    return failure();
  SmallVector<DimExpr> along(rank, getConstantDim(n.context(), 1));
  along[a] = dims[a];
  auto shaped = reshapeTo(n, *iota, along);
  auto hit = failed(shaped) ? shaped : compare(n, CompareDirection::eq, *shaped, *am);
  auto r = failed(hit) ? hit : castTo(n, *hit, elementTypeOf(*x));
  return failed(r) ? failure() : n.setResults({*r});
}

namespace {
/// The float type statistics compute in: stash_type 1 asks for f32 (when the input
/// is narrower); otherwise the input's own type.
Type stashType(NodeImporter &n, Value x, int64_t stash) {
  Type t = elementTypeOf(x);
  if (stash == 1 && (t.isF16() || t.isBF16()))
    return n.builder().getF32Type();
  return t;
}

SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t i = from; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

} // namespace

LogicalResult convertLayerNormalization(NodeImporter &n) {
  auto x = x0(n), scale = n.requiredInput(1);
  auto axis = n.intAttr("axis", -1);
  auto epsilon = n.floatAttr("epsilon", 1e-5f);
  auto stash = n.intAttr("stash_type", 1);
  if (failed(x) || failed(scale) || failed(axis) || failed(epsilon) || failed(stash))
    return failure();
  bool wantsStatistics = false;
  for (int i = 1; i < n.proto().output_size(); ++i)
    wantsStatistics |= !n.proto().output(i).empty();
  Type computeType = stashType(n, *x, *stash);
  if (!wantsStatistics && computeType == elementTypeOf(*x)) {
    SmallVector<Value> operands = {*x, *scale};
    if (Value b = n.input(2))
      operands.push_back(b);
    auto r = n.create<LayerNormOp>(operands,
                                   {n.named("axis", n.builder().getI64IntegerAttr(*axis)),
                                    n.named("epsilon", n.builder().getF32FloatAttr(*epsilon))});
    return failed(r) ? failure() : n.setResults({*r});
  }
  // Mean and InvStdDev are wanted, or the statistics need a wider type: spell the
  // normalization out (the fusion pass recognizes it again).
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  auto axes = normalizeAxes(n, {*axis}, rank);
  if (failed(axes))
    return failure();
  SmallVector<int64_t> over = trailingAxes((*axes)[0], rank);
  auto xs = castTo(n, *x, computeType);
  auto mean = failed(xs) ? xs : reduce(n, *xs, ReduceKind::mean, over, true);
  auto d = failed(mean) ? mean : binary<SubOp>(n, *xs, *mean);
  auto sq = failed(d) ? d : binary<MulOp>(n, *d, *d);
  auto var = failed(sq) ? sq : reduce(n, *sq, ReduceKind::mean, over, true);
  auto ve = failed(var) ? var : binary<AddOp>(n, *var, n.constScalar(computeType, *epsilon));
  auto inv = failed(ve) ? ve : unary<RsqrtOp>(n, *ve);
  auto normed = failed(inv) ? inv : binary<MulOp>(n, *d, *inv);
  auto s = failed(normed) ? normed : castTo(n, *scale, computeType);
  auto y = failed(s) ? s : binary<MulOp>(n, *normed, *s);
  if (failed(y))
    return failure();
  if (Value b = n.input(2)) {
    auto bc = castTo(n, b, computeType);
    y = failed(bc) ? bc : binary<AddOp>(n, *y, *bc);
  }
  auto out = failed(y) ? y : castTo(n, *y, elementTypeOf(*x));
  if (failed(out))
    return failure();
  return n.setResults({*out, *mean, *inv});
}

LogicalResult convertRMSNormalization(NodeImporter &n) {
  auto x = x0(n), scale = n.requiredInput(1);
  auto axis = n.intAttr("axis", -1);
  auto epsilon = n.floatAttr("epsilon", 1e-5f);
  auto stash = n.intAttr("stash_type", 1);
  if (failed(x) || failed(scale) || failed(axis) || failed(epsilon) || failed(stash))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  auto axes = normalizeAxes(n, {*axis}, rank);
  if (failed(axes))
    return failure();
  Type computeType = stashType(n, *x, *stash);
  // y = x / sqrt(mean(x^2) + eps) * scale
  Chain c(n);
  Value xs = c(castTo(n, *x, computeType));
  Value normed = c.ok ? rmsNormalize(n, c, xs, (*axes)[0], *epsilon).first : Value();
  Value s = c.ok ? c(castTo(n, *scale, computeType)) : Value();
  Value y = c.bin<MulOp>(normed, s);
  return c.done({c.ok ? c(castTo(n, y, elementTypeOf(*x))) : Value()});
}

LogicalResult convertLpNormalization(NodeImporter &n) {
  auto x = x0(n);
  auto axis = n.intAttr("axis", -1), p = n.intAttr("p", 2);
  if (failed(x) || failed(axis) || failed(p))
    return failure();
  if (*p != 1 && *p != 2)
    return n.error("p must be 1 or 2, not " + Twine(*p));
  auto axes = normalizeAxes(n, {*axis}, NodeImporter::typeOf(*x).getRank());
  if (failed(axes))
    return failure();
  FailureOr<Value> norm = failure();
  if (*p == 1) {
    auto a = unary<AbsOp>(n, *x);
    norm = failed(a) ? a : reduce(n, *a, ReduceKind::sum, *axes, true);
  } else {
    auto sq = binary<MulOp>(n, *x, *x);
    auto s = failed(sq) ? sq : reduce(n, *sq, ReduceKind::sum, *axes, true);
    norm = failed(s) ? s : unary<SqrtOp>(n, *s);
  }
  if (failed(norm))
    return failure();
  // A zero vector normalizes to zeros, not 0/0.
  Chain c(n);
  Value zero = c.k(*x, 0);
  return c.done({c.sel(c.cmp(CompareDirection::eq, *norm, zero), zero,
                       c.bin<DivOp>(*x, *norm))});
}

LogicalResult convertBatchNormalization(NodeImporter &n) {
  auto x = x0(n), scale = n.requiredInput(1), bias = n.requiredInput(2),
       mean = n.requiredInput(3), var = n.requiredInput(4);
  auto epsilon = n.floatAttr("epsilon", 1e-5f);
  auto training = n.intAttr("training_mode", 0);
  if (failed(x) || failed(scale) || failed(bias) || failed(mean) || failed(var) ||
      failed(epsilon) || failed(training))
    return failure();
  if (*training)
    return n.unsupported("training-mode BatchNormalization");
  if (n.version() < 7 && n.hasAttr("is_test")) {
    auto isTest = n.intAttr("is_test");
    if (failed(isTest))
      return failure();
    if (!*isTest)
      return n.unsupported("training-mode BatchNormalization");
  }
  for (int i = 1; i < n.proto().output_size(); ++i)
    if (!n.proto().output(i).empty())
      return n.unsupported("BatchNormalization's running statistics outputs (training)");
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  // y = (x - mean) * (scale / sqrt(var + eps)) + bias, parameters per channel.
  auto s = perChannel(n, *scale, rank), b = perChannel(n, *bias, rank),
       m = perChannel(n, *mean, rank), v = perChannel(n, *var, rank);
  if (failed(s) || failed(b) || failed(m) || failed(v))
    return failure();
  auto ve = binary<AddOp>(n, *v, scalarLike(n, *v, *epsilon));
  auto inv = failed(ve) ? ve : unary<RsqrtOp>(n, *ve);
  auto factor = failed(inv) ? inv : binary<MulOp>(n, *s, *inv);
  auto centered = failed(factor) ? factor : binary<SubOp>(n, *x, *m);
  auto scaled = failed(centered) ? centered : binary<MulOp>(n, *centered, *factor);
  auto r = failed(scaled) ? scaled : binary<AddOp>(n, *scaled, *b);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertInstanceNormalization(NodeImporter &n) {
  auto x = x0(n), scale = n.requiredInput(1), bias = n.requiredInput(2);
  auto epsilon = n.floatAttr("epsilon", 1e-5f);
  if (failed(x) || failed(scale) || failed(bias) || failed(epsilon))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  auto s = perChannel(n, *scale, rank), b = perChannel(n, *bias, rank);
  if (failed(s) || failed(b))
    return failure();
  auto mean = reduceSpatial(n, *x, ReduceKind::mean);
  auto centered = failed(mean) ? mean : binary<SubOp>(n, *x, *mean);
  auto sq = failed(centered) ? centered : binary<MulOp>(n, *centered, *centered);
  auto var = failed(sq) ? sq : reduceSpatial(n, *sq, ReduceKind::mean);
  auto ve = failed(var) ? var : binary<AddOp>(n, *var, scalarLike(n, *x, *epsilon));
  auto inv = failed(ve) ? ve : unary<RsqrtOp>(n, *ve);
  auto normed = failed(inv) ? inv : binary<MulOp>(n, *centered, *inv);
  auto scaled = failed(normed) ? normed : binary<MulOp>(n, *normed, *s);
  auto r = failed(scaled) ? scaled : binary<AddOp>(n, *scaled, *b);
  return failed(r) ? failure() : n.setResults({*r});
}


LogicalResult convertConvTranspose(NodeImporter &n) {
  auto x = n.requiredInput(0), w = n.requiredInput(1);
  auto group = n.intAttr("group", 1);
  auto autoPad = n.stringAttr("auto_pad", std::string("NOTSET"));
  if (failed(x) || failed(w) || failed(group) || failed(autoPad))
    return failure();
  auto xt = NodeImporter::typeOf(*x), wt = NodeImporter::typeOf(*w);
  if (xt.getRank() < 3 || wt.getRank() != xt.getRank())
    return n.error("input and filter must have one rank >= 3 ([N, C, spatial...])");
  int64_t k = xt.getRank() - 2;
  auto strides = n.intsAttr("strides", SmallVector<int64_t>(k, 1));
  auto dilations = n.intsAttr("dilations", SmallVector<int64_t>(k, 1));
  auto pads = n.intsAttr("pads", SmallVector<int64_t>(2 * k, 0));
  auto outputPadding = n.intsAttr("output_padding", SmallVector<int64_t>(k, 0));
  auto outputShape = n.intsAttr("output_shape", SmallVector<int64_t>{});
  if (failed(strides) || failed(dilations) || failed(pads) || failed(outputPadding) ||
      failed(outputShape))
    return failure();
  if ((int64_t)strides->size() != k || (int64_t)dilations->size() != k ||
      (int64_t)pads->size() != 2 * k || (int64_t)outputPadding->size() != k)
    return n.error("strides, dilations, output_padding and pads must have one entry per "
                   "spatial dim (pads two)");
  // output_shape or SAME padding fix the pads from the wanted output size.
  bool same = *autoPad == "SAME_UPPER" || *autoPad == "SAME_LOWER";
  if (!outputShape->empty() || same) {
    SmallVector<int64_t> target = *outputShape;
    if ((int64_t)target.size() == k + 2)
      target.erase(target.begin(), target.begin() + 2);
    for (int64_t i = 0; i < k; ++i) {
      int64_t in = xt.getDimSize(i + 2), ker = wt.getDimSize(i + 2);
      if (ShapedType::isDynamic(ker))
        return n.unsupported("output_shape or SAME padding with a dynamic kernel size");
      // The full output is s * (in - 1) + output_padding + eff; SAME wants
      // s * in of it, which leaves output_padding + eff - s whatever in is.
      // An output_shape that is a number leaves a total that depends on in.
      if (ShapedType::isDynamic(in) && !target.empty())
        return n.unsupported("output_shape on dynamic spatial dims");
      int64_t eff = (ker - 1) * (*dilations)[i] + 1;
      int64_t total = target.empty() ? (*outputPadding)[i] + eff - (*strides)[i]
                                     : (*strides)[i] * (in - 1) + (*outputPadding)[i] + eff -
                                           target[i];
      if (total < 0) { // the wanted output is larger: the extra goes to output_padding
        (*outputPadding)[i] -= total;
        total = 0;
      }
      bool lower = *autoPad == "SAME_LOWER";
      (*pads)[i] = lower ? total - total / 2 : total / 2;
      (*pads)[i + k] = total - (*pads)[i];
    }
  } else if (*autoPad == "VALID") {
    pads->assign(2 * k, 0);
  } else if (*autoPad != "NOTSET") {
    return n.error("auto_pad '" + *autoPad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
  SmallVector<Value> operands = {*x, *w};
  if (Value b = n.input(2))
    operands.push_back(b);
  Builder b(n.context());
  auto r = n.create<ConvTransposeOp>(operands,
                                     {n.named("strides", b.getDenseI64ArrayAttr(*strides)),
                                      n.named("dilations", b.getDenseI64ArrayAttr(*dilations)),
                                      n.named("pads", b.getDenseI64ArrayAttr(*pads)),
                                      n.named("output_padding", b.getDenseI64ArrayAttr(*outputPadding)),
                                      n.named("group", b.getI64IntegerAttr(*group))});
  return failed(r) ? failure() : n.setResults({*r});
}

} // namespace kiln::onnx_import
