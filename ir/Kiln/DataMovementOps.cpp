//===- DataMovementOps.cpp - reshape, transpose, slice, gather, ... -------===//

#include "ir/Kiln/Folding.h"
#include "ir/Kiln/KernelTypes.h"
#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/StepBoundSymbols.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cstring>

using namespace mlir;

namespace kiln {

namespace {
/// The static length of a 1-D shape-like operand, or an error naming it.
FailureOr<int64_t> staticLength(std::optional<Location> location, StringRef opName,
                                Value v, StringRef what) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() != 1 || type.isDynamicDim(0))
    return emitShapeError(location, opName, what + " must be a 1-D tensor of static length");
  if (type.getDimSize(0) > 2 * kMaxRank)
    return emitShapeError(location, opName,
                          what + " has " + Twine(type.getDimSize(0)) +
                              " entries; kiln supports tensors of rank up to " +
                              Twine(kMaxRank));
  return type.getDimSize(0);
}

/// Known elements of `v`, or `length` unknowns. A shape built by concatenating
/// 1-D pieces (an importer's [gather(shape_of(x), 0), 1] for a unit dim of a
/// tensor whose dim is unknown) is known piece by piece: the 1 stays a 1.
SymShape knownOrUnknown(Value v, int64_t length) {
  if (auto known = getKnownElements(v); known && (int64_t)known->size() == length)
    return *known;
  if (auto concat = v.getDefiningOp<ConcatOp>();
      concat && (concat.getAxis() == 0 || concat.getAxis() == -1)) {
    SymShape pieces;
    for (Value piece : concat.getInputs()) {
      auto type = dyn_cast<RankedTensorType>(piece.getType());
      if (!type || type.getRank() != 1 || type.isDynamicDim(0))
        return SymShape(length);
      SymShape known = knownOrUnknown(piece, type.getDimSize(0));
      pieces.append(known.begin(), known.end());
    }
    if ((int64_t)pieces.size() == length)
      return pieces;
  }
  return SymShape(length);
}

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }
} // namespace

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> location,
                                          Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  FailureOr<int64_t> rank = staticLength(location, name, adaptor.getShape(), "shape");
  if (failed(rank))
    return failure();
  RankedTensorType input = tensorType(adaptor.getInput());
  SymShape target = knownOrUnknown(adaptor.getShape(), *rank);
  int inferredIndex = -1;
  for (auto [i, d] : llvm::enumerate(target)) {
    auto c = getConstantDimValue(d);
    if (!c)
      continue;
    if (*c == -1) {
      if (inferredIndex >= 0)
        return emitShapeError(location, name, "shape has more than one -1");
      inferredIndex = i;
    } else if (*c < 0) {
      return emitShapeError(location, name,
                            "shape entry " + Twine(i) + " is " + Twine(*c) +
                                "; entries must be >= 0 or -1");
    }
  }
  DimExpr inCount = productOfDims(context, getSymShape(input));
  SmallVector<DimExpr> others;
  for (auto [i, d] : llvm::enumerate(target))
    if ((int)i != inferredIndex)
      others.push_back(d);
  DimExpr outCount = productOfDims(context, others);
  auto inC = getConstantDimValue(inCount), outC = getConstantDimValue(outCount);
  if (inferredIndex >= 0) {
    if (inC && outC) {
      if (*outC == 0 ? *inC != 0 : *inC % *outC != 0)
        return emitShapeError(location, name,
                              "cannot infer the -1 dim: " + Twine(*inC) +
                                  " elements do not divide into " + Twine(*outC));
      target[inferredIndex] = getConstantDim(context, *outC == 0 ? 0 : *inC / *outC);
    } else if (outC && *outC == 0) {
      target[inferredIndex] = DimExpr();
    } else {
      std::optional<int64_t> k = constantQuotient(inCount, outCount);
      target[inferredIndex] = k ? getConstantDim(context, *k) : floorDivDims(inCount, outCount);
    }
  } else if (inC && outC && *inC != *outC) {
    return emitShapeError(location, name,
                          "input has " + Twine(*inC) + " elements but shape has " +
                              Twine(*outC));
  }
  // A reshape moves no data: its sizes are right only when the counts agree (an
  // exporter that baked an example's sizes into the shape breaks this).
  if (llvm::all_of(target, [](DimExpr d) { return bool(d); }))
    recordShapeAssumption(ShapeAssumption::Kind::Equal, inCount,
                          productOfDims(context, target),
                          "the input's and the result's element counts must be equal");
  inferred.push_back(makeTensorType(target, input.getElementType()));
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  // The same type with unknown dims is no proof of the same shape: an SSD's
  // anchors were reshape(reshape(grid, [-1]), [n, 1]) with the grid's dims
  // unknown, and folding it to the grid lost every box.
  if (getInput().getType() == getType() && hasKnownShape(getType()))
    return getInput();
  auto type = cast<RankedTensorType>(getType());
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
      dense && type.hasStaticShape())
    return dense.reshape(type);
  if (auto dims = dyn_cast_if_present<DimsAttr>(adaptor.getInput()))
    return makeKnownElementsAttr(type, dims.getDims());
  // A shape vector rearranged through tables of rank 2 or more, which no
  // constant of symbolic elements holds (torch pads as
  // reshape(flip(reshape(pads, [-1, 2])).T, [-1])): its elements, followed
  // back through the rearrangement.
  if (type.hasStaticShape() && type.getRank() <= 1 && type.getElementType().isInteger(64))
    if (std::optional<SymShape> table = evaluateShapeTable(getInput(), 0))
      return makeKnownElementsAttr(type, *table);
  return {};
}

