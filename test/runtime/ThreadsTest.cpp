// One loaded model, many threads: every call gets its own arena and value table,
// so concurrent runs with different shapes give exactly the results of running
// them one at a time.

#include "EncoderModel.h"
#include "kiln/runtime.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

namespace {

using kiln::test::encoderInput;
using kiln::test::kEncoder;

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

// Device buffers in and out (kiln_run_options_t.device_buffers), in memory the
// runtime allocates and copies (kiln_model_device_alloc and friends, API 1.3):
// on the fake driver (whose device memory the host cannot read either) and on
// a GPU.
TEST(DeviceBuffers, MatchHostBuffers) {
  if (!*kEncoder)
    GTEST_SKIP() << "built without the encoder artifact";
  kiln::Model model;
  kiln::Status loaded = kiln::Model::load(kEncoder, &model, KILN_BACKEND_CUDA);
  if (!loaded.ok() && !std::getenv("KILN_FAKE_CUDA_KERNELS"))
    GTEST_SKIP() << "no CUDA execution here: " << loaded.message();
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  std::vector<kiln::HostTensor> inputs = {encoderInput(2, 5, 7)}, expected;
  ASSERT_TRUE(model.run(inputs, &expected).ok());

  void *x = nullptr, *y = nullptr;
  size_t xBytes = inputs[0].data.size(), yBytes = expected[0].data.size();
  ASSERT_EQ(kiln_model_device_alloc(model.get(), xBytes, &x), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_model_device_alloc(model.get(), yBytes, &y), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_model_copy_to_device(model.get(), x, inputs[0].data.data(), xBytes), KILN_OK);
  kiln_tensor_t in = inputs[0].view(), out;
  in.data = x;
  std::memset(&out, 0, sizeof(out));
  out.data = y;
  out.size_bytes = yBytes;
  kiln_run_options_t options = KILN_RUN_OPTIONS_INIT;
  options.device_buffers = 1;
  ASSERT_EQ(kiln_model_run(model.get(), &in, 1, &out, 1, &options), KILN_OK) << kiln_last_error();
  EXPECT_EQ(out.rank, 3);
  std::vector<uint8_t> result(yBytes);
  ASSERT_EQ(kiln_model_copy_to_host(model.get(), result.data(), y, yBytes), KILN_OK);
  EXPECT_EQ(result, expected[0].data);
  // An input that starts 16 bytes into a device buffer (a caller's view into
  // a larger tensor): its matmuls still run in cuBLASLt, whose heuristic is
  // told the pointer's real alignment (left at its default it promises 256
  // bytes, and the algorithm it picks may refuse or fault on this pointer).
  void *larger = nullptr;
  ASSERT_EQ(kiln_model_device_alloc(model.get(), xBytes + 16, &larger), KILN_OK);
  void *offset = static_cast<char *>(larger) + 16;
  ASSERT_EQ(kiln_model_copy_to_device(model.get(), offset, inputs[0].data.data(), xBytes), KILN_OK);
  in.data = offset;
  kiln_profile_t *profile = nullptr;
  ASSERT_EQ(kiln_profile_create(&profile), KILN_OK);
  options.profile = profile;
  ASSERT_EQ(kiln_model_run(model.get(), &in, 1, &out, 1, &options), KILN_OK) << kiln_last_error();
  options.profile = nullptr;
  for (size_t i = 0, n = kiln_profile_num_events(profile); i < n; ++i) {
    const char *name = nullptr, *kind = nullptr;
    double start = 0, duration = 0;
    ASSERT_EQ(kiln_profile_event(profile, i, &name, &kind, &start, &duration), KILN_OK);
    if (std::string(name) == "MatMul")
      EXPECT_STREQ(kind, "cublasLt");
  }
  kiln_profile_destroy(profile);
  ASSERT_EQ(kiln_model_copy_to_host(model.get(), result.data(), y, yBytes), KILN_OK);
  EXPECT_EQ(result, expected[0].data);
  EXPECT_EQ(kiln_model_device_free(model.get(), larger), KILN_OK);

  EXPECT_EQ(kiln_model_device_free(model.get(), x), KILN_OK);
  EXPECT_EQ(kiln_model_device_free(model.get(), y), KILN_OK);

  // More memory than any device has (4 TiB; an H200 has 141 GiB, the fake 80
  // GiB): the driver's out-of-memory as a one-line error, and the model
  // runs on after it (tools/gpu-check.sh runs this on a GPU).
  void *huge = nullptr;
  EXPECT_EQ(kiln_model_device_alloc(model.get(), size_t(4) << 40, &huge), KILN_RESOURCE_EXHAUSTED);
  std::string oom = kiln_last_error();
  EXPECT_NE(oom.find("out of memory"), std::string::npos) << oom;
  EXPECT_EQ(oom.find('\n'), std::string::npos) << oom;
  EXPECT_EQ(huge, nullptr);
  std::vector<kiln::HostTensor> again;
  ASSERT_TRUE(model.run(inputs, &again).ok());
  EXPECT_EQ(again[0].data, expected[0].data);

  // Host emulation refuses device buffers and device memory by name.
  kiln::Model host;
  ASSERT_TRUE(kiln::Model::load(kEncoder, &host, KILN_BACKEND_HOST).ok());
  kiln::HostTensor hostOut(KILN_F32, {2, 5, 8});
  in = inputs[0].view();
  out = hostOut.view();
  EXPECT_EQ(kiln_model_run(host.get(), &in, 1, &out, 1, &options), KILN_FAILED_PRECONDITION);
  EXPECT_NE(std::string(kiln_last_error()).find("device buffers need the CUDA backend"),
            std::string::npos);
  void *none = nullptr;
  EXPECT_EQ(kiln_model_device_alloc(host.get(), 16, &none), KILN_FAILED_PRECONDITION);
  EXPECT_NE(std::string(kiln_last_error()).find("device memory needs the CUDA backend"),
            std::string::npos);
  EXPECT_EQ(none, nullptr);
}

} // namespace
