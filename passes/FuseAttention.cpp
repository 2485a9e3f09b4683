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
// torch's nn.MultiheadAttention export (the scale on q before the matmul),
// torch.onnx.export's (dynamo) scaled_dot_product_attention (q and k^T each
// scaled by the scale's root, k^T regrouped through the heads, the weights'
// NaN guard) and ONNX Attention as kiln's importer expands it all end in it. The transposes that make k^T are folded
// into one transpose of the keys, which the kernel reads through as index
// math, so the head split runs no kernel either. Keys and values repeated for
// grouped-query heads (repeat_kv) are read before the repeat: the op takes
// fewer key/value heads, and the kernel reads each once for its group.
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

/// torch's export of scaled_dot_product_attention writes k^T as
/// `reshape(transpose(reshape(k, [B * H, Sk, D]), last two), [B, H, D, Sk])`:
/// the heads merged into one batch dim for the transpose, then split again. A
/// reshape that keeps the last two dims only regroups the matrices, so this is
/// k (as [B, H, Sk, D]) transposed. Returns that k, a reshape of the first
/// reshape's input, or null when `kt` is not made so.
Value keysOfRegroupedTranspose(OpBuilder &b, Location loc, Value kt) {
  auto split = kt.getDefiningOp<ReshapeOp>();
  auto t = split ? split.getInput().getDefiningOp<TransposeOp>() : TransposeOp();
  auto merge = t ? t.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!merge)
    return {};
  ArrayRef<int64_t> perm = t.getPermutation();
  int64_t rank = static_cast<int64_t>(perm.size());
  for (int64_t d = 0; d < rank; ++d)
    if (perm[d] != (d < rank - 2 ? d : (d == rank - 2 ? rank - 1 : rank - 2)))
      return {};
  Value keys = merge.getInput();
  SymShape x = getSymShape(keys.getType()), merged = getSymShape(merge.getType()),
           out = getSymShape(split.getType());
  // Every dim compared and every dim of the new shape known (an unknown dim
  // is null, and two nulls would compare equal).
  auto known = [](ArrayRef<DimExpr> dims) {
    return llvm::all_of(dims, [](DimExpr d) { return static_cast<bool>(d); });
  };
  if (x.size() < 2 || merged.size() < 2 || out.size() < 2 || !known(out) ||
      !known(ArrayRef<DimExpr>(x).take_back(2)) || !known(ArrayRef<DimExpr>(merged).take_back(2)) ||
      x.end()[-2] != merged.end()[-2] || x.end()[-1] != merged.end()[-1] ||
      out.end()[-2] != x.end()[-1] || out.end()[-1] != x.end()[-2])
    return {};
  SmallVector<DimExpr> rows(out.begin(), out.end() - 2);
  rows.push_back(x.end()[-2]);
  rows.push_back(x.end()[-1]);
  Value shape = SymbolicConstantOp::create(
      b, loc, RankedTensorType::get({static_cast<int64_t>(rows.size())}, b.getI64Type()),
      DimsAttr::getCanonical(b.getContext(), rows));
  Operation *reshape = createInferred(b, loc, ReshapeOp::getOperationName(), {keys, shape}, {});
  if (!reshape) {
    shape.getDefiningOp()->erase();
    return {};
  }
  return reshape->getResult(0);
}

/// torch's export of scaled_dot_product_attention guards the weights `p` as
/// `select(is_nan(p), 0, p)`: a query row that sees no key (a left-padded
/// row) weighs nothing instead of making its output NaN, which the next
/// layer's keys and values would carry to every row. The guard's select,
/// when `p` is read by it and its is_nan alone, else null.
SelectOp nanGuard(Value p) {
  if (!llvm::hasNItems(p.getUses(), 2))
    return SelectOp();
  SelectOp select;
  IsNanOp isNan;
  for (Operation *user : p.getUsers()) {
    if (auto s = dyn_cast<SelectOp>(user))
      select = s;
    else if (auto n = dyn_cast<IsNanOp>(user))
      isNan = n;
  }
  std::optional<double> zero = select ? scalarConstant(select.getOnTrue()) : std::nullopt;
  if (!isNan || !isNan.getResult().hasOneUse() || select.getCondition() != isNan.getResult() ||
      select.getOnFalse() != p || !zero || *zero != 0 || select.getType() != p.getType())
    return SelectOp();
  return select;
}

