//===- Shape.cpp - ONNX shape and data-movement ops onto kiln -------------===//
//
// Shape tensors are built from per-dim pieces: a dim whose size is known (static or
// symbolic) is a constant; an unknown one is gathered from shape_of at run time.
// Folding collapses the pieces back into one (symbolic) constant whenever it can,
// so a reshape built this way gets a symbolic result type.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {
constexpr int64_t kToEnd = INT64_MAX;

FailureOr<Value> x0(NodeImporter &n) { return n.requiredInput(0); }

FailureOr<Value> reshapeWith(NodeImporter &n, Value x, Value shape) {
  return n.create<ReshapeOp>({x, shape});
}

/// Axes from an attribute (older versions) or a constant input (newer ones).
FailureOr<std::optional<SmallVector<int64_t>>> axesFrom(NodeImporter &n, int64_t inputSince,
                                                        size_t inputIndex) {
  if (n.version() >= inputSince) {
    if (!n.input(inputIndex))
      return std::optional<SmallVector<int64_t>>();
    auto axes = n.constantInts(inputIndex, "axes");
    if (failed(axes))
      return failure();
    return std::optional<SmallVector<int64_t>>(*axes);
  }
  if (!n.hasAttr("axes"))
    return std::optional<SmallVector<int64_t>>();
  auto axes = n.intsAttr("axes");
  if (failed(axes))
    return failure();
  return std::optional<SmallVector<int64_t>>(*axes);
}
} // namespace

LogicalResult convertConstant(NodeImporter &n) {
  Builder b(n.context());
  Attribute value;
  if (n.hasAttr("value")) {
    auto t = n.tensorAttr("value");
    if (failed(t))
      return failure();
    value = *t;
  } else if (n.hasAttr("value_float")) {
    auto f = n.floatAttr("value_float");
    if (failed(f))
      return failure();
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()), *f);
  } else if (n.hasAttr("value_floats")) {
    auto f = n.floatsAttr("value_floats");
    if (failed(f))
      return failure();
    value = DenseElementsAttr::get(RankedTensorType::get({(int64_t)f->size()}, b.getF32Type()),
                                   ArrayRef<float>(*f));
  } else if (n.hasAttr("value_int")) {
    auto i = n.intAttr("value_int");
    if (failed(i))
      return failure();
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()), *i);
  } else if (n.hasAttr("value_ints")) {
    auto i = n.intsAttr("value_ints");
    if (failed(i))
      return failure();
    value = DenseElementsAttr::get(RankedTensorType::get({(int64_t)i->size()}, b.getI64Type()),
                                   ArrayRef<int64_t>(*i));
  } else if (n.hasAttr("sparse_value")) {
    return n.unsupported("sparse constants");
  } else if (n.hasAttr("value_string") || n.hasAttr("value_strings")) {
    return n.unsupported("string tensors are not supported");
  } else {
    return n.error("has none of the value attributes");
  }
  Value c = ConstantOp::create(n.builder(), n.loc(), cast<ElementsAttr>(value));
  return n.setResults({c});
}

