//===- Generate.cpp - the token generation loop of kiln_generate ---------===//
//
// One model does both phases: the prefill is a call with pasts of length 0,
// each decode step a call with one token. Position ids follow the attention
// mask as Hugging Face computes them (cumsum(mask) - 1, 1 where the mask is
// 0), so left-padded batches generate what each sequence would alone. The
// next token is chosen (unless the model chooses it, below) on the host from the last position's logits: argmax
// (the first of equal values), or sampling with temperature, top-k and top-p
// from a seeded generator.
//
// Two forms of model (docs/runtime.md, "Token generation"):
// - as exported, presents = concat(past, new): each step's presents are the
//   next step's pasts, copied through the host (O(context) bytes per token);
// - compiled with --kv-cache-in-place, the pasts are the caches themselves
//   ([batch, heads, cache_capacity, head], presents the same buffers): the
//   loop keeps one buffer per cache for the whole generation (on the device
//   for the CUDA backend), passes it as input and output, and a step moves
//   only its tokens, mask, positions and logits; the model writes the new
//   rows.
// A model with a mask and no position ids (onnxruntime-genai's builder:
// GroupQueryAttention takes each row's first sum(mask) tokens as its own)
// gets the prompts right-aligned, and the prefill's logits are read at each
// row's last token.
// A model compiled with --sample-on-device chooses the tokens itself
// (next_tokens, kiln.sample_tokens): the loop passes each sequence's position
// and a uniform draw from its seeded generator, and copies back the tokens,
// not the logits.
//
//===----------------------------------------------------------------------===//

#include "Generate.h"

#include "kiln/reference/Tensor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
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
  /// Per input: a cache's heads and head size (the present's where the
  /// past's are symbols the model pins, as genai's builder declares them).
  std::vector<std::pair<int64_t, int64_t>> cacheDims;
  /// Compiled with --sample-on-device: the model chooses each sequence's
  /// next token itself (output next_tokens) from these inputs.
  int nextTokens = -1, samplePositions = -1, sampleUniform = -1, sampleTemperature = -1,
      sampleTopK = -1, sampleTopP = -1;
  bool samplesOnDevice() const { return nextTokens >= 0; }
  /// A mask and no position ids: the model places each sequence's tokens
  /// itself, from the mask's row sums (onnxruntime-genai's
  /// GroupQueryAttention), and takes the first of each row as its tokens.
  /// Prompts go to it right-aligned.
  bool rightAligned() const { return mask >= 0 && positions < 0; }
  /// Compiled with --kv-cache-in-place: each past and its present have the
  /// capacity symbol for their length, and are one buffer.
  bool inPlace = false;
};

