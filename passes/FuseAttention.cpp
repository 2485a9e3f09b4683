//===- FuseAttention.cpp - scaled dot-product attention as one op ---------===//
//
// Exporters write attention as five ops per layer: the scores matmul
// `q @ k^T`, a scale (a division by sqrt(d), or a multiplication), an optional
// additive mask, a softmax over the keys and the matmul by the values. Run as
// they are, the [.., Sq, Sk] scores go to memory three times (the matmul writes
// them, the softmax reads and writes them) and the values matmul reads them
// again. `kiln.attention` computes the same thing as one kernel that keeps the
// scores of a tile of queries on chip (CudaEmitter's attention schedule).
//
// The chain is matched from the softmax: HuggingFace's reshape/permute form,
// torch's nn.MultiheadAttention export (the scale on q before the matmul: it
// stays a producer the kernel reads through) and ONNX Attention as kiln's
// importer expands it all end in it. The transposes that make k^T are folded
// into one transpose of the keys, which the kernel reads through as index
// math, so the head split runs no kernel either.
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Matching.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The largest feature dims (of the queries and keys, and of the values) the
/// attention kernel keeps a tile of in shared memory (CudaEmitter sizes its
/// tiles by them).
constexpr int64_t kMaxHeadDim = 256;


/// A plain matmul: no layout flag on the left, no bias, no activation.
bool isPlainMatmul(MatmulOp m) {
  return m && !m.getTransposeLhs() && !m.getBias() &&
         m.getActivation() == Activation::none;
}

/// The leading (batch, head) dims of `a` and `b` are the same dims: the matmul
/// does not broadcast them (kiln.attention's operands share them).
bool sameLeadingDims(Value a, Value b) {
  SymShape x = getSymShape(a.getType()), y = getSymShape(b.getType());
  if (x.size() != y.size())
    return false;
  for (size_t d = 0; d + 2 < x.size(); ++d)
    if (x[d] != y[d])
      return false;
  return true;
}

/// The keys as rows ([.., Sk, D]) for a scores matmul whose right operand is
/// `rhs`: itself when the matmul reads it transposed, else a transpose of it
/// swapping its last two dims, composed with the transpose that made it (the
/// transpose's folder drops an identity).
Value keysAsRows(OpBuilder &b, Location loc, Value rhs, bool readTransposed) {
  if (readTransposed)
    return rhs;
  int64_t rank = cast<RankedTensorType>(rhs.getType()).getRank();
  SmallVector<int64_t> swap;
  for (int64_t d = 0; d < rank; ++d)
    swap.push_back(d);
  std::swap(swap[rank - 1], swap[rank - 2]);
  Value input = rhs;
  SmallVector<int64_t> perm = swap;
  if (auto t = rhs.getDefiningOp<TransposeOp>()) {
    // result dim i of the new transpose is dim perm[swap[i]] of t's input.
    ArrayRef<int64_t> inner = t.getPermutation();
    for (int64_t d = 0; d < rank; ++d)
      perm[d] = inner[swap[d]];
    input = t.getInput();
  }
  return b.createOrFold<TransposeOp>(loc, input, b.getDenseI64ArrayAttr(perm));
}

/// What the chain ending in `softmax` is made of, when it is attention.
struct Chain {
  MatmulOp scores, weighted;
  Value mask;
  double scale = 1.0;
  SmallVector<Operation *> dead; ///< replaced, in the order to erase them
};

/// A cast between float types whose result only the chain reads, from
/// `from` to `to`, else none.
CastOp floatCast(Value v, Type from, Type to) {
  auto cast = singleUseDef<CastOp>(v);
  if (!cast || getElementTypeOrSelf(cast.getInput().getType()) != from ||
      getElementTypeOrSelf(cast.getType()) != to)
    return CastOp();
  return cast;
}

