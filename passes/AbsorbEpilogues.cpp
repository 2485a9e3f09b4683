//===- AbsorbEpilogues.cpp - library ops take their epilogues -===//
//
// Before fusion groups elementwise ops into kernels, the ops cuBLASLt and cuDNN
// apply themselves move into the library op that produces their operand.
//===----------------------------------------------------------------------===//

#include "ir/Kiln/KernelTypes.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <optional>

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

/// True for a float splat constant within a relative 1e-6 of `value`
/// (exporters write sqrt(2/pi) and 0.044715 rounded to the model's type).
bool isSplatNear(Value v, double value) {
  auto c = dyn_cast_or_null<ConstantOp>(v.getDefiningOp());
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return false;
  double got = dense.getSplatValue<APFloat>().convertToDouble();
  return std::fabs(got - value) <= 1e-6 * std::fabs(value);
}

/// The ops of one GELU (tanh form) over a matmul's result, found by
/// matchGeluTanh: they go once the matmul applies the epilogue itself.
struct GeluMatch {
  Operation *root = nullptr;
  llvm::SmallPtrSet<Operation *, 16> ops;
};

/// The factors of the product tree at `v`: operands of kiln.mul ops, looking
/// through a mul whose one user is the mul above (the tree goes as a whole).
/// The muls are added to `ops`.
void productFactors(Value v, SmallVectorImpl<Value> &factors, GeluMatch &match) {
  auto mul = dyn_cast_or_null<MulOp>(v.getDefiningOp());
  if (!mul) {
    factors.push_back(v);
    return;
  }
  match.ops.insert(mul);
  for (Value operand : {mul.getLhs(), mul.getRhs()}) {
    auto inner = dyn_cast_or_null<MulOp>(operand.getDefiningOp());
    if (inner && inner.getResult().hasOneUse())
      productFactors(operand, factors, match);
    else
      factors.push_back(operand);
  }
}

/// Removes from `factors` one that `pred` accepts; false when none does.
template <typename Pred> bool takeFactor(SmallVectorImpl<Value> &factors, Pred pred) {
  for (auto it = factors.begin(); it != factors.end(); ++it)
    if (pred(*it)) {
      factors.erase(it);
      return true;
    }
  return false;
}

/// `x * x * x` or `pow(x, 3)` as a product's remaining factors.
bool isCubeOf(SmallVectorImpl<Value> &factors, Value x, GeluMatch &match) {
  if (factors.size() == 3)
    return llvm::all_of(factors, [&](Value f) { return f == x; });
  if (factors.size() != 1)
    return false;
  auto pow = dyn_cast_or_null<PowOp>(factors[0].getDefiningOp());
  if (!pow || pow.getLhs() != x || !isSplatNear(pow.getRhs(), 3.0) || !pow.getResult().hasOneUse())
    return false;
  match.ops.insert(pow);
  return true;
}

