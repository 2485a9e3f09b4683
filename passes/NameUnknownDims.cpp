//===- NameUnknownDims.cpp - data-dependent dims as run-time symbols ------===//
//
// See Passes.td (kiln-name-unknown-dims). The symbols it makes are bound by the
// step that computes them (the artifact's Step.binds), so the memory plan sizes
// those values at run time and kernels take them as symbol parameters.
//
//===----------------------------------------------------------------------===//

#include "passes/ExactSizeCasts.h"
#include "passes/Passes.h"
#include "passes/PositiveSizes.h"

#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/StepBoundSymbols.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <functional>
#include <set>

namespace kiln {
#define GEN_PASS_DEF_NAMEUNKNOWNDIMSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// What `inferred` knows per dim, else what `current` says.
RankedTensorType refined(RankedTensorType current, Type inferred) {
  auto i = dyn_cast<RankedTensorType>(inferred);
  if (!i || i.getRank() != current.getRank())
    return current;
  SymShape dims = getSymShape(current), known = getSymShape(i);
  bool changed = false;
  for (auto [d, k] : llvm::zip(dims, known))
    if (!d && k) {
      d = k;
      changed = true;
    }
  return changed ? makeTensorType(dims, current.getElementType()) : current;
}

struct NameUnknownDimsPass : impl::NameUnknownDimsPassBase<NameUnknownDimsPass> {
  /// Folds `op` where its operands' named dims decide it, else lets its shape
  /// function say more from them. False when `op` was folded away.
  bool refine(Operation &op) {
    MLIRContext *ctx = &getContext();
    // Shape computations over named dims fold where they stand (a shape_of
    // of a NonZero's result, and the gathers and concats of it a Squeeze
    // exports as), so the reshape after them has a known shape.
    // A size computed in floats (a padded size) is the size again, with
    // guards that the float arithmetic was exact.
    if (foldExactSizeCast(&op) || positiveSizes.fold(&op))
      return false;
    if (op.getNumRegions() == 0 && !op.hasAttr(kBindsDimsAttr)) {
      OpBuilder builder(&op);
      SmallVector<Value> folded;
      if (succeeded(builder.tryFold(&op, folded)) && !folded.empty()) {
        bool sameTypes = llvm::all_of(llvm::zip(op.getResults(), folded), [](auto pair) {
          return std::get<0>(pair).getType() == std::get<1>(pair).getType();
        });
        if (sameTypes) {
          op.replaceAllUsesWith(folded);
          op.erase();
          return false;
        }
      }
    }
    // Operands named above may let the shape function say more now.
    if (auto infer = dyn_cast<InferTypeOpInterface>(&op)) {
      SmallVector<Type> inferred;
      if (succeeded(infer.inferReturnTypes(ctx, std::nullopt, op.getOperands(),
                                           op.getRawDictionaryAttrs(),
                                           op.getPropertiesStorage(), op.getRegions(),
                                           inferred)))
        for (auto [result, type] : llvm::zip(op.getResults(), inferred))
          if (auto current = dyn_cast<RankedTensorType>(result.getType()))
            if (RankedTensorType r = refined(current, type); r && r != current)
              result.setType(r);
    }
    positiveSizes.note(&op);
    return true;
  }

  /// Conv output sizes (and top-k counts of them) of the ops refined so far
  /// (PositiveSizes.h).
  PositiveSizes positiveSizes;

