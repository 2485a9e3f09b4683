//===- kiln-variant-race.cpp - installs variants while threads run --------===//
//
//   kiln-variant-race ARTIFACT.kiln PACK.kvar... [--threads T] [--iterations N]
//
// Built with ThreadSanitizer from the runtime's sources (test/CMakeLists.txt):
// T threads, each with its own context, run the model on the shapes the packs
// specialize while the main thread installs the packs one by one
// (kiln_model_add_variants), so calls choose from dispatch tables being
// replaced and launch from kernel tables being filled. Every result must equal
// the generic code's, computed first, bit for bit; ThreadSanitizer fails the
// run on any data race it sees.
//
//===----------------------------------------------------------------------===//

#include "kiln/artifact/Plan.h"
#include "kiln/runtime.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {
int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-variant-race: error: %s\n", message.c_str());
  return 1;
}

/// A JIT cache entry's artifact or pack: the file less the trailer that binds
/// it to its key (jit/DiskCache.cpp: the key, its length as 8 bytes, then
/// "KILNKEY1").
std::string readCacheEntry(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::string bytes = s.str();
  constexpr size_t kFixed = 16;
  if (bytes.size() >= kFixed && bytes.compare(bytes.size() - 8, 8, "KILNKEY1") == 0) {
    uint64_t keyLength = 0;
    std::memcpy(&keyLength, bytes.data() + bytes.size() - kFixed, sizeof(keyLength));
    if (keyLength <= bytes.size() - kFixed)
      bytes.resize(bytes.size() - kFixed - keyLength);
  }
  return bytes;
}
} // namespace

int main(int argc, char **argv) {
  std::string artifactPath;
  std::vector<std::string> packPaths;
  int threads = 8;
  long iterations = 50;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::atol(argv[++i]);
    else if (artifactPath.empty())
      artifactPath = a;
    else
      packPaths.push_back(a);
  }
  if (artifactPath.empty() || packPaths.empty() || threads < 1 || iterations < 1)
    return fail("usage: kiln-variant-race ARTIFACT.kiln PACK.kvar... [--threads T] [--iterations N]");
  std::string artifact = readCacheEntry(artifactPath);
  kiln::Model model;
  if (kiln::Status s = kiln::Model::loadMemory(artifact.data(), artifact.size(), &model,
                                               KILN_BACKEND_HOST);
      !s.ok())
    return fail(s.message());
  // 8-byte aligned copy for the reader (the shapes come from the packs).
  std::vector<uint64_t> aligned(artifact.size() / 8 + 1);
  std::memcpy(aligned.data(), artifact.data(), artifact.size());
  absl::StatusOr<kiln::artifact::Plan> plan = kiln::artifact::readArtifact(
      reinterpret_cast<const uint8_t *>(aligned.data()), artifact.size());
  if (!plan.ok())
    return fail(std::string(plan.status().message()));

  struct Case {
    std::vector<kiln::HostTensor> inputs, expected;
  };
  std::vector<Case> cases;
  std::vector<std::string> packs;
  for (const std::string &path : packPaths) {
    packs.push_back(readCacheEntry(path));
    std::vector<uint64_t> packAligned(packs.back().size() / 8 + 1);
    std::memcpy(packAligned.data(), packs.back().data(), packs.back().size());
    absl::StatusOr<kiln::artifact::VariantPackInfo> info = kiln::artifact::readVariantPack(
        reinterpret_cast<const uint8_t *>(packAligned.data()), packs.back().size(), *plan);
    if (!info.ok())
      return fail(path + ": " + std::string(info.status().message()));
    for (const kiln::artifact::VariantInfo &v : info->variants) {
      kiln::artifact::Bindings bindings(plan->symbols.size(), int64_t(1));
      for (size_t i = 0; i < v.symbols.size(); ++i)
        bindings[v.symbols[i]] = v.values[i];
      Case c;
      for (int input : plan->inputs) {
        std::optional<kiln::ref::Shape> shape =
            kiln::artifact::evaluateShape(plan->values[input], bindings);
        if (!shape)
          return fail("an input's dims are not fixed by the symbols");
        kiln::HostTensor t(static_cast<kiln_dtype_t>(plan->values[input].dtype),
                           std::vector<int64_t>(shape->begin(), shape->end()));
        for (size_t k = 0; k < t.data.size(); ++k)
          t.data[k] = static_cast<uint8_t>((k * 7 + cases.size()) % 61); // small floats' bytes
        if (t.dtype == KILN_F32)
          for (size_t k = 0; k < t.numel(); ++k)
            t.as<float>()[k] = static_cast<float>((k * 13 + cases.size()) % 17) / 8.0f - 1.0f;
        c.inputs.push_back(std::move(t));
      }
      std::vector<kiln::HostTensor> in = c.inputs;
      if (kiln::Status s = model.run(in, &c.expected); !s.ok())
        return fail(s.message());
      cases.push_back(std::move(c));
    }
  }

  std::atomic<long> mismatches{0}, errors{0};
  std::atomic<bool> started{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      kiln::Context context;
      if (!kiln::Context::create(model, &context).ok()) {
        ++errors;
        return;
      }
      std::vector<kiln::HostTensor> outputs;
      for (long i = 0; i < iterations; ++i) {
        started = true;
        const Case &c = cases[(i + t) % cases.size()];
        std::vector<kiln::HostTensor> in = c.inputs;
        if (!context.run(in, &outputs).ok()) {
          ++errors;
          continue;
        }
        (void)context.variant(); // reads the dispatch table's names
        for (size_t k = 0; k < outputs.size(); ++k)
          if (outputs[k].data != c.expected[k].data)
            ++mismatches;
      }
    });
  while (!started)
    std::this_thread::yield();
  size_t installed = 0;
  for (const std::string &pack : packs) {
    size_t added = 0;
    if (kiln_model_add_variants(model.get(), pack.data(), pack.size(), &added) != KILN_OK)
      return fail(kiln_last_error());
    installed += added;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (std::thread &w : workers)
    w.join();
  std::printf("variant race: %d threads, %zu shapes, %zu variants installed while running, %ld "
              "mismatches, %ld errors\n",
              threads, cases.size(), installed, mismatches.load(), errors.load());
  return mismatches || errors ? 1 : 0;
}
