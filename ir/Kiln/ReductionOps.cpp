//===- ReductionOps.cpp - reduce and arg_reduce ---------------------------===//

#include "ir/Kiln/Folding.h"
#include "ir/Kiln/KilnDialect.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;

namespace kiln {

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ReduceKind kind = adaptor.getKind();
  bool isLogical = kind == ReduceKind::any || kind == ReduceKind::all;
  if (isLogical != input.getElementType().isInteger(1))
    return emitShapeError(location, name,
                          isLogical ? "any/all reduce i1 tensors"
                                    : "only any/all reduce i1 tensors");
  if (kind == ReduceKind::mean && !isa<FloatType>(input.getElementType()))
    return emitShapeError(location, name, "mean reduces floating-point tensors");
  SmallVector<bool> reduced(input.getRank(), false);
  for (int64_t axis : adaptor.getAxes()) {
    FailureOr<int64_t> a = normalizeAxis(location, name, axis, input.getRank());
    if (failed(a))
      return failure();
    if (reduced[*a])
      return emitShapeError(location, name, "axis " + Twine(*a) + " appears twice");
    reduced[*a] = true;
  }
  SymShape in = getSymShape(input), out;
  for (auto [i, d] : llvm::enumerate(in)) {
    if (!reduced[i])
      out.push_back(d);
    else if (adaptor.getKeepDims())
      out.push_back(getConstantDim(context, 1));
  }
  inferred.push_back(makeTensorType(out, input.getElementType()));
  return success();
}

/// A reduction of a small dense constant: the image sizes torchvision's
/// detection transform takes the max of (a [1] tensor of 320.0 once the resize
/// is fixed). Floats compute in double and round once; an int overflow, a NaN
/// (whose max/min semantics the kernels define), mean of ints, and any/all
/// are left to run time.
static OpFoldResult foldDenseReduce(DenseElementsAttr dense, RankedTensorType type,
                                    ArrayRef<int64_t> axes, ReduceKind kind) {
  auto inType = cast<RankedTensorType>(dense.getType());
  Type element = inType.getElementType();
  bool isFloat = isa<FloatType>(element);
  if (axes.empty() || !type.hasStaticShape() || inType.getNumElements() > kMaxShapeTableElements ||
      inType.getNumElements() == 0 || element.isInteger(1) ||
      (!isFloat && (!element.isSignlessInteger() || kind == ReduceKind::mean)) ||
      kind == ReduceKind::any || kind == ReduceKind::all)
    return {};
  int64_t rank = inType.getRank();
  SmallVector<bool> reduced(rank, false);
  for (int64_t axis : axes)
    reduced[axis < 0 ? axis + rank : axis] = true;
  // Where each input element lands in the result, row-major.
  SmallVector<int64_t> outOf(inType.getNumElements(), 0);
  SmallVector<int64_t> index(rank, 0);
  for (int64_t flat = 0; flat < inType.getNumElements(); ++flat) {
    int64_t out = 0;
    for (int64_t axis = 0; axis < rank; ++axis)
      if (!reduced[axis])
        out = out * inType.getDimSize(axis) + index[axis];
    outOf[flat] = out;
    for (int64_t axis = rank - 1; axis >= 0 && ++index[axis] == inType.getDimSize(axis); --axis)
      index[axis] = 0;
  }
  int64_t outCount = type.getNumElements();
  int64_t groupSize = inType.getNumElements() / std::max<int64_t>(outCount, 1);
  if (isFloat) {
    SmallVector<double> values;
    for (APFloat v : dense.getValues<APFloat>()) {
      if (v.isNaN())
        return {};
      bool losesInfo;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
      values.push_back(v.convertToDouble());
    }
    SmallVector<std::optional<double>> acc(outCount);
    for (auto [flat, v] : llvm::enumerate(values)) {
      std::optional<double> &a = acc[outOf[flat]];
      switch (kind) {
      case ReduceKind::sum:
      case ReduceKind::mean: a = a.value_or(0.0) + v; break;
      case ReduceKind::prod: a = a.value_or(1.0) * v; break;
      case ReduceKind::max: a = a ? std::max(*a, v) : v; break;
      case ReduceKind::min: a = a ? std::min(*a, v) : v; break;
      default: return {};
      }
    }
    SmallVector<APFloat> out;
    for (std::optional<double> a : acc) {
      APFloat f(kind == ReduceKind::mean ? *a / groupSize : *a);
      bool losesInfo;
      f.convert(cast<FloatType>(element).getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      out.push_back(f);
    }
    return DenseElementsAttr::get(type, out);
  }
  SmallVector<std::optional<int64_t>> acc(outCount);
  unsigned width = element.getIntOrFloatBitWidth();
  for (auto [flat, v] : llvm::enumerate(dense.getValues<APInt>())) {
    if (v.getSignificantBits() > 64)
      return {};
    int64_t x = v.getSExtValue();
    std::optional<int64_t> &a = acc[outOf[flat]];
    switch (kind) {
    case ReduceKind::sum: a = llvm::checkedAdd(a.value_or(0), x); break;
    case ReduceKind::prod: a = llvm::checkedMul(a.value_or(1), x); break;
    case ReduceKind::max: a = a ? std::max(*a, x) : x; break;
    case ReduceKind::min: a = a ? std::min(*a, x) : x; break;
    default: return {};
    }
    if (!a || APInt(64, *a, true).getSignificantBits() > width)
      return {}; // overflow of int64 or of the element type
  }
  SmallVector<APInt> out;
  for (std::optional<int64_t> a : acc)
    out.push_back(APInt(width, *a, /*isSigned=*/true));
  return DenseElementsAttr::get(type, out);
}

OpFoldResult ReduceOp::fold(FoldAdaptor adaptor) {
  if (getAxes().empty() && getInput().getType() == getType())
    return getInput();
  auto inputType = cast<RankedTensorType>(getInput().getType());
  auto type = cast<RankedTensorType>(getType());
  ReduceKind kind = getKind();
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
    if (OpFoldResult folded = foldDenseReduce(dense, type, getAxes(), kind))
      return folded;
  // Sums and products of sizes: the element counts exported models compute.
  if (inputType.getRank() != 1 || getAxes().size() != 1 ||
      !inputType.getElementType().isInteger() || inputType.getElementType().isInteger(1) ||
      (kind != ReduceKind::sum && kind != ReduceKind::prod))
    return {};
  auto known = getKnownElements(adaptor.getInput(), getContext());
  if (!known)
    return {};
  DimExpr acc = getConstantDim(getContext(), kind == ReduceKind::sum ? 0 : 1);
  for (DimExpr d : *known)
    acc = kind == ReduceKind::sum ? addDims(acc, d) : mulDims(acc, d);
  if (!acc)
    return {};
  return makeKnownElementsAttr(type, {acc});
}

LogicalResult ArgReduceOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> location,
                                            Adaptor adaptor, InferredTypes &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  FailureOr<int64_t> axis =
      normalizeAxis(location, getOperationName(), adaptor.getAxis(), input.getRank());
  if (failed(axis))
    return failure();
  SymShape in = getSymShape(input), out;
  for (auto [i, d] : llvm::enumerate(in)) {
    if ((int64_t)i != *axis)
      out.push_back(d);
    else if (adaptor.getKeepDims())
      out.push_back(getConstantDim(context, 1));
  }
  inferred.push_back(makeTensorType(out, IntegerType::get(context, 64)));
  return success();
}


