/* kiln/jit.h - compile models inside a process that serves them.
 *
 * libkiln_jit links kiln's compiler. It compiles an ONNX (or kiln .mlir) model
 * in-process and hands back a kiln_model_t that runs exactly like a loaded
 * artifact (kiln/runtime.h). When a call arrives with shapes no variant of the
 * model specializes, the generic kernels run at once and the JIT compiles a
 * variant for those shapes on a bounded background pool; when it is ready it is
 * installed into the model (kiln_model_add_variants) and later calls with those
 * shapes run it. However many threads ask, each key compiles once
 * (single-flight).
 *
 * Compiled artifacts and variant packs go to a content-addressed disk cache
 * shared by processes (key: the model's bytes, the options, kiln's version, the
 * target), written atomically (temporary file, then rename); an entry that does
 * not verify is removed with a warning on stderr and rebuilt; the cache is kept
 * under a size bound by evicting the least recently used entries. An in-memory
 * bound keeps the most recently used entries' bytes as well.
 *
 * Threads: every function may be called from any thread. Models belong to the
 * JIT that made them: do not kiln_model_destroy them; they live until every
 * handle of them is given back with kiln_jit_release, or until
 * kiln_jit_destroy, which first waits for background work.
 */
#ifndef KILN_JIT_H
#define KILN_JIT_H

#include "kiln/runtime.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: kiln_jit_options_t.precision, kiln_jit_explain_memory and
 * kiln_jit_release. A library of version 1 ignores precision (it copies only
 * the fields it knows).
 * 3: kiln_jit_options_t.weights, weight_group_size and calibration_dir, and
 * precision "fp8". A library of version 2 ignores the three fields (a
 * caller needing them checks the library it loaded). */
#define KILN_JIT_API_VERSION 3

typedef struct kiln_jit_t kiln_jit_t;

typedef struct kiln_jit_options_t {
  /* sizeof(kiln_jit_options_t): fields past it keep their defaults. */
  size_t struct_size;
  /* The disk cache: NULL or "" for $KILN_CACHE_DIR/jit, else ~/.cache/kiln/jit. */
  const char *cache_dir;
  /* Bytes the disk cache may hold (0: 4 GiB); past it, least recently used
   * entries are removed. */
  uint64_t cache_max_bytes;
  /* Entries (artifacts, variant packs) kept in memory (0: 64). */
  size_t memory_max_entries;
  /* Background compiler threads (0: 2) and queued specializations past which
   * new ones are dropped, counted in the statistics (0: 64). */
  int background_threads;
  size_t queue_limit;
  /* KILN_BACKEND_AUTO (the default), _CUDA or _HOST, as kiln_model_load_file. */
  kiln_backend_t backend;
  /* Nonzero: compile variants for new shapes in the background (default 1). */
  int specialize;
  /* The CUDA device ordinal its models load on (default 0), as
   * kiln_load_options_t's. */
  int device;
  /* kiln-compile --precision for its models: NULL or "" (fp32), "tf32",
   * "fp16", "bf16" or (API 3) "fp8", which needs calibration_dir
   * (docs/precision.md); part of every model's cache key. */
  const char *precision;
  /* kiln-compile --weights for its models (API 3): NULL, "" or "float" (as
   * the model has them), "int8" or "int4" (every matmul by a constant weight
   * matrix quantized, docs/precision.md); part of every model's cache key. */
  const char *weights;
  /* kiln-compile --group-size with int8/int4 weights (API 3): 0 for 128, else
   * a power of 2 from 16 to 65536. */
  int64_t weight_group_size;
  /* kiln-compile --calibrate with precision "fp8" (API 3): a folder of data
   * sets (test_data_set_N/input_K.pb or .npy) the activations' FP8 scales
   * come from; what its files hold when a model is compiled is part of that
   * model's cache key. fp8 artifacts carry sm_89 and sm_90 cubins (FP8
   * tensor cores): an older device cannot load them. */
  const char *calibration_dir;
} kiln_jit_options_t;

/* Fills `options` with the defaults. */
KILN_API void kiln_jit_options_init(kiln_jit_options_t *options);

/* options may be NULL (the defaults). */
KILN_API kiln_status_t kiln_jit_create(const kiln_jit_options_t *options, kiln_jit_t **out_jit);
/* Waits for background work, then destroys the JIT and every model it made.
 * A JIT kept until the process ends needs no call: at exit (exit() or a return
 * from main) its queued specializations are dropped and the running ones
 * finish before the process's libraries are finalized. */
KILN_API void kiln_jit_destroy(kiln_jit_t *jit);

/* Compiles (or finds in a cache) the model in the regular file at `path`
 * (.onnx or .mlir; a folder, FIFO or device is KILN_INVALID_ARGUMENT). An ONNX
 * model's external data is read from the file's folder. The same model asked
 * for twice gives the same handle. */
KILN_API kiln_status_t kiln_jit_compile_file(kiln_jit_t *jit, const char *path,
                                             kiln_model_t **out_model);
/* The same from bytes; `name` ends in .onnx or .mlir and names the model in
 * messages. Bytes come from no folder: a model naming external data files is
 * KILN_INVALID_ARGUMENT (compile it from its file). */
KILN_API kiln_status_t kiln_jit_compile_memory(kiln_jit_t *jit, const void *data, size_t size,
                                               const char *name, kiln_model_t **out_model);

/* What `kiln-compile --explain` prints for the model in `data` (named as
 * kiln_jit_compile_memory's): its graph breaks, size reads, quantized ops left
 * in float and guards, one line each, then their counts. The model is compiled
 * for this (not cached: a diagnostic). *out_text stays valid until the calling
 * thread's next kiln_jit_explain_memory. */
KILN_API kiln_status_t kiln_jit_explain_memory(kiln_jit_t *jit, const void *data, size_t size,
                                               const char *name, const char **out_text);

/* Gives back one handle of `model`: each kiln_jit_compile_* call that returned
 * it counts once. When the last is given back, the model is destroyed and its
 * memory freed (its queued specializations are dropped; one being compiled
 * finishes first, in the background); the disk cache keeps it, so compiling
 * it again loads it from there. The caller must not use the handle after
 * giving it back, nor while a run on it is in progress. A model that is not
 * the JIT's (or whose handles were all given back) is KILN_INVALID_ARGUMENT.
 * (API 2.) */
KILN_API kiln_status_t kiln_jit_release(kiln_jit_t *jit, kiln_model_t *model);

/* Blocks until no specialization is queued or running. */
KILN_API kiln_status_t kiln_jit_wait_idle(kiln_jit_t *jit);

typedef struct kiln_jit_stats_t {
  uint64_t memory_hits;     /* found in memory */
  uint64_t disk_hits;       /* found in the disk cache */
  uint64_t misses;          /* in neither: compiled */
  uint64_t compiles;        /* models and variants compiled by this JIT */
  double compile_ms;        /* their total wall time */
  uint64_t evictions;       /* disk entries removed to stay under the bound */
  uint64_t damaged;         /* disk entries that did not verify (rebuilt) */
  uint64_t specializations; /* variants installed into models */
  uint64_t dropped;         /* specializations not queued: the queue was full, or the
                               model has 256 variants already */
  uint64_t failed;          /* specializations that failed (the generic code serves) */
} kiln_jit_stats_t;

KILN_API kiln_status_t kiln_jit_stats(const kiln_jit_t *jit, kiln_jit_stats_t *out_stats);

/* The message of the calling thread's last failed kiln_jit_* call. */
KILN_API const char *kiln_jit_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_JIT_H */
