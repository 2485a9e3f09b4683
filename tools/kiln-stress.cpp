//===- kiln-stress.cpp - many threads, many shapes, one model -------------===//
//
//   kiln-stress MODEL --threads T --iterations N [--dims SYM=V1,V2,...]...
//               [--jit [--cache-dir DIR] [--cache-max-bytes B]] [--backend auto|cuda|host]
//               [--seed S]
//
// What a server engineer runs on their own model before putting it behind
// traffic: T threads, each with its own context, make N calls each on random
// inputs whose symbolic dims take the listed values (every combination is a
// shape; symbols not listed are 1). With --jit the model (.onnx or .mlir) is
// compiled in-process by libkiln_jit, and shapes no variant has compile
// variants in the background while the threads keep calling. Afterwards one
// thread runs every input again, serially, and every concurrent result must
// equal it bit for bit. The last line:
//
//   stress: R runs, M mismatches, E errors, C compiles, K variants, p50 X us, p99 Y us
//
// C counts the JIT's compiles (the model and each variant it built rather than
// found in a cache), K the distinct variants other than the generic code that
// ran. Exit 1 on any mismatch or error.
//
//===----------------------------------------------------------------------===//

#include "kiln/jit.h"
#include "kiln/runtime.hpp"

#include "kiln/artifact/Plan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-stress: error: %s\n", message.c_str());
  return 1;
}

constexpr const char *kUsage =
    "usage: kiln-stress MODEL --threads T --iterations N [--dims SYM=V1,V2,...]... [--jit "
    "[--cache-dir DIR] [--cache-max-bytes B]] [--backend auto|cuda|host] [--seed S]";

struct Options {
  std::string model, cacheDir;
  int threads = 4;
  long iterations = 100;
  bool jit = false;
  kiln_backend_t backend = KILN_BACKEND_AUTO;
  uint64_t seed = 1;
  uint64_t cacheMaxBytes = 0;
  std::map<std::string, std::vector<int64_t>> dims;
};

bool parsePositive(const char *text, long &out) {
  char *end = nullptr;
  out = std::strtol(text, &end, 10);
  return end && !*end && out > 0;
}

int parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char * { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--threads" || a == "--iterations" || a == "--seed" || a == "--cache-max-bytes") {
      const char *v = value();
      long n = 0;
      if (!v || !parsePositive(v, n))
        return fail(a + " needs a positive number");
      if (a == "--threads")
        o.threads = static_cast<int>(std::min<long>(n, 1024));
      else if (a == "--iterations")
        o.iterations = n;
      else if (a == "--cache-max-bytes")
        o.cacheMaxBytes = static_cast<uint64_t>(n);
      else
        o.seed = static_cast<uint64_t>(n);
    } else if (a == "--dims") {
      const char *v = value();
      std::string spec = v ? v : "";
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        return fail("--dims '" + spec + "' is not SYM=V1,V2,...");
      std::vector<int64_t> values;
      for (size_t at = eq + 1; at <= spec.size();) {
        size_t comma = spec.find(',', at);
        std::string item = spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        long n = 0;
        if (!parsePositive(item.c_str(), n))
          return fail("--dims '" + spec + "': '" + item + "' is not a size >= 1");
        values.push_back(n);
        if (comma == std::string::npos)
          break;
        at = comma + 1;
      }
      o.dims[spec.substr(0, eq)] = values;
    } else if (a == "--jit") {
      o.jit = true;
    } else if (a == "--cache-dir") {
      const char *v = value();
      if (!v)
        return fail("--cache-dir needs a folder");
      o.cacheDir = v;
    } else if (a == "--backend") {
      const char *v = value();
      std::string b = v ? v : "";
      if (b == "auto")
        o.backend = KILN_BACKEND_AUTO;
      else if (b == "cuda")
        o.backend = KILN_BACKEND_CUDA;
      else if (b == "host")
        o.backend = KILN_BACKEND_HOST;
      else
        return fail("--backend '" + b + "' is not auto, cuda or host");
    } else if (!a.empty() && a[0] != '-' && o.model.empty()) {
      o.model = a;
    } else {
      return fail(std::string("unknown argument '") + a + "'; " + kUsage);
    }
  }
  if (o.model.empty())
    return fail(kUsage);
  return 0;
}

