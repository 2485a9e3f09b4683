// The CUDA executor against what a GPU does that a kind fake would not: device
// memory the host cannot read, a refused allocation or launch in the middle of
// a call, an asynchronous fault that leaves the context unusable, and a load
// and copies in one thread while another captures CUDA graphs. They run on the
// strict fake driver (test/runtime/fake_cuda/FakeCuda.cpp), whose faults a
// test sets through kiln_fake_cuda_set_faults; elsewhere they skip, except the
// threads test, which tools/gpu-check.sh runs on a GPU as well.

#include "DriverCalls.h"
#include "EncoderModel.h"
#include "kiln/runtime.h"
#include "kiln/runtime.hpp"

#include <gtest/gtest.h>

#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

using kiln::test::encoderInput;
using kiln::test::kEncoder;

using SetFaults = void (*)(const char *);

/// The fake driver's fault switch, or null when the driver on the library
/// path is not the fake.
SetFaults fakeFaults() {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return driver ? reinterpret_cast<SetFaults>(dlsym(driver, "kiln_fake_cuda_set_faults")) : nullptr;
}

/// The encoder on the fake driver and one run's answer; skips elsewhere.
class FakeCuda : public ::testing::Test {
protected:
  void SetUp() override {
    if (!*kEncoder || !std::ifstream(kEncoder).good())
      GTEST_SKIP() << "the compiled encoder is built with the compiler (KILN_BUILD_COMPILER)";
    setFaults = fakeFaults();
    if (!setFaults)
      GTEST_SKIP() << "not on the fake CUDA driver (scripts/with-fake-cuda.sh)";
    setFaults(nullptr);
    kiln::Status loaded = kiln::Model::load(kEncoder, &model, KILN_BACKEND_CUDA);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    inputs = {encoderInput(3, 7, 11)};
    kiln::Status ran = model.run(inputs, &expected);
    ASSERT_TRUE(ran.ok()) << ran.message();
  }
  void TearDown() override {
    if (setFaults)
      setFaults(nullptr);
  }

  /// A run of `m` on the inputs, which must give the first run's outputs.
  void expectRunMatches(kiln::Model &m) {
    std::vector<kiln::HostTensor> outputs;
    kiln::Status s = m.run(inputs, &outputs);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(outputs.size(), expected.size());
    EXPECT_EQ(outputs[0].data, expected[0].data);
  }

  /// The error of a run that must fail.
  std::string failedRun(kiln::Model &m, std::vector<kiln::HostTensor> &in) {
    std::vector<kiln::HostTensor> outputs;
    kiln::Status s = m.run(in, &outputs);
    EXPECT_FALSE(s.ok());
    std::string message = s.message();
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
    return message;
  }

  SetFaults setFaults = nullptr;
  kiln::Model model;
  std::vector<kiln::HostTensor> inputs, expected;
};

TEST_F(FakeCuda, DeviceMemoryIsNotReadableFromTheHost) {
  EXPECT_EQ(model.device(), 0);
  void *device = nullptr;
  ASSERT_EQ(kiln_model_device_alloc(model.get(), 64, &device), KILN_OK) << kiln_last_error();
  // What a GPU's memory does to a host read: a fault, not the bytes.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH({ std::printf("%d\n", *static_cast<volatile char *>(device)); }, "");
  // Through the copies it is memory like any other.
  char in[64], out[64];
  for (int i = 0; i < 64; ++i)
    in[i] = static_cast<char>(i * 7);
  ASSERT_EQ(kiln_model_copy_to_device(model.get(), device, in, 64), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_model_copy_to_host(model.get(), out, device, 64), KILN_OK) << kiln_last_error();
  EXPECT_EQ(std::string(in, 64), std::string(out, 64));
  // A host pointer where a device one belongs is refused, not copied.
  EXPECT_NE(kiln_model_copy_to_host(model.get(), out, in, 64), KILN_OK);
  EXPECT_EQ(kiln_model_device_free(model.get(), device), KILN_OK);
}

