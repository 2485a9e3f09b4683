//===- kiln-bench-load.cpp - how fast an artifact loads -------------------===//
//
//   kiln-bench-load [--mb N] [--repeat K] [ARTIFACT.kiln]
//
// Loading checks a checksum over every byte of the artifact, so load time grows
// with the weights. This measures, on a warm page cache and in one process:
//   read      a plain pass over every byte (summing words): the memory bound
//   checksum  artifactChecksum (XXH3) over the buffer
//   previous  format 1's checksum (a 64-bit multiply-xorshift fold), for reference
//   load      kiln_model_load_embedded: verify, checksum, read the plan, decode
//             the steps (host backend), as an application pays it
// each as the best of K runs, with its ratio to `read`. Without ARTIFACT it
// builds one holding N MB of weights (default 436: a BERT-base export).
//
//===----------------------------------------------------------------------===//

#include "kiln/artifact/Plan.h"
#include "kiln/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {
namespace fb = kiln::schema;

/// An artifact of one f32 weight of `mb` megabytes passed through one matmul.
std::vector<uint8_t> syntheticArtifact(size_t mb) {
  size_t floats = mb * (1u << 20) / 4;
  int64_t rows = static_cast<int64_t>(floats / 64);
  flatbuffers::FlatBufferBuilder b(floats * 4 + (1 << 16));
  auto dim = [&](int64_t v) {
    std::vector<fb::ExprOp> ops = {fb::ExprOp(fb::ExprKind::Constant, v)};
    return fb::CreateDim(b, b.CreateVectorOfStructs(ops));
  };
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      fb::CreateValue(b, b.CreateString("x"), fb::DType::f32,
                      b.CreateVector(std::vector<flatbuffers::Offset<fb::Dim>>{dim(1), dim(rows)}),
                      fb::ValueKind::Input),
      fb::CreateValue(b, b.CreateString("w"), fb::DType::f32,
                      b.CreateVector(std::vector<flatbuffers::Offset<fb::Dim>>{dim(rows), dim(64)}),
                      fb::ValueKind::Weight, 0),
      fb::CreateValue(b, b.CreateString("y"), fb::DType::f32,
                      b.CreateVector(std::vector<flatbuffers::Offset<fb::Dim>>{dim(1), dim(64)}),
                      fb::ValueKind::Intermediate)};
  std::vector<uint8_t> weights(static_cast<size_t>(rows) * 64 * 4);
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  std::vector<flatbuffers::Offset<fb::Step>> steps = {
      fb::CreateStep(b, fb::StepOp::MatMul, fb::CreateMatMul(b).Union(),
                     b.CreateVector(std::vector<int>{0, 1}), b.CreateVector(std::vector<int>{2}))};
  std::vector<flatbuffers::Offset<fb::Guard>> guards = {fb::CreateGuard(b, 0, 0, dim(1)),
                                                        fb::CreateGuard(b, 0, 1, dim(rows))};
  std::vector<flatbuffers::Offset<fb::Weight>> table = {fb::CreateWeight(b, 0, weights.size())};
  b.ForceVectorAlignment(weights.size(), 1, kiln::artifact::kWeightAlignment);
  auto data = b.CreateVector(weights);
  b.ForceDefaults(true);
  auto model = fb::CreateModel(b, kiln::artifact::kFormatVersion, b.CreateString("bench"),
                               b.CreateString("synthetic"), 0, b.CreateVector(values),
                               b.CreateVector(std::vector<int>{0}),
                               b.CreateVector(std::vector<int>{2}), b.CreateVector(guards),
                               b.CreateVector(steps), 0, 0, 0, b.CreateVector(table), data);
  fb::FinishModelBuffer(b, model);
  std::vector<uint8_t> bytes(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  kiln::artifact::sealArtifact(bytes.data(), bytes.size());
  return bytes;
}

/// Format 1's checksum, kept here only to show what the change bought.
uint64_t previousChecksum(const uint8_t *data, size_t size) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ size;
  size_t at = 0;
  for (; at + 8 <= size; at += 8) {
    uint64_t w;
    std::memcpy(&w, data + at, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

template <typename F> double bestMs(int repeat, F f) {
  double best = 1e300;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(
        best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
  }
  return best;
}

volatile uint64_t sink;

} // namespace

int main(int argc, char **argv) {
  size_t mb = 436;
  int repeat = 5;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mb" && i + 1 < argc)
      mb = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--repeat" && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else if (a[0] != '-')
      path = a;
    else {
      std::fprintf(stderr, "usage: kiln-bench-load [--mb N] [--repeat K] [ARTIFACT.kiln]\n");
      return 2;
    }
  }
  std::vector<uint8_t> owned;
  if (path.empty()) {
    owned = syntheticArtifact(mb);
  } else {
    std::ifstream file(path, std::ios::binary);
    owned.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  }
  // 64-byte aligned, as a mapped file or a model .so's data is.
  uint8_t *bytes = static_cast<uint8_t *>(std::aligned_alloc(64, (owned.size() + 63) / 64 * 64));
  std::memcpy(bytes, owned.data(), owned.size());
  size_t size = owned.size();
  owned.clear();
  owned.shrink_to_fit();

  double read = bestMs(repeat, [&] {
    uint64_t s = 0;
    for (size_t at = 0; at + 8 <= size; at += 8) {
      uint64_t w;
      std::memcpy(&w, bytes + at, 8);
      s += w;
    }
    sink = s;
  });
  double checksum =
      bestMs(repeat, [&] { sink = kiln::artifact::artifactChecksum(bytes, size, size); });
  double previous = bestMs(repeat, [&] { sink = previousChecksum(bytes, size); });
  bool loaded = true;
  double load = bestMs(repeat, [&] {
    kiln_model_t *model = nullptr;
    if (kiln_model_load_embedded(bytes, size, KILN_BACKEND_HOST, &model) != KILN_OK) {
      std::fprintf(stderr, "kiln-bench-load: %s\n", kiln_last_error());
      loaded = false;
    }
    kiln_model_destroy(model);
  });
  if (!loaded)
    return 1;
  double gb = static_cast<double>(size) / 1e9;
  std::printf("artifact: %.1f MB%s\n", static_cast<double>(size) / (1 << 20),
              path.empty() ? " (synthetic)" : "");
  std::printf("%-10s %10s %10s %8s\n", "pass", "best ms", "GB/s", "x read");
  auto row = [&](const char *name, double ms) {
    std::printf("%-10s %10.2f %10.2f %8.2f\n", name, ms, gb / (ms / 1000), ms / read);
  };
  row("read", read);
  row("checksum", checksum);
  row("previous", previous);
  row("load", load);
  std::free(bytes);
  return 0;
}
