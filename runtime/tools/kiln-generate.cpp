//===- kiln-generate.cpp - generates tokens with a decoder and its KV cache ===//
//
//   kiln-generate MODEL --input-ids IDS.npy [--attention-mask MASK.npy]
//                 --max-new-tokens N [--stop-token ID]... [--temperature T]
//                 [--top-k K] [--top-p P] [--seed S]
//                 [--backend auto|cuda|host] [--device N] [--cache-dir DIR]
//                 [--kv-cache-in-place] [--sample-on-device] [--output OUT.npy]
//                 [--stream] [--bench]
//
// kiln_generate (runtime.h) from the command line: MODEL is a decoder exported
// with its KV cache (past_key_values.N.key|value in, present.N.key|value out),
// compiled (.kiln, .so) or .onnx / kiln .mlir (compiled first by the
// kiln-compile beside this tool). IDS is int64 [batch, prompt length], MASK
// the same shape (1 for tokens, 0 for left padding). Prints each sequence's
// new tokens (one line per sequence), with --stream each step's tokens as
// they come, and writes OUT as int64 [batch, N]; --bench times each step
// (time to the first token, then per decode step). Token ids in and out:
// tokenizers stay outside kiln. Every problem is one line on stderr and exit
// code 1.
//
//===----------------------------------------------------------------------===//

#include "TensorFiles.h"
#include "ToolSupport.h"
#include "kiln/runtime.h"

#include "absl/strings/numbers.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-generate: error: %s\n", message.c_str());
  return 1;
}

const char *const kUsage =
    "USAGE: kiln-generate MODEL --input-ids IDS.npy --max-new-tokens N [options]\n"
    "  MODEL                  a decoder with its KV cache: compiled (.kiln, .so), or .onnx /\n"
    "                         kiln .mlir (compiled first by the kiln-compile beside this tool)\n"
    "  --input-ids FILE       int64 [batch, prompt length] (.npy or .pb)\n"
    "  --attention-mask FILE  int64, the ids' shape: 1 for tokens, 0 for (left) padding\n"
    "                         (either side for a model without position_ids)\n"
    "  --max-new-tokens N     at most N new tokens per sequence\n"
    "  --stop-token ID        a sequence ends when it makes ID (repeatable)\n"
    "  --temperature T        0 (default): greedy; else sample at temperature T\n"
    "  --top-k K, --top-p P   sample among the K likeliest / the likeliest covering P\n"
    "  --seed S               the sampler's seed (default 0)\n"
    "  --backend B            auto (default), cuda or host\n"
    "  --device N             the CUDA device\n"
    "  --cache-dir DIR        kernel cache when compiling an .onnx model\n"
    "  --kv-cache-in-place    compile an .onnx model with kiln-compile --kv-cache-in-place\n"
    "                         (the caches kept in place: each step writes its new rows)\n"
    "  --sample-on-device     compile an .onnx model with kiln-compile --sample-on-device\n"
    "                         (the model chooses the tokens: only they come back)\n"
    "  --output FILE          write the new tokens as int64 [batch, N] .npy\n"
    "  --stream               print each step's tokens as they come\n"
    "  --bench                time the prefill (first token) and each decode step\n";

struct Options {
  std::string model, ids, mask, output, backend = "auto", cacheDir;
  int64_t maxNew = -1, topK = 0, device = 0;
  uint64_t seed = 0;
  float temperature = 0, topP = 1;
  std::vector<int64_t> stops;
  bool stream = false, bench = false, inPlace = false, sampleOnDevice = false;
};

int parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    auto integer = [&](int64_t &out) { return value(v) && absl::SimpleAtoi(v, &out); };
    auto real = [&](float &out) { return value(v) && absl::SimpleAtof(v, &out); };
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return -1;
    }
    bool ok = true;
    if (flag == "--input-ids")
      ok = value(o.ids);
    else if (flag == "--attention-mask")
      ok = value(o.mask);
    else if (flag == "--output")
      ok = value(o.output);
    else if (flag == "--backend")
      ok = value(o.backend);
    else if (flag == "--cache-dir")
      ok = value(o.cacheDir);
    else if (flag == "--max-new-tokens")
      ok = integer(o.maxNew) && o.maxNew >= 0 && o.maxNew <= (1 << 20);
    else if (flag == "--top-k")
      ok = integer(o.topK) && o.topK >= 0 && o.topK <= INT32_MAX;
    else if (flag == "--device")
      ok = integer(o.device) && o.device >= 0 && o.device <= INT32_MAX;
    else if (flag == "--seed")
      ok = value(v) && absl::SimpleAtoi(v, &o.seed);
    else if (flag == "--temperature")
      ok = real(o.temperature);
    else if (flag == "--top-p")
      ok = real(o.topP);
    else if (flag == "--stop-token") {
      int64_t id;
      ok = integer(id);
      o.stops.push_back(id);
    } else if (flag == "--stream")
      o.stream = true;
    else if (flag == "--bench")
      o.bench = true;
    else if (flag == "--kv-cache-in-place")
      o.inPlace = true;
    else if (flag == "--sample-on-device")
      o.sampleOnDevice = true;
    else if (!flag.empty() && flag[0] == '-')
      return fail("unknown option " + flag + " (--help lists them)");
    else if (o.model.empty())
      o.model = flag;
    else
      return fail("one model only: " + o.model + " and " + flag);
    if (!ok)
      return fail(flag + " needs a value in range" + (v.empty() ? "" : " ('" + v + "')"));
  }
  if (o.model.empty() || o.ids.empty() || o.maxNew < 0)
    return fail("MODEL, --input-ids and --max-new-tokens are required (--help)");
  return 0;
}

/// An int64 [batch, length] tensor from FILE, or an error naming it.
int readIds(const std::string &file, const char *what, kiln::ref::Tensor &out) {
  absl::StatusOr<kiln::NamedTensor> t = kiln::readTensorFile(file);
  if (!t.ok())
    return fail(std::string(t.status().message()));
  if (t->tensor.dtype() != kiln::ref::DType::i64 || t->tensor.rank() != 2 ||
      t->tensor.dim(0) < 1 || t->tensor.dim(1) < 1)
    return fail(file + ": " + what + " must be int64 [batch, length] with both at least 1");
  out = std::move(t->tensor);
  return 0;
}

/// What the per-step callback needs: whether to print, and each step's end.
struct StepLog {
  bool print = false;
  std::vector<std::chrono::steady_clock::time_point> ends;
};

int onStep(void *user, size_t step, const int64_t *tokens, size_t batch) {
  auto *log = static_cast<StepLog *>(user);
  log->ends.push_back(std::chrono::steady_clock::now());
  if (!log->print)
    return 0;
  std::printf("step %zu:", step);
  for (size_t b = 0; b < batch; ++b)
    std::printf(" %lld", static_cast<long long>(tokens[b]));
  std::printf("\n");
  std::fflush(stdout);
  return 0;
}

