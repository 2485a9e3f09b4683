//===- ScheduleCompaction.cpp - count, compact and NMS selection ----------===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

void KernelEmitter::openChunkLoop(Value input, int64_t chunks) {
  blockPerItem = true;
  workItems = getAffineConstantExpr(chunks, kernel.getContext());
  line("const int64_t n = " + product(dims(input)) + ";");
  line("const int64_t chunks = " + indexLiteral(chunks) + ", chunk = (n + chunks - 1) / chunks;");
  openBlock("for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {");
  line("const int64_t begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;");
}

LogicalResult KernelEmitter::emitCountNonZero(CountNonZeroOp root) {
  // A block per chunk: its threads stride the chunk and the block sums.
  Value input = root.getInput();
  line("__shared__ int64_t scratch[KILN_MAX_BLOCK];");
  openChunkLoop(input, static_cast<int64_t>(root.getChunks()));
  line("int64_t mine = 0;");
  openBlock("for (int64_t e = begin + threadIdx.x; e < end; e += blockDim.x) {");
  FailureOr<std::string> v = element(input, unravel("e", dims(input)));
  if (failed(v))
    return failure();
  line("mine += " + nonZero(input, *v) + " ? 1 : 0;");
  closeBlock();
  line("const int64_t total = kiln_block_reduce(mine, " + std::string(kSumI64) + ", scratch);");
  line("if (threadIdx.x == 0) out[c] = total;");
  closeBlock();
  return success();
}

LogicalResult KernelEmitter::emitCompactNonZero(CompactNonZeroOp root) {
  // A block per chunk (the chunks count_non_zero counted): the block sums the
  // counts before its chunk (where its indices start), then walks the chunk a
  // tile of blockDim elements at a time, a block-wide prefix sum of the
  // non-zero flags placing each hit after the ones before it, in order.
  Value input = root.getInput(), counts = root.getChunkCounts();
  auto countsType = cast<RankedTensorType>(counts.getType());
  if (countsType.isDynamicDim(0))
    return unsupported(root, "needs chunk counts of a known length");
  std::vector<std::string> shape = dims(input);
  line("__shared__ int64_t scratch[KILN_MAX_BLOCK];");
  line("const int64_t N = " + dim(getSymShape(root.getType())[1]) + ";");
  openChunkLoop(input, countsType.getDimSize(0));
  line("int64_t before = 0;");
  openBlock("for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {");
  FailureOr<std::string> count = element(counts, {"j"});
  if (failed(count))
    return failure();
  line("before += " + *count + ";");
  closeBlock();
  line("int64_t offset = kiln_block_reduce(before, " + std::string(kSumI64) + ", scratch);");
  openBlock("for (int64_t tile = begin; tile < end; tile += blockDim.x) {");
  line("const int64_t e = tile + threadIdx.x;");
  line("bool hit = false;");
  openBlock("if (e < end) {");
  FailureOr<std::string> v = element(input, unravel("e", shape));
  if (failed(v))
    return failure();
  line("hit = " + nonZero(input, *v) + ";");
  closeBlock();
  line("int64_t hits = 0;");
  line("const int64_t rank = kiln_block_exclusive_scan(hit ? 1 : 0, scratch, &hits);");
  // Counted by the same test, so the position is inside the result; checked
  // all the same, so a disagreement can never write past it.
  openBlock("if (hit && offset + rank < N) {");
  std::vector<std::string> index = unravel("e", shape);
  for (size_t d = 0; d < index.size(); ++d)
    line("out[" + indexLiteral(static_cast<int64_t>(d)) + " * N + offset + rank] = " + index[d] +
         ";");
  closeBlock();
  line("offset += hits;");
  closeBlock();
  closeBlock();
  return success();
}

