//===- CApi.cpp - the C API of libkiln_runtime ----------------------------===//

#include "kiln/runtime.h"

#include "Generate.h"
#include "Model.h"
#include "cuda/CudaDriver.h"
#include "kiln/version.h"

#include "absl/strings/str_cat.h"

#include <cstddef>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <string>

static_assert(KILN_MAX_RANK == kiln::artifact::kMaxIoRank,
              "the C API's rank limit is the one the compiler enforces");

struct kiln_model_t {
  std::unique_ptr<kiln::rt::Model> model;
  /// Spelled dims of each input and output, owned here for kiln_tensor_info_t.
  std::vector<std::vector<std::string>> inputDimNames, outputDimNames;
};

struct kiln_profile_t {
  kiln::rt::Profile profile;
};

struct kiln_context_t {
  const kiln_model_t *model;
  std::unique_ptr<kiln::rt::ExecutionContext> context;
  /// The caller's inputs as the executor reads them; reused call after call.
  std::vector<kiln::rt::TensorRef> inputs;
};

namespace {
using kiln::rt::DeviceMemory;
using kiln::rt::Model;

/// Runs `read` on event `index` of `profile` under its lock; out of range is
/// an error naming how many events there are.
template <typename Read>
absl::Status withProfileEvent(const kiln_profile_t *profile, size_t index, Read read) {
  auto &p = const_cast<kiln_profile_t *>(profile)->profile;
  std::lock_guard<std::mutex> lock(p.mutex);
  if (index >= p.events.size())
    return absl::OutOfRangeError(
        absl::StrCat("the profile has ", p.events.size(), " events, not ", index + 1));
  read(p.events[index]);
  return absl::OkStatus();
}
thread_local std::string lastError;

kiln_status_t toC(const absl::Status &status) {
  if (status.ok())
    lastError.clear();
  else
    lastError.assign(status.message().data(), status.message().size());
  switch (status.code()) {
  case absl::StatusCode::kOk:
    return KILN_OK;
  case absl::StatusCode::kInvalidArgument:
    return KILN_INVALID_ARGUMENT;
  case absl::StatusCode::kNotFound:
    return KILN_NOT_FOUND;
  case absl::StatusCode::kFailedPrecondition:
    return KILN_FAILED_PRECONDITION;
  case absl::StatusCode::kResourceExhausted:
    return KILN_RESOURCE_EXHAUSTED;
  case absl::StatusCode::kOutOfRange:
    return KILN_OUT_OF_RANGE;
  case absl::StatusCode::kUnimplemented:
    return KILN_UNIMPLEMENTED;
  case absl::StatusCode::kUnavailable:
    return KILN_UNAVAILABLE;
  default:
    return KILN_INTERNAL;
  }
}

absl::Status nullArgument(const char *function, const char *argument) {
  return absl::InvalidArgumentError(absl::StrCat(function, ": ", argument, " is NULL"));
}

/// Runs an entry point's body so that no exception leaves the C API: anything
/// thrown (std::bad_alloc, a bug) becomes KILN_INTERNAL with its text.
template <typename Body> kiln_status_t guarded(const char *function, Body body) noexcept {
  try {
    return body();
  } catch (const std::exception &e) {
    return toC(absl::InternalError(absl::StrCat(function, ": ", e.what())));
  } catch (...) {
    return toC(absl::InternalError(absl::StrCat(function, ": an unexpected exception")));
  }
}

absl::StatusOr<kiln::rt::Backend> toBackend(kiln_backend_t b) {
  switch (b) {
  case KILN_BACKEND_AUTO:
    return kiln::rt::Backend::Auto;
  case KILN_BACKEND_CUDA:
    return kiln::rt::Backend::Cuda;
  case KILN_BACKEND_HOST:
    return kiln::rt::Backend::Host;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown backend ", static_cast<int>(b)));
}

kiln_status_t wrap(absl::StatusOr<std::unique_ptr<Model>> model, kiln_model_t **out) {
  if (!model.ok())
    return toC(model.status());
  auto *m = new kiln_model_t();
  m->model = std::move(*model);
  const kiln::rt::Plan &plan = m->model->plan();
  auto spell = [&](int v) {
    std::vector<std::string> names;
    for (const kiln::artifact::Dim &d : plan.values[v].shape)
      names.push_back(d.toString(plan.symbols));
    return names;
  };
  for (int v : plan.inputs)
    m->inputDimNames.push_back(spell(v));
  for (int v : plan.outputs)
    m->outputDimNames.push_back(spell(v));
  *out = m;
  return toC(absl::OkStatus());
}

/// The loaders' common part: check the out parameter and backend, then `loader`.
template <typename Loader>
kiln_status_t load(const char *function, kiln_backend_t backend, kiln_model_t **out,
                   Loader loader) {
  if (!out)
    return toC(nullArgument(function, "out_model"));
  *out = nullptr;
  absl::StatusOr<kiln::rt::Backend> b = toBackend(backend);
  if (!b.ok())
    return toC(b.status());
  return wrap(loader(*b), out);
}

kiln_status_t info(const kiln_model_t *model, size_t index, bool input,
                   kiln_tensor_info_t *out) {
  if (!model || !out)
    return toC(nullArgument("kiln_model_*_info", !model ? "model" : "out_info"));
  const kiln::rt::Plan &plan = model->model->plan();
  const std::vector<int> &list = input ? plan.inputs : plan.outputs;
  if (index >= list.size())
    return toC(absl::OutOfRangeError(absl::StrCat("the model has ", list.size(),
                                                  input ? " inputs" : " outputs", ", not ",
                                                  index + 1)));
  const kiln::artifact::ValueInfo &v = plan.values[list[index]];
  if (v.shape.size() > KILN_MAX_RANK)
    return toC(absl::UnimplementedError(absl::StrCat("'", v.name, "' has rank ", v.shape.size(),
                                                     ", above KILN_MAX_RANK")));
  std::memset(out, 0, sizeof(*out));
  out->name = v.name.c_str();
  out->dtype = static_cast<kiln_dtype_t>(v.dtype);
  out->rank = static_cast<int32_t>(v.shape.size());
  const auto &names = input ? model->inputDimNames[index] : model->outputDimNames[index];
  for (size_t d = 0; d < v.shape.size(); ++d) {
    std::optional<int64_t> fixed = v.shape[d].evaluate({});
    out->dims[d] = fixed ? *fixed : -1;
    out->dim_names[d] = fixed ? nullptr : names[d].c_str();
  }
  return KILN_OK;
}

/// The caller's inputs, checked, as the executor reads them (into `views`, whose
/// storage is reused).
absl::Status viewInputs(const kiln_tensor_t *inputs, size_t n,
                        std::vector<kiln::rt::TensorRef> &views) {
  if (n && !inputs)
    return nullArgument("kiln_model_run", "inputs");
  views.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const kiln_tensor_t &t = inputs[i];
    if (t.rank < 0 || t.rank > KILN_MAX_RANK)
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has rank ", t.rank));
    if (static_cast<int>(t.dtype) < 0 || t.dtype > KILN_U2)
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has an unknown dtype"));
    int64_t count = 1;
    for (int32_t d = 0; d < t.rank; ++d) {
      if (t.dims[d] < 0)
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " has a negative dim"));
      if (__builtin_mul_overflow(count, t.dims[d], &count))
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " is too large"));
    }
    auto dtype = static_cast<kiln::ref::DType>(t.dtype);
    size_t need = 0;
    if (__builtin_mul_overflow(static_cast<size_t>(count),
                               static_cast<size_t>(kiln::ref::info(dtype).bytes), &need))
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " is too large"));
    if (t.size_bytes < need)
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " holds ", t.size_bytes,
                                                     " bytes, its dims need ", need));
    if (need && !t.data)
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has no data"));
    views[i] = {dtype, absl::Span<const int64_t>(t.dims, static_cast<size_t>(t.rank)),
                static_cast<uint8_t *>(t.data)};
  }
  return absl::OkStatus();
}

