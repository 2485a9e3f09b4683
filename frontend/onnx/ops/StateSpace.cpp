//===- StateSpace.cpp - ONNX ops of models with a carried state -----------===//
//
// The ops ONNX 1.22 added for linear-attention and state-space language models
// (Gated DeltaNet, Mamba, RetNet): LinearAttention, whose recurrent state is an
// input and an output, and CausalConvWithState, the short convolution that
// carries its last k - 1 positions. Both take a decode step (one token) and a
// prefill alike; the state round-trips through the caller.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

#include <cmath>

using namespace mlir;

namespace kiln::onnx_import {

// CausalConvWithState-27 (Mamba's and Gated DeltaNet's short convolution with a
// carried state): the input after its state (past_state, or k - 1 zeros), a
// depthwise conv without padding over that, the optional SiLU, and the last
// k - 1 positions of the padded input as the next state. The conv is spelled
// as what it is per output, a k-term dot product of each channel's window
// with its filter: a gather of the windows, a multiply and a sum over k,
// which fuse into one reduction kernel (a depthwise conv of a few taps gains
// nothing from a library call) and need neither the channel count nor k at
// compile time. A decode step (one position) and a prefill are one graph.
LogicalResult convertCausalConvWithState(NodeImporter &n) {
  auto x = n.requiredInput(0), w = n.requiredInput(1);
  auto activation = n.stringAttr("activation", "none");
  if (failed(x) || failed(w) || failed(activation))
    return failure();
  if (*activation != "none" && *activation != "silu" && *activation != "swish")
    return n.error("activation '" + *activation + "' is not none, silu or swish");
  auto xType = NodeImporter::typeOf(*x), wType = NodeImporter::typeOf(*w);
  if (xType.getRank() != 3 || wType.getRank() != 3)
    return n.error("input must be (batch, channels, length) and weight (channels, 1, k)");
  if (!isa<FloatType>(xType.getElementType()) ||
      wType.getElementType() != xType.getElementType())
    return n.error("input and weight must share one float element type");
  if (!wType.isDynamicDim(2) && wType.getDimSize(2) < 1)
    return n.error("the kernel size k must be at least 1");
  SymShape xDims = getSymShape(xType), wDims = getSymShape(wType);
  MLIRContext *ctx = n.context();
  // past_state holds k - 1 positions. Its length and k are tied to one
  // symbol: k's when k is known, else the state's (k = length + 1), which
  // keeps the next state's length provably non-negative.
  Value state = n.input(3);
  DimExpr kDim = wDims[2];
  if (state) {
    SymShape want = {xDims[0], xDims[1], getConstantDimValue(kDim) ? kDim - 1 : DimExpr()};
    auto given = requireDimsOf(n, state, want, "past_state must be (batch, channels, k - 1)");
    if (failed(given))
      return failure();
    state = *given;
    if (!getConstantDimValue(kDim) && getSymShape(NodeImporter::typeOf(state))[2])
      kDim = getSymShape(NodeImporter::typeOf(state))[2] + 1;
  }
  auto weight = requireDimsOf(n, *w, {xDims[1], getConstantDim(ctx, 1), kDim},
                              "weight must be (channels, 1, k): the conv is depthwise");
  if (failed(weight) || failed(requireLessEqualDims(n, getConstantDim(ctx, 1), kDim,
                                                    "the kernel size k must be at least 1")))
    return failure();
  w = *weight;
  std::optional<int64_t> k = getConstantDimValue(kDim);
  Chain c(n);
  if (!state && k != std::optional<int64_t>(1)) {
    Value kMinusOne = c.bin<SubOp>(c(dimPiece(n, *w, 2)), n.constI64({1}));
    Value shape = c(concatPieces(n, {c(dimPiece(n, *x, 0)), c(dimPiece(n, *x, 1)), kMinusOne}));
    state = c.ok ? c(n.create<BroadcastToOp>({c.k(*x, 0.0), shape})) : Value();
  }
  Value padded = k == std::optional<int64_t>(1) ? *x : c.concat({state, *x}, 2);
  // windows[b, c, t, j] = padded[b, c, t + j], for t < length and j < k.
  Value taps = c.bin<AddOp>(c.iota(*x, 2, 0, 2), c.iota(*w, 2, 1, 2));
  Value windows = c.ok ? c(n.create<GatherOp>({padded, taps},
                                              {n.named("axis", n.builder().getI64IntegerAttr(2))}))
                       : Value();
  // The dot products and the SiLU in f32 at least (rounding each tap's product
  // to f16 costs ulps the op's reference does not lose); the conv's result is
  // rounded to the input's type before the SiLU, as the op defines it.
  Type element = xType.getElementType();
  Type wide = computeTypeOf(n, *x);
  auto widened = [&](Value v) { return c.ok && v ? c(castTo(n, v, wide)) : Value(); };
  Value filters = c.ok ? c(insertUnitDims(n, *w, {0})) : Value(); // [1, C, 1, k]
  Value y = c.ok ? c(reduce(n, c.bin<MulOp>(widened(windows), widened(filters)), ReduceKind::sum,
                            {3}, false))
                 : Value();
  if (Value b = n.input(2)) {
    auto bias = requireDimsOf(n, b, {xDims[1]}, "bias must hold one value per channel");
    if (failed(bias))
      return failure();
    y = c.bin<AddOp>(y, widened(c(insertUnitDims(n, *bias, {0, 2}))));
  }
  y = c.ok ? c(castTo(n, y, element)) : Value();
  if (*activation != "none") {
    Value f = widened(y);
    y = c.ok ? c(castTo(n, c.bin<MulOp>(f, c.un<SigmoidOp>(f)), element)) : Value();
  }
  // The next state: the padded input from position `length` on (k - 1 of
  // them). With k a symbol and no past_state to name k - 1, that length is
  // not provably non-negative, and the slice is a host step (dynamic node
  // tests only: a model's weight is a constant).
  Value present;
  if (k && *k == 1) {
    present = c.slice(*x, 2, 0, 0);
  } else if (k) {
    present = c.slice(padded, 2, -(*k - 1), INT64_MAX);
  } else if (c.ok) {
    Value starts = c(concatPieces(n, {n.constI64({0, 0}), c(dimPiece(n, *x, 2))}));
    present = c.ok ? c(n.create<SliceOp>({padded, starts,
                                          n.constI64({INT64_MAX, INT64_MAX, INT64_MAX}),
                                          n.constI64({1, 1, 1})}))
                   : Value();
  }
  return c.done({y, present});
}

namespace {
/// One token's update of LinearAttention's recurrent state, per KV head, in
/// the compute type. Shapes: state [B, Hkv, dk, dv]; query [B, Hkv, G, dk] (the
/// G query heads sharing the KV head); key as a column [B, Hkv, dk, 1] and a
/// row [B, Hkv, 1, dk]; value a row [B, Hkv, 1, dv]; decayFactor exp(g)
/// [B, Hkv, dk or 1, 1]; beta [B, Hkv or 1, 1, 1]. Returns the new state and
/// the output [B, Hkv, G, dv].
struct LinearAttentionStep {
  Value state, query, keyColumn, keyRow, valueRow, decayFactor, beta;
};

std::pair<Value, Value> linearAttentionStep(Chain &c, const LinearAttentionStep &t,
                                            Value scale) {
  Value state = t.state;
  if (t.decayFactor) // S *= exp(g)
    state = c.bin<MulOp>(state, t.decayFactor);
  Value value = t.valueRow;
  if (t.beta) // v <- beta * (v - S^T k): the delta rule's correction
    value = c.bin<MulOp>(t.beta, c.bin<SubOp>(value, c.matmul(t.keyRow, state)));
  state = c.bin<AddOp>(state, c.bin<MulOp>(t.keyColumn, value)); // S += k (x) v
  return {state, c.bin<MulOp>(c.matmul(t.query, state), scale)};
}
} // namespace

// LinearAttention-27 (linear, gated, delta and gated-delta recurrences; GLA,
// RetNet, DeltaNet, Gated DeltaNet), as the op defines it: the state runs
// token by token, in f32 for narrower inputs. A decode step (a sequence
// length of 1 known at compile time) is straight-line ops that fuse; a longer
// or symbolic length is a kiln.scan over the sequence whose body is that step.
// The chunk-parallel form the op allows for prefill is not built (chunk_size,
// a tuning hint, is ignored): a prefill of T tokens runs T bodies.
LogicalResult convertLinearAttention(NodeImporter &n) {
  auto q = n.requiredInput(0), k = n.requiredInput(1), v = n.requiredInput(2);
  auto hq = n.intAttr("q_num_heads"), hkv = n.intAttr("kv_num_heads");
  auto scaleAttr = n.floatAttr("scale", 0.0f);
  auto rule = n.stringAttr("update_rule", "gated_delta");
  if (failed(q) || failed(k) || failed(v) || failed(hq) || failed(hkv) || failed(scaleAttr) ||
      failed(rule) || failed(n.intAttr("chunk_size", 64)))
    return failure();
  if (*rule != "linear" && *rule != "gated" && *rule != "delta" && *rule != "gated_delta")
    return n.error("update_rule '" + *rule + "' is not linear, gated, delta or gated_delta");
  if (*hq <= 0 || *hkv <= 0 || *hq % *hkv != 0)
    return n.error("q_num_heads must be a positive multiple of kv_num_heads");
  bool gating = *rule == "gated" || *rule == "gated_delta";
  bool delta = *rule == "delta" || *rule == "gated_delta";
  Value decay = n.input(4), beta = n.input(5);
  if (gating != (bool)decay)
    return n.error("update_rule '" + *rule + (gating ? "' needs" : "' takes no") +
                   " decay (input 4)");
  if (delta != (bool)beta)
    return n.error("update_rule '" + *rule + (delta ? "' needs" : "' takes no") +
                   " beta (input 5)");
  for (Value x : {*q, *k, *v, decay, beta})
    if (x && NodeImporter::typeOf(x).getRank() != 3)
      return n.error("query, key, value, decay and beta must be (batch, sequence, packed)");
  for (Value x : {*k, *v, decay, beta})
    if (x && elementTypeOf(x) != elementTypeOf(*q))
      return n.error("key, value, decay and beta must have query's element type");
  if (!isa<FloatType>(elementTypeOf(*q)) ||
      (n.input(3) && !isa<FloatType>(elementTypeOf(n.input(3)))))
    return n.error("query and past_state must be float tensors");
  MLIRContext *ctx = n.context();
  auto D = [&](int64_t c) { return getConstantDim(ctx, c); };
  auto dimsOf = [](Value x) { return getSymShape(NodeImporter::typeOf(x)); };
  SymShape qDims = dimsOf(*q);
  DimExpr batch = qDims[0], length = qDims[1];
  if (llvm::any_of(qDims, [](DimExpr d) { return !d; }))
    return n.unsupported("a query with a dim of unknown size");
  // The packed head dims: d_k = query's last / q_num_heads, d_v = value's last
  // / kv_num_heads (symbolic when those are; the reshapes below guard that
  // they divide).
  int64_t groups = *hq / *hkv;
  auto divides = [](DimExpr packed, int64_t heads) {
    auto c = getConstantDimValue(packed);
    return !c || *c % heads == 0;
  };
  if (!divides(qDims[2], *hq) || !divides(dimsOf(*v)[2], *hkv))
    return n.error("query's last dim must be q_num_heads * d_k and value's kv_num_heads * d_v");
  DimExpr dk = qDims[2].floorDiv(*hq), dv = dimsOf(*v)[2].floorDiv(*hkv);
  auto keyOk = requireDimsOf(n, *k, {batch, length, dk * *hkv},
                             "key must be (batch, sequence, kv_num_heads * d_k) as query");
  if (failed(keyOk))
    return failure();
  k = *keyOk;
  for (Value *x : {&*v, &decay, &beta}) {
    if (!*x)
      continue;
    auto same = requireDimsOf(n, *x, {batch, length, DimExpr()},
                              "value, decay and beta must share query's batch and sequence");
    if (failed(same))
      return failure();
    *x = *same;
  }
  Type element = elementTypeOf(*q);
  Type wide = computeTypeOf(n, *q);
  Chain c(n);
  auto widened = [&](Value x) { return c(castTo(n, x, wide)); };
  // Per token, shaped for linearAttentionStep with the sequence at dim 1.
  Value query = c.reshape(widened(*q), {batch, length, D(*hkv), D(groups), dk});
  Value keyWide = widened(*k);
  Value keyColumn = c.reshape(keyWide, {batch, length, D(*hkv), dk, D(1)});
  Value keyRow = c.reshape(keyWide, {batch, length, D(*hkv), D(1), dk});
  Value valueRow = c.reshape(widened(*v), {batch, length, D(*hkv), D(1), dv});
  // decay is per key dim (kv_num_heads * d_k wide) or per head (kv_num_heads),
  // beta per head or one for all. When a width is a symbol, which one is
  // decided per call: entry i of the wider form reads entry i mod width (i
  // itself, or 0), and a guard says the width is one of the two.
  // x's entries along `axis` spread to as many as `like` has along `likeDim`.
  auto spread = [&](Value x, int64_t axis, Value like, int64_t likeDim) {
    Value entries = c.iota(like, likeDim, 0, 1);
    Value count = c.reshape(c(dimPiece(n, x, axis)), {});
    return c.ok ? c(n.create<GatherOp>({x, c.bin<ModOp>(entries, count)},
                                       {n.named("axis", n.builder().getI64IntegerAttr(axis))}))
                : Value();
  };
  Value decayFactor, betaRows;
  if (decay) {
    DimExpr width = dimsOf(decay)[2];
    auto w = getConstantDimValue(width), dkValue = getConstantDimValue(dk);
    if ((w && dkValue && *w != *hkv && *w != *hkv * *dkValue) || !divides(width, *hkv))
      return n.error("decay's last dim must be kv_num_heads or kv_num_heads * d_k");
    DimExpr perHead = width.floorDiv(*hkv);
    Value factor = c.reshape(c.un<ExpOp>(widened(decay)), {batch, length, D(*hkv), perHead});
    if (getConstantDimValue(perHead) != std::optional<int64_t>(1) && perHead != dk) {
      if (failed(requireOneOrEqualDims(n, perHead, dk,
                                       "decay's last dim must be kv_num_heads or "
                                       "kv_num_heads * d_k")))
        return failure();
      factor = spread(factor, 3, keyRow, 4);
      perHead = dk;
    }
    decayFactor = c.reshape(factor, {batch, length, D(*hkv), perHead, D(1)});
  }
  if (beta) {
    DimExpr width = dimsOf(beta)[2];
    auto w = getConstantDimValue(width);
    if (w && *w != *hkv && *w != 1)
      return n.error("beta's last dim must be kv_num_heads or 1");
    Value rows = c.reshape(widened(beta), {batch, length, width});
    if (!w) {
      if (failed(requireOneOrEqualDims(n, width, D(*hkv),
                                       "beta's last dim must be kv_num_heads or 1")))
        return failure();
      rows = *hkv == 1 ? c.reshape(rows, {batch, length, D(1)})
                       : spread(rows, 2, query, 2);
      width = D(*hkv);
    }
    betaRows = c.reshape(rows, {batch, length, width, D(1), D(1)});
  }
  SymShape stateDims = {batch, D(*hkv), dk, dv};
  Value state = n.input(3);
  Type stateElement = state ? elementTypeOf(state) : element;
  if (state) {
    auto given = requireDimsOf(n, state, stateDims,
                               "past_state must be (batch, kv_num_heads, d_k, d_v)");
    if (failed(given))
      return failure();
    state = widened(*given);
  } else {
    state = c.ok ? c(n.create<BroadcastToOp>({n.constScalar(wide, 0.0), shapeConstant(n, stateDims)}))
                 : Value();
  }
  // 1/sqrt(d_k) unless given; computed at run time when d_k is a symbol.
  Value scale;
  if (*scaleAttr != 0.0f)
    scale = n.constScalar(wide, *scaleAttr);
  else if (auto dkValue = getConstantDimValue(dk))
    scale = n.constScalar(wide, 1.0 / std::sqrt(double(*dkValue)));
  else
    scale = c.bin<DivOp>(n.constScalar(wide, 1.0),
                         c.un<SqrtOp>(c.reshape(c(castTo(n, c(shapeConstant(n, {dk})), wide)),
                                                {})));
  if (!c.ok)
    return failure();

  SmallVector<Value> perToken = {query, keyColumn, keyRow, valueRow};
  if (decayFactor)
    perToken.push_back(decayFactor);
  if (betaRows)
    perToken.push_back(betaRows);
  // The step's inputs from one token's slices, in perToken's order.
  auto stepOf = [&](Value s, ArrayRef<Value> token) {
    LinearAttentionStep t{s, token[0], token[1], token[2], token[3], {}, {}};
    size_t next = 4;
    if (decayFactor)
      t.decayFactor = token[next++];
    if (betaRows)
      t.beta = token[next++];
    return linearAttentionStep(c, t, scale);
  };
  auto dropSequence = [](Type t, int64_t at) {
    SymShape dims = getSymShape(t);
    dims.erase(dims.begin() + at);
    return makeTensorType(dims, cast<RankedTensorType>(t).getElementType());
  };
  SymShape outDims = {batch, length, D(*hkv), D(groups), dv};
  Value output, present;
  if (getConstantDimValue(length) == std::optional<int64_t>(1)) {
    SmallVector<Value> token;
    for (Value x : perToken)
      token.push_back(c.reshape(x, getSymShape(dropSequence(x.getType(), 1))));
    auto [s, o] = stepOf(state, token);
    present = s;
    output = c.reshape(o, outDims);
  } else {
    // Scanned along their first dim, whose slices are views (the sequence
    // moves there once, in the kernel that widens and packs them).
    SmallVector<int64_t> sequenceFirst = {1, 0, 2, 3, 4};
    for (Value &x : perToken)
      x = c.transpose(x, sequenceFirst);
    if (!c.ok)
      return failure();
    Builder b(ctx);
    OperationState st(n.loc(), ScanOp::getOperationName());
    st.addOperands(state);
    st.addOperands(perToken);
    st.addAttribute("num_scan_inputs", b.getI64IntegerAttr(perToken.size()));
    st.addAttribute("scan_input_axes",
                    b.getDenseI64ArrayAttr(SmallVector<int64_t>(perToken.size(), 0)));
    st.addAttribute("scan_input_directions",
                    b.getDenseI64ArrayAttr(SmallVector<int64_t>(perToken.size(), 0)));
    st.addAttribute("scan_output_axes", b.getDenseI64ArrayAttr({0}));
    st.addAttribute("scan_output_directions", b.getDenseI64ArrayAttr({0}));
    st.addRegion();
    st.addTypes({state.getType(),
                 makeTensorType({length, batch, D(*hkv), D(groups), dv}, wide)});
    Operation *scan = n.builder().create(st);
    Block *body = new Block();
    scan->getRegion(0).push_back(body);
    Value s = body->addArgument(state.getType(), n.loc());
    SmallVector<Value> token;
    for (Value x : perToken)
      token.push_back(body->addArgument(dropSequence(x.getType(), 0), n.loc()));
    {
      OpBuilder::InsertionGuard guard(n.builder());
      n.builder().setInsertionPointToEnd(body);
      auto [next, o] = stepOf(s, token);
      if (c.ok)
        YieldOp::create(n.builder(), n.loc(), ValueRange{next, o});
    }
    if (!c.ok) {
      scan->erase();
      return failure();
    }
    present = scan->getResult(0);
    output = c.transpose(scan->getResult(1), sequenceFirst);
  }
  output = c(castTo(n, c.reshape(output, {batch, length, dv * *hq}), element));
  present = c(castTo(n, present, stateElement));
  return c.done({output, present});
}

} // namespace kiln::onnx_import
