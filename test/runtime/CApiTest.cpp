// The C API answers cleanly with or without a GPU.

#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(CApi, ReportsAVersion) {
  std::string version = kiln_runtime_version();
  EXPECT_EQ(std::count(version.begin(), version.end(), '.'), 2) << version;
}

TEST(CApi, DeviceCountIsAnswerOrCleanError) {
  int count = -1;
  kiln_status_t status = kiln_cuda_device_count(&count);
  if (status == KILN_OK) {
    EXPECT_GT(count, 0);
    EXPECT_STREQ(kiln_last_error(), "");
  } else {
    // No driver or no device: a clear reason, never a crash.
    EXPECT_EQ(status, KILN_UNAVAILABLE);
    EXPECT_EQ(count, 0);
    EXPECT_NE(std::string(kiln_last_error()).find("CUDA"), std::string::npos)
        << kiln_last_error();
  }
}

TEST(CApi, NullOutParameterIsAnError) {
  EXPECT_EQ(kiln_cuda_device_count(nullptr), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("out_count"), std::string::npos);
}

} // namespace