std::optional<Chain> matchAttention(SoftmaxOp softmax) {
  Chain c;
  auto probs = cast<RankedTensorType>(softmax.getType());
  int64_t rank = probs.getRank();
  int64_t axis = softmax.getAxis();
  if (rank < 2 || (axis != -1 && axis != rank - 1) || !softmax.getResult().hasOneUse())
    return std::nullopt;
  // fp16/bf16 exports take the softmax in float32 (transformers' eager
  // attention: softmax(scores.float()).to(dtype)): a cast up before it and
  // back after it. The kernel keeps scores and weights in float32 anyway (its
  // compute type), so the pair goes with the chain; what changes is that the
  // scores are not rounded to the narrow type before the softmax and the
  // weights not after it, the same as the precision modes' kernels.
  Value probsOut = softmax.getResult();
  Value x = softmax.getInput();
  Operation *castDown = nullptr, *castUp = nullptr;
  if (auto down = dyn_cast<CastOp>(*softmax->getUsers().begin())) {
    Type wide = probs.getElementType(), narrow = getElementTypeOrSelf(down.getType());
    CastOp up = floatCast(x, narrow, wide);
    // Only f16/bf16 in f32: what the kernel computes them in. An f32 softmax
    // taken in f64 would lose its wider arithmetic in a float kernel.
    if (!up || !(narrow.isF16() || narrow.isBF16()) || !wide.isF32() ||
        !down.getResult().hasOneUse())
      return std::nullopt;
    probsOut = down.getResult();
    x = up.getInput();
    castDown = down;
    castUp = up;
  }
  c.weighted = dyn_cast<MatmulOp>(*probsOut.getUsers().begin());
  if (!isPlainMatmul(c.weighted) || c.weighted.getLhs() != probsOut ||
      c.weighted.getTransposeRhs())
    return std::nullopt;
  c.dead = {c.weighted};
  if (castDown)
    c.dead.push_back(castDown);
  c.dead.push_back(softmax);
  if (castUp)
    c.dead.push_back(castUp);
  // An additive mask: the side that leads to the scores matmul is the scores.
  auto leadsToScores = [](Value v) {
    if (auto div = v.getDefiningOp<DivOp>())
      v = div.getLhs();
    else if (auto mul = v.getDefiningOp<MulOp>())
      v = scalarConstant(mul.getLhs()) ? mul.getRhs() : mul.getLhs();
    return static_cast<bool>(v.getDefiningOp<MatmulOp>());
  };
  if (auto add = singleUseDef<AddOp>(x)) {
    Value scoresSide = leadsToScores(add.getLhs()) ? add.getLhs() : add.getRhs();
    Value maskSide = scoresSide == add.getLhs() ? add.getRhs() : add.getLhs();
    // The mask may not widen the scores (the add's result is the scores' shape).
    if (!leadsToScores(scoresSide) || scoresSide.getType() != add.getType())
      return std::nullopt;
    c.mask = maskSide;
    c.dead.push_back(add);
    x = scoresSide;
  }
  if (auto div = singleUseDef<DivOp>(x)) {
    std::optional<double> by = scalarConstant(div.getRhs());
    if (!by || *by == 0 || div.getLhs().getType() != div.getType())
      return std::nullopt;
    c.scale = 1.0 / *by;
    c.dead.push_back(div);
    x = div.getLhs();
  } else if (auto mul = singleUseDef<MulOp>(x)) {
    std::optional<double> lhs = scalarConstant(mul.getLhs()), rhs = scalarConstant(mul.getRhs());
    Value other = rhs ? mul.getLhs() : mul.getRhs();
    if ((!lhs && !rhs) || other.getType() != mul.getType())
      return std::nullopt;
    c.scale = rhs ? *rhs : *lhs;
    c.dead.push_back(mul);
    x = other;
  }
  c.scores = singleUseDef<MatmulOp>(x);
  if (!isPlainMatmul(c.scores))
    return std::nullopt;
  c.dead.push_back(c.scores);
  // One rank and the same leading dims for q, k^T and v; feature dims the
  // kernel's tiles hold; one float type.
  Value q = c.scores.getLhs(), kt = c.scores.getRhs(), v = c.weighted.getRhs();
  auto qType = cast<RankedTensorType>(q.getType());
  auto vType = cast<RankedTensorType>(v.getType());
  if (qType.getRank() != rank || cast<RankedTensorType>(kt.getType()).getRank() != rank ||
      vType.getRank() != rank || !sameLeadingDims(q, kt) || !sameLeadingDims(q, v))
    return std::nullopt;
  int64_t d = qType.getDimSize(rank - 1), dv = vType.getDimSize(rank - 1);
  if (ShapedType::isDynamic(d) || ShapedType::isDynamic(dv) || d < 1 || dv < 1 ||
      d > kMaxHeadDim || dv > kMaxHeadDim)
    return std::nullopt;
  if (!isa<FloatType>(qType.getElementType()) ||
      (c.mask && cast<RankedTensorType>(c.mask.getType()).getElementType() !=
                     qType.getElementType()))
    return std::nullopt;
  return c;
}

struct FuseAttentionPass : public impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp s) { softmaxes.push_back(s); });
    for (SoftmaxOp softmax : softmaxes) {
      std::optional<Chain> chain = matchAttention(softmax);
      if (!chain)
        continue;
      OpBuilder b(chain->weighted);
      Location loc = chain->weighted.getLoc();
      Value k = keysAsRows(b, loc, chain->scores.getRhs(), chain->scores.getTransposeRhs());
      Value kt = chain->scores.getRhs();
      SmallVector<Value> operands = {chain->scores.getLhs(), k, chain->weighted.getRhs()};
      if (chain->mask)
        operands.push_back(chain->mask);
      Operation *attention = createInferred(
          b, loc, AttentionOp::getOperationName(), operands,
          {b.getNamedAttr("scale", b.getF64FloatAttr(chain->scale))}, chain->weighted.getType());
      if (!attention) {
        // Symbolic dims the chain knew and the op's inference does not: keep
        // the chain rather than change a type its users rely on.
        if (k != kt && k.use_empty())
          k.getDefiningOp()->erase();
        continue;
      }
      chain->weighted.getResult().replaceAllUsesWith(attention->getResult(0));
      for (Operation *op : chain->dead)
        op->erase();
      // The transpose that made k^T, now read by nothing.
      if (auto t = kt.getDefiningOp<TransposeOp>(); t && t->use_empty())
        t->erase();
    }
  }
};

} // namespace
} // namespace kiln