LogicalResult convertConstantOfShape(NodeImporter &n) {
  auto shape = n.requiredInput(0);
  if (failed(shape))
    return failure();
  Value fill;
  if (n.hasAttr("value")) {
    auto t = n.tensorAttr("value");
    if (failed(t))
      return failure();
    auto dense = dyn_cast<DenseElementsAttr>(*t);
    if (!dense || dense.getNumElements() != 1)
      return n.error("value must hold exactly one element");
    fill = ConstantOp::create(n.builder(), 
        n.loc(), cast<ElementsAttr>(dense.reshape(RankedTensorType::get({}, dense.getElementType()))));
  } else {
    fill = n.constScalar(n.builder().getF32Type(), 0.0);
  }
  auto r = n.create<BroadcastToOp>({fill, *shape});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertShape(NodeImporter &n) {
  auto x = x0(n);
  auto start = n.intAttr("start", 0), end = n.intAttr("end", kToEnd);
  if (failed(x) || failed(start) || failed(end))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  auto clampPos = [&](int64_t p) {
    if (p < 0)
      p += rank;
    return std::clamp<int64_t>(p, 0, rank);
  };
  int64_t s = clampPos(*start), e = clampPos(*end);
  auto shape = n.create<ShapeOfOp>({*x});
  if (failed(shape))
    return failure();
  if (s == 0 && e == rank)
    return n.setResults({*shape});
  auto r = n.create<SliceOp>({*shape, n.constI64({s}), n.constI64({std::max(s, e)}),
                              n.constI64({1})});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertSize(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  auto count = dimProduct(n, *x, 0, rank);
  if (failed(count))
    return failure();
  auto r = reshapeWith(n, *count, n.constI64({}));
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertReshape(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  auto allowZero = n.intAttr("allowzero", 0);
  if (failed(allowZero))
    return failure();
  Value shape;
  if (n.version() < 5) {
    auto dims = n.intsAttr("shape");
    if (failed(dims))
      return failure();
    shape = n.constI64(*dims);
  } else {
    auto s = n.requiredInput(1);
    if (failed(s))
      return failure();
    shape = *s;
  }
  auto shapeType = NodeImporter::typeOf(shape);
  if (shapeType.getRank() != 1 || shapeType.isDynamicDim(0))
    return n.unsupported("a reshape target whose length is not known at compile time");
  if (shapeType.getDimSize(0) > kMaxRank)
    return n.error("the reshape target has " + Twine(shapeType.getDimSize(0)) +
                   " entries; kiln supports tensors of rank up to " + Twine(kMaxRank));
  // ONNX's 0 copies the input's dim (unless allowzero): resolve it now where the
  // target is known, and with a select at run time where it is not.
  if (!*allowZero) {
    int64_t length = shapeType.getDimSize(0);
    if (auto known = getKnownElements(shape)) {
      SymShape dims = getSymShape(x->getType());
      bool changed = false;
      for (auto [i, d] : llvm::enumerate(*known)) {
        if (getConstantDimValue(d) == 0) {
          if ((int64_t)i >= (int64_t)dims.size())
            return n.error("shape entry " + Twine(i) + " is 0 but the input has rank " +
                           Twine(dims.size()));
          d = dims[i];
          changed = true;
        }
      }
      if (changed) {
        bool allKnown = llvm::all_of(*known, [](DimExpr d) { return (bool)d; });
        if (allKnown) {
          shape = shapeConstant(n, *known);
        } else {
          SmallVector<Value> pieces;
          for (auto [i, d] : llvm::enumerate(*known)) {
            auto p = d ? FailureOr<Value>(shapeConstant(n, {d})) : dimPiece(n, *x, i);
            if (failed(p))
              return failure();
            pieces.push_back(*p);
          }
          auto c = concatPieces(n, pieces);
          if (failed(c))
            return failure();
          shape = *c;
        }
      }
    } else {
      int64_t rank = NodeImporter::typeOf(*x).getRank();
      SmallVector<Value> pieces;
      for (int64_t i = 0; i < length; ++i) {
        auto p = i < rank ? dimPiece(n, *x, i) : FailureOr<Value>(n.constI64({0}));
        if (failed(p))
          return failure();
        pieces.push_back(*p);
      }
      auto inDims = concatPieces(n, pieces);
      auto isZero = failed(inDims) ? FailureOr<Value>(failure())
                                   : compare(n, CompareDirection::eq, shape, n.constI64({0}, true));
      auto picked = failed(isZero) ? FailureOr<Value>(failure()) : select(n, *isZero, *inDims, shape);
      if (failed(picked))
        return failure();
      shape = *picked;
    }
  }
  auto r = reshapeWith(n, *x, shape);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertFlatten(NodeImporter &n) {
  auto x = x0(n);
  auto axis = n.intAttr("axis", 1);
  if (failed(x) || failed(axis))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (a < 0 || a > rank)
    return n.error("axis " + Twine(*axis) + " is out of range for rank " + Twine(rank));
  auto outer = dimProduct(n, *x, 0, a), inner = dimProduct(n, *x, a, rank);
  if (failed(outer) || failed(inner))
    return failure();
  auto shape = concatPieces(n, {*outer, *inner});
  auto r = failed(shape) ? FailureOr<Value>(failure()) : reshapeWith(n, *x, *shape);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertSqueeze(NodeImporter &n) {
  auto x = x0(n);
  auto axesOr = axesFrom(n, 13, 1);
  if (failed(x) || failed(axesOr))
    return failure();
  SymShape dims = getSymShape(x->getType());
  int64_t rank = dims.size();
  SmallVector<int64_t> axes;
  if (*axesOr) {
    auto normalized = normalizeAxes(n, **axesOr, rank);
    if (failed(normalized))
      return failure();
    axes = *normalized;
    for (int64_t a : axes)
      if (auto c = getConstantDimValue(dims[a]); c && *c != 1)
        return n.error("cannot squeeze dim " + Twine(a) + " of size " + Twine(*c));
  } else {
    for (int64_t i = 0; i < rank; ++i) {
      auto c = getConstantDimValue(dims[i]);
      if (!c)
        return n.unsupported("squeezing all unit dims of a tensor with dynamic dims "
                             "(give axes)");
      if (*c == 1)
        axes.push_back(i);
    }
  }
  SmallVector<Value> pieces;
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(axes, i))
      continue;
    auto p = dimPiece(n, *x, i);
    if (failed(p))
      return failure();
    pieces.push_back(*p);
  }
  auto shape = concatPieces(n, pieces);
  auto r = failed(shape) ? FailureOr<Value>(failure()) : reshapeWith(n, *x, *shape);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertUnsqueeze(NodeImporter &n) {
  auto x = x0(n);
  auto axesOr = axesFrom(n, 13, 1);
  if (failed(x) || failed(axesOr))
    return failure();
  if (!*axesOr)
    return n.error("missing axes");
  int64_t rank = NodeImporter::typeOf(*x).getRank() + (*axesOr)->size();
  auto axes = normalizeAxes(n, **axesOr, rank);
  if (failed(axes))
    return failure();
  llvm::sort(*axes);
  if (std::adjacent_find(axes->begin(), axes->end()) != axes->end())
    return n.error("axes repeat an axis");
  auto r = insertUnitDims(n, *x, *axes);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertTranspose(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  SmallVector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  auto perm = n.intsAttr("perm", reversed);
  if (failed(perm))
    return failure();
  auto r = n.create<TransposeOp>(
      {*x}, {n.named("permutation", n.builder().getDenseI64ArrayAttr(*perm))});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertExpand(NodeImporter &n) {
  auto x = x0(n), shape = n.requiredInput(1);
  if (failed(x) || failed(shape))
    return failure();
  auto r = n.create<BroadcastToOp>({*x, *shape});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertConcat(NodeImporter &n) {
  auto axis = n.intAttr("axis", n.version() < 4 ? std::optional<int64_t>(1) : std::nullopt);
  if (failed(axis))
    return failure();
  auto inputs = n.requiredInputs(0, n.numInputs());
  if (failed(inputs))
    return failure();
  auto r = n.create<ConcatOp>(*inputs, {n.named("axis", n.builder().getI64IntegerAttr(*axis))});
  return failed(r) ? failure() : n.setResults({*r});
}

namespace {
/// Full-rank starts/ends/steps that slice dim `axis` of `x` to [start, end).
FailureOr<Value> sliceAxis(NodeImporter &n, Value x, int64_t axis, DimExpr start, DimExpr end) {
  int64_t rank = NodeImporter::typeOf(x).getRank();
  MLIRContext *ctx = n.context();
  SymShape starts(rank, getConstantDim(ctx, 0)), ends(rank, getConstantDim(ctx, kToEnd));
  starts[axis] = start;
  ends[axis] = end;
  return n.create<SliceOp>({x, shapeConstant(n, starts), shapeConstant(n, ends),
                            n.constI64(SmallVector<int64_t>(rank, 1))});
}
} // namespace

namespace {
/// Split-18's even split (pieces of ceil(d / outputs), the last what
/// remains) of a dim d the model leaves unknown here: a reshape whose target
/// is computed (ShuffleNet's channel shuffle, torch's `(h - 1) // 8`) gets
/// its dims only when kiln-infer-shapes folds that target. The bounds are
/// computed from x's shape, so the slices have dims once it does, and read
/// their lengths on the device where it does not. Slice clamps an end past
/// the dim (a last piece shorter than the others).
LogicalResult splitUnknownDim(NodeImporter &n, Value x, int64_t axis, int64_t outputs) {
  int64_t rank = NodeImporter::typeOf(x).getRank();
  auto d = dimPiece(n, x, axis);
  auto rounded = failed(d) ? d : binary<AddOp>(n, *d, n.constI64({outputs - 1}));
  // d >= 0, so the truncating division is ceil(d / outputs).
  auto piece = failed(rounded) ? rounded : binary<DivOp>(n, *rounded, n.constI64({outputs}));
  if (failed(piece))
    return failure();
  // starts/ends with the axis's entry computed: a concat the folders resolve
  // once the entry is known.
  auto at = [&](int64_t other, Value entry) {
    SmallVector<Value> pieces;
    if (axis > 0)
      pieces.push_back(n.constI64(SmallVector<int64_t>(axis, other)));
    pieces.push_back(entry);
    if (axis + 1 < rank)
      pieces.push_back(n.constI64(SmallVector<int64_t>(rank - axis - 1, other)));
    return concatPieces(n, pieces);
  };
  Value ends = n.constI64(SmallVector<int64_t>(rank, kToEnd));
  SmallVector<Value> results;
  for (int64_t i = 0; i < outputs; ++i) {
    auto start = binary<MulOp>(n, *piece, n.constI64({i}));
    auto startVec = failed(start) ? start : at(0, *start);
    FailureOr<Value> endVec = ends;
    if (i + 1 < outputs) {
      auto end = binary<MulOp>(n, *piece, n.constI64({i + 1}));
      endVec = failed(end) ? end : at(kToEnd, *end);
    }
    if (failed(startVec) || failed(endVec))
      return failure();
    auto r = n.create<SliceOp>({x, *startVec, *endVec, n.constI64(SmallVector<int64_t>(rank, 1))});
    if (failed(r))
      return failure();
    results.push_back(*r);
  }
  return n.setResults(results);
}
} // namespace

LogicalResult convertSplit(NodeImporter &n) {
  auto x = x0(n);
  auto axisAttr = n.intAttr("axis", 0);
  if (failed(x) || failed(axisAttr))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  auto axes = normalizeAxes(n, {*axisAttr}, rank);
  if (failed(axes))
    return failure();
  int64_t axis = (*axes)[0];
  DimExpr dim = getSymShape(x->getType())[axis];
  int64_t outputs = n.proto().output_size();
  if (outputs < 1)
    return n.error("has no outputs");
  SmallVector<DimExpr> sizes;
  std::optional<SmallVector<int64_t>> explicitSizes;
  MLIRContext *ctx = n.context();
  // Sizes computed from dims (a model splitting off the rotated half of a
  // dynamic head) fold to a symbolic shape vector: its dims are the sizes.
  auto symbolic = n.version() >= 13 && n.input(1)
                      ? n.input(1).getDefiningOp<SymbolicConstantOp>()
                      : SymbolicConstantOp();
  if (symbolic) {
    ArrayRef<DimExpr> dims = symbolic.getValue().getDims();
    if ((int64_t)dims.size() != outputs)
      return n.error("split has " + Twine(dims.size()) + " sizes for " + Twine(outputs) +
                     " outputs");
    sizes.assign(dims.begin(), dims.end());
  } else if (n.version() >= 13 && n.input(1)) {
    auto s = n.constantInts(1, "split");
    if (failed(s))
      return failure();
    explicitSizes = *s;
  } else if (n.version() < 13 && n.hasAttr("split")) {
    auto s = n.intsAttr("split");
    if (failed(s))
      return failure();
    explicitSizes = *s;
  }
  if (!sizes.empty()) {
    // Symbolic sizes: the pieces must cover the dim, which a guard checks.
  } else if (explicitSizes) {
    if ((int64_t)explicitSizes->size() != outputs)
      return n.error("split has " + Twine(explicitSizes->size()) + " sizes for " +
                     Twine(outputs) + " outputs");
    for (int64_t s : *explicitSizes) {
      if (s < 0)
        return n.error("split sizes must be non-negative");
      sizes.push_back(getConstantDim(ctx, s));
    }
  } else {
    if (n.version() >= 18) {
      auto num = n.intAttr("num_outputs", outputs);
      if (failed(num))
        return failure();
      if (*num != outputs)
        return n.error("num_outputs is " + Twine(*num) + " but the node has " +
                       Twine(outputs) + " outputs");
    }
    if (!dim && n.version() < 18)
      return n.unsupported("an even split of a dim of unknown size before opset 18");
    if (!dim)
      return splitUnknownDim(n, *x, axis, outputs);
    // Even split: every piece ceil(dim / outputs), the last one what remains.
    DimExpr piece = ceilDivDims(dim, getConstantDim(ctx, outputs));
    if (auto c = getConstantDimValue(dim); c && n.version() < 18 && *c % outputs != 0)
      return n.error("dim " + Twine(axis) + " (" + Twine(*c) + ") does not split evenly into " +
                     Twine(outputs));
    for (int64_t i = 0; i + 1 < outputs; ++i)
      sizes.push_back(piece);
    sizes.push_back(subDims(dim, mulDims(piece, getConstantDim(ctx, outputs - 1))));
  }
  SmallVector<Value> results;
  DimExpr offset = getConstantDim(ctx, 0);
  for (DimExpr size : sizes) {
    DimExpr end = addDims(offset, size);
    if (!offset || !end)
      return n.unsupported("split offsets that kiln cannot express");
    auto r = sliceAxis(n, *x, axis, offset, end);
    if (failed(r))
      return failure();
    results.push_back(*r);
    offset = end;
  }
  return n.setResults(results);
}

LogicalResult convertSlice(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  SmallVector<int64_t> axes;
  Value starts, ends, steps;
  if (n.version() < 10) {
    auto s = n.intsAttr("starts"), e = n.intsAttr("ends");
    SmallVector<int64_t> all;
    for (int64_t i = 0; i < rank; ++i)
      all.push_back(i);
    auto a = n.intsAttr("axes", all);
    if (failed(s) || failed(e) || failed(a))
      return failure();
    starts = n.constI64(*s);
    ends = n.constI64(*e);
    steps = n.constI64(SmallVector<int64_t>(s->size(), 1));
    axes = *a;
  } else {
    auto s = n.requiredInput(1), e = n.requiredInput(2);
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (NodeImporter::typeOf(starts).getRank() != 1)
      return n.error("starts must be a 1-D tensor");
    int64_t count = NodeImporter::typeOf(starts).getDimSize(0);
    if (ShapedType::isDynamic(count))
      return n.unsupported("starts of unknown length");
    if (n.input(3)) {
      auto a = n.constantInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    } else {
      for (int64_t i = 0; i < count; ++i)
        axes.push_back(i);
    }
    steps = n.input(4) ? n.input(4) : n.constI64(SmallVector<int64_t>(count, 1));
  }
  auto normalized = normalizeAxes(n, axes, rank);
  if (failed(normalized))
    return failure();
  for (Value v : {starts, ends, steps}) {
    auto t = NodeImporter::typeOf(v);
    if (t.getRank() != 1 || t.getDimSize(0) != (int64_t)axes.size())
      return n.error("starts, ends, steps and axes must have one entry per sliced axis");
  }
  // Scatter the per-axis entries into full-rank vectors (defaults elsewhere).
  auto fullRank = [&](Value v, int64_t dflt) -> FailureOr<Value> {
    Value asI64 = v;
    if (elementTypeOf(v) != n.builder().getI64Type()) {
      auto c = castTo(n, v, n.builder().getI64Type());
      if (failed(c))
        return failure();
      asI64 = *c;
    }
    SmallVector<Value> pieces;
    for (int64_t d = 0; d < rank; ++d) {
      auto it = llvm::find(*normalized, d);
      if (it == normalized->end()) {
        pieces.push_back(n.constI64({dflt}));
        continue;
      }
      auto g = n.create<GatherOp>({asI64, n.constI64({it - normalized->begin()})},
                                  {n.named("axis", n.builder().getI64IntegerAttr(0))});
      if (failed(g))
        return failure();
      pieces.push_back(*g);
    }
    return concatPieces(n, pieces);
  };
  auto fs = fullRank(starts, 0), fe = fullRank(ends, kToEnd), fk = fullRank(steps, 1);
  if (failed(fs) || failed(fe) || failed(fk))
    return failure();
  auto r = n.create<SliceOp>({*x, *fs, *fe, *fk});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertGather(NodeImporter &n) {
  auto data = x0(n), indices = n.requiredInput(1);
  auto axis = n.intAttr("axis", 0);
  if (failed(data) || failed(indices) || failed(axis))
    return failure();
  auto r = n.create<GatherOp>({*data, *indices},
                              {n.named("axis", n.builder().getI64IntegerAttr(*axis))});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertPad(NodeImporter &n) {
  auto x = x0(n);
  auto modeName = n.stringAttr("mode", std::string("constant"));
  if (failed(x) || failed(modeName))
    return failure();
  // The pad modes' names are ONNX's (kiln/ops/OpEnums.def).
  std::optional<PadMode> mode = symbolizePadMode(*modeName);
  if (!mode)
    return n.error("mode '" + *modeName + "' is not constant, reflect, edge or wrap");
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  Type element = elementTypeOf(*x);
  Value pads, value;
  if (n.version() < 11) {
    auto p = n.intsAttr(n.version() < 2 ? "paddings" : "pads");
    auto v = n.floatAttr("value", 0.0f);
    if (failed(p) || failed(v))
      return failure();
    pads = n.constI64(*p);
    value = n.constScalar(element, *v);
  } else {
    auto p = n.requiredInput(1);
    if (failed(p))
      return failure();
    pads = *p;
    if (Value v = n.input(2)) {
      auto r = reshapeWith(n, v, n.constI64({}));
      if (failed(r))
        return failure();
      value = *r;
    } else {
      value = n.constScalar(element, 0.0);
    }
    if (Value axesValue = n.input(3)) {
      auto axes = n.constantInts(3, "axes");
      if (failed(axes))
        return failure();
      auto normalized = normalizeAxes(n, *axes, rank);
      if (failed(normalized))
        return failure();
      int64_t k = normalized->size();
      SmallVector<Value> pieces(2 * rank);
      for (int64_t d = 0; d < rank; ++d) {
        auto it = llvm::find(*normalized, d);
        for (int side = 0; side < 2; ++side) {
          if (it == normalized->end()) {
            pieces[side * rank + d] = n.constI64({0});
            continue;
          }
          auto g = n.create<GatherOp>(
              {pads, n.constI64({side * k + (it - normalized->begin())})},
              {n.named("axis", n.builder().getI64IntegerAttr(0))});
          if (failed(g))
            return failure();
          pieces[side * rank + d] = *g;
        }
      }
      auto full = concatPieces(n, pieces);
      if (failed(full))
        return failure();
      pads = *full;
    }
  }
  auto r = n.create<PadOp>({*x, pads, value},
                           {n.named("mode", PadModeAttr::get(n.context(), *mode))});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertRange(NodeImporter &n) {
  auto start = x0(n), limit = n.requiredInput(1), delta = n.requiredInput(2);
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  auto r = n.create<RangeOp>({*start, *limit, *delta});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertTile(NodeImporter &n) {
  auto x = x0(n), repeats = n.requiredInput(1);
  if (failed(x) || failed(repeats))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  auto rt = NodeImporter::typeOf(*repeats);
  if (rt.getRank() != 1 || rt.getDimSize(0) != rank)
    return n.error("repeats must have one entry per input dim");
  // [d0, d1] -> [1, d0, 1, d1] -> broadcast [r0, d0, r1, d1] -> [r0 * d0, r1 * d1].
  SmallVector<Value> unit, wide;
  for (int64_t i = 0; i < rank; ++i) {
    auto d = dimPiece(n, *x, i);
    auto r = n.create<GatherOp>({*repeats, n.constI64({i})},
                                {n.named("axis", n.builder().getI64IntegerAttr(0))});
    if (failed(d) || failed(r))
      return failure();
    unit.append({n.constI64({1}), *d});
    wide.append({*r, *d});
  }
  auto unitShape = concatPieces(n, unit), wideShape = concatPieces(n, wide);
  auto shape = failed(unitShape) ? FailureOr<Value>(failure()) : n.create<ShapeOfOp>({*x});
  if (failed(wideShape) || failed(shape))
    return failure();
  auto outShape = n.create<MulOp>({*repeats, *shape});
  auto spread = reshapeWith(n, *x, *unitShape);
  if (failed(outShape) || failed(spread))
    return failure();
  auto b = n.create<BroadcastToOp>({*spread, *wideShape});
  auto r = failed(b) ? FailureOr<Value>(failure()) : reshapeWith(n, *b, *outShape);
  return failed(r) ? failure() : n.setResults({*r});
}

namespace {
/// reshape -> transpose -> reshape with shapes given as dims of x.
FailureOr<Value> shuffle(NodeImporter &n, Value x, ArrayRef<DimExpr> first,
                         ArrayRef<int64_t> perm, ArrayRef<DimExpr> last) {
  auto a = reshapeTo(n, x, first);
  if (failed(a))
    return failure();
  auto t = n.create<TransposeOp>({*a},
                                 {n.named("permutation", n.builder().getDenseI64ArrayAttr(perm))});
  if (failed(t))
    return failure();
  return reshapeTo(n, *t, last);
}
} // namespace

LogicalResult convertDepthToSpace(NodeImporter &n) {
  auto x = x0(n);
  auto blocksize = n.intAttr("blocksize");
  auto mode = n.stringAttr("mode", std::string("DCR"));
  if (failed(x) || failed(blocksize) || failed(mode))
    return failure();
  SymShape d = getSymShape(x->getType());
  if (d.size() != 4)
    return n.error("input must have rank 4");
  if (*blocksize < 1)
    return n.error("blocksize must be >= 1");
  DimExpr b = getConstantDim(n.context(), *blocksize);
  DimExpr c = floorDivDims(d[1], mulDims(b, b));
  FailureOr<Value> r = failure();
  SmallVector<DimExpr> last = {d[0], c, mulDims(d[2], b), mulDims(d[3], b)};
  if (*mode == "DCR")
    r = shuffle(n, *x, {d[0], b, b, c, d[2], d[3]}, {0, 3, 4, 1, 5, 2}, last);
  else if (*mode == "CRD")
    r = shuffle(n, *x, {d[0], c, b, b, d[2], d[3]}, {0, 1, 4, 2, 5, 3}, last);
  else
    return n.error("mode must be DCR or CRD, not '" + *mode + "'");
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertSpaceToDepth(NodeImporter &n) {
  auto x = x0(n);
  auto blocksize = n.intAttr("blocksize");
  if (failed(x) || failed(blocksize))
    return failure();
  SymShape d = getSymShape(x->getType());
  if (d.size() != 4)
    return n.error("input must have rank 4");
  if (*blocksize < 1)
    return n.error("blocksize must be >= 1");
  DimExpr b = getConstantDim(n.context(), *blocksize);
  DimExpr h = floorDivDims(d[2], b), w = floorDivDims(d[3], b);
  auto r = shuffle(n, *x, {d[0], d[1], h, b, w, b}, {0, 3, 5, 1, 2, 4},
                   {d[0], mulDims(d[1], mulDims(b, b)), h, w});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertDropout(NodeImporter &n) {
  auto x = x0(n);
  if (failed(x))
    return failure();
  if (n.version() >= 12 && n.input(2)) {
    auto training = n.maybeConstantInts(n.input(2));
    // Training mode drops each element with probability `ratio` (0.5 when
    // absent): random, except at ratio 0, where every element is kept and
    // scaled by 1 / (1 - 0), the identity with an all-true mask whatever the
    // seed (torch exports Dropout(p=0) in train mode this way: Swin).
    std::optional<SmallVector<double>> ratio =
        n.input(1) ? n.maybeConstantFloats(n.input(1)) : SmallVector<double>{0.5};
    bool keepsAll = ratio && ratio->size() == 1 && (*ratio)[0] == 0.0;
    if (!keepsAll && (!training || (!training->empty() && (*training)[0] != 0)))
      return n.unsupported("training-mode dropout with a ratio other than 0 (it is random)");
  }
  SmallVector<Value> results = {*x};
  if (n.proto().output_size() > 1 && !n.proto().output(1).empty()) {
    auto shape = n.create<ShapeOfOp>({*x});
    if (failed(shape))
      return failure();
    // The mask is bool from opset 10; before, it has the input's type (all 1s).
    Type maskType = n.version() >= 10 ? n.builder().getI1Type()
                                       : NodeImporter::typeOf(*x).getElementType();
    auto mask = n.create<BroadcastToOp>({n.constScalar(maskType, 1), *shape});
    if (failed(mask))
      return failure();
    results.push_back(*mask);
  }
  return n.setResults(results);
}

} // namespace kiln::onnx_import