/// The arguments a run or a shape query takes, checked; views of the inputs.
absl::Status checkCall(const char *function, const kiln_model_t *model,
                       const kiln_tensor_t *inputs, size_t numInputs,
                       const kiln_tensor_t *outputs, size_t numOutputs,
                       std::vector<kiln::rt::TensorRef> &views) {
  if (!model || (numOutputs && !outputs))
    return nullArgument(function, !model ? "model" : "outputs");
  size_t want = model->model->plan().outputs.size();
  if (numOutputs != want)
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", want, " outputs, got ", numOutputs));
  return viewInputs(inputs, numInputs, views);
}

/// The fields of `options` the caller's header had (struct_size), over defaults.
absl::StatusOr<kiln_run_options_t> runOptions(const kiln_run_options_t *given) {
  kiln_run_options_t options = KILN_RUN_OPTIONS_INIT;
  if (!given)
    return options;
  if (given->struct_size < offsetof(kiln_run_options_t, stream) + sizeof(void *))
    return absl::InvalidArgumentError(absl::StrCat(
        "kiln_run_options_t.struct_size is ", given->struct_size,
        "; set it to sizeof(kiln_run_options_t) (KILN_RUN_OPTIONS_INIT does)"));
  size_t known = std::min(given->struct_size, sizeof(kiln_run_options_t));
  std::memcpy(&options, given, known);
  options.struct_size = sizeof(kiln_run_options_t);
  return options;
}

