//===- Reduction.cpp - ONNX reductions onto kiln.reduce -------------------===//

#include "frontend/onnx/ops/Converters.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {
/// The axes a Reduce* node reduces, resolved against the rank; an empty result
/// with `identity` set means the node is a no-op.
struct ReduceAxes {
  SmallVector<int64_t> axes;
  bool identity = false;
};

FailureOr<ReduceAxes> reduceAxes(NodeImporter &n, int64_t rank, int64_t axesInputSince) {
  std::optional<SmallVector<int64_t>> axes;
  if (n.version() >= axesInputSince) {
    if (n.input(1)) {
      auto a = n.constantInts(1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else if (n.hasAttr("axes")) {
    auto a = n.intsAttr("axes");
    if (failed(a))
      return failure();
    axes = *a;
  }
  auto noop = n.intAttr("noop_with_empty_axes", 0);
  if (failed(noop))
    return failure();
  ReduceAxes result;
  if (!axes || axes->empty()) {
    if (*noop) {
      result.identity = true;
      return result;
    }
    result.axes = allAxes(rank);
    return result;
  }
  auto normalized = normalizeAxes(n, *axes, rank);
  if (failed(normalized))
    return failure();
  result.axes = *normalized;
  return result;
}

/// A Reduce* node as prologue -> reduce -> epilogue. The prologue and epilogue
/// may be empty.
LogicalResult convertReduction(
    NodeImporter &n, ReduceKind kind, int64_t axesInputSince,
    llvm::function_ref<FailureOr<Value>(Value)> prologue = nullptr,
    llvm::function_ref<FailureOr<Value>(Value)> epilogue = nullptr) {
  auto x = n.requiredInput(0);
  auto keep = n.intAttr("keepdims", 1);
  if (failed(x) || failed(keep))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  auto axes = reduceAxes(n, rank, axesInputSince);
  if (failed(axes))
    return failure();
  Value v = *x;
  if (prologue) {
    auto p = prologue(v);
    if (failed(p))
      return failure();
    v = *p;
  }
  if (!axes->identity) {
    if (elementTypeOf(v).isInteger(1)) {
      if (kind == ReduceKind::max)
        kind = ReduceKind::any;
      else if (kind == ReduceKind::min)
        kind = ReduceKind::all;
    }
    if (kind == ReduceKind::mean && !isa<FloatType>(elementTypeOf(v)))
      return n.unsupported("ReduceMean over integers");
    auto r = reduce(n, v, kind, axes->axes, *keep);
    if (failed(r))
      return failure();
    v = *r;
  }
  if (epilogue) {
    auto e = epilogue(v);
    if (failed(e))
      return failure();
    v = *e;
  }
  return n.setResults({v});
}
} // namespace

LogicalResult convertReduceSum(NodeImporter &n) {
  return convertReduction(n, ReduceKind::sum, 13);
}
LogicalResult convertReduceMean(NodeImporter &n) {
  return convertReduction(n, ReduceKind::mean, 18);
}
LogicalResult convertReduceMax(NodeImporter &n) {
  return convertReduction(n, ReduceKind::max, 18);
}
LogicalResult convertReduceMin(NodeImporter &n) {
  return convertReduction(n, ReduceKind::min, 18);
}
LogicalResult convertReduceProd(NodeImporter &n) {
  return convertReduction(n, ReduceKind::prod, 18);
}
LogicalResult convertReduceL1(NodeImporter &n) {
  return convertReduction(n, ReduceKind::sum, 18,
                          [&](Value x) { return unary<AbsOp>(n, x); });
}
LogicalResult convertReduceSumSquare(NodeImporter &n) {
  return convertReduction(n, ReduceKind::sum, 18,
                          [&](Value x) { return binary<MulOp>(n, x, x); });
}
LogicalResult convertReduceL2(NodeImporter &n) {
  Type original;
  return convertReduction(
      n, ReduceKind::sum, 18,
      [&](Value x) -> FailureOr<Value> {
        original = elementTypeOf(x);
        // Integers compute in f64 and truncate back, as ONNX's reference does.
        auto f = isa<FloatType>(original) ? FailureOr<Value>(x)
                                          : castTo(n, x, n.builder().getF64Type());
        return failed(f) ? FailureOr<Value>(failure()) : binary<MulOp>(n, *f, *f);
      },
      [&](Value s) -> FailureOr<Value> {
        auto r = unary<SqrtOp>(n, s);
        return failed(r) ? FailureOr<Value>(failure()) : castTo(n, *r, original);
      });
}
LogicalResult convertReduceLogSum(NodeImporter &n) {
  return convertReduction(n, ReduceKind::sum, 18, nullptr,
                          [&](Value s) { return unary<LogOp>(n, s); });
}
LogicalResult convertReduceLogSumExp(NodeImporter &n) {
  // log(sum(exp(x - m))) + m with m the max over the same axes (finite m only), so
  // large inputs do not overflow exp.
  auto x = n.requiredInput(0);
  auto keep = n.intAttr("keepdims", 1);
  if (failed(x) || failed(keep))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  auto axes = reduceAxes(n, rank, 18);
  if (failed(axes))
    return failure();
  if (axes->identity) { // reduces over no axis: log(exp(x)), elementwise
    auto e = unary<ExpOp>(n, *x);
    auto l = failed(e) ? e : unary<LogOp>(n, *e);
    return failed(l) ? failure() : n.setResults({*l});
  }
  auto m = reduce(n, *x, ReduceKind::max, axes->axes, true);
  if (failed(m))
    return failure();
  auto inf = n.create<IsInfOp>({*m});
  auto safe = failed(inf) ? inf : select(n, *inf, scalarLike(n, *m, 0), *m);
  auto shifted = failed(safe) ? safe : binary<SubOp>(n, *x, *safe);
  auto e = failed(shifted) ? shifted : unary<ExpOp>(n, *shifted);
  auto s = failed(e) ? e : reduce(n, *e, ReduceKind::sum, axes->axes, *keep);
  auto l = failed(s) ? s : unary<LogOp>(n, *s);
  if (failed(l))
    return failure();
  Value offset = *safe;
  if (!*keep) {
    auto squeezed = reduce(n, *safe, ReduceKind::max, axes->axes, false);
    if (failed(squeezed))
      return failure();
    offset = *squeezed;
  }
  auto r = binary<AddOp>(n, *l, offset);
  return failed(r) ? failure() : n.setResults({*r});
}

namespace {
LogicalResult convertArgReduce(NodeImporter &n, ArgReduceKind kind) {
  auto x = n.requiredInput(0);
  auto axis = n.intAttr("axis", 0), keep = n.intAttr("keepdims", 1),
       last = n.intAttr("select_last_index", 0);
  if (failed(x) || failed(axis) || failed(keep) || failed(last))
    return failure();
  auto r = n.create<ArgReduceOp>(
      {*x}, {n.named("kind", ArgReduceKindAttr::get(n.context(), kind)),
             n.named("axis", n.builder().getI64IntegerAttr(*axis)),
             n.named("keep_dims", n.builder().getBoolAttr(*keep)),
             n.named("select_last_index", n.builder().getBoolAttr(*last))});
  return failed(r) ? failure() : n.setResults({*r});
}
} // namespace

LogicalResult convertArgMax(NodeImporter &n) { return convertArgReduce(n, ArgReduceKind::argmax); }
LogicalResult convertArgMin(NodeImporter &n) { return convertArgReduce(n, ArgReduceKind::argmin); }

} // namespace kiln::onnx_import
