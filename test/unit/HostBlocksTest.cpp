// kiln_device.h's threaded host blocks (KILN_HOST_BLOCK_THREADS, the mode the
// fake CUDA driver builds every launch in): barriers and warp shuffles meet,
// a read that lacks its barrier is caught by the threads' order, and a barrier
// some threads skip is a fault rather than a hang. Built at 64 threads (two
// whole warps), so the warp paths run.

#include "kiln/device/kiln_device.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kThreads = KILN_HOST_BLOCK_THREADS;
static_assert(kThreads == 64, "this test is built at 64 threads per block");

/// Runs `grid` blocks of `body` and returns the fault ("" none).
template <typename F> std::string runBlocks(int64_t grid, F body) {
  kiln_host_block_fault_checked = 1;
  kiln_host_block_fault[0] = '\0';
  kiln_run_blocks(grid, body);
  return kiln_host_block_fault;
}

TEST(HostBlocks, EveryThreadRunsWithItsIndex) {
  std::vector<int64_t> seen(3 * kThreads, -1);
  EXPECT_EQ(runBlocks(3, [&] {
              seen[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x + 1000 * blockIdx.x;
            }),
            "");
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(seen[b * kThreads + t], t + 1000 * b);
}

TEST(HostBlocks, BlockReduceMeetsAtItsBarriersAndShuffles) {
  std::vector<float> sums(4, 0.0f);
  EXPECT_EQ(runBlocks(4, [&] {
              __shared__ float scratch[KILN_MAX_BLOCK];
              float v = static_cast<float>(blockIdx.x * kThreads + threadIdx.x);
              float r = kiln_block_reduce(v, [](float a, float b) { return a + b; }, scratch);
              if (threadIdx.x == kThreads - 1) // every thread has it, not only thread 0
                sums[blockIdx.x] = r;
            }),
            "");
  for (int b = 0; b < 4; ++b)
    EXPECT_EQ(sums[b], static_cast<float>(b * kThreads * kThreads + kThreads * (kThreads - 1) / 2));
}

TEST(HostBlocks, SharedMemoryIsTheBlocksAcrossABarrier) {
  std::vector<int64_t> out(2 * kThreads);
  EXPECT_EQ(runBlocks(2, [&] {
              __shared__ int64_t tile[kThreads];
              tile[threadIdx.x] = threadIdx.x * 10 + blockIdx.x;
              __syncthreads();
              out[blockIdx.x * kThreads + threadIdx.x] = tile[kThreads - 1 - threadIdx.x];
            }),
            "");
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(out[b * kThreads + t], (kThreads - 1 - t) * 10 + b);
}

// The same exchange without its barrier: the two blocks run the threads in
// opposite orders, so one of them reads slots not yet written in this block.
TEST(HostBlocks, AMissingBarrierGivesAWrongAnswerInOneOrder) {
  std::vector<int64_t> out(2 * kThreads);
  EXPECT_EQ(runBlocks(2, [&] {
              __shared__ int64_t tile[kThreads];
              tile[threadIdx.x] = threadIdx.x * 10 + blockIdx.x;
              out[blockIdx.x * kThreads + threadIdx.x] = tile[kThreads - 1 - threadIdx.x];
            }),
            "");
  int wrong = 0;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < kThreads; ++t)
      wrong += out[b * kThreads + t] != (kThreads - 1 - t) * 10 + b;
  EXPECT_GT(wrong, 0);
}

TEST(HostBlocks, ABarrierSomeThreadsSkipIsAFault) {
  EXPECT_EQ(runBlocks(2, [&] {
              if (threadIdx.x < 5)
                __syncthreads();
            }),
            "block 0 of 64 threads: 5 wait at __syncthreads, 0 at a warp shuffle, 59 have returned");
  // A shuffle half a warp takes.
  EXPECT_EQ(runBlocks(1, [&] {
              if (threadIdx.x % 32 < 16)
                (void)kiln_shfl_xor(1.0f, 1);
            }),
            "block 0 of 64 threads: 0 wait at __syncthreads, 32 at a warp shuffle, 32 have returned");
  // The next launch is whole again: fibers start afresh.
  EXPECT_EQ(runBlocks(1, [&] { __syncthreads(); }), "");
}

TEST(HostBlocksDeathTest, AnUncheckedFaultAborts) {
  EXPECT_DEATH(
      {
        kiln_host_block_fault_checked = 0;
        kiln_run_blocks(1, [&] {
          if (threadIdx.x == 0)
            __syncthreads();
        });
      },
      "a barrier not every thread reaches: block 0 of 64 threads: 1 wait at __syncthreads");
}

} // namespace
