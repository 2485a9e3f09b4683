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

/// Opens the attention kernel's tensor-core branch (where `mma`, and the
/// device has mma.sync) with a warp's lanes as the fragments number them:
/// `quad` the row (A, D) or column (B) group, `tq` the pair within it.
void KernelEmitter::openTensorCoreBlock() {
  line("#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800");
  openBlock("if (mma) {");
  line("const int warps = (int)blockDim.x >> 5, warp = (int)threadIdx.x >> 5;");
  line("const int quad = ((int)threadIdx.x & 31) >> 2, tq = (int)threadIdx.x & 3;");
}

/// One key tile's step of the attention kernel's online softmax, per query
/// row of the tile: the new maximum over the tile's scores (ps), the scores
/// turned into weights, the running sum and the output accumulator (os)
/// rescaled by exp(m_old - m_new) and given the tile's weighted values (vs).
/// A maximum of -inf (every score so far masked) weighs nothing yet. With
/// whole warps (a device, or host emulation's threaded blocks) a warp takes
/// a row, its lanes the tile's keys (a decode step's rows are few: a thread a
/// row would leave the block idle); otherwise a thread takes a row.
void KernelEmitter::emitOnlineSoftmaxStep(const std::string &acc, const std::string &ninf,
                                          const std::string &BR, const std::string &BC,
                                          const std::string &DV, const std::string &mmaF16) {
  auto rowStep = [&](const std::string &first, const std::string &stride, bool warp) {
    openBlock("for (int64_t r = " + first + "; r < nr; r += " + stride + ") {");
    line(acc + " mx = ms[r];");
    line("for (int64_t c = " + std::string(warp ? "lane" : "0") + "; c < nc; c += " +
         (warp ? "32" : "1") + ") mx = kiln_max<" + acc + ">(mx, ps[r * " + BC + " + c]);");
    if (warp)
      line("mx = kiln_warp_reduce(mx, [](" + acc + " a, " + acc + " b) { return kiln_max<" + acc +
           ">(a, b); });");
    line("const bool none = mx == " + ninf + ";");
    line(acc + " sum = (" + acc + ")0;");
    openBlock("for (int64_t c = " + std::string(warp ? "lane" : "0") + "; c < nc; c += " +
              (warp ? "32" : "1") + ") {");
    line("const " + acc + " w = none ? (" + acc + ")0 : kiln_exp(ps[r * " + BC + " + c] - mx);");
    line("ps[r * " + BC + " + c] = w;");
    line("sum += w;");
    closeBlock();
    if (warp)
      line("sum = kiln_warp_reduce(sum, [](" + acc + " a, " + acc + " b) { return a + b; });");
    openBlock(warp ? "if (lane == 0) {" : "{");
    line("const " + acc + " alpha = none ? (" + acc + ")1 : kiln_exp(ms[r] - mx);");
    line("ls[r] = ls[r] * alpha + sum;");
    line("ms[r] = mx;");
    line("as[r] = alpha;");
    closeBlock();
    closeBlock();
  };
  line("#if defined(__CUDACC_RTC__) || defined(KILN_HOST_BLOCK_THREADS)");
  openBlock("if (blockDim.x % 32 == 0) {");
  line("const int64_t warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
  rowStep("warp", "warps", true);
  closeBlock();
  line("else");
  line("#endif");
  openBlock("{");
  rowStep("threadIdx.x", "blockDim.x", false);
  closeBlock();
  line("__syncthreads();");
  if (!mmaF16.empty()) {
    // On tensor cores (the scores' tiles, emitAttention): a warp takes a
    // tile of 16 rows by 8 output features at a time, its accumulator
    // rescaled by the rows' alpha, and adds P V over the key tile 16 keys a
    // step. Each weight goes in as two 16-bit parts (kiln_pack_rest), so
    // the weights keep some 16 bits, not bf16's 8; the values are 16-bit
    // already. The weights (at most 1) are scaled by 2^15 first, and the
    // accumulator with them (exact: powers of two), so that fp16's parts of
    // small weights stay normal numbers rather than losing their bits as
    // subnormals. Weights past the tile's last key are 0 (their scores were
    // -inf), and so are those keys' values (loaded as 0).
    openTensorCoreBlock();
    const std::string f16 = mmaF16, units = "rowTiles16 * (" + DV + " / 8)";
    openBlock("for (int u = warp; u < " + units + "; u += warps) {");
    line("const int r0 = u / (" + DV + " / 8) * 16, e0 = u % (" + DV + " / 8) * 8;");
    // d[i]: row r0 + quad (+ 8 for i >= 2), feature e0 + 2 tq + (i & 1).
    line("float d[4];");
    openBlock("for (int i = 0; i < 4; ++i) {");
    line("const int r = r0 + quad + (i >= 2 ? 8 : 0);");
    line("d[i] = os[r * " + DV + " + e0 + 2 * tq + (i & 1)] * as[r] * 32768.0f;");
    closeBlock();
    openBlock("for (int c0 = 0; c0 < " + BC + "; c0 += 16) {");
    // P(row, key) of this step, 0 past the tile's last key.
    line("auto P = [&](int r, int c) { return c0 + c < nc ? ps[(r0 + r) * " + BC +
         " + c0 + c] * 32768.0f : 0.0f; };");
    line("uint32_t b[2];");
    // V(key, feature) as the column-major 16x8 operand: keys 2 tq + {0, 1}
    // and + {8, 9} of feature e0 + quad.
    line("const int vc = (c0 + 2 * tq) * " + DV + " + e0 + quad;");
    line("b[0] = kiln_pack_pair<" + f16 + ">(vs[vc], vs[vc + " + DV + "]);");
    line("b[1] = kiln_pack_pair<" + f16 + ">(vs[vc + 8 * " + DV + "], vs[vc + 9 * " + DV + "]);");
    // The weights' rounded words, then what they left (one set of words
    // live at a time: the kernel is held to 64 registers).
    for (const char *pack : {"kiln_pack_pair", "kiln_pack_rest"}) {
      openBlock("{");
      std::string fn = std::string(pack) + "<" + f16 + ">";
      line("uint32_t a[4];");
      line("a[0] = " + fn + "(P(quad, 2 * tq), P(quad, 2 * tq + 1));");
      line("a[1] = " + fn + "(P(quad + 8, 2 * tq), P(quad + 8, 2 * tq + 1));");
      line("a[2] = " + fn + "(P(quad, 2 * tq + 8), P(quad, 2 * tq + 9));");
      line("a[3] = " + fn + "(P(quad + 8, 2 * tq + 8), P(quad + 8, 2 * tq + 9));");
      line("kiln_mma_16816<" + f16 + ">(d, a, b);");
      closeBlock();
    }
    closeBlock();
    openBlock("for (int i = 0; i < 4; ++i) {");
    line("os[(r0 + quad + (i >= 2 ? 8 : 0)) * " + DV + " + e0 + 2 * tq + (i & 1)] = d[i] * "
         "(1.0f / 32768.0f);");
    closeBlock();
    closeBlock(); // units
    closeBlock();
    line("else");
    line("#endif");
  }
  openBlock("for (int64_t t = threadIdx.x; t < nr * " + DV + "; t += blockDim.x) {");
  line("const int64_t r = t / " + DV + ", e = t % " + DV + ";");
  line(acc + " o = os[t] * as[r];");
  line("for (int64_t c = 0; c < nc; ++c) o += ps[r * " + BC + " + c] * vs[c * " + DV +
       " + e];");
  line("os[t] = o;");
  closeBlock();
  line("__syncthreads();");
}

namespace {
/// Blocks that fill the device (two an SM of an H200's 132): how many the
/// keys of few (batch, head) items are split across.
constexpr int64_t kEnoughBlocks = 264;
/// Key tiles a piece of split keys takes at least.
constexpr int64_t kSplitTiles = 2;

/// How an attention kernel lays out its work (emitAttention): query heads per
/// key/value head, and the rows of a tile.
struct AttentionShape {
  int64_t rank, groups;
  SymShape q, k;
  /// The key/value (batch, head) items: the product of key's leading dims.
  DimExpr items;
  /// Rows of an item (its query heads' query rows) and tiles of them.
  DimExpr rows, rowTiles;
  /// Whether the keys may be split across blocks (flash-decoding), and into
  /// how many pieces a tile's keys go (splitPieces).
  bool split = false;
  DimExpr pieces;
};

/// The pieces a tile's keys are split into, as the kernel computes them
/// (emitAttention) and its grid counts them, over `keys` keys and `tiles`
/// tiles of rows: as many as the keys ask for
/// (`wanted`: a piece kSplitTiles key tiles), evened out so that the tiles'
/// pieces about fill kEnoughBlocks blocks (`per`: the wanted pieces a
/// block takes, at least 1). `ceil(wanted / ceil((wanted * tiles + 1) /
/// 264))`: 1 once the tiles alone fill the device; 0 without keys (the
/// kernel then runs one piece a tile, whose rows see no key).
/// tiles * pieces < 2 * kEnoughBlocks whenever pieces > 1 (then wanted *
/// tiles / 264 < wanted, so tiles < 264, and pieces <= 264 / tiles + 1),
/// which the scratch is sized by; and no piece is empty (a brute force over
/// tiles < 400 and key tiles < 3000 finds none).
DimExpr splitPieces(MLIRContext *context, DimExpr keys, DimExpr tiles, int64_t tile) {
  auto c = [&](int64_t v) { return getConstantDim(context, v); };
  DimExpr wanted = ceilDivDims(keys, c(kSplitTiles * tile));
  DimExpr per = ceilDivDims(addDims(mulDims(wanted, tiles), c(1)), c(kEnoughBlocks));
  return ceilDivDims(wanted, per);
}

/// The kernel scratch of a split attention kernel, in bytes: a counter a
/// tile, then a slot a row and piece (the row's unscaled outputs, maximum
/// and sum). A constant, whatever the sizes (splitPieces: fewer than
/// kEnoughBlocks tiles, fewer than 2 * kEnoughBlocks pieces of at most
/// `tile` rows when a split happens).
constexpr int64_t kSplitCounterBytes = kEnoughBlocks * 4;
static_assert(kSplitCounterBytes % 16 == 0, "the slots start 16-byte aligned");
int64_t splitSlots(int64_t tile) { return 2 * kEnoughBlocks * tile; }

AttentionShape attentionShape(AttentionOp root, int64_t tile) {
  AttentionShape a;
  MLIRContext *context = root.getContext();
  a.rank = cast<RankedTensorType>(root.getQuery().getType()).getRank();
  a.q = getSymShape(root.getQuery().getType());
  a.k = getSymShape(root.getKey().getType());
  // Grouped heads only where both counts are constants that differ (the
  // verifier's rule); heads that unify as symbols are one and the same.
  a.groups = 1;
  if (a.rank >= 3) {
    std::optional<int64_t> qHeads = getConstantDimValue(a.q[a.rank - 3]),
                           kHeads = getConstantDimValue(a.k[a.rank - 3]);
    if (qHeads && kHeads && *kHeads > 0 && *qHeads != *kHeads)
      a.groups = *qHeads / *kHeads;
  }
  a.items = productOfDims(context, ArrayRef<DimExpr>(a.k).drop_back(2));
  a.rows = mulDims(a.q[a.rank - 2], getConstantDim(context, a.groups));
  a.rowTiles = ceilDivDims(a.rows, getConstantDim(context, tile));
  DimExpr tiles = mulDims(a.items, a.rowTiles);
  a.pieces = splitPieces(context, a.k[a.rank - 2], tiles, tile);
  // Worth a split path unless the pieces are one whatever the symbols.
  std::optional<int64_t> pieces = getConstantDimValue(a.pieces);
  a.split = a.pieces && !(pieces && *pieces <= 1);
  return a;
}
} // namespace

/// What an attention kernel's launches and roofline count: its work items (a
/// block per tile of rows per key/value (batch, head), times the pieces its
/// keys are split into), its flops, and its bytes through L2.
void KernelEmitter::setAttentionWork(AttentionOp root, int64_t tile, int64_t d, int64_t dv) {
  AttentionShape a = attentionShape(root, tile);
  MLIRContext *context = root.getContext();
  Value q = root.getQuery(), k = root.getKey(), v = root.getValue(), mask = root.getMask();
  DimExpr tiles = mulDims(a.items, a.rowTiles);
  workItems = canonicalizeDim(a.split ? mulDims(tiles, a.pieces) : tiles);
  // A multiply and an add per feature, for the scores and for the output.
  DimExpr sk = a.k[a.rank - 2];
  DimExpr qRows = productOf(ArrayRef<DimExpr>(a.q).drop_back(1));
  flops = canonicalizeDim(qRows * sk * (2 * (d + dv)));
  // Through L2: the queries and the output once, each key/value (batch,
  // head)'s keys and values once per tile of its rows (its query heads'
  // rows share them) and each query row's mask row. Left out: where the
  // keys are split, each piece's partial result stored, read back and
  // cleared (3 * (Dv + 2) * 4 bytes a row and piece, in L2; one piece
  // stores none, which a dim cannot tell from two). From DRAM the blocks of one item run
  // side by side and share those passes in L2 (docs/performance.md), so
  // the step's bytes stay its buffers once.
  auto bytesOf = [&](Value v) { return static_cast<int64_t>(storageBytes(elementOf(v))); };
  DimExpr passes = tiles * sk * (d * bytesOf(k) + dv * bytesOf(v));
  DimExpr once = qRows * (d * bytesOf(q) + dv * bytesOf(root.getResult()));
  l2Bytes = passes + once;
  if (mask)
    l2Bytes = l2Bytes + qRows * sk * bytesOf(mask);
  l2Bytes = canonicalizeDim(l2Bytes);
  scratchBytes = DimExpr();
  if (a.split) {
    int64_t accBytes = computeType(elementOf(root.getResult())) == "double" ? 8 : 4;
    scratchBytes = getConstantDim(
        context, kSplitCounterBytes + splitSlots(tile) * (dv + 2) * accBytes);
  }
}

LogicalResult KernelEmitter::emitAttention(AttentionOp root, ArrayRef<int64_t> outputPerm) {
  // A block per tile of BR rows of one key/value (batch, head): the rows of
  // the query heads that read that head (grouped-query attention: a decode
  // step's few rows times the group), in head-major order. The tile of
  // queries (scaled) stays in shared memory while tiles of BC keys and
  // values pass through it; the scores of a tile never leave the chip. Each
  // row keeps a running maximum m, a running sum l and an output accumulator
  // rescaled by exp(m_old - m_new) when the maximum grows (an online
  // softmax), so one pass over the keys gives softmax(q k^T * scale + mask) v.
  // Few tiles and many keys (a decode step): the keys are split into pieces
  // across blocks (flash-decoding); each piece's block stores its partial
  // (m, l, unscaled output) in the kernel scratch and counts itself in, and
  // the last block of a tile combines them, rescaled to the largest m, and
  // clears the scratch it used. Every loop strides by the block's threads:
  // any block size is right.
  blockPerItem = true;
  // Held to 64 registers (50% occupancy, sass-lint's rule): the split's
  // index arithmetic and the combine would otherwise take some 95.
  halfOccupancy = true;
  Value q = root.getQuery(), k = root.getKey(), v = root.getValue(), mask = root.getMask();
  Type t = elementOf(root.getResult());
  std::string acc = computeType(t);
  int64_t rank = cast<RankedTensorType>(q.getType()).getRank();
  int64_t d = cast<RankedTensorType>(q.getType()).getDimSize(rank - 1);
  int64_t dv = cast<RankedTensorType>(v.getType()).getDimSize(rank - 1);
  if (ShapedType::isDynamic(d) || ShapedType::isDynamic(dv))
    return root.emitError() << "codegen: attention needs static feature dims";
  int64_t tile = attentionTile(d, dv, acc == "double" ? 8 : 4);
  AttentionShape a = attentionShape(root, tile);
  // The two products on tensor cores (mma.sync.m16n8k16, sm_80 and newer;
  // host emulation's blocks of whole warps emulate its fragments) where
  // query, key and value are all fp16 or all bf16 (the tiles hold them in
  // fp32, and the fragments round them to the type again: exact, or where a
  // producer fused into the loads computed in fp32, the rounding its result
  // has at the op's boundary), the features whole k16 steps (and n8
  // tiles of the values') and the tiles whole m16 tiles; where the block is
  // whole warps (below: every block on a device). The rest multiplies on
  // CUDA cores.
  std::string mmaF16;
  {
    Type qt = elementOf(q);
    if (acc == "float" && (qt.isBF16() || qt.isF16()) && elementOf(k) == qt &&
        elementOf(v) == qt && d % 16 == 0 && dv % 8 == 0 && tile % 16 == 0)
      mmaF16 = qt.isF16() ? "true" : "false";
  }
  halfTensorCoreFlops = !mmaF16.empty();
  std::string D = std::to_string(d), DV = std::to_string(dv), BR = std::to_string(tile),
              BC = BR, KS = std::to_string(d + 1), G = std::to_string(a.groups);
  std::vector<std::string> qShape = dims(q), kShape = dims(k);
  std::vector<std::string> qLead(qShape.begin(), qShape.end() - 2);
  std::vector<std::string> kvLead(kShape.begin(), kShape.end() - 2);
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
  line("const int64_t P = " + product(kvLead) + ";");
  line("const int64_t Sq = " + qShape[rank - 2] + ", Sk = " + kShape[rank - 2] + ";");
  line("const int64_t R = Sq * " + G + ", rTiles = (R + " + BR + " - 1) / " + BR + ";");
  line("const int64_t tiles = P * rTiles;");
  if (a.split) {
    // The pieces, as splitPieces counts them for the grid.
    const std::string piece = int64Literal(kSplitTiles * tile);
    line("const int64_t wanted = (Sk + " + piece + " - 1) / " + piece + ";");
    line("const int64_t per = (wanted * tiles + " + int64Literal(kEnoughBlocks) + ") / " +
         int64Literal(kEnoughBlocks) + ";");
    line("const int64_t splits = wanted > 0 ? (wanted + per - 1) / per : 1;");
    line("const int64_t keyTiles = (Sk + " + BC + " - 1) / " + BC + ";");
    // Whole key tiles a piece, so that only the last piece's last tile is
    // partial.
    line("const int64_t span = (keyTiles + splits - 1) / splits * " + BC + ";");
    // The scratch (splitSlots): a counter a tile, then a slot a row and
    // piece: the rows' unscaled outputs, maxima and sums.
    const std::string slots = int64Literal(splitSlots(tile));
    line("int *const counters = (int *)kiln_scratch;");
    line(acc + " *const partialO = (" + acc + " *)(kiln_scratch + " +
         int64Literal(kSplitCounterBytes) + ");");
    line(acc + " *const partialM = partialO + " + slots + " * " + DV + ", *const partialL = partialM + " +
         slots + ";");
    line("__shared__ int combines;");
  } else {
    line("const int64_t splits = 1, span = Sk;");
  }
  openBlock("for (int64_t item = blockIdx.x; item < tiles * splits; item += gridDim.x) {");
  line("const int64_t tileItem = item / splits, piece = item - tileItem * splits;");
  line("const int64_t p = " + quotient("tileItem", "rTiles") + ", rho0 = (tileItem - p * rTiles) * " +
       BR + ";");
  // The rows of this tile (the last one may be partial): loops stop there.
  line("const int64_t nr = kiln_min<int64_t>(" + BR + ", R - rho0);");
  line("const int64_t kBegin = piece * span, kEnd = kiln_min<int64_t>(Sk, kBegin + span);");
  if (!mmaF16.empty()) {
    // Every tile on tensor cores where the block is whole warps: always on
    // a device of sm_80 or newer (its blocks are 256 threads,
    // kiln/artifact/DeviceLaunch.h), which then compiles no CUDA-core
    // product at all (the registers it would hold are what keeps the kernel
    // at 64 without spilling); in host emulation's threaded blocks of whole
    // warps. A tile of fewer rows (a decode step's) multiplies only the
    // 16-row tiles that hold its rows.
    line("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800");
    line("constexpr bool mma = true;");
    line("#elif defined(__CUDA_ARCH__)");
    line("constexpr bool mma = false;");
    line("#else");
    line("const bool mma = blockDim.x % 32 == 0;");
    line("#endif");
    line("const int rowTiles16 = (nr + 15) / 16;");
  }
  std::vector<std::string> kvPrefix = unravel("p", kvLead);
  // A row's query head (gi of the group) and query row (i): head-major.
  auto rowOf = [&](const std::string &rho) {
    if (a.groups == 1)
      line("const int64_t gi = 0, i = " + rho + ";");
    else
      line("const int64_t gi = " + quotient(rho, qShape[rank - 2]) + ", i = " + rho + " - gi * " +
           qShape[rank - 2] + ";");
  };
  std::vector<std::string> qPrefix = kvPrefix;
  if (a.groups > 1)
    qPrefix[rank - 3] = "(" + kvPrefix[rank - 3] + " * " + G + " + gi)";
  auto at = [&](ArrayRef<std::string> prefix, const std::string &row, const std::string &col) {
    std::vector<std::string> index(prefix.begin(), prefix.end());
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
  // Loads element `index` of `x` into `dst` (the loops stop at the tile's
  // last row and key, so every element they reach exists).
  auto load = [&](Value x, const std::string &dst, ArrayRef<std::string> index) -> LogicalResult {
    FailureOr<std::string> e = element(x, index);
    if (failed(e))
      return failure();
    line(dst + " = (" + acc + ")" + *e + ";");
    return success();
  };
  // The tile of queries, and the accumulators of its rows.
  if (failed(tileLoop("nr * " + D, [&] {
        line("const int64_t r = t / " + D + ", c = t % " + D + ";");
        rowOf("(rho0 + r)");
        return load(q, "qs[t]", at(qPrefix, "i", "c"));
      })))
    return failure();
  line("for (int64_t t = threadIdx.x; t < " + std::string(mmaF16.empty() ? "nr" : BR) + " * " +
       DV + "; t += blockDim.x) os[t] = (" + acc + ")0;");
  // (Tensor cores rescale whole tiles: the rows past the last get alpha 1.)
  line("for (int64_t t = threadIdx.x; t < " + std::string(mmaF16.empty() ? "nr" : BR) +
       "; t += blockDim.x) { ms[t] = " + ninf + "; ls[t] = (" + acc + ")0; as[t] = (" + acc +
       ")1; }");
  line("__syncthreads();");
  openBlock("for (int64_t j0 = kBegin; j0 < kEnd; j0 += " + BC + ") {");
  line("const int64_t nc = kiln_min<int64_t>(" + BC + ", kEnd - j0);");
  if (failed(tileLoop("nc * " + D, [&] {
        line("const int64_t r = t / " + D + ", c = t % " + D + ", j = j0 + r;");
        return load(k, "ks[r * " + KS + " + c]", at(kvPrefix, "j", "c"));
      })) ||
      failed(tileLoop("nc * " + DV, [&] {
        line("const int64_t r = t / " + DV + ", c = t % " + DV + ", j = j0 + r;");
        return load(v, "vs[t]", at(kvPrefix, "j", "c"));
      })))
    return failure();
  // Tensor cores read whole tiles. Rows of queries and keys past the
  // tile's end only make scores that are not kept; but a value row past it
  // meets a weight of 0, and 0 times a stale NaN is NaN: those are 0.
  if (!mmaF16.empty())
    line("if (mma) for (int64_t t = nc * " + DV + " + threadIdx.x; t < " + BC + " * " + DV +
         "; t += blockDim.x) vs[t] = 0.0f;");
  line("__syncthreads();");
  if (!mmaF16.empty()) {
    // Q K^T on tensor cores: a warp takes a tile of 16 rows by 8 keys at a
    // time, D / 16 steps, and leaves the dot products in ps for the scores'
    // loop below (scale, mask, -inf past the last key).
    openTensorCoreBlock();
    openBlock("for (int u = warp; u < rowTiles16 * (" + BC + " / 8); u += warps) {");
    line("const int r0 = u / (" + BC + " / 8) * 16, c0 = u % (" + BC + " / 8) * 8;");
    line("float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};");
    // Q's rows r0 + quad (+ 8), features 2 tq + {0, 1} (+ 8) of the step;
    // K's row c0 + quad (B's column), the same features (B's k).
    // (32-bit offsets into the shared tiles, not pointers: fewer registers.)
    line("const int qa = (r0 + quad) * " + D + " + 2 * tq, kb = (c0 + quad) * " + KS +
         " + 2 * tq;");
    openBlock("for (int f = 0; f < " + D + "; f += 16) {");
    line("uint32_t a[4], b[2];");
    auto q2 = [&](const std::string &at) {
      return "kiln_pack_pair<" + mmaF16 + ">(qs[qa + " + at + "], qs[qa + " + at + " + 1])";
    };
    line("a[0] = " + q2("f") + ";");
    line("a[1] = " + q2("f + 8 * " + D) + ";");
    line("a[2] = " + q2("f + 8") + ";");
    line("a[3] = " + q2("f + 8 * " + D + " + 8") + ";");
    line("b[0] = kiln_pack_pair<" + mmaF16 + ">(ks[kb + f], ks[kb + f + 1]);");
    line("b[1] = kiln_pack_pair<" + mmaF16 + ">(ks[kb + f + 8], ks[kb + f + 9]);");
    line("kiln_mma_16816<" + mmaF16 + ">(d, a, b);");
    closeBlock();
    openBlock("for (int i = 0; i < 4; ++i) {");
    line("ps[(r0 + quad + (i >= 2 ? 8 : 0)) * " + BC + " + c0 + 2 * tq + (i & 1)] = d[i];");
    closeBlock();
    closeBlock(); // units
    line("__syncthreads();");
    closeBlock();
    line("#endif");
  }
  // The tile's scores; -inf past the last key.
  std::string scale = scalarLiteral(t, root.getScaleAttr());
  SymShape scoresDims = getSymShape(root.getType());
  scoresDims.back() = getSymShape(k.getType())[rank - 2];
  if (failed(tileLoop("nr * " + BC, [&]() -> LogicalResult {
        line("const int64_t r = t / " + BC + ", c = t % " + BC + ", j = j0 + c;");
        line(acc + " s = " + ninf + ";");
        openBlock("if (j < kEnd) {");
        line(acc + " dot = (" + acc + ")0;");
        std::string dots = "for (int64_t f = 0; f < " + D + "; ++f) dot += qs[r * " + D +
                           " + f] * ks[c * " + KS + " + f];";
        line(mmaF16.empty() ? dots : "if (mma) dot = ps[t]; else " + dots);
        line("s = dot * " + scale + ";");
        if (mask) {
          rowOf("(rho0 + r)");
          FailureOr<std::string> e =
              element(mask, broadcastIndex(mask, scoresDims, at(qPrefix, "i", "j")));
          if (failed(e))
            return failure();
          // Additive, or boolean: -inf where false.
          if (elementOf(mask).isInteger(1))
            line("if (!(" + *e + ")) s = " + ninf + ";");
          else
            line("s += (" + acc + ")" + *e + ";");
        }
        closeBlock();
        line("ps[t] = s;");
        return success();
      })))
    return failure();
  line("__syncthreads();");
  emitOnlineSoftmaxStep(acc, ninf, BR, BC, DV, mmaF16);
  closeBlock(); // key tiles
  // Where row r's output element e goes, and the value it gets from its
  // sum l and unscaled output o. A row whose every score was masked has l =
  // 0: 0 / 0, NaN, as kiln.softmax (or 0 with zero_masked_rows). With no
  // keys at all (Sk = 0) the product of the weights by the values is a sum
  // of nothing: 0, as the matmul/softmax/matmul chain the kernel replaces
  // (and the reference interpreter) gives.
  auto storeRows = [&](const std::string &o, const std::string &l) {
    line("const int64_t r = t / " + DV + ", e = t % " + DV + ";");
    rowOf("(rho0 + r)");
    std::string offset = "((p * " + G + " + gi) * Sq + i) * " + DV + " + e";
    if (!outputPerm.empty()) {
      // Element [prefix.., i, e] of the attention lands at the transposed place.
      std::vector<std::string> index = at(qPrefix, "i", "e");
      std::vector<std::string> attShape = qLead;
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
         store(t, root.getZeroMaskedRows()
                      ? l + " == (" + acc + ")0 ? (" + acc + ")0 : " + o + " / " + l
                      : "(Sk == 0 ? (" + acc + ")0 : " + o + " / " + l + ")") +
         ";");
  };
  auto storeTile = [&] {
    openBlock("for (int64_t t = threadIdx.x; t < nr * " + DV + "; t += blockDim.x) {");
    storeRows("os[t]", "ls[r]");
    closeBlock();
  };
  if (!a.split) {
    storeTile();
    line("__syncthreads();");
    closeBlock(); // items
    return success();
  }
  openBlock("if (splits == 1) {");
  storeTile();
  closeBlock();
  openBlock("else {");
  // This piece's partial, a slot a row (slot()): the row's unscaled
  // outputs, its maximum and its sum.
  auto slot = [&](const std::string &s, const std::string &r) {
    return "((p * splits + " + s + ") * R + rho0 + " + r + ")";
  };
  openBlock("for (int64_t t = threadIdx.x; t < nr * " + DV + "; t += blockDim.x) {");
  line("const int64_t r = t / " + DV + ", e = t - r * " + DV + ";");
  line("partialO[" + slot("piece", "r") + " * " + DV + " + e] = os[t];");
  closeBlock();
  openBlock("for (int64_t r = threadIdx.x; r < nr; r += blockDim.x) {");
  line("partialM[" + slot("piece", "r") + "] = ms[r];");
  line("partialL[" + slot("piece", "r") + "] = ls[r];");
  closeBlock();
  line("kiln_fence();");
  line("__syncthreads();");
  line("if (threadIdx.x == 0) combines = kiln_arrive(counters + tileItem) == splits - 1;");
  line("__syncthreads();");
  openBlock("if (combines) {");
  line("kiln_fence();");
  // Per row: the largest maximum over the pieces (ms), and the sum of their
  // sums each rescaled to it (ls).
  openBlock("for (int64_t r = threadIdx.x; r < nr; r += blockDim.x) {");
  line(acc + " mx = " + ninf + ";");
  line("for (int64_t s = 0; s < splits; ++s) mx = kiln_max<" + acc +
       ">(mx, kiln_load_fresh(partialM + " + slot("s", "r") + "));");
  line(acc + " sum = (" + acc + ")0;");
  openBlock("for (int64_t s = 0; s < splits; ++s) {");
  line("const " + acc + " m = kiln_load_fresh(partialM + " + slot("s", "r") + ");");
  line("if (m != " + ninf + ") sum += kiln_load_fresh(partialL + " + slot("s", "r") +
       ") * kiln_exp(m - mx);");
  closeBlock();
  line("ms[r] = mx;");
  line("ls[r] = sum;");
  closeBlock();
  line("__syncthreads();");
  // The outputs, rescaled likewise; the pieces' outputs cleared.
  openBlock("for (int64_t t = threadIdx.x; t < nr * " + DV + "; t += blockDim.x) {");
  line("const int64_t r = t / " + DV + ", e = t - r * " + DV + ";");
  line(acc + " o = (" + acc + ")0;");
  openBlock("for (int64_t s = 0; s < splits; ++s) {");
  line(acc + " *const at = partialO + " + slot("s", "r") + " * " + DV + " + e;");
  line("const " + acc + " m = kiln_load_fresh(partialM + " + slot("s", "r") + ");");
  line("if (m != " + ninf + ") o += kiln_load_fresh(at) * kiln_exp(m - ms[r]);");
  line("*at = (" + acc + ")0;");
  closeBlock();
  line("os[t] = o;");
  closeBlock();
  line("__syncthreads();");
  // The pieces' maxima and sums cleared (read above until the barrier).
  openBlock("for (int64_t r = threadIdx.x; r < nr; r += blockDim.x) {");
  openBlock("for (int64_t s = 0; s < splits; ++s) {");
  line("partialM[" + slot("s", "r") + "] = (" + acc + ")0;");
  line("partialL[" + slot("s", "r") + "] = (" + acc + ")0;");
  closeBlock();
  closeBlock();
  line("if (threadIdx.x == 0) counters[tileItem] = 0;");
  storeTile();
  closeBlock(); // combines
  closeBlock(); // splits > 1
  line("__syncthreads();");
  closeBlock(); // items
  return success();
}

} // namespace kiln::codegen