namespace {
/// reshape(reshape(x, a), b) -> reshape(x, b): only the last shape matters.
struct FoldReshapeChain : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<ReshapeOp>();
    if (!producer)
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.getInputMutable().assign(producer.getInput()); });
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<FoldReshapeChain>(context);
}

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                            Adaptor adaptor, InferredTypes &inferred) {
  RankedTensorType input = tensorType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if ((int64_t)perm.size() != input.getRank())
    return emitShapeError(location, getOperationName(),
                          "permutation has " + Twine(perm.size()) +
                              " entries but the input has rank " + Twine(input.getRank()));
  SmallVector<bool> seen(perm.size(), false);
  SymShape in = getSymShape(input), out;
  for (int64_t p : perm) {
    if (p < 0 || p >= (int64_t)perm.size() || seen[p])
      return emitShapeError(location, getOperationName(),
                            "permutation is not a permutation of [0, rank)");
    seen[p] = true;
    out.push_back(in[p]);
  }
  inferred.push_back(makeTensorType(out, input.getElementType()));
  return success();
}

/// The elements of a `type` tensor stored row-major in `raw` (`bytes` each),
/// permuted by `perm`, row-major in the result's order.
static std::vector<char> transposeBytes(ArrayRef<char> raw, RankedTensorType inType,
                                        RankedTensorType outType, ArrayRef<int64_t> perm,
                                        size_t bytes) {
  int64_t rank = inType.getRank(), count = outType.getNumElements();
  SmallVector<int64_t> inStrides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    inStrides[d] = inStrides[d + 1] * inType.getDimSize(d + 1);
  // Walk the result in order with an odometer over its index, keeping the
  // matching input offset.
  std::vector<char> out(static_cast<size_t>(count) * bytes);
  SmallVector<int64_t> index(rank, 0);
  int64_t from = 0;
  for (int64_t o = 0; o < count; ++o) {
    std::memcpy(out.data() + o * bytes, raw.data() + from * bytes, bytes);
    for (int64_t d = rank - 1; d >= 0; --d) {
      from += inStrides[perm[d]];
      if (++index[d] < outType.getDimSize(d))
        break;
      from -= inStrides[perm[d]] * index[d];
      index[d] = 0;
    }
  }
  return out;
}

/// Transposes of constants fold at any size (Gemm's transB, a Linear's weight,
/// stored as a resource blob when large): the copy happens once at compile time
/// instead of as a kernel on every run. A large result stays a resource blob,
/// so the context does not hash and unique its bytes.
OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(perm))
    identity &= (int64_t)i == p;
  if (identity)
    return getInput().getType() == getType() ? getInput() : Value();

  auto inType = dyn_cast<RankedTensorType>(getInput().getType());
  auto outType = dyn_cast<RankedTensorType>(getType());
  if (!adaptor.getInput() || !inType || !outType || !inType.hasStaticShape() ||
      !outType.hasStaticShape() || !outType.getElementType().isIntOrFloat())
    return {};
  unsigned bits = outType.getElementType().getIntOrFloatBitWidth();
  auto dense = dyn_cast<DenseElementsAttr>(adaptor.getInput());
  if (dense && dense.isSplat())
    return DenseElementsAttr::get(outType, dense.getSplatValue<Attribute>());
  if (bits % 8 != 0) // i1 and sub-byte types are bit-packed
    return {};
  size_t bytes = bits / 8;
  if (dense)
    return DenseElementsAttr::getFromRawBuffer(
        outType, transposeBytes(dense.getRawData(), inType, outType, perm, bytes));
  auto resource = dyn_cast<DenseResourceElementsAttr>(adaptor.getInput());
  AsmResourceBlob *blob = resource ? resource.getRawHandle().getBlob() : nullptr;
  if (!blob || blob->getData().size() != static_cast<size_t>(inType.getNumElements()) * bytes)
    return {};
  std::vector<char> out = transposeBytes(blob->getData(), inType, outType, perm, bytes);
  return DenseResourceElementsAttr::get(
      outType, "transposed",
      HeapAsmResourceBlob::allocateAndCopyWithAlign(ArrayRef<char>(out), alignof(uint64_t)));
}

//===----------------------------------------------------------------------===//
// broadcast_to
//===----------------------------------------------------------------------===//

