//===- ReductionOps.cpp - reduce and arg_reduce ---------------------------===//

#include "ir/Kiln/KilnDialect.h"

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

OpFoldResult ReduceOp::fold(FoldAdaptor adaptor) {
  if (getAxes().empty() && getInput().getType() == getType())
    return getInput();
  // Sums and products of sizes: the element counts exported models compute.
  auto inputType = cast<RankedTensorType>(getInput().getType());
  auto type = cast<RankedTensorType>(getType());
  ReduceKind kind = getKind();
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
