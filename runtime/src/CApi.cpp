//===- CApi.cpp - the C API of libkiln_runtime ----------------------------===//

#include "kiln/runtime.h"

#include "cuda/CudaDriver.h"

#include <string>

namespace {
thread_local std::string lastError;

kiln_status_t toC(const absl::Status &status) {
  lastError = status.ok() ? "" : std::string(status.message());
  switch (status.code()) {
  case absl::StatusCode::kOk:
    return KILN_OK;
  case absl::StatusCode::kInvalidArgument:
    return KILN_INVALID_ARGUMENT;
  case absl::StatusCode::kNotFound:
    return KILN_NOT_FOUND;
  case absl::StatusCode::kFailedPrecondition:
    return KILN_FAILED_PRECONDITION;
  case absl::StatusCode::kUnimplemented:
    return KILN_UNIMPLEMENTED;
  case absl::StatusCode::kUnavailable:
    return KILN_UNAVAILABLE;
  default:
    return KILN_INTERNAL;
  }
}
} // namespace

extern "C" {

const char *kiln_runtime_version(void) { return "0.1.0"; }

kiln_status_t kiln_cuda_device_count(int *out_count) {
  if (!out_count)
    return toC(absl::InvalidArgumentError("kiln_cuda_device_count: out_count is NULL"));
  *out_count = 0;
  auto driver = kiln::rt::CudaDriver::get();
  if (!driver.ok())
    return toC(driver.status());
  auto count = (*driver)->deviceCount();
  if (!count.ok())
    return toC(count.status());
  *out_count = *count;
  return toC(absl::OkStatus());
}

const char *kiln_last_error(void) { return lastError.c_str(); }

} // extern "C"