LogicalResult KernelEmitter::emitNmsSelect(NmsSelectOp root) {
  // A block per (batch, class) row. The greedy loop runs in order, every
  // thread keeping the same count: the candidate of the next rank is found
  // across the block (each thread looks at its boxes), and the overlap with
  // each box taken so far is tested across the block; thread 0 appends. The
  // row's taken boxes are the result's own row, read back as the list.
  blockPerItem = true;
  Value boxes = root.getBoxes(), scores = root.getScores(), rank = root.getRank();
  std::vector<std::string> shape = dims(scores);
  SymShape scoreDims = getSymShape(scores.getType());
  workItems = productOf({scoreDims[0], scoreDims[1]});
  line("__shared__ int64_t scratch[KILN_MAX_BLOCK];");
  line("const int64_t classes = " + shape[1] + ", S = " + shape[2] + ";");
  line("const int64_t rows = " + shape[0] + " * classes;");
  FailureOr<std::string> maxOut = onlyElement(root.getMaxOutputBoxesPerClass());
  FailureOr<std::string> iou = failed(maxOut) ? maxOut : onlyElement(root.getIouThreshold());
  if (failed(iou))
    return failure();
  line("const int64_t max_out = (int64_t)" + *maxOut + ";");
  line("const double iou_threshold = (double)" + *iou + ";");
  if (Value t = root.getScoreThreshold()) {
    FailureOr<std::string> v = onlyElement(t);
    if (failed(v))
      return failure();
    line("const double score_threshold = (double)" + *v + ";");
  }
  std::string center = root.getCenterPointBox() ? "true" : "false";
  const std::string max = kMaxI64;
  openBlock("for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {");
  line("const int64_t b = row / classes, k = row % classes;");
  line("for (int64_t j = threadIdx.x; j < S; j += blockDim.x) out[row * S + j] = -1;");
  line("int64_t taken = 0;");
  openBlock("for (int64_t r = 0; r < S && taken < max_out; ++r) {");
  line("int64_t mine = -1;");
  openBlock("for (int64_t i = threadIdx.x; i < S; i += blockDim.x) {");
  FailureOr<std::string> score = element(scores, {"b", "k", "i"});
  FailureOr<std::string> position = failed(score) ? score : element(rank, {"b", "k", "i"});
  if (failed(position))
    return failure();
  line(root.getScoreThreshold() ? "const bool candidate = (double)" + *score + " > score_threshold;"
                                : std::string("const bool candidate = true;"));
  line("if (candidate && " + *position + " == r) mine = i;");
  closeBlock();
  line("const int64_t next = kiln_block_reduce(mine, " + max + ", scratch);");
  line("if (next < 0) break;");
  auto corners = [&](const std::string &i) -> FailureOr<std::vector<std::string>> {
    std::vector<std::string> c;
    for (const char *d : {"0", "1", "2", "3"}) {
      FailureOr<std::string> e = element(boxes, {"b", i, d});
      if (failed(e))
        return failure();
      c.push_back("(double)" + *e);
    }
    return c;
  };
  FailureOr<std::vector<std::string>> a = corners("next");
  if (failed(a))
    return failure();
  line("int64_t overlaps = 0;");
  openBlock("for (int64_t t = threadIdx.x; t < taken; t += blockDim.x) {");
  line("const int64_t other = out[row * S + t];");
  FailureOr<std::vector<std::string>> o = corners("other");
  if (failed(o))
    return failure();
  line("if (kiln_box_iou(" + (*a)[0] + ", " + (*a)[1] + ", " + (*a)[2] + ", " + (*a)[3] + ", " +
       (*o)[0] + ", " + (*o)[1] + ", " + (*o)[2] + ", " + (*o)[3] + ", " + center +
       ") > iou_threshold) overlaps = 1;");
  closeBlock();
  line("if (kiln_block_reduce(overlaps, " + max + ", scratch) == 0) {");
  line("  if (threadIdx.x == 0) out[row * S + taken] = next;");
  line("  ++taken;");
  line("}");
  closeBlock();
  closeBlock();
  return success();
}

} // namespace kiln::codegen
