//===- FoldConvAffine.cpp - batch norm folded into the conv before it ------===//
//
// An inference-mode BatchNormalization imports as per-channel arithmetic on its
// input, `(x - mean) * (scale / sqrt(var + eps)) + bias`, which canonicalization
// leaves as a sub, a mul and an add of constants. After a convolution with
// constant weights, each of those is a per-output-channel affine map that the
// weights and bias can take at compile time: `conv(x) * c` is a conv with
// filter `W * c[m]` and bias `b * c[m]`; `conv(x) + c` one with bias `b + c[m]`;
// `conv(x) - c` and `c - conv(x)` likewise. Applied until no such op follows,
// a conv + batch norm becomes one conv (cuDNN's conv-bias-activation once a
// ReLU follows, which --kiln-absorb-epilogues then moves in), whatever the
// size of the weights.
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <optional>
#include <vector>

namespace kiln {
#define GEN_PASS_DEF_FOLDCONVAFFINEPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// One value per output channel of `constant` (shape `constantType`) when it
/// broadcasts against the conv's result (rank `rank`, `channels` on dim 1)
/// only along the channel dim; nullopt otherwise.
std::optional<std::vector<double>> perChannel(RankedTensorType constantType,
                                              ArrayRef<double> values, int64_t rank,
                                              int64_t channels) {
  ArrayRef<int64_t> shape = constantType.getShape();
  int64_t offset = rank - static_cast<int64_t>(shape.size());
  if (offset < 0)
    return std::nullopt;
  bool alongChannels = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) + offset == 1 && shape[d] == channels && channels != 1)
      alongChannels = true;
    else if (shape[d] != 1)
      return std::nullopt;
  }
  if (!alongChannels)
    return std::vector<double>(static_cast<size_t>(channels), values[0]);
  return std::vector<double>(values.begin(), values.end());
}

/// Folds the op after `conv` into it when it is a per-channel mul, add or sub
/// by a constant; true when it did.
bool foldNext(ConvOp conv) {
  Value result = conv.getResult();
  if (!result.hasOneUse() || conv.getActivation() != Activation::none)
    return false;
  Operation *user = *result.getUsers().begin();
  if (!isa<MulOp, AddOp, SubOp>(user) || user->getResult(0).getType() != result.getType())
    return false;
  bool convFirst = user->getOperand(0) == result;
  Value other = user->getOperand(convFirst ? 1 : 0);
  if (other == result)
    return false;
  auto resultType = cast<RankedTensorType>(result.getType());
  auto filterType = dyn_cast<RankedTensorType>(conv.getFilter().getType());
  auto otherType = dyn_cast<RankedTensorType>(other.getType());
  if (!filterType || !otherType || otherType.getElementType() != resultType.getElementType())
    return false;
  std::optional<std::vector<double>> filter = readFloats(conv.getFilter());
  std::optional<std::vector<double>> constant = readFloats(other);
  if (!filter || !constant)
    return false;
  int64_t channels = filterType.getDimSize(0);
  std::optional<std::vector<double>> c =
      perChannel(otherType, *constant, resultType.getRank(), channels);
  if (!c)
    return false;
  std::vector<double> bias(static_cast<size_t>(channels), 0.0);
  if (Value b = conv.getBias()) {
    std::optional<std::vector<double>> read = readFloats(b);
    if (!read || read->size() != bias.size())
      return false;
    bias = *read;
  }
  size_t perChannelWeights = filter->size() / static_cast<size_t>(channels);
  auto scaleFilter = [&](double (*fn)(double, double)) {
    for (size_t i = 0; i < filter->size(); ++i)
      (*filter)[i] = fn((*filter)[i], (*c)[i / perChannelWeights]);
  };
  if (isa<MulOp>(user)) {
    scaleFilter([](double w, double k) { return w * k; });
    for (int64_t m = 0; m < channels; ++m)
      bias[m] *= (*c)[m];
  } else if (isa<AddOp>(user)) {
    for (int64_t m = 0; m < channels; ++m)
      bias[m] += (*c)[m];
  } else if (convFirst) { // conv - c
    for (int64_t m = 0; m < channels; ++m)
      bias[m] -= (*c)[m];
  } else { // c - conv: the negated conv plus c
    scaleFilter([](double w, double) { return -w; });
    for (int64_t m = 0; m < channels; ++m)
      bias[m] = (*c)[m] - bias[m];
  }
  // New constants: the old ones may have other users (tied weights).
  OpBuilder b(conv);
  Value oldFilter = conv.getFilter(), oldBias = conv.getBias();
  conv->setOperand(1, makeConstant(b, conv.getLoc(), filterType, *filter));
  Value newBias = makeConstant(b, conv.getLoc(),
                               RankedTensorType::get({channels}, resultType.getElementType()), bias);
  conv.getBiasMutable().assign(newBias); // keeps the operand segment sizes right
  user->getResult(0).replaceAllUsesWith(result);
  user->erase();
  llvm::SmallPtrSet<Operation *, 3> unused;
  for (Value old : {oldFilter, oldBias, other})
    if (old && old.use_empty() && old.getDefiningOp())
      unused.insert(old.getDefiningOp());
  for (Operation *op : unused)
    eraseDeadWeight(op->getResult(0));
  return true;
}

struct FoldConvAffinePass : public impl::FoldConvAffinePassBase<FoldConvAffinePass> {
  void runOnOperation() override {
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp conv) { convs.push_back(conv); });
    for (ConvOp conv : convs)
      while (foldNext(conv)) {
      }
  }
};

} // namespace
} // namespace kiln
