/*===- kiln/runtime.h - kiln's stable C API (version 1) -------------------===
 *
 * The C interface of libkiln_runtime: load a compiled model (a .kiln artifact, a
 * .so from kiln-compile, or artifact bytes in memory), ask for its inputs and
 * outputs, run it. C99; only kiln_* symbols are exported.
 *
 * Errors: every function that can fail returns a kiln_status_t; results come back
 * through out_ parameters. kiln_last_error() holds the one-line reason for the
 * last failure on the calling thread; the string stays valid until the next
 * kiln_* call on that thread. No C++ exception crosses this boundary: an
 * unexpected one becomes KILN_INTERNAL.
 *
 * Ownership: a model owns the strings it hands out (names, descriptions) until
 * kiln_model_destroy. Input and output buffers stay the caller's.
 *
 * Threads: a loaded model is immutable and may run from many threads at once.
 * A context (kiln_context_t) is one thread's or one stream's: it keeps the arena,
 * the staging buffers and the plan of the shapes it ran last, so a call in steady
 * state allocates nothing; one context must not run on two threads at once.
 * kiln_model_run takes a pooled context per call. Destroy a model's contexts
 * before the model.
 *
 * Synchronization with the caller's CUDA stream (CUDA backend): a run is ordered
 * after all work already queued on kiln_run_options_t.stream (NULL: the legacy
 * default stream), and the call returns only when the run's work on that stream
 * is complete: outputs are written, inputs may be reused, and nothing of the run
 * is still in flight. Work queued on other streams is not waited for. A run
 * without a stream runs on a non-blocking stream of its context, after an
 * event recorded on the legacy stream (kiln queues no work of its own there
 * and captures only non-blocking streams, so its CUDA graphs never make the
 * legacy stream unusable to the rest of the process; while the application
 * captures a blocking stream of its own, pass a stream).
 *
 * Versioning: KILN_API_VERSION_MAJOR changes only when a function or struct field
 * changes meaning or disappears; MINOR when something is added. Structs that
 * may grow begin with `struct_size`: the caller sets it to sizeof(the struct) as
 * its header declares it, and the runtime reads only fields that lie within it,
 * so a program built against an older header keeps working.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#define KILN_API_VERSION_MAJOR 1
#define KILN_API_VERSION_MINOR 7
/* MAJOR * 10000 + MINOR, as kiln_api_version() returns it. */
#define KILN_API_VERSION (KILN_API_VERSION_MAJOR * 10000 + KILN_API_VERSION_MINOR)

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes; they mirror absl::StatusCode where one fits. */
typedef enum kiln_status_t {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 3,
  KILN_NOT_FOUND = 5,
  /* A tensor over the size limit, or memory that could not be had (API 1.1). */
  KILN_RESOURCE_EXHAUSTED = 8,
  KILN_FAILED_PRECONDITION = 9,
  KILN_OUT_OF_RANGE = 11,
  KILN_UNIMPLEMENTED = 12,
  KILN_INTERNAL = 13,
  KILN_UNAVAILABLE = 14
} kiln_status_t;

/* Element types (the artifact schema's order). Sub-byte integers take a byte per
 * element in buffers. */
typedef enum kiln_dtype_t {
  KILN_F16 = 0, KILN_BF16 = 1, KILN_F32 = 2, KILN_F64 = 3, KILN_BOOL = 4,
  KILN_I8 = 5, KILN_I16 = 6, KILN_I32 = 7, KILN_I64 = 8,
  KILN_U8 = 9, KILN_U16 = 10, KILN_U32 = 11, KILN_U64 = 12,
  KILN_F8E4M3FN = 13, KILN_F8E4M3FNUZ = 14, KILN_F8E5M2 = 15, KILN_F8E5M2FNUZ = 16,
  KILN_F4E2M1FN = 17,
  KILN_I4 = 18, KILN_U4 = 19, KILN_I2 = 20, KILN_U2 = 21
} kiln_dtype_t;

/* Where a model runs. AUTO picks CUDA when a device is present and otherwise host
 * emulation (generated kernels compiled for the CPU, library ops on the reference
 * kernels); kiln_model_backend() says which it chose. */
