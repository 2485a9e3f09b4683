//===- CApi.cpp - the C API of libkiln_runtime ----------------------------===//

#include "kiln/runtime.h"

#include "Model.h"
#include "cuda/CudaDriver.h"

#include "absl/strings/str_cat.h"

#include <cstring>
#include <string>

struct kiln_model_t {
  std::unique_ptr<kiln::rt::Model> model;
  /// Spelled dims of each input and output, owned here for kiln_tensor_info_t.
  std::vector<std::vector<std::string>> inputDimNames, outputDimNames;
};

struct kiln_profile_t {
  kiln::rt::Profile profile;
};

namespace {
using kiln::rt::Model;
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
    for (const kiln::rt::Dim &d : plan.values[v].shape)
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
  const kiln::rt::ValueInfo &v = plan.values[list[index]];
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

/// Views of the caller's inputs, with their descriptions checked.
absl::StatusOr<std::vector<kiln::ref::Tensor>> viewInputs(const kiln_tensor_t *inputs, size_t n) {
  if (n && !inputs)
    return nullArgument("kiln_model_run", "inputs");
  std::vector<kiln::ref::Tensor> views;
  for (size_t i = 0; i < n; ++i) {
    const kiln_tensor_t &t = inputs[i];
    if (t.rank < 0 || t.rank > KILN_MAX_RANK)
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has rank ", t.rank));
    if (static_cast<int>(t.dtype) < 0 || t.dtype > KILN_U2)
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has an unknown dtype"));
    kiln::ref::Shape shape(t.dims, t.dims + t.rank);
    int64_t count = 1;
    for (int64_t d : shape) {
      if (d < 0)
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " has a negative dim"));
      if (__builtin_mul_overflow(count, d, &count))
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " is too large"));
    }
    auto dtype = static_cast<kiln::ref::DType>(t.dtype);
    size_t need = static_cast<size_t>(count) * kiln::ref::info(dtype).bytes;
    if (t.size_bytes < need)
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " holds ", t.size_bytes,
                                                     " bytes, its dims need ", need));
    if (need && !t.data)
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has no data"));
    views.push_back(kiln::ref::Tensor::view(dtype, shape, static_cast<uint8_t *>(t.data)));
  }
  return views;
}

/// The arguments a run or a shape query takes, checked; views of the inputs.
absl::StatusOr<std::vector<kiln::ref::Tensor>> checkCall(const char *function,
                                                         const kiln_model_t *model,
                                                         const kiln_tensor_t *inputs,
                                                         size_t numInputs,
                                                         const kiln_tensor_t *outputs,
                                                         size_t numOutputs) {
  if (!model || (numOutputs && !outputs))
    return nullArgument(function, !model ? "model" : "outputs");
  size_t want = model->model->plan().outputs.size();
  if (numOutputs != want)
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", want, " outputs, got ", numOutputs));
  return viewInputs(inputs, numInputs);
}

void describe(kiln_tensor_t &out, kiln::ref::DType dtype, const kiln::ref::Shape &shape) {
  out.dtype = static_cast<kiln_dtype_t>(dtype);
  out.rank = static_cast<int32_t>(shape.size());
  for (size_t d = 0; d < shape.size() && d < KILN_MAX_RANK; ++d)
    out.dims[d] = shape[d];
}

} // namespace

