//===- Attention.cpp - ONNX Attention decomposed onto kiln ops ------------===//
//
// Attention (opset 23+) becomes matmul -> softcap -> bias (mask, causal, padding)
// -> softmax -> matmul over [batch, heads, seq, head_size], with KV-cache concat
// and grouped-query head repetition. The fusion pass is where kiln recognizes the
// pattern again as one attention kernel; here it is spelled out so every backend
// (reference, host, CUDA) runs it from core ops. The same holds for the rest of
// the family: RotaryEmbedding, TensorScatter (the KV-cache write) and
// FlexAttention (ai.onnx.preview), whose modifier subgraphs are inlined.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/ScopeExit.h"

#include <cmath>

using namespace mlir;

namespace kiln::onnx_import {

namespace {

/// [B, S, H * D] -> [B, H, S, D].
Value splitHeads(NodeImporter &n, Chain &s, Value x, int64_t heads) {
  Value b = s(dimPiece(n, x, 0)), seq = s(dimPiece(n, x, 1));
  if (!s.ok)
    return {};
  Value shape = s(concatPieces(n, {b, seq, n.constI64({heads}), n.constI64({-1})}));
  Value split = s.ok ? s(n.create<ReshapeOp>({x, shape})) : Value();
  return s.ok ? s.transpose(split, {0, 2, 1, 3}) : Value();
}

/// [B, Hk, S, D] -> [B, Hk * reps, S, D], each head repeated `reps` times in
/// place; `reps` is a one-element i64 shape vector (a constant, or the head
/// counts' quotient computed from the dims, which folds to a symbolic dim).
Value repeatHeads(NodeImporter &n, Chain &s, Value x, Value reps) {
  Value unit = s(insertUnitDims(n, x, {2}));
  SmallVector<Value> wide;
  for (int64_t i = 0; i < 5 && s.ok; ++i)
    wide.push_back(i == 2 ? reps : s(dimPiece(n, unit, i)));
  Value wideShape = s.ok ? s(concatPieces(n, wide)) : Value();
  Value spread = s.ok ? s(n.create<BroadcastToOp>({unit, wideShape})) : Value();
  SmallVector<Value> merged;
  if (s.ok)
    merged = {s(dimPiece(n, x, 0)), n.constI64({-1}), s(dimPiece(n, x, 2)),
              s(dimPiece(n, x, 3))};
  Value mergedShape = s.ok ? s(concatPieces(n, merged)) : Value();
  return s.ok ? s(n.create<ReshapeOp>({spread, mergedShape})) : Value();
}

} // namespace

LogicalResult convertAttention(NodeImporter &n) {
  auto q0 = n.requiredInput(0), k0 = n.requiredInput(1), v0 = n.requiredInput(2);
  auto isCausal = n.intAttr("is_causal", 0);
  auto qHeadsAttr = n.intAttr("q_num_heads", 0), kvHeadsAttr = n.intAttr("kv_num_heads", 0);
  auto mode = n.intAttr("qk_matmul_output_mode", 0);
  auto softcap = n.floatAttr("softcap", 0.0f);
  auto precision = n.intAttr("softmax_precision", 0);
  if (failed(q0) || failed(k0) || failed(v0) || failed(isCausal) || failed(qHeadsAttr) ||
      failed(kvHeadsAttr) || failed(mode) || failed(softcap) || failed(precision))
    return failure();
  if (*mode < 0 || *mode > 3)
    return n.error("qk_matmul_output_mode must be 0, 1, 2 or 3");
  int64_t rank = NodeImporter::typeOf(*q0).getRank();
  if (rank != 3 && rank != 4)
    return n.error("Q must have rank 3 or 4");
  if (NodeImporter::typeOf(*k0).getRank() != rank || NodeImporter::typeOf(*v0).getRank() != rank)
    return n.error("Q, K and V must have the same rank");
  Type elem = elementTypeOf(*q0);
  Chain s(n);
  Value q = *q0, k = *k0, v = *v0;
  if (rank == 3) {
    if (*qHeadsAttr < 1 || *kvHeadsAttr < 1)
      return n.error("3-D inputs need q_num_heads and kv_num_heads");
    q = splitHeads(n, s, q, *qHeadsAttr);
    k = splitHeads(n, s, k, *kvHeadsAttr);
    v = splitHeads(n, s, v, *kvHeadsAttr);
  }
  if (!s.ok)
    return failure();
  // KV cache: present = concat(past, new) along the sequence.
  auto concatSeq = [&](Value past, Value now) {
    return s(n.create<ConcatOp>({past, now}, {n.named("axis", n.builder().getI64IntegerAttr(2))}));
  };
  Value pastKey = n.input(4), pastValue = n.input(5);
  Value presentKey = pastKey ? concatSeq(pastKey, k) : k;
  Value presentValue = pastValue ? concatSeq(pastValue, v) : v;
  if (!s.ok)
    return failure();
  SymShape qDims = getSymShape(q.getType()), kDims = getSymShape(presentKey.getType());
  auto qHeads = getConstantDimValue(qDims[1]), kHeads = getConstantDimValue(kDims[1]);
  auto headSize = getConstantDimValue(qDims[3]);
  if (qHeads && kHeads && (*kHeads == 0 || *qHeads % *kHeads != 0))
    return n.error("Q has " + Twine(*qHeads) + " heads, not a multiple of the " +
                   Twine(*kHeads) + " KV heads");
  if (!qDims[1] || !kDims[1])
    return n.unsupported("head counts nothing is known about");
  Value keys = presentKey, values = presentValue;
  if (qDims[1] != kDims[1]) {
    // Grouped-query attention: each KV head serves Hq / Hkv query heads. With
    // symbolic head counts the quotient is a dim too; the reshape that merges
    // the repeated heads is guarded to keep the element count, so head counts
    // that do not divide fail the call.
    Value reps = qHeads && kHeads
                     ? n.constI64({*qHeads / *kHeads})
                     : s.bin<DivOp>(s(dimPiece(n, q, 1)), s(dimPiece(n, presentKey, 1)));
    keys = repeatHeads(n, s, presentKey, reps);
    values = repeatHeads(n, s, presentValue, reps);
  }
  Value root; // sqrt(scale): Q * root @ (K^T * root), as ONNX's reference scales both
  if (n.hasAttr("scale")) {
    auto sc = n.floatAttr("scale");
    if (failed(sc))
      return failure();
    root = n.constScalar(elem, std::sqrt(double(*sc)));
  } else if (headSize && *headSize > 0) {
    root = n.constScalar(elem, std::sqrt(1.0 / std::sqrt(double(*headSize))));
  } else {
    // The default scale 1/sqrt(head_size) of a dynamic head size: head_size^-1/4.
    Value d = s(n.create<ReshapeOp>({s(dimPiece(n, q, 3)), n.constI64({})}));
    Value df = s.ok ? s(castTo(n, d, elem)) : Value();
    root = s.ok ? s(unary<RsqrtOp>(n, s(unary<SqrtOp>(n, df)))) : Value();
    if (!s.ok)
      return failure();
  }
  Value scores = s(n.create<MatmulOp>(
      {s.bin<MulOp>(q, root), s.bin<MulOp>(s.transpose(keys, {0, 1, 3, 2}), root)}));
  if (*softcap > 0) {
    Value cap = n.constScalar(elem, *softcap);
    scores = s.bin<MulOp>(s(unary<TanhOp>(n, s.bin<DivOp>(scores, cap))), cap);
  }
  Value capped = scores;
  if (!s.ok)
    return failure();

  // Additive bias: the mask (bool masks become 0 / -inf), causality, padding.
  Value negInf = n.constScalar(elem, -INFINITY), zero = n.constScalar(elem, 0);
  Value bias;
  auto addBias = [&](Value b) { bias = bias ? s.bin<AddOp>(bias, b) : b; };
  if (Value mask = n.input(3)) {
    SymShape m = getSymShape(mask.getType());
    if (m.empty())
      return n.error("the attention mask must have at least one dim");
    if (m.back() != kDims[2]) {
      auto have = getConstantDimValue(m.back());
      auto want = getConstantDimValue(kDims[2]);
      if (have && want && *have > *want)
        return n.error("the attention mask covers " + Twine(*have) + " keys; there are " +
                       Twine(*want));
      // Pad the mask's last dim to the key length with "masked out"; with
      // symbolic lengths the pad is their difference (a mask longer than the
      // keys is a negative pad, which the pad refuses at run time).
      int64_t r = m.size();
      Value fill = elementTypeOf(mask).isInteger(1) ? n.constScalar(elementTypeOf(mask), 0)
                                                     : n.constScalar(elementTypeOf(mask), -INFINITY);
      Value pads;
      if (have && want) {
        SmallVector<int64_t> amounts(2 * r, 0);
        amounts[2 * r - 1] = *want - *have;
        pads = n.constI64(amounts);
      } else {
        Value extra = s.bin<SubOp>(s(dimPiece(n, presentKey, 2)), s(dimPiece(n, mask, r - 1)));
        pads = s.ok ? s(concatPieces(n, {n.constI64(SmallVector<int64_t>(2 * r - 1, 0)), extra}))
                    : Value();
      }
      mask = s.ok ? s(n.create<PadOp>({mask, pads, fill},
                                      {n.named("mode", PadModeAttr::get(n.context(), PadMode::constant))}))
                  : Value();
      if (!s.ok)
        return failure();
    }
    if (s.ok && elementTypeOf(mask).isInteger(1))
      mask = s(select(n, mask, zero, negInf));
    else if (s.ok)
      mask = s(castTo(n, mask, elem));
    addBias(mask);
  }
  if (*isCausal) {
    // Masked where key position j > query position i + past length.
    Value rows = s.iota(scores, 2, 0, 2), cols = s.iota(scores, 3, 1, 2);
    if (pastKey && s.ok)
      rows = s.bin<AddOp>(rows, s(n.create<ReshapeOp>({s(dimPiece(n, pastKey, 2)), n.constI64({})})));
    Value future = s.ok ? s(compare(n, CompareDirection::gt, cols, rows)) : Value();
    if (s.ok)
      addBias(s(select(n, future, negInf, zero)));
  }
  if (Value seqlen = n.input(6)) {
    // Keys at or past each batch's non-padded length are masked: [B, 1, 1, Skv].
    Value cols = s.iota(scores, 3, 3, 4);
    Value lengths = s.ok ? s(insertUnitDims(n, s(castTo(n, seqlen, n.builder().getI64Type())), {1, 2, 3}))
                         : Value();
    Value inside = s.ok ? s(compare(n, CompareDirection::lt, cols, lengths)) : Value();
    if (s.ok)
      addBias(s(select(n, inside, zero, negInf)));
  }
  Value withBias = bias ? s.bin<AddOp>(scores, bias) : scores;
  if (!s.ok)
    return failure();

  Value logits = withBias;
  if (*precision) {
    Type p = convertElementType(n.context(), *precision);
    if (!p || !isa<FloatType>(p))
      return n.error("softmax_precision must name a floating-point type");
    logits = s(castTo(n, logits, p));
  }
  Value probs = s(n.create<SoftmaxOp>({logits}, {n.named("axis", n.builder().getI64IntegerAttr(-1))}));
  probs = s.ok ? s(castTo(n, probs, elem)) : Value();
  Value out = s.ok ? s(n.create<MatmulOp>({probs, values})) : Value();
  if (rank == 3 && s.ok) {
    Value t = s.transpose(out, {0, 2, 1, 3});
    Value shape = s.ok ? s(concatPieces(n, {s(dimPiece(n, t, 0)), s(dimPiece(n, t, 1)),
                                            n.constI64({-1})}))
                       : Value();
    out = s.ok ? s(n.create<ReshapeOp>({t, shape})) : Value();
  }
  if (!s.ok)
    return failure();
  Value qkOut = *mode <= 1 ? capped : (*mode == 2 ? withBias : probs);
  return n.setResults({out, presentKey, presentValue, qkOut});
}


namespace {
/// x[..., start:end:step] on the last axis of a rank-4 tensor; `start` and
/// `end` are one-element i64 vectors (constants, or pieces of dims).
Value lastAxisSlice(NodeImporter &n, Chain &s, Value x, Value start, Value end, int64_t step) {
  if (!s.ok || !start || !end)
    return {};
  Value starts = s(concatPieces(n, {n.constI64({0, 0, 0}), start}));
  Value ends = s.ok ? s(concatPieces(n, {n.constI64({INT64_MAX, INT64_MAX, INT64_MAX}), end}))
                    : Value();
  return s.ok ? s(n.create<SliceOp>({x, starts, ends, n.constI64({1, 1, 1, step})})) : Value();
}
} // namespace

LogicalResult convertRotaryEmbedding(NodeImporter &n) {
  auto x0 = n.requiredInput(0), cosCache = n.requiredInput(1), sinCache = n.requiredInput(2);
  auto interleaved = n.intAttr("interleaved", 0), rotaryDim = n.intAttr("rotary_embedding_dim", 0),
       numHeads = n.intAttr("num_heads", 0);
  if (failed(x0) || failed(cosCache) || failed(sinCache) || failed(interleaved) ||
      failed(rotaryDim) || failed(numHeads))
    return failure();
  auto out = rotaryEmbedding(n, *x0, *cosCache, *sinCache, n.input(3), *interleaved, *rotaryDim,
                             *numHeads);
  return failed(out) ? failure() : n.setResults({*out});
}

FailureOr<Value> rotaryEmbedding(NodeImporter &n, Value input, Value cosCache, Value sinCache,
                                 Value positions, bool interleaved, int64_t rotaryDim,
                                 int64_t numHeads) {
  Value x0 = input;
  int64_t rank = NodeImporter::typeOf(x0).getRank();
  if (rank != 3 && rank != 4)
    return n.error("input must have rank 3 or 4");
  Chain s(n);
  // Work on [batch, seq, heads, head_size].
  Value x = x0;
  if (rank == 4) {
    x = s.transpose(x, {0, 2, 1, 3});
  } else {
    if (numHeads < 1)
      return n.error("3-D input needs num_heads");
    Value shape = s(concatPieces(n, {s(dimPiece(n, x, 0)), s(dimPiece(n, x, 1)),
                                     n.constI64({numHeads}), n.constI64({-1})}));
    x = s.ok ? s(n.create<ReshapeOp>({x, shape})) : Value();
  }
  if (!s.ok)
    return failure();
  // The rotated width: rotary_embedding_dim, else the head size; with a
  // dynamic head size and no attribute, twice the caches' last dim (they
  // hold one angle per rotated pair), so the bounds below are dims.
  auto headSize = getConstantDimValue(getSymShape(x.getType())[3]);
  std::optional<int64_t> rot = rotaryDim ? std::optional<int64_t>(rotaryDim) : headSize;
  if (rot && (*rot % 2 != 0 || (headSize && *rot > *headSize)))
    return n.error("rotary_embedding_dim must be even and at most the head size");
  Value halfPiece, rotPiece;
  if (rot) {
    halfPiece = n.constI64({*rot / 2});
    rotPiece = n.constI64({*rot});
  } else {
    int64_t cacheRank = NodeImporter::typeOf(cosCache).getRank();
    halfPiece = s(dimPiece(n, cosCache, cacheRank - 1));
    rotPiece = s.bin<AddOp>(halfPiece, halfPiece);
  }
  Value cosv = cosCache, sinv = sinCache;
  if (Value ids = positions) {
    auto gather = [&](Value cache) {
      return s(n.create<GatherOp>({cache, ids}, {n.named("axis", n.builder().getI64IntegerAttr(0))}));
    };
    cosv = gather(cosv);
    sinv = gather(sinv);
  }
  cosv = s.ok ? s(insertUnitDims(n, cosv, {2})) : Value();
  sinv = s.ok ? s(insertUnitDims(n, sinv, {2})) : Value();
  Value zero = n.constI64({0}), one = n.constI64({1});
  Value x1 = interleaved ? lastAxisSlice(n, s, x, zero, rotPiece, 2)
                          : lastAxisSlice(n, s, x, zero, halfPiece, 1);
  Value x2 = interleaved ? lastAxisSlice(n, s, x, one, rotPiece, 2)
                          : lastAxisSlice(n, s, x, halfPiece, rotPiece, 1);
  Value real = s.ok ? s.bin<SubOp>(s.bin<MulOp>(cosv, x1), s.bin<MulOp>(sinv, x2))
                    : Value();
  Value imag = s.ok ? s.bin<AddOp>(s.bin<MulOp>(sinv, x1), s.bin<MulOp>(cosv, x2))
                    : Value();
  if (!s.ok)
    return failure();
  auto concatLast = [&](ValueRange parts) {
    return s(n.create<ConcatOp>(parts, {n.named("axis", n.builder().getI64IntegerAttr(-1))}));
  };
  Value rotated;
  if (interleaved) {
    Value pairs = concatLast({s(insertUnitDims(n, real, {4})), s(insertUnitDims(n, imag, {4}))});
    Value shape = s.ok ? s(concatPieces(n, {s(dimPiece(n, x, 0)), s(dimPiece(n, x, 1)),
                                            s(dimPiece(n, x, 2)), rotPiece}))
                       : Value();
    rotated = s.ok ? s(n.create<ReshapeOp>({pairs, shape})) : Value();
  } else {
    rotated = concatLast({real, imag});
  }
  Value out = rotated;
  // The dims past the rotated ones pass through (none when all rotate; with a
  // dynamic head size the slice may be empty).
  if (s.ok && !(rot && headSize && *rot == *headSize))
    out = concatLast({rotated, lastAxisSlice(n, s, x, rotPiece, n.constI64({INT64_MAX}), 1)});
  if (!s.ok)
    return failure();
  if (rank == 4) {
    out = s.transpose(out, {0, 2, 1, 3});
  } else {
    Value shape = s(n.create<ShapeOfOp>({x0}));
    out = s.ok ? s(n.create<ReshapeOp>({out, shape})) : Value();
  }
  if (!s.ok)
    return failure();
  return out;
}

} // namespace kiln::onnx_import