typedef enum kiln_backend_t {
  KILN_BACKEND_AUTO = 0,
  KILN_BACKEND_CUDA = 1,
  KILN_BACKEND_HOST = 2
} kiln_backend_t;

#define KILN_MAX_RANK 8

/* A tensor passed to or from kiln_model_run: dense, row-major. For an output,
 * `data` and `size_bytes` describe the caller's buffer and the run fills in
 * dtype, rank and dims. */
typedef struct kiln_tensor_t {
  kiln_dtype_t dtype;
  int32_t rank;
  int64_t dims[KILN_MAX_RANK];
  void *data;
  size_t size_bytes;
} kiln_tensor_t;

/* An input or output of a model. dims[i] is -1 where the dim is not fixed, and
 * dim_names[i] then spells it ("batch", "2 * seq", "?" when it depends on data).
 * The strings live as long as the model. */
typedef struct kiln_tensor_info_t {
  const char *name;
  kiln_dtype_t dtype;
  int32_t rank;
  int64_t dims[KILN_MAX_RANK];
  const char *dim_names[KILN_MAX_RANK];
} kiln_tensor_info_t;

typedef struct kiln_model_t kiln_model_t;
typedef struct kiln_context_t kiln_context_t;
typedef struct kiln_profile_t kiln_profile_t;

/* Options of one run; NULL means the defaults. Extensible: set struct_size to
 * sizeof(kiln_run_options_t) (KILN_RUN_OPTIONS_INIT does). */
typedef struct kiln_run_options_t {
  size_t struct_size;
  /* CUDA backend: the stream the run is ordered on (a CUstream); NULL is the
   * legacy default stream. See "Synchronization" above. */
  void *stream;
  /* Nonzero: input and output data are device pointers (CUDA backend). */
  int device_buffers;
  /* When set, the run appends one event per step (kernel, library call) to it. */
  kiln_profile_t *profile;
  /* The largest tensor the run may create, in bytes; 0 is the default,
   * KILN_DEFAULT_MAX_TENSOR_BYTES. A larger intermediate or output (sizes follow
   * the inputs' dims and data) fails the run with KILN_RESOURCE_EXHAUSTED before
   * anything is allocated. (API 1.1) */
  uint64_t max_tensor_bytes;
} kiln_run_options_t;

#define KILN_DEFAULT_MAX_TENSOR_BYTES (UINT64_C(1) << 36) /* 64 GiB */
#define KILN_RUN_OPTIONS_INIT {sizeof(kiln_run_options_t), NULL, 0, NULL, 0}

/* The runtime's version, "MAJOR.MINOR.PATCH" (the kiln release it came with). */
KILN_API const char *kiln_runtime_version(void);

/* The C API version the library implements: KILN_API_VERSION of its header. A
 * program may check that the major part matches the header it was built with. */
KILN_API int kiln_api_version(void);

/* The number of CUDA devices. With no CUDA driver installed, or none usable,
 * returns KILN_UNAVAILABLE and sets *out_count to 0; kiln_last_error() says why. */
KILN_API kiln_status_t kiln_cuda_device_count(int *out_count);

/* Human-readable detail of the last failed call on this thread ("" if none). */
KILN_API const char *kiln_last_error(void);

/* Loads a .kiln artifact (mapped, not copied) or a model .so from kiln-compile. */
KILN_API kiln_status_t kiln_model_load_file(const char *path, kiln_backend_t backend,
                                            kiln_model_t **out_model);
/* Loads artifact bytes; they are copied, so the caller may free them afterwards. */
KILN_API kiln_status_t kiln_model_load_memory(const void *data, size_t size,
                                              kiln_backend_t backend,
                                              kiln_model_t **out_model);
/* Loads artifact bytes in place: they must stay valid and unchanged until the
 * model is destroyed (a model .so's own read-only data; see kiln-compile). */
KILN_API kiln_status_t kiln_model_load_embedded(const void *data, size_t size,
                                                kiln_backend_t backend,
                                                kiln_model_t **out_model);
/* How to load a model (since 1.4): the backend and, for CUDA, the device.
 * Start from KILN_LOAD_OPTIONS_INIT; struct_size is sizeof the struct the
 * caller was built with, so fields added later keep their defaults. */