LogicalResult BroadcastToOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                              Adaptor adaptor, InferredTypes &inferred) {
  FailureOr<int64_t> length =
      staticLength(location, getOperationName(), adaptor.getShape(), "shape");
  if (failed(length))
    return failure();
  RankedTensorType input = tensorType(adaptor.getInput());
  SymShape target = knownOrUnknown(adaptor.getShape(), *length);
  for (auto [i, d] : llvm::enumerate(target))
    if (auto c = getConstantDimValue(d); c && *c < 0)
      return emitShapeError(location, getOperationName(),
                            "shape entry " + Twine(i) + " is negative (" + Twine(*c) + ")");
  FailureOr<SymShape> shape =
      broadcastShapes(location, getOperationName(), {getSymShape(input), target});
  if (failed(shape))
    return failure();
  inferred.push_back(makeTensorType(*shape, input.getElementType()));
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() && cast<RankedTensorType>(getType()).hasStaticShape())
    return getInput();
  auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
  auto type = cast<RankedTensorType>(getType());
  if (dense && dense.isSplat() && type.hasStaticShape())
    return dense.resizeSplat(type);
  return {};
}

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitShapeError(location, name, "needs at least one input");
  RankedTensorType first = tensorType(inputs.front());
  FailureOr<int64_t> axis = normalizeAxis(location, name, adaptor.getAxis(), first.getRank());
  if (failed(axis))
    return failure();
  SymShape shape = getSymShape(first);
  DimExpr total = getConstantDim(context, 0);
  for (auto [k, v] : llvm::enumerate(inputs)) {
    RankedTensorType t = tensorType(v);
    if (t.getElementType() != first.getElementType() || t.getRank() != first.getRank())
      return emitShapeError(location, name,
                            "input " + Twine(k) +
                                " differs from input 0 in rank or element type");
    SymShape s = getSymShape(t);
    for (int64_t i = 0; i < t.getRank(); ++i) {
      if (i == *axis)
        continue;
      FailureOr<DimExpr> d = unifyDims(location, name, shape[i], s[i],
                                       "dim " + Twine(i) + " of input " + Twine(k));
      if (failed(d))
        return failure();
      shape[i] = *d;
    }
    total = addDims(total, s[*axis]);
  }
  shape[*axis] = total;
  inferred.push_back(makeTensorType(shape, first.getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  auto type = cast<RankedTensorType>(getType());
  if (type.getRank() != 1 || !type.getElementType().isInteger())
    return {};
  SymShape all;
  for (Attribute a : adaptor.getInputs()) {
    auto known = getKnownElements(a, getContext());
    if (!known)
      return {};
    all.append(known->begin(), known->end());
  }
  return makeKnownElementsAttr(type, all);
}

//===----------------------------------------------------------------------===//
// slice
//===----------------------------------------------------------------------===//

namespace {
constexpr int64_t kToEnd = int64_t(1) << 62; // ONNX exporters write INT64_MAX

/// The number of elements ONNX Slice takes from a dim of static size `dim`.
int64_t sliceLength(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto clampIndex = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0)
      v = v < -dim ? -1 : v + dim; // avoid overflow on INT64_MIN
    return std::clamp(v, lo, hi);
  };
  // ceil(span / |step|) in unsigned arithmetic: |INT64_MIN| does not fit int64,
  // and ONNX gives such a step one element (the reference's ref::slice agrees).
  auto count = [](int64_t span, uint64_t stride) {
    return static_cast<int64_t>((static_cast<uint64_t>(span) - 1) / stride + 1);
  };
  if (step > 0) {
    start = clampIndex(start, 0, dim);
    end = clampIndex(end, 0, dim);
    return end > start ? count(end - start, static_cast<uint64_t>(step)) : 0;
  }
  start = clampIndex(start, -1, dim - 1);
  end = clampIndex(end, -1, dim - 1);
  return start > end ? count(start - end, 0 - static_cast<uint64_t>(step)) : 0;
}

/// A symbolic slice length e - s, taking the resolved positions to lie in [0, dim]
/// (ONNX clamps them there; the assumption is recorded for a guard to check).
DimExpr symbolicSliceLength(DimExpr dim, DimExpr start, DimExpr end, int64_t step,
                            int64_t axis) {
  MLIRContext *ctx = dim.getContext();
  if (step != 1)
    return DimExpr();
  auto resolve = [&](DimExpr p) -> DimExpr {
    auto c = getConstantDimValue(p);
    if (c && *c >= kToEnd)
      return dim;
    if (c && *c < 0)
      return addDims(dim, p); // assumes |p| <= dim
    return p;
  };
  DimExpr s = resolve(start), e = resolve(end);
  // ONNX clamps positions into [0, dim]: one provably outside is clamped here.
  if (decideShapeAssumption(ShapeAssumption::Kind::LessEqual, e, dim) == std::optional<bool>(false))
    e = dim;
  if (decideShapeAssumption(ShapeAssumption::Kind::LessEqual, getConstantDim(ctx, 0), s) ==
      std::optional<bool>(false))
    s = getConstantDim(ctx, 0);
  DimExpr length = subDims(e, s);
  if (!length)
    return DimExpr();
  if (auto c = getConstantDimValue(length); c && *c < 0)
    return getConstantDim(ctx, 0);
  // A symbolic position that is never positive counts from the end
  // (x[:, :-(h // 2)]), or is 0 for some sizes: which one, only the call
  // knows, so the op's data decides the length.
  auto neverPositive = [&](DimExpr p) {
    return !getConstantDimValue(p) && isProvablyNonNegative(subDims(getConstantDim(ctx, 0), p));
  };
  if (neverPositive(s) || neverPositive(e))
    return DimExpr();
  // In order by the symbols, or a whole dim (a dim is never negative).
  bool inOrder =
      isProvablyNonNegative(length) || (getConstantDimValue(s) == 0 && e == dim);
  // A position that may lie outside a dim only a step binds (keep[:300] after
  // NonMaxSuppression) cannot be guarded: the op's data decides the length.
  auto unguardable = [](DimExpr lhs, DimExpr rhs) {
    return (involvesStepBound(lhs) || involvesStepBound(rhs)) &&
           decideShapeAssumption(ShapeAssumption::Kind::LessEqual, lhs, rhs) !=
               std::optional<bool>(true);
  };
  if (unguardable(getConstantDim(ctx, 0), s) || unguardable(e, dim) ||
      (!inOrder && unguardable(s, e)))
    return DimExpr();
  // The arithmetic e - s is the length only with both positions within
  // [0, dim] and in order; each fact not proven here is checked per call.
  // (A U-Net's crop [m, m + h) of a skip connection is in order exactly when
  // the decoder's h is a size, which no shape function can prove. A slice
  // whose symbolic bounds are out of order for some inputs, an empty result
  // in ONNX, is refused for those inputs with the guard's line.)
  recordShapeAssumption(ShapeAssumption::Kind::LessEqual, getConstantDim(ctx, 0), s,
                        "the start of dim " + Twine(axis) + " must not lie before the dim");
  recordShapeAssumption(ShapeAssumption::Kind::LessEqual, e, dim,
                        "the end of dim " + Twine(axis) + " must not lie past the dim");
  if (!inOrder)
    recordShapeAssumption(ShapeAssumption::Kind::LessEqual, s, e,
                          "the end of dim " + Twine(axis) + " must not lie before its start");
  return length;
}
} // namespace

