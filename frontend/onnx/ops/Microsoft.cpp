//===- Microsoft.cpp - onnxruntime's own ops that LLM exporters write -----===//
//
// onnxruntime-genai's model builder writes decoder LLMs with a few of
// onnxruntime's contrib ops: SimplifiedLayerNormalization (which onnxruntime
// registers in the default domain, version 1) and com.microsoft's
// SkipSimplifiedLayerNormalization, RotaryEmbedding and MatMulNBits. Each
// decomposes onto kiln ops with the semantics of onnxruntime 1.32's CPU
// kernels (test/run/onnxruntime-ops.test runs them against it): narrower
// floats computed in f32 and rounded once.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {
/// f32 for narrower floats; f32 and f64 compute in themselves.
Type computeTypeOf(NodeImporter &n, Value x) {
  Type t = elementTypeOf(x);
  return t.getIntOrFloatBitWidth() < 32 ? Type(n.builder().getF32Type()) : t;
}

/// x * rsqrt(mean(x^2) + epsilon) over dims [axis, rank) of `wide` (already
/// in its compute type), and that rsqrt (dims kept, for inv_std_var).
std::pair<Value, Value> rmsNormalize(NodeImporter &n, Chain &c, Value wide, int64_t axis,
                                     float epsilon) {
  int64_t rank = NodeImporter::typeOf(wide).getRank();
  SmallVector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a)
    axes.push_back(a);
  Value meanSquare =
      c.ok ? c(reduce(n, c.bin<MulOp>(wide, wide), ReduceKind::mean, axes, true)) : Value();
  Value inv = c.un<RsqrtOp>(c.bin<AddOp>(meanSquare, c.k(wide, epsilon)));
  return {c.bin<MulOp>(wide, inv), inv};
}

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
  Chain c(n);
  Type wide = computeTypeOf(n, *x);
  Type element = elementTypeOf(*x);
  auto widened = [&](Value v) { return c.ok ? c(castTo(n, v, wide)) : Value(); };
  Value sum = c.bin<AddOp>(widened(*x), widened(*skip));
  if (Value bias = n.input(3))
    sum = c.bin<AddOp>(sum, widened(bias));
  auto [normed, inv] = rmsNormalize(n, c, sum, rank - 1, *epsilon);
  Value y = c.ok ? c(castTo(n, c.bin<MulOp>(normed, widened(*gamma)), element)) : Value();
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
// The weight is dequantized as ops (folded when it is small enough to be a
// compile-time constant, otherwise computed each call); a kernel that reads
// the packed blocks directly is issue 36's. onnxruntime's CPU kernel at
// accuracy_level 4 rounds A to int8 per block first; kiln computes A exactly,
// as onnxruntime's CUDA kernel does.
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
  if (K <= 0 || N <= 0 || bs < 16 || (bs & (bs - 1)) != 0)
    return n.error("K and N must be positive and block_size a power of two of at least 16");
  int64_t blocks = (K + bs - 1) / bs, perByte = 8 / *bits, blob = bs / perByte;
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
  Type wide = computeTypeOf(n, *a);
  MLIRContext *ctx = n.context();
  auto D = [&](int64_t x) { return getConstantDim(ctx, x); };
  Chain c(n);
  // Bytes [rows, cols] of `bits`-bit values to [rows, cols * perByte], in
  // the compute type: value j of a byte is (byte >> bits * j) & mask.
  auto unpack = [&](Value bytes, int64_t rows, int64_t cols) {
    Type u8 = elementTypeOf(bytes);
    SmallVector<Value> parts;
    for (int64_t j = 0; j < perByte && c.ok; ++j) {
      Value shifted = c.bin<ShiftRightOp>(bytes, n.constScalar(u8, double(*bits * j)));
      Value masked = c.bin<BitwiseAndOp>(shifted, n.constScalar(u8, double((1 << *bits) - 1)));
      parts.push_back(c.ok ? c(insertUnitDims(n, masked, {2})) : Value());
    }
    Value values = perByte == 1 ? parts[0] : c.concat(parts, 2);
    return c.ok ? c(castTo(n, c.reshape(values, {D(rows), D(cols * perByte)}), wide)) : Value();
  };
  Value q = c.reshape(unpack(c.reshape(*b, {D(N), D(blocks * blob)}), N, blocks * blob),
                      {D(N), D(blocks), D(bs)});
  Value scale = c(castTo(n, c.reshape(*scales, {D(N), D(blocks), D(1)}), wide));
  Value zero;
  if (Value zp = n.input(3)) {
    auto zpType = NodeImporter::typeOf(zp);
    if (zpType.getElementType().isUnsignedInteger(8)) {
      int64_t packed = (blocks * *bits + 7) / 8;
      zero = unpack(c.reshape(zp, {D(N), D(packed)}), N, packed);
      zero = c.slice(zero, 1, 0, blocks);
    } else if (zpType.getElementType() == elementTypeOf(*scales)) {
      if (*bits == 8)
        return n.unsupported("float zero points with 8 bits (onnxruntime refuses them)");
      zero = c(castTo(n, zp, wide));
    } else {
      return n.error("zero_points must be uint8 (packed) or the scales' type");
    }
    zero = c.reshape(zero, {D(N), D(blocks), D(1)});
  } else {
    zero = n.constScalar(wide, double(1 << (*bits - 1)));
  }
  Value w = c.bin<MulOp>(c.bin<SubOp>(q, zero), scale);
  w = c.reshape(w, {D(N), D(blocks * bs)});
  if (blocks * bs != K)
    w = c.slice(w, 1, 0, K);
  Value y = c.matmul(c(castTo(n, *a, wide)), c.transpose(w, {1, 0}));
  if (Value bias = n.input(5))
    y = c.bin<AddOp>(y, c(castTo(n, bias, wide)));
  return c.done({c.ok ? c(castTo(n, y, element)) : Value()});
}

} // namespace kiln::onnx_import
