//===- ScheduleMatmulNBits.cpp - matmul_nbits: packed weights, read once ---===//
//
// kiln.matmul_nbits (CompositeOps.td says the rule) as a GEMV over the packed
// weights: a block per `columns` units of one or two output columns (two
// below 8 bits where the trips need no guard past K, and a gated unit's gate
// and up column always: a thread computes both from the same input values,
// and a gated one stores silu(gate) * up), the threads of a unit (its lanes) splitting
// its K codes in trips of up to four chunks of 16 bytes over its columns
// (8 or 4 bytes where a column's bytes are not a multiple of 16) that lie in
// one block (one scale and zero point a trip and column), each lane reading
// its trips once for up to four input rows at a time (two, or one at 2
// bits, with two columns) and dequantizing in registers:
//  - a code becomes a float without a conversion instruction: its byte, put
//    under the exponent of 2^23 (kiln_byte_float, a PRMT), is 2^23 + q
//    exactly, and one subtraction of 2^23 + z gives q - z (two for a float
//    zero point);
//  - the products of a block accumulate unscaled, then times the block's
//    scale once;
//  - an input value (widened once from bf16/f16) serves both columns, which
//    halves the input's share of the instructions and of the blocks' reads
//    of the input rows through L2;
//  - the lanes' sums meet by warp shuffles (a warp a unit) or through
//    shared memory (split-K: several warps a unit, when there are too few
//    units to fill the device; and any block size host emulation runs).
// At decode sizes (a few rows) the kernel moves each weight byte once, which
// is what a 4-bit model is for. Many rows (a prompt) of 16-bit values by
// 4-bit codes take a tensor-core pass (emitTensorCorePass); other prompts
// repeat the weight reads from L1/L2 per pass of rows and do their products
// on CUDA cores: correct, but far from a tensor-core matmul
// (docs/precision.md).
//===----------------------------------------------------------------------===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

namespace {
/// The blocks of the device: the size at which splitting a column's K
/// across warps starts to pay (two blocks an SM of an H200's 132).
constexpr int64_t kEnoughBlocks = 264;
/// Input rows a pass of the weights serves at most (fewer where a word's
/// codes are many: a word's input values for every row stay in registers).
constexpr int kRowsAPass = 4;
/// Rows from which matmul_nbits multiplies on tensor cores (emitMatmulNBits).
constexpr int64_t kTensorCoreRows = 16;
/// Output columns a thread computes at most (the same input values each).
constexpr int64_t kColumnsAThread = 2;
} // namespace

