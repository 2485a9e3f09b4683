//===- SelectConvLayout.cpp - NCHW or NHWC per convolution ------------------===//
//
// cuDNN's tensor-core convolutions read fp16/bf16 activations channels last
// (NHWC) and the filter as KRSC; given NCHW they transpose internally or fall
// back to slower kernels. ONNX models are NCHW, so this pass picks a layout per
// conv by a fixed rule and makes the layout explicit in the IR: the chosen
// conv is `channels_last`, its operands and result pass through transposes,
// and transposes that meet compose away (transpose(transpose(x)) is x when the
// permutations undo each other), so a chain of NHWC convs keeps its
// activations NHWC between them.
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_SELECTCONVLAYOUTPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The rule: 2-D, f16/bf16, one group, input and output channels static
/// multiples of 8 (what tensor cores take without padding).
bool wantsChannelsLast(ConvOp conv) {
  auto input = cast<RankedTensorType>(conv.getInput().getType());
  auto filter = cast<RankedTensorType>(conv.getFilter().getType());
  Type element = input.getElementType();
  if (conv.getChannelsLast() || input.getRank() != 4 || conv.getGroup() != 1 ||
      !(element.isF16() || element.isBF16()))
    return false;
  std::optional<int64_t> in = getConstantDimValue(getSymShape(input)[1]);
  std::optional<int64_t> out = getConstantDimValue(getSymShape(filter)[0]);
  return in && out && *in % 8 == 0 && *out % 8 == 0;
}

/// `v` permuted by `permutation` (result dim i is v's dim permutation[i]):
/// through v's own transpose when it has one (the two compose; the identity
/// is v itself), folded at compile time for a constant.
Value permuted(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> permutation) {
  SmallVector<int64_t> composed(permutation);
  if (auto t = v.getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> inner = t.getPermutation();
    for (size_t i = 0; i < composed.size(); ++i)
      composed[i] = inner[permutation[i]];
    v = t.getInput();
  }
  if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
    return v;
  return b.createOrFold<TransposeOp>(loc, v, b.getDenseI64ArrayAttr(composed));
}

constexpr int64_t kToLast[] = {0, 2, 3, 1}, kToFirst[] = {0, 3, 1, 2};

/// A 2-D pool cuDNN runs whose input is an NHWC value moved back to NCHW (an
/// NHWC conv's result): it pools the NHWC value instead, so the transposes
/// around it compose away with the convs'.
bool poolsChannelsLast(PoolOp pool) {
  auto t = pool.getInput().getDefiningOp<TransposeOp>();
  return t && !pool.getChannelsLast() && llvm::equal(t.getPermutation(), kToFirst) &&
         pool.runsInCudnn();
}

/// `op` with `operands` and channels_last set (its result type inferred from
/// them), the result moved back to NCHW.
template <typename OpTy> Value channelsLastCopy(OpBuilder &b, OpTy op, ValueRange operands) {
  SmallVector<NamedAttribute> attributes;
  for (NamedAttribute a : op->getAttrs())
    if (a.getName() != "channels_last")
      attributes.push_back(a);
  attributes.push_back(b.getNamedAttr("channels_last", b.getBoolAttr(true)));
  auto nhwc = OpTy::create(b, op.getLoc(), operands, attributes);
  return TransposeOp::create(b, op.getLoc(), nhwc.getResult(), b.getDenseI64ArrayAttr(kToFirst));
}

void selectLayouts(func::FuncOp func) {
  SmallVector<Operation *> candidates;
  func.walk([&](Operation *op) {
    if (isa<ConvOp, PoolOp>(op))
      candidates.push_back(op);
  });
  // In order: a conv's producer is rewritten first, so its NCHW transpose is
  // there for this conv's NHWC transpose to compose with (and a pool's test
  // sees it).
  for (Operation *op : candidates) {
    if (auto pool = dyn_cast<PoolOp>(op)) {
      if (!poolsChannelsLast(pool))
        continue;
      OpBuilder b(pool);
      Value x = permuted(b, pool.getLoc(), pool.getInput(), kToLast);
      pool.getResult().replaceAllUsesWith(channelsLastCopy(b, pool, {x}));
      pool.erase();
      continue;
    }
    auto conv = cast<ConvOp>(op);
    if (!wantsChannelsLast(conv))
      continue;
    OpBuilder b(conv);
    Location loc = conv.getLoc();
    SmallVector<Value> operands = {permuted(b, loc, conv.getInput(), kToLast),
                                   permuted(b, loc, conv.getFilter(), kToLast)};
    if (Value bias = conv.getBias())
      operands.push_back(bias);
    if (Value residual = conv.getResidual())
      operands.push_back(permuted(b, loc, residual, kToLast));
    Value back = channelsLastCopy(b, conv, operands);
    conv.getResult().replaceAllUsesWith(back);
    conv.erase();
  }
  // Transposes the composition left without users.
  SmallVector<Operation *> dead;
  func.walk([&](TransposeOp t) {
    if (t->use_empty())
      dead.push_back(t);
  });
  for (Operation *t : llvm::reverse(dead))
    if (t->use_empty())
      t->erase();
}

struct SelectConvLayoutPass : public impl::SelectConvLayoutPassBase<SelectConvLayoutPass> {
  void runOnOperation() override { selectLayouts(getOperation()); }
};

} // namespace
} // namespace kiln
