//===- ScheduleSampleTokens.cpp - sample_tokens: a block per sequence -------===//
//
// kiln.sample_tokens (ReductionOps.td says the rule) as one block per
// sequence over its row of logits, in float:
//  1. one pass: NaN count and the argmax, as a block-wide max of
//     (order key << 32 | ~index), so ties go to the first index;
//  2. when sampling, the top_k threshold: the largest key with at least top_k
//     logits at or above it, found bit by bit (32 block-wide counts); then the
//     top_p threshold the same way over the candidates' weights (32
//     block-wide sums of exp((x - max) / temperature));
//  3. the draw: each thread sums the weights of a contiguous chunk of tokens,
//     thread 0 walks the chunks in order to the one where the running weight
//     passes uniform * total, and then that chunk's tokens.
// Nothing is sorted and nothing is written but the token: the row is read
// from L2 once per step of the searches (the roofline counts two passes, the
// greedy path's; sampling's searches add up to 64 more, unmodelled).
//===----------------------------------------------------------------------===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

LogicalResult KernelEmitter::emitSampleTokens(SampleTokensOp root) {
  blockPerItem = true;
  Value logits = root.getLogits();
  SymShape shape = getSymShape(logits.getType());
  workItems = shape[0];
  std::vector<std::string> d = dims(logits);
  l2Bytes = canonicalizeDim(shape[0] * shape[2] *
                            (2 * static_cast<int64_t>(storageBytes(elementOf(logits)))));
  auto scalar = [&](Value v, const std::string &type, const std::string &name) {
    FailureOr<std::string> e = element(v, {});
    if (succeeded(e))
      line("const " + type + " " + name + " = (" + type + ")" + *e + ";");
    return e;
  };
  line("__shared__ uint64_t kiln_best[KILN_MAX_BLOCK];");
  line("__shared__ int64_t kiln_count[KILN_MAX_BLOCK];");
  line("__shared__ float kiln_mass[KILN_MAX_BLOCK];");
  line("const int64_t B = " + d[0] + ", S = " + d[1] + ", V = " + d[2] + ";");
  if (failed(scalar(root.getTemperature(), "float", "temperature")) ||
      failed(scalar(root.getTopK(), "int64_t", "top_k")) ||
      failed(scalar(root.getTopP(), "float", "top_p")))
    return failure();
  openBlock("for (int64_t b = blockIdx.x; b < B; b += gridDim.x) {");
  FailureOr<std::string> position = element(root.getPositions(), {"b"});
  if (failed(position))
    return failure();
  line("int64_t p = (int64_t)" + *position + ";");
  // A position outside the rows (S may be 0) is the call's error, and the
  // row then reads as NaN (-1, every thread on the same path): no load.
  line("const bool outside = p < 0 || p >= S;");
  checkData("outside && threadIdx.x == 0", "KILN_ERROR_INDEX_OUT_OF_RANGE");
  line("if (outside) p = 0;");
  // Each pass loads the logits through this (the load's index arithmetic
  // inside it).
  openBlock("auto logit = [&](int64_t v) -> float {");
  line("if (outside) return kiln_f32_bits(0x7fc00000u);");
  FailureOr<std::string> x = element(logits, {"b", "p", "v"});
  if (failed(x))
    return failure();
  line("return (float)" + *x + ";");
  closeBlock("};");
  line("auto weight = [&](float x, float mx) -> float { return kiln_exp((x - mx) / temperature); "
       "};");
  // 1. NaNs and the argmax.
  line("uint64_t best = 0;");
  line("int64_t nans = 0;");
  openBlock("for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {");
  line("const float x = logit(v);");
  line("if (kiln_isnan(x)) { ++nans; continue; }");
  line("const uint64_t packed = ((uint64_t)kiln_order_key(x) << 32) | (uint64_t)(0xffffffffu - "
       "(uint32_t)v);");
  line("best = packed > best ? packed : best;");
  closeBlock();
  line("best = kiln_block_reduce(best, [](uint64_t a, uint64_t c) { return a < c ? c : a; }, "
       "kiln_best);");
  line("nans = kiln_block_reduce(nans, " + std::string(kSumI64) + ", kiln_count);");
  line("const int64_t argmax = (int64_t)(0xffffffffu - (uint32_t)(best & 0xffffffffu));");
  line("const float mx = kiln_order_value((uint32_t)(best >> 32));");
  line("int64_t chosen = argmax;");
  line("if (nans > 0 || V == 0) chosen = -1;");
  openBlock("else if (temperature > 0.0f && top_k != 1 && top_p > 0.0f) {");
  line("if (kiln_isinf(mx)) chosen = -1;");
  openBlock("else {");
  // 2. The thresholds, as order keys: a candidate's key is at least `from`.
  line("uint32_t from = 0;");
  openBlock("if (top_k > 0 && top_k < V) {");
  openBlock("for (int bit = 31; bit >= 0; --bit) {");
  line("const uint32_t candidate = from | (1u << bit);");
  line("int64_t n = 0;");
  line("for (int64_t v = threadIdx.x; v < V; v += blockDim.x) n += kiln_order_key(logit(v)) >= "
       "candidate ? 1 : 0;");
  line("if (kiln_block_reduce(n, " + std::string(kSumI64) + ", kiln_count) >= top_k) from = "
       "candidate;");
  closeBlock();
  closeBlock();
  line("auto mass = [&](uint32_t at) -> float {");
  line("  float m = 0.0f;");
  line("  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {");
  line("    const float x = logit(v);");
  line("    if (kiln_order_key(x) >= at) m += weight(x, mx);");
  line("  }");
  line("  return kiln_block_reduce(m, [](float a, float c) { return a + c; }, kiln_mass);");
  line("};");
  openBlock("if (top_p < 1.0f) {");
  line("const float goal = top_p * mass(from);");
  line("uint32_t reach = 0;");
  openBlock("for (int bit = 31; bit >= 0; --bit) {");
  line("const uint32_t candidate = reach | (1u << bit);");
  line("if (mass(candidate > from ? candidate : from) >= goal) reach = candidate;");
  closeBlock();
  line("from = reach > from ? reach : from;");
  closeBlock();
  // 3. The draw, in token order.
  line("const int64_t chunk = (V + blockDim.x - 1) / blockDim.x;");
  line("const int64_t begin = (int64_t)threadIdx.x * chunk, end = begin + chunk < V ? begin + "
       "chunk : V;");
  line("float mine = 0.0f;");
  line("for (int64_t v = begin; v < end; ++v) { const float x = logit(v); if (kiln_order_key(x) "
       ">= from) mine += weight(x, mx); }");
  line("kiln_mass[threadIdx.x] = mine;");
  line("__syncthreads();");
  openBlock("if (threadIdx.x == 0) {");
  line("float total = 0.0f;");
  line("for (unsigned t = 0; t < blockDim.x; ++t) total += kiln_mass[t];");
  FailureOr<std::string> u = element(root.getUniform(), {"b"});
  if (failed(u))
    return failure();
  line("const float target = (float)" + *u + " * total;");
  line("float running = 0.0f;");
  // Rounding can leave the draw past the last chunk only for a uniform of 1:
  // the argmax, a candidate, then.
  openBlock("for (unsigned t = 0; t < blockDim.x; ++t) {");
  openBlock("if (running + kiln_mass[t] > target) {");
  line("const int64_t first = (int64_t)t * chunk, last = first + chunk < V ? first + chunk : V;");
  line("float local = 0.0f;");
  openBlock("for (int64_t v = first; v < last; ++v) {");
  line("const float x = logit(v);");
  line("if (kiln_order_key(x) < from) continue;");
  line("local += weight(x, mx);");
  line("chosen = v;");
  line("if (running + local > target) break;");
  closeBlock();
  line("break;");
  closeBlock();
  line("running += kiln_mass[t];");
  closeBlock();
  closeBlock(); // thread 0
  line("__syncthreads();");
  closeBlock(); // finite
  closeBlock(); // sampling
  line("if (threadIdx.x == 0) out[b] = chosen;");
  closeBlock(); // sequences
  return success();
}

} // namespace kiln::codegen
