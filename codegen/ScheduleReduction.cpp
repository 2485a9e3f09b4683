//===- ScheduleReduction.cpp - reductions, arg reductions, scans and top_k ---===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

namespace {
/// A reduction's identity and its combination of `a` and `b`, as C
/// expressions in the accumulator type `acc` of the result's type `t`.
struct Combiner {
  std::string identity, combine;
};
Combiner reduceCombiner(ReduceKind kind, Type t, const std::string &acc) {
  bool isF = isFloatType(t);
  std::string identity, combine;
  switch (kind) {
  case ReduceKind::sum:
  case ReduceKind::mean:
    identity = "(" + acc + ")0";
    combine = isF ? "a + b" : "(" + acc + ")((uint64_t)a + (uint64_t)b)";
    break;
  case ReduceKind::prod:
    identity = "(" + acc + ")1";
    combine = isF ? "a * b" : "(" + acc + ")((uint64_t)a * (uint64_t)b)";
    break;
  case ReduceKind::max:
    identity = isF ? "(" + acc + ")kiln_f32_bits(0xff800000u)"
                   : "(" + acc + ")(" + acc + "(-1) < " + acc + "(0) ? (" + acc + ")((uint64_t)1 << " +
                         std::to_string(t.getIntOrFloatBitWidth() - 1) + ") : (" + acc + ")0)";
    combine = "kiln_max<" + acc + ">(a, b)";
    break;
  case ReduceKind::min:
    identity = isF ? "(" + acc + ")kiln_f32_bits(0x7f800000u)"
                   : "(" + acc + ")(" + acc + "(-1) < " + acc + "(0) ? (" + acc + ")(((uint64_t)1 << " +
                         std::to_string(t.getIntOrFloatBitWidth() - 1) + ") - 1) : (" + acc + ")(~0ULL))";
    combine = "kiln_min<" + acc + ">(a, b)";
    break;
  case ReduceKind::any:
    identity = "false";
    combine = "a || b";
    break;
  case ReduceKind::all:
    identity = "true";
    combine = "a && b";
    break;
  }
  if (t.isInteger(1) && (kind == ReduceKind::max || kind == ReduceKind::min)) {
    identity = kind == ReduceKind::max ? "false" : "true";
    combine = kind == ReduceKind::max ? "a || b" : "a && b";
  }
  return {identity, combine};
}
} // namespace