  /// Refines and names the ops of `block` in order (the function's, or an
  /// if's branch).
  void nameBlock(Block &block, const std::function<std::string()> &nextName) {
    MLIRContext *ctx = &getContext();
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (op.getNumResults() == 0 || isa<ConstantOp, tensor::CastOp>(op) ||
          !isa<KilnDialect>(op.getDialect()))
        continue;
      if (!refine(op))
        continue; // folded away
      // An if's branches run at most once per call, so their steps bind
      // sizes as the top level's do (a detector's batched NMS inside `if
      // boxes.numel() == 0`); each unknown dim of the if's own result is a
      // symbol the If step binds from the branch that ran. A loop's or scan's
      // body would rebind once per iteration: what is unknown there stays
      // unknown, and its ops only take the named dims from outside.
      if (auto ifOp = dyn_cast<IfOp>(op)) {
        nameBlock(ifOp.getThenRegion().front(), nextName);
        nameBlock(ifOp.getElseRegion().front(), nextName);
      } else if (op.getNumRegions() != 0) {
        SmallVector<Operation *> inside; // in order; refine may erase each
        for (Region &region : op.getRegions())
          region.walk<WalkOrder::PreOrder>([&](Operation *inner) {
            if (inner->getNumResults() != 0 && !isa<ConstantOp, tensor::CastOp>(inner) &&
                isa<KilnDialect>(inner->getDialect()))
              inside.push_back(inner);
          });
        for (Operation *inner : inside)
          refine(*inner);
        continue;
      }
      // What is still unknown is decided by this op's data: a symbol it binds.
      SmallVector<Attribute> binds;
      // A top_k's values and indices are both sized by its k, a unique's
      // results by the distinct count: one symbol for every dim the data
      // decides, so the ops after them can combine the results.
      bool oneSize = isa<TopKOp, UniqueOp>(op);
      DimExpr shared;
      for (OpResult result : op.getResults()) {
        auto type = dyn_cast<RankedTensorType>(result.getType());
        if (!type)
          continue;
        SymShape dims = getSymShape(type);
        bool named = false;
        for (auto [d, dim] : llvm::enumerate(dims)) {
          if (dim)
            continue;
          dim = oneSize && shared ? shared : getSymbolDim(ctx, nextName());
          if (oneSize)
            shared = dim;
          named = true;
          Builder b(ctx);
          binds.push_back(b.getArrayAttr({b.getI64IntegerAttr(result.getResultNumber()),
                                          b.getI64IntegerAttr(d),
                                          b.getStringAttr(dimToString(dim))}));
        }
        if (named)
          result.setType(makeTensorType(dims, type.getElementType()));
      }
      if (!binds.empty()) {
        op.setAttr(kBindsDimsAttr, ArrayAttr::get(ctx, binds));
        positiveSizes.note(&op); // a top-k's count, now that it has a name
      }
    }
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    positiveSizes = PositiveSizes();
    MLIRContext *ctx = &getContext();
    Block &block = func.getBody().front();
    // Names are numbered in op order, the same on every run of the pass (a
    // fresh-name counter would differ between two compiles in one context,
    // and with it the kernels' sources and cache keys); names the function's
    // inputs use are skipped.
    std::set<std::string> taken;
    for (Type t : func.getArgumentTypes())
      for (DimExpr d : getSymShape(t))
        if (d)
          d.walk([&](AffineExpr e) {
            if (e.getKind() == AffineExprKind::SymbolId)
              taken.insert(dimToString(e));
          });
    // An input dim with no symbol (a model compiled without the graph
    // pipeline) is known when the call starts: a symbol the input binds, named
    // as kiln-infer-shapes names them.
    SmallVector<Type> inputs(func.getArgumentTypes());
    for (auto [i, arg] : llvm::enumerate(block.getArguments())) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || !llvm::is_contained(getSymShape(type), DimExpr()))
        continue;
      SymShape dims = getSymShape(type);
      for (auto [j, d] : llvm::enumerate(dims)) {
        if (d)
          continue;
        std::string name = "arg" + std::to_string(i) + "_d" + std::to_string(j);
        while (taken.count(name))
          name += "_";
        taken.insert(name);
        d = getSymbolDim(ctx, name);
      }
      arg.setType(makeTensorType(dims, type.getElementType()));
      inputs[i] = arg.getType();
    }
    unsigned next = 0;
    std::function<std::string()> nextName = [&]() {
      std::string name;
      do
        name = "run" + std::to_string(next++);
      while (taken.count(name));
      markStepBound(getSymbolDim(ctx, name));
      return name;
    };
    nameBlock(block, nextName);
    // The function returns what its return op now returns.
    auto ret = cast<func::ReturnOp>(block.getTerminator());
    func.setFunctionType(FunctionType::get(ctx, inputs, ret.getOperandTypes()));
  }
};

} // namespace
} // namespace kiln