typedef struct kiln_load_options_t {
  size_t struct_size;
  kiln_backend_t backend;
  /* The CUDA device ordinal (0 is the first); AUTO falls back to host
   * emulation, saying why, when that device cannot run the model. */
  int device;
} kiln_load_options_t;
#define KILN_LOAD_OPTIONS_INIT {sizeof(kiln_load_options_t), KILN_BACKEND_AUTO, 0}

/* kiln_model_load_file and kiln_model_load_memory with options (NULL: the
 * defaults). Since 1.4. */
KILN_API kiln_status_t kiln_model_load_file_with(const char *path,
                                                 const kiln_load_options_t *options,
                                                 kiln_model_t **out_model);
KILN_API kiln_status_t kiln_model_load_memory_with(const void *data, size_t size,
                                                   const kiln_load_options_t *options,
                                                   kiln_model_t **out_model);
/* Frees the model (NULL is a no-op). Destroy its contexts first; destroying a
 * model twice is undefined, as free() twice is. */
KILN_API void kiln_model_destroy(kiln_model_t *model);

KILN_API kiln_status_t kiln_model_backend(const kiln_model_t *model,
                                          kiln_backend_t *out_backend);
/* The CUDA device ordinal the model runs on, or -1 in host emulation.
 * Since 1.5. */
KILN_API kiln_status_t kiln_model_device(const kiln_model_t *model, int32_t *out_device);
/* Whether requests may be batched along symbol `symbol` (joined along the
 * first dim of every input, the outputs split the same way): 1 when it is the
 * first dim of every input and output and the compiler proved that row i of
 * every output depends on row i of the inputs alone, else 0 (not proven, or
 * no such symbol). Since 1.6. */
KILN_API kiln_status_t kiln_model_rows_independent(const kiln_model_t *model, const char *symbol,
                                                   int *out_independent);
/* Which backend runs the model and why, e.g. "cuda on NVIDIA H200 (sm_90)" or
 * "host emulation (no CUDA driver: ...)"; the string lives as long as the model. */
KILN_API kiln_status_t kiln_model_backend_description(const kiln_model_t *model,
                                                      const char **out_description);
KILN_API kiln_status_t kiln_model_num_inputs(const kiln_model_t *model, size_t *out_count);
KILN_API kiln_status_t kiln_model_num_outputs(const kiln_model_t *model, size_t *out_count);
KILN_API kiln_status_t kiln_model_input_info(const kiln_model_t *model, size_t index,
                                             kiln_tensor_info_t *out_info);
KILN_API kiln_status_t kiln_model_output_info(const kiln_model_t *model, size_t index,
                                              kiln_tensor_info_t *out_info);

/* The outputs' dtypes, ranks, dims and size_bytes for these inputs, without
 * running (data is left alone). Fails for an output whose size depends on data. */
KILN_API kiln_status_t kiln_model_output_shapes(const kiln_model_t *model,
                                                const kiln_tensor_t *inputs,
                                                size_t num_inputs, kiln_tensor_t *outputs,
                                                size_t num_outputs);

/* Runs the model with a context from the model's pool; any thread. Inputs are
 * checked against the model's guards (dtype, rank, every dim); a violation is
 * KILN_INVALID_ARGUMENT naming the input, the dim and what was expected. An
 * output buffer smaller than the result is KILN_OUT_OF_RANGE, with the output's
 * dims and needed size_bytes filled in. */
KILN_API kiln_status_t kiln_model_run(const kiln_model_t *model, const kiln_tensor_t *inputs,
                                      size_t num_inputs, kiln_tensor_t *outputs,
                                      size_t num_outputs, const kiln_run_options_t *options);

/* A context for runs of `model` on one thread or stream (see "Threads" above).
 * The model must outlive it. */
KILN_API kiln_status_t kiln_context_create(const kiln_model_t *model,
                                           kiln_context_t **out_context);
KILN_API void kiln_context_destroy(kiln_context_t *context);

/* As kiln_model_run, in `context`: its arena and staging buffers are reused, and
 * the memory plan of the last shapes is kept, so repeated calls allocate nothing
 * on kiln's side (host steps that run on the reference kernels still do). */