/// The inputs the loop feeds by name, and where it keeps each one's index;
/// those named sample_* come with --sample-on-device's next_tokens.
constexpr std::pair<const char *, int DecoderInterface::*> kFedInputs[] = {
    {"input_ids", &DecoderInterface::ids},
    {"attention_mask", &DecoderInterface::mask},
    {"position_ids", &DecoderInterface::positions},
    {"sample_positions", &DecoderInterface::samplePositions},
    {"sample_uniform", &DecoderInterface::sampleUniform},
    {"sample_temperature", &DecoderInterface::sampleTemperature},
    {"sample_top_k", &DecoderInterface::sampleTopK},
    {"sample_top_p", &DecoderInterface::sampleTopP},
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
    else if (name == "next_tokens")
      d.nextTokens = static_cast<int>(i);
    else if (name.rfind("present", 0) == 0)
      presents[name] = i;
  }
  for (size_t i = 0; i < d.numInputs; ++i) {
    kiln_tensor_info_t info;
    if (kiln_model_input_info(model, i, &info) != KILN_OK)
      return lastError("generate");
    d.inputs.push_back(info);
    std::string name = info.name;
    auto fed = std::find_if(std::begin(kFedInputs), std::end(kFedInputs),
                            [&](const auto &entry) { return name == entry.first; });
    if (fed != std::end(kFedInputs)) {
      d.*(fed->second) = static_cast<int>(i);
    } else if (name.rfind("past_key_values.", 0) == 0) {
      // past_key_values.N.key -> present.N.key
      std::string present = "present." + name.substr(std::strlen("past_key_values."));
      auto it = presents.find(present);
      if (it == presents.end())
        return absl::InvalidArgumentError(absl::StrCat(
            "generate: the model's input '", name, "' has no output '", present, "'"));
      kiln_tensor_info_t presentInfo;
      if (kiln_model_output_info(model, it->second, &presentInfo) != KILN_OK)
        return lastError("generate");
      auto fixed = [&](int dim) {
        return info.dims[dim] >= 0 ? info.dims[dim]
                                   : presentInfo.rank == 4 ? presentInfo.dims[dim] : -1;
      };
      if (info.rank != 4 || fixed(1) < 0 || fixed(3) < 0)
        return absl::InvalidArgumentError(absl::StrCat(
            "generate: '", name, "' must be (batch, heads, length, head size) with fixed heads "
            "and head size"));
      d.cacheDims.resize(d.numInputs);
      d.cacheDims[i] = {fixed(1), fixed(3)};
      bool inPlace = presentInfo.rank == 4 && presentInfo.dims[2] < 0 && info.dims[2] < 0 &&
                     presentInfo.dim_names[2] && info.dim_names[2] &&
                     std::strcmp(presentInfo.dim_names[2], info.dim_names[2]) == 0;
      if (!d.caches.empty() && inPlace != d.inPlace)
        return absl::InvalidArgumentError(absl::StrCat(
            "generate: '", name, "' is ", inPlace ? "" : "not ",
            "a cache updated in place and an earlier one is ", d.inPlace ? "" : "not"));
      d.inPlace = inPlace;
      d.caches.push_back({i, it->second});
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "generate: the model's input '", name,
          "' is none of input_ids, attention_mask, position_ids, past_key_values.N.key|value "
          "and sample_* (kiln-compile --sample-on-device)"));
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
  bool someSampling = false, allSampling = true;
  for (const auto &[name, index] : kFedInputs)
    if (std::strncmp(name, "sample_", 7) == 0) {
      someSampling = someSampling || d.*index >= 0;
      allSampling = allSampling && d.*index >= 0;
    }
  if ((d.nextTokens >= 0 || someSampling) && !(d.nextTokens >= 0 && allSampling))
    return absl::InvalidArgumentError(
        "generate: a model that chooses its tokens (kiln-compile --sample-on-device) returns "
        "'next_tokens' and takes sample_positions, sample_uniform, sample_temperature, "
        "sample_top_k and sample_top_p; this one has only some of them");
  return d;
}