LogicalResult SliceOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                        Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType input = tensorType(adaptor.getInput());
  int64_t rank = input.getRank();
  Value operands[] = {adaptor.getStarts(), adaptor.getEnds(), adaptor.getSteps()};
  StringRef names[] = {"starts", "ends", "steps"};
  for (auto [v, what] : llvm::zip(operands, names)) {
    FailureOr<int64_t> len = staticLength(location, name, v, what);
    if (failed(len))
      return failure();
    if (*len != rank)
      return emitShapeError(location, name,
                            what + " has " + Twine(*len) + " entries but the input has rank " +
                                Twine(rank));
  }
  SymShape in = getSymShape(input);
  SymShape starts = knownOrUnknown(adaptor.getStarts(), rank);
  SymShape ends = knownOrUnknown(adaptor.getEnds(), rank);
  SymShape steps = knownOrUnknown(adaptor.getSteps(), rank);
  SymShape out(rank);
  for (int64_t i = 0; i < rank; ++i) {
    auto step = getConstantDimValue(steps[i]);
    if (step && *step == 0)
      return emitShapeError(location, name, "step " + Twine(i) + " is zero");
    if (!step || !in[i] || !starts[i] || !ends[i])
      continue;
    auto dim = getConstantDimValue(in[i]);
    auto s = getConstantDimValue(starts[i]), e = getConstantDimValue(ends[i]);
    if (dim && s && e)
      out[i] = getConstantDim(context, sliceLength(*dim, *s, *e, *step));
    else
      out[i] = symbolicSliceLength(in[i], starts[i], ends[i], *step, i);
  }
  inferred.push_back(makeTensorType(out, input.getElementType()));
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  auto type = cast<RankedTensorType>(getType());
  if (getInput().getType() == type && type.hasStaticShape()) {
    // A full, forward slice of a static tensor is the tensor.
    auto steps = getKnownElements(adaptor.getSteps(), getContext());
    auto starts = getKnownElements(adaptor.getStarts(), getContext());
    if (steps && starts &&
        llvm::all_of(*steps, [](DimExpr d) { return getConstantDimValue(d) == 1; }) &&
        llvm::all_of(*starts, [](DimExpr d) { return getConstantDimValue(d) == 0; }))
      return getInput();
  }
  // Slices of small integer tables: the shape computations of exported models
  // (a Swin block's pads are rows of a [4, 2] table read backwards).
  auto inType = dyn_cast<RankedTensorType>(getInput().getType());
  if (!type.hasStaticShape() || !inType || !inType.hasStaticShape() ||
      inType.getNumElements() > kMaxShapeTableElements)
    return {};
  auto data = getKnownElements(adaptor.getInput(), getContext());
  auto start = getKnownElements(adaptor.getStarts(), getContext());
  auto step = getKnownElements(adaptor.getSteps(), getContext());
  if (!data || !start || !step)
    return {};
  std::optional<SymShape> out = sliceTable(*data, inType, type, *start, *step);
  return out ? makeKnownElementsAttr(type, *out) : Attribute();
}

std::optional<SymShape> sliceTable(ArrayRef<DimExpr> data, RankedTensorType inType,
                                   RankedTensorType type, ArrayRef<DimExpr> start,
                                   ArrayRef<DimExpr> step) {
  int64_t rank = type.getRank();
  if ((int64_t)start.size() != rank || (int64_t)step.size() != rank ||
      inType.getRank() != rank || (int64_t)data.size() != inType.getNumElements())
    return std::nullopt;
  // Per axis: the first index read (clamped as Slice clamps its start), the
  // step between reads, and the input's row-major stride.
  SmallVector<int64_t> first, stepOf, rowStride(rank, 1);
  for (int64_t axis = rank - 1; axis > 0; --axis)
    rowStride[axis - 1] = rowStride[axis] * inType.getDimSize(axis);
  for (int64_t axis = 0; axis < rank; ++axis) {
    auto s = getConstantDimValue(start[axis]), k = getConstantDimValue(step[axis]);
    if (!s || !k || *k == 0)
      return std::nullopt;
    int64_t n = inType.getDimSize(axis);
    first.push_back(*s < 0 ? std::max<int64_t>(*s + n, *k > 0 ? 0 : -1)
                           : std::min<int64_t>(*s, *k > 0 ? n : n - 1));
    stepOf.push_back(*k);
  }
  SymShape out;
  SmallVector<int64_t> index(rank, 0);
  for (int64_t flat = 0; flat < type.getNumElements(); ++flat) {
    int64_t offset = 0;
    for (int64_t axis = 0; axis < rank; ++axis) {
      int64_t pos = first[axis] + index[axis] * stepOf[axis];
      if (pos < 0 || pos >= inType.getDimSize(axis))
        return std::nullopt;
      offset += pos * rowStride[axis];
    }
    out.push_back(data[offset]);
    for (int64_t axis = rank - 1; axis >= 0 && ++index[axis] == type.getDimSize(axis); --axis)
      index[axis] = 0;
  }
  return out;
}

