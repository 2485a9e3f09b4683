// Execution contexts (kiln_context_t): a context reused across calls whose shapes
// change allocates nothing once it has seen each shape, and contexts on eight
// threads, one each, give exactly the results of running one call at a time.

#include "EncoderModel.h"
#include "kiln/runtime.h"
#include "kiln/runtime.hpp"
#include "kiln/version.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <new>
#include <random>
#include <thread>

// Every operator new in the process is counted while `counting` is set: the
// runtime's too (libkiln_runtime.so resolves operator new to this definition).
namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
} // namespace

void *operator new(size_t size) {
  if (counting.load(std::memory_order_relaxed))
    allocations.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }

namespace {

#ifdef KILN_TEST_POINTWISE
constexpr const char *kPointwise = KILN_TEST_POINTWISE;
#else
constexpr const char *kPointwise = "";
#endif
using kiln::test::kEncoder;

bool available(const char *path) { return *path && std::ifstream(path).good(); }

TEST(Context, SteadyStateAllocatesNothing) {
  if (!available(kPointwise))
    GTEST_SKIP() << "the test model is built with the compiler (KILN_BUILD_COMPILER)";
  kiln_model_t *model = nullptr;
  ASSERT_EQ(kiln_model_load_file(kPointwise, KILN_BACKEND_HOST, &model), KILN_OK)
      << kiln_last_error();
  kiln_context_t *context = nullptr;
  ASSERT_EQ(kiln_context_create(model, &context), KILN_OK) << kiln_last_error();

  // Two shapes in turn: x is f32[n, 64] with n = 3, then 7.
  const int64_t rows[2] = {3, 7};
  std::vector<float> x(7 * 64), y(7 * 64);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (float &v : x)
    v = dist(rng);
  kiln_run_options_t options = KILN_RUN_OPTIONS_INIT;
  auto run = [&](int64_t n) {
    kiln_tensor_t in = {KILN_F32, 2, {n, 64}, x.data(), static_cast<size_t>(n) * 64 * 4};
    kiln_tensor_t out = {KILN_F32, 0, {}, y.data(), y.size() * 4};
    return kiln_context_run(context, &in, 1, &out, 1, &options);
  };
  // Warm-up: each shape once (the arena grows to the larger, each binding's
  // memory plan is made once).
  for (int64_t n : rows)
    ASSERT_EQ(run(n), KILN_OK) << kiln_last_error();
  counting = true;
  for (int i = 0; i < 20; ++i)
    if (run(rows[i % 2]) != KILN_OK)
      break;
  counting = false;
  EXPECT_EQ(allocations.load(), 0) << "allocations in 20 steady-state calls";
  ASSERT_EQ(run(rows[1]), KILN_OK) << kiln_last_error();
  // The numbers are those of a fresh model run: tanh(softmax(exp(x) / 2 + 1)).
  for (int r = 0; r < 7; ++r) {
    double sum = 0;
    for (int c = 0; c < 64; ++c)
      sum += std::exp(std::exp(x[r * 64 + c]) * 0.5 + 1.0);
    for (int c = 0; c < 64; c += 21) {
      double want = std::tanh(std::exp(std::exp(x[r * 64 + c]) * 0.5 + 1.0) / sum);
      EXPECT_NEAR(y[r * 64 + c], want, 1e-6) << r << ", " << c;
    }
  }
  kiln_context_destroy(context);
  kiln_model_destroy(model);
}

TEST(Context, EightThreadsOneContextEachMatchSerialRuns) {
  if (!available(kEncoder))
    GTEST_SKIP() << "the compiled encoder is built with the compiler (KILN_BUILD_COMPILER)";
  kiln::Model model;
  kiln::Status loaded = kiln::Model::load(kEncoder, &model, KILN_BACKEND_HOST);
  ASSERT_TRUE(loaded.ok()) << loaded.message();

  // Inputs of several shapes, and their outputs computed one call at a time.
  std::vector<std::vector<kiln::HostTensor>> inputs, expected;
  for (int i = 0; i < 6; ++i) {
    kiln::HostTensor x(KILN_F32, {1 + i % 3, 2 + i % 4, 16});
    std::mt19937 rng(40 + i);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (size_t k = 0; k < x.numel(); ++k)
      x.as<float>()[k] = dist(rng);
    inputs.push_back({x});
    std::vector<kiln::HostTensor> out;
    kiln::Status s = model.run(inputs.back(), &out);
    ASSERT_TRUE(s.ok()) << s.message();
    expected.push_back(std::move(out));
  }

  constexpr int kThreads = 8, kRounds = 6;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      kiln::Context context;
      if (kiln::Status s = kiln::Context::create(model, &context); !s.ok()) {
        failures[t] = s.message();
        return;
      }
      for (int r = 0; r < kRounds; ++r) {
        size_t item = (t + r) % inputs.size();
        std::vector<kiln::HostTensor> in = inputs[item], out;
        kiln::Status s = context.run(in, &out);
        if (!s.ok()) {
          failures[t] = s.message();
          return;
        }
        if (out.size() != expected[item].size() || out[0].dims != expected[item][0].dims ||
            out[0].data != expected[item][0].data) {
          failures[t] = "thread " + std::to_string(t) + " round " + std::to_string(r) +
                        " differs from the serial run";
          return;
        }
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &f : failures)
    EXPECT_EQ(f, "");
}

TEST(Context, MisuseIsAnError) {
  kiln_context_t *context = nullptr;
  EXPECT_EQ(kiln_context_create(nullptr, &context), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_context_run(nullptr, nullptr, 0, nullptr, 0, nullptr), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("context is NULL"), std::string::npos)
      << kiln_last_error();
  kiln_context_destroy(nullptr);
}

TEST(Context, RunOptionsNeedTheirSize) {
  if (!available(kPointwise))
    GTEST_SKIP() << "the test model is built with the compiler (KILN_BUILD_COMPILER)";
  kiln::Model model;
  ASSERT_TRUE(kiln::Model::load(kPointwise, &model, KILN_BACKEND_HOST).ok());
  std::vector<float> x(64), y(64);
  kiln_tensor_t in = {KILN_F32, 2, {1, 64}, x.data(), x.size() * 4};
  kiln_tensor_t out = {KILN_F32, 0, {}, y.data(), y.size() * 4};
  kiln_run_options_t unsized = KILN_RUN_OPTIONS_INIT;
  unsized.struct_size = 0;
  EXPECT_EQ(kiln_model_run(model.get(), &in, 1, &out, 1, &unsized), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("struct_size"), std::string::npos)
      << kiln_last_error();
  // A caller whose header had only the first fields (an older, smaller struct)
  // still runs: the runtime reads what lies within struct_size.
  kiln_run_options_t older = KILN_RUN_OPTIONS_INIT;
  older.struct_size = offsetof(kiln_run_options_t, device_buffers);
  EXPECT_EQ(kiln_model_run(model.get(), &in, 1, &out, 1, &older), KILN_OK) << kiln_last_error();
}

TEST(Version, ApiAndReleaseVersions) {
  EXPECT_EQ(kiln_api_version(), KILN_API_VERSION);
  EXPECT_EQ(kiln_api_version() / 10000, KILN_API_VERSION_MAJOR);
  EXPECT_STREQ(kiln_runtime_version(), KILN_VERSION);
}

} // namespace
