//===- ControlFlowOps.cpp - verifiers of if, loop and scan ----------------===//

#include "ir/Kiln/KilnDialect.h"

using namespace mlir;

namespace kiln {

namespace {
/// `refined` may stand where `general` is declared: same element type and rank,
/// and no dim where both are known and differ.
bool refines(Type refined, Type general) { return areRefinementCompatible(refined, general); }

/// `type`, result `index` of `op`, with each dim the If step binds
/// (`kiln.binds_dims`, from kiln-name-unknown-dims) unknown: such a dim is
/// whatever the branch that ran yields, an empty then-branch's 0 as well as
/// the other's count.
Type withoutBoundDims(Operation *op, unsigned index, Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  auto binds = op->getAttrOfType<ArrayAttr>(kBindsDimsAttr);
  if (!ranked || !binds)
    return type;
  SymShape dims = getSymShape(ranked);
  for (Attribute a : binds) {
    auto entry = dyn_cast<ArrayAttr>(a);
    if (!entry || entry.size() != 3)
      continue;
    auto result = dyn_cast<IntegerAttr>(entry[0]), dim = dyn_cast<IntegerAttr>(entry[1]);
    if (result && dim && result.getInt() == index && dim.getInt() >= 0 &&
        dim.getInt() < static_cast<int64_t>(dims.size()))
      dims[dim.getInt()] = DimExpr();
  }
  return makeTensorType(dims, ranked.getElementType());
}

YieldOp yieldOf(Region &region) { return cast<YieldOp>(region.front().getTerminator()); }

LogicalResult checkSingleBool(Operation *op, Value v, StringRef what) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.hasStaticShape() && t.getNumElements() != 1)
    return op->emitOpError() << what << " must hold exactly one element, not " << t;
  return success();
}

/// The type of one slice of `t` along `axis` (that dim dropped).
RankedTensorType sliceType(RankedTensorType t, int64_t axis) {
  SymShape dims = getSymShape(t);
  dims.erase(dims.begin() + axis);
  return makeTensorType(dims, t.getElementType());
}

/// A scan output's type from its per-iteration slice: a dim of unknown length
/// inserted at `axis`.
bool stacksTo(RankedTensorType slice, RankedTensorType result, int64_t axis) {
  if (result.getRank() != slice.getRank() + 1 || axis < 0 || axis > slice.getRank())
    return false;
  SymShape dims = getSymShape(slice);
  dims.insert(dims.begin() + axis, DimExpr());
  return refines(makeTensorType(dims, slice.getElementType()), result);
}
} // namespace

LogicalResult IfOp::verify() {
  if (failed(checkSingleBool(*this, getCondition(), "condition")))
    return failure();
  for (Region *region : {&getThenRegion(), &getElseRegion()}) {
    YieldOp yield = yieldOf(*region);
    if (yield.getValues().size() != getNumResults())
      return emitOpError() << "a branch yields " << yield.getValues().size()
                           << " values but the op has " << getNumResults() << " results";
    for (auto [i, v, r] : llvm::enumerate(yield.getValues(), getResults()))
      if (!refines(v.getType(), withoutBoundDims(*this, i, r.getType())))
        return emitOpError() << "result #" << i << " has type " << r.getType()
                             << ", which a branch's " << v.getType() << " contradicts";
  }
  return success();
}