std::optional<SymShape> evaluateShapeTable(Value v, int depth) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isInteger(64) ||
      type.getNumElements() > kMaxShapeTableElements || depth > 16)
    return std::nullopt;
  if (std::optional<SymShape> known = getKnownElements(v);
      known && (int64_t)known->size() == type.getNumElements() &&
      llvm::all_of(*known, [](DimExpr d) { return bool(d); }))
    return known;
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  // The same elements in another shape.
  if (auto reshape = dyn_cast<ReshapeOp>(def))
    return evaluateShapeTable(reshape.getInput(), depth + 1);
  if (auto transpose = dyn_cast<TransposeOp>(def)) {
    auto inType = cast<RankedTensorType>(transpose.getInput().getType());
    std::optional<SymShape> in = evaluateShapeTable(transpose.getInput(), depth + 1);
    if (!in)
      return std::nullopt;
    // Result index i reads input dim perm[a] at i[a].
    ArrayRef<int64_t> perm = transpose.getPermutation();
    int64_t rank = type.getRank();
    SmallVector<int64_t> inStrides(rank, 1), index(rank, 0);
    for (int64_t axis = rank - 1; axis > 0; --axis)
      inStrides[axis - 1] = inStrides[axis] * inType.getDimSize(axis);
    SymShape out;
    for (int64_t flat = 0; flat < type.getNumElements(); ++flat) {
      int64_t offset = 0;
      for (int64_t axis = 0; axis < rank; ++axis)
        offset += index[axis] * inStrides[perm[axis]];
      out.push_back((*in)[offset]);
      for (int64_t axis = rank - 1; axis >= 0 && ++index[axis] == type.getDimSize(axis); --axis)
        index[axis] = 0;
    }
    return out;
  }
  if (auto slice = dyn_cast<SliceOp>(def)) {
    auto inType = dyn_cast<RankedTensorType>(slice.getInput().getType());
    std::optional<SymShape> in = evaluateShapeTable(slice.getInput(), depth + 1);
    std::optional<SymShape> start = getKnownElements(slice.getStarts());
    std::optional<SymShape> step = getKnownElements(slice.getSteps());
    if (!in || !start || !step || !inType || !inType.hasStaticShape())
      return std::nullopt;
    return sliceTable(*in, inType, type, *start, *step);
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// gather
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                         Adaptor adaptor, InferredTypes &inferred) {
  RankedTensorType data = tensorType(adaptor.getData());
  FailureOr<int64_t> axis =
      normalizeAxis(location, getOperationName(), adaptor.getAxis(), data.getRank());
  if (failed(axis))
    return failure();
  SymShape in = getSymShape(data), indices = getSymShape(adaptor.getIndices().getType());
  SymShape out(in.begin(), in.begin() + *axis);
  out.append(indices.begin(), indices.end());
  out.append(in.begin() + *axis + 1, in.end());
  inferred.push_back(makeTensorType(out, data.getElementType()));
  return success();
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  auto type = cast<RankedTensorType>(getType());
  auto dataType = cast<RankedTensorType>(getData().getType());
  if (dataType.getRank() != 1 || !type.hasStaticShape())
    return {};
  auto data = getKnownElements(adaptor.getData(), getContext());
  auto indices = dyn_cast_if_present<DenseIntElementsAttr>(adaptor.getIndices());
  if (!data || !indices)
    return {};
  int64_t n = data->size();
  SymShape out;
  for (const APInt &idx : indices.getValues<APInt>()) {
    int64_t i = idx.getSExtValue();
    if (i < -n || i >= n)
      return {}; // out of range: leave the error to run time
    out.push_back((*data)[i < 0 ? i + n : i]);
  }
  return makeKnownElementsAttr(type, out);
}

//===----------------------------------------------------------------------===//
// cache_write, cache_update
//===----------------------------------------------------------------------===//

/// What both cache writes ask of their rows: `update` has `cache`'s rank and
/// element type, and its dims but along the axis. The axis, normalized.
static FailureOr<int64_t> checkCacheRows(std::optional<Location> location, StringRef name,
                                         RankedTensorType cache, RankedTensorType update,
                                         int64_t axisAttr) {
  int64_t rank = cache.getRank();
  if (update.getRank() != rank || update.getElementType() != cache.getElementType())
    return emitShapeError(location, name, "update must have the cache's rank and element type");
  FailureOr<int64_t> axis = normalizeAxis(location, name, axisAttr, rank);
  if (failed(axis))
    return failure();
  SymShape c = getSymShape(cache), u = getSymShape(update);
  for (int64_t i = 0; i < rank; ++i)
    if (i != *axis &&
        failed(unifyDims(location, name, c[i], u[i], "dim " + Twine(i) + " of update")))
      return failure();
  return axis;
}

LogicalResult CacheWriteOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                             Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType cache = tensorType(adaptor.getCache());
  FailureOr<int64_t> axis =
      checkCacheRows(location, name, cache, tensorType(adaptor.getUpdate()), adaptor.getAxis());
  if (failed(axis))
    return failure();
  if (*axis == 0)
    return emitShapeError(location, name, "axis must not be the batch dim 0");
  SymShape c = getSymShape(cache), p = getSymShape(tensorType(adaptor.getPositions()));
  if (failed(unifyDims(location, name, c[0], p[0], "positions (one a sequence)")))
    return failure();
  if (adaptor.getCircular()) {
    if (adaptor.getZeroTail() || adaptor.getValidRows())
      return emitShapeError(location, name, "a circular write takes neither zero_tail nor valid_rows");
    // Each row lands once only if the rows fit the ring (the importer guards
    // the symbolic case).
    DimExpr rows = getSymShape(tensorType(adaptor.getUpdate()))[*axis];
    if (rows && c[*axis] &&
        decideShapeAssumption(ShapeAssumption::Kind::LessEqual, rows, c[*axis]) ==
            std::optional<bool>(false))
      return emitShapeError(location, name,
                            "a circular write's update must be no longer than the cache");
  }
  inferred.push_back(cache);
  return success();
}

LogicalResult CacheUpdateOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                              Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType cache = tensorType(adaptor.getCache());
  RankedTensorType update = tensorType(adaptor.getUpdate());
  FailureOr<int64_t> axis = checkCacheRows(location, name, cache, update, adaptor.getAxis());
  if (failed(axis))
    return failure();
  FailureOr<int64_t> length = staticLength(location, name, adaptor.getOffset(), "offset");
  if (failed(length))
    return failure();
  if (*length != 1)
    return emitShapeError(location, name, "offset must hold one position");
  SymShape c = getSymShape(cache), u = getSymShape(update);
  // The rows written must fit: checked where both are known; kiln-kv-cache-in-place
  // guards the symbolic case (offset + rows <= the cache's length).
  SymShape offset = knownOrUnknown(adaptor.getOffset(), 1);
  if (offset[0] && c[*axis] && u[*axis])
    if (std::optional<bool> fits = decideShapeAssumption(ShapeAssumption::Kind::LessEqual,
                                                         addDims(offset[0], u[*axis]), c[*axis]);
        fits == std::optional<bool>(false))
      return emitShapeError(location, name,
                            "offset + update's length along the axis passes the cache's length");
  inferred.push_back(cache);
  return success();
}

