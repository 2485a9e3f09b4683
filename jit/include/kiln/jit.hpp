// kiln/jit.hpp - C++ wrapper of kiln/jit.h (header-only over the C API).
#ifndef KILN_JIT_HPP
#define KILN_JIT_HPP

#include "kiln/jit.h"
#include "kiln/runtime.hpp"

#include <memory>
#include <string>

namespace kiln {

/// Compiles models in-process (libkiln_jit); the models it gives out belong to
/// it (Model::borrow handles) and live until it is destroyed.
class Jit {
public:
  Jit() = default;
  /// `options` may be null (the defaults).
  static Status create(const kiln_jit_options_t *options, Jit *out) {
    kiln_jit_t *jit = nullptr;
    kiln_status_t code = kiln_jit_create(options, &jit);
    if (code != KILN_OK)
      return Status::error(code, kiln_jit_last_error());
    out->jit_.reset(jit);
    return Status();
  }
  kiln_jit_t *get() const { return jit_.get(); }

  /// An .onnx or .mlir model, compiled (or found in a cache).
  Status compileFile(const std::string &path, Model *out) {
    kiln_model_t *model = nullptr;
    kiln_status_t code = kiln_jit_compile_file(jit_.get(), path.c_str(), &model);
    if (code != KILN_OK)
      return Status::error(code, kiln_jit_last_error());
    *out = Model::borrow(model);
    return Status();
  }
  Status compileMemory(const void *data, size_t size, const std::string &name, Model *out) {
    kiln_model_t *model = nullptr;
    kiln_status_t code = kiln_jit_compile_memory(jit_.get(), data, size, name.c_str(), &model);
    if (code != KILN_OK)
      return Status::error(code, kiln_jit_last_error());
    *out = Model::borrow(model);
    return Status();
  }
  /// What kiln-compile --explain prints for the model (kiln_jit_explain_memory).
  Status explainMemory(const void *data, size_t size, const std::string &name, std::string *out) {
    const char *text = nullptr;
    kiln_status_t code = kiln_jit_explain_memory(jit_.get(), data, size, name.c_str(), &text);
    if (code != KILN_OK)
      return Status::error(code, kiln_jit_last_error());
    *out = text;
    return Status();
  }
  /// Gives back one handle of a model this JIT compiled (kiln_jit_release).
  Status release(const Model &model) {
    kiln_status_t code = kiln_jit_release(jit_.get(), model.get());
    if (code != KILN_OK)
      return Status::error(code, kiln_jit_last_error());
    return Status();
  }
  /// Blocks until the background specializations queued so far are installed.
  void waitIdle() { kiln_jit_wait_idle(jit_.get()); }
  kiln_jit_stats_t stats() const {
    kiln_jit_stats_t s{};
    kiln_jit_stats(jit_.get(), &s);
    return s;
  }

private:
  struct Deleter {
    void operator()(kiln_jit_t *j) const { kiln_jit_destroy(j); }
  };
  std::unique_ptr<kiln_jit_t, Deleter> jit_;
};

} // namespace kiln

#endif // KILN_JIT_HPP