/// What the chain ending in `softmax` is made of, when it is attention.
struct Chain {
  MatmulOp scores, weighted;
  Value query, keysT; ///< the scores' operands, their scales taken into `scale`
  Value mask;
  double scale = 1.0;
  bool zeroMaskedRows = false; ///< the weights carried torch's NaN guard
  /// Query heads a key/value head serves where the matmuls broadcast them
  /// (broadcastGroups), else 0.
  int64_t groups = 0;
  SmallVector<Operation *> dead; ///< replaced, in the order to erase them
};

/// onnxruntime's GroupQueryAttention as kiln's importer expands it: q [L..,
/// H, G, S, D] against kT [L.., H, 1, D, T] and v [L.., H, 1, T, Dv], each
/// key/value head broadcast by the matmuls over its G query heads (G static,
/// 2 or more; H static). Returns G when the operands are so, else 0.
int64_t broadcastGroups(Value q, Value kt, Value v) {
  SymShape x = getSymShape(q.getType()), y = getSymShape(kt.getType()),
           z = getSymShape(v.getType());
  size_t rank = x.size();
  if (rank < 4 || y.size() != rank || z.size() != rank)
    return 0;
  const size_t g = rank - 3;
  auto one = [](DimExpr d) {
    std::optional<int64_t> n = getConstantDimValue(d);
    return n && *n == 1;
  };
  std::optional<int64_t> groups = getConstantDimValue(x[g]), heads = getConstantDimValue(x[g - 1]);
  if (!groups || *groups < 2 || !heads || !one(y[g]) || !one(z[g]))
    return 0;
  for (size_t d = 0; d < g; ++d)
    if (!x[d] || x[d] != y[d] || x[d] != z[d])
      return 0;
  return *groups;
}

/// `x` reshaped to `dims` (every one known), or null when it cannot be.
Value reshapeTo(OpBuilder &b, Location loc, Value x, ArrayRef<DimExpr> dims) {
  if (llvm::any_of(dims, [](DimExpr d) { return !d; }))
    return {};
  Value shape = SymbolicConstantOp::create(
      b, loc, RankedTensorType::get({static_cast<int64_t>(dims.size())}, b.getI64Type()),
      DimsAttr::getCanonical(b.getContext(), SmallVector<DimExpr>(dims)));
  Operation *reshape = createInferred(b, loc, ReshapeOp::getOperationName(), {x, shape}, {});
  if (!reshape) {
    shape.getDefiningOp()->erase();
    return {};
  }
  return reshape->getResult(0);
}