//===----------------------------------------------------------------------===//
// pad
//===----------------------------------------------------------------------===//

LogicalResult PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                      Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType input = tensorType(adaptor.getInput());
  int64_t rank = input.getRank();
  FailureOr<int64_t> length = staticLength(location, name, adaptor.getPads(), "pads");
  if (failed(length))
    return failure();
  if (*length != 2 * rank)
    return emitShapeError(location, name,
                          "pads has " + Twine(*length) + " entries; expected 2 * rank = " +
                              Twine(2 * rank));
  if (tensorType(adaptor.getValue()).getElementType() != input.getElementType())
    return emitShapeError(location, name, "value must have the input's element type");
  SymShape pads = knownOrUnknown(adaptor.getPads(), 2 * rank);
  SymShape in = getSymShape(input), out(rank);
  for (int64_t i = 0; i < rank; ++i) {
    out[i] = addDims(addDims(in[i], pads[i]), pads[i + rank]);
    if (auto c = getConstantDimValue(out[i]); c && *c < 0)
      return emitShapeError(location, name,
                            "pads crop dim " + Twine(i) + " to a negative size");
  }
  inferred.push_back(makeTensorType(out, input.getElementType()));
  return success();
}


//===----------------------------------------------------------------------===//
// gather_elements / scatter_elements
//===----------------------------------------------------------------------===//

namespace {
/// An element of `indices` at position p reads (writes) `data` at p with the
/// axis coordinate replaced, so every other dim of indices must fit in data's:
/// an error when constants say it does not, an assumption when symbols decide
/// (a guard every call checks; over a symbol a step binds, which no guard can
/// check, kiln-form-kernels keeps the op a host step that checks its operands).
LogicalResult checkIndicesFitData(std::optional<Location> location, StringRef name,
                                  SymShape indices, SymShape data, int64_t axis) {
  for (auto [k, i, d] : llvm::enumerate(indices, data)) {
    if ((int64_t)k == axis || !i || !d)
      continue;
    if (decideShapeAssumption(ShapeAssumption::Kind::LessEqual, i, d) ==
        std::optional<bool>(false))
      return emitShapeError(location, name,
                            "dim " + Twine(k) + " of indices (" + dimToString(i) +
                                ") must not exceed data's (" + dimToString(d) + ")");
    recordShapeAssumption(ShapeAssumption::Kind::LessEqual, i, d,
                          "dim " + Twine(k) + " of indices must not exceed data's");
  }
  return success();
}
} // namespace

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> location,
                                                 Adaptor adaptor, InferredTypes &inferred) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  if (data.getRank() != indices.getRank())
    return emitShapeError(location, getOperationName(),
                          "indices must have the rank of data (" + Twine(data.getRank()) + ")");
  auto axis = normalizeAxis(location, getOperationName(), adaptor.getAxis(), data.getRank());
  if (failed(axis) || failed(checkIndicesFitData(location, getOperationName(),
                                                 getSymShape(indices), getSymShape(data), *axis)))
    return failure();
  inferred.push_back(makeTensorType(getSymShape(indices), data.getElementType()));
  return success();
}

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *,
                                                  std::optional<Location> location,
                                                  Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  auto updates = cast<RankedTensorType>(adaptor.getUpdates().getType());
  if (indices.getRank() != data.getRank())
    return emitShapeError(location, name,
                          "indices must have the rank of data (" + Twine(data.getRank()) + ")");
  if (updates.getElementType() != data.getElementType())
    return emitShapeError(location, name, "updates must have the element type of data");
  SymShape i = getSymShape(indices), u = getSymShape(updates);
  if (i.size() != u.size())
    return emitShapeError(location, name, "updates must have the shape of indices");
  for (auto [k, a, b] : llvm::enumerate(i, u))
    if (failed(unifyDims(location, name, a, b, "dim " + Twine(k) + " of indices and updates")))
      return failure();
  auto axis = normalizeAxis(location, name, adaptor.getAxis(), data.getRank());
  if (failed(axis) || failed(checkIndicesFitData(location, name, i, getSymShape(data), *axis)))
    return failure();
  inferred.push_back(data);
  return success();
}

//===----------------------------------------------------------------------===//
// gather_nd / scatter_nd
//===----------------------------------------------------------------------===//

