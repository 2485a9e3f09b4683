//===- Generate.cpp - the token generation loop of kiln_generate ---------===//
//
// One model does both phases: the prefill is a call with pasts of length 0,
// each decode step a call with one token and the last call's presents as its
// pasts. Position ids follow the attention mask as Hugging Face computes them
// (cumsum(mask) - 1, 1 where the mask is 0), so left-padded batches generate
// what each sequence would alone. The next token is chosen on the host from
// the last position's logits: argmax (the first of equal values), or
// sampling with temperature, top-k and top-p from a seeded generator.
//
// What this loop does not do yet (issue 34): the cache is copied through the
// host every step (presents out, pasts in), not kept in place on the device;
// sampling runs on the host; each step is its own call (no CUDA graph).
//
//===----------------------------------------------------------------------===//

#include "Generate.h"

#include "kiln/reference/Tensor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace kiln::rt {

namespace {

absl::Status lastError(const char *what) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", kiln_last_error()));
}

/// One input or output of the model and its bytes.
struct Slot {
  kiln_tensor_t tensor{};
  std::vector<uint8_t> bytes;
};

/// The model's inputs by role: the token ids, the mask and positions when it
/// takes them, and the cache pairs by layer.
struct DecoderInterface {
  size_t numInputs = 0, numOutputs = 0;
  int ids = -1, mask = -1, positions = -1, logits = -1;
  /// Per cache tensor: its past input and its present output.
  std::vector<std::pair<size_t, size_t>> caches;
  std::vector<kiln_tensor_info_t> inputs;
};

absl::StatusOr<DecoderInterface> describeDecoder(const kiln_model_t *model) {
  DecoderInterface d;
  if (kiln_model_num_inputs(model, &d.numInputs) != KILN_OK ||
      kiln_model_num_outputs(model, &d.numOutputs) != KILN_OK)
    return lastError("generate");
  std::map<std::string, size_t> presents;
  for (size_t i = 0; i < d.numOutputs; ++i) {
    kiln_tensor_info_t info;
    if (kiln_model_output_info(model, i, &info) != KILN_OK)
      return lastError("generate");
    std::string name = info.name;
    if (name == "logits")
      d.logits = static_cast<int>(i);
    else if (name.rfind("present", 0) == 0)
      presents[name] = i;
  }
  for (size_t i = 0; i < d.numInputs; ++i) {
    kiln_tensor_info_t info;
    if (kiln_model_input_info(model, i, &info) != KILN_OK)
      return lastError("generate");
    d.inputs.push_back(info);
    std::string name = info.name;
    if (name == "input_ids") {
      d.ids = static_cast<int>(i);
    } else if (name == "attention_mask") {
      d.mask = static_cast<int>(i);
    } else if (name == "position_ids") {
      d.positions = static_cast<int>(i);
    } else if (name.rfind("past_key_values.", 0) == 0) {
      // past_key_values.N.key -> present.N.key
      std::string present = "present." + name.substr(std::strlen("past_key_values."));
      auto it = presents.find(present);
      if (it == presents.end())
        return absl::InvalidArgumentError(absl::StrCat(
            "generate: the model's input '", name, "' has no output '", present, "'"));
      if (info.rank != 4 || info.dims[1] < 0 || info.dims[3] < 0)
        return absl::InvalidArgumentError(absl::StrCat(
            "generate: '", name, "' must be (batch, heads, length, head size) with fixed heads "
            "and head size"));
      d.caches.push_back({i, it->second});
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "generate: the model's input '", name,
          "' is none of input_ids, attention_mask, position_ids, past_key_values.N.key|value"));
    }
  }
  if (d.ids < 0 || d.logits < 0)
    return absl::InvalidArgumentError(
        "generate: the model must take 'input_ids' and give 'logits'");
  if (d.caches.empty())
    return absl::InvalidArgumentError(
        "generate: the model has no past_key_values.N.key|value inputs (a decoder exported "
        "with its KV cache)");
  if (d.inputs[d.ids].dtype != KILN_I64)
    return absl::InvalidArgumentError("generate: 'input_ids' must be int64");
  return d;
}

void setI64(Slot &slot, std::vector<int64_t> values, int64_t rows, int64_t cols) {
  slot.bytes.resize(values.size() * sizeof(int64_t));
  std::memcpy(slot.bytes.data(), values.data(), slot.bytes.size());
  slot.tensor.dtype = KILN_I64;
  slot.tensor.rank = 2;
  slot.tensor.dims[0] = rows;
  slot.tensor.dims[1] = cols;
  slot.tensor.data = slot.bytes.data();
  slot.tensor.size_bytes = slot.bytes.size();
}

