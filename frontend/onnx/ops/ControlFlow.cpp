//===- ControlFlow.cpp - ONNX If, Loop and Scan onto kiln region ops -------===//
//
// Each op is created first (with placeholder result types) so its regions are
// attached while the subgraphs import into them; result types are set once the
// bodies' yields are known. A loop's carried values first import with their initial
// types; when the body changes a carried value's shape, the body is imported again
// with those dims unknown.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {

Operation *createWithRegions(NodeImporter &n, StringRef name, ValueRange operands,
                             ArrayRef<NamedAttribute> attrs, unsigned regions) {
  OperationState state(n.loc(), name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  for (unsigned i = 0; i < regions; ++i)
    state.addRegion();
  state.addTypes(SmallVector<Type>(n.proto().output_size(), NoneType::get(n.context())));
  return n.builder().create(state);
}

SmallVector<Type> yieldTypes(Region &region) {
  return SmallVector<Type>(region.front().getTerminator()->getOperandTypes());
}

/// The most refined type both may stand for: dims they disagree on are unknown.
FailureOr<Type> join(NodeImporter &n, Type a, Type b, const Twine &what) {
  auto ta = cast<RankedTensorType>(a), tb = cast<RankedTensorType>(b);
  if (ta.getElementType() != tb.getElementType() || ta.getRank() != tb.getRank())
    return n.unsupported(what + " whose element type or rank differs between branches");
  SymShape da = getSymShape(ta), db = getSymShape(tb);
  for (auto [x, y] : llvm::zip(da, db))
    if (x != y)
      x = DimExpr();
  return Type(makeTensorType(da, ta.getElementType()));
}

/// `t` with every dim unknown: the type of a carried value whose shape changes.
Type generalize(Type t) {
  auto r = cast<RankedTensorType>(t);
  return RankedTensorType::get(SmallVector<int64_t>(r.getRank(), ShapedType::kDynamic),
                               r.getElementType());
}

/// Stacked scan-output type: `slice` with a dim of `length` inserted at `axis`.
Type stacked(Type slice, int64_t axis, DimExpr length) {
  auto r = cast<RankedTensorType>(slice);
  SymShape dims = getSymShape(r);
  dims.insert(dims.begin() + axis, length);
  return makeTensorType(dims, r.getElementType());
}

void clearRegion(Region &region) {
  for (Block &block : region)
    block.dropAllDefinedValueUses();
  region.getBlocks().clear();
}

/// Imports `body` into `region` with the given argument types; when a yielded
/// carried value (yields [first, first + count)) does not fit its argument,
/// re-imports with those arguments generalized. Returns the final argument types.
FailureOr<SmallVector<Type>> importCarried(NodeImporter &n, const onnx::GraphProto &body,
                                           Region &region, SmallVector<Type> argTypes,
                                           size_t firstArg, size_t firstYield, size_t count) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (failed(n.importSubgraph(body, region, argTypes)))
      return failure();
    SmallVector<Type> yields = yieldTypes(region);
    if (yields.size() < firstYield + count)
      return n.error("the body yields " + Twine(yields.size()) + " values; it needs at least " +
                     Twine(firstYield + count));
    bool fits = true;
    for (size_t i = 0; i < count; ++i)
      fits &= areRefinementCompatible(yields[firstYield + i], argTypes[firstArg + i]);
    if (fits)
      return argTypes;
    if (attempt == 1)
      break;
    clearRegion(region);
    for (size_t i = 0; i < count; ++i)
      argTypes[firstArg + i] = generalize(argTypes[firstArg + i]);
  }
  return n.unsupported("a loop-carried value whose element type or rank changes");
}

} // namespace

LogicalResult convertIf(NodeImporter &n) {
  auto cond = n.requiredInput(0);
  auto thenGraph = n.graphAttr("then_branch"), elseGraph = n.graphAttr("else_branch");
  if (failed(cond) || failed(thenGraph) || failed(elseGraph))
    return failure();
  Operation *op = createWithRegions(n, IfOp::getOperationName(), {*cond}, {}, 2);
  auto fail = [&] {
    op->erase();
    return failure();
  };
  if (failed(n.importSubgraph(**thenGraph, op->getRegion(0), {})) ||
      failed(n.importSubgraph(**elseGraph, op->getRegion(1), {})))
    return fail();
  SmallVector<Type> thenTypes = yieldTypes(op->getRegion(0)),
                    elseTypes = yieldTypes(op->getRegion(1));
  if (thenTypes.size() != op->getNumResults() || elseTypes.size() != op->getNumResults())
    return (void)n.error("the branches must each yield one value per output"), fail();
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    auto t = join(n, thenTypes[i], elseTypes[i], "an output");
    if (failed(t))
      return fail();
    result.setType(*t);
  }
  return n.setResults(SmallVector<Value>(op->getResults()));
}