KILN_API kiln_status_t kiln_context_run(kiln_context_t *context, const kiln_tensor_t *inputs,
                                        size_t num_inputs, kiln_tensor_t *outputs,
                                        size_t num_outputs, const kiln_run_options_t *options);

/* The variant (kernels specialized for symbol values: kiln-compile --buckets)
 * the context's last run used, as "batch=8,seq=128", or "generic"; valid
 * until the context's next run or destruction. Since 1.2. */
KILN_API kiln_status_t kiln_context_variant(const kiln_context_t *context,
                                            const char **out_name);

/* Installs variants compiled after the model was (a variant pack,
 * runtime/schema/kiln_variants.fbs, for exactly this artifact: the JIT library
 * makes them). The bytes are copied. Safe while other threads run the model:
 * calls whose shapes change afterwards may pick the new variants. Variants the
 * model has already are skipped; out_added (may be NULL) counts the others.
 * Since 1.2. */
KILN_API kiln_status_t kiln_model_add_variants(kiln_model_t *model, const void *pack, size_t size,
                                               size_t *out_added);

/* Called on the running thread when a call binds shapes its context did not
 * run last and no variant has them (the generic kernels run): symbol_values
 * holds the value of every symbol of the model, in artifact order (-1 when
 * unbound). It must return quickly and not call back into the model. Set it
 * before the model runs; NULL removes it. Since 1.2. */
typedef void (*kiln_variant_miss_fn)(void *user_data, const int64_t *symbol_values,
                                     size_t num_symbols);
KILN_API kiln_status_t kiln_model_set_variant_miss_handler(kiln_model_t *model,
                                                           kiln_variant_miss_fn handler,
                                                           void *user_data);

/* Device memory for runs with device_buffers (CUDA backend): `bytes` on the
 * model's device, in the device's primary context (the one the CUDA runtime
 * API and frameworks such as torch use, so their pointers and these mix).
 * For callers without a CUDA library of their own (the Python package). A
 * model on the host backend has no device: KILN_FAILED_PRECONDITION. Free with
 * kiln_model_device_free on the same model, before destroying it. Since 1.3. */
KILN_API kiln_status_t kiln_model_device_alloc(const kiln_model_t *model, size_t bytes,
                                               void **out_device_ptr);
KILN_API kiln_status_t kiln_model_device_free(const kiln_model_t *model, void *device_ptr);
/* Synchronous copies between host memory and the model's device, ordered
 * after the legacy default stream's earlier work (as runs without a stream;
 * the copies themselves go on a non-blocking stream of the model's). Since
 * 1.3. */
KILN_API kiln_status_t kiln_model_copy_to_device(const kiln_model_t *model, void *device_dst,
                                                 const void *host_src, size_t bytes);
KILN_API kiln_status_t kiln_model_copy_to_host(const kiln_model_t *model, void *host_dst,
                                               const void *device_src, size_t bytes);

/* Bytes of the arena one run with these inputs uses, and the sum of its
 * intermediates' sizes had each its own buffer. */
KILN_API kiln_status_t kiln_model_memory(const kiln_model_t *model, const kiln_tensor_t *inputs,
                                         size_t num_inputs, size_t *out_arena_bytes,
                                         size_t *out_unplanned_bytes);

/* Per-step timings, filled by runs given this profile. kind is what ran the
 * step: "kernel" (a generated kernel), "cublasLt", "cudnn", "copy" (a
 * reshape to a run-time shape inside a loop or branch on CUDA: the shape read
 * back, the data copied on the device), "host" (the reference kernels; a host round trip on CUDA),
 * "host:cublasLt-refused" / "host:cudnn-refused" (the same, because the
 * library refused the step: no algorithm, or a call it does not support),
 * "shape" (a shape step), "sync" (a size the device computed, read back
 * alone), "view" (a reshape that names its input's bytes, at the top level
 * also one to a run-time shape after its shape is read back) or
 * "control" (If, Loop, Scan; the steps of their bodies follow as
 * "Loop/NAME", with no time of their own);
 * times are microseconds from the profile's creation.
 * Each run also records one event of kind "variant" (duration 0) named by the
 * variant it ran (as kiln_context_variant). */
