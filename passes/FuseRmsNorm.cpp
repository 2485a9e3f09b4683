//===- FuseRmsNorm.cpp - RMS normalization as one op -----------------------===//
//
// Exporters write RMSNorm (Llama, Mistral, T5, and onnxruntime's
// SimplifiedLayerNormalization as kiln's importer expands it) as five ops or
// more: the square, the mean over the last dims, the epsilon, the root (sqrt
// and a reciprocal, rsqrt, or a division) and the product, with casts around
// them when a half-precision model normalizes in float32, and a weight after.
// As they stand they are three kernels (the upcast input, the mean, the
// scaling), the row read three times. `kiln.rms_norm` is one row kernel.
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Matching.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_FUSERMSNORMPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The one user of `v`, when it has exactly one and it is an `OpT`.
template <typename OpT> OpT onlyUser(Value v) {
  return v.hasOneUse() ? dyn_cast<OpT>(*v.getUsers().begin()) : OpT();
}

/// The operand of a binary op that is not `v`, when the other one is `v`.
Value otherOperand(Operation *op, Value v) {
  if (op->getNumOperands() != 2)
    return {};
  if (op->getOperand(0) == v)
    return op->getOperand(1);
  if (op->getOperand(1) == v)
    return op->getOperand(0);
  return {};
}

/// What the chain at a mean-of-squares reduce is made of, when it is RMSNorm.
struct Chain {
  Value input, scale, result;
  int64_t axis = -1;
  double epsilon = 0;
  SmallVector<Operation *> dead; ///< replaced, users first
  /// The casts up of a half-precision input and weight, which other ops may
  /// still read.
  Operation *castUp = nullptr, *weightCastUp = nullptr;
};

