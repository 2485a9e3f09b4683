//===- JitTest.cpp - libkiln_jit through its C++ wrapper ------------------===//
//
// The torch encoder compiled in-process: it matches torch at the export's
// shape, a new shape runs the generic code at once and a variant after the JIT
// installs one, the same model asked for twice is one handle and one compile,
// and bad models and arguments are errors with messages.
//
//===----------------------------------------------------------------------===//

#include "kiln/jit.hpp"

#include "TensorFiles.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

namespace {

/// A cache folder of this test alone, removed when the test ends.
struct FreshCacheDir {
  std::string path;
  FreshCacheDir() {
    char folder[] = "/tmp/kiln-jit-test-XXXXXX";
    path = mkdtemp(folder) ? folder : "";
  }
  ~FreshCacheDir() {
    std::error_code ignored;
    if (!path.empty())
      std::filesystem::remove_all(path, ignored);
  }
};

/// A host-emulation JIT caching in `folder`, specializing unless told not to.
void createHostJit(const FreshCacheDir &folder, kiln::Jit *jit, const char *precision = nullptr,
                   int specialize = 1) {
  kiln_jit_options_t options;
  kiln_jit_options_init(&options);
  options.cache_dir = folder.path.c_str();
  options.backend = KILN_BACKEND_HOST;
  options.precision = precision;
  options.specialize = specialize;
  kiln::Status s = kiln::Jit::create(&options, jit);
  ASSERT_TRUE(s.ok()) << s.message();
}

kiln::HostTensor randomInput(int64_t batch, int64_t seq) {
  kiln::HostTensor x(KILN_F32, {batch, seq, 16});
  for (size_t i = 0; i < x.numel(); ++i)
    x.as<float>()[i] = static_cast<float>((i * 37) % 23) / 11.0f - 1.0f;
  return x;
}

TEST(Jit, CompilesRunsAndSpecializesInTheBackground) {
  FreshCacheDir folder; // destroyed after the JIT below
  const std::string &cache = folder.path;
  ASSERT_FALSE(cache.empty());
  kiln_jit_options_t options;
  kiln_jit_options_init(&options);
  options.cache_dir = cache.c_str();
  options.backend = KILN_BACKEND_HOST;
  kiln::Jit jit;
  kiln::Status s = kiln::Jit::create(&options, &jit);
  ASSERT_TRUE(s.ok()) << s.message();
  kiln::Model model;
  s = jit.compileFile(KILN_TEST_MODELS "/encoder.onnx", &model);
  ASSERT_TRUE(s.ok()) << s.message();

  // At the export's shape it matches torch.
  absl::StatusOr<kiln::NamedTensor> input =
      kiln::readTensorFile(KILN_TEST_MODELS "/encoder/input_0.pb");
  absl::StatusOr<kiln::NamedTensor> expected =
      kiln::readTensorFile(KILN_TEST_MODELS "/encoder/output_0.pb");
  ASSERT_TRUE(input.ok() && expected.ok());
  const kiln::ref::Tensor &x = input->tensor;
  std::vector<kiln::HostTensor> inputs = {
      kiln::HostTensor(KILN_F32, std::vector<int64_t>(x.shape().begin(), x.shape().end()))};
  std::memcpy(inputs[0].data.data(), x.bytes(), x.byteSize());
  kiln::Context context;
  ASSERT_TRUE(kiln::Context::create(model, &context).ok());
  std::vector<kiln::HostTensor> outputs;
  s = context.run(inputs, &outputs);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(outputs[0].numel(), static_cast<size_t>(expected->tensor.numel()));
  for (size_t i = 0; i < outputs[0].numel(); ++i)
    EXPECT_NEAR(outputs[0].as<float>()[i], expected->tensor.getF(static_cast<int64_t>(i)), 1e-4);
  EXPECT_EQ(context.variant(), "generic");

  // A new shape: generic now, its variant once the JIT has installed it, with
  // the same numbers.
  std::vector<kiln::HostTensor> small = {randomInput(1, 3)};
  std::vector<kiln::HostTensor> generic, specialized;
  ASSERT_TRUE(context.run(small, &generic).ok());
  EXPECT_EQ(context.variant(), "generic");
  jit.waitIdle();
  std::vector<kiln::HostTensor> other = {randomInput(1, 4)};
  ASSERT_TRUE(context.run(other, &outputs).ok()); // a shape change: the choice is made anew
  ASSERT_TRUE(context.run(small, &specialized).ok());
  EXPECT_EQ(context.variant(), "batch=1,seq=3");
  EXPECT_EQ(generic[0].data, specialized[0].data);

  // One model, one handle, one compile; the variants of (2, 5), (1, 3) and (1, 4).
  kiln::Model again;
  ASSERT_TRUE(jit.compileFile(KILN_TEST_MODELS "/encoder.onnx", &again).ok());
  EXPECT_EQ(again.get(), model.get());
  jit.waitIdle();
  kiln_jit_stats_t stats = jit.stats();
  EXPECT_EQ(stats.compiles, 4u);
  EXPECT_EQ(stats.specializations, 3u);
  EXPECT_EQ(stats.failed, 0u);
  EXPECT_GT(stats.compile_ms, 0.0);
}

TEST(Jit, ExplainsAModelAsKilnCompileDoes) {
  FreshCacheDir folder;
  kiln::Jit jit;
  createHostJit(folder, &jit);
  std::ifstream file(KILN_TEST_MODELS "/encoder.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  std::string text;
  kiln::Status s = jit.explainMemory(bytes.data(), bytes.size(), "encoder.onnx", &text);
  ASSERT_TRUE(s.ok()) << s.message();
  // The summary line kiln-compile --explain ends with, for this model.
  EXPECT_NE(text.find("encoder.onnx: 3 generated kernels, 10 library calls, 0 graph breaks, "
                      "0 size reads, 0 guards\n"),
            std::string::npos)
      << text;
  // A diagnostic: nothing was compiled into the cache or counted.
  EXPECT_EQ(jit.stats().compiles, 0u);
  std::string garbage = "this is not an onnx model";
  s = jit.explainMemory(garbage.data(), garbage.size(), "garbage.onnx", &text);
  EXPECT_EQ(s.code(), KILN_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("garbage.onnx"), std::string::npos) << s.message();
  const char *out = nullptr;
  EXPECT_EQ(kiln_jit_explain_memory(jit.get(), nullptr, 0, "x.onnx", &out), KILN_INVALID_ARGUMENT);
}

TEST(Jit, ReleasingEveryHandleDestroysTheModelAndTheDiskCacheKeepsIt) {
  FreshCacheDir folder;
  kiln::Jit jit;
  createHostJit(folder, &jit);
  kiln::Model first, second;
  ASSERT_TRUE(jit.compileFile(KILN_TEST_MODELS "/encoder.onnx", &first).ok());
  ASSERT_TRUE(jit.compileFile(KILN_TEST_MODELS "/encoder.onnx", &second).ok());
  ASSERT_EQ(first.get(), second.get()); // one model, two handles
  // A new shape queues a specialization; the model is given back while it
  // may still be compiling, which then finishes before the model goes.
  std::vector<kiln::HostTensor> inputs = {randomInput(3, 7)}, outputs;
  ASSERT_TRUE(first.run(inputs, &outputs).ok());
  EXPECT_TRUE(jit.release(first).ok());
  // One handle left: the model still runs.
  ASSERT_TRUE(second.run(inputs, &outputs).ok());
  EXPECT_TRUE(jit.release(second).ok());
  kiln::Status s = jit.release(second); // no handle left
  EXPECT_EQ(s.code(), KILN_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("kiln_jit_release"), std::string::npos) << s.message();
  jit.waitIdle();
  // Compiled again: from the disk cache, not compiled anew.
  uint64_t compiles = jit.stats().compiles, hits = jit.stats().disk_hits;
  kiln::Model again;
  ASSERT_TRUE(jit.compileFile(KILN_TEST_MODELS "/encoder.onnx", &again).ok());
  EXPECT_EQ(jit.stats().compiles, compiles);
  EXPECT_EQ(jit.stats().disk_hits, hits + 1);
  ASSERT_TRUE(again.run(inputs, &outputs).ok());
  EXPECT_EQ(kiln_jit_release(jit.get(), nullptr), KILN_INVALID_ARGUMENT);
}

TEST(Jit, BadModelsAndArgumentsAreErrors) {
  FreshCacheDir folder;
  const std::string &cache = folder.path;
  kiln_jit_options_t options;
  kiln_jit_options_init(&options);
  options.cache_dir = cache.c_str();
  kiln::Jit jit;
  ASSERT_TRUE(kiln::Jit::create(&options, &jit).ok());
  kiln::Model model;
  std::string garbage = "this is not an onnx model";
  kiln::Status s = jit.compileMemory(garbage.data(), garbage.size(), "garbage.onnx", &model);
  EXPECT_EQ(s.code(), KILN_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("garbage.onnx"), std::string::npos) << s.message();
  s = jit.compileFile("/nonexistent/model.onnx", &model);
  EXPECT_EQ(s.code(), KILN_NOT_FOUND);
  kiln_model_t *handle = nullptr;
  EXPECT_EQ(kiln_jit_compile_file(nullptr, "x.onnx", &handle), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_jit_compile_memory(jit.get(), nullptr, 0, "x.onnx", &handle), KILN_INVALID_ARGUMENT);
  kiln_jit_options_t tiny;
  std::memset(&tiny, 0, sizeof(tiny));
  tiny.struct_size = 1;
  kiln_jit_t *raw = nullptr;
  EXPECT_EQ(kiln_jit_create(&tiny, &raw), KILN_INVALID_ARGUMENT);
  // A device that is no ordinal, named in the one-line error.
  kiln_jit_options_t negative = options;
  negative.device = -2;
  EXPECT_EQ(kiln_jit_create(&negative, &raw), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_jit_last_error()).find("options->device is -2"), std::string::npos)
      << kiln_jit_last_error();
  EXPECT_EQ(raw, nullptr);
  // A precision mode kiln-compile does not have, named.
  kiln_jit_options_t fp8 = options;
  fp8.precision = "fp8";
  EXPECT_EQ(kiln_jit_create(&fp8, &raw), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_jit_last_error()).find("precision 'fp8'"), std::string::npos)
      << kiln_jit_last_error();
  EXPECT_EQ(raw, nullptr);
}

TEST(Jit, PrecisionIsPartOfTheKey) {
  FreshCacheDir folder;
  kiln::Jit fp32, bf16;
  createHostJit(folder, &fp32, nullptr, /*specialize=*/0);
  std::string mode = "bf16";
  createHostJit(folder, &bf16, mode.c_str(), /*specialize=*/0);
  mode = "xxxx"; // the JIT keeps its own copy
  kiln::Model a, b;
  ASSERT_TRUE(fp32.compileFile(KILN_TEST_MODELS "/encoder.onnx", &a).ok());
  kiln::Status s = bf16.compileFile(KILN_TEST_MODELS "/encoder.onnx", &b);
  ASSERT_TRUE(s.ok()) << s.message();
  // One cache folder, two models: the bf16 one is compiled, not the fp32 one found.
  EXPECT_EQ(bf16.stats().misses, 1u);
  EXPECT_EQ(bf16.stats().disk_hits, 0u);
  std::vector<kiln::HostTensor> inputs = {randomInput(2, 5)}, outA, outB;
  ASSERT_TRUE(a.run(inputs, &outA).ok());
  ASSERT_TRUE(b.run(inputs, &outB).ok());
  double most = 0, diff = 0;
  for (size_t i = 0; i < outA[0].numel(); ++i) {
    most = std::max(most, std::fabs(double(outA[0].as<float>()[i])));
    diff = std::max(diff, std::fabs(double(outA[0].as<float>()[i] - outB[0].as<float>()[i])));
  }
  EXPECT_GT(diff, 0.0) << "bf16 gave fp32's numbers";
  EXPECT_LE(diff, 4e-2 * most); // docs/precision.md's bf16 tolerance
}