KILN_API kiln_status_t kiln_profile_create(kiln_profile_t **out_profile);
KILN_API void kiln_profile_destroy(kiln_profile_t *profile);
KILN_API size_t kiln_profile_num_events(const kiln_profile_t *profile);
KILN_API kiln_status_t kiln_profile_event(const kiln_profile_t *profile, size_t index,
                                          const char **out_name, const char **out_kind,
                                          double *out_start_us, double *out_duration_us);
/* What event `index`'s step had to move and compute, at the sizes of its run:
 * the bytes of its inputs read once and its results written once, and its
 * floating-point operations (matmuls 2 M N K, convolutions, kernels that state
 * theirs such as attention); -1 where not known (an operation count for most
 * kernels: a few per element; nested steps and variant events). Divided by
 * the event's duration: the achieved GB/s and TFLOP/s (kiln-run --profile);
 * the same counts as kiln-compile --report's roofline. */
KILN_API kiln_status_t kiln_profile_event_work(const kiln_profile_t *profile, size_t index,
                                               int64_t *out_bytes, double *out_flops);

/* Token generation (API 1.7) with a decoder exported with its KV cache, the
 * form torch and optimum export: inputs input_ids [batch, tokens] (int64),
 * optionally attention_mask [batch, past + tokens] and position_ids [batch,
 * tokens], and per cache tensor past_key_values.N.key|value [batch, heads,
 * past, head size]; outputs logits [batch, tokens, vocabulary] and
 * present.N.key|value. The prompt runs as one call with empty pasts, then one
 * call per new token with the last call's presents as pasts; position ids
 * follow the mask as Hugging Face computes them, so a left-padded batch
 * generates what each prompt would alone. Each new token is the last
 * position's argmax (temperature 0; the first of equal values) or sampled
 * with temperature, top-k and top-p from a generator seeded with `seed`. A
 * sequence that produces a stop token is done; generation ends when all are
 * or after max_new_tokens. on_tokens (optional) sees each step's tokens, one
 * per sequence, and ends generation by returning nonzero.
 * Start from KILN_GENERATE_OPTIONS_INIT. */
typedef struct kiln_generate_options_t {
  size_t struct_size;
  int32_t max_new_tokens;
  const int64_t *stop_tokens;
  size_t num_stop_tokens;
  float temperature; /* 0: greedy */
  int32_t top_k;     /* 0: every token */
  float top_p;       /* 1: every token; 0: the likeliest alone */
  uint64_t seed;
  int (*on_tokens)(void *user, size_t step, const int64_t *tokens, size_t batch);
  void *user;
} kiln_generate_options_t;

#define KILN_GENERATE_OPTIONS_INIT                                                               \
  {sizeof(kiln_generate_options_t), 16, NULL, 0, 0.0f, 0, 1.0f, 0, NULL, NULL}

/* Generates up to options->max_new_tokens tokens after each of `batch` prompts
 * of `prompt_length` ids (attention_mask, same shape, may be NULL: all 1).
 * out_tokens (may be NULL when max_new_tokens is 0) holds [batch,
 * max_new_tokens]: each sequence's new tokens, then,
 * after it stopped, the first stop token (0 without one); out_steps (may be
 * NULL) is the number of steps run. As exported, the cache passes through
 * the host each step; compiled with --kv-cache-in-place it is one buffer per
 * cache for the whole generation (device memory on CUDA); compiled with
 * --sample-on-device the model chooses the tokens (next_tokens, from
 * sample_* inputs kiln_generate fills: the greedy choice is the same, a
 * sampled stream another for a seed) and only they are copied back. Prompts are padded on the
 * left, or on either side for a model that takes a mask and no position_ids
 * (onnxruntime-genai's GroupQueryAttention: it gets them right-aligned, the
 * padding after each row's tokens); a mask with a 0 between 1s is an error;
 * NaN logits are an error naming the step. Since 1.7. */
KILN_API kiln_status_t kiln_generate(const kiln_model_t *model, const int64_t *input_ids,
                                     const int64_t *attention_mask, size_t batch,
                                     size_t prompt_length,
                                     const kiln_generate_options_t *options, int64_t *out_tokens,
                                     size_t *out_steps);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */
