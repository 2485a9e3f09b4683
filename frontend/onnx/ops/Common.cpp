//===- Common.cpp - helpers shared by the ONNX op converters --------------===//

#include "frontend/onnx/ops/Converters.h"

using namespace mlir;

namespace kiln::onnx_import {

Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

FailureOr<Value> binary(NodeImporter &n, StringRef opName, Value a, Value b) {
  return n.createOp(opName, {a, b}, {});
}

FailureOr<Value> unary(NodeImporter &n, StringRef opName, Value a) {
  return n.createOp(opName, {a}, {});
}

FailureOr<Value> compare(NodeImporter &n, CompareDirection direction, Value a, Value b) {
  return n.create<CompareOp>(
      {a, b}, {n.named("direction", CompareDirectionAttr::get(n.context(), direction))});
}

FailureOr<Value> select(NodeImporter &n, Value c, Value a, Value b) {
  return n.create<SelectOp>({c, a, b});
}

FailureOr<Value> castTo(NodeImporter &n, Value v, Type element) {
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
      return n.builder().create<SymbolicConstantOp>(
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

} // namespace kiln::onnx_import