/// Deterministic inputs for one shape and one seed: floats in [-1, 1), integers
/// in [0, 2) (safe as indices and divisors of any size), booleans.
std::vector<kiln::HostTensor> makeInputs(const std::vector<kiln_tensor_info_t> &infos,
                                         const std::vector<std::vector<int64_t>> &dims,
                                         uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<kiln::HostTensor> inputs;
  for (size_t i = 0; i < infos.size(); ++i) {
    kiln::HostTensor t(infos[i].dtype, dims[i]);
    size_t n = t.numel();
    switch (infos[i].dtype) {
    case KILN_F32:
      for (size_t k = 0; k < n; ++k)
        t.as<float>()[k] = std::uniform_real_distribution<float>(-1, 1)(rng);
      break;
    case KILN_F64:
      for (size_t k = 0; k < n; ++k)
        t.as<double>()[k] = std::uniform_real_distribution<double>(-1, 1)(rng);
      break;
    case KILN_I64:
      for (size_t k = 0; k < n; ++k)
        t.as<int64_t>()[k] = static_cast<int64_t>(rng() % 2);
      break;
    case KILN_I32:
      for (size_t k = 0; k < n; ++k)
        t.as<int32_t>()[k] = static_cast<int32_t>(rng() % 2);
      break;
    default:
      // Other types: random bytes, except booleans (0 or 1).
      for (uint8_t &b : t.data)
        b = static_cast<uint8_t>(infos[i].dtype == KILN_BOOL ? rng() % 2 : rng());
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

uint64_t hashOutputs(const std::vector<kiln::HostTensor> &outputs) {
  uint64_t h = 0;
  for (const kiln::HostTensor &t : outputs) {
    h = kiln::artifact::artifactChecksum(t.data.data(), t.data.size(), t.data.size()) ^
        (h * 0x9e3779b97f4a7c15ull);
    for (int64_t d : t.dims)
      h = h * 31 + static_cast<uint64_t>(d);
  }
  return h;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (int rc = parse(argc, argv, o))
    return rc;

  kiln_jit_t *jit = nullptr;
  kiln::Model model;
  if (o.jit) {
    kiln_jit_options_t options;
    kiln_jit_options_init(&options);
    options.cache_dir = o.cacheDir.empty() ? nullptr : o.cacheDir.c_str();
    options.backend = o.backend;
    options.cache_max_bytes = o.cacheMaxBytes;
    if (kiln_jit_create(&options, &jit) != KILN_OK)
      return fail(kiln_jit_last_error());
    kiln_model_t *handle = nullptr;
    if (kiln_jit_compile_file(jit, o.model.c_str(), &handle) != KILN_OK) {
      std::string error = kiln_jit_last_error();
      kiln_jit_destroy(jit);
      return fail(error);
    }
    model = kiln::Model::borrow(handle);
  } else {
    if (kiln::Status s = kiln::Model::load(o.model, &model, o.backend); !s.ok())
      return fail(s.message() + (o.model.size() > 5 && o.model.substr(o.model.size() - 5) == ".onnx"
                                     ? " (an .onnx model needs --jit)"
                                     : ""));
  }

  // The shapes: every combination of the listed symbol values.
  std::vector<kiln_tensor_info_t> infos;
  for (size_t i = 0; i < model.numInputs(); ++i)
    infos.push_back(model.inputInfo(i));
  std::set<std::string> symbols;
  for (const kiln_tensor_info_t &info : infos)
    for (int d = 0; d < info.rank; ++d)
      if (info.dims[d] < 0) {
        std::string name = info.dim_names[d];
        bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        });
        if (!plain)
          return fail(std::string("input '") + info.name + "' dim " + std::to_string(d) + " is '" +
                      name + "': kiln-stress sets plain symbols only");
        symbols.insert(name);
      }
  for (const auto &[name, values] : o.dims)
    if (!symbols.count(name))
      return fail("--dims names '" + name + "', which no input dim of the model is");
  std::vector<std::map<std::string, int64_t>> combos = {{}};
  for (const std::string &s : symbols) {
    std::vector<int64_t> values = o.dims.count(s) ? o.dims[s] : std::vector<int64_t>{1};
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto &c : combos)
      for (int64_t v : values) {
        auto extended = c;
        extended[s] = v;
        next.push_back(extended);
      }
    combos = std::move(next);
  }
  constexpr int kSeedsPerShape = 3;
  struct Case {
    std::vector<kiln::HostTensor> inputs;
    uint64_t serial = 0; ///< the serial run's output hash
  };
  std::vector<Case> cases;
  for (size_t c = 0; c < combos.size(); ++c) {
    std::vector<std::vector<int64_t>> dims;
    for (const kiln_tensor_info_t &info : infos) {
      std::vector<int64_t> d;
      for (int k = 0; k < info.rank; ++k)
        d.push_back(info.dims[k] >= 0 ? info.dims[k] : combos[c].at(info.dim_names[k]));
      dims.push_back(d);
    }
    for (int s = 0; s < kSeedsPerShape; ++s)
      cases.push_back({makeInputs(infos, dims, o.seed * 1000003 + c * kSeedsPerShape + s), 0});
  }

  // Concurrent phase: every thread its own context, cases in a random order.
  struct Result {
    size_t caseIndex;
    uint64_t hash;
    double us;
  };
  std::vector<std::vector<Result>> results(o.threads);
  std::atomic<long> errors{0};
  std::mutex noteMutex;
  std::string firstError;
  std::set<std::string> variants;
  auto note = [&](const std::string &error, const std::string &variant) {
    std::lock_guard<std::mutex> lock(noteMutex);
    if (!error.empty() && firstError.empty())
      firstError = error;
    if (!variant.empty() && variant != "generic")
      variants.insert(variant);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t)
    threads.emplace_back([&, t] {
      // With the JIT, each thread asks for the model itself (the same handle,
      // counted once more) and gives its handle back when done, while the
      // others run and specializations compile.
      kiln_model_t *own = nullptr;
      if (jit && (kiln_jit_compile_file(jit, o.model.c_str(), &own) != KILN_OK ||
                  own != model.get())) {
        errors += o.iterations;
        note(own ? "the JIT gave another handle for the same model" : kiln_jit_last_error(), "");
        return;
      }
      struct GiveBack {
        kiln_jit_t *jit;
        kiln_model_t *model;
        ~GiveBack() {
          if (jit && model)
            kiln_jit_release(jit, model);
        }
      } giveBack{jit, own};
      kiln::Context context;
      if (kiln::Status s = kiln::Context::create(model, &context); !s.ok()) {
        errors += o.iterations;
        note(s.message(), "");
        return;
      }
      std::mt19937_64 rng(o.seed * 7919 + t);
      std::vector<kiln::HostTensor> outputs;
      for (long i = 0; i < o.iterations; ++i) {
        size_t c = rng() % cases.size();
        std::vector<kiln::HostTensor> inputs = cases[c].inputs;
        auto start = std::chrono::steady_clock::now();
        kiln::Status s = context.run(inputs, &outputs);
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
        if (!s.ok()) {
          ++errors;
          note(s.message(), "");
          continue;
        }
        note("", context.variant());
        results[t].push_back({c, hashOutputs(outputs), us});
      }
    });
  for (std::thread &t : threads)
    t.join();

  // The serial reference, once the JIT has installed what it compiled.
  if (jit)
    kiln_jit_wait_idle(jit);
  {
    kiln::Context context;
    if (kiln::Status s = kiln::Context::create(model, &context); !s.ok())
      return fail(s.message());
    std::vector<kiln::HostTensor> outputs;
    for (Case &c : cases) {
      std::vector<kiln::HostTensor> inputs = c.inputs;
      if (kiln::Status s = context.run(inputs, &outputs); !s.ok()) {
        ++errors;
        note(s.message(), "");
        continue;
      }
      note("", context.variant());
      c.serial = hashOutputs(outputs);
    }
  }

  long runs = 0, mismatches = 0;
  std::vector<double> latencies;
  for (const std::vector<Result> &list : results)
    for (const Result &r : list) {
      ++runs;
      latencies.push_back(r.us);
      if (r.hash != cases[r.caseIndex].serial)
        ++mismatches;
    }
  std::sort(latencies.begin(), latencies.end());
  auto percentile = [&](double p) {
    return latencies.empty() ? 0.0 : latencies[std::min(latencies.size() - 1, static_cast<size_t>(p * latencies.size()))];
  };
  uint64_t compiles = 0;
  if (jit) {
    kiln_jit_stats_t stats;
    kiln_jit_stats(jit, &stats);
    compiles = stats.compiles;
    std::printf("jit: %llu memory hits, %llu disk hits, %llu misses, %llu compiles (%.0f ms), %llu "
                "evictions, %llu damaged, %llu variants installed, %llu dropped, %llu failed\n",
                (unsigned long long)stats.memory_hits, (unsigned long long)stats.disk_hits,
                (unsigned long long)stats.misses, (unsigned long long)stats.compiles,
                stats.compile_ms, (unsigned long long)stats.evictions,
                (unsigned long long)stats.damaged, (unsigned long long)stats.specializations,
                (unsigned long long)stats.dropped, (unsigned long long)stats.failed);
  }
  if (!firstError.empty())
    std::fprintf(stderr, "kiln-stress: first error: %s\n", firstError.c_str());
  std::printf("stress: %ld runs, %ld mismatches, %ld errors, %llu compiles, %zu variants, p50 %.0f "
              "us, p99 %.0f us\n",
              runs, mismatches, errors.load(), (unsigned long long)compiles, variants.size(),
              percentile(0.5), percentile(0.99));
  if (jit) {
    // The last handle: the model is destroyed here, not by kiln_jit_destroy.
    if (kiln_jit_release(jit, model.get()) != KILN_OK) {
      std::fprintf(stderr, "kiln-stress: %s\n", kiln_jit_last_error());
      ++errors;
    }
    model = kiln::Model(); // the JIT owned it
    kiln_jit_destroy(jit);
  }
  return mismatches || errors ? 1 : 0;
}