extern "C" {

const char *kiln_runtime_version(void) { return "0.2.0"; }

kiln_status_t kiln_cuda_device_count(int *out_count) {
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
}

const char *kiln_last_error(void) { return lastError.c_str(); }

kiln_status_t kiln_model_load_file(const char *path, kiln_backend_t backend,
                                   kiln_model_t **out_model) {
  if (!path)
    return toC(nullArgument("kiln_model_load_file", "path"));
  return load("kiln_model_load_file", backend, out_model,
              [&](kiln::rt::Backend b) { return Model::loadFile(path, b); });
}

kiln_status_t kiln_model_load_memory(const void *data, size_t size, kiln_backend_t backend,
                                     kiln_model_t **out_model) {
  return load("kiln_model_load_memory", backend, out_model,
              [&](kiln::rt::Backend b) { return Model::loadMemory(data, size, b); });
}

kiln_status_t kiln_model_load_embedded(const void *data, size_t size, kiln_backend_t backend,
                                       kiln_model_t **out_model) {
  return load("kiln_model_load_embedded", backend, out_model,
              [&](kiln::rt::Backend b) { return Model::loadEmbedded(data, size, b); });
}

void kiln_model_destroy(kiln_model_t *model) { delete model; }

kiln_status_t kiln_model_backend(const kiln_model_t *model, kiln_backend_t *out_backend) {
  if (!model || !out_backend)
    return toC(nullArgument("kiln_model_backend", !model ? "model" : "out_backend"));
  *out_backend = model->model->backend() == kiln::rt::Backend::Cuda ? KILN_BACKEND_CUDA
                                                                    : KILN_BACKEND_HOST;
  return toC(absl::OkStatus());
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
  return info(model, index, true, out_info);
}

kiln_status_t kiln_model_output_info(const kiln_model_t *model, size_t index,
                                     kiln_tensor_info_t *out_info) {
  return info(model, index, false, out_info);
}

kiln_status_t kiln_model_output_shapes(const kiln_model_t *model, const kiln_tensor_t *inputs,
                                       size_t num_inputs, kiln_tensor_t *outputs,
                                       size_t num_outputs) {
  absl::StatusOr<std::vector<kiln::ref::Tensor>> views =
      checkCall("kiln_model_output_shapes", model, inputs, num_inputs, outputs, num_outputs);
  if (!views.ok())
    return toC(views.status());
  const kiln::rt::Plan &plan = model->model->plan();
  auto symbols = model->model->bindSymbols(*views);
  if (!symbols.ok())
    return toC(symbols.status());
  for (size_t i = 0; i < num_outputs; ++i) {
    const kiln::rt::ValueInfo &v = plan.values[plan.outputs[i]];
    std::optional<kiln::ref::Shape> shape = kiln::rt::evaluateShape(v, *symbols);
    if (!shape)
      return toC(absl::FailedPreconditionError(absl::StrCat(
          "output '", v.name, "' has a size that depends on the data; run to learn it")));
    describe(outputs[i], v.dtype, *shape);
    outputs[i].size_bytes =
        static_cast<size_t>(kiln::ref::numElements(*shape)) * kiln::ref::info(v.dtype).bytes;
  }
  return toC(absl::OkStatus());
}

kiln_status_t kiln_model_run(const kiln_model_t *model, const kiln_tensor_t *inputs,
                             size_t num_inputs, kiln_tensor_t *outputs, size_t num_outputs,
                             const kiln_run_options_t *options) {
  absl::StatusOr<std::vector<kiln::ref::Tensor>> views =
      checkCall("kiln_model_run", model, inputs, num_inputs, outputs, num_outputs);
  if (!views.ok())
    return toC(views.status());
  const kiln::rt::Plan &plan = model->model->plan();
  kiln_run_options_t defaults = {nullptr, 0, nullptr};
  const kiln_run_options_t &opts = options ? *options : defaults;
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
          "output '", name, "' (", kiln::rt::dtypeName(dtype), "[", kiln::ref::shapeToString(shape),
          "]) needs ", need, " bytes, its buffer has ", out.data ? out.size_bytes : 0));
      out.size_bytes = need;
      return s;
    }
    out.size_bytes = need;
    return out.data;
  };
  return toC(model->model->run(*views, opts.device_buffers != 0, opts.stream, sink,
                               opts.profile ? &opts.profile->profile : nullptr));
}

kiln_status_t kiln_model_memory(const kiln_model_t *model, const kiln_tensor_t *inputs,
                                size_t num_inputs, size_t *out_arena_bytes,
                                size_t *out_unplanned_bytes) {
  if (!model || !out_arena_bytes || !out_unplanned_bytes)
    return toC(nullArgument("kiln_model_memory", !model ? "model" : "an out_ parameter"));
  absl::StatusOr<std::vector<kiln::ref::Tensor>> views = viewInputs(inputs, num_inputs);
  if (!views.ok())
    return toC(views.status());
  auto symbols = model->model->bindSymbols(*views);
  if (!symbols.ok())
    return toC(symbols.status());
  std::shared_ptr<const kiln::rt::MemoryPlan> plan = model->model->memoryPlan(*symbols);
  *out_arena_bytes = plan->peakBytes;
  *out_unplanned_bytes = plan->sumBytes;
  return toC(absl::OkStatus());
}

kiln_status_t kiln_profile_create(kiln_profile_t **out_profile) {
  if (!out_profile)
    return toC(nullArgument("kiln_profile_create", "out_profile"));
  *out_profile = new kiln_profile_t();
  return toC(absl::OkStatus());
}

void kiln_profile_destroy(kiln_profile_t *profile) { delete profile; }

size_t kiln_profile_num_events(const kiln_profile_t *profile) {
  if (!profile)
    return 0;
  absl::MutexLock lock(&const_cast<kiln_profile_t *>(profile)->profile.mutex);
  return profile->profile.events.size();
}

kiln_status_t kiln_profile_event(const kiln_profile_t *profile, size_t index,
                                 const char **out_name, const char **out_kind,
                                 double *out_start_us, double *out_duration_us) {
  if (!profile || !out_name || !out_kind || !out_start_us || !out_duration_us)
    return toC(nullArgument("kiln_profile_event", !profile ? "profile" : "an out_ parameter"));
  auto &p = const_cast<kiln_profile_t *>(profile)->profile;
  absl::MutexLock lock(&p.mutex);
  if (index >= p.events.size())
    return toC(absl::OutOfRangeError(
        absl::StrCat("the profile has ", p.events.size(), " events, not ", index + 1)));
  const kiln::rt::ProfileEvent &e = p.events[index];
  *out_name = e.name.c_str();
  *out_kind = e.kind.c_str();
  *out_start_us = e.startUs;
  *out_duration_us = e.durationUs;
  return toC(absl::OkStatus());
}

} // extern "C"