/// `dims` with dims `g - 1` and `g` merged into their product.
SmallVector<DimExpr> mergedAt(ArrayRef<DimExpr> dims, size_t g) {
  SmallVector<DimExpr> out(dims.begin(), dims.end());
  out[g - 1] = mulDims(out[g - 1], out[g]);
  out.erase(out.begin() + g);
  return out;
}

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
  if (rank < 2 || (axis != -1 && axis != rank - 1))
    return std::nullopt;
  // fp16/bf16 exports take the softmax in float32 (transformers' eager
  // attention: softmax(scores.float()).to(dtype)): a cast up before it and
  // back after it. The kernel keeps scores and weights in float32 anyway (its
  // compute type), so the pair goes with the chain; what changes is that the
  // scores are not rounded to the narrow type before the softmax and the
  // weights not after it, the same as the precision modes' kernels.
  // From the softmax to the values matmul, in order: the ops replaced.
  SmallVector<Operation *> toWeighted;
  Value probsOut = softmax.getResult();
  // The NaN guard, on the weights in the softmax's type or after the cast.
  auto skipGuard = [&] {
    if (SelectOp guard = c.zeroMaskedRows ? SelectOp() : nanGuard(probsOut)) {
      toWeighted.push_back(guard.getCondition().getDefiningOp());
      toWeighted.push_back(guard);
      probsOut = guard.getResult();
      c.zeroMaskedRows = true;
    }
  };
  skipGuard();
  if (!probsOut.hasOneUse())
    return std::nullopt;
  Value x = softmax.getInput();
  Operation *castUp = nullptr;
  if (auto down = dyn_cast<CastOp>(*probsOut.getUsers().begin())) {
    Type wide = probs.getElementType(), narrow = getElementTypeOrSelf(down.getType());
    CastOp up = floatCast(x, narrow, wide);
    // Only f16/bf16 in f32: what the kernel computes them in. An f32 softmax
    // taken in f64 would lose its wider arithmetic in a float kernel.
    if (!up || !(narrow.isF16() || narrow.isBF16()) || !wide.isF32())
      return std::nullopt;
    toWeighted.push_back(down);
    probsOut = down.getResult();
    skipGuard();
    if (!probsOut.hasOneUse())
      return std::nullopt;
    x = up.getInput();
    castUp = up;
  }
  c.weighted = dyn_cast<MatmulOp>(*probsOut.getUsers().begin());
  if (!isPlainMatmul(c.weighted) || c.weighted.getLhs() != probsOut ||
      c.weighted.getTransposeRhs())
    return std::nullopt;
  c.dead = {c.weighted};
  c.dead.append(toWeighted.rbegin(), toWeighted.rend());
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
  } else if (auto select = singleUseDef<SelectOp>(x)) {
    // A boolean mask: select(seen, scores, -inf) (onnxruntime's
    // GroupQueryAttention as kiln's importer expands it). The kernel's
    // boolean mask is that select.
    std::optional<double> off = scalarConstant(select.getOnFalse());
    Value scoresSide = select.getOnTrue();
    if (!off || !std::isinf(*off) || *off > 0 || !leadsToScores(scoresSide) ||
        scoresSide.getType() != select.getType())
      return std::nullopt;
    c.mask = select.getCondition();
    c.dead.push_back(select);
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
  // torch's export scales q and k^T each by the scale's square root before
  // the matmul: a constant factor of either goes into the scale.
  auto unscaled = [&](Value operand) {
    auto mul = singleUseDef<MulOp>(operand);
    if (!mul || mul.getType() != operand.getType())
      return operand;
    std::optional<double> lhs = scalarConstant(mul.getLhs()), rhs = scalarConstant(mul.getRhs());
    Value other = rhs ? mul.getLhs() : mul.getRhs();
    if ((!lhs && !rhs) || other.getType() != mul.getType())
      return operand;
    c.scale *= rhs ? *rhs : *lhs;
    c.dead.push_back(mul);
    return other;
  };
  c.query = unscaled(c.scores.getLhs());
  c.keysT = unscaled(c.scores.getRhs());
  // One rank and the same leading dims for q, k^T and v; feature dims the
  // kernel's tiles hold; one float type.
  Value q = c.query, kt = c.keysT, v = c.weighted.getRhs();
  auto qType = cast<RankedTensorType>(q.getType());
  auto vType = cast<RankedTensorType>(v.getType());
  if (qType.getRank() != rank || cast<RankedTensorType>(kt.getType()).getRank() != rank ||
      vType.getRank() != rank)
    return std::nullopt;
  if (!sameLeadingDims(q, kt) || !sameLeadingDims(q, v)) {
    c.groups = broadcastGroups(q, kt, v);
    if (!c.groups)
      return std::nullopt;
  }
  int64_t d = qType.getDimSize(rank - 1), dv = vType.getDimSize(rank - 1);
  if (ShapedType::isDynamic(d) || ShapedType::isDynamic(dv) || d < 1 || dv < 1 ||
      d > kMaxHeadDim || dv > kMaxHeadDim)
    return std::nullopt;
  Type maskElement = c.mask ? cast<RankedTensorType>(c.mask.getType()).getElementType() : Type();
  if (!isa<FloatType>(qType.getElementType()) ||
      (c.mask && maskElement != qType.getElementType() && !maskElement.isInteger(1)))
    return std::nullopt;
  return c;
}

