//===- SampleTokens.cpp - sample_tokens: the next token of each sequence -===//
//
// The definition kiln.sample_tokens' kernel implements (ReductionOps.td), in
// double: candidates by thresholds on the logits (ties at a threshold all
// stay), then the first candidate in token order whose running weight passes
// the uniform draw.
//===----------------------------------------------------------------------===//

#include "Common.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace kiln::ref {

absl::StatusOr<Tensor> sampleTokens(const Tensor &logits, const Tensor &positions,
                                    const Tensor &uniform, double temperature, int64_t topK,
                                    double topP) {
  if (logits.rank() != 3 || positions.rank() != 1 || uniform.rank() != 1 ||
      positions.dim(0) != logits.dim(0) || uniform.dim(0) != logits.dim(0))
    return absl::InvalidArgumentError(absl::StrCat(
        "sample_tokens: logits ", logits.describe(), " must be [batch, positions, vocabulary] ",
        "and positions ", positions.describe(), " and uniform ", uniform.describe(),
        " one per sequence"));
  const int64_t B = logits.dim(0), S = logits.dim(1), V = logits.dim(2);
  Tensor tokens(DType::i64, {B});
  for (int64_t b = 0; b < B; ++b) {
    int64_t p = positions.getI(b);
    if (p < 0 || p >= S)
      return absl::InvalidArgumentError(absl::StrCat("sample_tokens: sequence ", b,
                                                     "'s position ", p, " is outside [0, ", S,
                                                     ")"));
    std::vector<double> x(V);
    for (int64_t v = 0; v < V; ++v)
      x[v] = logits.getF((b * S + p) * V + v);
    if (V == 0 || std::any_of(x.begin(), x.end(), [](double l) { return std::isnan(l); })) {
      tokens.setI(b, -1);
      continue;
    }
    int64_t argmax = std::max_element(x.begin(), x.end()) - x.begin();
    double mx = x[argmax];
    // NaN options choose greedily, as the kernel's `temperature > 0` tests.
    if (!(temperature > 0) || topK == 1 || !(topP > 0)) {
      tokens.setI(b, argmax);
      continue;
    }
    if (!std::isfinite(mx)) {
      tokens.setI(b, -1);
      continue;
    }
    // Every token at least as likely as the top_k-th likeliest.
    double threshold = -INFINITY;
    std::vector<double> sorted = x;
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    if (topK > 0 && topK < V)
      threshold = sorted[topK - 1];
    auto weight = [&](double l) { return std::exp((l - mx) / temperature); };
    if (topP < 1) {
      // Of those, every token at least as likely as the one whose running
      // weight (likeliest first) reaches top_p of the candidates' total.
      double total = 0, covered = 0;
      for (double l : sorted)
        if (l >= threshold)
          total += weight(l);
      for (double l : sorted) {
        if (l < threshold)
          break;
        covered += weight(l);
        if (covered >= topP * total) {
          threshold = l;
          break;
        }
      }
    }
    double total = 0;
    for (double l : x)
      if (l >= threshold)
        total += weight(l);
    double target = static_cast<double>(uniform.getF(b)) * total, running = 0;
    // A draw past the candidates' total (a uniform of 1 or more) takes the
    // argmax, as the kernel does.
    int64_t chosen = argmax;
    for (int64_t v = 0; v < V; ++v) {
      if (x[v] < threshold)
        continue;
      running += weight(x[v]);
      if (running > target) {
        chosen = v;
        break;
      }
    }
    tokens.setI(b, chosen);
  }
  return tokens;
}

} // namespace kiln::ref