LogicalResult KernelEmitter::emitReduction(ReduceOp root) {
  Value input = root.getInput(), result = root.getResult();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : root.getAxes())
    reduced[a < 0 ? a + rank : a] = true;
  std::vector<std::string> inShape = dims(input), outShape = dims(result), reducedShape;
  bool trailing = true;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d])
      reducedShape.push_back(inShape[d]);
    else if (d > 0 && reduced[d - 1])
      trailing = false;
  }
  blockPerItem = trailing && !reducedShape.empty();
  Type t = elementOf(result);
  std::string acc = computeType(t);
  bool isF = isFloatType(t);
  ReduceKind kind = root.getKind();
  Combiner combiner = reduceCombiner(kind, t, acc);
  const std::string &identity = combiner.identity, &combine = combiner.combine;
  std::string combineFn = "[](" + acc + " a, " + acc + " b) { return (" + acc + ")(" + combine + "); }";
  line("const int64_t items = " + product(outShape) + ";");
  line("const int64_t R = " + product(reducedShape) + ";");
  // Combines the input element at output position `outIndex` and reduced
  // position `rr` into `acc`.
  auto accumulate = [&](const std::vector<std::string> &outIndex) -> LogicalResult {
    std::vector<std::string> redIndex = unravel("rr", reducedShape), inIndex;
    size_t nextOut = 0, nextRed = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[d]) {
        inIndex.push_back(redIndex[nextRed++]);
        if (root.getKeepDims())
          ++nextOut;
      } else {
        inIndex.push_back(outIndex[nextOut++]);
      }
    }
    FailureOr<std::string> x = element(input, inIndex);
    if (failed(x))
      return failure();
    line("acc = (" + combineFn + ")(acc, (" + acc + ")" + *x + ");");
    return success();
  };
  std::string final = "acc";
  if (kind == ReduceKind::mean)
    final = isF ? "acc / (" + acc + ")R" : "(R == 0 ? (" + acc + ")0 : (" + acc + ")(acc / R))";
  // One output's reduction: `outer` walks the outputs, `inner` the reduced
  // elements (each thread's share), `combineAll` joins the threads' partials
  // and `storeIf` picks the thread that writes.
  auto reduceOutputs = [&](const std::string &outer, const std::string &inner,
                           const std::string &combineAll, const std::string &storeIf) {
    openBlock(outer);
    std::vector<std::string> outIndex = unravel("o", outShape);
    line(acc + " acc = " + identity + ";");
    openBlock(inner);
    if (failed(accumulate(outIndex)))
      return failure();
    closeBlock();
    if (!combineAll.empty())
      line("acc = " + combineAll + ";");
    line(storeIf + "out[o] = " + store(t, final) + ";");
    closeBlock();
    return success();
  };
  if (!blockPerItem) {
    // A column reduction (every reduced dim before every kept one: the
    // outputs lie contiguous in each input row) in 2-D tiles: a block takes
    // 32 consecutive outputs, a lane each (reads coalesced along the row),
    // and its warps split the rows, their partials combined through shared
    // memory; 8x the threads of one per output at the runtime's 256. Other
    // patterns, and blocks that are not whole warps, take a thread per output.
    bool leading = !reducedShape.empty() && !outShape.empty();
    for (int64_t d = 1; d < rank; ++d)
      if (reduced[d] && !reduced[d - 1])
        leading = false;
    if (leading) {
      blockPerItem = true;
      workItems = canonicalizeDim(productOf(getSymShape(result.getType())).ceilDiv(32));
      line("__shared__ " + acc + " scratch[KILN_MAX_BLOCK];");
      openBlock("if (blockDim.x % 32 == 0) {");
      line("const int64_t lane = threadIdx.x % 32, slice = threadIdx.x / 32, slices = blockDim.x / 32;");
      openBlock("for (int64_t base = blockIdx.x * 32; base < items; base += gridDim.x * 32) {");
      line("const int64_t o = base + lane;");
      line(acc + " acc = " + identity + ";");
      openBlock("if (o < items) {");
      std::vector<std::string> outIndex = unravel("o", outShape);
      openBlock("for (int64_t rr = slice; rr < R; rr += slices) {");
      if (failed(accumulate(outIndex)))
        return failure();
      closeBlock();
      closeBlock();
      line("scratch[threadIdx.x] = acc;");
      line("__syncthreads();");
      openBlock("if (slice == 0 && o < items) {");
      line("for (int64_t s = 1; s < slices; ++s) acc = (" + combineFn + ")(acc, scratch[s * 32 + lane]);");
      line("out[o] = " + store(t, final) + ";");
      closeBlock();
      line("__syncthreads();");
      closeBlock();
      line("return;");
      closeBlock();
    }
    return reduceOutputs("for (int64_t o = kiln_thread_index(); o < items; o += kiln_thread_count()) {",
                         "for (int64_t rr = 0; rr < R; ++rr) {", "", "");
  }
  // Trailing axes: a warp per output where the reduced elements are few
  // (a global average pool's 49: a block's 256 threads would mostly idle),
  // eight outputs to a block of the runtime's 256 threads; else a block per
  // output. Blocks that are not whole warps (host emulation's one thread)
  // take the block path, correct for any grid.
  std::optional<int64_t> staticR =
      getConstantDimValue(productOf(ArrayRef<DimExpr>(getSymShape(input.getType())).take_back(
          static_cast<size_t>(std::count(reduced.begin(), reduced.end(), true)))));
  line("__shared__ " + acc + " scratch[KILN_MAX_BLOCK];");
  if (staticR && *staticR <= kMaxWarpReduction) {
    SymShape out = getSymShape(result.getType());
    workItems = canonicalizeDim(productOf(out).ceilDiv(kBlockThreads / 32));
    line("if (blockDim.x % 32 == 0) {");
    ++indent;
    line("const int64_t lane = threadIdx.x % 32, warps = blockDim.x / 32;");
    if (failed(reduceOutputs(
            "for (int64_t o = blockIdx.x * warps + threadIdx.x / 32; o < items; o += gridDim.x * warps) {",
            "for (int64_t rr = lane; rr < R; rr += 32) {", "kiln_warp_reduce(acc, " + combineFn + ")",
            "if (lane == 0) ")))
      return failure();
    line("return;");
    --indent;
    line("}");
  }
  return reduceOutputs("for (int64_t o = blockIdx.x; o < items; o += gridDim.x) {",
                       "for (int64_t rr = threadIdx.x; rr < R; rr += blockDim.x) {",
                       "kiln_block_reduce(acc, " + combineFn + ", scratch)", "if (threadIdx.x == 0) ");
}

