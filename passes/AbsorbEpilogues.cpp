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

/// True for a float splat constant that is `value` as the model's type
/// holds it (exporters write sqrt(2/pi), 0.044715 and 1/sqrt(2) rounded to
/// it): within a relative 1e-6 in f32 and f64, and in a narrower type
/// `value` rounded to nearest in it (not its neighbour: 0.99609375 is not
/// bf16's 1).
bool isSplatNear(Value v, double value) {
  auto c = dyn_cast_or_null<ConstantOp>(v.getDefiningOp());
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return false;
  APFloat got = dense.getSplatValue<APFloat>();
  auto type = cast<FloatType>(dense.getElementType());
  if (type.getWidth() < 32) {
    APFloat want(value);
    bool lost = false;
    want.convert(type.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return got.bitwiseIsEqual(want);
  }
  return std::fabs(got.convertToDouble() - value) <= 1e-6 * std::fabs(value);
}

/// The ops of one activation (a GELU, a SiLU) over a matmul's result, found
/// by matchGelu or matchSilu: they go once the matmul applies it itself.
struct ActivationMatch {
  Operation *root = nullptr;
  llvm::SmallPtrSet<Operation *, 16> ops;
};

/// The factors of the product tree at `v`: operands of kiln.mul ops, looking
/// through a mul whose one user is the mul above (the tree goes as a whole).
/// The muls are added to `ops`.
void productFactors(Value v, SmallVectorImpl<Value> &factors, ActivationMatch &match) {
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
bool isCubeOf(SmallVectorImpl<Value> &factors, Value x, ActivationMatch &match) {
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

/// The argument of GELU's tanh (`sqrt(2/pi) * (x + 0.044715 * x^3)`, x^3 as
/// x*x*x or pow(x, 3)) at `v`, its ops added to `match`.
bool isTanhArgument(Value v, Value x, ActivationMatch &match) {
  if (!v.hasOneUse())
    return false;
  SmallVector<Value> scaled;
  productFactors(v, scaled, match);
  if (scaled.size() != 2 ||
      !takeFactor(scaled, [](Value f) { return isSplatNear(f, std::sqrt(2.0 / M_PI)); }))
    return false;
  auto sum = dyn_cast_or_null<AddOp>(scaled[0].getDefiningOp());
  if (!sum || !sum.getResult().hasOneUse() || (sum.getLhs() != x && sum.getRhs() != x))
    return false;
  match.ops.insert(sum);
  Value cubic = sum.getLhs() == x ? sum.getRhs() : sum.getLhs();
  if (!cubic.hasOneUse())
    return false;
  SmallVector<Value> cube;
  productFactors(cubic, cube, match);
  return takeFactor(cube, [](Value f) { return isSplatNear(f, 0.044715); }) &&
         isCubeOf(cube, x, match);
}

/// The argument of the exact GELU's erf (`x / sqrt(2)` or `x * (1 / sqrt(2))`)
/// at `v`, its op added to `match`.
bool isErfArgument(Value v, Value x, ActivationMatch &match) {
  if (!v.hasOneUse())
    return false;
  if (auto div = dyn_cast_or_null<DivOp>(v.getDefiningOp());
      div && div.getLhs() == x && isSplatNear(div.getRhs(), M_SQRT2)) {
    match.ops.insert(div);
    return true;
  }
  auto mul = dyn_cast_or_null<MulOp>(v.getDefiningOp());
  if (!mul)
    return false;
  Value scale = mul.getLhs() == x ? mul.getRhs() : mul.getLhs();
  if ((mul.getLhs() != x && mul.getRhs() != x) || !isSplatNear(scale, M_SQRT1_2))
    return false;
  match.ops.insert(mul);
  return true;
}

/// A GELU of `x` as exporters and kiln's Gelu import write it,
/// 0.5 * x * (1 + f), the products in any grouping and order, with f either
/// tanh(sqrt(2/pi) * (x + 0.044715 * x^3)) (gelu_tanh) or erf(x / sqrt(2))
/// (gelu_erf). Every intermediate has one user and every user of `x` is in
/// the chain, so the chain can go.
std::optional<std::pair<ActivationMatch, Activation>> matchGelu(Value x) {
  for (Operation *user : x.getUsers()) {
    // The root is the outermost product: a mul whose factors are x, 0.5 and
    // 1 + f. Try each mul above x's users.
    for (Operation *candidate = user; isa_and_nonnull<MulOp>(candidate);
         candidate = candidate->getResult(0).hasOneUse()
                         ? *candidate->getResult(0).getUsers().begin()
                         : nullptr) {
      ActivationMatch match;
      match.root = candidate;
      SmallVector<Value> outer;
      productFactors(candidate->getResult(0), outer, match);
      if (outer.size() != 3 || !takeFactor(outer, [&](Value f) { return f == x; }) ||
          !takeFactor(outer, [](Value f) { return isSplatNear(f, 0.5); }))
        continue;
      auto add = dyn_cast_or_null<AddOp>(outer[0].getDefiningOp());
      if (!add || !add.getResult().hasOneUse() ||
          !(isSplatNear(add.getLhs(), 1.0) || isSplatNear(add.getRhs(), 1.0)))
        continue;
      Value f = isSplatNear(add.getLhs(), 1.0) ? add.getRhs() : add.getLhs();
      Operation *fn = f.getDefiningOp();
      if (!fn || !f.hasOneUse())
        continue;
      match.ops.insert(add);
      match.ops.insert(fn);
      Activation kind;
      if (auto tanh = dyn_cast<TanhOp>(fn); tanh && isTanhArgument(tanh.getInput(), x, match))
        kind = Activation::gelu_tanh;
      else if (auto erf = dyn_cast<ErfOp>(fn); erf && isErfArgument(erf.getInput(), x, match))
        kind = Activation::gelu_erf;
      else
        continue;
      if (llvm::all_of(x.getUsers(), [&](Operation *u) { return match.ops.contains(u); }))
        return std::make_pair(std::move(match), kind);
    }
  }
  return std::nullopt;
}

/// A SiLU of `x`, `x * sigmoid(x)`, whose ops are x's only users.
std::optional<ActivationMatch> matchSilu(Value x) {
  for (Operation *user : x.getUsers()) {
    auto sigmoid = dyn_cast<SigmoidOp>(user);
    if (!sigmoid || !sigmoid.getResult().hasOneUse())
      continue;
    auto mul = dyn_cast<MulOp>(*sigmoid.getResult().getUsers().begin());
    if (!mul || !((mul.getLhs() == x && mul.getRhs() == sigmoid.getResult()) ||
                  (mul.getRhs() == x && mul.getLhs() == sigmoid.getResult())))
      continue;
    ActivationMatch match;
    match.root = mul;
    match.ops.insert(mul);
    match.ops.insert(sigmoid);
    if (llvm::all_of(x.getUsers(), [&](Operation *u) { return match.ops.contains(u); }))
      return match;
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

/// Whether the activation's result multiplies another matmul's result: a
/// SwiGLU's gate, `silu(x Wg) * (x Wu)`. It stays as it is, so that
/// kiln-merge-sibling-matmuls makes the two matmuls one (a matmul with an
/// activation has no sibling), and the one kernel after them reads both
/// halves either way: fusing the SiLU would save no bytes and cost a call.
bool gatesMatmul(const ActivationMatch &match) {
  for (Operation *user : match.root->getResult(0).getUsers()) {
    auto mul = dyn_cast<MulOp>(user);
    if (!mul)
      continue;
    Value other = mul.getLhs() == match.root->getResult(0) ? mul.getRhs() : mul.getLhs();
    if (isa_and_nonnull<MatmulOp>(other.getDefiningOp()))
      return true;
  }
  return false;
}

/// Whether cuDNN's fused matmuls (runtime fusion engines, whose f32
/// products are TF32 tensor-core products) run a product of `element` as the
/// precision mode promises: f16 and bf16 always; f32 where the mode allows
/// TF32 or narrows it to f16/bf16 (kiln-lower-precision gives the activation
/// back to elementwise ops where it keeps such a product in f32); nothing
/// else.
bool cudnnRunsFused(Type element, StringRef precision) {
  if (element.isF16() || element.isBF16())
    return true;
  return element.isF32() && precision != "fp32";
}

/// Whether a float8 product (kiln-integer-matmuls' FP8 calls) of `element`
/// takes a bias and the tanh GELU: cuBLASLt's FP8 matmul refuses both with
/// an f32 result, which the precision mode keeps where it does not narrow
/// the product (kiln-lower-precision gives fp16/bf16/fp8 products a 16-bit
/// result). ReLU it takes either way; the erf GELU and SiLU never (no cuDNN
/// graph takes float8 operands).
bool float8TakesBiasAndGelu(Type element, StringRef precision) {
  return !element.isF32() || precision == "fp16" || precision == "bf16" || precision == "fp8";
}

/// The epilogues cuBLASLt and cuDNN fuse into the library op: a matmul takes
/// `+ bias` (a vector over its last dim, or a residual of its result's type,
/// on float types) and then a ReLU, a GELU or a SiLU; a conv
/// takes a residual add and a ReLU, or a ReLU, after its bias. The op must be
/// the only user of the value.
void absorbEpilogues(func::FuncOp func, StringRef precision) {
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
    auto product = dyn_cast<MatmulOp>(op);
    const bool float8 = product && product.isFloat8Product();
    const bool float8Wide = float8 && !float8TakesBiasAndGelu(type.getElementType(), precision);
    if (auto matmul = product;
        matmul && !float8Wide && !matmul.getBias() && type.getRank() >= 1 && result.hasOneUse()) {
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
                                        matmul.getTransposeRhs(), matmul.getAlpha(),
                                        matmul.getFloat8ResultAttr());
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
    // cuBLASLt's GELU epilogue is the tanh approximation; the exact (erf)
    // GELU and SiLU are cuDNN graphs' pointwise ops, taken where cuDNN runs
    // the product in the precision the mode promises.
    if (auto matmul = dyn_cast<MatmulOp>(op);
        matmul && matmul.getActivation() == Activation::none && !float8Wide) {
      std::optional<std::pair<ActivationMatch, Activation>> found = matchGelu(result);
      if (!found)
        if (std::optional<ActivationMatch> silu = matchSilu(result); silu && !gatesMatmul(*silu))
          found = std::make_pair(std::move(*silu), Activation::silu);
      // The chain's result must be the product's type (a splat of higher
      // rank would broadcast it).
      if (found && found->first.root->getResult(0).getType() == type &&
          (found->second == Activation::gelu_tanh ||
           (!float8 && cudnnRunsFused(type.getElementType(), precision)))) {
        matmul.setActivation(found->second);
        ActivationMatch &chain = found->first;
        chain.root->getResult(0).replaceAllUsesWith(result);
        SmallVector<Operation *> dead(chain.ops.begin(), chain.ops.end());
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
  using AbsorbEpiloguesPassBase::AbsorbEpiloguesPassBase;
  void runOnOperation() override { absorbEpilogues(getOperation(), precision); }
};

} // namespace
} // namespace kiln