/// Erases the transposes, reshapes, broadcasts and shape constants that made
/// `v` when nothing reads them any more. Views only, not
/// eraseUnreadProducers' every dead op: the pass holds the softmaxes it has
/// yet to match, and a chain erased back into one of them would leave a
/// dangling pointer.
void eraseUnreadViews(Value v) {
  Operation *op = v ? v.getDefiningOp() : nullptr;
  while (op && isa<TransposeOp, ReshapeOp, BroadcastToOp, SymbolicConstantOp>(op) &&
         op->use_empty()) {
    Operation *next = op->getNumOperands() ? op->getOperand(0).getDefiningOp() : nullptr;
    Value shape = isa<ReshapeOp, BroadcastToOp>(op) ? op->getOperand(1) : Value();
    op->erase();
    if (shape && shape.getDefiningOp() && shape.use_empty() &&
        isa<SymbolicConstantOp, ConstantOp>(shape.getDefiningOp()))
      shape.getDefiningOp()->erase();
    op = next;
  }
}

/// Grouped-query heads as transformers' repeat_kv writes them (and kiln's
/// importer expands ONNX Attention's and GroupQueryAttention's):
/// `reshape(broadcast_to(reshape(x, [L.., H, 1, S, D]), [L.., H, G, S, D]),
/// [L.., H * G, S, D])`, each of x's H heads repeated for G query heads in a
/// row. Returns x, or null when `v` is not made so.
Value repeatedHeadsSource(Value v) {
  auto merge = v.getDefiningOp<ReshapeOp>();
  auto broadcast = merge ? merge.getInput().getDefiningOp<BroadcastToOp>() : BroadcastToOp();
  auto unsqueeze = broadcast ? broadcast.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!unsqueeze)
    return {};
  Value x = unsqueeze.getInput();
  SymShape src = getSymShape(x.getType()), one = getSymShape(unsqueeze.getType()),
           wide = getSymShape(broadcast.getType()), out = getSymShape(v.getType());
  const size_t rank = out.size();
  if (rank < 3 || src.size() != rank || one.size() != rank + 1 || wide.size() != rank + 1 ||
      llvm::any_of(out, [](DimExpr d) { return !d; }))
    return {};
  // [L.., H] kept, a 1 inserted, [S, D] kept; broadcast only along the 1;
  // the heads merged with it.
  const size_t h = rank - 3;
  std::optional<int64_t> heads = getConstantDimValue(src[h]),
                         groups = getConstantDimValue(wide[h + 1]),
                         merged = getConstantDimValue(out[h]);
  std::optional<int64_t> unit = getConstantDimValue(one[h + 1]);
  if (!heads || !groups || !merged || !unit || *unit != 1 || *heads * *groups != *merged)
    return {};
  for (size_t d = 0; d < rank; ++d) {
    size_t wideDim = d <= h ? d : d + 1;
    if (src[d] != one[wideDim] || src[d] != wide[wideDim] || (d != h && src[d] != out[d]))
      return {};
  }
  return x;
}

/// Reads the key and value heads of `attention` before their repeat_kv when
/// both were repeated the same way: the kernel then reads each key/value row
/// once for its group of query heads, not once a query head.
void readGroupedHeads(AttentionOp attention) {
  Value k = attention.getKey(), v = attention.getValue();
  Value kSource = repeatedHeadsSource(k), vSource = repeatedHeadsSource(v);
  if (!kSource || !vSource)
    return;
  int64_t h = cast<RankedTensorType>(k.getType()).getRank() - 3;
  if (getSymShape(kSource.getType())[h] != getSymShape(vSource.getType())[h])
    return;
  attention.getKeyMutable().assign(kSource);
  attention.getValueMutable().assign(vSource);
  eraseUnreadViews(k);
  if (v != k)
    eraseUnreadViews(v);
}