namespace {
/// The static length `q` of an index tuple: the last dim of `indices`.
FailureOr<int64_t> tupleLength(std::optional<Location> location, StringRef name,
                               RankedTensorType indices, int64_t available) {
  if (indices.getRank() < 1 || indices.isDynamicDim(indices.getRank() - 1))
    return emitShapeError(location, name,
                          "indices must have a static last dim (the index tuple length)");
  int64_t q = indices.getDimSize(indices.getRank() - 1);
  if (q < 1 || q > available)
    return emitShapeError(location, name,
                          "index tuples of length " + Twine(q) + " do not fit " +
                              Twine(available) + " indexable dims");
  return q;
}
} // namespace

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                           Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t b = adaptor.getBatchDims();
  if (b < 0 || b >= indices.getRank() || b >= data.getRank())
    return emitShapeError(location, name, "batch_dims " + Twine(b) + " is out of range");
  FailureOr<int64_t> q = tupleLength(location, name, indices, data.getRank() - b);
  if (failed(q))
    return failure();
  SymShape d = getSymShape(data), i = getSymShape(indices);
  for (int64_t k = 0; k < b; ++k)
    if (failed(unifyDims(location, name, d[k], i[k], "batch dim " + Twine(k))))
      return failure();
  SymShape out(i.begin(), i.end() - 1);
  out.append(d.begin() + b + *q, d.end());
  inferred.push_back(makeTensorType(out, data.getElementType()));
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                            Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  auto updates = cast<RankedTensorType>(adaptor.getUpdates().getType());
  if (updates.getElementType() != data.getElementType())
    return emitShapeError(location, name, "updates must have the element type of data");
  FailureOr<int64_t> q = tupleLength(location, name, indices, data.getRank());
  if (failed(q))
    return failure();
  SymShape d = getSymShape(data), i = getSymShape(indices), u = getSymShape(updates);
  SymShape want(i.begin(), i.end() - 1);
  want.append(d.begin() + *q, d.end());
  if (want.size() != u.size())
    return emitShapeError(location, name,
                          "updates must have rank " + Twine(want.size()) +
                              " (indices' leading dims, then data's trailing dims)");
  for (auto [k, a, c] : llvm::enumerate(want, u))
    if (failed(unifyDims(location, name, a, c, "updates dim " + Twine(k))))
      return failure();
  inferred.push_back(data);
  return success();
}

//===----------------------------------------------------------------------===//
// non_zero / compress: data-dependent sizes
//===----------------------------------------------------------------------===//

