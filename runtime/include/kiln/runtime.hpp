//===- kiln/runtime.hpp - a C++ face for kiln's C API ------------*- C++ -*-===//
//
// Header-only and exception-free: a thin RAII layer over kiln/runtime.h, so a C++
// application gets ownership and std::vector buffers without a second ABI to keep
// stable. Errors are kiln::Status values carrying kiln_last_error()'s text.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_HPP
#define KILN_RUNTIME_HPP

#include "kiln/runtime.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

class Status {
public:
  Status() = default;
  static Status fromLastCall(kiln_status_t code) {
    Status s;
    s.code_ = code;
    if (code != KILN_OK)
      s.message_ = kiln_last_error();
    return s;
  }
  static Status error(kiln_status_t code, std::string message) {
    Status s;
    s.code_ = code;
    s.message_ = std::move(message);
    return s;
  }
  bool ok() const { return code_ == KILN_OK; }
  kiln_status_t code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  kiln_status_t code_ = KILN_OK;
  std::string message_;
};

/// Bytes per element of a kiln dtype (sub-byte integers take a byte).
inline size_t dtypeSize(kiln_dtype_t t) {
  switch (t) {
  case KILN_F16: case KILN_BF16: case KILN_I16: case KILN_U16: return 2;
  case KILN_F32: case KILN_I32: case KILN_U32: return 4;
  case KILN_F64: case KILN_I64: case KILN_U64: return 8;
  default: return 1;
  }
}

/// A dense host tensor that owns its bytes.
struct HostTensor {
  kiln_dtype_t dtype = KILN_F32;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;

  HostTensor() = default;
  HostTensor(kiln_dtype_t dtype, std::vector<int64_t> dims) : dtype(dtype), dims(std::move(dims)) {
    data.resize(numel() * dtypeSize(dtype));
  }
  size_t numel() const {
    size_t n = 1;
    for (int64_t d : dims)
      n *= static_cast<size_t>(d);
    return n;
  }
  template <typename T> T *as() { return reinterpret_cast<T *>(data.data()); }
  template <typename T> const T *as() const { return reinterpret_cast<const T *>(data.data()); }

  /// A C view of this tensor (valid while it lives and is not resized).
  kiln_tensor_t view() {
    kiln_tensor_t t;
    std::memset(&t, 0, sizeof(t));
    t.dtype = dtype;
    t.rank = static_cast<int32_t>(dims.size());
    for (size_t i = 0; i < dims.size() && i < KILN_MAX_RANK; ++i)
      t.dims[i] = dims[i];
    t.data = data.data();
    t.size_bytes = data.size();
    return t;
  }
};

namespace detail {
/// Destroys a model it owns; a borrowed one (Model::borrow) is left alone. At
/// namespace scope: nested in Model, unique_ptr could not see it is
/// default-constructible while Model is incomplete.
struct ModelDeleter {
  bool owns = true;
  void operator()(kiln_model_t *m) const {
    if (owns)
      kiln_model_destroy(m);
  }
};
} // namespace detail

class Model {
public:
  Model() = default;

  /// Loads a .kiln artifact or a model .so.
  static Status load(const std::string &path, Model *out,
                     kiln_backend_t backend = KILN_BACKEND_AUTO) {
    kiln_model_t *m = nullptr;
    Status s = Status::fromLastCall(kiln_model_load_file(path.c_str(), backend, &m));
    if (s.ok())
      out->model_.reset(m);
    return s;
  }
  /// The same with load options (the backend and the CUDA device; API 1.4).
  static Status load(const std::string &path, Model *out, const kiln_load_options_t &options) {
    kiln_model_t *m = nullptr;
    Status s = Status::fromLastCall(kiln_model_load_file_with(path.c_str(), &options, &m));
    if (s.ok())
      out->model_.reset(m);
    return s;
  }
  static Status loadMemory(const void *data, size_t size, Model *out,
                           kiln_backend_t backend = KILN_BACKEND_AUTO) {
    kiln_model_t *m = nullptr;
    Status s = Status::fromLastCall(kiln_model_load_memory(data, size, backend, &m));
    if (s.ok())
      out->model_.reset(m);
    return s;
  }

  kiln_model_t *get() const { return model_.get(); }
  explicit operator bool() const { return model_ != nullptr; }

  kiln_backend_t backend() const {
    kiln_backend_t b = KILN_BACKEND_HOST;
    kiln_model_backend(model_.get(), &b);
    return b;
  }
  /// The CUDA device ordinal it runs on; -1 in host emulation.
  int device() const {
    int32_t d = -1;
    kiln_model_device(model_.get(), &d);
    return d;
  }
  /// Whether requests may be batched along `symbol` (kiln_model_rows_independent).
  bool rowsIndependent(const std::string &symbol) const {
    int independent = 0;
    kiln_model_rows_independent(model_.get(), symbol.c_str(), &independent);
    return independent != 0;
  }
  size_t numInputs() const {
    size_t n = 0;
    kiln_model_num_inputs(model_.get(), &n);
    return n;
  }
  size_t numOutputs() const {
    size_t n = 0;
    kiln_model_num_outputs(model_.get(), &n);
    return n;
  }
  kiln_tensor_info_t inputInfo(size_t i) const {
    kiln_tensor_info_t info;
    std::memset(&info, 0, sizeof(info));
    kiln_model_input_info(model_.get(), i, &info);
    return info;
  }
  kiln_tensor_info_t outputInfo(size_t i) const {
    kiln_tensor_info_t info;
    std::memset(&info, 0, sizeof(info));
    kiln_model_output_info(model_.get(), i, &info);
    return info;
  }