LogicalResult LoopOp::verify() {
  if (failed(checkSingleBool(*this, getCondition(), "condition")))
    return failure();
  Block &body = getBody().front();
  size_t carried = getInitial().size();
  if (body.getNumArguments() != 2 + carried)
    return emitOpError() << "the body takes " << body.getNumArguments()
                         << " arguments; expected the iteration number, the condition and "
                         << carried << " carried values";
  auto i64 = RankedTensorType::get({}, IntegerType::get(getContext(), 64));
  auto i1 = RankedTensorType::get({}, IntegerType::get(getContext(), 1));
  if (body.getArgument(0).getType() != i64 || body.getArgument(1).getType() != i1)
    return emitOpError("the body's first arguments must be tensor<i64> and tensor<i1>");
  YieldOp yield = yieldOf(getBody());
  if (yield.getValues().size() < 1 + carried)
    return emitOpError() << "the body yields " << yield.getValues().size()
                         << " values; expected the condition and " << carried
                         << " carried values first";
  size_t scanOutputs = yield.getValues().size() - 1 - carried;
  if (getNumResults() != carried + scanOutputs)
    return emitOpError() << "has " << getNumResults() << " results; expected " << carried
                         << " carried values and " << scanOutputs << " scan outputs";
  if (!cast<RankedTensorType>(yield.getValues()[0].getType()).getElementType().isInteger(1))
    return emitOpError("the body must yield an i1 condition first");
  if (failed(checkSingleBool(*this, yield.getValues()[0], "the yielded condition")))
    return failure();
  for (size_t i = 0; i < carried; ++i) {
    Type arg = body.getArgument(2 + i).getType();
    if (!refines(getInitial()[i].getType(), arg) ||
        !refines(yield.getValues()[1 + i].getType(), arg) ||
        !refines(arg, getResult(i).getType()))
      return emitOpError() << "carried value #" << i << " has type " << arg
                           << " in the body, which its initial, next or final type contradicts";
  }
  for (size_t k = 0; k < scanOutputs; ++k)
    if (!stacksTo(cast<RankedTensorType>(yield.getValues()[1 + carried + k].getType()),
                  cast<RankedTensorType>(getResult(carried + k).getType()), 0))
      return emitOpError() << "scan output #" << k
                           << " must stack the yielded slices along a new leading dim";
  return success();
}

LogicalResult ScanOp::verify() {
  int64_t m = getNumScanInputs();
  int64_t n = (int64_t)getInputs().size() - m;
  if (m < 1 || n < 0)
    return emitOpError() << "num_scan_inputs must be between 1 and the number of inputs";
  if ((int64_t)getScanInputAxes().size() != m || (int64_t)getScanInputDirections().size() != m)
    return emitOpError("scan_input_axes and scan_input_directions need one entry per scan input");
  int64_t k = (int64_t)getNumResults() - n;
  if (k < 0 || (int64_t)getScanOutputAxes().size() != k ||
      (int64_t)getScanOutputDirections().size() != k)
    return emitOpError("scan_output_axes and scan_output_directions need one entry per scan "
                       "output");
  for (int64_t d : getScanInputDirections())
    if (d != 0 && d != 1)
      return emitOpError("scan directions must be 0 (forward) or 1 (backward)");
  for (int64_t d : getScanOutputDirections())
    if (d != 0 && d != 1)
      return emitOpError("scan directions must be 0 (forward) or 1 (backward)");
  Block &body = getBody().front();
  if ((int64_t)body.getNumArguments() != n + m)
    return emitOpError() << "the body takes " << body.getNumArguments() << " arguments; expected "
                         << n << " states and " << m << " scan slices";
  YieldOp yield = yieldOf(getBody());
  if ((int64_t)yield.getValues().size() != n + k)
    return emitOpError() << "the body yields " << yield.getValues().size() << " values; expected "
                         << n << " states and " << k << " scan output slices";
  for (int64_t i = 0; i < n; ++i) {
    Type arg = body.getArgument(i).getType();
    if (!refines(getInputs()[i].getType(), arg) || !refines(yield.getValues()[i].getType(), arg) ||
        !refines(arg, getResult(i).getType()))
      return emitOpError() << "state #" << i << " has type " << arg
                           << " in the body, which its initial, next or final type contradicts";
  }
  for (int64_t j = 0; j < m; ++j) {
    auto input = cast<RankedTensorType>(getInputs()[n + j].getType());
    int64_t axis = getScanInputAxes()[j];
    if (axis < -input.getRank() || axis >= input.getRank())
      return emitOpError() << "scan input #" << j << " has no axis " << axis;
    if (axis < 0)
      axis += input.getRank();
    if (!refines(sliceType(input, axis), body.getArgument(n + j).getType()))
      return emitOpError() << "the body's slice of scan input #" << j << " has type "
                           << body.getArgument(n + j).getType() << ", not a slice of " << input;
  }
  for (int64_t j = 0; j < k; ++j) {
    auto slice = cast<RankedTensorType>(yield.getValues()[n + j].getType());
    int64_t axis = getScanOutputAxes()[j];
    if (axis < 0)
      axis += slice.getRank() + 1;
    if (!stacksTo(slice, cast<RankedTensorType>(getResult(n + j).getType()), axis))
      return emitOpError() << "scan output #" << j
                           << " must stack the yielded slices along its scan axis";
  }
  return success();
}

} // namespace kiln