LogicalResult KernelEmitter::emitArgReduction(ArgReduceOp root) {
  // One result element per thread, scanning the axis in order: ties keep the
  // first (or, with select_last_index, the last) position, and the first NaN wins.
  Value input = root.getInput(), result = root.getResult();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  int64_t axis = normalizedAxis(static_cast<int64_t>(root.getAxis()), rank);
  std::vector<std::string> inShape = dims(input), outShape = dims(result);
  Type t = elementOf(input);
  std::string ct = computeType(t);
  bool isF = isFloatType(t);
  line("const int64_t items = " + product(outShape) + ";");
  line("const int64_t N = " + inShape[axis] + ";");
  // No position to name on an empty axis: the call's error, as in the reference.
  if (std::optional<int64_t> n = getConstantDimValue(getSymShape(input.getType())[axis]);
      !n || *n == 0)
    checkData("N == 0 && items > 0 && kiln_thread_index() == 0", "KILN_ERROR_EMPTY_REDUCTION");
  openBlock("for (int64_t o = kiln_thread_index(); o < items; o += kiln_thread_count()) {");
  std::vector<std::string> outIndex = unravel("o", outShape);
  auto inputIndex = [&](const std::string &k) {
    std::vector<std::string> in;
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) {
        in.push_back(k);
        if (root.getKeepDims())
          ++next;
      } else {
        in.push_back(outIndex[next++]);
      }
    }
    return in;
  };
  line(ct + " best = " + ct + "();");
  line("int64_t at = 0;");
  openBlock("for (int64_t k = 0; k < N; ++k) {");
  FailureOr<std::string> v = element(input, inputIndex("k"));
  if (failed(v))
    return failure();
  line("if (k == 0) { best = " + *v + "; continue; }");
  if (isF) {
    line("if (kiln_isnan(best)) continue;");
    line("if (kiln_isnan(" + *v + ")) { best = " + *v + "; at = k; continue; }");
  }
  bool argmin = root.getKind() == ArgReduceKind::argmin;
  std::string better = argmin ? *v + " < best" : *v + " > best";
  std::string tie = root.getSelectLastIndex() ? " || " + *v + " == best" : "";
  line("if (" + better + tie + ") { best = " + *v + "; at = k; }");
  closeBlock();
  line("out[o] = (int64_t)at;");
  closeBlock();
  return success();
}

