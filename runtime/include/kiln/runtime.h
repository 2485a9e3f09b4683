/*===- kiln/runtime.h - kiln's stable C API -------------------------------===
 *
 * The C interface of libkiln_runtime. Every function returns a kiln_status_t;
 * results come back through out_ parameters; no C++ exception crosses this
 * boundary. The API grows with the artifact loader (see docs/architecture.md).
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>

#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes; they mirror absl::StatusCode where one fits. */
typedef enum kiln_status_t {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 3,
  KILN_NOT_FOUND = 5,
  KILN_FAILED_PRECONDITION = 9,
  KILN_UNIMPLEMENTED = 12,
  KILN_INTERNAL = 13,
  KILN_UNAVAILABLE = 14,
} kiln_status_t;

/* The runtime's version, "MAJOR.MINOR.PATCH". */
KILN_API const char *kiln_runtime_version(void);

/* The number of CUDA devices. With no CUDA driver installed, or none usable,
 * returns KILN_UNAVAILABLE and sets *out_count to 0; kiln_last_error() says why. */
KILN_API kiln_status_t kiln_cuda_device_count(int *out_count);

/* Human-readable detail of the last failed call on this thread ("" if none). */
KILN_API const char *kiln_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */
