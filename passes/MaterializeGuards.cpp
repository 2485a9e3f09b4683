//===- MaterializeGuards.cpp - unproven shape facts become kiln.guard ops -===//
//
// Shape functions take some facts about symbolic dims on trust: matmul's
// contraction dims are equal, a symbolic dim broadcast against 4 is 1 or 4, a
// slice's end lies inside its dim, a reshape keeps the element count. Kernels and
// memory plans are built on those facts, so an input that breaks one would be
// computed with wrong sizes. This pass asks every op's shape function again, this
// time collecting what it assumed (ShapeAssumptionScope), adds the facts a
// declared type states beyond its inferred one, and puts each distinct fact at
// the top of the function as a kiln.guard, cheapest first. The artifact carries
// them and the runtime checks them after binding the symbols on every call.
//===----------------------------------------------------------------------===//

#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/StepBoundSymbols.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <set>

namespace kiln {
#define GEN_PASS_DEF_MATERIALIZEGUARDSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

std::string describeOp(Operation *op) {
  std::string name = op->getName().getStringRef().str();
  std::string node = nodeNameOf(op->getLoc());
  return node.empty() ? name : name + " at '" + node + "'";
}

namespace {

struct FoundGuard {
  ShapeAssumption::Kind kind;
  DimExpr lhs, rhs;
  std::string reason;
  Location loc;
};

/// Whether `dim` uses a symbol that `op` binds (kBindsDimsAttr).
bool usesSymbolBoundBy(Operation *op, DimExpr dim) {
  auto binds = op->getAttrOfType<ArrayAttr>(kBindsDimsAttr);
  if (!binds)
    return false;
  bool uses = false;
  dim.walk([&](AffineExpr e) {
    if (e.getKind() != AffineExprKind::SymbolId)
      return;
    for (Attribute b : binds)
      if (getSymbolDim(op->getContext(), cast<StringAttr>(cast<ArrayAttr>(b)[2]).getValue()) == e)
        uses = true;
  });
  return uses;
}

/// How much evaluating a dim costs: its number of expression nodes.
unsigned exprCost(DimExpr d) {
  unsigned n = 0;
  d.walk([&](AffineExpr) { ++n; });
  return n;
}

struct MaterializeGuardsPass : impl::MaterializeGuardsPassBase<MaterializeGuardsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    std::vector<FoundGuard> found;
    // Facts over sizes steps bind, guarded right before the op relying on
    // them; the keys of those guarded so far, in program order.
    std::vector<std::pair<Operation *, FoundGuard>> beforeOps;
    std::set<std::string> guardedLate;
    Block &top = func.getBody().front();
    bool failedAny = false;
    auto add = [&](Operation *op, ShapeAssumption::Kind kind, DimExpr lhs, DimExpr rhs,
                   const std::string &what) {
      if (!lhs || !rhs)
        return; // nothing is known of an unknown dim to check
      std::optional<bool> holds = decideShapeAssumption(kind, lhs, rhs);
      if (holds == std::optional<bool>(true))
        return;
      FoundGuard g{kind, lhs, rhs, describeOp(op) + ": " + what, op->getLoc()};
      // A symbol a step binds has no value when the call's guards run: the
      // fact is checked right before the op instead, once the steps before
      // it have bound its sizes. Over a symbol the op binds itself it cannot
      // be (the op stays a host step, which checks its operands as it runs).
      if (involvesStepBound(lhs) || involvesStepBound(rhs)) {
        if (holds == std::optional<bool>(false) || op->getBlock() != &top ||
            usesSymbolBoundBy(op, lhs) || usesSymbolBoundBy(op, rhs))
          return;
        if (guardedLate.insert(shapeFactKey(kind, lhs, rhs)).second)
          beforeOps.emplace_back(op, std::move(g));
        return;
      }
      if (holds == std::optional<bool>(false)) {
        op->emitOpError() << "assumes a fact that can never hold: " << dimToString(lhs)
                          << " against " << dimToString(rhs) << " (" << what << ")";
        failedAny = true;
        return;
      }
      found.push_back(std::move(g));
    };

    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      // Guards from an earlier run are collected again and re-emitted in order.
      if (auto guard = dyn_cast<GuardOp>(op)) {
        // One over sizes steps bind stays where it was put.
        if (involvesStepBound(guard.getLhs()) || involvesStepBound(guard.getRhs())) {
          guardedLate.insert(shapeFactKey(static_cast<ShapeAssumption::Kind>(guard.getKind()),
                                     guard.getLhs(), guard.getRhs()));
          return WalkResult::skip();
        }
        found.push_back({static_cast<ShapeAssumption::Kind>(guard.getKind()), guard.getLhs(),
                         guard.getRhs(), guard.getReason().str(), guard.getLoc()});
        guard.erase();
        return WalkResult::skip();
      }
      // A fact a body relies on may hold only when the body runs (a branch
      // taken for some shapes): no guard checked on every call may state it.
      // kiln-form-kernels keeps such body ops off the kernels instead.
      if (isa<IfOp, LoopOp, ScanOp>(op))
        return WalkResult::skip();
      if (auto cast = dyn_cast<tensor::CastOp>(op)) {
        for (auto [d, pair] : llvm::enumerate(llvm::zip(getSymShape(cast.getSource().getType()),
                                                        getSymShape(cast.getType()))))
          add(op, ShapeAssumption::Kind::Equal, std::get<0>(pair), std::get<1>(pair),
              "the cast keeps dim " + std::to_string(d));
        return WalkResult::advance();
      }
      auto infer = dyn_cast<InferTypeOpInterface>(op);
      if (!infer)
        return WalkResult::advance();
      std::vector<ShapeAssumption> assumptions;
      SmallVector<Type> inferred;
      {
        ShapeAssumptionScope scope(assumptions);
        if (failed(infer.inferReturnTypes(op->getContext(), std::nullopt, op->getOperands(),
                                          op->getRawDictionaryAttrs(),
                                          op->getPropertiesStorage(), op->getRegions(),
                                          inferred)))
          return WalkResult::advance(); // the verifier reports a broken op
      }
      for (const ShapeAssumption &a : assumptions)
        add(op, a.kind, a.lhs, a.rhs, a.what);
      // A declared dim that differs from the inferred one (both symbolic) is
      // kept by shape inference as an assumption: check it too.
      for (auto [i, declared, type] : llvm::enumerate(op->getResultTypes(), inferred)) {
        if (!isa<RankedTensorType>(declared) || !isa<RankedTensorType>(type))
          continue;
        SymShape want = getSymShape(declared), got = getSymShape(type);
        if (want.size() != got.size())
          continue;
        for (size_t d = 0; d < want.size(); ++d)
          add(op, ShapeAssumption::Kind::Equal, want[d], got[d],
              "result " + std::to_string(i) + " dim " + std::to_string(d) +
                  " as declared must equal the inferred size");
      }
      return WalkResult::advance();
    });
    if (failedAny)
      return signalPassFailure();

    // One guard per distinct fact (the first op that relied on it names it),
    // cheapest to evaluate first: the runtime stops at the first that fails.
    std::set<std::string> seen;
    std::vector<FoundGuard> unique;
    for (FoundGuard &g : found) {
      if (g.kind == ShapeAssumption::Kind::Equal && dimToString(g.rhs) < dimToString(g.lhs))
        std::swap(g.lhs, g.rhs); // a == b and b == a are one fact
      if (seen.insert(shapeFactKey(g.kind, g.lhs, g.rhs)).second)
        unique.push_back(std::move(g));
    }
    std::stable_sort(unique.begin(), unique.end(), [](const FoundGuard &a, const FoundGuard &b) {
      return exprCost(a.lhs) + exprCost(a.rhs) < exprCost(b.lhs) + exprCost(b.rhs);
    });
    OpBuilder builder = OpBuilder::atBlockBegin(&top);
    auto create = [&](const FoundGuard &g) {
      GuardOp::create(builder, g.loc, static_cast<GuardKind>(g.kind),
                      DimsAttr::getCanonical(func.getContext(), {g.lhs, g.rhs}),
                      builder.getStringAttr(g.reason));
    };
    for (const FoundGuard &g : unique)
      create(g);
    for (const auto &[op, g] : beforeOps) {
      builder.setInsertionPoint(op);
      create(g);
    }
  }
};

} // namespace
} // namespace kiln