void describe(kiln_tensor_t &out, kiln::ref::DType dtype, const kiln::ref::Shape &shape) {
  out.dtype = static_cast<kiln_dtype_t>(dtype);
  out.rank = static_cast<int32_t>(shape.size());
  for (size_t d = 0; d < shape.size() && d < KILN_MAX_RANK; ++d)
    out.dims[d] = shape[d];
}

/// Runs `model` in `context` on the checked `inputs`, writing into `outputs`.
absl::Status runIn(const kiln_model_t *model, kiln::rt::ExecutionContext &context,
                   const std::vector<kiln::rt::TensorRef> &inputs, kiln_tensor_t *outputs,
                   const kiln_run_options_t *given) {
  absl::StatusOr<kiln_run_options_t> options = runOptions(given);
  if (!options.ok())
    return options.status();
  const kiln::artifact::Plan &plan = model->model->plan();
  auto sink = [&](size_t i, kiln::ref::DType dtype,
                  const kiln::ref::Shape &shape) -> absl::StatusOr<void *> {
    kiln_tensor_t &out = outputs[i];
    if (shape.size() > KILN_MAX_RANK)
      return absl::UnimplementedError(absl::StrCat("output ", i, " has rank above KILN_MAX_RANK"));
    describe(out, dtype, shape);
    size_t need = static_cast<size_t>(kiln::ref::numElements(shape)) * kiln::ref::info(dtype).bytes;
    if (out.size_bytes < need || (need && !out.data)) {
      std::string name = plan.values[plan.outputs[i]].name;
      absl::Status s = absl::OutOfRangeError(absl::StrCat(
          "output '", name, "' (", kiln::artifact::dtypeName(dtype), "[",
          kiln::ref::shapeToString(shape), "]) needs ", need, " bytes, its buffer has ",
          out.data ? out.size_bytes : 0));
      out.size_bytes = need;
      return s;
    }
    out.size_bytes = need;
    return out.data;
  };
  kiln::rt::RunRequest request;
  request.inputs = inputs;
  request.deviceBuffers = options->device_buffers != 0;
  request.stream = options->stream;
  request.profile = options->profile ? &options->profile->profile : nullptr;
  if (options->max_tensor_bytes)
    request.maxTensorBytes = options->max_tensor_bytes;
  return model->model->run(context, request, sink);
}

} // namespace

extern "C" {

const char *kiln_runtime_version(void) { return KILN_VERSION; }

int kiln_api_version(void) { return KILN_API_VERSION; }

kiln_status_t kiln_cuda_device_count(int *out_count) {
  return guarded("kiln_cuda_device_count", [&] {
    if (!out_count)
      return toC(nullArgument("kiln_cuda_device_count", "out_count"));
    *out_count = 0;
    auto driver = kiln::rt::CudaDriver::get();
    if (!driver.ok())
      return toC(driver.status());
    auto count = (*driver)->deviceCount();
    if (!count.ok())
      return toC(count.status());
    *out_count = *count;
    return toC(absl::OkStatus());
  });
}

const char *kiln_last_error(void) { return lastError.c_str(); }

kiln_status_t kiln_model_load_file(const char *path, kiln_backend_t backend,
                                   kiln_model_t **out_model) {
  return guarded("kiln_model_load_file", [&] {
    if (!path)
      return toC(nullArgument("kiln_model_load_file", "path"));
    return load("kiln_model_load_file", backend, out_model,
                [&](kiln::rt::Backend b) { return Model::loadFile(path, b); });
  });
}

kiln_status_t kiln_model_load_memory(const void *data, size_t size, kiln_backend_t backend,
                                     kiln_model_t **out_model) {
  return guarded("kiln_model_load_memory", [&] {
    return load("kiln_model_load_memory", backend, out_model,
                [&](kiln::rt::Backend b) { return Model::loadMemory(data, size, b); });
  });
}

kiln_status_t kiln_model_load_embedded(const void *data, size_t size, kiln_backend_t backend,
                                       kiln_model_t **out_model) {
  return guarded("kiln_model_load_embedded", [&] {
    return load("kiln_model_load_embedded", backend, out_model,
                [&](kiln::rt::Backend b) { return Model::loadEmbedded(data, size, b); });
  });
}

} // extern "C"