  /// Runs on host tensors; `outputs` is resized and filled. Safe to call from
  /// many threads at once (each call takes a pooled context).
  Status run(std::vector<HostTensor> &inputs, std::vector<HostTensor> *outputs,
             const kiln_run_options_t *options = nullptr) const {
    return run(views(inputs), outputs, options);
  }
  /// The same on views of the caller's buffers (no copy of the inputs: each
  /// kiln_tensor_t's data must stay valid for the call).
  Status run(std::vector<kiln_tensor_t> inputs, std::vector<HostTensor> *outputs,
             const kiln_run_options_t *options = nullptr) const {
    return runWith(std::move(inputs), outputs,
                   [&](kiln_tensor_t *in, size_t n, kiln_tensor_t *out, size_t m) {
                     return kiln_model_run(model_.get(), in, n, out, m, options);
                   },
                   options);
  }
  static std::vector<kiln_tensor_t> views(std::vector<HostTensor> &tensors) {
    std::vector<kiln_tensor_t> in;
    for (HostTensor &t : tensors)
      in.push_back(t.view());
    return in;
  }

  /// The shared body of Model::run and Context::run: outputs sized from the
  /// inputs up front; one whose size depends on the data reports it on a first
  /// attempt, and the run is repeated.
  template <typename RunFn>
  Status runWith(std::vector<kiln_tensor_t> in, std::vector<HostTensor> *outputs, RunFn run,
                 const kiln_run_options_t *options) const {
    // Output buffers are allocated here, before the run checks its size limit.
    uint64_t limit = KILN_DEFAULT_MAX_TENSOR_BYTES;
    if (options && options->struct_size >= sizeof(kiln_run_options_t) && options->max_tensor_bytes)
      limit = options->max_tensor_bytes;
    std::vector<kiln_tensor_t> out(numOutputs());
    std::memset(out.data(), 0, out.size() * sizeof(kiln_tensor_t));
    Status shapes = Status::fromLastCall(
        kiln_model_output_shapes(model_.get(), in.data(), in.size(), out.data(), out.size()));
    if (!shapes.ok() && shapes.code() != KILN_FAILED_PRECONDITION)
      return shapes;
    outputs->assign(out.size(), HostTensor());
    for (size_t attempt = 0; attempt <= out.size(); ++attempt) {
      for (size_t i = 0; i < out.size(); ++i) {
        HostTensor &o = (*outputs)[i];
        if (out[i].size_bytes > limit)
          return Status::error(KILN_RESOURCE_EXHAUSTED,
                               "output " + std::to_string(i) + " is " +
                                   std::to_string(out[i].size_bytes) + " bytes, over the limit of " +
                                   std::to_string(limit) + " bytes for one tensor (max tensor bytes)");
        o.data.resize(out[i].size_bytes);
        out[i].data = o.data.data();
      }
      Status s = Status::fromLastCall(run(in.data(), in.size(), out.data(), out.size()));
      if (s.code() == KILN_OUT_OF_RANGE && attempt < out.size())
        continue;
      if (!s.ok())
        return s;
      for (size_t i = 0; i < out.size(); ++i) {
        HostTensor &o = (*outputs)[i];
        o.dtype = out[i].dtype;
        o.dims.assign(out[i].dims, out[i].dims + out[i].rank);
        o.data.resize(out[i].size_bytes);
      }
      return s;
    }
    return Status::fromLastCall(KILN_INTERNAL);
  }

  /// A Model over a handle someone else owns (a JIT's model): it is not
  /// destroyed with this object.
  static Model borrow(kiln_model_t *model) {
    Model m;
    m.model_ = std::unique_ptr<kiln_model_t, Deleter>(model, Deleter{false});
    return m;
  }

private:
  using Deleter = detail::ModelDeleter;
  std::unique_ptr<kiln_model_t, Deleter> model_;
};

/// A context of one thread or stream (kiln_context_t): its arena and the plan of
/// the shapes it ran last are kept between calls. Destroy it before its model.
class Context {
public:
  Context() = default;
  static Status create(const Model &model, Context *out) {
    kiln_context_t *c = nullptr;
    Status s = Status::fromLastCall(kiln_context_create(model.get(), &c));
    if (s.ok()) {
      out->context_.reset(c);
      out->model_ = &model;
    }
    return s;
  }
  kiln_context_t *get() const { return context_.get(); }

  /// As Model::run, in this context (one thread at a time).
  Status run(std::vector<HostTensor> &inputs, std::vector<HostTensor> *outputs,
             const kiln_run_options_t *options = nullptr) {
    return run(Model::views(inputs), outputs, options);
  }
  /// The same on views of the caller's buffers.
  Status run(std::vector<kiln_tensor_t> inputs, std::vector<HostTensor> *outputs,
             const kiln_run_options_t *options = nullptr) {
    return model_->runWith(std::move(inputs), outputs,
                           [&](kiln_tensor_t *in, size_t n, kiln_tensor_t *out, size_t m) {
                             return kiln_context_run(context_.get(), in, n, out, m, options);
                           },
                           options);
  }

  /// The variant the last run used ("batch=8,seq=128" or "generic").
  std::string variant() const {
    const char *name = nullptr;
    return kiln_context_variant(context_.get(), &name) == KILN_OK && name ? name : "";
  }

private:
  struct Deleter {
    void operator()(kiln_context_t *c) const { kiln_context_destroy(c); }
  };
  std::unique_ptr<kiln_context_t, Deleter> context_;
  const Model *model_ = nullptr;
};

} // namespace kiln

#endif // KILN_RUNTIME_HPP