LogicalResult NonZeroOp::inferReturnTypes(MLIRContext *context, std::optional<Location>,
                                          Adaptor adaptor, InferredTypes &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  MLIRContext *ctx = context;
  inferred.push_back(makeTensorType({getConstantDim(ctx, input.getRank()), DimExpr()},
                                    IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult CountNonZeroOp::inferReturnTypes(MLIRContext *context,
                                               std::optional<Location> location, Adaptor adaptor,
                                               InferredTypes &inferred) {
  int64_t chunks = static_cast<int64_t>(adaptor.getChunks());
  if (chunks < 1)
    return emitShapeError(location, getOperationName(),
                          "chunks must be at least 1 (got " + Twine(chunks) + ")");
  inferred.push_back(
      makeTensorType({getConstantDim(context, chunks)}, IntegerType::get(context, 64)));
  return success();
}

LogicalResult CompactNonZeroOp::inferReturnTypes(MLIRContext *context,
                                                 std::optional<Location> location,
                                                 Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto counts = cast<RankedTensorType>(adaptor.getChunkCounts().getType());
  if (counts.getRank() != 1)
    return emitShapeError(location, name, "chunk_counts must be a vector");
  auto countType = cast<RankedTensorType>(adaptor.getCount().getType());
  if (countType.isDynamicDim(0) || countType.getDimSize(0) != 1)
    return emitShapeError(location, name, "count must be a 1-element tensor");
  DimExpr count;
  if (std::optional<SymShape> known = getKnownElements(adaptor.getCount()))
    count = (*known)[0];
  if (std::optional<int64_t> c = getConstantDimValue(count); c && *c < 0)
    return emitShapeError(location, name, "count is negative (" + Twine(*c) + ")");
  inferred.push_back(makeTensorType({getConstantDim(context, input.getRank()), count},
                                    IntegerType::get(context, 64)));
  return success();
}

LogicalResult CompressOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                           Adaptor adaptor, InferredTypes &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (!adaptor.getAxis()) {
    inferred.push_back(makeTensorType({DimExpr()}, input.getElementType()));
    return success();
  }
  FailureOr<int64_t> axis =
      normalizeAxis(location, getOperationName(), *adaptor.getAxis(), input.getRank());
  if (failed(axis))
    return failure();
  SymShape dims = getSymShape(input);
  dims[*axis] = DimExpr();
  inferred.push_back(makeTensorType(dims, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// resize
//===----------------------------------------------------------------------===//

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                         Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  FailureOr<int64_t> length = staticLength(location, name, adaptor.getSize(), "size");
  if (failed(length))
    return failure();
  int64_t rank = input.getRank();
  if (*length != rank)
    return emitShapeError(location, name,
                          "size has " + Twine(*length) + " entries but the input has rank " +
                              Twine(rank));
  if (!adaptor.getScales().empty() && (int64_t)adaptor.getScales().size() != rank)
    return emitShapeError(location, name, "scales must be empty or have one entry per dim");
  for (float s : adaptor.getScales())
    if (!(s > 0))
      return emitShapeError(location, name, "scales must be positive");
  if (!adaptor.getRoi().empty() && (int64_t)adaptor.getRoi().size() != 2 * rank)
    return emitShapeError(location, name, "roi must be empty or have 2 * rank entries");
  SymShape size = knownOrUnknown(adaptor.getSize(), rank);
  for (auto [i, d] : llvm::enumerate(size))
    if (auto c = getConstantDimValue(d); c && *c < 0)
      return emitShapeError(location, name, "size entry " + Twine(i) + " is negative");
  inferred.push_back(makeTensorType(size, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel facts (KernelFacts.td)
//===----------------------------------------------------------------------===//

// Moved elements keep their type, so data movement runs narrow.
bool TransposeOp::isInlinable() { return true; }
bool TransposeOp::runsNarrow() { return true; }
bool ConcatOp::isInlinable() { return true; }
bool ConcatOp::runsNarrow() { return true; }
bool GatherOp::isInlinable() { return true; }
bool GatherOp::runsNarrow() { return true; }
bool GatherElementsOp::isInlinable() { return true; }
bool GatherElementsOp::runsNarrow() { return true; }
// A gather_nd reads its index tuple (whose length the verifier keeps static);
// a scatter runs as a gather: each result element looks for the updates that
// land on it (codegen's scatter elements).
bool GatherNDOp::isInlinable() { return true; }
bool GatherNDOp::runsNarrow() { return true; }
bool ScatterNDOp::isInlinable() { return true; }
bool ScatterNDOp::runsNarrow() { return true; }
bool ScatterElementsOp::isInlinable() { return true; }
bool ScatterElementsOp::runsNarrow() { return true; }

namespace {
/// What no kernel computes: an op whose shape operands are run-time values.
constexpr const char *kRunTimeShapeOperands =
    "its shape operands (sizes, starts, pads) are computed at run time";
} // namespace

// Where each result element reads: its own position (broadcast_to), one
// computed from shapes and constants (the movers), or one an index gives (the
// gathers). Slices, pads and gathers read at most one element of their input
// per result element.
ElementAccess BroadcastToOp::elementAccess() { return ElementAccess::broadcast; }
ElementAccess ReshapeOp::elementAccess() { return ElementAccess::moved; }
ElementAccess TransposeOp::elementAccess() { return ElementAccess::moved; }
ElementAccess SliceOp::elementAccess() { return ElementAccess::moved; }
ElementAccess ConcatOp::elementAccess() { return ElementAccess::moved; }
ElementAccess PadOp::elementAccess() { return ElementAccess::moved; }
ElementAccess GatherOp::elementAccess() { return ElementAccess::gathered; }
ElementAccess GatherElementsOp::elementAccess() { return ElementAccess::gathered; }
ElementAccess GatherNDOp::elementAccess() { return ElementAccess::gathered; }
bool SliceOp::boundsReadsOfInput() { return true; }
bool PadOp::boundsReadsOfInput() { return true; }
bool GatherOp::boundsReadsOfInput() { return true; }
bool GatherElementsOp::boundsReadsOfInput() { return true; }
bool GatherNDOp::boundsReadsOfInput() { return true; }

// Codegen reads the target shape at compile time: as numbers or symbols.
bool BroadcastToOp::isInlinable() { return isCompileTimeValue(getShape()); }
SmallVector<Value> BroadcastToOp::kernelDataOperands() { return {getInput()}; }
std::string BroadcastToOp::kernelRefusal() { return kRunTimeShapeOperands; }
bool BroadcastToOp::runsNarrow() { return true; }
bool ReshapeOp::isInlinable() { return isCompileTimeValue(getShape()); }
SmallVector<Value> ReshapeOp::kernelDataOperands() { return {getInput()}; }
std::string ReshapeOp::kernelRefusal() { return kRunTimeShapeOperands; }
bool ReshapeOp::runsNarrow() { return true; }
bool SliceOp::isInlinable() {
  return isCompileTimeValue(getStarts()) && isCompileTimeValue(getEnds()) &&
         isa_and_nonnull<ConstantOp>(getSteps().getDefiningOp());
}
SmallVector<Value> SliceOp::kernelDataOperands() { return {getInput()}; }
std::string SliceOp::kernelRefusal() { return kRunTimeShapeOperands; }
bool SliceOp::runsNarrow() { return true; }
// Pads as numbers or symbols (padding H and W up to a multiple of 8 is
// (8 - h mod 8) mod 8): codegen indexes by them either way.
bool PadOp::isInlinable() { return isCompileTimeValue(getPads()); }
SmallVector<Value> PadOp::kernelDataOperands() { return {getInput(), getValue()}; }
std::string PadOp::kernelRefusal() { return kRunTimeShapeOperands; }
bool PadOp::runsNarrow() { return true; }
// Resize keeps fp32: its float operands are positions and scales.
bool ResizeOp::isInlinable() { return isCompileTimeValue(getSize()); }
SmallVector<Value> ResizeOp::kernelDataOperands() { return {getInput()}; }
std::string ResizeOp::kernelRefusal() { return kRunTimeShapeOperands; }

// A block per chunk of the input (kiln-sizes-on-device's non_zero).
// The in-place write: a kernel over the update's elements (codegen's
// pointwise schedule) when the offset is known at compile time; it reads the
// cache only as the bytes it writes into, and keeps the cache's type.
// A new tensor: each element chosen from the cache or the update (the
// position read per sequence), inlined where it is read. In place: a kernel
// of its own over the update's elements, writing into the cache's bytes.
bool CacheWriteOp::isInlinable() { return !getInPlace(); }
std::optional<Schedule> CacheWriteOp::rootSchedule() {
  return getInPlace() ? std::optional<Schedule>(Schedule::pointwise) : std::nullopt;
}
SmallVector<Value> CacheWriteOp::kernelDataOperands() {
  return {getCache(), getUpdate(), getPositions()};
}
// The cache keeps its element type (its bytes are the caller's in place).
bool CacheWriteOp::runsNarrow() { return false; }
std::optional<Schedule> CacheUpdateOp::rootSchedule() {
  return isCompileTimeValue(getOffset()) ? std::optional<Schedule>(Schedule::pointwise)
                                         : std::nullopt;
}
SmallVector<Value> CacheUpdateOp::kernelDataOperands() { return {getCache(), getUpdate()}; }
std::string CacheUpdateOp::kernelRefusal() { return kRunTimeShapeOperands; }
bool CacheUpdateOp::runsNarrow() { return false; }
std::optional<Schedule> CountNonZeroOp::rootSchedule() { return Schedule::reduction; }
std::optional<Schedule> CompactNonZeroOp::rootSchedule() { return Schedule::compaction; }
SmallVector<Value> CompactNonZeroOp::kernelDataOperands() {
  return {getInput(), getChunkCounts()};
}

std::string NonZeroOp::kernelRefusal() { return kDataDependentSizeRefusal; }
std::string CompressOp::kernelRefusal() { return kDataDependentSizeRefusal; }
bool CompressOp::runsNarrow() { return true; }

} // namespace kiln
