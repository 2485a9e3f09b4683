// NVRTC compiles without a GPU, so these run everywhere CUDA's toolkit is installed.

#include "kiln/nvrtc/Nvrtc.h"

#include <gtest/gtest.h>
#include <nvrtc.h>

namespace {

const char *kAxpy = R"(
extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

TEST(Nvrtc, CompilesCubinAndPtxForSm80AndSm90) {
  for (int sm : {80, 90}) {
    auto result = kiln::nvrtc::compileWithNvrtc(kAxpy, "axpy.cu", {sm, {}});
    ASSERT_TRUE(result.ok()) << result.status();
    // A cubin is an ELF image; PTX names its target.
    ASSERT_GE(result->cubin.size(), 4u);
    EXPECT_EQ(result->cubin.substr(0, 4), "\x7f"
                                          "ELF");
    EXPECT_NE(result->ptx.find(".target sm_" + std::to_string(sm)), std::string::npos);
    EXPECT_NE(result->ptx.find("axpy"), std::string::npos);
  }
}

// compileWithNvrtc takes the PTX from its one compile for sm_<N>. It must be
// the PTX a compile for the virtual compute_<N> gives, the one a newer GPU
// JIT-compiles (before, kiln compiled twice to get it).
TEST(Nvrtc, PtxIsWhatAVirtualArchitectureCompileGives) {
  auto result = kiln::nvrtc::compileWithNvrtc(kAxpy, "axpy.cu", {90, {}});
  ASSERT_TRUE(result.ok()) << result.status();
  nvrtcProgram program = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&program, kAxpy, "axpy.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  const char *options[] = {"--gpu-architecture=compute_90", "--std=c++17", "-default-device",
                           "--device-int128"};
  ASSERT_EQ(nvrtcCompileProgram(program, 4, options), NVRTC_SUCCESS);
  size_t size = 0;
  ASSERT_EQ(nvrtcGetPTXSize(program, &size), NVRTC_SUCCESS);
  std::string ptx(size, '\0');
  ASSERT_EQ(nvrtcGetPTX(program, ptx.data()), NVRTC_SUCCESS);
  nvrtcDestroyProgram(&program);
  if (!ptx.empty() && ptx.back() == '\0')
    ptx.pop_back();
  EXPECT_EQ(result->ptx, ptx);
}

TEST(Nvrtc, DefinesSpecializeTheSource) {
  const char *source = R"(
#ifndef KILN_SYM_n
#error "KILN_SYM_n must be defined"
#endif
extern "C" __global__ void fill(float *y) { y[threadIdx.x] = KILN_SYM_n; }
)";
  auto missing = kiln::nvrtc::compileWithNvrtc(source, "fill.cu", {90, {}});
  EXPECT_FALSE(missing.ok());
  auto defined = kiln::nvrtc::compileWithNvrtc(source, "fill.cu", {90, {"-DKILN_SYM_n=8"}});
  EXPECT_TRUE(defined.ok()) << defined.status();
}

TEST(Nvrtc, ErrorsNameTheKernelAndCarryTheLog) {
  auto result = kiln::nvrtc::compileWithNvrtc("extern \"C\" __global__ void k() { nope(); }",
                                           "broken_kernel.cu", {90, {}});
  ASSERT_FALSE(result.ok());
  std::string message(result.status().message());
  EXPECT_NE(message.find("broken_kernel.cu"), std::string::npos) << message;
  EXPECT_NE(message.find("nope"), std::string::npos) << message;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Nvrtc, ReportsItsVersion) {
  std::string version = kiln::nvrtc::nvrtcVersion();
  EXPECT_NE(version.find('.'), std::string::npos);
  EXPECT_NE(version, "0.0");
}

} // namespace