std::optional<Chain> matchRmsNorm(ReduceOp mean) {
  Chain c;
  if (mean.getKind() != ReduceKind::mean || !mean.getKeepDims() || !mean.getResult().hasOneUse())
    return std::nullopt;
  // The squares: pow(x, 2) or x * x.
  Value x;
  Operation *square = mean.getInput().getDefiningOp();
  if (!square || !square->getResult(0).hasOneUse())
    return std::nullopt;
  if (auto pow = dyn_cast<PowOp>(square); pow && scalarConstant(pow.getRhs()) == 2.0)
    x = pow.getLhs();
  else if (auto mul = dyn_cast<MulOp>(square); mul && mul.getLhs() == mul.getRhs())
    x = mul.getLhs();
  else
    return std::nullopt;
  auto xType = cast<RankedTensorType>(x.getType());
  if (!isa<FloatType>(xType.getElementType()) || square->getResult(0).getType() != xType)
    return std::nullopt;
  // Over the trailing dims from some axis.
  int64_t rank = xType.getRank();
  SmallVector<int64_t> axes;
  for (int64_t a : mean.getAxes())
    axes.push_back(a < 0 ? a + rank : a);
  llvm::sort(axes);
  if (axes.empty() || axes.back() != rank - 1)
    return std::nullopt;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i))
      return std::nullopt;
  c.axis = axes.front();
  // + epsilon, a non-negative scalar.
  auto add = onlyUser<AddOp>(mean.getResult());
  std::optional<double> epsilon =
      add ? scalarConstant(otherOperand(add, mean.getResult())) : std::nullopt;
  if (!epsilon || !(*epsilon >= 0) || add.getType() != mean.getType() ||
      !add.getResult().hasOneUse())
    return std::nullopt;
  c.epsilon = *epsilon;
  // x * rsqrt(.), x * reciprocal(sqrt(.)) or x / sqrt(.).
  Operation *root = *add.getResult().getUsers().begin();
  Operation *product = nullptr;
  SmallVector<Operation *> rootOps;
  if (auto rsqrt = dyn_cast<RsqrtOp>(root)) {
    product = rsqrt.getResult().hasOneUse() ? *rsqrt.getResult().getUsers().begin() : nullptr;
    if (!isa_and_nonnull<MulOp>(product) || otherOperand(product, rsqrt.getResult()) != x)
      return std::nullopt;
    rootOps = {rsqrt};
  } else if (auto sqrt = dyn_cast<SqrtOp>(root)) {
    if (!sqrt.getResult().hasOneUse())
      return std::nullopt;
    Operation *next = *sqrt.getResult().getUsers().begin();
    if (auto reciprocal = dyn_cast<ReciprocalOp>(next)) {
      product = reciprocal.getResult().hasOneUse() ? *reciprocal.getResult().getUsers().begin()
                                                   : nullptr;
      if (!isa_and_nonnull<MulOp>(product) || otherOperand(product, reciprocal.getResult()) != x)
        return std::nullopt;
      rootOps = {reciprocal, sqrt};
    } else if (auto div = dyn_cast<DivOp>(next); div && div.getLhs() == x) {
      product = div;
      rootOps = {sqrt};
    } else {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  if (product->getResult(0).getType() != xType)
    return std::nullopt;
  c.dead.push_back(product);
  c.dead.append(rootOps);
  c.dead.append({add, mean, square});
  c.input = x;
  c.result = product->getResult(0);
  // A half-precision model normalizing in float32: x = cast(narrow) and the
  // result cast back to that narrow type, perhaps after a product with the
  // weight cast up too (ONNX RMSNormalization's stash_type, as kiln imports
  // it). The kernel computes in float32 and rounds once, as both do.
  if (auto up = x.getDefiningOp<CastOp>()) {
    Type narrow = getElementTypeOrSelf(up.getInput().getType());
    bool half = (narrow.isF16() || narrow.isBF16()) && xType.getElementType().isF32();
    auto down = onlyUser<CastOp>(c.result);
    MulOp wideWeigh;
    CastOp weightCastUp;
    if (!down && half)
      if (auto weigh = onlyUser<MulOp>(c.result))
        if (auto weightUp = otherOperand(weigh, c.result).getDefiningOp<CastOp>();
            weightUp && getElementTypeOrSelf(weightUp.getInput().getType()) == narrow &&
            weigh.getType() == xType) {
          wideWeigh = weigh;
          weightCastUp = weightUp;
          down = onlyUser<CastOp>(weigh.getResult());
        }
    if (down && half && getElementTypeOrSelf(down.getType()) == narrow) {
      c.dead.insert(c.dead.begin(), down);
      if (wideWeigh) {
        c.dead.insert(c.dead.begin() + 1, wideWeigh);
        c.scale = weightCastUp.getInput();
        c.weightCastUp = weightCastUp;
      }
      c.castUp = up;
      c.input = up.getInput();
      c.result = down.getResult();
    }
  }
  // The weight: a product with a tensor of the input's element type over the
  // normalized dims (the result keeps its type).
  if (auto weigh = c.scale ? MulOp() : onlyUser<MulOp>(c.result)) {
    Value w = otherOperand(weigh, c.result);
    auto wType = dyn_cast<RankedTensorType>(w.getType());
    if (wType && wType.getElementType() == getElementTypeOrSelf(c.input.getType()) &&
        wType.getRank() <= rank - c.axis && weigh.getType() == c.result.getType()) {
      c.dead.insert(c.dead.begin(), weigh);
      c.scale = w;
      c.result = weigh.getResult();
    }
  }
  return c;
}

struct FuseRmsNormPass : public impl::FuseRmsNormPassBase<FuseRmsNormPass> {
  void runOnOperation() override {
    SmallVector<ReduceOp> means;
    getOperation().walk([&](ReduceOp r) { means.push_back(r); });
    for (ReduceOp mean : means) {
      std::optional<Chain> chain = matchRmsNorm(mean);
      if (!chain)
        continue;
      Operation *last = chain->result.getDefiningOp();
      OpBuilder b(last);
      SmallVector<NamedAttribute> attributes = {
          b.getNamedAttr("axis", b.getI64IntegerAttr(chain->axis)),
          b.getNamedAttr("epsilon", b.getF32FloatAttr(static_cast<float>(chain->epsilon)))};
      SmallVector<Value> operands = {chain->input};
      if (chain->scale)
        operands.push_back(chain->scale);
      // A weight the op does not take, or a type other than the chain's,
      // keeps the chain.
      Operation *rms = createInferred(b, last->getLoc(), RmsNormOp::getOperationName(), operands,
                                        attributes, chain->result.getType());
      if (!rms)
        continue;
      chain->result.replaceAllUsesWith(rms->getResult(0));
      for (Operation *op : chain->dead)
        op->erase();
      // The float32 copy of a half-precision input, now read by nothing.
      for (Operation *up : {chain->castUp, chain->weightCastUp})
        if (up && up->use_empty())
          up->erase();
    }
  }
};

} // namespace
} // namespace kiln
