// The C API answers cleanly with or without a GPU.

#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// Load options are checked before anything is read: their size, then the
// device ordinal; a device the driver lacks is UNAVAILABLE on CUDA, and the
// host backend has no device to choose.
TEST(CApi, LoadOptionsAreChecked) {
  kiln_model_t *model = nullptr;
  kiln_load_options_t options = KILN_LOAD_OPTIONS_INIT;
  options.struct_size = sizeof(size_t);
  EXPECT_EQ(kiln_model_load_file_with("x.kiln", &options, &model), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("struct_size"), std::string::npos)
      << kiln_last_error();
  options = KILN_LOAD_OPTIONS_INIT;
  options.device = -1;
  EXPECT_EQ(kiln_model_load_file_with("x.kiln", &options, &model), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("options->device is -1"), std::string::npos)
      << kiln_last_error();
  EXPECT_EQ(model, nullptr);
#ifdef KILN_TEST_POINTWISE
  options = KILN_LOAD_OPTIONS_INIT;
  options.backend = KILN_BACKEND_CUDA;
  options.device = 1000;
  EXPECT_EQ(kiln_model_load_file_with(KILN_TEST_POINTWISE, &options, &model), KILN_UNAVAILABLE);
  EXPECT_NE(std::string(kiln_last_error()).find("CUDA"), std::string::npos) << kiln_last_error();
  options.backend = KILN_BACKEND_HOST;
  ASSERT_EQ(kiln_model_load_file_with(KILN_TEST_POINTWISE, &options, &model), KILN_OK)
      << kiln_last_error();
  int32_t device = 7;
  EXPECT_EQ(kiln_model_device(model, &device), KILN_OK);
  EXPECT_EQ(device, -1) << "host emulation runs on no device";
  EXPECT_EQ(kiln_model_device(model, nullptr), KILN_INVALID_ARGUMENT);
  kiln_model_destroy(model);
#endif
}

} // namespace
