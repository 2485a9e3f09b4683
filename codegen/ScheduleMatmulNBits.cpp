//===- ScheduleMatmulNBits.cpp - matmul_nbits: packed weights, read once ---===//
//
// kiln.matmul_nbits (CompositeOps.td says the rule) as a GEMV over the packed
// weights: a block per `columns` output columns, the threads of a column
// (its lanes) splitting its K codes in trips of up to four chunks of 16
// bytes (8 or 4 where a column's bytes are not a multiple of 16) that lie
// in one block (one scale and zero point a trip), each lane reading its
// trips once for up to four input rows at a time and dequantizing in
// registers:
//  - a code becomes a float without a conversion instruction: its byte, put
//    under the exponent of 2^23 (kiln_byte_float, a PRMT), is 2^23 + q
//    exactly, and one subtraction of 2^23 + z gives q - z (two for a float
//    zero point);
//  - the products of a block accumulate unscaled, then times the block's
//    scale once;
//  - the lanes' sums meet by warp shuffles (a warp a column) or through
//    shared memory (split-K: several warps a column, when there are too few
//    columns to fill the device; and any block size host emulation runs).
// At decode sizes (a few rows) the kernel moves each weight byte once, which
// is what a 4-bit model is for. Many rows (a prompt) repeat the weight reads
// from L1/L2 once per four rows and do their products on CUDA cores: correct,
// but far from a tensor-core matmul (the roofline says compute bound); a
// tiled tensor-core path is left to do (docs/precision.md).
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
  const int64_t columnBytes = blocks * blob;
  // A chunk: the bytes a lane loads at once, and the codes in it.
  const int64_t chunkBytes = columnBytes % 16 == 0 ? 16 : columnBytes % 8 == 0 ? 8 : 4;
  // Only the chunks that hold some of the K codes: the last block's padding
  // beyond them is never read.
  const int64_t codesAChunk = chunkBytes * 8 / bits, chunks = (k + codesAChunk - 1) / codesAChunk;
  const int64_t codesAWord = 32 / bits, partsAWord = 8 / bits;
  // A trip: the chunks a lane reads one after another inside one block (up
  // to 4), so that a trip loads one scale and zero point and keeps up to 64
  // bytes in flight. Fewer when the column's trips would leave a warp's
  // lanes idle (a warp issues for all 32 however many work): the most
  // chunks a trip that keep 85% of the lanes busy. The last trip may hold
  // chunks past K.
  int64_t chunksATrip = 1;
  for (int64_t t : {4, 2}) {
    int64_t tripsIf = (chunks + t - 1) / t, rounds = (tripsIf + 31) / 32;
    if (codesAChunk * t <= blockSize && tripsIf * 100 >= 85 * 32 * rounds) {
      chunksATrip = t;
      break;
    }
  }
  const int64_t codesATrip = chunksATrip * codesAChunk;
  const int64_t trips = (k + codesATrip - 1) / codesATrip;
  const bool chunkGuard = chunksATrip > 1 && k % codesATrip != 0;
  // Codes a scale covers inside one chunk.
  const int64_t codesAScale = std::min(blockSize, codesAChunk);
  // Columns a block: a warp each, unless that leaves the device short of
  // blocks and a column has the trips to give more lanes work.
  int64_t columns = kBlockThreads / 32;
  while (columns > 1 && (n + columns - 1) / columns < kEnoughBlocks &&
         trips >= 2 * (kBlockThreads / (columns / 2)))
    columns /= 2;
  const int64_t items = (n + columns - 1) / columns;
  streamBytesATrip = static_cast<int>(chunksATrip * chunkBytes);

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
  const int64_t xBytes = storageBytes(elementOf(x));
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
  // are read once (the passes of four rows after the first hit L1/L2).
  int64_t paramBytes = n * columnBytes +
                       n * blocks * static_cast<int64_t>(storageBytes(elementOf(scales)));
  if (zeroPoints)
    paramBytes += cast<RankedTensorType>(zeroPoints.getType()).getNumElements() *
                  static_cast<int64_t>(storageBytes(elementOf(zeroPoints)));
  l2Bytes = canonicalizeDim(rowsDim * C(k * xBytes * items) + C(paramBytes));

  line("__shared__ float kiln_part[KILN_MAX_BLOCK];");
  line("const uint32_t magic = 0x4B000000u | kiln_opaque_zero(out);");
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
  // Lanes a column: whole warps on a device; any block size in host
  // emulation (a block of one thread does its columns one after another).
  line("const int64_t columns = " + int64Literal(columns) + ";");
  line("const int64_t atOnce = columns < (int64_t)blockDim.x ? columns : (int64_t)blockDim.x;");
  line("const int64_t lanes = (int64_t)blockDim.x / atOnce;");
  line("const int64_t slot = (int64_t)threadIdx.x / lanes, lane = (int64_t)threadIdx.x - slot * "
       "lanes;");
  // Lanes whose sums one shuffle reduction combines (a warp), or 1.
  line("const int64_t shuffled = lanes % 32 == 0 && blockDim.x % 32 == 0 ? 32 : 1;");
  std::string bias = "8388608.0f"; // 2^23, under which kiln_byte_float puts a code
  std::string defaultZero = std::to_string(1 << (bits - 1));

  // The block that starts at code `firstK` of the column: its scale and
  // `offset` (2^23 + z, subtracted from each code's float: exact for an
  // integer z; a float z is subtracted after 2^23).
  const bool floatZero = zeroPoints && isa<FloatType>(elementOf(zeroPoints));
  auto blockParams = [&](const std::string &firstK) -> LogicalResult {
    line("const int64_t block = " + firstK + " >> " + std::to_string(llvm::Log2_64(blockSize)) +
         ";");
    FailureOr<std::string> scale = flatRead(scales, "col * " + int64Literal(blocks) + " + block");
    if (failed(scale))
      return failure();
    line("const float scale = (float)" + *scale + ";");
    if (!zeroPoints) {
      line("const float offset = " + bias + " + " + defaultZero + ".0f;");
    } else if (!floatZero) {
      int64_t zpBytes = cast<RankedTensorType>(zeroPoints.getType()).getShape()[1];
      FailureOr<std::string> zb = flatRead(zeroPoints, "col * " + int64Literal(zpBytes) +
                                                           " + ((block * " + std::to_string(bits) +
                                                           ") >> 3)");
      if (failed(zb))
        return failure();
      line("const uint32_t zero = ((uint32_t)" + *zb + " >> ((block * " + std::to_string(bits) +
           ") & 7)) & " + std::to_string((1 << bits) - 1) + "u;");
      line("const float offset = kiln_f32_bits(0x4B000000u | zero);");
    } else {
      FailureOr<std::string> z = flatRead(zeroPoints, "col * " + int64Literal(blocks) + " + block");
      if (failed(z))
        return failure();
      line("const float zero = (float)" + *z + ";");
      line("const float offset = " + bias + ";");
    }
    return success();
  };
  // Codes [from, to) of chunk `code` (at code `base` of the trip) into each
  // row's `part`, a word at a time: part p of a word holds codes p,
  // p + partsAWord, ... in its bytes. `rowsNow` rows (a pass's).
  int rowsNow = 0;
  auto codesOf = [&](const std::string &code, int64_t base, int64_t from, int64_t to) {
    for (int64_t c = from; c < to; c += codesAWord) {
      int64_t word = c / codesAWord;
      std::vector<std::string> parts;
      for (int64_t p = 0; p < partsAWord; ++p) {
        std::string part = temp("p");
        std::string shifted = "(" + code + ".x[" + std::to_string(word) + "]" +
                              (p ? " >> " + std::to_string(p * bits) : std::string()) + ")";
        line("const uint32_t " + part + " = " + shifted +
             (bits == 8 ? ";"
                        : " & " + std::string(bits == 4 ? "0x0F0F0F0Fu" : "0x03030303u") + ";"));
        parts.push_back(part);
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
        std::string q = temp("q");
        std::string value =
            "kiln_byte_float<" + std::to_string(byte) + ">(" + parts[p] + ", magic) - offset";
        if (floatZero)
          value = "(" + value + ") - zero";
        line("const float " + q + " = " + value + ";");
        for (int r = 0; r < rowsNow; ++r)
          line("part" + std::to_string(r) + " += " + xs[r][v] + " * " + q + ";");
      }
    }
  };

  openBlock("for (int64_t item = blockIdx.x; item < " + int64Literal(items) +
            "; item += gridDim.x) {");
  openBlock("for (int64_t round = 0; round * atOnce < columns; ++round) {");
  line("const int64_t col = item * columns + round * atOnce + slot;");
  line("const bool active = slot < atOnce && round * atOnce + slot < columns && col < N;");
  if (!splatWord)
    line("const uint8_t *column = " + w + " + col * " + int64Literal(columnBytes) + ";");
  openBlock("for (int64_t m0 = 0; m0 < M;) {");
  const int rowsAPass = static_cast<int>(
      std::min<int64_t>(kRowsAPass, std::max<int64_t>(1, 32 / codesAWord)));
  line("const int rowsNow = M - m0 >= " + std::to_string(rowsAPass) + " ? " +
       std::to_string(rowsAPass) + " : 1;");
  for (int rows : {rowsAPass, 1}) {
    if (rows == 1 && rowsAPass == 1)
      break;
    rowsNow = rows;
    openBlock(std::string(rows == rowsAPass ? "if" : "else if") + " (rowsNow == " +
              std::to_string(rows) + ") {");
    for (int r = 0; r < rows; ++r) {
      line("float acc" + std::to_string(r) + " = 0.0f;");
      line("const " + xType + " *row" + std::to_string(r) + " = " + in + " + (m0 + " +
           std::to_string(r) + ") * K;");
    }
    openBlock("if (active) {");
    // Pointers step through the trips (no per-trip index products).
    if (!splatWord)
      line("const uint8_t *codes = column + lane * " + int64Literal(chunksATrip * chunkBytes) +
           ";");
    for (int r = 0; r < rows; ++r)
      line("const " + xType + " *xr" + std::to_string(r) + " = row" + std::to_string(r) +
           " + lane * " + int64Literal(codesATrip) + ";");
    std::string advance =
        splatWord ? std::string() : ", codes += lanes * " + int64Literal(chunksATrip * chunkBytes);
    for (int r = 0; r < rows; ++r)
      advance += ", xr" + std::to_string(r) + " += lanes * " + int64Literal(codesATrip);
    openBlock("for (int64_t k0 = lane * " + int64Literal(codesATrip) + "; k0 < " +
              int64Literal(trips * codesATrip) + "; k0 += lanes * " + int64Literal(codesATrip) +
              advance + ") {");
    // A trip's chunks first, so that their loads are in flight together.
    for (int64_t t = 0; t < chunksATrip; ++t) {
      std::string at = "codes" + (t ? " + " + int64Literal(t * chunkBytes) : std::string());
      std::string load = "*reinterpret_cast<const kiln_vec<uint32_t, " +
                         std::to_string(chunkBytes / 4) + "> *>(" + at + ")";
      // A chunk past K (the last block's padding) is not read.
      if (chunkGuard && t > 0)
        load = "k0 + " + int64Literal(t * codesAChunk) + " < K ? " + load + " : kiln_vec<uint32_t, " +
               std::to_string(chunkBytes / 4) + ">()";
      if (splatWord) {
        std::string word = std::to_string(*splatWord) + "u", words = word;
        for (int64_t i = 1; i < chunkBytes / 4; ++i)
          words += ", " + word;
        load = "{{" + words + "}}";
      }
      line("const kiln_vec<uint32_t, " + std::to_string(chunkBytes / 4) + "> code" +
           std::to_string(t) + " = " + load + ";");
    }
    if (chunksATrip > 1) {
      // The trip is one block: its scale and zero point once.
      if (failed(blockParams("k0")))
        return failure();
      for (int r = 0; r < rows; ++r)
        line("float part" + std::to_string(r) + " = 0.0f;");
      for (int64_t t = 0; t < chunksATrip; ++t) {
        openBlock(chunkGuard && t > 0
                      ? "if (k0 + " + int64Literal(t * codesAChunk) + " < K) {"
                      : std::string("{"));
        codesOf("code" + std::to_string(t), t * codesAChunk, 0, codesAChunk);
        closeBlock();
      }
      for (int r = 0; r < rows; ++r)
        line("acc" + std::to_string(r) + " += part" + std::to_string(r) + " * scale;");
    } else {
      // One chunk a trip, holding one block or several.
      for (int64_t sub = 0; sub < codesAChunk / codesAScale; ++sub) {
        openBlock("{");
        if (failed(blockParams("(k0 + " + int64Literal(sub * codesAScale) + ")")))
          return failure();
        for (int r = 0; r < rows; ++r)
          line("float part" + std::to_string(r) + " = 0.0f;");
        codesOf("code0", 0, sub * codesAScale, (sub + 1) * codesAScale);
        for (int r = 0; r < rows; ++r)
          line("acc" + std::to_string(r) + " += part" + std::to_string(r) + " * scale;");
        closeBlock();
      }
    }
    closeBlock(); // trips
    closeBlock(); // active
    // The lanes of a column meet: shuffles within a warp, then shared memory
    // across its warps (or its threads, off a device's whole warps).
    for (int r = 0; r < rows; ++r) {
      std::string acc = "acc" + std::to_string(r);
      line("if (shuffled == 32) " + acc +
           " = kiln_warp_reduce(" + acc + ", [](float a, float b) { return a + b; });");
      openBlock("if (lanes > shuffled) {");
      line("if ((int64_t)threadIdx.x % shuffled == 0) kiln_part[threadIdx.x / shuffled] = " + acc +
           ";");
      line("__syncthreads();");
      line("if (lane == 0 && slot < atOnce) for (int64_t j = 1; j < lanes / shuffled; ++j) " + acc +
           " += kiln_part[slot * (lanes / shuffled) + j];");
      line("__syncthreads();");
      closeBlock();
      std::string value = acc;
      if (Value bias = root.getBias()) {
        // A row vector, or a residual of the result's shape.
        bool row = cast<RankedTensorType>(bias.getType()).getRank() == 1;
        FailureOr<std::string> b =
            flatRead(bias, row ? std::string("col") : "(m0 + " + std::to_string(r) + ") * N + col");
        if (failed(b))
          return failure();
        value = "(" + acc + " + (float)" + *b + ")";
      }
      line("if (active && lane == 0) out[(m0 + " + std::to_string(r) + ") * N + col] = " +
           store(elementOf(root.getResult()), value) + ";");
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
