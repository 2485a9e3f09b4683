//===- ScheduleAttention.cpp - the fused attention schedule ---------------===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

/// Query rows and keys per tile of the attention kernel: the largest power of
/// two up to 64 whose tiles (queries, keys, values, scores, the output
/// accumulator, in the compute type) fit in 40 KiB of static shared memory.
static int64_t attentionTile(int64_t d, int64_t dv, int64_t computeBytes) {
  int64_t tile = 64;
  auto bytes = [&](int64_t t) {
    return computeBytes * (t * d + t * (d + 1) + t * dv + t * t + t * dv + 3 * t);
  };
  while (tile > 4 && bytes(tile) > 40 * 1024)
    tile /= 2;
  return tile;
}

/// One key tile's step of the attention kernel's online softmax, per query
/// row of the tile: the new maximum over the tile's scores (ps), the scores
/// turned into weights, the running sum and the output accumulator (os)
/// rescaled by exp(m_old - m_new) and given the tile's weighted values (vs).
/// A maximum of -inf (every score so far masked) weighs nothing yet.
void KernelEmitter::emitOnlineSoftmaxStep(const std::string &acc, const std::string &ninf,
                                          const std::string &BC, const std::string &DV) {
  openBlock("for (int64_t r = threadIdx.x; r < nr; r += blockDim.x) {");
  line(acc + " mx = ms[r];");
  line("for (int64_t c = 0; c < nc; ++c) mx = kiln_max<" + acc + ">(mx, ps[r * " + BC +
       " + c]);");
  line("const bool none = mx == " + ninf + ";");
  line(acc + " sum = (" + acc + ")0;");
  openBlock("for (int64_t c = 0; c < nc; ++c) {");
  line("const " + acc + " w = none ? (" + acc + ")0 : kiln_exp(ps[r * " + BC + " + c] - mx);");
  line("ps[r * " + BC + " + c] = w;");
  line("sum += w;");
  closeBlock();
  line("const " + acc + " alpha = none ? (" + acc + ")1 : kiln_exp(ms[r] - mx);");
  line("ls[r] = ls[r] * alpha + sum;");
  line("ms[r] = mx;");
  line("as[r] = alpha;");
  closeBlock();
  line("__syncthreads();");
  openBlock("for (int64_t t = threadIdx.x; t < nr * " + DV + "; t += blockDim.x) {");
  line("const int64_t r = t / " + DV + ", e = t % " + DV + ";");
  line(acc + " o = os[t] * as[r];");
  line("for (int64_t c = 0; c < nc; ++c) o += ps[r * " + BC + " + c] * vs[c * " + DV +
       " + e];");
  line("os[t] = o;");
  closeBlock();
  line("__syncthreads();");
}

/// What an attention kernel's launches and roofline count: its work items (a
/// block per tile of query rows per (batch, head)), its flops, and its bytes
/// through L2.
void KernelEmitter::setAttentionWork(AttentionOp root, int64_t tile, int64_t d, int64_t dv) {
  Value q = root.getQuery(), k = root.getKey(), v = root.getValue(), mask = root.getMask();
  int64_t rank = cast<RankedTensorType>(q.getType()).getRank();
  SymShape qd = getSymShape(q.getType());
  workItems = canonicalizeDim(productOf(ArrayRef<DimExpr>(qd).drop_back(2)) *
                              qd[rank - 2].ceilDiv(tile));
  // A multiply and an add per feature, for the scores and for the output.
  DimExpr sk = getSymShape(k.getType())[rank - 2];
  flops = canonicalizeDim(productOf(ArrayRef<DimExpr>(qd).drop_back(1)) * sk * (2 * (d + dv)));
  // Through L2: the queries and the output once, but each (batch, head)'s
  // keys and values once per tile of queries, and each query row's mask
  // row. From DRAM the blocks of one (batch, head) run side by side and
  // share those passes in L2 (docs/performance.md), so the step's bytes
  // stay its buffers once.
  DimExpr heads = productOf(ArrayRef<DimExpr>(qd).drop_back(2)), sq = qd[rank - 2];
  auto bytesOf = [&](Value v) { return static_cast<int64_t>(storageBytes(elementOf(v))); };
  DimExpr passes = heads * sq.ceilDiv(tile) * sk * (d * bytesOf(k) + dv * bytesOf(v));
  DimExpr once = heads * sq * (d * bytesOf(q) + dv * bytesOf(root.getResult()));
  l2Bytes = passes + once;
  if (mask)
    l2Bytes = l2Bytes + heads * sq * sk * bytesOf(mask);
  l2Bytes = canonicalizeDim(l2Bytes);
}