TEST_F(FakeCuda, AllocationFailureMidRunIsAnErrorAndTheNextRunWorks) {
  // A larger call grows the context's buffers: its first allocation fails.
  std::vector<kiln::HostTensor> larger = {encoderInput(6, 13, 5)}, largerExpected;
  setFaults("alloc:1");
  std::string error = failedRun(model, larger);
  EXPECT_NE(error.find("cannot allocate"), std::string::npos) << error;
  EXPECT_NE(error.find("out of memory"), std::string::npos) << error;
  setFaults(nullptr);
  kiln::Status s = model.run(larger, &largerExpected);
  ASSERT_TRUE(s.ok()) << s.message();
  expectRunMatches(model);
}

TEST_F(FakeCuda, RefusedLaunchIsAnErrorAndTheNextRunWorks) {
  // At a shape not run before: the launch is a launch (a second run of a
  // shape captures a graph, and a refusal while capturing only sends the
  // steps back to running one by one).
  std::vector<kiln::HostTensor> other = {encoderInput(2, 4, 9)};
  setFaults("launch:1");
  std::string error = failedRun(model, other);
  EXPECT_NE(error.find("cuLaunchKernel failed"), std::string::npos) << error;
  setFaults(nullptr);
  expectRunMatches(model);
}

TEST_F(FakeCuda, StickyFaultLosesTheContextAndALoadRecovers) {
  // Another model on the same device, loaded before the fault.
  kiln::Model bystander;
  ASSERT_TRUE(kiln::Model::load(kEncoder, &bystander, KILN_BACKEND_CUDA).ok());
  // A kernel faults on the device: the launch returned, the error shows at
  // the next synchronization and stays (CUDA's sticky errors).
  setFaults("kernel:1");
  std::string error = failedRun(model, inputs);
  EXPECT_NE(error.find("illegal memory access"), std::string::npos) << error;
  EXPECT_NE(error.find("load the model again"), std::string::npos) << error;
  setFaults(nullptr);
  // The model stays lost and says so, rather than running on garbage.
  error = failedRun(model, inputs);
  EXPECT_NE(error.find("lost"), std::string::npos) << error;
  // A new load gets a working context (the poisoned one is reset), even while
  // the lost model is still loaded; the lost one then goes without harm.
  kiln::Model again;
  kiln::Status loaded = kiln::Model::load(kEncoder, &again, KILN_BACKEND_CUDA);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  expectRunMatches(again);
  // The reset took the bystander's memory too: it says so, and goes without
  // freeing what is now the new model's.
  error = failedRun(bystander, inputs);
  EXPECT_NE(error.find("load the model again"), std::string::npos) << error;
  bystander = kiln::Model();
  model = kiln::Model();
  expectRunMatches(again);
}