/// `slot` as a tensor of `dtype` and `dims` holding `bytes` bytes of `data`.
void setSlot(Slot &slot, kiln_dtype_t dtype, int32_t rank, const int64_t *dims,
             const void *data, size_t bytes) {
  slot.bytes.resize(bytes);
  if (bytes)
    std::memcpy(slot.bytes.data(), data, bytes);
  slot.tensor.dtype = dtype;
  slot.tensor.rank = rank;
  std::copy(dims, dims + rank, slot.tensor.dims);
  slot.tensor.data = slot.bytes.data();
  slot.tensor.size_bytes = bytes;
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

/// One step's inputs: `step` tokens per sequence, the mask `maskLength`
/// long; for a model that samples on the device, each sequence's position to
/// choose from and its uniform draw.
struct StepInputs {
  const std::vector<int64_t> &ids, &mask, &positions;
  int64_t step, maskLength;
  const std::vector<int64_t> &samplePositions;
  const std::vector<float> &uniform;
  float temperature, topP;
  int64_t topK;
};

/// What a step gives to choose from: the logits [batch, step, vocabulary] on
/// the host, or the tokens the model chose (--sample-on-device).
struct StepOutput {
  std::optional<ref::Tensor> logits;
  std::vector<int64_t> tokens;
};

/// Runs one step of the model; the two forms of model differ in where the
/// cache lives.
class StepRunner {
public:
  virtual ~StepRunner() = default;
  virtual absl::StatusOr<StepOutput> run(const StepInputs &in) = 0;
  /// After a step whose tokens go on: the presents become the pasts.
  virtual void advance() = 0;

protected:
  /// The logits output checked against the step, as a host tensor over `bytes`.
  static absl::StatusOr<ref::Tensor> logitsView(const kiln_tensor_t &logits, int64_t batch,
                                                int64_t step, uint8_t *bytes) {
    if (logits.rank != 3 || logits.dims[0] != batch || logits.dims[1] != step ||
        logits.dims[2] < 1)
      return absl::InvalidArgumentError(absl::StrFormat(
          "logits must be (batch %d, sequence %d, vocabulary)", batch, step));
    return ref::Tensor::view(static_cast<ref::DType>(logits.dtype),
                             {batch, step, logits.dims[2]}, bytes);
  }
  /// The chosen tokens output checked against the batch.
  static absl::StatusOr<std::vector<int64_t>> tokensOf(const kiln_tensor_t &tokens,
                                                       int64_t batch, const void *bytes) {
    if (tokens.dtype != KILN_I64 || tokens.rank != 1 || tokens.dims[0] != batch)
      return absl::InvalidArgumentError(
          absl::StrFormat("next_tokens must be int64 (batch %d)", batch));
    std::vector<int64_t> out(batch);
    std::memcpy(out.data(), bytes, batch * sizeof(int64_t));
    return out;
  }
  /// Each of a step's inputs as the model takes it: input index, dtype,
  /// dims and bytes (the sampling inputs only for a model that samples).
  struct Feed {
    int input;
    kiln_dtype_t dtype;
    int32_t rank;
    std::array<int64_t, 2> dims;
    const void *data;
    size_t bytes;
  };
  static std::vector<Feed> feeds(const DecoderInterface &d, const StepInputs &in,
                                 int64_t batch) {
    std::vector<Feed> f = {{d.ids, KILN_I64, 2, {batch, in.step}, in.ids.data(),
                            in.ids.size() * sizeof(int64_t)}};
    if (d.mask >= 0)
      f.push_back({d.mask, KILN_I64, 2, {batch, in.maskLength}, in.mask.data(),
                   in.mask.size() * sizeof(int64_t)});
    if (d.positions >= 0)
      f.push_back({d.positions, KILN_I64, 2, {batch, in.step}, in.positions.data(),
                   in.positions.size() * sizeof(int64_t)});
    if (d.samplesOnDevice()) {
      f.push_back({d.samplePositions, KILN_I64, 1, {batch, 0}, in.samplePositions.data(),
                   in.samplePositions.size() * sizeof(int64_t)});
      f.push_back({d.sampleUniform, KILN_F32, 1, {batch, 0}, in.uniform.data(),
                   in.uniform.size() * sizeof(float)});
      f.push_back({d.sampleTemperature, KILN_F32, 0, {}, &in.temperature, sizeof(float)});
      f.push_back({d.sampleTopK, KILN_I64, 0, {}, &in.topK, sizeof(int64_t)});
      f.push_back({d.sampleTopP, KILN_F32, 0, {}, &in.topP, sizeof(float)});
    }
    return f;
  }
};

/// The model as exported: pasts in, presents out, through the host; the
/// presents of one step are the pasts of the next.
class CopyRunner : public StepRunner {
public:
  CopyRunner(const kiln_model_t *model, const DecoderInterface &d, int64_t batch)
      : model(model), d(d), batch(batch), inputs(d.numInputs), outputs(d.numOutputs) {
    for (auto [past, present] : d.caches) { // empty pasts: the prefill
      const kiln_tensor_info_t &info = d.inputs[past];
      auto [heads, headSize] = d.cacheDims[past];
      const int64_t dims[] = {batch, heads, 0, headSize};
      setSlot(inputs[past], info.dtype, 4, dims, nullptr, 0);
    }
  }

  absl::StatusOr<StepOutput> run(const StepInputs &step) override {
    for (const Feed &f : feeds(d, step, batch))
      setSlot(inputs[f.input], f.dtype, f.rank, f.dims.data(), f.data, f.bytes);
    std::vector<kiln_tensor_t> in;
    out.assign(d.numOutputs, kiln_tensor_t{});
    for (Slot &s : inputs)
      in.push_back(s.tensor);
    if (kiln_model_output_shapes(model, in.data(), in.size(), out.data(), out.size()) != KILN_OK)
      return absl::InvalidArgumentError(kiln_last_error());
    for (size_t i = 0; i < d.numOutputs; ++i) {
      outputs[i].bytes.resize(std::max<size_t>(out[i].size_bytes, 1));
      out[i].data = outputs[i].bytes.data();
      outputs[i].tensor = out[i];
    }
    if (kiln_model_run(model, in.data(), in.size(), out.data(), out.size(), nullptr) != KILN_OK)
      return absl::InvalidArgumentError(kiln_last_error());
    StepOutput result;
    if (d.samplesOnDevice()) {
      absl::StatusOr<std::vector<int64_t>> tokens =
          tokensOf(out[d.nextTokens], batch, outputs[d.nextTokens].bytes.data());
      if (!tokens.ok())
        return tokens.status();
      result.tokens = std::move(*tokens);
      return result;
    }
    absl::StatusOr<ref::Tensor> logits =
        logitsView(out[d.logits], batch, step.step, outputs[d.logits].bytes.data());
    if (!logits.ok())
      return logits.status();
    result.logits = std::move(*logits);
    return result;
  }

  void advance() override {
    for (auto [past, present] : d.caches) {
      inputs[past].bytes = std::move(outputs[present].bytes);
      inputs[past].tensor = out[present];
      inputs[past].tensor.data = inputs[past].bytes.data();
    }
  }

private:
  const kiln_model_t *model;
  const DecoderInterface &d;
  int64_t batch;
  std::vector<Slot> inputs, outputs;
  std::vector<kiln_tensor_t> out;
};

/// The model compiled with --kv-cache-in-place: one buffer per cache, at the
/// generation's whole length, for every step, passed as the past input and
/// the present output; the model writes each step's new rows into it. On the
/// CUDA backend every buffer is device memory (the step's ids, mask and
/// positions go up, its logits, or the chosen tokens, come back); on the host
/// backend host memory. Every buffer keeps its address from step to step, as
/// a replayed CUDA graph needs.
class InPlaceRunner : public StepRunner {
public:
  static absl::StatusOr<std::unique_ptr<InPlaceRunner>>
  create(const kiln_model_t *model, const DecoderInterface &d, int64_t batch, int64_t capacity) {
    auto r = std::unique_ptr<InPlaceRunner>(new InPlaceRunner(model, d, batch));
    kiln_backend_t backend = KILN_BACKEND_HOST;
    if (kiln_model_backend(model, &backend) != KILN_OK)
      return lastError("generate");
    r->device = backend == KILN_BACKEND_CUDA;
    // The mask's buffer at its last step's length, so that it stays where it
    // is while the mask grows (ids and positions are longest at the prefill).
    if (d.mask >= 0) {
      absl::StatusOr<void *> mask = r->allocate(batch * capacity * sizeof(int64_t));
      if (!mask.ok())
        return mask.status();
      r->staged[d.mask] = {*mask, static_cast<size_t>(batch * capacity) * sizeof(int64_t)};
    }
    r->caches.resize(d.numInputs);
    std::vector<uint8_t> zeros;
    for (auto [past, present] : d.caches) {
      const kiln_tensor_info_t &info = d.inputs[past];
      kiln_tensor_t &t = r->caches[past];
      auto [heads, headSize] = d.cacheDims[past];
      t.dtype = info.dtype;
      t.rank = 4;
      t.dims[0] = batch;
      t.dims[1] = heads;
      t.dims[2] = capacity;
      t.dims[3] = headSize;
      size_t elements = static_cast<size_t>(batch * heads * capacity * headSize);
      t.size_bytes = elements * ref::info(static_cast<ref::DType>(info.dtype)).bytes;
      // Zeroed (host buffers are; device ones get a copy of zeros): a
      // GroupQueryAttention decoder's attention reads the rows past a
      // shorter sequence's end, which no step writes, with a weight of 0,
      // and 0 times a NaN left in fresh device memory would be NaN.
      absl::StatusOr<void *> buffer = r->allocate(t.size_bytes);
      if (!buffer.ok())
        return buffer.status();
      t.data = *buffer;
      if (r->device) {
        if (zeros.size() < t.size_bytes)
          zeros.assign(t.size_bytes, 0);
        if (kiln_model_copy_to_device(model, t.data, zeros.data(), t.size_bytes) != KILN_OK)
          return lastError("generate: zeroing a cache");
      }
    }
    return r;
  }

  ~InPlaceRunner() override {
    for (void *p : deviceBuffers)
      kiln_model_device_free(model, p);
  }

  absl::StatusOr<StepOutput> run(const StepInputs &step) override {
    std::vector<kiln_tensor_t> in(d.numInputs);
    for (auto [past, present] : d.caches)
      in[past] = caches[past];
    for (const Feed &f : feeds(d, step, batch))
      if (absl::Status s =
              stage(in[f.input], f.input, f.dtype, f.rank, f.dims.data(), f.data, f.bytes);
          !s.ok())
        return s;
    std::vector<kiln_tensor_t> out(d.numOutputs);
    if (kiln_model_output_shapes(model, in.data(), in.size(), out.data(), out.size()) != KILN_OK)
      return absl::InvalidArgumentError(kiln_last_error());
    // The presents are the caches' own buffers: the run writes the new rows
    // there and copies nothing out.
    for (auto [past, present] : d.caches)
      out[present] = caches[past];
    // What comes back: the tokens the model chose, or else the logits. The
    // other outputs (the logits of a model that chooses) stay in buffers of
    // the run's kind, never copied.
    int back = d.samplesOnDevice() ? d.nextTokens : d.logits;
    for (size_t i = 0; i < d.numOutputs; ++i) {
      bool isCache = std::any_of(d.caches.begin(), d.caches.end(),
                                 [&](auto pair) { return pair.second == i; });
      if (isCache)
        continue;
      absl::StatusOr<void *> buffer = outputBuffer(i, out[i].size_bytes);
      if (!buffer.ok())
        return buffer.status();
      out[i].data = *buffer;
    }
    kiln_run_options_t options = KILN_RUN_OPTIONS_INIT;
    options.device_buffers = device ? 1 : 0;
    if (kiln_model_run(model, in.data(), in.size(), out.data(), out.size(), &options) != KILN_OK)
      return absl::InvalidArgumentError(kiln_last_error());
    const kiln_tensor_t &result = out[back];
    std::vector<uint8_t> &host = backHost;
    host.resize(std::max<size_t>(result.size_bytes, 1));
    if (result.size_bytes) {
      if (device) {
        if (kiln_model_copy_to_host(model, host.data(), result.data, result.size_bytes) !=
            KILN_OK)
          return absl::InvalidArgumentError(kiln_last_error());
      } else {
        std::memcpy(host.data(), result.data, result.size_bytes);
      }
    }
    StepOutput output;
    if (d.samplesOnDevice()) {
      absl::StatusOr<std::vector<int64_t>> tokens = tokensOf(result, batch, host.data());
      if (!tokens.ok())
        return tokens.status();
      output.tokens = std::move(*tokens);
      return output;
    }
    absl::StatusOr<ref::Tensor> logits = logitsView(result, batch, step.step, host.data());
    if (!logits.ok())
      return logits.status();
    output.logits = std::move(*logits);
    return output;
  }

  void advance() override {} // the caches already hold the new rows

private:
  InPlaceRunner(const kiln_model_t *model, const DecoderInterface &d, int64_t batch)
      : model(model), d(d), batch(batch) {}

  /// A buffer kept from step to step, and its size.
  struct Staged {
    void *data = nullptr;
    size_t bytes = 0;
  };

  absl::StatusOr<void *> allocate(size_t bytes) {
    if (!device) {
      hostBuffers.emplace_back(std::max<size_t>(bytes, 1));
      return hostBuffers.back().data();
    }
    void *p = nullptr;
    if (kiln_model_device_alloc(model, std::max<size_t>(bytes, 1), &p) != KILN_OK)
      return lastError("generate");
    deviceBuffers.push_back(p);
    return p;
  }

  /// `s`'s buffer of the run's kind, at least `bytes` long: kept from step to
  /// step (a replayed CUDA graph needs its addresses), grown when a step
  /// needs more.
  absl::StatusOr<void *> kept(Staged &s, size_t bytes) {
    if (bytes > s.bytes || !s.data) {
      absl::StatusOr<void *> buffer = allocate(bytes);
      if (!buffer.ok())
        return buffer.status();
      s.data = *buffer;
      s.bytes = bytes;
    }
    return s.data;
  }

  /// Output `output`'s buffer.
  absl::StatusOr<void *> outputBuffer(size_t output, size_t bytes) {
    return kept(outputs[output], bytes);
  }

  absl::Status upload(void *to, const void *from, size_t bytes) {
    if (!bytes)
      return absl::OkStatus();
    if (!device) {
      std::memcpy(to, from, bytes);
      return absl::OkStatus();
    }
    if (kiln_model_copy_to_device(model, to, from, bytes) != KILN_OK)
      return lastError("generate");
    return absl::OkStatus();
  }

  /// Input `input` as `t`, its bytes in a buffer of the run's kind (kept per
  /// input, grown when a step needs more).
  absl::Status stage(kiln_tensor_t &t, int input, kiln_dtype_t dtype,
                     int32_t rank, const int64_t *dims, const void *data, size_t bytes) {
    absl::StatusOr<void *> buffer = kept(staged[input], bytes);
    if (!buffer.ok())
      return buffer.status();
    if (absl::Status st = upload(*buffer, data, bytes); !st.ok())
      return st;
    t.dtype = dtype;
    t.rank = rank;
    std::copy(dims, dims + rank, t.dims);
    t.data = *buffer;
    t.size_bytes = bytes;
    return absl::OkStatus();
  }

  std::map<int, Staged> staged;
  std::map<size_t, Staged> outputs;
  const kiln_model_t *model;
  const DecoderInterface &d;
  int64_t batch;
  bool device = false;
  std::vector<kiln_tensor_t> caches;
  std::vector<void *> deviceBuffers;
  std::list<std::vector<uint8_t>> hostBuffers;
  std::vector<uint8_t> backHost;
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
  if (d.mask < 0 && std::find(mask.begin(), mask.end(), 0) != mask.end())
    return absl::InvalidArgumentError(
        "generate: the model takes no attention_mask, so prompts cannot be padded");
  std::vector<int64_t> ids(inputIds, inputIds + batch * promptLength);
  // Per sequence, where its prompt's last token is in the prefill's logits.
  std::vector<int64_t> lastPosition(batch, static_cast<int64_t>(promptLength) - 1);
  if (d.rightAligned()) {
    // Each row's tokens one run of 1s, padded on either side; moved to the
    // row's start, the padding after them.
    for (size_t b = 0; b < batch; ++b) {
      int64_t *row = &mask[b * promptLength], *tokens = &ids[b * promptLength];
      int64_t first = std::find(row, row + promptLength, 1) - row;
      int64_t end = std::find(row + first, row + promptLength, 0) - row;
      if (std::find(row + end, row + promptLength, 1) != row + promptLength)
        return absl::InvalidArgumentError(absl::StrCat(
            "generate: attention_mask row ", b,
            " has a 0 between its 1s (padding must be at one end)"));
      if (first == end)
        return absl::InvalidArgumentError(
            absl::StrCat("generate: attention_mask row ", b, " has no token"));
      std::rotate(tokens, tokens + first, tokens + end);
      std::fill(row, row + promptLength, 0);
      std::fill(row, row + (end - first), 1);
      lastPosition[b] = end - first - 1;
    }
  } else {
    // Padding goes on the left: each step reads the last position's logits.
    for (size_t b = 0; b < batch; ++b)
      for (size_t j = 1; j < promptLength; ++j)
        if (mask[b * promptLength + j - 1] == 1 && mask[b * promptLength + j] == 0)
          return absl::InvalidArgumentError(absl::StrCat(
              "generate: attention_mask row ", b,
              " is padded on the right (a 0 after a 1); pad prompts on the left"));
  }
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

  std::unique_ptr<StepRunner> runner;
  if (d.inPlace) {
    auto inPlace = InPlaceRunner::create(model, d, B, promptLength + options.max_new_tokens);
    if (!inPlace.ok())
      return inPlace.status();
    runner = std::move(*inPlace);
  } else {
    runner = std::make_unique<CopyRunner>(model, d, B);
  }
  TokenChooser chooser(options);
  std::mt19937_64 random(options.seed);
  std::vector<int64_t> samplePositions(batch);
  std::vector<float> uniform(batch);
  std::vector<bool> finished(batch, false);
  int64_t padToken = options.num_stop_tokens ? options.stop_tokens[0] : 0;
  size_t steps = 0;
  for (int32_t n = 0; n < options.max_new_tokens; ++n) {
    // Which position each sequence chooses from, and (a model that samples
    // on the device) its draw from the seeded generator: the top 24 bits of
    // a 64-bit draw, exactly a float in [0, 1).
    for (int64_t b = 0; b < B; ++b) {
      samplePositions[b] = n == 0 ? lastPosition[b] : step - 1;
      uniform[b] = static_cast<float>(random() >> 40) * 0x1p-24f;
    }
    absl::StatusOr<StepOutput> out =
        runner->run({ids, mask, positions, step, maskLength, samplePositions, uniform,
                     options.temperature, options.top_p, options.top_k});
    if (!out.ok())
      return absl::Status(out.status().code(),
                          absl::StrCat(n == 0 ? "generate: prefill: " : "generate: decode step: ",
                                       out.status().message()));
    std::vector<int64_t> chosen(batch);
    for (int64_t b = 0; b < B; ++b) {
      if (finished[b]) {
        chosen[b] = padToken;
        continue;
      }
      if (out->logits) {
        int64_t vocab = out->logits->dim(2);
        std::vector<double> row(vocab);
        for (int64_t v = 0; v < vocab; ++v)
          row[v] = out->logits->getF((b * step + samplePositions[b]) * vocab + v);
        chosen[b] = chooser.choose(row);
      } else {
        chosen[b] = out->tokens[b];
      }
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
    // The next step: one token each, the mask a column longer.
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
    runner->advance();
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