/// Rewrites `operands` (q, k as rows, v, the mask if any) of a chain whose
/// matmuls broadcast each key/value head over its query heads (Chain::groups)
/// into kiln.attention's grouped form, and `resultType` into the attention's
/// ([L.., H * G, S, Dv]). The reshapes it built go to `built`. False when a
/// mask varies along the group but not the heads (no grouped form has it),
/// or a reshape cannot be built.
bool regroup(OpBuilder &b, Location loc, SmallVectorImpl<Value> &operands, Type &resultType,
             SmallVectorImpl<Value> &built) {
  SymShape q = getSymShape(operands[0].getType());
  const size_t rank = q.size(), g = rank - 3;
  auto dropUnit = [&](Value x) {
    SmallVector<DimExpr> dims(getSymShape(x.getType()));
    dims.erase(dims.begin() + g);
    return reshapeTo(b, loc, x, dims);
  };
  SmallVector<Value> out = {reshapeTo(b, loc, operands[0], mergedAt(q, g))};
  if (out.back())
    out.push_back(dropUnit(operands[1]));
  if (out.back())
    out.push_back(dropUnit(operands[2]));
  if (out.back() && operands.size() > 3) {
    // The mask's dims as the scores' rank has them (leading 1s where it has
    // fewer): along (heads, group), both 1 (dropped) or both full (merged).
    SymShape m = getSymShape(operands[3].getType());
    SmallVector<DimExpr> full(rank - m.size(), getConstantDim(b.getContext(), 1));
    full.append(m.begin(), m.end());
    auto is = [](DimExpr d, DimExpr want) { return d && want && d == want; };
    DimExpr one = getConstantDim(b.getContext(), 1);
    if (is(full[g - 1], one) && is(full[g], one)) {
      full.erase(full.begin() + g);
      out.push_back(reshapeTo(b, loc, operands[3], full));
    } else if (is(full[g - 1], q[g - 1]) && is(full[g], q[g])) {
      out.push_back(reshapeTo(b, loc, operands[3], mergedAt(full, g)));
    } else {
      out.push_back(Value());
    }
  }
  for (Value v : out)
    if (v)
      built.push_back(v);
  if (llvm::any_of(out, [](Value v) { return !v; }))
    return false;
  resultType = makeTensorType(mergedAt(getSymShape(resultType), g),
                              cast<RankedTensorType>(resultType).getElementType());
  operands.assign(out.begin(), out.end());
  return true;
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
      Value kt = chain->keysT;
      Value k = chain->scores.getTransposeRhs() ? Value() : keysOfRegroupedTranspose(b, loc, kt);
      if (!k)
        k = keysAsRows(b, loc, kt, chain->scores.getTransposeRhs());
      SmallVector<Value> operands = {chain->query, k, chain->weighted.getRhs()};
      if (chain->mask)
        operands.push_back(chain->mask);
      Type resultType = chain->weighted.getType();
      // Broadcast groups: the query heads merged ([L.., H * G, S, D]), the
      // keys' and values' unit dim dropped (H heads, each serving G), the
      // mask merged or dropped likewise; the result split again after.
      SmallVector<Value> regrouped;
      if (chain->groups && !regroup(b, loc, operands, resultType, regrouped)) {
        for (Value r : llvm::reverse(regrouped))
          eraseUnreadViews(r);
        eraseUnreadViews(k);
        continue;
      }
      SmallVector<NamedAttribute> attributes = {
          b.getNamedAttr("scale", b.getF64FloatAttr(chain->scale))};
      if (chain->zeroMaskedRows)
        attributes.push_back(b.getNamedAttr("zero_masked_rows", b.getUnitAttr()));
      Operation *attention =
          createInferred(b, loc, AttentionOp::getOperationName(), operands, attributes, resultType);
      Value result = attention ? attention->getResult(0) : Value();
      if (result && chain->groups)
        result = reshapeTo(b, loc, result, getSymShape(chain->weighted.getType()));
      if (!result) {
        // Symbolic dims the chain knew and the op's inference does not: keep
        // the chain rather than change a type its users rely on.
        if (attention && attention->use_empty())
          attention->erase();
        for (Value r : llvm::reverse(regrouped))
          eraseUnreadViews(r);
        eraseUnreadViews(k);
        continue;
      }
      chain->weighted.getResult().replaceAllUsesWith(result);
      for (Operation *op : chain->dead)
        op->erase();
      // What made k^T (a transpose, or the regrouping reshapes), now read by
      // nothing.
      eraseUnreadViews(kt);
    }
    getOperation().walk([](AttentionOp attention) { readGroupedHeads(attention); });
  }
};

} // namespace
} // namespace kiln