// One thread runs the encoder in a context of its own, shapes in pairs so the
// second run of each captures a CUDA graph (and ten shapes against a cache of
// eight graphs, so captures keep coming); another loads models and copies
// device buffers meanwhile. CUDA makes the legacy stream unusable while a
// blocking stream captures anywhere in the process: kiln's copies, uploads and
// own streams must stay off it.
TEST(Threads, GraphCapturesBesideLoadsAndCopiesOnCuda) {
  if (!*kEncoder || !std::ifstream(kEncoder).good())
    GTEST_SKIP() << "the compiled encoder is built with the compiler (KILN_BUILD_COMPILER)";
  // On a GPU too (tools/gpu-check.sh): there the driver's own rules judge.
  bool fake = fakeFaults() != nullptr;
  char log[] = "/tmp/kiln-graph-log-XXXXXX";
  int fd = mkstemp(log);
  ASSERT_GE(fd, 0);
  close(fd);
  setenv("KILN_FAKE_CUDA_GRAPH_LOG", log, 1);
  kiln::Model model;
  kiln::Status loaded = kiln::Model::load(kEncoder, &model, KILN_BACKEND_CUDA);
  if (!loaded.ok() && !fake)
    GTEST_SKIP() << "no CUDA execution here: " << loaded.message();
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  constexpr int kShapes = 10, kIterations = 1000;
  std::vector<std::vector<kiln::HostTensor>> inputs(kShapes), expected(kShapes);
  for (int i = 0; i < kShapes; ++i) {
    inputs[i] = {encoderInput(1 + i % 5, 2 + i, 40 + i)};
    ASSERT_TRUE(model.run(inputs[i], &expected[i]).ok());
  }

  std::string runFailure, copyFailure;
  std::thread runner([&] {
    kiln::Context context;
    if (kiln::Status s = kiln::Context::create(model, &context); !s.ok()) {
      runFailure = s.message();
      return;
    }
    for (int i = 0; i < kIterations; ++i) {
      int shape = (i / 2) % kShapes;
      std::vector<kiln::HostTensor> outputs;
      kiln::Status s = context.run(inputs[shape], &outputs);
      if (!s.ok() || outputs[0].data != expected[shape][0].data) {
        runFailure = "run " + std::to_string(i) + ": " + (s.ok() ? "wrong outputs" : s.message());
        return;
      }
    }
  });
  std::thread copier([&] {
    kiln::Model other;
    for (int i = 0; i < kIterations && copyFailure.empty(); ++i) {
      if (i % 100 == 0) {
        other = kiln::Model();
        if (kiln::Status s = kiln::Model::load(kEncoder, &other, KILN_BACKEND_CUDA); !s.ok()) {
          copyFailure = "load " + std::to_string(i) + ": " + s.message();
          break;
        }
      }
      void *device = nullptr;
      int32_t in[64], out[64];
      for (int j = 0; j < 64; ++j)
        in[j] = i * 64 + j;
      if (kiln_model_device_alloc(other.get(), sizeof(in), &device) != KILN_OK ||
          kiln_model_copy_to_device(other.get(), device, in, sizeof(in)) != KILN_OK ||
          kiln_model_copy_to_host(other.get(), out, device, sizeof(out)) != KILN_OK ||
          kiln_model_device_free(other.get(), device) != KILN_OK)
        copyFailure = "copy " + std::to_string(i) + ": " + kiln_last_error();
      else if (std::memcmp(in, out, sizeof(in)) != 0)
        copyFailure = "copy " + std::to_string(i) + ": the bytes came back changed";
    }
  });
  runner.join();
  copier.join();
  unsetenv("KILN_FAKE_CUDA_GRAPH_LOG");
  EXPECT_EQ(runFailure, "");
  EXPECT_EQ(copyFailure, "");
  // The runs did capture: a graph per pair once the cache turns over (the
  // fake driver's log says; a GPU's does not).
  if (!fake) {
    std::remove(log);
    return;
  }
  int captures = 0;
  std::ifstream lines(log);
  for (std::string line; std::getline(lines, line);)
    captures += line.rfind("capture ", 0) == 0;
  std::remove(log);
  EXPECT_GE(captures, kIterations / 2 - kShapes) << "graphs captured";
}