/// The next token of one sequence from its logits.
class TokenChooser {
public:
  explicit TokenChooser(const kiln_generate_options_t &o) : options(o), random(o.seed) {}

  /// The token, or -1 when the logits are unusable (NaN, or no finite choice).
  int64_t choose(const std::vector<double> &logits) {
    if (std::any_of(logits.begin(), logits.end(), [](double l) { return std::isnan(l); }))
      return -1;
    if (options.temperature <= 0.0f) // greedy: the first of the largest
      return std::max_element(logits.begin(), logits.end()) - logits.begin();
    std::vector<size_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return logits[a] > logits[b]; });
    size_t keep = order.size();
    if (options.top_k > 0)
      keep = std::min(keep, static_cast<size_t>(options.top_k));
    std::vector<double> weights(keep);
    double top = logits[order[0]], total = 0;
    if (!std::isfinite(top))
      return -1; // every logit -inf, or an infinite one: no distribution
    for (size_t i = 0; i < keep; ++i)
      total += weights[i] = std::exp((logits[order[i]] - top) / options.temperature);
    if (options.top_p < 1.0f) {
      // The smallest prefix whose probability reaches top_p (top_p 0: the
      // likeliest token alone).
      double covered = 0;
      if (options.top_p <= 0.0f)
        keep = 1;
      for (size_t i = 0; i < keep && options.top_p > 0.0f; ++i) {
        covered += weights[i] / total;
        if (covered >= options.top_p) {
          keep = i + 1;
          break;
        }
      }
      weights.resize(keep);
    }
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    return static_cast<int64_t>(order[pick(random)]);
  }

private:
  const kiln_generate_options_t &options;
  std::mt19937_64 random;
};

} // namespace