namespace kiln::onnx_import {

// TensorScatter-24, the KV-cache write: kiln.cache_write of update's rows
// along `axis` at each batch's write index (0 without write_indices; modulo
// the cache length in circular mode, cache_write's `circular`). Inlined,
// each present element is a choice between update and past_cache, fused into
// one kernel with its readers; under --kv-cache-in-place, where past_cache is
// a model input and present_cache a model output, the write goes into the
// cache's own bytes (kiln-kv-cache-in-place). A linear write whose rows leave
// the cache is the call's error (ONNX leaves it undefined).
LogicalResult convertTensorScatter(NodeImporter &n) {
  auto past = n.requiredInput(0), update = n.requiredInput(1);
  auto axis = n.intAttr("axis", -2);
  auto mode = n.stringAttr("mode", "linear");
  if (failed(past) || failed(update) || failed(axis) || failed(mode))
    return failure();
  if (*mode != "linear" && *mode != "circular")
    return n.error("mode '" + *mode + "' is not linear or circular");
  int64_t rank = NodeImporter::typeOf(*past).getRank();
  if (rank < 2 || NodeImporter::typeOf(*update).getRank() != rank)
    return n.error("past_cache and update must have one rank of at least 2 (batch, ..., "
                   "sequence, ...)");
  auto axes = normalizeAxes(n, {*axis}, rank);
  if (failed(axes))
    return failure();
  int64_t a = (*axes)[0];
  if (a == 0)
    return n.error("axis must not be the batch dim 0");
  // update holds past_cache's dims but along the axis, and write_indices one
  // index per batch: checked here where both are known, by a guard on every
  // call where they are symbols (a circular write longer than the cache
  // would write a row twice, and a short write_indices would leave batches
  // without a position).
  SymShape pastDims = getSymShape(NodeImporter::typeOf(*past));
  SymShape readDims = pastDims;
  readDims[a] = DimExpr();
  auto rows = requireDimsOf(n, *update, readDims,
                            "update must have past_cache's dims but along the axis");
  if (failed(rows) ||
      failed(requireLessEqualDims(n, getSymShape(NodeImporter::typeOf(*update))[a], pastDims[a],
                                  "update must not be longer than past_cache along the axis")))
    return failure();
  Chain c(n);
  // Each batch's write index (0 for every batch without).
  Value positions;
  if (Value indices = n.input(2)) {
    auto type = NodeImporter::typeOf(indices);
    if (type.getRank() != 1 || !type.getElementType().isInteger(64))
      return n.error("write_indices must be a 1-D int64 tensor (one index per batch)");
    auto perBatch = requireDimsOf(n, indices, {pastDims[0]},
                                  "write_indices must hold one index per batch");
    if (failed(perBatch))
      return failure();
    positions = *perBatch;
  } else {
    positions = c(n.create<BroadcastToOp>({n.constI64({0}, true), c(dimPiece(n, *past, 0))}));
  }
  SmallVector<NamedAttribute> attrs = {n.named("axis", n.builder().getI64IntegerAttr(a))};
  if (*mode == "circular")
    attrs.push_back(n.named("circular", n.builder().getUnitAttr()));
  Value present = c.ok ? c(n.create<CacheWriteOp>({*past, *rows, positions}, attrs)) : Value();
  return c.done({present});
}

} // namespace kiln::onnx_import

namespace kiln::onnx_import {

namespace {
/// Applies a modifier subgraph of one input and one output (FlexAttention's
/// score_mod and prob_mod) to `x` in place: the subgraph imports into a
/// scratch region, its ops move to the insertion point with its argument
/// replaced by `x`, and its one yielded value is the result.
FailureOr<Value> inlineModifier(NodeImporter &n, const onnx::GraphProto &graph, Value x,
                                StringRef what) {
  if (graph.input_size() != 1 || graph.output_size() != 1)
    return n.error(what + " must take one tensor and give one");
  // The scratch op sits in the graph while the subgraph imports, so the
  // folder puts the constants it makes in the function, not in the scratch.
  OperationState st(n.loc(), ScanOp::getOperationName());
  st.addRegion();
  Operation *scratch = n.builder().create(st);
  llvm::scope_exit erase([&] { scratch->erase(); });
  if (failed(n.importSubgraph(graph, scratch->getRegion(0), {x.getType()})))
    return failure();
  Block &body = scratch->getRegion(0).front();
  Value result = body.getTerminator()->getOperand(0);
  if (NodeImporter::typeOf(result).getElementType() != elementTypeOf(x) ||
      NodeImporter::typeOf(result).getRank() != NodeImporter::typeOf(x).getRank())
    return n.error(what + " must keep its input's shape and element type");
  IRMapping map;
  map.map(body.getArgument(0), x);
  for (Operation &op : body.without_terminator())
    n.builder().clone(op, map);
  // Its dims too: an error where constants differ, a guard where symbols do.
  return requireDimsOf(n, map.lookupOrDefault(result), getSymShape(NodeImporter::typeOf(x)),
                       (what + " must keep its input's shape and element type").str());
}
} // namespace

// FlexAttention (ai.onnx.preview, version 1): attention with a score modifier
// before the softmax and a probability modifier after it, both subgraphs,
// inlined where they apply (a mask, a bias, a soft cap fuse with the
// softmax's kernel). As the op defines it: Q and K each scaled by sqrt(scale)
// in their type, scores and probabilities in softmax_precision (f32 for
// narrower inputs), query head h reads KV head h / (Hq / Hkv).
LogicalResult convertFlexAttention(NodeImporter &n) {
  auto q = n.requiredInput(0), k = n.requiredInput(1), v = n.requiredInput(2);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  for (Value x : {*q, *k, *v})
    if (NodeImporter::typeOf(x).getRank() != 4)
      return n.error("Q, K and V must be (batch, heads, sequence, head size)");
  auto qType = NodeImporter::typeOf(*q), kType = NodeImporter::typeOf(*k);
  Type element = qType.getElementType();
  if (!isa<FloatType>(element) || elementTypeOf(*k) != element || elementTypeOf(*v) != element)
    return n.error("Q, K and V must share one float element type");
  SymShape qDims = getSymShape(qType), kDims = getSymShape(kType),
           vDims = getSymShape(NodeImporter::typeOf(*v));
  for (const SymShape &dims : {qDims, kDims, vDims})
    if (llvm::any_of(dims, [](DimExpr d) { return !d; }))
      return n.unsupported("Q, K or V with a dim of unknown size");
  auto kSame = requireDimsOf(n, *k, {qDims[0], DimExpr(), DimExpr(), qDims[3]},
                            "K must share Q's batch and head size");
  if (failed(kSame))
    return failure();
  auto vSame = requireDimsOf(n, *v, {qDims[0], kDims[1], kDims[2], DimExpr()},
                             "V must share Q's batch and K's heads and sequence");
  if (failed(vSame))
    return failure();
  k = *kSame;
  v = *vSame;
  kDims = getSymShape(NodeImporter::typeOf(*k));
  vDims = getSymShape(NodeImporter::typeOf(*v));
  // Query head h reads KV head h / (Hq / Hkv): a group count that is a symbol
  // when the head counts are (the reshapes guard that Hkv divides Hq).
  DimExpr hq = qDims[1], hkv = kDims[1];
  auto hqValue = getConstantDimValue(hq), hkvValue = getConstantDimValue(hkv);
  if (hqValue && hkvValue && (*hkvValue <= 0 || *hqValue % *hkvValue != 0))
    return n.error("Q's head count must be a multiple of K's");
  DimExpr groups = hq.floorDiv(hkv);
  bool grouped = hq != hkv;

  auto scaleAttr = n.floatAttr("scale", 0.0f);
  Type softmaxType = computeTypeOf(n, *q);
  if (n.hasAttr("softmax_precision")) {
    auto code = n.intAttr("softmax_precision");
    if (failed(code))
      return failure();
    switch (*code) {
    case 1: softmaxType = n.builder().getF32Type(); break;
    case 10: softmaxType = n.builder().getF16Type(); break;
    case 16: softmaxType = n.builder().getBF16Type(); break;
    case 11: softmaxType = n.builder().getF64Type(); break;
    default:
      return n.error("softmax_precision " + Twine(*code) +
                     " is not FLOAT, FLOAT16, BFLOAT16 or DOUBLE");
    }
  }
  if (failed(scaleAttr))
    return failure();
  Chain c(n);
  MLIRContext *ctx = n.context();
  auto D = [&](int64_t x) { return getConstantDim(ctx, x); };
  // Q and K are each scaled by sqrt(scale) in their type, scale in f32 (the
  // default 1/sqrt(head size) computed at run time when that is a symbol).
  Value rootScale;
  Type f32 = n.builder().getF32Type();
  if (*scaleAttr != 0.0f || n.hasAttr("scale")) {
    rootScale = n.constScalar(element, std::sqrt((double)*scaleAttr));
  } else if (auto e = getConstantDimValue(qDims[3])) {
    rootScale = n.constScalar(element, std::sqrt((double)(float)(1.0 / std::sqrt(double(*e)))));
  } else {
    Value headSize = c.reshape(c(castTo(n, shapeConstant(n, {qDims[3]}), f32)), {});
    Value scale = c.bin<DivOp>(n.constScalar(f32, 1.0), c.un<SqrtOp>(headSize));
    rootScale = c.ok ? c(castTo(n, c.un<SqrtOp>(scale), element)) : Value();
  }
  Value qs = c.bin<MulOp>(*q, rootScale), ks = c.bin<MulOp>(*k, rootScale);
  Value vs = *v;
  // Grouped heads: Q as [B, Hkv, G, L, E] against K and V as [B, Hkv, 1, S, *]
  // (the matmul broadcasts the group), scores back to [B, Hq, L, S].
  if (grouped) {
    qs = c.reshape(qs, {qDims[0], hkv, groups, qDims[2], qDims[3]});
    ks = c.reshape(ks, {kDims[0], hkv, D(1), kDims[2], kDims[3]});
    vs = c.reshape(vs, {vDims[0], hkv, D(1), vDims[2], vDims[3]});
  }
  int64_t rank = grouped ? 5 : 4;
  SmallVector<int64_t> swapLast;
  for (int64_t i = 0; i < rank; ++i)
    swapLast.push_back(i);
  std::swap(swapLast[rank - 1], swapLast[rank - 2]);
  Value scores = c.matmul(qs, c.transpose(ks, swapLast));
  if (grouped)
    scores = c.reshape(scores, {qDims[0], hq, qDims[2], kDims[2]});
  scores = c.ok ? c(castTo(n, scores, softmaxType)) : Value();
  if (!c.ok)
    return failure();
  for (StringRef name : {"score_mod", "prob_mod"}) {
    if (name == "prob_mod") {
      scores = c(n.create<SoftmaxOp>({scores}, {n.named("axis", n.builder().getI64IntegerAttr(3))}));
      if (!c.ok)
        return failure();
    }
    if (!n.hasAttr(name))
      continue;
    auto graph = n.graphAttr(name);
    if (failed(graph))
      return failure();
    auto modified = inlineModifier(n, **graph, scores, name);
    if (failed(modified))
      return failure();
    scores = *modified;
  }
  Value probs = scores;
  if (grouped)
    probs = c.reshape(probs, {qDims[0], hkv, groups, qDims[2], kDims[2]});
  Value y = c.matmul(probs, c(castTo(n, vs, softmaxType)));
  if (grouped)
    y = c.reshape(y, {qDims[0], hq, qDims[2], vDims[3]});
  return c.done({c(castTo(n, y, element))});
}

} // namespace kiln::onnx_import
