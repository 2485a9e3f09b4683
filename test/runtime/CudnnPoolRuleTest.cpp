// kiln::ops::cudnnPools, the one rule for which pools cuDNN computes: what
// kiln-form-kernels keeps as a library step and the CUDA executor hands cuDNN.

#include "kiln/ops/CudnnPool.h"

#include <gtest/gtest.h>

namespace {

using kiln::ops::cudnnPools;
using kiln::ops::PoolQuery;

/// ResNet's stem pool: 3x3, stride 2, pad 1, 112 -> 56.
PoolQuery stemPool() {
  PoolQuery q;
  q.cudnnType = true;
  q.kernel = {3, 3};
  q.strides = {2, 2};
  q.pads = {1, 1, 1, 1};
  q.in = {1, 64, 112, 112};
  q.out = {1, 64, 56, 56};
  return q;
}

TEST(CudnnPoolRule, TakesMaxAndAveragePoolsOfTheFloorFormula) {
  EXPECT_TRUE(cudnnPools(stemPool()));
  PoolQuery q = stemPool(); // a dim only known at run time: floor mode holds by construction
  q.in[0] = q.out[0] = std::nullopt;
  q.in[2] = q.out[2] = std::nullopt;
  EXPECT_TRUE(cudnnPools(q));
  q = stemPool(); // 1-D and 3-D
  q.kernel = {3}, q.strides = {2}, q.pads = {1, 1};
  q.in = {1, 64, 112}, q.out = {1, 64, 56};
  EXPECT_TRUE(cudnnPools(q));
  q.kernel = {3, 3, 3}, q.strides = {}, q.pads = {};
  q.in = {1, 8, 5, 5, 5}, q.out = {1, 8, 3, 3, 3};
  EXPECT_TRUE(cudnnPools(q));
}

TEST(CudnnPoolRule, CeilModePassesOnlyWhereTheDimsShowNoExtraWindow) {
  PoolQuery q = stemPool();
  q.ceilMode = true;
  q.in = {1, 64, 113, 113}; // (113 + 2 - 3) / 2 = 56 exactly: ceil and floor give 57
  q.out = {1, 64, 57, 57};
  EXPECT_TRUE(cudnnPools(q));
  q.in = {1, 64, 112, 112}; // (112 + 2 - 3) / 2 = 55.5: ceil gives 57, floor 56
  EXPECT_FALSE(cudnnPools(q));
  q.in = {1, 64, 113, std::nullopt}; // unknown: nothing shows it
  q.out = {1, 64, 57, std::nullopt};
  EXPECT_FALSE(cudnnPools(q));
}

TEST(CudnnPoolRule, RefusesWhatCudnnPoolingCannotExpress) {
  auto refused = [](auto change) {
    PoolQuery q = stemPool();
    change(q);
    return !cudnnPools(q);
  };
  EXPECT_TRUE(refused([](PoolQuery &q) { q.lp = true; }));
  EXPECT_TRUE(refused([](PoolQuery &q) { q.cudnnType = false; }));
  EXPECT_TRUE(refused([](PoolQuery &q) { q.dilations = {2, 2}; }));
  EXPECT_TRUE(refused([](PoolQuery &q) { q.pads = {1, 1, 0, 0}; }));       // asymmetric
  EXPECT_TRUE(refused([](PoolQuery &q) { q.pads = {3, 3, 3, 3}; }));       // pad >= window
  EXPECT_TRUE(refused([](PoolQuery &q) { q.kernel = {3}; }));              // rank mismatch
  EXPECT_TRUE(refused([](PoolQuery &q) { q.out = {1, 64, 56}; }));         // result rank
  EXPECT_TRUE(refused([](PoolQuery &q) { q.out[2] = 57; }));               // not floor's dims
  EXPECT_TRUE(refused([](PoolQuery &q) { // no window fits: (0 + 2 - 3) / 2 truncates to 0
    q.in = {1, 64, 0, 0}, q.out = {1, 64, 1, 1};
  }));
  EXPECT_TRUE(refused([](PoolQuery &q) {                                   // 4 spatial dims
    q.kernel = {1, 1, 1, 1}, q.strides = {}, q.pads = {};
    q.in = {1, 1, 2, 2, 2, 2}, q.out = {1, 1, 2, 2, 2, 2};
  }));
}

} // namespace