LogicalResult KernelEmitter::emitCumulative(CumulativeOp root) {
  // One thread per line along the axis, walking it in order (reversed with
  // `reverse`): neighbouring threads take neighbouring inner positions, so
  // each step's reads and writes are coalesced across a warp. Floats
  // accumulate in double as the reference does; integers wrap through uint64.
  Value input = root.getInput(), result = root.getResult();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  int64_t axis = normalizedAxis(static_cast<int64_t>(root.getAxis()), rank);
  std::vector<std::string> shape = dims(input);
  std::vector<std::string> lineShape;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      lineShape.push_back(shape[d]);
  SymShape symShape = getSymShape(input.getType());
  SmallVector<DimExpr> lineDims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      lineDims.push_back(symShape[d]);
  workItems = productOf(lineDims);
  Type t = elementOf(result);
  bool isF = isFloatType(t);
  bool sum = root.getKind() == CumulativeKind::sum;
  std::string acc = isF ? "double" : "uint64_t";
  line("const int64_t lines = " + product(lineShape) + ";");
  line("const int64_t N = " + shape[axis] + ";");
  openBlock("for (int64_t o = kiln_thread_index(); o < lines; o += kiln_thread_count()) {");
  std::vector<std::string> lineIndex = unravel("o", lineShape);
  line(acc + " acc = " + (sum ? "0" : "1") + ";");
  openBlock("for (int64_t step = 0; step < N; ++step) {");
  line(std::string("const int64_t k = ") + (root.getReverse() ? "N - 1 - step" : "step") + ";");
  std::vector<std::string> index(lineIndex.begin(), lineIndex.begin() + axis);
  index.push_back("k");
  index.insert(index.end(), lineIndex.begin() + axis, lineIndex.end());
  std::string at = "0";
  for (int64_t d = 0; d < rank; ++d)
    at = d == 0 ? index[0] : "(" + at + " * " + shape[d] + " + " + index[d] + ")";
  FailureOr<std::string> x = element(input, index);
  if (failed(x))
    return failure();
  std::string stored = store(t, isF ? "acc" : "(" + computeType(t) + ")acc");
  if (root.getExclusive())
    line("out[" + at + "] = " + stored + ";");
  line(std::string("acc = ") + (sum ? "acc + " : "acc * ") + "(" + acc + ")" + *x + ";");
  if (!root.getExclusive())
    line("out[" + at + "] = " + stored + ";");
  closeBlock();
  closeBlock();
  return success();
}

LogicalResult KernelEmitter::emitTopK(TopKOp root) {
  // A top_k's indices (its values are a gather of them): a block per line
  // along the axis; each thread takes elements of the line and counts the
  // elements that come before each (larger, or smaller with largest = false;
  // NaN as the largest; ties by position): an element whose count is below k
  // is written at that place. Sorted as the reference sorts; O(n) reads per
  // element, n^2 per line, from the cache: for the candidate counts detection
  // heads and classifiers rank, not a vocabulary-sized axis.
  blockPerItem = true;
  Value input = root.getInput(), result = root.getIndices();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  int64_t axis = normalizedAxis(static_cast<int64_t>(root.getAxis()), rank);
  std::vector<std::string> shape = dims(input), outShape = dims(result);
  std::vector<std::string> lineShape;
  SymShape symShape = getSymShape(input.getType());
  SmallVector<DimExpr> lineDims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) {
      lineShape.push_back(shape[d]);
      lineDims.push_back(symShape[d]);
    }
  workItems = productOf(lineDims);
  std::string ct = computeType(elementOf(input));
  line("const int64_t lines = " + product(lineShape) + ";");
  line("const int64_t N = " + shape[axis] + ", K = " + outShape[axis] + ";");
  // k beyond the axis is the call's error, as in the reference.
  checkData("K > N && kiln_thread_index() == 0", "KILN_ERROR_INDEX_OUT_OF_RANGE");
  openBlock("for (int64_t o = blockIdx.x; o < lines; o += gridDim.x) {");
  std::vector<std::string> lineIndex = unravel("o", lineShape);
  auto at = [&](const std::string &k) {
    std::vector<std::string> index(lineIndex.begin(), lineIndex.begin() + axis);
    index.push_back(k);
    index.insert(index.end(), lineIndex.begin() + axis, lineIndex.end());
    return index;
  };
  openBlock("for (int64_t e = threadIdx.x; e < N; e += blockDim.x) {");
  FailureOr<std::string> mine = element(input, at("e"));
  if (failed(mine))
    return failure();
  line("int64_t before = 0;");
  openBlock("for (int64_t l = 0; l < N; ++l) {");
  FailureOr<std::string> other = element(input, at("l"));
  if (failed(other))
    return failure();
  line("before += kiln_topk_before<" + ct + ">(" + *other + ", l, " + *mine + ", e, " +
       (root.getLargest() ? "true" : "false") + ") ? 1 : 0;");
  closeBlock();
  std::vector<std::string> outIndex = at("before");
  std::string position = "0";
  for (int64_t d = 0; d < rank; ++d)
    position = d == 0 ? outIndex[0] : "(" + position + " * " + outShape[d] + " + " + outIndex[d] + ")";
  line("if (before < K) out[" + position + "] = (int64_t)e;");
  closeBlock();
  closeBlock();
  return success();
}


} // namespace kiln::codegen