// A launch runs its real block size on the fake: a kernel of the test's own
// (a block-wide exchange through shared memory across a barrier) gives the
// answer only 64 threads meeting at the barrier give, and the same kernel
// with threads that skip the barrier is a sticky launch failure (a GPU hangs
// or races there), until the context is reset.
TEST(FakeCudaBlocks, LaunchesRunTheirBlockSizeAndABarrierSkippedIsAFailure) {
  kiln::test::DriverCalls cu = kiln::test::DriverCalls::open();
  if (!cu.fake())
    GTEST_SKIP() << "not on the fake CUDA driver (scripts/with-fake-cuda.sh)";
  ASSERT_TRUE(cu.complete());

  // The kernel as kiln's host libraries hold one: the CUDA C, a launcher and
  // its argument count, built as HostEmulation builds them, with the flags
  // and the source of its kernels whose threads meet that the driver builds
  // it again from.
  char folder[] = "/tmp/kiln-fake-blocks-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  std::string stem = std::string(folder) + "/host-0123456789abcdef";
  const char *kernelSource = R"(#include "kiln/device/kiln_device.h"
extern "C" __global__ void kiln_test_exchange(int64_t *out, int64_t skipping) {
  __shared__ int64_t tile[KILN_MAX_BLOCK];
  if ((int64_t)threadIdx.x < skipping)
    return;
  tile[threadIdx.x] = threadIdx.x + 1000 * blockIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}
extern "C" void kiln_test_exchange_host(void **args, int64_t grid) {
#ifdef KILN_HOST_BLOCK_THREADS
  kiln_run_blocks(grid, [&] { kiln_test_exchange(*(int64_t **)args[0], *(int64_t *)args[1]); });
#else
  for (int64_t b = 0; b < grid; ++b) {
    blockIdx.x = b;
    gridDim.x = grid;
    kiln_test_exchange(*(int64_t **)args[0], *(int64_t *)args[1]);
  }
#endif
}
extern "C" const int kiln_test_exchange_host_argc = 2;
)";
  {
    // The library, and its kernels whose threads meet apart (all of it).
    std::ofstream(stem + ".cpp") << kernelSource;
    std::ofstream(stem + ".threads.cpp") << kernelSource;
    std::ofstream flags(stem + ".flags");
    flags << "c++\n-std=c++17\n-O1\n-fPIC\n-shared\n-w\n-I" << KILN_DEVICE_INCLUDE << "\n";
  }
  std::string build = "c++ -std=c++17 -O1 -fPIC -shared -w -I" + std::string(KILN_DEVICE_INCLUDE) +
                      " -o " + stem + ".so " + stem + ".cpp";
  ASSERT_EQ(std::system(build.c_str()), 0) << build;
  ASSERT_EQ(cu.addKernels((stem + ".so").c_str()), 0);

  constexpr unsigned kBlock = 64, kGrid = 3;
  ASSERT_EQ(cu.init(0), CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(cu.retain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu.push(context), CUDA_SUCCESS);
  CUmodule module = nullptr;
  CUfunction exchange = nullptr;
  // A module holds the entry points its image defines (a PTX text here), as
  // on a GPU: another name is not found, and an image that is neither a
  // cubin nor PTX is refused.
  ASSERT_EQ(cu.loadModule(&module, ".version 8.0\n.target sm_90\n.address_size 64\n"
                                   ".visible .entry kiln_test_exchange(\n)\n{\n}\n"),
            CUDA_SUCCESS);
  CUfunction other = nullptr;
  EXPECT_EQ(cu.getFunction(&other, module, "kiln_test_exchange_v0_8"), CUDA_ERROR_NOT_FOUND);
  CUmodule garbage = nullptr;
  EXPECT_EQ(cu.loadModule(&garbage, "not an image"), CUDA_ERROR_INVALID_IMAGE);
  ASSERT_EQ(cu.getFunction(&exchange, module, "kiln_test_exchange"), CUDA_SUCCESS);
  auto run = [&](int64_t skipping, std::vector<int64_t> &out) -> CUresult {
    CUdeviceptr buffer = 0;
    if (CUresult r = cu.alloc(&buffer, kBlock * kGrid * sizeof(int64_t)); r != CUDA_SUCCESS)
      return r;
    void *args[] = {&buffer, &skipping};
    if (CUresult r = cu.launch(exchange, kGrid, 1, 1, kBlock, 1, 1, 0, nullptr, args, nullptr);
        r != CUDA_SUCCESS)
      return r;
    out.assign(kBlock * kGrid, -1);
    if (CUresult r = cu.copyOut(out.data(), buffer, out.size() * sizeof(int64_t), nullptr);
        r != CUDA_SUCCESS)
      return r;
    return cu.synchronize(nullptr);
  };
  std::vector<int64_t> out;
  ASSERT_EQ(run(0, out), CUDA_SUCCESS);
  for (unsigned b = 0; b < kGrid; ++b)
    for (unsigned t = 0; t < kBlock; ++t)
      EXPECT_EQ(out[b * kBlock + t], (kBlock - 1 - t) + 1000 * b) << "block " << b << " thread " << t;
  EXPECT_EQ(run(5, out), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(run(0, out), CUDA_ERROR_LAUNCH_FAILED) << "a launch failure is sticky";
  // A block larger than kiln's kernels are built for is refused at the call.
  void *none[] = {nullptr, nullptr};
  EXPECT_EQ(cu.launch(exchange, 1, 1, 1, 512, 1, 1, 0, nullptr, none, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUcontext popped = nullptr;
  EXPECT_EQ(cu.pop(&popped), CUDA_SUCCESS);
  EXPECT_EQ(cu.release(0), CUDA_SUCCESS);
  // A reset context runs it again (the runtime's own models recover the same way).
  ASSERT_EQ(cu.reset(0), CUDA_SUCCESS);
  ASSERT_EQ(cu.retain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu.push(context), CUDA_SUCCESS);
  EXPECT_EQ(run(0, out), CUDA_SUCCESS);
  EXPECT_EQ(out[1], kBlock - 2);
  EXPECT_EQ(cu.pop(&popped), CUDA_SUCCESS);
  EXPECT_EQ(cu.release(0), CUDA_SUCCESS);
  std::system(("rm -rf " + std::string(folder)).c_str());
}

} // namespace
