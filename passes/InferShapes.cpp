//===- InferShapes.cpp - symbolic shape inference and refinement ----------===//

#include "passes/ExactSizeCasts.h"
#include "passes/Passes.h"
#include "passes/PositiveSizes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/FoldUtils.h"

using namespace mlir;

namespace kiln {

#define GEN_PASS_DEF_INFERSHAPESPASS
#include "passes/Passes.h.inc"

namespace {

/// Per dim, what `inferred` knows, else what `declared` says.
Type mergeTypes(Type declared, Type inferred) {
  auto d = dyn_cast<RankedTensorType>(declared), i = dyn_cast<RankedTensorType>(inferred);
  if (!d || !i || d.getRank() != i.getRank())
    return declared;
  SymShape dims = getSymShape(d), known = getSymShape(i);
  // Inferred knowledge fills unknown dims and makes symbolic ones static; a declared
  // symbolic dim is kept over a different inferred expression (both may be right).
  for (auto [dd, kd] : llvm::zip(dims, known))
    if (kd && (!dd || getConstantDimValue(kd)))
      dd = kd;
  RankedTensorType merged = makeTensorType(dims, d.getElementType());
  return merged ? merged : declared;
}

struct InferShapesPass : impl::InferShapesPassBase<InferShapesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (bindArgSymbols)
      bindArgumentSymbols(func);

    // Producers come before their users in a walk in pre-order, so one sweep sees
    // every operand already refined.
    SmallVector<Operation *> ops;
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op != func && isa<KilnDialect>(op->getDialect()))
        ops.push_back(op);
    });
    OperationFolder folder(&getContext());
    PositiveSizes positiveSizes;
    for (Operation *op : ops) {
      // A size computed in floats is the size again (guards before it say
      // the float arithmetic was exact); a reshape target's `n == 0 ? ..`
      // is decided for a conv's output size n, and `(h - 1) // 8` for an
      // input size h a conv bounds (PositiveSizes.h).
      if (foldExactSizeCast(op) || positiveSizes.fold(op))
        continue;
      bool inPlace = false;
      if (succeeded(folder.tryToFold(op, &inPlace)) && !inPlace)
        continue; // replaced by its folded value and erased
      if (failed(refineResults(op)))
        return signalPassFailure();
      positiveSizes.note(op);
    }
    updateResultTypes(func);
  }

  /// Gives each dynamic argument dim without a symbol a fresh one, `arg<i>_d<j>`.
  void bindArgumentSymbols(func::FuncOp func) {
    SmallVector<Type> inputs(func.getArgumentTypes());
    bool changed = false;
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type)
        continue;
      SymShape dims = getSymShape(type);
      bool any = false;
      for (auto [j, d] : llvm::enumerate(dims)) {
        if (d)
          continue;
        d = getFreshSymbolDim(&getContext(), ("arg" + Twine(i) + "_d" + Twine(j)).str());
        any = true;
      }
      if (!any)
        continue;
      arg.setType(makeTensorType(dims, type.getElementType()));
      inputs[i] = arg.getType();
      changed = true;
    }
    if (changed)
      func.setFunctionType(
          FunctionType::get(&getContext(), inputs, func.getFunctionType().getResults()));
  }

  LogicalResult refineResults(Operation *op) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return success();
    SmallVector<Type> inferred;
    if (failed(infer.inferReturnTypes(&getContext(), op->getLoc(), op->getOperands(),
                                      op->getRawDictionaryAttrs(),
                                      op->getPropertiesStorage(), op->getRegions(),
                                      inferred)))
      return failure(); // the diagnostic names the op and the contradiction
    for (auto [result, type] : llvm::zip(op->getResults(), inferred)) {
      Type old = result.getType();
      Type merged = mergeTypes(old, type);
      if (merged == old)
        continue;
      result.setType(merged);
      castForForeignUsers(result, old);
    }
    return success();
  }

  /// Users outside the kiln dialect keep seeing the type they were built with.
  void castForForeignUsers(Value result, Type old) {
    for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
      Operation *user = use.getOwner();
      if (isa<KilnDialect>(user->getDialect()) || isa<func::ReturnOp>(user))
        continue;
      OpBuilder builder(user);
      auto cast = tensor::CastOp::create(builder, user->getLoc(), old, result);
      use.set(cast);
    }
  }

  /// The function returns what its return ops now return.
  void updateResultTypes(func::FuncOp func) {
    SmallVector<func::ReturnOp> returns;
    func.walk([&](func::ReturnOp r) {
      if (r->getParentOp() == func)
        returns.push_back(r);
    });
    if (returns.size() != 1)
      return;
    func.setFunctionType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                           returns.front().getOperandTypes()));
  }
};

} // namespace
} // namespace kiln