LogicalResult KernelEmitter::emitAttention(AttentionOp root, ArrayRef<int64_t> outputPerm) {
  // A block per tile of BR query rows of one (batch, head): the tile of
  // queries (scaled) stays in shared memory while tiles of BC keys and values
  // pass through it; the scores of a tile never leave the chip. Each query row
  // keeps a running maximum m, a running sum l and an output accumulator
  // rescaled by exp(m_old - m_new) when the maximum grows (an online softmax),
  // so one pass over the keys gives softmax(q k^T * scale + mask) v. Every loop
  // strides by the block's threads: any block size is right.
  blockPerItem = true;
  Value q = root.getQuery(), k = root.getKey(), v = root.getValue(), mask = root.getMask();
  Type t = elementOf(root.getResult());
  std::string acc = computeType(t);
  int64_t rank = cast<RankedTensorType>(q.getType()).getRank();
  int64_t d = cast<RankedTensorType>(q.getType()).getDimSize(rank - 1);
  int64_t dv = cast<RankedTensorType>(v.getType()).getDimSize(rank - 1);
  if (ShapedType::isDynamic(d) || ShapedType::isDynamic(dv))
    return root.emitError() << "codegen: attention needs static feature dims";
  int64_t tile = attentionTile(d, dv, acc == "double" ? 8 : 4);
  std::string D = std::to_string(d), DV = std::to_string(dv), BR = std::to_string(tile),
              BC = BR, KS = std::to_string(d + 1);
  std::vector<std::string> qShape = dims(q), kShape = dims(k);
  std::vector<std::string> lead(qShape.begin(), qShape.end() - 2);
  setAttentionWork(root, tile, d, dv);
  std::string ninf = "(" + acc + ")kiln_f32_bits(0xff800000u)";
  // ks rows are padded by one: threads of a warp read different keys at one
  // feature, which would otherwise fall in one shared-memory bank.
  line("__shared__ " + acc + " qs[" + BR + " * " + D + "];");
  line("__shared__ " + acc + " ks[" + BC + " * " + KS + "];");
  line("__shared__ " + acc + " vs[" + BC + " * " + DV + "];");
  line("__shared__ " + acc + " ps[" + BR + " * " + BC + "];");
  line("__shared__ " + acc + " os[" + BR + " * " + DV + "];");
  line("__shared__ " + acc + " ms[" + BR + "], ls[" + BR + "], as[" + BR + "];");
  line("const int64_t P = " + product(lead) + ";");
  line("const int64_t Sq = " + qShape[rank - 2] + ", Sk = " + kShape[rank - 2] + ";");
  line("const int64_t qTiles = (Sq + " + BR + " - 1) / " + BR + ";");
  openBlock("for (int64_t item = blockIdx.x; item < P * qTiles; item += gridDim.x) {");
  line("const int64_t p = " + quotient("item", "((" + qShape[rank - 2] + " + " + BR + " - 1) / " + BR + ")") +
       ", i0 = (item - p * qTiles) * " + BR + ";");
  // The rows of this tile (the last one may be partial): loops stop there.
  line("const int64_t nr = kiln_min<int64_t>(" + BR + ", Sq - i0);");
  std::vector<std::string> prefix = unravel("p", lead);
  auto at = [&](const std::string &row, const std::string &col) {
    std::vector<std::string> index = prefix;
    index.push_back(row);
    index.push_back(col);
    return index;
  };
  auto tileLoop = [&](const std::string &count,
                      const std::function<LogicalResult()> &body) -> LogicalResult {
    openBlock("for (int64_t t = threadIdx.x; t < " + count + "; t += blockDim.x) {");
    LogicalResult r = body();
    closeBlock();
    return r;
  };
  // Loads element (row, col) of `x` into `dst` (the loops stop at the tile's
  // last row and key, so every element they reach exists).
  auto load = [&](Value x, const std::string &dst, const std::string &row,
                  const std::string &col) -> LogicalResult {
    FailureOr<std::string> e = element(x, at(row, col));
    if (failed(e))
      return failure();
    line(dst + " = (" + acc + ")" + *e + ";");
    return success();
  };
  // The tile of queries, and the accumulators of its rows.
  if (failed(tileLoop("nr * " + D, [&] {
        line("const int64_t r = t / " + D + ", c = t % " + D + ", i = i0 + r;");
        return load(q, "qs[t]", "i", "c");
      })))
    return failure();
  line("for (int64_t t = threadIdx.x; t < nr * " + DV + "; t += blockDim.x) os[t] = (" + acc +
       ")0;");
  line("for (int64_t t = threadIdx.x; t < nr; t += blockDim.x) { ms[t] = " + ninf +
       "; ls[t] = (" + acc + ")0; }");
  line("__syncthreads();");
  openBlock("for (int64_t j0 = 0; j0 < Sk; j0 += " + BC + ") {");
  line("const int64_t nc = kiln_min<int64_t>(" + BC + ", Sk - j0);");
  if (failed(tileLoop("nc * " + D, [&] {
        line("const int64_t r = t / " + D + ", c = t % " + D + ", j = j0 + r;");
        return load(k, "ks[r * " + KS + " + c]", "j", "c");
      })) ||
      failed(tileLoop("nc * " + DV, [&] {
        line("const int64_t r = t / " + DV + ", c = t % " + DV + ", j = j0 + r;");
        return load(v, "vs[t]", "j", "c");
      })))
    return failure();
  line("__syncthreads();");
  // The tile's scores; -inf past the last key.
  std::string scale = scalarLiteral(t, root.getScaleAttr());
  SymShape scoresDims = getSymShape(root.getType());
  scoresDims.back() = getSymShape(k.getType())[rank - 2];
  if (failed(tileLoop("nr * " + BC, [&]() -> LogicalResult {
        line("const int64_t r = t / " + BC + ", c = t % " + BC + ", i = i0 + r, j = j0 + c;");
        line(acc + " s = " + ninf + ";");
        openBlock("if (j < Sk) {");
        line(acc + " dot = (" + acc + ")0;");
        line("for (int64_t f = 0; f < " + D + "; ++f) dot += qs[r * " + D + " + f] * ks[c * " + KS +
             " + f];");
        line("s = dot * " + scale + ";");
        if (mask) {
          FailureOr<std::string> e = element(mask, broadcastIndex(mask, scoresDims, at("i", "j")));
          if (failed(e))
            return failure();
          line("s += (" + acc + ")" + *e + ";");
        }
        closeBlock();
        line("ps[t] = s;");
        return success();
      })))
    return failure();
  line("__syncthreads();");
  emitOnlineSoftmaxStep(acc, ninf, BC, DV);
  closeBlock(); // key tiles
  // A row whose every score was masked has l = 0: 0 / 0, NaN, as kiln.softmax
  // (or 0 with zero_masked_rows).
  openBlock("for (int64_t t = threadIdx.x; t < nr * " + DV + "; t += blockDim.x) {");
  line("const int64_t r = t / " + DV + ", e = t % " + DV + ", i = i0 + r;");
  std::string offset = "(p * Sq + i) * " + DV + " + e";
  if (!outputPerm.empty()) {
    // Element [prefix.., i, e] of the attention lands at the transposed place.
    std::vector<std::string> index = at("i", "e");
    std::vector<std::string> attShape = lead;
    attShape.push_back(qShape[rank - 2]);
    attShape.push_back(DV);
    std::vector<std::string> permutedIndex, permutedShape;
    for (int64_t d : outputPerm) {
      permutedIndex.push_back(index[d]);
      permutedShape.push_back(attShape[d]);
    }
    offset = linearize(permutedIndex, permutedShape);
  }
  line("out[" + offset + "] = " +
       store(t, root.getZeroMaskedRows() ? "ls[r] == (" + acc + ")0 ? (" + acc +
                                               ")0 : os[t] / ls[r]"
                                         : "os[t] / ls[r]") +
       ";");
  closeBlock();
  line("__syncthreads();");
  closeBlock(); // items
  return success();
}

} // namespace kiln::codegen
