//===- AbsorbEpilogues.cpp - library ops take their epilogues -===//
//
// Before fusion groups elementwise ops into kernels, the ops cuBLASLt and cuDNN
// apply themselves move into the library op that produces their operand.
//===----------------------------------------------------------------------===//

#include "passes/KernelTypes.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_ABSORBEPILOGUESPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// True for a splat constant equal to `value`.
bool isSplat(Value v, double value) {
  auto c = dyn_cast_or_null<ConstantOp>(v.getDefiningOp());
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return false;
  if (isa<FloatType>(dense.getElementType()))
    return dense.getSplatValue<APFloat>().convertToDouble() == value;
  return false;
}

/// The other operand when `op` is `max(v, 0)` or `max(0, v)`.
bool isReluOf(Operation *op, Value v) {
  auto m = dyn_cast<MaxOp>(op);
  if (!m || m.getType() != v.getType())
    return false;
  return (m.getLhs() == v && isSplat(m.getRhs(), 0)) || (m.getRhs() == v && isSplat(m.getLhs(), 0));
}

/// A ResNet block's tail, `relu(conv(x) + bias + z)` with `z` of the conv
/// result's type: the conv (with a bias, as every conv is once its batch norm
/// is folded) takes `z` as its residual and the ReLU, cuDNN's fused
/// conv-bias-activation. The conv and the add must each have one user.
bool absorbResidualRelu(ConvOp conv) {
  Value result = conv.getResult();
  if (!conv.getBias() || conv.getResidual() || conv.getActivation() != Activation::none ||
      !result.hasOneUse())
    return false;
  auto add = dyn_cast<AddOp>(*result.getUsers().begin());
  if (!add || add.getType() != result.getType() || !add.getResult().hasOneUse())
    return false;
  Value residual = add.getLhs() == result ? add.getRhs() : add.getLhs();
  Operation *relu = *add.getResult().getUsers().begin();
  if (residual == result || residual.getType() != result.getType() ||
      !isReluOf(relu, add.getResult()))
    return false;
  OpBuilder b(relu);
  SmallVector<NamedAttribute> attributes;
  for (NamedAttribute a : conv->getAttrs())
    if (a.getName() != "operandSegmentSizes" && a.getName() != "activation")
      attributes.push_back(a);
  attributes.push_back(b.getNamedAttr("activation", ActivationAttr::get(b.getContext(), Activation::relu)));
  attributes.push_back(b.getNamedAttr("operandSegmentSizes", b.getDenseI32ArrayAttr({1, 1, 1, 1})));
  auto fused = ConvOp::create(b, conv.getLoc(), result.getType(),
                              ValueRange{conv.getInput(), conv.getFilter(), conv.getBias(), residual},
                              attributes);
  relu->getResult(0).replaceAllUsesWith(fused.getResult());
  relu->erase();
  add.erase();
  conv.erase();
  return true;
}

/// The epilogues cuBLASLt and cuDNN fuse into the library op: a matmul takes
/// `+ bias` (a vector over its last dim, on float types) and then a ReLU; a conv
/// takes a residual add and a ReLU, or a ReLU, after its bias. The op must be
/// the only user of the value.
void absorbEpilogues(func::FuncOp func) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<MatmulOp, ConvOp>(op) && op->getParentOp() == func)
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    Value result = op->getResult(0);
    auto type = cast<RankedTensorType>(result.getType());
    if (!isa<FloatType>(type.getElementType()))
      continue;
    if (auto matmul = dyn_cast<MatmulOp>(op);
        matmul && !matmul.getBias() && type.getRank() >= 1 && result.hasOneUse()) {
      auto add = dyn_cast<AddOp>(*result.getUsers().begin());
      if (add && add.getType() == type) {
        Value bias = add.getLhs() == result ? add.getRhs() : add.getLhs();
        auto biasType = cast<RankedTensorType>(bias.getType());
        if (biasType.getRank() == 1 && getSymShape(biasType)[0] == getSymShape(type).back() &&
            bias != result) {
          OpBuilder b(add);
          auto fused = MatmulOp::create(b, matmul.getLoc(), type, matmul.getLhs(), matmul.getRhs(),
                                        bias, Activation::none, matmul.getTransposeLhs(),
                                        matmul.getTransposeRhs());
          add.getResult().replaceAllUsesWith(fused.getResult());
          add.erase();
          matmul.erase();
          op = fused;
          result = fused.getResult();
        }
      }
    }
    if (auto conv = dyn_cast<ConvOp>(op); conv && absorbResidualRelu(conv))
      continue;
    if (!result.hasOneUse() || !isReluOf(*result.getUsers().begin(), result))
      continue;
    Operation *relu = *result.getUsers().begin();
    if (auto matmul = dyn_cast<MatmulOp>(op))
      matmul.setActivation(Activation::relu);
    else
      cast<ConvOp>(op).setActivation(Activation::relu);
    relu->getResult(0).replaceAllUsesWith(result);
    relu->erase();
  }
}

struct AbsorbEpiloguesPass : public impl::AbsorbEpiloguesPassBase<AbsorbEpiloguesPass> {
  void runOnOperation() override { absorbEpilogues(getOperation()); }
};

} // namespace
} // namespace kiln
