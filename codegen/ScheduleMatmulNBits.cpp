//===- ScheduleMatmulNBits.cpp - matmul_nbits: packed weights, read once ---===//
//
// kiln.matmul_nbits (CompositeOps.td says the rule) as a GEMV over the packed
// weights: a block per `columns` output columns, the threads of a column
// (its lanes) splitting its K codes in chunks of 16 bytes (8 or 4 where a
// column's bytes are not a multiple), each lane reading its chunks once for
// up to four input rows at a time and dequantizing in registers:
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
/// Input rows a pass of the weights serves at most.
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
  // Codes a scale covers inside one chunk.
  const int64_t codesAScale = std::min(blockSize, codesAChunk);
  // Columns a block: a warp each, unless that leaves the device short of
  // blocks and a column has the chunks to give more lanes work.
  int64_t columns = kBlockThreads / 32;
  while (columns > 1 && (n + columns - 1) / columns < kEnoughBlocks &&
         chunks >= 2 * (kBlockThreads / (columns / 2)))
    columns /= 2;
  const int64_t items = (n + columns - 1) / columns;
  streamBytesATrip = static_cast<int>(chunkBytes);

  auto isArg = [](Value v) { return isa<BlockArgument>(v); };
  if (!isArg(x) || !isArg(weights))
    return unsupported(root, "needs its input and weights as kernel inputs");
  std::string in = "in" + std::to_string(cast<BlockArgument>(x).getArgNumber());
  std::string w = "in" + std::to_string(cast<BlockArgument>(weights).getArgNumber());
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
  std::string misaligned = "!kiln_aligned(" + w + ", " + std::to_string(chunkBytes) + ")";
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

  openBlock("for (int64_t item = blockIdx.x; item < " + int64Literal(items) +
            "; item += gridDim.x) {");
  openBlock("for (int64_t round = 0; round * atOnce < columns; ++round) {");
  line("const int64_t col = item * columns + round * atOnce + slot;");
  line("const bool active = slot < atOnce && round * atOnce + slot < columns && col < N;");
  line("const uint8_t *column = " + w + " + col * " + int64Literal(columnBytes) + ";");
  openBlock("for (int64_t m0 = 0; m0 < M;) {");
  line("const int rowsNow = M - m0 >= " + std::to_string(kRowsAPass) + " ? " +
       std::to_string(kRowsAPass) + " : 1;");
  for (int rows : {kRowsAPass, 1}) {
    openBlock(std::string(rows == kRowsAPass ? "if" : "else if") + " (rowsNow == " +
              std::to_string(rows) + ") {");
    for (int r = 0; r < rows; ++r) {
      line("float acc" + std::to_string(r) + " = 0.0f;");
      line("const " + xType + " *row" + std::to_string(r) + " = " + in + " + (m0 + " +
           std::to_string(r) + ") * K;");
    }
    openBlock("if (active) {");
    // Pointers step through the chunks (no per-trip index products).
    line("const uint8_t *codes = column + lane * " + int64Literal(chunkBytes) + ";");
    for (int r = 0; r < rows; ++r)
      line("const " + xType + " *xr" + std::to_string(r) + " = row" + std::to_string(r) +
           " + lane * " + int64Literal(codesAChunk) + ";");
    std::string advance = "codes += lanes * " + int64Literal(chunkBytes);
    for (int r = 0; r < rows; ++r)
      advance += ", xr" + std::to_string(r) + " += lanes * " + int64Literal(codesAChunk);
    openBlock("for (int64_t k0 = lane * " + int64Literal(codesAChunk) + "; k0 < " +
              int64Literal(chunks * codesAChunk) + "; k0 += lanes * " + int64Literal(codesAChunk) +
              ", " + advance + ") {");
    line("const kiln_vec<uint32_t, " + std::to_string(chunkBytes / 4) +
         "> code = *reinterpret_cast<const kiln_vec<uint32_t, " + std::to_string(chunkBytes / 4) +
         "> *>(codes);");
    for (int64_t sub = 0; sub < codesAChunk / codesAScale; ++sub) {
      openBlock("{");
      // The block of this run of codes: k0 / blockSize, a shift.
      std::string firstK = "(k0 + " + int64Literal(sub * codesAScale) + ")";
      line("const int64_t block = " + firstK + " >> " +
           std::to_string(llvm::Log2_64(blockSize)) + ";");
      FailureOr<std::string> scale = flatRead(scales, "col * " + int64Literal(blocks) + " + block");
      if (failed(scale))
        return failure();
      line("const float scale = (float)" + *scale + ";");
      // offset: 2^23 + z, subtracted from each code's float (exact for an
      // integer z); a float z is subtracted after 2^23.
      bool floatZero = zeroPoints && isa<FloatType>(elementOf(zeroPoints));
      if (!zeroPoints) {
        line("const float offset = " + bias + " + " + defaultZero + ".0f;");
      } else if (!floatZero) {
        int64_t zpBytes = cast<RankedTensorType>(zeroPoints.getType()).getShape()[1];
        FailureOr<std::string> zb = flatRead(
            zeroPoints, "col * " + int64Literal(zpBytes) + " + ((block * " + std::to_string(bits) +
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
      for (int r = 0; r < rows; ++r)
        line("float part" + std::to_string(r) + " = 0.0f;");
      // The codes of this run, a word of the chunk at a time: part p of a
      // word holds codes p, p + partsAWord, ... in its bytes.
      for (int64_t c = sub * codesAScale; c < (sub + 1) * codesAScale; c += codesAWord) {
        int64_t word = c / codesAWord;
        std::vector<std::string> parts;
        for (int64_t p = 0; p < partsAWord; ++p) {
          std::string part = temp("p");
          std::string shifted = "(code.x[" + std::to_string(word) + "]" +
                                (p ? " >> " + std::to_string(p * bits) : std::string()) + ")";
          line("const uint32_t " + part + " = " + shifted +
               (bits == 8 ? ";"
                          : " & " + std::string(bits == 4 ? "0x0F0F0F0Fu" : "0x03030303u") + ";"));
          parts.push_back(part);
        }
        // The input's values at these codes, per row (a word's worth at a
        // time keeps four rows of them in few registers).
        std::vector<std::vector<std::string>> xs(rows);
        for (int r = 0; r < rows; ++r) {
          std::string row = "xr" + std::to_string(r);
          for (int64_t v = 0; v < codesAWord; v += vectorX ? xVector : 1) {
            std::string at = int64Literal(c + v);
            if (!vectorX) {
              std::string load = "(float)kiln_load(" + row + "[" + at + "])";
              xs[r].push_back(kGuard ? "(k0 + " + at + " < K ? " + load + " : 0.0f)" : load);
              continue;
            }
            std::string vec = temp("x");
            if (elementOf(x).isBF16() && xVector % 2 == 0) {
              // A bf16 pair is a 32-bit word: each half a float by one
              // shift or mask (the 16-bit lanes would take two).
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
          std::string value = "kiln_byte_float<" + std::to_string(byte) + ">(" + parts[p] + ", magic) - offset";
          if (zeroPoints && isa<FloatType>(elementOf(zeroPoints)))
            value = "(" + value + ") - zero";
          line("const float " + q + " = " + value + ";");
          for (int r = 0; r < rows; ++r)
            line("part" + std::to_string(r) + " += " + xs[r][v] + " * " + q + ";");
        }
      }
      for (int r = 0; r < rows; ++r)
        line("acc" + std::to_string(r) + " += part" + std::to_string(r) + " * scale;");
      closeBlock();
    }
    closeBlock(); // chunks
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
      line("if (lane == 0) for (int64_t j = 1; j < lanes / shuffled; ++j) " + acc +
           " += kiln_part[slot * (lanes / shuffled) + j];");
      line("__syncthreads();");
      closeBlock();
      line("if (active && lane == 0) out[(m0 + " + std::to_string(r) + ") * N + col] = " +
           store(elementOf(root.getResult()), acc) + ";");
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