LogicalResult convertLoop(NodeImporter &n) {
  auto body = n.graphAttr("body");
  if (failed(body))
    return failure();
  OpBuilder &b = n.builder();
  // An absent trip count means no limit; an absent condition, always true.
  Value maxTrip = n.input(0) ? n.input(0) : n.constI64({INT64_MAX}, true);
  if (NodeImporter::typeOf(maxTrip).getRank() != 0) {
    auto r = n.create<ReshapeOp>({maxTrip, n.constI64({})});
    if (failed(r))
      return failure();
    maxTrip = *r;
  }
  Value cond = n.input(1) ? n.input(1) : n.constScalar(b.getI1Type(), 1);
  auto carriedInputs = n.requiredInputs(2, n.numInputs());
  if (failed(carriedInputs))
    return failure();
  SmallVector<Value> &initial = *carriedInputs;
  size_t carried = initial.size();
  if ((size_t)n.proto().output_size() < carried)
    return n.error("has fewer outputs than carried values");
  Operation *op = createWithRegions(n, LoopOp::getOperationName(),
                                    [&] {
                                      SmallVector<Value> operands = {maxTrip, cond};
                                      operands.append(initial);
                                      return operands;
                                    }(),
                                    {}, 1);
  SmallVector<Type> argTypes = {RankedTensorType::get({}, b.getI64Type()),
                                RankedTensorType::get({}, b.getI1Type())};
  for (Value v : initial)
    argTypes.push_back(v.getType());
  auto finalArgs = importCarried(n, **body, op->getRegion(0), argTypes, 2, 1, carried);
  if (failed(finalArgs)) {
    op->erase();
    return failure();
  }
  SmallVector<Type> yields = yieldTypes(op->getRegion(0));
  if (size_t results = op->getNumResults(); yields.size() != 1 + results) {
    op->erase();
    return n.error("the body yields " + Twine(yields.size()) + " values for " +
                   Twine(results) + " outputs (plus the condition)");
  }
  for (size_t i = 0; i < op->getNumResults(); ++i)
    op->getResult(i).setType(i < carried ? (*finalArgs)[2 + i]
                                         : stacked(yields[1 + i], 0, DimExpr()));
  return n.setResults(SmallVector<Value>(op->getResults()));
}

LogicalResult convertScan(NodeImporter &n) {
  if (n.version() < 9)
    return n.unsupported("Scan before opset 9 (its batch dim and sequence_lens)");
  auto body = n.graphAttr("body");
  auto m = n.intAttr("num_scan_inputs");
  if (failed(body) || failed(m))
    return failure();
  int64_t numInputs = n.numInputs();
  if (*m < 1 || *m > numInputs)
    return n.error("num_scan_inputs must be between 1 and the number of inputs");
  int64_t states = numInputs - *m;
  int64_t outputs = n.proto().output_size() - states;
  if (outputs < 0)
    return n.error("has fewer outputs than states");
  auto inAxes = n.intsAttr("scan_input_axes", SmallVector<int64_t>(*m, 0));
  auto inDirs = n.intsAttr("scan_input_directions", SmallVector<int64_t>(*m, 0));
  auto outAxes = n.intsAttr("scan_output_axes", SmallVector<int64_t>(outputs, 0));
  auto outDirs = n.intsAttr("scan_output_directions", SmallVector<int64_t>(outputs, 0));
  if (failed(inAxes) || failed(inDirs) || failed(outAxes) || failed(outDirs))
    return failure();
  if ((int64_t)inAxes->size() != *m || (int64_t)outAxes->size() != outputs)
    return n.error("scan axes need one entry per scan input and output");
  auto scanInputs = n.requiredInputs(0, static_cast<size_t>(numInputs));
  if (failed(scanInputs))
    return failure();
  SmallVector<Value> &inputs = *scanInputs;
  SmallVector<Type> argTypes;
  for (int64_t i = 0; i < states; ++i)
    argTypes.push_back(inputs[i].getType());
  DimExpr length;
  for (int64_t j = 0; j < *m; ++j) {
    auto t = NodeImporter::typeOf(inputs[states + j]);
    int64_t axis = (*inAxes)[j] < 0 ? (*inAxes)[j] + t.getRank() : (*inAxes)[j];
    if (axis < 0 || axis >= t.getRank())
      return n.error("scan input " + Twine(j) + " has no axis " + Twine((*inAxes)[j]));
    SymShape dims = getSymShape(t);
    if (j == 0)
      length = dims[axis];
    dims.erase(dims.begin() + axis);
    argTypes.push_back(makeTensorType(dims, t.getElementType()));
  }
  Builder b(n.context());
  Operation *op = createWithRegions(
      n, ScanOp::getOperationName(), inputs,
      {n.named("num_scan_inputs", b.getI64IntegerAttr(*m)),
       n.named("scan_input_axes", b.getDenseI64ArrayAttr(*inAxes)),
       n.named("scan_input_directions", b.getDenseI64ArrayAttr(*inDirs)),
       n.named("scan_output_axes", b.getDenseI64ArrayAttr(*outAxes)),
       n.named("scan_output_directions", b.getDenseI64ArrayAttr(*outDirs))},
      1);
  auto finalArgs = importCarried(n, **body, op->getRegion(0), argTypes, 0, 0, states);
  if (failed(finalArgs)) {
    op->erase();
    return failure();
  }
  SmallVector<Type> yields = yieldTypes(op->getRegion(0));
  if ((int64_t)yields.size() != states + outputs) {
    op->erase();
    return n.error("the body yields " + Twine(yields.size()) + " values for " +
                   Twine(states + outputs) + " outputs");
  }
  for (int64_t i = 0; i < states + outputs; ++i) {
    if (i < states) {
      op->getResult(i).setType((*finalArgs)[i]);
      continue;
    }
    int64_t rank = NodeImporter::typeOf(op->getRegion(0).front().getTerminator()->getOperand(i))
                       .getRank() + 1;
    int64_t axis = (*outAxes)[i - states];
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis >= rank) {
      op->erase();
      return n.error("scan output " + Twine(i - states) + " has no axis " +
                     Twine((*outAxes)[i - states]));
    }
    op->getResult(i).setType(stacked(yields[i], axis, length));
  }
  return n.setResults(SmallVector<Value>(op->getResults()));
}

} // namespace kiln::onnx_import