LogicalResult TopKOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                       Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  FailureOr<int64_t> axis = normalizeAxis(location, name, adaptor.getAxis(), input.getRank());
  if (failed(axis))
    return failure();
  auto kType = cast<RankedTensorType>(adaptor.getK().getType());
  if (kType.getRank() != 1 || kType.isDynamicDim(0) || kType.getDimSize(0) != 1)
    return emitShapeError(location, name, "k must be a 1-element tensor");
  SymShape dims = getSymShape(input);
  DimExpr k;
  if (auto known = getKnownElements(adaptor.getK()))
    k = (*known)[0];
  if (auto c = getConstantDimValue(k)) {
    if (*c < 0)
      return emitShapeError(location, name, "k is negative (" + Twine(*c) + ")");
    if (auto d = getConstantDimValue(dims[*axis]); d && *c > *d)
      return emitShapeError(location, name,
                            "k (" + Twine(*c) + ") exceeds the axis size (" + Twine(*d) + ")");
  }
  dims[*axis] = k;
  inferred.push_back(makeTensorType(dims, input.getElementType()));
  inferred.push_back(makeTensorType(dims, IntegerType::get(context, 64)));
  return success();
}

LogicalResult SampleTokensOp::inferReturnTypes(MLIRContext *context,
                                              std::optional<Location> location, Adaptor adaptor,
                                              InferredTypes &inferred) {
  StringRef name = getOperationName();
  SymShape logits = getSymShape(adaptor.getLogits().getType());
  if (logits.size() != 3)
    return emitShapeError(location, name, "logits must be [batch, positions, vocabulary]");
  for (auto [operand, what] : {std::pair{adaptor.getPositions(), "positions"},
                               std::pair{adaptor.getUniform(), "uniform"}}) {
    SymShape dims = getSymShape(operand.getType());
    if (dims.size() != 1 || dims[0] != logits[0])
      return emitShapeError(location, name,
                            Twine(what) + " must hold one value per sequence ([" +
                                dimToString(logits[0]) + "])");
  }
  for (Value scalar : {adaptor.getTemperature(), adaptor.getTopK(), adaptor.getTopP()})
    if (cast<RankedTensorType>(scalar.getType()).getRank() != 0)
      return emitShapeError(location, name, "temperature, top_k and top_p must be scalars");
  inferred.push_back(makeTensorType({logits[0]}, IntegerType::get(context, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel facts (KernelFacts.td)
//===----------------------------------------------------------------------===//

// Reductions and cumulative sums keep fp32: their results grow with the row.
std::optional<Schedule> ReduceOp::rootSchedule() { return Schedule::reduction; }
std::optional<Schedule> ArgReduceOp::rootSchedule() { return Schedule::reduction; }
std::optional<Schedule> CumulativeOp::rootSchedule() { return Schedule::reduction; }
std::optional<Schedule> TopKOp::rootSchedule() { return Schedule::reduction; }
// The kernel computes the indices; the values are a gather of them
// (kiln-form-kernels' gatherTopKValues). k is read at compile time.
SmallVector<Value> TopKOp::kernelDataOperands() { return {getInput()}; }
Value TopKOp::kernelResult() { return getIndices(); }
bool TopKOp::fusesProducers() { return false; }
bool TopKOp::runsNarrow() { return true; }
// A block per sequence reads its row of logits once per step of its threshold
// searches: a producer would be recomputed each time.
std::optional<Schedule> SampleTokensOp::rootSchedule() { return Schedule::reduction; }
bool SampleTokensOp::fusesProducers() { return false; }

} // namespace kiln
