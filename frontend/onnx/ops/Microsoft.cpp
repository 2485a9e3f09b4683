//===- Microsoft.cpp - onnxruntime's own ops that LLM exporters write -----===//
//
// onnxruntime-genai's model builder writes decoder LLMs with a few of
// onnxruntime's contrib ops: SimplifiedLayerNormalization (which onnxruntime
// registers in the default domain, version 1) and com.microsoft's
// SkipSimplifiedLayerNormalization, RotaryEmbedding, MatMulNBits and
// GroupQueryAttention. Each
// decomposes onto kiln ops with the semantics of onnxruntime 1.32's CPU
// kernels (test/run/onnxruntime-ops.test runs them against it): narrower
// floats computed in f32 and rounded once.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

#include <cmath>

using namespace mlir;

namespace kiln::onnx_import {

namespace {
/// `scale` (as many elements as the normalized dims of `like`) shaped as
/// those trailing dims.
Value trailingScale(NodeImporter &n, Chain &c, Value scale, Value like, int64_t axis) {
  SymShape dims = getSymShape(NodeImporter::typeOf(like));
  SymShape trailing(dims.begin() + axis, dims.end());
  if (getSymShape(NodeImporter::typeOf(scale)) == trailing)
    return scale;
  return c.reshape(scale, trailing);
}
} // namespace

// SimplifiedLayerNormalization (onnxruntime, default domain): RMS
// normalization, Y = X * rsqrt(mean(X^2) + epsilon) * scale in the scale's
// type, and inv_std_var (f32) as output 1.
LogicalResult convertSimplifiedLayerNormalization(NodeImporter &n) {
  auto x = n.requiredInput(0), scale = n.requiredInput(1);
  auto axis = n.intAttr("axis", -1);
  auto epsilon = n.floatAttr("epsilon", 1e-5f);
  if (failed(x) || failed(scale) || failed(axis) || failed(epsilon) ||
      failed(n.intAttr("stash_type", 1)))
    return failure();
  auto axes = normalizeAxes(n, {*axis}, NodeImporter::typeOf(*x).getRank());
  if (failed(axes))
    return failure();
  Chain c(n);
  Type wide = computeTypeOf(n, *x);
  Value xs = c(castTo(n, *x, wide));
  auto [normed, inv] = rmsNormalize(n, c, xs, (*axes)[0], *epsilon);
  Value s = c.ok ? c(castTo(n, trailingScale(n, c, *scale, *x, (*axes)[0]), wide)) : Value();
  Value y = c.ok ? c(castTo(n, c.bin<MulOp>(normed, s), elementTypeOf(*scale))) : Value();
  Value invStd = c.ok ? c(castTo(n, inv, n.builder().getF32Type())) : Value();
  return c.done({y, invStd});
}

// SkipSimplifiedLayerNormalization (com.microsoft): the residual add and RMS
// normalization of a decoder layer. v = input + skip (+ bias) in f32 for
// narrower inputs; output = rms(v) * gamma; mean (always 0 for this op),
// inv_std_var (f32) and v itself (the next layer's residual) as outputs 1-3.
LogicalResult convertSkipSimplifiedLayerNormalization(NodeImporter &n) {
  auto x = n.requiredInput(0), skip = n.requiredInput(1), gamma = n.requiredInput(2);
  auto epsilon = n.floatAttr("epsilon", 1e-12f);
  if (failed(x) || failed(skip) || failed(gamma) || failed(epsilon))
    return failure();
  int64_t rank = NodeImporter::typeOf(*x).getRank();
  if (rank != 2 && rank != 3)
    return n.error("input must be (batch, sequence, hidden) or (tokens, hidden)");
  // skip is the input's shape (or that without the batch, broadcast over
  // it), gamma and bias one value per hidden unit, as onnxruntime takes them.
  SymShape dims = getSymShape(NodeImporter::typeOf(*x));
  int64_t skipRank = NodeImporter::typeOf(*skip).getRank();
  if (skipRank != rank && !(rank == 3 && skipRank == 2))
    return n.error("skip must be the input's shape or (sequence, hidden)");
  auto skipOk = requireDimsOf(n, *skip, ArrayRef<DimExpr>(dims).take_back(skipRank),
                              "skip must be the input's shape or (sequence, hidden)");
  auto gammaOk = requireDimsOf(n, *gamma, {dims.back()}, "gamma must hold one value per hidden unit");
  if (failed(skipOk) || failed(gammaOk))
    return failure();
  Value bias = n.input(3);
  if (bias) {
    auto biasOk = requireDimsOf(n, bias, {dims.back()}, "bias must hold one value per hidden unit");
    if (failed(biasOk))
      return failure();
    bias = *biasOk;
  }
  Chain c(n);
  Type wide = computeTypeOf(n, *x);
  Type element = elementTypeOf(*x);
  auto widened = [&](Value v) { return c.ok ? c(castTo(n, v, wide)) : Value(); };
  Value sum = c.bin<AddOp>(widened(*x), widened(*skipOk));
  if (bias)
    sum = c.bin<AddOp>(sum, widened(bias));
  auto [normed, inv] = rmsNormalize(n, c, sum, rank - 1, *epsilon);
  Value y = c.ok ? c(castTo(n, c.bin<MulOp>(normed, widened(*gammaOk)), element)) : Value();
  Type f32 = n.builder().getF32Type();
  Value invStd = c.ok ? c(castTo(n, inv, f32)) : Value();
  Value mean = c.ok ? c(n.create<BroadcastToOp>({n.constScalar(f32, 0.0),
                                                 c(n.create<ShapeOfOp>({invStd}))}))
                    : Value();
  Value residual = c.ok ? c(castTo(n, sum, element)) : Value();
  return c.done({y, mean, invStd, residual});
}

// RotaryEmbedding (com.microsoft): ONNX's RotaryEmbedding with the position
// ids as input 1 ([batch, seq], or one start position p: p + s for token s of
// every sequence). Without num_heads a 3-D input's heads are as wide as the
// caches' rotated width.
LogicalResult convertMicrosoftRotaryEmbedding(NodeImporter &n) {
  auto x = n.requiredInput(0), ids = n.requiredInput(1), cosCache = n.requiredInput(2),
       sinCache = n.requiredInput(3);
  auto interleaved = n.intAttr("interleaved", 0), rotaryDim = n.intAttr("rotary_embedding_dim", 0),
       numHeads = n.intAttr("num_heads", 0);
  if (failed(x) || failed(ids) || failed(cosCache) || failed(sinCache) || failed(interleaved) ||
      failed(rotaryDim) || failed(numHeads) || failed(n.floatAttr("scale", 1.0f)) ||
      failed(n.intAttr("is_packed_batching", 0)))
    return failure();
  auto xType = NodeImporter::typeOf(*x);
  if (*rotaryDim > 0 && *numHeads <= 0)
    return n.error("rotary_embedding_dim needs num_heads");
  int64_t heads = *numHeads;
  if (xType.getRank() == 3 && heads <= 0) {
    auto cacheType = NodeImporter::typeOf(*cosCache);
    if (cacheType.getRank() != 2 || cacheType.isDynamicDim(1) || xType.isDynamicDim(2) ||
        cacheType.getDimSize(1) == 0 || xType.getDimSize(2) % (2 * cacheType.getDimSize(1)))
      return n.unsupported("a 3-D input without num_heads whose head size (twice the caches' "
                           "width) is not known at compile time or does not divide its width");
    heads = xType.getDimSize(2) / (2 * cacheType.getDimSize(1));
  }
  auto idsType = NodeImporter::typeOf(*ids);
  if (!idsType.getElementType().isInteger(64) || idsType.getRank() > 2)
    return n.error("position_ids must be int64, one start position or (batch, sequence)");
  Chain c(n);
  Value positions = *ids;
  if (idsType.getRank() == 2) {
    SymShape xDims = getSymShape(xType);
    auto perToken = requireDimsOf(n, *ids, {xDims[0], xDims[xType.getRank() == 4 ? 2 : 1]},
                                  "position_ids must be (batch, sequence) or one start position");
    if (failed(perToken))
      return failure();
    positions = *perToken;
  } else if (idsType.hasStaticShape() && idsType.getNumElements() != 1) {
    return n.error("position_ids must be (batch, sequence) or one start position");
  }
  if (idsType.getRank() < 2) {
    // One start position: p + s for token s, the same for every sequence.
    int64_t seqAxis = xType.getRank() == 4 ? 2 : 1;
    Value start = c.reshape(*ids, {getConstantDim(n.context(), 1), getConstantDim(n.context(), 1)});
    positions = c.bin<AddOp>(start, c.iota(*x, seqAxis, 1, 2));
  }
  if (!c.ok)
    return failure();
  auto out = rotaryEmbedding(n, *x, *cosCache, *sinCache, positions, *interleaved, *rotaryDim,
                             heads);
  return failed(out) ? failure() : n.setResults({*out});
}

// MatMulNBits (com.microsoft): A times the transpose of a weight stored in
// blocks of `bits`-bit integers (low bits first within each byte) with a
// scale and a zero point per block: W[n, k] = (q - zero) * scale, zero
// 2^(bits - 1) when not given, then Y = A W^T + bias, in f32 for narrower A.
// It is kiln.matmul_nbits, whose kernel reads the packed blocks and adds
// the bias before rounding Y once, as onnxruntime does. onnxruntime's CPU kernel at accuracy_level 4
// rounds A to int8 per block first; kiln computes A exactly, as
// onnxruntime's CUDA kernel does.
LogicalResult convertMatMulNBits(NodeImporter &n) {
  auto a = n.requiredInput(0), b = n.requiredInput(1), scales = n.requiredInput(2);
  auto kAttr = n.intAttr("K"), nAttr = n.intAttr("N"), bits = n.intAttr("bits", 4),
       blockSize = n.intAttr("block_size");
  if (failed(a) || failed(b) || failed(scales) || failed(kAttr) || failed(nAttr) ||
      failed(bits) || failed(blockSize) || failed(n.intAttr("accuracy_level", 0)))
    return failure();
  if (n.input(4))
    return n.unsupported("g_idx (act-order GPTQ weights)");
  if (n.hasAttr("weight_prepacked")) {
    auto prepacked = n.intAttr("weight_prepacked");
    if (failed(prepacked))
      return failure();
    if (*prepacked != 0)
      return n.unsupported("weights prepacked for an onnxruntime kernel");
  }
  if (*bits != 2 && *bits != 4 && *bits != 8)
    return n.unsupported("MatMulNBits of " + Twine(*bits) + " bits (2, 4 and 8 are)");
  int64_t K = *kAttr, N = *nAttr, bs = *blockSize;
  if (K <= 0 || N <= 0 || bs < 16 || bs > (1 << 20) || (bs & (bs - 1)) != 0)
    return n.error("K and N must be positive and block_size a power of two from 16 to 2^20");
  int64_t blocks = (K + bs - 1) / bs, blob = bs * *bits / 8;
  auto bType = NodeImporter::typeOf(*b);
  if (!bType.getElementType().isUnsignedInteger(8) || bType.getRank() != 3 ||
      !bType.hasStaticShape() || bType.getShape() != ArrayRef<int64_t>({N, blocks, blob}))
    return n.error("B must be uint8 (N, ceil(K / block_size), block_size * bits / 8) = (" +
                   Twine(N) + ", " + Twine(blocks) + ", " + Twine(blob) + ")");
  auto aType = NodeImporter::typeOf(*a);
  if (aType.getRank() < 1 || !isa<FloatType>(aType.getElementType()))
    return n.error("A must be a float tensor (..., K)");
  if (failed(requireEqualDims(n, getSymShape(aType).back(), getConstantDim(n.context(), K),
                              "A's last dim must be K")))
    return failure();
  Type element = aType.getElementType();
  MLIRContext *ctx = n.context();
  auto D = [&](int64_t x) { return getConstantDim(ctx, x); };
  Chain c(n);
  // Scales, zero points and bias hold what N and the block count say, in
  // the types onnxruntime takes.
  auto count = [](Value v) -> std::optional<int64_t> {
    auto t = NodeImporter::typeOf(v);
    return t.hasStaticShape() ? std::optional<int64_t>(t.getNumElements()) : std::nullopt;
  };
  if (elementTypeOf(*scales) != element || count(*scales) != std::optional<int64_t>(N * blocks))
    return n.error("scales must hold N * ceil(K / block_size) = " + Twine(N * blocks) +
                   " values of A's type");
  Value zp = n.input(3);
  int64_t packedZero = (blocks * *bits + 7) / 8;
  if (zp && elementTypeOf(zp).isUnsignedInteger(8) &&
      count(zp) != std::optional<int64_t>(N * packedZero))
    return n.error("uint8 zero_points must hold N * ceil(blocks * bits / 8) = " +
                   Twine(N * packedZero) + " bytes");
  if (zp && !elementTypeOf(zp).isUnsignedInteger(8) &&
      count(zp) != std::optional<int64_t>(N * blocks))
    return n.error("float zero_points must hold N * ceil(K / block_size) = " +
                   Twine(N * blocks) + " values");
  Value bias = n.input(5);
  if (bias && (elementTypeOf(bias) != element || count(bias) != std::optional<int64_t>(N)))
    return n.error("bias must hold N = " + Twine(N) + " values of A's type");
  Value zero;
  if (zp) {
    Type zpElement = elementTypeOf(zp);
    if (zpElement.isUnsignedInteger(8))
      zero = c.reshape(zp, {D(N), D(packedZero)});
    else if (zpElement != elementTypeOf(*scales))
      return n.error("zero_points must be uint8 (packed) or the scales' type");
    else if (*bits == 8)
      return n.unsupported("float zero points with 8 bits (onnxruntime refuses them)");
    else
      zero = c.reshape(zp, {D(N), D(blocks)});
  }
  Value scale = c.reshape(*scales, {D(N), D(blocks)});
  Value biasRow = bias ? c.reshape(bias, {D(N)}) : Value();
  SmallVector<Value> operands = {*a, *b, scale};
  if (zero)
    operands.push_back(zero);
  if (biasRow)
    operands.push_back(biasRow);
  Value y = c.ok ? c(n.create<MatmulNBitsOp>(
                       operands,
                       {n.named("bits", n.builder().getI64IntegerAttr(*bits)),
                        n.named("block_size", n.builder().getI64IntegerAttr(bs)),
                        n.named("operandSegmentSizes",
                                n.builder().getDenseI32ArrayAttr(
                                    {1, 1, 1, zero ? 1 : 0, biasRow ? 1 : 0}))}))
                 : Value();
  return c.done({y});
}

// GroupQueryAttention (com.microsoft), the attention of onnxruntime-genai's
// decoders, as onnxruntime 1.32's CPU kernel computes it. Sequence b has
// T_b = seqlens_k[b] + 1 tokens in all; a call whose query length S equals
// total_sequence_length is a first prompt (no past, P_b = 0), any other
// appends to a past of P_b = T_b - S tokens. RoPE (do_rotary) rotates the
// query and the new keys at positions P_b + s (or the given position_ids).
// present_key/value hold max(total_sequence_length, the past buffer's length)
// rows: the past's first P_b, the S new ones at P_b, zeros after. Query row s
// attends keys [lo, eff), eff = min(P_b + s + 1, T_b), lo = eff - W with a
// local window W, after softcap; smooth_softmax and head_sink add a sink
// logit to each softmax. The present length is data (a host Range step, one
// graph break), unless total_sequence_length is a dim kiln knows (the mask's
// length, as genai's builder computes it): then it is that dim, the past
// guarded to be no longer.
LogicalResult convertGroupQueryAttention(NodeImporter &n) {
  auto query = n.requiredInput(0), seqlens = n.requiredInput(5), total = n.requiredInput(6);
  auto numHeads = n.intAttr("num_heads"), kvHeads = n.intAttr("kv_num_heads");
  auto scaleAttr = n.floatAttr("scale", 0.0f), softcap = n.floatAttr("softcap", 0.0f);
  auto window = n.intAttr("local_window_size", -1), doRotary = n.intAttr("do_rotary", 0),
       interleaved = n.intAttr("rotary_interleaved", 0), smooth = n.intAttr("smooth_softmax", 0),
       qkOutput = n.intAttr("qk_output", 0), causal = n.intAttr("causal", 1),
       slidingCache = n.intAttr("sliding_window_cache", 0);
  auto kQuant = n.stringAttr("k_quant_type", "NONE"), vQuant = n.stringAttr("v_quant_type", "NONE");
  if (failed(query) || failed(seqlens) || failed(total) || failed(numHeads) || failed(kvHeads) ||
      failed(scaleAttr) || failed(softcap) || failed(window) || failed(doRotary) ||
      failed(interleaved) || failed(smooth) || failed(qkOutput) || failed(causal) ||
      failed(slidingCache) || failed(kQuant) || failed(vQuant))
    return failure();
  if (*qkOutput != 0 || n.proto().output_size() > 3)
    return n.unsupported("the output_qk output");
  if (*causal != 1)
    return n.unsupported("non-causal GroupQueryAttention");
  if (*slidingCache != 0)
    return n.unsupported("sliding_window_cache (a ring-buffer cache)");
  if (*kQuant != "NONE" || *vQuant != "NONE" || n.input(12) || n.input(13))
    return n.unsupported("a quantized KV cache");
  if (n.input(10))
    return n.unsupported("attention_bias");
  for (size_t i : {14, 15, 16})
    if (n.input(i))
      return n.unsupported("q/k norm weights and query_seqlens");
  if (*numHeads <= 0 || *kvHeads <= 0 || *numHeads % *kvHeads != 0)
    return n.error("num_heads must be a positive multiple of kv_num_heads");
  int64_t N = *numHeads, KN = *kvHeads, G = N / KN;
  Value key = n.input(1), value = n.input(2), pastKey = n.input(3), pastValue = n.input(4);
  if ((bool)key != (bool)value || (bool)pastKey != (bool)pastValue)
    return n.error("key and value (past_key and past_value) are given together or not at all");
  auto qType = NodeImporter::typeOf(*query);
  if (qType.getRank() != 3 || qType.isDynamicDim(2))
    return n.error("query must be (batch, sequence, hidden) with a hidden size known at compile "
                   "time");
  int64_t width = qType.getDimSize(2), packedHeads = key ? N : N + 2 * KN;
  if (width % packedHeads != 0)
    return n.error("query's last dim must be a multiple of its head count");
  int64_t H = width / packedHeads;
  Type element = qType.getElementType();
  Type wide = computeTypeOf(n, *query);
  MLIRContext *ctx = n.context();
  auto D = [&](int64_t x) { return getConstantDim(ctx, x); };
  SymShape qDims = getSymShape(qType);
  DimExpr batch = qDims[0], seq = qDims[1];
  Chain c(n);
  Value q = *query;
  if (!key) { // packed [Q | K | V]
    key = c.slice(q, 2, N * H, (N + KN) * H);
    value = c.slice(q, 2, (N + KN) * H, (N + 2 * KN) * H);
    q = c.slice(q, 2, 0, N * H);
  }
  for (Value *x : {&key, &value}) {
    auto same = requireDimsOf(n, *x, {batch, seq, D(KN * H)},
                              "key and value must be (batch, sequence, kv_num_heads * head)");
    if (failed(same))
      return failure();
    *x = *same;
  }
  Type i64 = n.builder().getI64Type();
  auto asI64 = [&](Value x) { return c.ok ? c(castTo(n, x, i64)) : Value(); };
  Value zero = n.constI64({0}, true), one = n.constI64({1}, true);
  // Per sequence: its total length T_b and its past length P_b, [batch].
  auto lengths = requireDimsOf(n, *seqlens, {batch}, "seqlens_k must hold one length per batch");
  if (failed(lengths))
    return failure();
  Value totalLength = c.bin<AddOp>(asI64(*lengths), one);
  Value totalCall = c.reshape(asI64(*total), {});
  Value seqLength = c.reshape(c(dimPiece(n, q, 1)), {});
  Value firstPrompt = c.cmp(CompareDirection::eq, seqLength, totalCall);
  Value past = c.sel(firstPrompt, zero, c.bin<SubOp>(totalLength, seqLength));
  Value tokens = c.iota(q, 1, 1, 2); // [1, S]
  auto perBatch = [&](Value x, int64_t rank) { // [batch] -> [batch, 1, ...]
    SmallVector<int64_t> ones;
    for (int64_t i = 1; i < rank; ++i)
      ones.push_back(i);
    return c.ok ? c(insertUnitDims(n, x, ones)) : Value();
  };
  if (*doRotary) {
    Value cosCache = n.input(7), sinCache = n.input(8);
    if (!cosCache || !sinCache)
      return n.error("do_rotary needs cos_cache and sin_cache");
    auto cacheType = NodeImporter::typeOf(cosCache);
    if (cacheType.getRank() != 2 || cacheType.isDynamicDim(1) ||
        2 * cacheType.getDimSize(1) > H)
      return n.error("cos_cache must be (positions, rotated / 2), rotated at most the head size");
    int64_t rotated = 2 * cacheType.getDimSize(1);
    Value positions;
    if (Value ids = n.input(9)) {
      // A first prompt uses position_ids[0, 0] + s for every sequence.
      Value first = c.reshape(c.slice(c.slice(asI64(ids), 0, 0, 1), 1, 0, 1), {D(1), D(1)});
      positions = c.sel(firstPrompt, c.bin<AddOp>(first, tokens), asI64(ids));
    } else {
      positions = c.bin<AddOp>(perBatch(past, 2), tokens);
    }
    if (!c.ok)
      return failure();
    int64_t rotaryDim = rotated == H ? 0 : rotated;
    auto rq = rotaryEmbedding(n, q, cosCache, sinCache, positions, *interleaved, rotaryDim, N);
    auto rk = failed(rq) ? rq
                         : rotaryEmbedding(n, key, cosCache, sinCache, positions, *interleaved,
                                           rotaryDim, KN);
    if (failed(rk))
      return failure();
    q = *rq;
    key = *rk;
  }
  // Heads first: [batch, heads, sequence, head].
  auto heads = [&](Value x, int64_t count) {
    return c.transpose(c.reshape(x, {batch, seq, D(count), D(H)}), {0, 2, 1, 3});
  };
  Value newKey = heads(key, KN), newValue = heads(value, KN);
  // The present buffer: max(total_sequence_length, past length) rows.
  Value pastRowsPiece = zero;
  DimExpr pastRowsDim;
  if (pastKey) {
    for (Value *x : {&pastKey, &pastValue}) {
      auto same = requireDimsOf(n, *x, {batch, D(KN), DimExpr(), D(H)},
                                "past_key and past_value must be (batch, kv_num_heads, length, "
                                "head)");
      if (failed(same))
        return failure();
      *x = *same;
    }
    pastRowsDim = getSymShape(NodeImporter::typeOf(pastKey))[2];
  }
  // onnxruntime-genai's builder computes total_sequence_length from the
  // mask's shape: a dim kiln knows. With no past longer than it (pasts that
  // grow by the new rows each call), the present is exactly that long, a
  // size known before the call; only a past buffer longer than the call's
  // total (genai's past_present_share_buffer, a past at the maximum length)
  // would make it the past's, which the guard refuses with one line.
  Value presentRows;
  // The builder casts the dim to int32: the value before the casts.
  Value totalDim = *total;
  while (auto cast = totalDim.getDefiningOp<CastOp>())
    if (elementTypeOf(cast.getInput()).isInteger(64) &&
        isa<IntegerType>(elementTypeOf(cast.getResult())))
      totalDim = cast.getInput();
    else
      break;
  std::optional<SymShape> knownTotal =
      c.ok && elementTypeOf(totalDim).isInteger(64) ? getKnownElements(totalDim)
                                                                     : std::nullopt;
  if (knownTotal && !(knownTotal->size() == 1 && (*knownTotal)[0]))
    knownTotal.reset();
  if (knownTotal) {
    if (pastKey && failed(requireLessEqualDims(
                       n, pastRowsDim, (*knownTotal)[0],
                       "past_key's length must not exceed total_sequence_length (a past "
                       "buffer shared with the present is not supported: pass pasts as long "
                       "as their tokens)")))
      return failure();
    presentRows = c.reshape(totalDim, {});
  } else {
    if (pastKey)
      pastRowsPiece = c.reshape(c(dimPiece(n, pastKey, 2)), {});
    presentRows = c.bin<MaxOp>(totalCall, pastRowsPiece);
  }
  Value rows = c.ok ? c(n.create<RangeOp>({zero, presentRows, one})) : Value();
  auto present = [&](Value fresh, Value old) {
    // The past's rows, zero rows after them up to the present's length, and
    // each sequence's new rows written at its past length with zeros after
    // them (kiln.cache_write's zero_tail: the past buffer's rows past a
    // sequence's own length are not its). --kiln-kv-cache-in-place turns
    // this into a write into the cache itself.
    auto zerosOf = [&](Value length) {
      Value shape =
          c.ok ? c(concatPieces(n, {c(dimPiece(n, fresh, 0)), n.constI64({KN}),
                                    c.reshape(length, {D(1)}), n.constI64({H})}))
               : Value();
      return c.ok ? c(n.create<BroadcastToOp>({c.k(fresh, 0.0), shape})) : Value();
    };
    Value base;
    if (!old) {
      base = zerosOf(c.reshape(c(dimPiece(n, rows, 0)), {}));
    } else if (knownTotal) {
      // Rows known before the call: the past and total - past zero rows.
      base = c.concat(
          {old, zerosOf(c.bin<SubOp>(presentRows, c.reshape(c(dimPiece(n, old, 2)), {})))}, 2);
    } else {
      // Rows computed on the device: the past's row min(r, past), one zero
      // row after the past (no shape made of data: no graph break).
      Value pastRows = c.reshape(c(dimPiece(n, old, 2)), {});
      base = c.ok ? c(n.create<GatherOp>({withZeroRow(n, c, old, 2), c.bin<MinOp>(rows, pastRows)},
                                         {n.named("axis", n.builder().getI64IntegerAttr(2))}))
                  : Value();
    }
    return c.ok ? c(n.create<CacheWriteOp>(
                      {base, fresh, past}, {n.named("axis", n.builder().getI64IntegerAttr(2)),
                                            n.named("zero_tail", n.builder().getUnitAttr())}))
                : Value();
  };
  Value presentKey = present(newKey, pastKey), presentValue = present(newValue, pastValue);
  // Scores of each query head against its KV head's present rows.
  Value q5 = c.reshape(heads(q, N), {batch, D(KN), D(G), seq, D(H)});
  Value k5 = c.ok ? c(insertUnitDims(n, c(castTo(n, presentKey, wide)), {2})) : Value();
  Value v5 = c.ok ? c(insertUnitDims(n, c(castTo(n, presentValue, wide)), {2})) : Value();
  double scale = *scaleAttr != 0.0f ? *scaleAttr : 1.0 / std::sqrt(double(H));
  Value scores = c.bin<MulOp>(c.matmul(c(castTo(n, q5, wide)), c.transpose(k5, {0, 1, 2, 4, 3})),
                              n.constScalar(wide, scale));
  if (*softcap > 0.0f) {
    Value cap = n.constScalar(wide, *softcap);
    scores = c.bin<MulOp>(cap, c.un<TanhOp>(c.bin<DivOp>(scores, cap)));
  }
  // Row s of sequence b sees keys [lo, eff).
  Value s5 = c.ok ? c(insertUnitDims(n, c.iota(q, 1, 0, 1), {0, 1, 2, 4})) : Value();
  Value past5 = perBatch(past, 5), total5 = perBatch(totalLength, 5);
  Value visible = c.bin<MinOp>(c.bin<AddOp>(c.bin<AddOp>(past5, s5), one), total5);
  Value key5 = c.ok ? c(insertUnitDims(n, rows, {0, 1, 2, 3})) : Value();
  Value allowed = c.cmp(CompareDirection::lt, key5, visible);
  if (*window >= 0) {
    Value low = c.bin<SubOp>(visible, n.constI64({*window}, true));
    allowed = c.bin<AndOp>(allowed, c.cmp(CompareDirection::ge, key5, low));
  }
  scores = c.sel(allowed, scores, n.constScalar(wide, -INFINITY));
  Value probs;
  Value sink = n.input(11);
  if (*smooth == 1 || sink) {
    // One more logit per row, the sink (head_sink[h], or 0), in the softmax
    // and dropped after it.
    Value sinkColumn;
    if (sink) {
      auto perHead = requireDimsOf(n, sink, {D(N)}, "head_sink must hold one value per head");
      if (failed(perHead))
        return failure();
      sinkColumn = c.reshape(c(castTo(n, *perHead, wide)), {D(1), D(KN), D(G), D(1), D(1)});
    } else {
      sinkColumn = n.constScalar(wide, 0.0);
    }
    Value shape = c.ok ? c(concatPieces(n, {c(dimPiece(n, scores, 0)), n.constI64({KN, G}),
                                            c(dimPiece(n, scores, 3)), n.constI64({1})}))
                       : Value();
    Value column = c.ok ? c(n.create<BroadcastToOp>({sinkColumn, shape})) : Value();
    Value withSink = c.concat({scores, column}, 4);
    Value all = c.ok ? c(n.create<SoftmaxOp>({withSink},
                                             {n.named("axis", n.builder().getI64IntegerAttr(4))}))
                     : Value();
    Value ends = c.ok ? c(concatPieces(n, {n.constI64({INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX}),
                                           c(dimPiece(n, scores, 4))}))
                      : Value();
    probs = c.ok ? c(n.create<SliceOp>({all, n.constI64({0, 0, 0, 0, 0}), ends,
                                        n.constI64({1, 1, 1, 1, 1})}))
                 : Value();
  } else {
    probs = c.ok ? c(n.create<SoftmaxOp>({scores},
                                         {n.named("axis", n.builder().getI64IntegerAttr(4))}))
                 : Value();
  }
  Value out = c.matmul(probs, v5); // [batch, KN, G, S, H]
  out = c.reshape(c.transpose(c.reshape(out, {batch, D(N), seq, D(H)}), {0, 2, 1, 3}),
                  {batch, seq, D(N * H)});
  out = c.ok ? c(castTo(n, out, element)) : Value();
  return c.done({out, presentKey, presentValue});
}

} // namespace kiln::onnx_import