absl::Status generateTokens(const kiln_model_t *model, const int64_t *inputIds,
                            const int64_t *attentionMask, size_t batch, size_t promptLength,
                            const kiln_generate_options_t &options, int64_t *outTokens,
                            size_t *outSteps) {
  if (batch == 0 || promptLength == 0)
    return absl::InvalidArgumentError("generate: the prompt must have a batch and a length");
  if (!model || !inputIds || (!outTokens && options.max_new_tokens > 0))
    return absl::InvalidArgumentError("generate: model, input_ids and out_tokens are required");
  if (options.max_new_tokens < 0 || options.top_k < 0 || !std::isfinite(options.temperature) ||
      options.temperature < 0.0f || !(options.top_p >= 0.0f && options.top_p <= 1.0f))
    return absl::InvalidArgumentError(
        "generate: max_new_tokens and top_k must be >= 0, temperature >= 0, top_p in [0, 1]");
  if (options.num_stop_tokens > 0 && !options.stop_tokens)
    return absl::InvalidArgumentError("generate: num_stop_tokens is set but stop_tokens is NULL");
  auto decoder = describeDecoder(model);
  if (!decoder.ok())
    return decoder.status();
  const DecoderInterface &d = *decoder;
  int64_t B = static_cast<int64_t>(batch);
  std::vector<int64_t> mask = attentionMask
                                  ? std::vector<int64_t>(attentionMask,
                                                         attentionMask + batch * promptLength)
                                  : std::vector<int64_t>(batch * promptLength, 1);
  for (int64_t m : mask)
    if (m != 0 && m != 1)
      return absl::InvalidArgumentError("generate: attention_mask must hold 0s and 1s");
  // Padding goes on the left: each step reads the last position's logits.
  for (size_t b = 0; b < batch; ++b)
    for (size_t j = 1; j < promptLength; ++j)
      if (mask[b * promptLength + j - 1] == 1 && mask[b * promptLength + j] == 0)
        return absl::InvalidArgumentError(absl::StrCat(
            "generate: attention_mask row ", b,
            " is padded on the right (a 0 after a 1); pad prompts on the left"));
  if (d.mask < 0 && std::find(mask.begin(), mask.end(), 0) != mask.end())
    return absl::InvalidArgumentError(
        "generate: the model takes no attention_mask, so prompts cannot be padded");
  std::vector<int64_t> ids(inputIds, inputIds + batch * promptLength);
  int64_t maskLength = static_cast<int64_t>(promptLength), step = static_cast<int64_t>(promptLength);
  // Hugging Face's positions: over the prompt cumsum(mask) - 1, and 1 where
  // the mask is 0; each new token is its sequence's next position.
  std::vector<int64_t> positions(batch * promptLength), tokensSeen(batch, 0);
  for (size_t b = 0; b < batch; ++b)
    for (size_t j = 0; j < promptLength; ++j) {
      size_t at = b * promptLength + j;
      tokensSeen[b] += mask[at];
      positions[at] = mask[at] ? tokensSeen[b] - 1 : 1;
    }

  std::vector<Slot> inputs(d.numInputs), outputs(d.numOutputs);
  for (auto [past, present] : d.caches) { // empty pasts: the prefill
    const kiln_tensor_info_t &info = d.inputs[past];
    Slot &slot = inputs[past];
    slot.tensor.dtype = info.dtype;
    slot.tensor.rank = 4;
    slot.tensor.dims[0] = B;
    slot.tensor.dims[1] = info.dims[1];
    slot.tensor.dims[2] = 0;
    slot.tensor.dims[3] = info.dims[3];
    slot.tensor.data = slot.bytes.data();
  }
  TokenChooser chooser(options);
  std::vector<bool> finished(batch, false);
  int64_t padToken = options.num_stop_tokens ? options.stop_tokens[0] : 0;
  size_t steps = 0;
  for (int32_t n = 0; n < options.max_new_tokens; ++n) {
    setI64(inputs[d.ids], ids, B, step);
    if (d.mask >= 0)
      setI64(inputs[d.mask], mask, B, maskLength);
    if (d.positions >= 0)
      setI64(inputs[d.positions], positions, B, step);
    std::vector<kiln_tensor_t> in, out(d.numOutputs);
    for (Slot &s : inputs)
      in.push_back(s.tensor);
    if (kiln_model_output_shapes(model, in.data(), in.size(), out.data(), out.size()) != KILN_OK)
      return lastError(n == 0 ? "generate: prefill" : "generate: decode step");
    for (size_t i = 0; i < d.numOutputs; ++i) {
      outputs[i].bytes.resize(std::max<size_t>(out[i].size_bytes, 1));
      out[i].data = outputs[i].bytes.data();
      outputs[i].tensor = out[i];
    }
    if (kiln_model_run(model, in.data(), in.size(), out.data(), out.size(), nullptr) != KILN_OK)
      return lastError(n == 0 ? "generate: prefill" : "generate: decode step");
    const kiln_tensor_t &logits = out[d.logits];
    if (logits.rank != 3 || logits.dims[0] != B || logits.dims[1] != step || logits.dims[2] < 1)
      return absl::InvalidArgumentError(absl::StrFormat(
          "generate: logits must be (batch %d, sequence %d, vocabulary)", B, step));
    int64_t vocab = logits.dims[2];
    ref::Tensor view = ref::Tensor::view(static_cast<ref::DType>(logits.dtype),
                                         {B, step, vocab}, static_cast<uint8_t *>(logits.data));
    std::vector<int64_t> chosen(batch);
    for (int64_t b = 0; b < B; ++b) {
      if (finished[b]) {
        chosen[b] = padToken;
        continue;
      }
      std::vector<double> row(vocab);
      for (int64_t v = 0; v < vocab; ++v)
        row[v] = view.getF((b * step + step - 1) * vocab + v);
      chosen[b] = chooser.choose(row);
      if (chosen[b] < 0)
        return absl::InvalidArgumentError(absl::StrFormat(
            "generate: step %d: sequence %d's logits are NaN or leave nothing to choose", n, b));
      for (size_t s = 0; s < options.num_stop_tokens; ++s)
        finished[b] = finished[b] || chosen[b] == options.stop_tokens[s];
    }
    for (int64_t b = 0; b < B; ++b)
      outTokens[b * options.max_new_tokens + n] = chosen[b];
    ++steps;
    if (options.on_tokens && options.on_tokens(options.user, n, chosen.data(), batch) != 0)
      break;
    if (std::all_of(finished.begin(), finished.end(), [](bool f) { return f; }))
      break;
    // The next step: one token each, the presents as pasts, the mask a column longer.
    ids = chosen;
    positions.assign(tokensSeen.begin(), tokensSeen.end());
    for (int64_t &seen : tokensSeen)
      ++seen;
    std::vector<int64_t> longer(batch * (maskLength + 1));
    for (int64_t b = 0; b < B; ++b) {
      std::copy_n(&mask[b * maskLength], maskLength, &longer[b * (maskLength + 1)]);
      longer[b * (maskLength + 1) + maskLength] = 1;
    }
    mask = std::move(longer);
    ++maskLength;
    step = 1;
    for (auto [past, present] : d.caches) {
      inputs[past].bytes = std::move(outputs[present].bytes);
      inputs[past].tensor = out[present];
      inputs[past].tensor.data = inputs[past].bytes.data();
    }
  }
  // Sequences that stopped, and steps not run, hold the pad token.
  for (int64_t b = 0; b < B; ++b)
    for (int32_t n = static_cast<int32_t>(steps); n < options.max_new_tokens; ++n)
      outTokens[b * options.max_new_tokens + n] = padToken;
  if (outSteps)
    *outSteps = steps;
  return absl::OkStatus();
}

} // namespace kiln::rt