/// --bench's lines: the prefill's time (to the first token) and the decode
/// steps' mean and median, with tokens per second over all sequences.
void printBench(const StepLog &log, std::chrono::steady_clock::time_point start, size_t batch) {
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  if (log.ends.empty())
    return;
  std::printf("time to first token: %.3f ms\n", ms(start, log.ends[0]));
  std::vector<double> steps;
  for (size_t i = 1; i < log.ends.size(); ++i)
    steps.push_back(ms(log.ends[i - 1], log.ends[i]));
  if (steps.empty())
    return;
  double total = 0;
  for (double s : steps)
    total += s;
  std::sort(steps.begin(), steps.end());
  double mean = total / steps.size();
  std::printf("decode steps: %zu, mean %.3f ms, median %.3f ms per step; %.1f tokens/s "
              "(batch %zu)\n",
              steps.size(), mean, steps[steps.size() / 2], 1000.0 * batch / mean, batch);
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (int rc = parse(argc, argv, o))
    return rc < 0 ? 0 : rc;
  std::map<std::string, kiln_backend_t> backends = {
      {"auto", KILN_BACKEND_AUTO}, {"cuda", KILN_BACKEND_CUDA}, {"host", KILN_BACKEND_HOST}};
  if (!backends.count(o.backend))
    return fail("backend '" + o.backend + "' is not one of auto, cuda, host");
  if (!(o.temperature >= 0) || !(o.topP >= 0 && o.topP <= 1))
    return fail("--temperature must be >= 0 and --top-p in [0, 1]");
  kiln::ref::Tensor ids, mask;
  if (int rc = readIds(o.ids, "input ids", ids))
    return rc;
  if (!o.mask.empty()) {
    if (int rc = readIds(o.mask, "the attention mask", mask))
      return rc;
    if (mask.shape() != ids.shape())
      return fail(o.mask + ": the attention mask must have the input ids' shape");
  }

  int devices = 0;
  bool cuda = o.backend == "cuda" ||
              (o.backend == "auto" && kiln_cuda_device_count(&devices) == KILN_OK && devices > 0);
  std::vector<std::string> compileArgs;
  if (!o.cacheDir.empty())
    compileArgs = {"--cache-dir", o.cacheDir};
  if (o.inPlace)
    compileArgs.push_back("--kv-cache-in-place");
  if (o.sampleOnDevice)
    compileArgs.push_back("--sample-on-device");
  kiln::tools::LoadableModel artifact;
  if (!kiln::tools::prepareModel("kiln-generate", o.model, cuda, compileArgs, artifact))
    return 1;
  kiln_model_t *model = nullptr;
  kiln_load_options_t loadOptions = KILN_LOAD_OPTIONS_INIT;
  loadOptions.backend = backends[o.backend];
  loadOptions.device = static_cast<int32_t>(o.device);
  if (kiln_model_load_file_with(artifact.path.c_str(), &loadOptions, &model) != KILN_OK)
    return fail(kiln_last_error());
  struct Destroy {
    kiln_model_t *model;
    ~Destroy() { kiln_model_destroy(model); }
  } destroy{model};

  size_t batch = static_cast<size_t>(ids.dim(0)), length = static_cast<size_t>(ids.dim(1));
  kiln_generate_options_t options = KILN_GENERATE_OPTIONS_INIT;
  options.max_new_tokens = static_cast<int32_t>(o.maxNew);
  options.stop_tokens = o.stops.data();
  options.num_stop_tokens = o.stops.size();
  options.temperature = o.temperature;
  options.top_k = static_cast<int32_t>(o.topK);
  options.top_p = o.topP;
  options.seed = o.seed;
  StepLog log;
  log.print = o.stream;
  if (o.stream || o.bench) {
    options.on_tokens = onStep;
    options.user = &log;
  }
  // [batch, N] int64, refused before anything is allocated when it is absurd.
  if (static_cast<uint64_t>(ids.dim(0)) * static_cast<uint64_t>(o.maxNew) > (uint64_t(1) << 30))
    return fail("batch * --max-new-tokens is over 2^30 tokens");
  kiln::ref::Tensor tokens(kiln::ref::DType::i64, {ids.dim(0), o.maxNew});
  int64_t none = 0; // a pointer for an empty output (N = 0)
  size_t steps = 0;
  auto start = std::chrono::steady_clock::now();
  if (kiln_generate(model, reinterpret_cast<const int64_t *>(ids.bytes()),
                    o.mask.empty() ? nullptr : reinterpret_cast<const int64_t *>(mask.bytes()),
                    batch, length, &options,
                    o.maxNew ? reinterpret_cast<int64_t *>(tokens.bytes()) : &none,
                    &steps) != KILN_OK)
    return fail(kiln_last_error());
  const int64_t *out = reinterpret_cast<const int64_t *>(tokens.bytes());
  for (size_t b = 0; b < batch; ++b) {
    std::printf("sequence %zu:", b);
    for (int64_t n = 0; n < o.maxNew; ++n)
      std::printf(" %lld", static_cast<long long>(out[b * o.maxNew + n]));
    std::printf("\n");
  }
  std::printf("steps: %zu\n", steps);
  if (o.bench) {
    const char *description = "";
    kiln_model_backend_description(model, &description);
    std::printf("backend: %s\n", description);
    printBench(log, start, batch);
  }
  if (!o.output.empty()) {
    absl::Status written = kiln::writeNpy(tokens, o.output);
    if (!written.ok())
      return fail(std::string(written.message()));
  }
  return 0;
}