namespace {
/// The backend and device of load options (NULL: the defaults); an error for
/// options this library cannot read.
absl::Status loadOptions(const char *function, const kiln_load_options_t *options,
                         kiln_backend_t &backend, int &device) {
  backend = KILN_BACKEND_AUTO;
  device = 0;
  if (!options)
    return absl::OkStatus();
  if (options->struct_size < offsetof(kiln_load_options_t, device) + sizeof(int))
    return absl::InvalidArgumentError(absl::StrCat(
        function, ": options->struct_size is ", options->struct_size,
        "; set it to sizeof(kiln_load_options_t) (KILN_LOAD_OPTIONS_INIT)"));
  backend = options->backend;
  device = options->device;
  if (device < 0)
    return absl::InvalidArgumentError(
        absl::StrCat(function, ": options->device is ", device, "; device ordinals start at 0"));
  return absl::OkStatus();
}

/// load() with options: their backend and device, checked first.
template <typename Loader>
kiln_status_t loadWithOptions(const char *function, const kiln_load_options_t *options,
                              kiln_model_t **out, Loader loader) {
  kiln_backend_t backend;
  int device;
  if (absl::Status s = loadOptions(function, options, backend, device); !s.ok())
    return toC(s);
  return load(function, backend, out, [&](kiln::rt::Backend b) { return loader(b, device); });
}
} // namespace

