/* run_encoder.c - an application that links a model compiled ahead of time.
 *
 *   kiln-compile encoder.onnx -o encoder.so
 *   cc -std=c99 run_encoder.c encoder.so -lkiln_runtime -o run_encoder
 *   ./run_encoder INPUT.f32 BATCH SEQ OUTPUT.f32
 *
 * (examples/CMakeLists.txt builds it with find_package(kiln CONFIG).)
 *
 * encoder.so exports encoder_load(); the model's input is x: f32[batch, seq, 16]
 * and its output y: f32[batch, seq, 8]. Input and output files hold raw float32s.
 * Everything else here is kiln's C API (kiln/runtime.h). */
#include <kiln/runtime.h>

#include <stdio.h>
#include <stdlib.h>

/* Exported by the model .so that kiln-compile wrote (the name is its file's). */
kiln_status_t encoder_load(kiln_backend_t backend, kiln_model_t **out_model);

static int fail(const char *what) {
  fprintf(stderr, "run_encoder: %s: %s\n", what, kiln_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: run_encoder INPUT.f32 BATCH SEQ OUTPUT.f32\n");
    return 2;
  }
  int64_t batch = atoll(argv[2]), seq = atoll(argv[3]);
  /* The library implements the C API this program was built against. */
  if (kiln_api_version() / 10000 != KILN_API_VERSION_MAJOR) {
    fprintf(stderr, "run_encoder: libkiln_runtime has C API %d, this program needs %d.x\n",
            kiln_api_version(), KILN_API_VERSION_MAJOR);
    return 1;
  }
  kiln_model_t *model = NULL;
  if (encoder_load(KILN_BACKEND_AUTO, &model) != KILN_OK)
    return fail("loading the model");
  kiln_backend_t backend;
  kiln_model_backend(model, &backend);
  kiln_tensor_info_t info;
  kiln_model_input_info(model, 0, &info);
  printf("input %s: rank %d, dim 0 '%s', backend %s\n", info.name, info.rank,
         info.dim_names[0] ? info.dim_names[0] : "fixed",
         backend == KILN_BACKEND_CUDA ? "cuda" : "host emulation");

  size_t count = (size_t)(batch * seq * 16);
  float *x = malloc(count * sizeof(float));
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(x, sizeof(float), count, f) != count) {
    fprintf(stderr, "run_encoder: cannot read %zu floats from %s\n", count, argv[1]);
    return 1;
  }
  fclose(f);
  kiln_tensor_t input = {KILN_F32, 3, {batch, seq, 16}, x, count * sizeof(float)};

  /* The output's size follows from the input's: ask, allocate, run. */
  kiln_tensor_t output = {0};
  if (kiln_model_output_shapes(model, &input, 1, &output, 1) != KILN_OK)
    return fail("sizing the output");
  output.data = malloc(output.size_bytes);
  if (kiln_model_run(model, &input, 1, &output, 1, NULL) != KILN_OK)
    return fail("running");

  /* A context keeps its arena and plan between calls: what a serving thread
   * holds. Options say which struct layout they are (struct_size). */
  kiln_context_t *context = NULL;
  kiln_run_options_t options = KILN_RUN_OPTIONS_INIT;
  if (kiln_context_create(model, &context) != KILN_OK)
    return fail("creating a context");
  for (int i = 0; i < 3; ++i)
    if (kiln_context_run(context, &input, 1, &output, 1, &options) != KILN_OK)
      return fail("running in a context");
  kiln_context_destroy(context);
  printf("output: f32[%lld, %lld, %lld]\n", (long long)output.dims[0], (long long)output.dims[1],
         (long long)output.dims[2]);

  /* A wrong shape is an error naming the input and the dim, not a crash. */
  kiln_tensor_t wrong = input;
  wrong.dims[2] = 15;
  if (kiln_model_run(model, &wrong, 1, &output, 1, NULL) != KILN_INVALID_ARGUMENT)
    return fail("a wrong shape was accepted");
  printf("wrong shape: %s\n", kiln_last_error());

  f = fopen(argv[4], "wb");
  fwrite(output.data, 1, output.size_bytes, f);
  fclose(f);
  free(output.data);
  free(x);
  kiln_model_destroy(model);
  return 0;
}