/// What the death test's child does: a JIT that is never destroyed, one
/// specialization queued, exit while it compiles.
[[noreturn]] void queueASpecializationThenExit(const std::string &cache) {
  // Host kernels compile through a compiler that first waits 2 s, so that the
  // specialization is still compiling at exit however fast the machine (or
  // ccache) is.
  std::string slowCompiler = cache + "/slow-c++";
  if (FILE *f = std::fopen(slowCompiler.c_str(), "w")) {
    std::fputs("#!/bin/sh\nsleep 2\nexec c++ \"$@\"\n", f);
    std::fclose(f);
  }
  if (chmod(slowCompiler.c_str(), 0755) != 0 || setenv("CXX", slowCompiler.c_str(), 1) != 0)
    std::_Exit(2);
  kiln_jit_options_t options;
  kiln_jit_options_init(&options);
  options.cache_dir = cache.c_str();
  options.backend = KILN_BACKEND_HOST;
  auto *jit = new kiln::Jit(); // kept to the end, as a server keeps it
  kiln::Model model;
  if (!kiln::Jit::create(&options, jit).ok() ||
      !jit->compileFile(KILN_TEST_MODELS "/encoder.onnx", &model).ok())
    std::_Exit(3);
  kiln::Context context;
  std::vector<kiln::HostTensor> inputs = {randomInput(1, 3)};
  std::vector<kiln::HostTensor> outputs;
  if (!kiln::Context::create(model, &context).ok() || !context.run(inputs, &outputs).ok())
    std::_Exit(4);
  // A worker takes the job at once; its compile then takes over 2 s.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::exit(0);
}

// A server or the Python package keeps its JIT until the process ends and
// never destroys it. Exit while a specialization compiles must let that compile
// finish (its pack reaches the disk cache) and end with status 0: a worker left
// running into glibc's library finalization aborted the process (libgomp
// initialized twice by the kernel library it loaded).
TEST(JitDeathTest, ExitLetsTheRunningCompileFinish) {
  // Forked at this point (not re-executed), so the child uses this folder.
  GTEST_FLAG_SET(death_test_style, "fast");
  FreshCacheDir folder;
  const std::string &cache = folder.path;
  ASSERT_FALSE(cache.empty());
  EXPECT_EXIT(queueASpecializationThenExit(cache),
      ::testing::ExitedWithCode(0), "");
  int packs = 0;
  std::string files;
  for (const auto &file : std::filesystem::directory_iterator(cache)) {
    files += " " + file.path().filename().string();
    packs += file.path().filename().string().rfind("variant-", 0) == 0 &&
             file.path().extension() == ".kvar";
  }
  EXPECT_EQ(packs, 1) << "the running specialization did not finish before exit; the cache holds"
                      << files;
}

} // namespace
