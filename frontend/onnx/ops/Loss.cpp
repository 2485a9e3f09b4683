//===- Loss.cpp - ONNX loss functions onto kiln ---------------------------===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss decompose onto
// gather_elements (pick each sample's target class), weights gathered per target,
// and a reduction. Ignored targets get weight 0 and read class 0 harmlessly.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {
/// NLL of `input` ([N, C, d...], log-probabilities) at `target` ([N, d...]).
FailureOr<Value> negativeLogLikelihood(NodeImporter &n, Value input, Value target,
                                       Value weight, StringRef reduction) {
  std::optional<int64_t> ignoreIndex;
  if (n.hasAttr("ignore_index")) {
    auto ii = n.intAttr("ignore_index");
    if (failed(ii))
      return failure();
    ignoreIndex = *ii;
  }
  auto inType = NodeImporter::typeOf(input);
  if (inType.getRank() < 2)
    return n.error("input must have rank >= 2 ([N, C, ...])");
  if (NodeImporter::typeOf(target).getRank() != inType.getRank() - 1)
    return n.error("target must have rank " + Twine(inType.getRank() - 1));
  Type floatType = inType.getElementType();
  auto t = castTo(n, target, n.builder().getI64Type());
  if (failed(t))
    return failure();
  Value safeTarget = *t, valid;
  if (ignoreIndex) {
    auto v = compare(n, CompareDirection::ne, *t, n.constI64({*ignoreIndex}, true));
    if (failed(v))
      return failure();
    valid = *v;
    auto s = select(n, valid, *t, n.constI64({0}, true));
    if (failed(s))
      return failure();
    safeTarget = *s;
  }
  auto column = insertUnitDims(n, safeTarget, {1});
  auto picked = failed(column) ? column
                               : n.create<GatherElementsOp>(
                                     {input, *column},
                                     {n.named("axis", n.builder().getI64IntegerAttr(1))});
  if (failed(picked))
    return failure();
  // Drop the class dim again: [N, 1, d...] -> [N, d...].
  SymShape dims = getSymShape((*picked).getType());
  dims.erase(dims.begin() + 1);
  SmallVector<Value> pieces;
  for (int64_t i = 0; i < (int64_t)dims.size() + 1; ++i) {
    if (i == 1)
      continue;
    auto p = dimPiece(n, *picked, i);
    if (failed(p))
      return failure();
    pieces.push_back(*p);
  }
  auto shape = concatPieces(n, pieces);
  auto squeezed = failed(shape) ? shape : n.create<ReshapeOp>({*picked, *shape});
  auto loss = failed(squeezed) ? squeezed : unary<NegOp>(n, *squeezed);
  if (failed(loss))
    return failure();
  Value w;
  if (weight) {
    auto g = n.create<GatherOp>({weight, safeTarget},
                                {n.named("axis", n.builder().getI64IntegerAttr(0))});
    if (failed(g))
      return failure();
    w = *g;
    if (valid) {
      auto masked = select(n, valid, w, n.constScalar(floatType, 0));
      if (failed(masked))
        return failure();
      w = *masked;
    }
  } else if (valid) {
    auto c = castTo(n, valid, floatType);
    if (failed(c))
      return failure();
    w = *c;
  }
  if (w) {
    loss = binary<MulOp>(n, *loss, w);
    if (failed(loss))
      return failure();
  }
  if (reduction == "none")
    return loss;
  SmallVector<int64_t> all = allAxes(NodeImporter::typeOf(*loss).getRank());
  auto reduceAll = [&](Value v, ReduceKind kind) { return reduce(n, v, kind, all, false); };
  if (reduction == "sum")
    return reduceAll(*loss, ReduceKind::sum);
  if (reduction != "mean")
    return n.error("reduction must be none, sum or mean, not '" + reduction + "'");
  if (!w)
    return reduceAll(*loss, ReduceKind::mean);
  // Weighted mean: sum(loss) / sum(weights of the counted samples); `w` has the
  // loss's shape (one weight per sample).
  auto total = reduceAll(*loss, ReduceKind::sum);
  auto weightSum = failed(total) ? total : reduceAll(w, ReduceKind::sum);
  return failed(weightSum) ? weightSum : binary<DivOp>(n, *total, *weightSum);
}
} // namespace

LogicalResult convertNegativeLogLikelihoodLoss(NodeImporter &n) {
  auto input = n.requiredInput(0), target = n.requiredInput(1);
  auto reduction = n.stringAttr("reduction", std::string("mean"));
  if (failed(input) || failed(target) || failed(reduction))
    return failure();
  auto r = negativeLogLikelihood(n, *input, *target, n.input(2), *reduction);
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertSoftmaxCrossEntropyLoss(NodeImporter &n) {
  auto scores = n.requiredInput(0), labels = n.requiredInput(1);
  auto reduction = n.stringAttr("reduction", std::string("mean"));
  if (failed(scores) || failed(labels) || failed(reduction))
    return failure();
  auto logProb = n.create<LogSoftmaxOp>({*scores},
                                        {n.named("axis", n.builder().getI64IntegerAttr(1))});
  if (failed(logProb))
    return failure();
  auto r = negativeLogLikelihood(n, *logProb, *labels, n.input(2), *reduction);
  if (failed(r))
    return failure();
  return n.setResults({*r, *logProb});
}

} // namespace kiln::onnx_import
