// One loaded model, many threads: every call gets its own arena and value table,
// so concurrent runs with different shapes give exactly the results of running
// them one at a time.

#include "kiln/runtime.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

namespace {

#ifdef KILN_TEST_ENCODER
constexpr const char *kEncoder = KILN_TEST_ENCODER;
#else
constexpr const char *kEncoder = "";
#endif

/// An input of the encoder (x: f32[batch, seq, 16]) filled from `seed`.
kiln::HostTensor encoderInput(int batch, int seq, unsigned seed) {
  kiln::HostTensor x(KILN_F32, {batch, seq, 16});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < x.numel(); ++i)
    x.as<float>()[i] = dist(rng);
  return x;
}

void runConcurrently(kiln_backend_t backend) {
  if (!*kEncoder || !std::ifstream(kEncoder).good())
    GTEST_SKIP() << "the compiled encoder is built with the compiler (KILN_BUILD_COMPILER)";
  kiln::Model model;
  kiln::Status loaded = kiln::Model::load(kEncoder, &model, backend);
  // Without a device the CUDA variant skips, unless the test runs on the fake
  // driver (test/runtime/fake_cuda), where it must run.
  if (backend == KILN_BACKEND_CUDA && !loaded.ok() && !std::getenv("KILN_FAKE_CUDA_KERNELS"))
    GTEST_SKIP() << "no CUDA execution here: " << loaded.message();
  ASSERT_TRUE(loaded.ok()) << loaded.message();

  // Work items of several shapes, their answers computed one at a time first.
  struct Item {
    std::vector<kiln::HostTensor> inputs;
    std::vector<kiln::HostTensor> expected;
  };
  std::vector<Item> items;
  for (int i = 0; i < 12; ++i) {
    Item item;
    item.inputs.push_back(encoderInput(1 + i % 4, 3 + 2 * (i % 3), 100 + i));
    kiln::Status s = model.run(item.inputs, &item.expected);
    ASSERT_TRUE(s.ok()) << s.message();
    items.push_back(std::move(item));
  }

  constexpr int kThreads = 8, kRounds = 10;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        Item &item = items[(t * 5 + r) % items.size()];
        std::vector<kiln::HostTensor> inputs = item.inputs, outputs;
        kiln::Status s = model.run(inputs, &outputs);
        if (!s.ok()) {
          failures[t] = s.message();
          return;
        }
        if (outputs.size() != item.expected.size() ||
            outputs[0].dims != item.expected[0].dims ||
            outputs[0].data != item.expected[0].data) {
          failures[t] = "round " + std::to_string(r) + " differs from the one-thread run";
          return;
        }
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST(Threads, EightThreadsShareOneModelInHostEmulation) { runConcurrently(KILN_BACKEND_HOST); }

TEST(Threads, EightThreadsShareOneModelOnCuda) { runConcurrently(KILN_BACKEND_CUDA); }

// Device buffers in and out (kiln_run_options_t.device_buffers). Only on the fake
// driver, whose device pointers are host pointers: a real GPU needs cuMemAlloc'd
// memory, which this test does not link against.
TEST(DeviceBuffers, MatchHostBuffersOnTheFakeDriver) {
  if (!std::getenv("KILN_FAKE_CUDA_KERNELS") || !*kEncoder)
    GTEST_SKIP() << "runs on the fake CUDA driver (test/runtime/fake_cuda)";
  kiln::Model model;
  kiln::Status loaded = kiln::Model::load(kEncoder, &model, KILN_BACKEND_CUDA);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  std::vector<kiln::HostTensor> inputs = {encoderInput(2, 5, 7)}, expected;
  ASSERT_TRUE(model.run(inputs, &expected).ok());

  kiln::HostTensor y(KILN_F32, {2, 5, 8});
  kiln_tensor_t in = inputs[0].view(), out = y.view();
  kiln_run_options_t options = KILN_RUN_OPTIONS_INIT;
  options.device_buffers = 1;
  ASSERT_EQ(kiln_model_run(model.get(), &in, 1, &out, 1, &options), KILN_OK) << kiln_last_error();
  EXPECT_EQ(y.data, expected[0].data);

  // Host emulation refuses device buffers by name.
  kiln::Model host;
  ASSERT_TRUE(kiln::Model::load(kEncoder, &host, KILN_BACKEND_HOST).ok());
  EXPECT_EQ(kiln_model_run(host.get(), &in, 1, &out, 1, &options), KILN_FAILED_PRECONDITION);
  EXPECT_NE(std::string(kiln_last_error()).find("device buffers need the CUDA backend"),
            std::string::npos);
}

} // namespace