LogicalResult KernelEmitter::emitMatmulNBits(MatmulNBitsOp root) {
  blockPerItem = true;
  Value x = root.getInput(), weights = root.getWeights(), scales = root.getScales(),
        zeroPoints = root.getZeroPoints();
  const int64_t bits = root.getBits(), blockSize = root.getBlockSize();
  auto wShape = cast<RankedTensorType>(weights.getType()).getShape();
  const int64_t n = wShape[0], blocks = wShape[1], blob = wShape[2];
  SymShape xShape = getSymShape(x.getType());
  const int64_t k = *getConstantDimValue(xShape.back());
  // A gated linear unit (CompositeOps.td): a thread's two columns are a
  // gate and its up column, 8 apart in each group of 16, and it stores
  // silu(gate) * up at column 8 g + i of the N / 2.
  const bool glu = root.getGlu();
  // Code offsets along K are 32-bit (a lane's registers).
  if (k > std::numeric_limits<int32_t>::max() / 2)
    return unsupported(root, "needs K under 2^30");
  const int64_t columnBytes = blocks * blob;
  // A chunk: the bytes a lane loads at once, and the codes in it.
  const int64_t chunkBytes = columnBytes % 16 == 0 ? 16 : columnBytes % 8 == 0 ? 8 : 4;
  // Only the chunks that hold some of the K codes: the last block's padding
  // beyond them is never read.
  const int64_t codesAChunk = chunkBytes * 8 / bits, chunks = (k + codesAChunk - 1) / codesAChunk;
  const int64_t codesAWord = 32 / bits, partsAWord = 8 / bits;
  const int64_t xBytes = storageBytes(elementOf(x));
  // A trip: the chunks a lane reads one after another inside one block, of
  // each of its `columnsAThread` columns, so that a trip loads one scale and
  // zero point a column and keeps up to `inFlight` chunks' bytes in flight.
  // Fewer when the column's trips would leave a warp's lanes idle (a warp
  // issues for all 32 however many work): the most chunks a trip that keep
  // 85% of the lanes busy. The last trip may hold chunks past K.
  struct Trips {
    int64_t chunks = 1; // a trip's, a column's
    int64_t codes;      // a trip's, a column's
    int64_t count;      // a column's
    bool guard;         // whether a trip's later chunks may lie past K
  };
  auto planTrips = [&](int64_t columnsAThread, int64_t inFlight) {
    Trips plan;
    for (int64_t t : {4, 2}) {
      int64_t tripsIf = (chunks + t - 1) / t, rounds = (tripsIf + 31) / 32;
      if (t * columnsAThread <= inFlight && codesAChunk * t <= blockSize &&
          tripsIf * 100 >= 85 * 32 * rounds) {
        plan.chunks = t;
        break;
      }
    }
    plan.codes = plan.chunks * codesAChunk;
    plan.count = (k + plan.codes - 1) / plan.codes;
    plan.guard = plan.chunks > 1 && k % plan.codes != 0;
    return plan;
  };
  // Columns a thread: one, or two reading the same input values, so that
  // each value loaded (and, from bf16, widened) serves two columns' products
  // and a block's reads of the input rows through L2 serve twice the
  // columns. Two take more registers, and fit the 64 of half occupancy
  // (sass-lint's occupancy rule; any more spill) only with:
  //  - codes below 8 bits (at 8, a weight byte is one code and an input
  //    value's share of the work is half as large anyway);
  //  - four chunks in flight a lane with 16-bit inputs, two with wider ones
  //    (whose values for a trip's codes, which the compiler loads ahead,
  //    take twice the registers);
  //  - no trip past K to guard.
  // A gated unit pairs its gate and up columns whatever the plan: where the
  // pair needs a guard past K it keeps the full register budget (the 64 of
  // half occupancy would spill).
  int64_t columnsAThread = 1;
  Trips trips = planTrips(1, 4);
  if ((n >= 2 && bits < 8) || glu) {
    Trips two = planTrips(kColumnsAThread, xBytes <= 2 ? 4 : 2);
    if (!two.guard || glu) {
      columnsAThread = kColumnsAThread;
      trips = two;
      halfOccupancy = !two.guard && bits < 8;
    }
  }
  // Codes a scale covers inside one chunk.
  const int64_t codesAScale = std::min(blockSize, codesAChunk);
  const int64_t columnUnits = (n + columnsAThread - 1) / columnsAThread;
  // Column units (columnsAThread columns) a block: a warp each, unless that
  // leaves the device short of blocks and a unit has the trips to give more
  // lanes work.
  int64_t columns = kBlockThreads / 32;
  while (columns > 1 && (columnUnits + columns - 1) / columns < kEnoughBlocks &&
         trips.count >= 2 * (kBlockThreads / (columns / 2)))
    columns /= 2;
  const int64_t items = (columnUnits + columns - 1) / columns;
  streamBytesATrip = static_cast<int>(columnsAThread * trips.chunks * chunkBytes);

  // Weights whose bytes are all one value are a splat the kernel holds
  // (kiln-form-kernels copies splat constants in): every code word is that
  // byte four times, and nothing is loaded.
  std::optional<uint32_t> splatWord;
  DenseElementsAttr weightSplat;
  if (matchPattern(weights, m_Constant(&weightSplat)) && weightSplat.isSplat())
    splatWord = 0x01010101u * static_cast<uint32_t>(
                                  weightSplat.getSplatValue<APInt>().getZExtValue() & 0xFFu);
  if (!isa<BlockArgument>(x) || (!splatWord && !isa<BlockArgument>(weights)))
    return unsupported(root, "needs its input and weights as kernel inputs");
  std::string in = "in" + std::to_string(cast<BlockArgument>(x).getArgNumber());
  std::string w = splatWord ? std::string()
                            : "in" + std::to_string(cast<BlockArgument>(weights).getArgNumber());
  // A scale or zero point at a flat offset: from its buffer, or a constant
  // the kernel holds (a splat).
  auto flatRead = [&](Value v, const std::string &offset) -> FailureOr<std::string> {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return "kiln_load(in" + std::to_string(arg.getArgNumber()) + "[" + offset + "])";
    DenseElementsAttr splat;
    if (matchPattern(v, m_Constant(&splat)) && splat.isSplat())
      return scalarLiteral(splat.getElementType(), splat.getSplatValue<Attribute>());
    return unsupported(root, "needs its scales and zero points as kernel inputs or splats");
  };

  const std::string xType = storageType(elementOf(x));
  // The input's rows are read in vectors of up to 16 bytes (a word's
  // codes' worth at most) when K fills the chunks: no bound check then.
  const int64_t xVector = std::min<int64_t>(16 / xBytes, codesAWord);
  const bool kGuard = k % codesAChunk != 0;
  const bool vectorX = !kGuard && k % xVector == 0;

  DimExpr rowsDim = getAffineConstantExpr(1, kernel.getContext());
  for (size_t d = 0; d + 1 < xShape.size(); ++d)
    rowsDim = rowsDim * xShape[d];
  rowsDim = canonicalizeDim(rowsDim);
  workItems = getConstantDim(kernel.getContext(), items);
  MLIRContext *ctx = kernel.getContext();
  auto C = [&](int64_t v) { return getAffineConstantExpr(v, ctx); };
  flops = canonicalizeDim(rowsDim * C(2 * n * k));
  // Each block reads the input's rows; the weights, scales and zero points
  // are read once (the passes of rows after the first hit L1/L2).
  int64_t paramBytes = n * columnBytes +
                       n * blocks * static_cast<int64_t>(storageBytes(elementOf(scales)));
  if (zeroPoints)
    paramBytes += cast<RankedTensorType>(zeroPoints.getType()).getNumElements() *
                  static_cast<int64_t>(storageBytes(elementOf(zeroPoints)));
  l2Bytes = canonicalizeDim(rowsDim * C(k * xBytes * items) + C(paramBytes));

  line("__shared__ float kiln_part[KILN_MAX_BLOCK];");
  // The vector loads need their buffers aligned (a GPU faults otherwise);
  // the runtime's buffers are, a caller's view at an odd offset may not be:
  // the call's error then, before any load.
  std::string misaligned =
      splatWord ? "false" : "!kiln_aligned(" + w + ", " + std::to_string(chunkBytes) + ")";
  if (vectorX)
    misaligned += " || !kiln_aligned(" + in + ", " + std::to_string(xVector * xBytes) + ")";
  line("const bool misaligned = " + misaligned + ";");
  checkData("misaligned && blockIdx.x == 0 && threadIdx.x == 0", "KILN_ERROR_MISALIGNED");
  line("if (misaligned) return;");
  line("const int64_t M = " + dim(rowsDim) + ";");
  line("const int64_t K = " + int64Literal(k) + ", N = " + int64Literal(n) + ";");
  // Lanes a unit: whole warps on a device; any block size in host
  // emulation (a block of one thread does its columns one after another).
  // (In 32 bits, as the trips' code offsets: registers a thread keeps.)
  // On a device the block is the CUDA executor's 256 threads (its
  // kBlockThreads), a constant there: the compiler then derives a thread's
  // lane and unit by shifts and recomputes them rather than keep them.
  line("const int columns = " + std::to_string(columns) + ";");
  line("#ifdef __CUDACC_RTC__");
  line("const int blockThreads = " + std::to_string(kBlockThreads) + ";");
  line("#else");
  line("const int blockThreads = (int)blockDim.x;");
  line("#endif");
  // The tensor-core pass (below) goes here, before the passes' own state:
  // none of it is live there (registers the kernel is held to).
  const size_t tensorCorePassAt = body.size();
  line("const uint32_t magic = 0x4B000000u | kiln_opaque_zero(out);");
  line("const int atOnce = columns < blockThreads ? columns : blockThreads;");
  line("const int lanes = blockThreads / atOnce;");
  line("const int slot = (int)threadIdx.x / lanes, lane = (int)threadIdx.x - slot * "
       "lanes;");
  // Lanes whose sums one shuffle reduction combines (a warp), or 1.
  // (Its log2: shifts, where a division by a value the compiler cannot see
  // is a call's worth of instructions.)
  line("const int shuffledBits = lanes % 32 == 0 && blockThreads % 32 == 0 ? 5 : 0;");
  line("const int shuffled = 1 << shuffledBits;");
  std::string bias = "8388608.0f"; // 2^23, under which kiln_byte_float puts a code
  std::string defaultZero = std::to_string(1 << (bits - 1));

  // The block that starts at code `firstK` of the column: its scale and
  // `offset` (2^23 + z, subtracted from each code's float: exact for an
  // integer z; a float z is subtracted after 2^23).
  const bool floatZero = zeroPoints && isa<FloatType>(elementOf(zeroPoints));
  // Names of column j's values: its scale, offset, accumulators.
  auto ofColumn = [](const std::string &name, int64_t j) { return name + "_" + std::to_string(j); };
  // One column's `scale` and `offset` for block `block` (expressions of the
  // kernel: a column and a block index), and its `zero` where it is one.
  auto scaleAndOffset = [&](const std::string &col, const std::string &block,
                            const std::string &scale, const std::string &offset,
                            const std::string &zero) -> LogicalResult {
    FailureOr<std::string> s = flatRead(scales, col + " * " + int64Literal(blocks) + " + " + block);
    if (failed(s))
      return failure();
    line("const float " + scale + " = (float)" + *s + ";");
    if (!zeroPoints) {
      line("const float " + offset + " = " + bias + " + " + defaultZero + ".0f;");
    } else if (!floatZero) {
      int64_t zpBytes = cast<RankedTensorType>(zeroPoints.getType()).getShape()[1];
      std::string at = "(" + block + ") * " + std::to_string(bits);
      FailureOr<std::string> zb =
          flatRead(zeroPoints, col + " * " + int64Literal(zpBytes) + " + ((" + at + ") >> 3)");
      if (failed(zb))
        return failure();
      line("const uint32_t " + zero + " = ((uint32_t)" + *zb + " >> ((" + at + ") & 7)) & " +
           std::to_string((1 << bits) - 1) + "u;");
      line("const float " + offset + " = kiln_f32_bits(0x4B000000u | " + zero + ");");
    } else {
      FailureOr<std::string> z =
          flatRead(zeroPoints, col + " * " + int64Literal(blocks) + " + " + block);
      if (failed(z))
        return failure();
      line("const float " + zero + " = (float)" + *z + ";");
      line("const float " + offset + " = " + bias + ";");
    }
    return success();
  };
  auto blockParams = [&](const std::string &firstK) -> LogicalResult {
    line("const int block = " + firstK + " >> " + std::to_string(llvm::Log2_64(blockSize)) +
         ";");
    for (int64_t j = 0; j < columnsAThread; ++j)
      if (failed(scaleAndOffset(ofColumn("col", j), "block", ofColumn("scale", j),
                                ofColumn("offset", j), ofColumn("zero", j))))
        return failure();
    return success();
  };
  // Codes [from, to) of chunk `code` (at code `base` of the trip; column
  // j's bytes in `code`_j) into each row's and column's `part`, a word at a
  // time: part p of a word holds codes p, p + partsAWord, ... in its bytes.
  // `rowsNow` rows (a pass's).
  int rowsNow = 0;
  auto codesOf = [&](const std::string &code, int64_t base, int64_t from, int64_t to) {
    for (int64_t c = from; c < to; c += codesAWord) {
      int64_t word = c / codesAWord;
      // parts[j][p]: column j's part p.
      std::vector<std::vector<std::string>> parts(columnsAThread);
      for (int64_t j = 0; j < columnsAThread; ++j) {
        for (int64_t p = 0; p < partsAWord; ++p) {
          std::string part = temp("p");
          std::string shifted = "(" + ofColumn(code, j) + ".x[" + std::to_string(word) + "]" +
                                (p ? " >> " + std::to_string(p * bits) : std::string()) + ")";
          line("const uint32_t " + part + " = " + shifted +
               (bits == 8 ? ";"
                          : " & " + std::string(bits == 4 ? "0x0F0F0F0Fu" : "0x03030303u") +
                                ";"));
          parts[j].push_back(part);
        }
      }
      // The input's values at these codes, per row (a word's worth at a
      // time keeps four rows of them in few registers).
      std::vector<std::vector<std::string>> xs(rowsNow);
      for (int r = 0; r < rowsNow; ++r) {
        std::string row = "xr" + std::to_string(r);
        for (int64_t v = 0; v < codesAWord; v += vectorX ? xVector : 1) {
          std::string at = int64Literal(base + c + v);
          if (!vectorX) {
            std::string load = "(float)kiln_load(" + row + "[" + at + "])";
            xs[r].push_back(kGuard ? "(k0 + " + at + " < K ? " + load + " : 0.0f)" : load);
            continue;
          }
          std::string vec = temp("x");
          if (elementOf(x).isBF16() && xVector % 2 == 0) {
            // A bf16 pair is a 32-bit word: each half a float by one shift
            // or mask (the 16-bit lanes would take two).
            std::string type = "kiln_vec<uint32_t, " + std::to_string(xVector / 2) + ">";
            line("const " + type + " " + vec + " = *reinterpret_cast<const " + type + " *>(" + row +
                 " + " + at + ");");
            for (int64_t l = 0; l < xVector; ++l)
              xs[r].push_back("kiln_f32_bits(" + vec + ".x[" + std::to_string(l / 2) + "]" +
                              (l % 2 ? " & 0xFFFF0000u)" : " << 16)"));
            continue;
          }
          std::string type = "kiln_vec<" + xType + ", " + std::to_string(xVector) + ">";
          line("const " + type + " " + vec + " = *reinterpret_cast<const " + type + " *>(" + row +
               " + " + at + ");");
          for (int64_t l = 0; l < xVector; ++l)
            xs[r].push_back("(float)kiln_load(" + vec + ".x[" + std::to_string(l) + "])");
        }
      }
      for (int64_t v = 0; v < codesAWord; ++v) {
        int64_t byte = v / partsAWord, p = v % partsAWord;
        for (int64_t j = 0; j < columnsAThread; ++j) {
          std::string q = temp("q");
          std::string value = "kiln_byte_float<" + std::to_string(byte) + ">(" + parts[j][p] +
                              ", magic) - " + ofColumn("offset", j);
          if (floatZero)
            value = "(" + value + ") - " + ofColumn("zero", j);
          line("const float " + q + " = " + value + ";");
          for (int r = 0; r < rowsNow; ++r)
            line(ofColumn("part" + std::to_string(r), j) + " += " + xs[r][v] + " * " + q + ";");
        }
      }
    }
  };

  // Many rows (a prompt) of 16-bit inputs by 4-bit codes: tensor cores
  // (mma.sync.m16n8k16, sm_80 and newer; host emulation's blocks of whole
  // warps emulate its fragments) instead of the CUDA-core passes. A warp
  // computes a tile of 16 columns by 16 rows, block by block of the codes:
  // each lane dequantizes its columns' codes (q - z, exact in bf16/f16) into
  // the weights' fragment, the rows' bf16/f16 values are the other operand
  // as they are, the block's fp32 sums are scaled once. K's order inside a
  // block is free (a sum), so lane L % 4 takes a contiguous quarter of each
  // block's codes and the same quarter of the rows' values: its loads are
  // whole words. Only where every block is whole (K a multiple of the block
  // size, blocks of 32 to 128 codes); rows at 16 or more; a row base
  // aligned for 8-byte loads. (Blocks of 32 to 128: a lane's quarter of a
  // block is one load of at most 16 bytes, the alignment the kernel checks,
  // and the block's blockSize / 16 steps are unrolled.) The rest, and every
  // other build, takes the passes below.
  const bool tensorCores = bits == 4 && xBytes == 2 && !floatZero && !splatWord &&
                           blockSize >= 32 && blockSize <= 128 && k % blockSize == 0;
  // The roofline's unit for the flops: tensor cores at kTensorCoreRows rows
  // or more (an unaligned row base, which falls back at run time, aside).
  // Their L2 reads then: a block's warps take consecutive tiles of 16
  // columns of one tile of 16 rows, so the rows pass through L2 once a
  // block's columns (its warps share them in L1) and each column's weights,
  // scales and zero points once a tile of rows.
  if (tensorCores) {
    tensorCoreRows = rowsDim;
    tensorCoreMinRows = kTensorCoreRows;
    const int64_t blockColumns = 16 * (kBlockThreads / 32);
    tensorCoreL2Bytes = canonicalizeDim(
        rowsDim.ceilDiv(16) *
        C(16 * k * xBytes * ((n + blockColumns - 1) / blockColumns) + paramBytes));
  }
  auto emitTensorCorePass = [&]() -> LogicalResult {
    const std::string f16 = elementOf(x).isF16() ? "true" : "false";
    const int64_t laneCodes = blockSize / 4, laneBytes = laneCodes / 2, laneWords = laneBytes / 4;
    const int64_t steps = laneCodes / 4; // k16 steps a block
    line("#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800");
    openBlock("if (M >= " + std::to_string(kTensorCoreRows) +
              " && blockThreads % 32 == 0 && kiln_aligned(" + in + ", 8)) {");
    line("const int warps = blockThreads >> 5, warp = (int)threadIdx.x >> 5;");
    line("const int quad = ((int)threadIdx.x & 31) >> 2, tq = (int)threadIdx.x & 3;");
    line("const int64_t colTiles = (N + 15) / 16, tiles = colTiles * ((M + 15) / 16);");
    openBlock("for (int64_t tile = (int64_t)blockIdx.x * warps + warp; tile < tiles; tile += "
              "(int64_t)gridDim.x * warps) {");
    line("const int64_t c0 = (tile % colTiles) * 16, r0 = (tile / colTiles) * 16;");
    // The lane's two columns (A's rows quad and quad + 8) and two rows (B's
    // column quad of each group of 8), clamped into range: reads past N or M
    // read real bytes, and their results are not stored.
    line("const int64_t cA = c0 + quad < N ? c0 + quad : N - 1, cB = c0 + quad + 8 < N ? c0 + "
         "quad + 8 : N - 1;");
    line("const " + xType + " *x0 = " + in + " + (r0 + quad < M ? r0 + quad : M - 1) * K + tq * " +
         int64Literal(laneCodes) + ";");
    line("const " + xType + " *x1 = " + in + " + (r0 + 8 + quad < M ? r0 + 8 + quad : M - 1) * K + "
         "tq * " + int64Literal(laneCodes) + ";");
    line("const uint8_t *wA = " + w + " + cA * " + int64Literal(columnBytes) + " + tq * " +
         int64Literal(laneBytes) + ";");
    line("const uint8_t *wB = " + w + " + cB * " + int64Literal(columnBytes) + " + tq * " +
         int64Literal(laneBytes) + ";");
    line("float t0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, t1[4] = {0.0f, 0.0f, 0.0f, 0.0f};");
    openBlock("for (int blk = 0; blk < " + std::to_string(blocks) + "; ++blk, wA += " +
              std::to_string(blob) + ", wB += " + std::to_string(blob) + ", x0 += " +
              std::to_string(blockSize) + ", x1 += " + std::to_string(blockSize) + ") {");
    std::string vec = "kiln_vec<uint32_t, " + std::to_string(laneWords) + ">";
    line("const " + vec + " qA = *reinterpret_cast<const " + vec + " *>(wA);");
    line("const " + vec + " qB = *reinterpret_cast<const " + vec + " *>(wB);");
    for (const std::string c : {"A", "B"})
      if (failed(scaleAndOffset("c" + c, "blk", "s" + c, "o" + c, "z" + c)))
        return failure();
    line("float p0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, p1[4] = {0.0f, 0.0f, 0.0f, 0.0f};");
    // Step s: the lane's codes 4s .. 4s + 3 of each column (bytes 2s and
    // 2s + 1 of its quarter: a byte's low nibble first) and the rows' values
    // at the same places.
    for (int64_t st = 0; st < steps; ++st) {
      openBlock("{");
      std::string shift = std::to_string(16 * (st % 2));
      for (const char *c : {"A", "B"}) {
        line(std::string("const uint32_t h") + c + " = q" + c + ".x[" + std::to_string(st / 2) +
             "] >> " + shift + ";");
      }
      // q - z of nibble n of a halfword, as a float (2^23 + q less 2^23 + z).
      auto code = [&](const char *c, int nibble) {
        return std::string("(kiln_f32_bits(0x4B000000u | ((h") + c + " >> " +
               std::to_string(4 * nibble) + ") & 15u)) - o" + c + ")";
      };
      line("uint32_t a[4];");
      line("a[0] = kiln_pack_pair<" + f16 + ">(" + code("A", 0) + ", " + code("A", 1) + ");");
      line("a[1] = kiln_pack_pair<" + f16 + ">(" + code("B", 0) + ", " + code("B", 1) + ");");
      line("a[2] = kiln_pack_pair<" + f16 + ">(" + code("A", 2) + ", " + code("A", 3) + ");");
      line("a[3] = kiln_pack_pair<" + f16 + ">(" + code("B", 2) + ", " + code("B", 3) + ");");
      for (int r = 0; r < 2; ++r) {
        std::string rs = std::to_string(r);
        line("const kiln_vec<uint32_t, 2> b" + rs + " = *reinterpret_cast<const kiln_vec<uint32_t, "
             "2> *>(x" + rs + " + " + std::to_string(4 * st) + ");");
        line("kiln_mma_16816<" + f16 + ">(p" + rs + ", a, b" + rs + ".x);");
      }
      closeBlock();
    }
    line("for (int i = 0; i < 4; ++i) {");
    line("  t0[i] += p0[i] * (i < 2 ? sA : sB);");
    line("  t1[i] += p1[i] * (i < 2 ? sA : sB);");
    line("}");
    closeBlock(); // blocks
    // d[i]: column c0 + quad (+ 8 for i >= 2), row 2 tq + (i & 1) of each
    // group of 8. Gated: d[i] and d[i + 2] are a gate and its up column.
    for (int r = 0; r < 2 && glu; ++r) {
      std::string rs = std::to_string(r);
      openBlock("for (int i = 0; i < 2; ++i) {");
      line("const int64_t row = r0 + " + std::to_string(8 * r) + " + 2 * tq + i;");
      std::string gate = "t" + rs + "[i]", up = "t" + rs + "[i + 2]";
      if (Value b = root.getBias()) {
        FailureOr<std::string> g = flatRead(b, "c0 + quad"), u = flatRead(b, "c0 + quad + 8");
        if (failed(g) || failed(u))
          return failure();
        gate = "(" + gate + " + (float)" + *g + ")";
        up = "(" + up + " + (float)" + *u + ")";
      }
      line("const float gate = " + gate + ";");
      line("if (row < M) out[row * (N / 2) + c0 / 2 + quad] = " +
           store(elementOf(root.getResult()), "gate * kiln_sigmoid(gate) * " + up) + ";");
      closeBlock();
    }
    for (int r = 0; r < 2 && !glu; ++r) {
      std::string rs = std::to_string(r);
      openBlock("for (int i = 0; i < 4; ++i) {");
      line("const int64_t col = c0 + quad + (i >= 2 ? 8 : 0), row = r0 + " +
           std::to_string(8 * r) + " + 2 * tq + (i & 1);");
      std::string value = "t" + rs + "[i]";
      if (Value b = root.getBias()) {
        bool vector = cast<RankedTensorType>(b.getType()).getRank() == 1;
        FailureOr<std::string> read = flatRead(b, vector ? std::string("col") : "row * N + col");
        if (failed(read))
          return failure();
        value = "(" + value + " + (float)" + *read + ")";
      }
      line("if (row < M && col < N) out[row * N + col] = " +
           store(elementOf(root.getResult()), value) + ";");
      closeBlock();
    }
    closeBlock(); // tiles
    line("return;");
    closeBlock(); // if
    line("#endif");
    return success();
  };
  if (tensorCores) {
    const size_t from = body.size();
    if (failed(emitTensorCorePass()))
      return failure();
    std::string pass = body.substr(from);
    body.resize(from);
    body.insert(tensorCorePassAt, pass);
  }
  openBlock("for (int item = blockIdx.x; item < " + std::to_string(items) +
            "; item += gridDim.x) {");
  openBlock("for (int round = 0; round * atOnce < columns; ++round) {");
  // Columns in 32 bits (registers a thread keeps through its passes; a
  // column's byte offset is a product with a 64-bit literal).
  const std::string colType =
      n + columnsAThread * columns < std::numeric_limits<int32_t>::max() ? "int32_t" : "int64_t";
  line("const " + colType + " unit = item * columns + round * atOnce + slot;");
  if (glu)
    line("const " + colType + " col_0 = (unit >> 3) * 16 + (unit & 7);");
  else
    line("const " + colType + " col_0 = unit * " + std::to_string(columnsAThread) + ";");
  line("const bool active = slot < atOnce && round * atOnce + slot < columns && col_0 < N;");
  // A unit's further columns past N (an odd N's last unit) read column 0's
  // bytes again and store nothing.
  for (int64_t j = 1; j < columnsAThread && !glu; ++j)
    line("const " + colType + " " + ofColumn("col", j) + " = col_0 + " + std::to_string(j) +
         " < N ? col_0 + " + std::to_string(j) + " : col_0;");
  if (glu)
    line("const " + colType + " col_1 = col_0 + 8;");
  if (!splatWord)
    line("const uint8_t *column = " + w + " + col_0 * " + int64Literal(columnBytes) + ";");
  if (!splatWord && columnsAThread > 1 && glu)
    line("const int64_t columnStep = " + int64Literal(8 * columnBytes) + ";");
  else if (!splatWord && columnsAThread > 1)
    line("const " + colType + " columnStep = (col_1 - col_0) * " + std::to_string(columnBytes) +
         ";");
  openBlock("for (int64_t m0 = 0; m0 < M;) {");
  // Rows a pass: a word's input values for each row stay in registers, and
  // so do an accumulator and a part per row and column.
  // With the tensor-core pass in the same kernel (its state and the passes'
  // share the 64 registers of half occupancy), a pass of one row: the
  // passes then serve fewer than 16 rows.
  const int rowsAPass =
      tensorCores && columnsAThread > 1
          ? 1
          : static_cast<int>(std::max<int64_t>(
                1, std::min<int64_t>(kRowsAPass, std::max<int64_t>(1, 32 / codesAWord)) /
                       columnsAThread));
  line("const int rowsNow = M - m0 >= " + std::to_string(rowsAPass) + " ? " +
       std::to_string(rowsAPass) + " : 1;");
  // A pass of rowsAPass rows, and one of a row for the rest (the same code
  // when rowsAPass is 1).
  for (int pass = 0; pass < (rowsAPass > 1 ? 2 : 1); ++pass) {
    const bool first = pass == 0;
    const int rows = first ? rowsAPass : 1;
    rowsNow = rows;
    openBlock(std::string(first ? "if" : "else if") + " (rowsNow == " + std::to_string(rows) +
              ") {");
    for (int r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < columnsAThread; ++j)
        line("float " + ofColumn("acc" + std::to_string(r), j) + " = 0.0f;");
      line("const " + xType + " *row" + std::to_string(r) + " = " + in + " + (m0 + " +
           std::to_string(r) + ") * K;");
    }
    openBlock("if (active) {");
    // Pointers step through the trips (no per-trip index products).
    if (!splatWord)
      line("const uint8_t *codes = column + lane * " + int64Literal(trips.chunks * chunkBytes) +
           ";");
    for (int r = 0; r < rows; ++r)
      line("const " + xType + " *xr" + std::to_string(r) + " = row" + std::to_string(r) +
           " + lane * " + int64Literal(trips.codes) + ";");
    std::string advance =
        splatWord ? std::string() : ", codes += lanes * " + int64Literal(trips.chunks * chunkBytes);
    for (int r = 0; r < rows; ++r)
      advance += ", xr" + std::to_string(r) + " += lanes * " + int64Literal(trips.codes);
    openBlock("for (int k0 = lane * " + std::to_string(trips.codes) + "; k0 < " +
              std::to_string(trips.count * trips.codes) + "; k0 += lanes * " +
              std::to_string(trips.codes) +
              advance + ") {");
    // A trip's chunks first, every column's, so that their loads are in
    // flight together.
    const std::string vecType = "kiln_vec<uint32_t, " + std::to_string(chunkBytes / 4) + ">";
    for (int64_t t = 0; t < trips.chunks; ++t) {
      for (int64_t j = 0; j < columnsAThread; ++j) {
        std::string at = std::string("codes") + (j ? " + columnStep" : "") +
                         (t ? " + " + int64Literal(t * chunkBytes) : std::string());
        std::string load = "*reinterpret_cast<const " + vecType + " *>(" + at + ")";
        // A chunk past K (the last block's padding) is not read.
        if (trips.guard && t > 0)
          load = "k0 + " + int64Literal(t * codesAChunk) + " < K ? " + load + " : " + vecType +
                 "()";
        if (splatWord) {
          std::string word = std::to_string(*splatWord) + "u", words = word;
          for (int64_t i = 1; i < chunkBytes / 4; ++i)
            words += ", " + word;
          load = "{{" + words + "}}";
        }
        line("const " + vecType + " " + ofColumn("code" + std::to_string(t), j) + " = " + load +
             ";");
      }
    }
    // Each row's and column's part of a block, then times its scale.
    auto startParts = [&] {
      for (int r = 0; r < rows; ++r)
        for (int64_t j = 0; j < columnsAThread; ++j)
          line("float " + ofColumn("part" + std::to_string(r), j) + " = 0.0f;");
    };
    auto scaleParts = [&] {
      for (int r = 0; r < rows; ++r)
        for (int64_t j = 0; j < columnsAThread; ++j)
          line(ofColumn("acc" + std::to_string(r), j) + " += " +
               ofColumn("part" + std::to_string(r), j) + " * " + ofColumn("scale", j) + ";");
    };
    if (trips.chunks > 1) {
      // The trip is one block: its scale and zero point once.
      if (failed(blockParams("k0")))
        return failure();
      startParts();
      for (int64_t t = 0; t < trips.chunks; ++t) {
        openBlock(trips.guard && t > 0
                      ? "if (k0 + " + int64Literal(t * codesAChunk) + " < K) {"
                      : std::string("{"));
        codesOf("code" + std::to_string(t), t * codesAChunk, 0, codesAChunk);
        closeBlock();
      }
      scaleParts();
    } else {
      // One chunk a trip, holding one block or several.
      for (int64_t sub = 0; sub < codesAChunk / codesAScale; ++sub) {
        openBlock("{");
        if (failed(blockParams("(k0 + " + int64Literal(sub * codesAScale) + ")")))
          return failure();
        startParts();
        codesOf("code0", 0, sub * codesAScale, (sub + 1) * codesAScale);
        scaleParts();
        closeBlock();
      }
    }
    closeBlock(); // trips
    closeBlock(); // active
    // The lanes of a column meet: shuffles within a warp, then shared memory
    // across its warps (or its threads, off a device's whole warps).
    for (int r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < columnsAThread; ++j) {
        std::string acc = ofColumn("acc" + std::to_string(r), j);
        line("if (shuffled == 32) " + acc +
             " = kiln_warp_reduce(" + acc + ", [](float a, float b) { return a + b; });");
        openBlock("if (lanes > shuffled) {");
        line("if (((int)threadIdx.x & (shuffled - 1)) == 0) kiln_part[(int)threadIdx.x >> "
             "shuffledBits] = " +
             acc + ";");
        line("__syncthreads();");
        line("if (lane == 0 && slot < atOnce) for (int j = 1; j < (lanes >> shuffledBits); ++j) " +
             acc + " += kiln_part[slot * (lanes >> shuffledBits) + j];");
        line("__syncthreads();");
        closeBlock();
        std::string col = ofColumn("col", j);
        std::string value = acc;
        // Gated: the bias and the store below, by the unit's first lane
        // only (another thread's columns may lie past N).
        if (glu)
          continue;
        if (Value bias = root.getBias()) {
          // A row vector, or a residual of the result's shape.
          bool row = cast<RankedTensorType>(bias.getType()).getRank() == 1;
          FailureOr<std::string> b =
              flatRead(bias, row ? col : "(m0 + " + std::to_string(r) + ") * N + " + col);
          if (failed(b))
            return failure();
          value = "(" + acc + " + (float)" + *b + ")";
        }
        std::string stored = j ? "active && lane == 0 && col_0 + " + std::to_string(j) + " < N"
                               : std::string("active && lane == 0");
        line("if (" + stored + ") out[(m0 + " + std::to_string(r) + ") * N + " + col + "] = " +
             store(elementOf(root.getResult()), value) + ";");
      }
      if (glu) {
        std::string gate = ofColumn("acc" + std::to_string(r), 0),
                    up = ofColumn("acc" + std::to_string(r), 1);
        openBlock("if (active && lane == 0) {");
        if (Value bias = root.getBias()) {
          FailureOr<std::string> g = flatRead(bias, "col_0"), u = flatRead(bias, "col_1");
          if (failed(g) || failed(u))
            return failure();
          line("const float gate = " + gate + " + (float)" + *g + ", up = " + up + " + (float)" +
               *u + ";");
        } else {
          line("const float gate = " + gate + ", up = " + up + ";");
        }
        line("out[(m0 + " + std::to_string(r) + ") * (N / 2) + unit] = " +
             store(elementOf(root.getResult()), "gate * kiln_sigmoid(gate) * up") + ";");
        closeBlock();
      }
    }
    closeBlock(); // rows
  }
  line("m0 += rowsNow;");
  closeBlock(); // m0
  closeBlock(); // round
  closeBlock(); // item
  return success();
}

} // namespace kiln::codegen