extern "C" {

kiln_status_t kiln_model_load_file_with(const char *path, const kiln_load_options_t *options,
                                        kiln_model_t **out_model) {
  return guarded("kiln_model_load_file_with", [&] {
    if (!path)
      return toC(nullArgument("kiln_model_load_file_with", "path"));
    return loadWithOptions("kiln_model_load_file_with", options, out_model,
                           [&](kiln::rt::Backend b, int device) {
                             return Model::loadFile(path, b, device);
                           });
  });
}

kiln_status_t kiln_model_load_memory_with(const void *data, size_t size,
                                          const kiln_load_options_t *options,
                                          kiln_model_t **out_model) {
  return guarded("kiln_model_load_memory_with", [&] {
    return loadWithOptions("kiln_model_load_memory_with", options, out_model,
                           [&](kiln::rt::Backend b, int device) {
                             return Model::loadMemory(data, size, b, device);
                           });
  });
}

void kiln_model_destroy(kiln_model_t *model) {
  try {
    delete model;
  } catch (...) {
    // Destructors do not throw; nothing may escape a void C function either.
  }
}

kiln_status_t kiln_model_backend(const kiln_model_t *model, kiln_backend_t *out_backend) {
  if (!model || !out_backend)
    return toC(nullArgument("kiln_model_backend", !model ? "model" : "out_backend"));
  *out_backend = model->model->backend() == kiln::rt::Backend::Cuda ? KILN_BACKEND_CUDA
                                                                    : KILN_BACKEND_HOST;
  return toC(absl::OkStatus());
}

kiln_status_t kiln_model_device(const kiln_model_t *model, int32_t *out_device) {
  if (!model || !out_device)
    return toC(nullArgument("kiln_model_device", !model ? "model" : "out_device"));
  *out_device = model->model->device();
  return toC(absl::OkStatus());
}

kiln_status_t kiln_model_rows_independent(const kiln_model_t *model, const char *symbol,
                                          int *out_independent) {
  if (!model || !symbol || !out_independent)
    return toC(nullArgument("kiln_model_rows_independent",
                            !model ? "model" : !symbol ? "symbol" : "out_independent"));
  const kiln::artifact::Plan &plan = model->model->plan();
  *out_independent = 0;
  for (int s : plan.independentRows)
    if (plan.symbols[s] == symbol)
      *out_independent = 1;
  return toC(absl::OkStatus());
}

kiln_status_t kiln_generate(const kiln_model_t *model, const int64_t *input_ids,
                            const int64_t *attention_mask, size_t batch, size_t prompt_length,
                            const kiln_generate_options_t *options, int64_t *out_tokens,
                            size_t *out_steps) {
  if (!model || !input_ids || !options)
    return toC(nullArgument("kiln_generate", !model       ? "model"
                                             : !input_ids ? "input_ids"
                                                          : "options"));
  if (options->struct_size < sizeof(kiln_generate_options_t))
    return toC(absl::InvalidArgumentError(
        "kiln_generate: options.struct_size is smaller than this runtime's "
        "kiln_generate_options_t (start from KILN_GENERATE_OPTIONS_INIT)"));
  if (!out_tokens && options->max_new_tokens > 0)
    return toC(nullArgument("kiln_generate", "out_tokens"));
  return toC(kiln::rt::generateTokens(model, input_ids, attention_mask, batch, prompt_length,
                                      *options, out_tokens, out_steps));
}

kiln_status_t kiln_model_backend_description(const kiln_model_t *model,
                                             const char **out_description) {
  if (!model || !out_description)
    return toC(nullArgument("kiln_model_backend_description", !model ? "model" : "out_description"));
  *out_description = model->model->backendDescription().c_str();
  return toC(absl::OkStatus());
}

kiln_status_t kiln_model_num_inputs(const kiln_model_t *model, size_t *out_count) {
  if (!model || !out_count)
    return toC(nullArgument("kiln_model_num_inputs", !model ? "model" : "out_count"));
  *out_count = model->model->plan().inputs.size();
  return toC(absl::OkStatus());
}

kiln_status_t kiln_model_num_outputs(const kiln_model_t *model, size_t *out_count) {
  if (!model || !out_count)
    return toC(nullArgument("kiln_model_num_outputs", !model ? "model" : "out_count"));
  *out_count = model->model->plan().outputs.size();
  return toC(absl::OkStatus());
}

kiln_status_t kiln_model_input_info(const kiln_model_t *model, size_t index,
                                    kiln_tensor_info_t *out_info) {
  return guarded("kiln_model_input_info", [&] { return info(model, index, true, out_info); });
}

kiln_status_t kiln_model_output_info(const kiln_model_t *model, size_t index,
                                     kiln_tensor_info_t *out_info) {
  return guarded("kiln_model_output_info", [&] { return info(model, index, false, out_info); });
}

kiln_status_t kiln_model_output_shapes(const kiln_model_t *model, const kiln_tensor_t *inputs,
                                       size_t num_inputs, kiln_tensor_t *outputs,
                                       size_t num_outputs) {
  return guarded("kiln_model_output_shapes", [&] {
    std::vector<kiln::rt::TensorRef> views;
    if (absl::Status s = checkCall("kiln_model_output_shapes", model, inputs, num_inputs, outputs,
                                   num_outputs, views);
        !s.ok())
      return toC(s);
    const kiln::artifact::Plan &plan = model->model->plan();
    kiln::artifact::Bindings symbols;
    if (absl::Status s = model->model->bindSymbols(views, symbols); !s.ok())
      return toC(s);
    for (size_t i = 0; i < num_outputs; ++i) {
      const kiln::artifact::ValueInfo &v = plan.values[plan.outputs[i]];
      std::optional<kiln::ref::Shape> shape = kiln::artifact::evaluateShape(v, symbols);
      if (!shape)
        return toC(absl::FailedPreconditionError(absl::StrCat(
            "output '", v.name, "' has a size that depends on the data; run to learn it")));
      absl::StatusOr<uint64_t> bytes =
          kiln::ref::checkedByteSize(v.dtype, *shape, std::numeric_limits<uint64_t>::max());
      if (!bytes.ok())
        return toC(absl::Status(bytes.status().code(), absl::StrCat("output '", v.name, "': ",
                                                                    bytes.status().message())));
      describe(outputs[i], v.dtype, *shape);
      outputs[i].size_bytes = *bytes;
    }
    return toC(absl::OkStatus());
  });
}

kiln_status_t kiln_model_run(const kiln_model_t *model, const kiln_tensor_t *inputs,
                             size_t num_inputs, kiln_tensor_t *outputs, size_t num_outputs,
                             const kiln_run_options_t *options) {
  return guarded("kiln_model_run", [&] {
    std::vector<kiln::rt::TensorRef> views;
    if (absl::Status s =
            checkCall("kiln_model_run", model, inputs, num_inputs, outputs, num_outputs, views);
        !s.ok())
      return toC(s);
    std::unique_ptr<kiln::rt::ExecutionContext> context = model->model->takeContext();
    absl::Status status = runIn(model, *context, views, outputs, options);
    model->model->giveContext(std::move(context));
    return toC(status);
  });
}

kiln_status_t kiln_context_create(const kiln_model_t *model, kiln_context_t **out_context) {
  return guarded("kiln_context_create", [&] {
    if (!model || !out_context)
      return toC(nullArgument("kiln_context_create", !model ? "model" : "out_context"));
    *out_context = new kiln_context_t{
        model, std::make_unique<kiln::rt::ExecutionContext>(*model->model), {}};
    (*out_context)->inputs.reserve(model->model->plan().inputs.size());
    return toC(absl::OkStatus());
  });
}

void kiln_context_destroy(kiln_context_t *context) {
  try {
    delete context;
  } catch (...) {
  }
}

kiln_status_t kiln_context_run(kiln_context_t *context, const kiln_tensor_t *inputs,
                               size_t num_inputs, kiln_tensor_t *outputs, size_t num_outputs,
                               const kiln_run_options_t *options) {
  return guarded("kiln_context_run", [&] {
    if (!context)
      return toC(nullArgument("kiln_context_run", "context"));
    if (absl::Status s = checkCall("kiln_context_run", context->model, inputs, num_inputs, outputs,
                                   num_outputs, context->inputs);
        !s.ok())
      return toC(s);
    return toC(runIn(context->model, *context->context, context->inputs, outputs, options));
  });
}

kiln_status_t kiln_model_add_variants(kiln_model_t *model, const void *pack, size_t size,
                                      size_t *out_added) {
  return guarded("kiln_model_add_variants", [&] {
    if (!model)
      return toC(nullArgument("kiln_model_add_variants", "model"));
    absl::StatusOr<int> added = model->model->addVariants(pack, size);
    if (!added.ok())
      return toC(added.status());
    if (out_added)
      *out_added = static_cast<size_t>(*added);
    return toC(absl::OkStatus());
  });
}

kiln_status_t kiln_model_set_variant_miss_handler(kiln_model_t *model,
                                                  kiln_variant_miss_fn handler, void *user_data) {
  return guarded("kiln_model_set_variant_miss_handler", [&] {
    if (!model)
      return toC(nullArgument("kiln_model_set_variant_miss_handler", "model"));
    model->model->setVariantMissHandler(handler, user_data);
    return toC(absl::OkStatus());
  });
}

kiln_status_t kiln_context_variant(const kiln_context_t *context, const char **out_name) {
  return guarded("kiln_context_variant", [&] {
    if (!context || !out_name)
      return toC(nullArgument("kiln_context_variant", !context ? "context" : "out_name"));
    *out_name = context->model->model->variantName(context->context->variant()).c_str();
    return toC(absl::OkStatus());
  });
}

kiln_status_t kiln_model_memory(const kiln_model_t *model, const kiln_tensor_t *inputs,
                                size_t num_inputs, size_t *out_arena_bytes,
                                size_t *out_unplanned_bytes) {
  return guarded("kiln_model_memory", [&] {
    if (!model || !out_arena_bytes || !out_unplanned_bytes)
      return toC(nullArgument("kiln_model_memory", !model ? "model" : "an out_ parameter"));
    std::vector<kiln::rt::TensorRef> views;
    if (absl::Status s = viewInputs(inputs, num_inputs, views); !s.ok())
      return toC(s);
    kiln::artifact::Bindings symbols;
    if (absl::Status s = model->model->bindSymbols(views, symbols); !s.ok())
      return toC(s);
    absl::StatusOr<std::shared_ptr<const kiln::artifact::MemoryPlan>> plan =
        model->model->memoryPlan(kiln::artifact::planningSymbols(model->model->plan(), symbols));
    if (!plan.ok())
      return toC(plan.status());
    *out_arena_bytes = (*plan)->peakBytes;
    *out_unplanned_bytes = (*plan)->sumBytes;
    return toC(absl::OkStatus());
  });
}

kiln_status_t kiln_model_device_alloc(const kiln_model_t *model, size_t bytes,
                                      void **out_device_ptr) {
  return guarded("kiln_model_device_alloc", [&] {
    if (!model || !out_device_ptr)
      return toC(nullArgument("kiln_model_device_alloc", !model ? "model" : "out_device_ptr"));
    absl::StatusOr<const DeviceMemory *> memory = model->model->executor().deviceMemoryOrError();
    if (!memory.ok())
      return toC(memory.status());
    absl::StatusOr<void *> p = (*memory)->allocate(bytes);
    if (!p.ok())
      return toC(p.status());
    *out_device_ptr = *p;
    return toC(absl::OkStatus());
  });
}

kiln_status_t kiln_model_device_free(const kiln_model_t *model, void *device_ptr) {
  return guarded("kiln_model_device_free", [&] {
    if (!model)
      return toC(nullArgument("kiln_model_device_free", "model"));
    if (!device_ptr)
      return toC(absl::OkStatus());
    absl::StatusOr<const DeviceMemory *> memory = model->model->executor().deviceMemoryOrError();
    return toC(memory.ok() ? (*memory)->free(device_ptr) : memory.status());
  });
}

kiln_status_t kiln_model_copy_to_device(const kiln_model_t *model, void *device_dst,
                                        const void *host_src, size_t bytes) {
  return guarded("kiln_model_copy_to_device", [&] {
    if (!model || ((!device_dst || !host_src) && bytes))
      return toC(nullArgument("kiln_model_copy_to_device", !model ? "model" : "a buffer"));
    if (!bytes)
      return toC(absl::OkStatus());
    absl::StatusOr<const DeviceMemory *> memory = model->model->executor().deviceMemoryOrError();
    return toC(memory.ok() ? (*memory)->copyToDevice(device_dst, host_src, bytes)
                           : memory.status());
  });
}

kiln_status_t kiln_model_copy_to_host(const kiln_model_t *model, void *host_dst,
                                      const void *device_src, size_t bytes) {
  return guarded("kiln_model_copy_to_host", [&] {
    if (!model || ((!host_dst || !device_src) && bytes))
      return toC(nullArgument("kiln_model_copy_to_host", !model ? "model" : "a buffer"));
    if (!bytes)
      return toC(absl::OkStatus());
    absl::StatusOr<const DeviceMemory *> memory = model->model->executor().deviceMemoryOrError();
    return toC(memory.ok() ? (*memory)->copyToHost(host_dst, device_src, bytes)
                           : memory.status());
  });
}

kiln_status_t kiln_profile_create(kiln_profile_t **out_profile) {
  return guarded("kiln_profile_create", [&] {
    if (!out_profile)
      return toC(nullArgument("kiln_profile_create", "out_profile"));
    *out_profile = new kiln_profile_t();
    return toC(absl::OkStatus());
  });
}

void kiln_profile_destroy(kiln_profile_t *profile) { delete profile; }

size_t kiln_profile_num_events(const kiln_profile_t *profile) {
  if (!profile)
    return 0;
  std::lock_guard<std::mutex> lock(const_cast<kiln_profile_t *>(profile)->profile.mutex);
  return profile->profile.events.size();
}

kiln_status_t kiln_profile_event(const kiln_profile_t *profile, size_t index,
                                 const char **out_name, const char **out_kind,
                                 double *out_start_us, double *out_duration_us) {
  if (!profile || !out_name || !out_kind || !out_start_us || !out_duration_us)
    return toC(nullArgument("kiln_profile_event", !profile ? "profile" : "an out_ parameter"));
  return toC(withProfileEvent(profile, index, [&](const kiln::rt::ProfileEvent &e) {
    *out_name = e.name.c_str();
    *out_kind = e.kind.c_str();
    *out_start_us = e.startUs;
    *out_duration_us = e.durationUs;
  }));
}

kiln_status_t kiln_profile_event_work(const kiln_profile_t *profile, size_t index,
                                      int64_t *out_bytes, double *out_flops) {
  if (!profile || !out_bytes || !out_flops)
    return toC(nullArgument("kiln_profile_event_work", !profile ? "profile" : "an out_ parameter"));
  return toC(withProfileEvent(profile, index, [&](const kiln::rt::ProfileEvent &e) {
    *out_bytes = e.bytes;
    *out_flops = e.flops;
  }));
}

} // extern "C"
