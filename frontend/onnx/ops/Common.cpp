//===- Common.cpp - helpers shared by the ONNX op converters --------------===//

#include "frontend/onnx/ops/Converters.h"
#include "ir/Kiln/ShapeInference.h"


using namespace mlir;

namespace kiln::onnx_import {

Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

FailureOr<Value> compare(NodeImporter &n, CompareDirection direction, Value a, Value b) {
  return n.create<CompareOp>(
      {a, b}, {n.named("direction", CompareDirectionAttr::get(n.context(), direction))});
}

FailureOr<Value> select(NodeImporter &n, Value c, Value a, Value b) {
  return n.create<SelectOp>({c, a, b});
}

FailureOr<Value> castTo(NodeImporter &n, Value v, Type element) {
  if (!v) // a failed earlier step (it reported why)
    return failure();
  if (elementTypeOf(v) == element)
    return v;
  return n.create<CastOp>({v}, {n.named("to", TypeAttr::get(element))});
}

Value scalarLike(NodeImporter &n, Value like, double value) {
  return n.constScalar(elementTypeOf(like), value);
}

Value shapeConstant(NodeImporter &n, ArrayRef<DimExpr> dims) {
  SmallVector<int64_t> constants;
  for (DimExpr d : dims) {
    auto c = getConstantDimValue(d);
    if (!c)
      return SymbolicConstantOp::create(n.builder(), 
          n.loc(), RankedTensorType::get({(int64_t)dims.size()}, n.builder().getI64Type()),
          DimsAttr::getCanonical(n.context(), dims));
    constants.push_back(*c);
  }
  return n.constI64(constants);
}

FailureOr<Value> reshapeTo(NodeImporter &n, Value v, ArrayRef<DimExpr> dims) {
  for (DimExpr d : dims)
    if (!d)
      return n.unsupported("a reshape whose target has an unknown dim");
  return n.create<ReshapeOp>({v, shapeConstant(n, dims)});
}

namespace {
LogicalResult requireDims(NodeImporter &n, ShapeAssumption::Kind kind, DimExpr a, DimExpr b,
                          const std::string &what) {
  if (!a || !b)
    return success();
  std::optional<bool> holds = decideShapeAssumption(kind, a, b);
  if (holds == std::optional<bool>(false))
    return n.error(what + " (" + dimToString(a) + " against " + dimToString(b) + ")");
  if (!holds)
    GuardOp::create(n.builder(), n.loc(), static_cast<GuardKind>(kind),
                    DimsAttr::getCanonical(n.context(), {a, b}),
                    n.builder().getStringAttr(n.opType().str() + " at '" +
                                              nodeNameOf(n.loc()) + "': " + what));
  return success();
}
} // namespace

LogicalResult requireEqualDims(NodeImporter &n, DimExpr a, DimExpr b,
                               const std::string &what) {
  return requireDims(n, ShapeAssumption::Kind::Equal, a, b, what);
}

FailureOr<Value> requireDimsOf(NodeImporter &n, Value v, ArrayRef<DimExpr> want,
                               const std::string &what) {
  SymShape own = getSymShape(NodeImporter::typeOf(v)), merged = own;
  if (own.size() != want.size())
    return n.error(what + " (rank " + Twine(own.size()) + ", not " + Twine(want.size()) + ")");
  for (auto [d, w] : llvm::enumerate(want)) {
    if (!w)
      continue;
    if (failed(requireEqualDims(n, own[d], w, what)))
      return failure();
    merged[d] = w;
  }
  if (merged == own || llvm::any_of(merged, [](DimExpr d) { return !d; }))
    return v;
  return reshapeTo(n, v, merged);
}

LogicalResult requireOneOrEqualDims(NodeImporter &n, DimExpr a, DimExpr b,
                                    const std::string &what) {
  return requireDims(n, ShapeAssumption::Kind::EqualOrOne, a, b, what);
}

LogicalResult requireLessEqualDims(NodeImporter &n, DimExpr a, DimExpr b,
                                   const std::string &what) {
  return requireDims(n, ShapeAssumption::Kind::LessEqual, a, b, what);
}

FailureOr<SmallVector<int64_t>> normalizeAxes(NodeImporter &n, ArrayRef<int64_t> axes,
                                              int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return n.error("axis " + Twine(a) + " is out of range for rank " + Twine(rank));
    out.push_back(a < 0 ? a + rank : a);
  }
  return out;
}

/// A 1-element i64 tensor holding dim `i` of `x`.
FailureOr<Value> dimPiece(NodeImporter &n, Value x, int64_t i) {
  SymShape dims = getSymShape(x.getType());
  if (dims[i])
    return shapeConstant(n, {dims[i]});
  auto shape = n.create<ShapeOfOp>({x});
  if (failed(shape))
    return failure();
  return n.create<GatherOp>({*shape, n.constI64({i})},
                            {n.named("axis", n.builder().getI64IntegerAttr(0))});
}

/// The product of dims [begin, end) of `x` as a 1-element i64 tensor.
FailureOr<Value> dimProduct(NodeImporter &n, Value x, int64_t begin, int64_t end) {
  SymShape dims = getSymShape(x.getType());
  SymShape range(dims.begin() + begin, dims.begin() + end);
  DimExpr p = productOfDims(n.context(), range);
  if (p)
    return shapeConstant(n, {p});
  auto shape = n.create<ShapeOfOp>({x});
  if (failed(shape))
    return failure();
  auto part = n.create<SliceOp>({*shape, n.constI64({begin}), n.constI64({end}), n.constI64({1})});
  if (failed(part))
    return failure();
  return reduce(n, *part, ReduceKind::prod, {0}, /*keepDims=*/true);
}

/// Concatenates 1-D i64 pieces into one shape tensor.
FailureOr<Value> concatPieces(NodeImporter &n, ArrayRef<Value> pieces) {
  if (pieces.empty())
    return n.constI64({});
  if (pieces.size() == 1)
    return pieces.front();
  return n.create<ConcatOp>(pieces, {n.named("axis", n.builder().getI64IntegerAttr(0))});
}


/// Reshape `x` keeping its dims but inserting 1s at `ones` (sorted output positions).
FailureOr<Value> insertUnitDims(NodeImporter &n, Value x, ArrayRef<int64_t> ones) {
  int64_t rank = NodeImporter::typeOf(x).getRank() + ones.size();
  SmallVector<Value> pieces;
  int64_t src = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(ones, i)) {
      pieces.push_back(n.constI64({1}));
      continue;
    }
    auto p = dimPiece(n, x, src++);
    if (failed(p))
      return failure();
    pieces.push_back(*p);
  }
  auto shape = concatPieces(n, pieces);
  return failed(shape) ? FailureOr<Value>(failure()) : n.create<ReshapeOp>({x, *shape});
}

FailureOr<Value> reduce(NodeImporter &n, Value x, ReduceKind kind, ArrayRef<int64_t> axes,
                        bool keepDims) {
  return n.create<ReduceOp>({x}, {n.named("kind", ReduceKindAttr::get(n.context(), kind)),
                                  n.named("axes", n.builder().getDenseI64ArrayAttr(axes)),
                                  n.named("keep_dims", n.builder().getBoolAttr(keepDims))});
}

SmallVector<int64_t> allAxes(int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

FailureOr<ScatterReduction> scatterReduction(NodeImporter &n) {
  auto name = n.stringAttr("reduction", std::string("none"));
  if (failed(name))
    return failure();
  // The reductions' names are ONNX's (kiln/ops/OpEnums.def).
  std::optional<ScatterReduction> reduction = symbolizeScatterReduction(*name);
  if (!reduction)
    return n.error("reduction '" + *name + "' is not none, add, mul, max or min");
  return *reduction;
}

FailureOr<Value> iotaAlongAxis(NodeImporter &n, Value like, int64_t dim, int64_t axis,
                               int64_t rank) {
  auto size = dimPiece(n, like, dim);
  auto limit = failed(size) ? size : n.create<ReshapeOp>({*size, n.constI64({})});
  auto iota = failed(limit) ? limit
                            : n.create<RangeOp>({n.constI64({0}, true), *limit,
                                                 n.constI64({1}, true)});
  if (failed(iota))
    return failure();
  SmallVector<int64_t> ones;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis)
      ones.push_back(i);
  return insertUnitDims(n, *iota, ones);
}

Value withZeroRow(NodeImporter &n, Chain &c, Value v, int64_t axis) {
  if (!c.ok || !v)
    return {};
  SmallVector<Value> dims;
  for (int64_t d = 0; d < NodeImporter::typeOf(v).getRank() && c.ok; ++d)
    dims.push_back(d == axis ? n.constI64({1}) : c(dimPiece(n, v, d)));
  Value zeros = c.ok ? c(n.create<BroadcastToOp>({c.k(v, 0.0), c(concatPieces(n, dims))}))
                     : Value();
  return c.concat({v, zeros}, axis);
}

Type computeTypeOf(NodeImporter &n, Value x) {
  Type t = elementTypeOf(x);
  return t.getIntOrFloatBitWidth() < 32 ? Type(n.builder().getF32Type()) : t;
}

std::pair<Value, Value> rmsNormalize(NodeImporter &n, Chain &c, Value wide, int64_t axis,
                                     float epsilon) {
  int64_t rank = NodeImporter::typeOf(wide).getRank();
  SmallVector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a)
    axes.push_back(a);
  Value meanSquare =
      c.ok ? c(reduce(n, c.bin<MulOp>(wide, wide), ReduceKind::mean, axes, true)) : Value();
  Value inv = c.un<RsqrtOp>(c.bin<AddOp>(meanSquare, c.k(wide, epsilon)));
  return {c.bin<MulOp>(wide, inv), inv};
}

Value Chain::matmul(Value a, Value b) {
  return ok && a && b ? (*this)(n.create<MatmulOp>({a, b})) : Value();
}

Value Chain::transpose(Value v, ArrayRef<int64_t> perm) {
  if (!ok || !v)
    return {};
  return (*this)(n.create<TransposeOp>(
      {v}, {n.named("permutation", n.builder().getDenseI64ArrayAttr(perm))}));
}

Value Chain::slice(Value v, int64_t axis, int64_t start, int64_t end) {
  if (!ok || !v)
    return {};
  int64_t rank = NodeImporter::typeOf(v).getRank();
  SmallVector<int64_t> starts(rank, 0), ends(rank, INT64_MAX), steps(rank, 1);
  starts[axis] = start;
  ends[axis] = end;
  return (*this)(n.create<SliceOp>({v, n.constI64(starts), n.constI64(ends), n.constI64(steps)}));
}

Value Chain::concat(ArrayRef<Value> parts, int64_t axis) {
  if (!ok || llvm::any_of(parts, [](Value v) { return !v; }))
    return {};
  if (parts.size() == 1)
    return parts[0];
  return (*this)(
      n.create<ConcatOp>(parts, {n.named("axis", n.builder().getI64IntegerAttr(axis))}));
}

} // namespace kiln::onnx_import