/// GELU's tanh approximation of `x`, as exporters and kiln's Gelu import
/// write it: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), the
/// products in any grouping and order, x^3 as x*x*x or pow(x, 3). Every
/// intermediate has one user and every user of `x` is in the chain, so the
/// chain can go.
std::optional<GeluMatch> matchGeluTanh(Value x) {
  for (Operation *user : x.getUsers()) {
    // The root is the outermost product: a mul whose factors are x, 0.5 and
    // 1 + tanh(...). Try each mul above x's users.
    for (Operation *candidate = user; isa_and_nonnull<MulOp>(candidate);
         candidate = candidate->getResult(0).hasOneUse()
                         ? *candidate->getResult(0).getUsers().begin()
                         : nullptr) {
      GeluMatch match;
      match.root = candidate;
      SmallVector<Value> outer;
      productFactors(candidate->getResult(0), outer, match);
      Value onePlusTanh;
      if (outer.size() != 3 || !takeFactor(outer, [&](Value f) { return f == x; }) ||
          !takeFactor(outer, [](Value f) { return isSplatNear(f, 0.5); }))
        continue;
      onePlusTanh = outer[0];
      auto add = dyn_cast_or_null<AddOp>(onePlusTanh.getDefiningOp());
      if (!add || !add.getResult().hasOneUse())
        continue;
      Value tanhValue = isSplatNear(add.getLhs(), 1.0) ? add.getRhs() : add.getLhs();
      auto tanh = dyn_cast_or_null<TanhOp>(tanhValue.getDefiningOp());
      if (!tanh || !tanh.getResult().hasOneUse() ||
          !(isSplatNear(add.getLhs(), 1.0) || isSplatNear(add.getRhs(), 1.0)))
        continue;
      match.ops.insert(add);
      match.ops.insert(tanh);
      if (!tanh.getInput().hasOneUse())
        continue;
      SmallVector<Value> scaled;
      productFactors(tanh.getInput(), scaled, match);
      if (scaled.size() != 2 ||
          !takeFactor(scaled, [](Value f) { return isSplatNear(f, std::sqrt(2.0 / M_PI)); }))
        continue;
      auto sum = dyn_cast_or_null<AddOp>(scaled[0].getDefiningOp());
      if (!sum || !sum.getResult().hasOneUse() || (sum.getLhs() != x && sum.getRhs() != x))
        continue;
      match.ops.insert(sum);
      Value cubic = sum.getLhs() == x ? sum.getRhs() : sum.getLhs();
      if (!cubic.hasOneUse())
        continue;
      SmallVector<Value> cube;
      productFactors(cubic, cube, match);
      if (!takeFactor(cube, [](Value f) { return isSplatNear(f, 0.044715); }) ||
          !isCubeOf(cube, x, match))
        continue;
      if (llvm::all_of(x.getUsers(), [&](Operation *u) { return match.ops.contains(u); }))
        return match;
    }
  }
  return std::nullopt;
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

/// A kiln.matmul_nbits takes a following add of a vector over its last dim or
/// a residual of its result's type, which its kernel adds before rounding
/// (a decoder's `x + o_proj(h)`: no add kernel). Its only user must be the
/// add.
bool absorbNBitsBias(MatmulNBitsOp op) {
  Value result = op.getResult();
  auto type = cast<RankedTensorType>(result.getType());
  if (op.getBias() || !result.hasOneUse())
    return false;
  auto add = dyn_cast<AddOp>(*result.getUsers().begin());
  if (!add || add.getType() != type || add->getBlock() != op->getBlock())
    return false;
  Value bias = add.getLhs() == result ? add.getRhs() : add.getLhs();
  auto biasType = cast<RankedTensorType>(bias.getType());
  bool vector = biasType.getRank() == 1 && getSymShape(biasType)[0] == getSymShape(type).back();
  if ((!vector && biasType != type) || bias == result)
    return false;
  OpBuilder b(add);
  auto fused = MatmulNBitsOp::create(b, op.getLoc(), op.getInput(), op.getWeights(),
                                     op.getScales(), op.getZeroPoints(), bias, op.getBits(),
                                     op.getBlockSize());
  if (fused.getType() != type) {
    fused.erase();
    return false;
  }
  add.getResult().replaceAllUsesWith(fused.getResult());
  add.erase();
  op.erase();
  return true;
}

/// The epilogues cuBLASLt and cuDNN fuse into the library op: a matmul takes
/// `+ bias` (a vector over its last dim, or a residual of its result's type,
/// on float types) and then a ReLU or a tanh-form GELU; a conv
/// takes a residual add and a ReLU, or a ReLU, after its bias. The op must be
/// the only user of the value.
void absorbEpilogues(func::FuncOp func) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<MatmulOp, ConvOp, MatmulNBitsOp>(op) && op->getParentOp() == func)
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    if (auto nbits = dyn_cast<MatmulNBitsOp>(op)) {
      absorbNBitsBias(nbits);
      continue;
    }
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
        // A vector over the last dim (the BIAS epilogue), or a residual of
        // the result's type (C with beta 1: the add's kernel goes).
        bool vector = biasType.getRank() == 1 && getSymShape(biasType)[0] == getSymShape(type).back();
        if ((vector || biasType == type) && bias != result) {
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
    // cuBLASLt's GELU epilogue is the tanh approximation: only that form is
    // absorbed. The exact (erf) GELU stays a generated kernel after the matmul.
    if (auto matmul = dyn_cast<MatmulOp>(op);
        matmul && matmul.getActivation() == Activation::none) {
      if (std::optional<GeluMatch> gelu = matchGeluTanh(result)) {
        matmul.setActivation(Activation::gelu_tanh);
        gelu->root->getResult(0).replaceAllUsesWith(result);
        SmallVector<Operation *> dead(gelu->ops.begin(), gelu->ops.end());
        llvm::sort(dead, [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
        for (Operation *d : dead)
          d->erase();
        continue;
      }
    }
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
