//===- EncoderModel.h - the runtime tests' compiled encoder ------*- C++ -*-===//
//
// The torch encoder the build compiles for the runtime tests (host emulation
// and sm_90; test/CMakeLists.txt), and inputs for it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_RUNTIME_ENCODERMODEL_H
#define KILN_TEST_RUNTIME_ENCODERMODEL_H

#include "kiln/runtime.hpp"

#include <cstdlib>
#include <random>

namespace kiln::test {

/// Its path: $KILN_TEST_ENCODER where set (tools/gpu-check.sh runs these
/// tests on the GPU machine, with the artifact carried there), else the
/// build's.
#ifdef KILN_TEST_ENCODER
inline const char *const kEncoder =
    std::getenv("KILN_TEST_ENCODER") ? std::getenv("KILN_TEST_ENCODER") : KILN_TEST_ENCODER;
#else
inline const char *const kEncoder =
    std::getenv("KILN_TEST_ENCODER") ? std::getenv("KILN_TEST_ENCODER") : "";
#endif

/// An input of the encoder (x: f32[batch, seq, 16]) filled from `seed`.
inline HostTensor encoderInput(int batch, int seq, unsigned seed) {
  HostTensor x(KILN_F32, {batch, seq, 16});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < x.numel(); ++i)
    x.as<float>()[i] = dist(rng);
  return x;
}

} // namespace kiln::test

#endif // KILN_TEST_RUNTIME_ENCODERMODEL_H
