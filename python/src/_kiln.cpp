// _kiln: the Python binding of kiln's C API (nanobind). The public module is
// kiln/__init__.py; this file is its native half: models loaded from files or
// compiled by libkiln_jit, metadata with symbolic dims, and runs that take
// numpy arrays or anything speaking DLPack and give numpy arrays back. The GIL
// is released while a model runs; every failure raises kiln.KilnError with
// kiln's one-line message.

#include "kiln/runtime.h"
#ifdef KILN_PYTHON_HAS_JIT
#include "kiln/jit.h"
#endif

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

struct KilnError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(kiln_status_t status) {
  if (status != KILN_OK)
    throw KilnError(kiln_last_error());
}

/// kiln's dtype of a DLPack dtype, or an error naming it.
kiln_dtype_t toKiln(nb::dlpack::dtype t) {
  using nb::dlpack::dtype_code;
  auto code = static_cast<dtype_code>(t.code);
  if (t.lanes != 1)
    throw KilnError("vector dtypes are not supported");
  switch (code) {
  case dtype_code::Float:
    if (t.bits == 16) return KILN_F16;
    if (t.bits == 32) return KILN_F32;
    if (t.bits == 64) return KILN_F64;
    break;
  case dtype_code::Bfloat:
    if (t.bits == 16) return KILN_BF16;
    break;
  case dtype_code::Int:
    if (t.bits == 8) return KILN_I8;
    if (t.bits == 16) return KILN_I16;
    if (t.bits == 32) return KILN_I32;
    if (t.bits == 64) return KILN_I64;
    break;
  case dtype_code::UInt:
    if (t.bits == 8) return KILN_U8;
    if (t.bits == 16) return KILN_U16;
    if (t.bits == 32) return KILN_U32;
    if (t.bits == 64) return KILN_U64;
    break;
  case dtype_code::Bool:
    return KILN_BOOL;
  default:
    break;
  }
  throw KilnError("an array of dtype code " + std::to_string(t.code) + " with " +
                  std::to_string(t.bits) + " bits has no kiln dtype");
}

nb::dlpack::dtype toDlpack(kiln_dtype_t t) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code c, int bits) {
    nb::dlpack::dtype d;
    d.code = static_cast<uint8_t>(c);
    d.bits = static_cast<uint8_t>(bits);
    d.lanes = 1;
    return d;
  };
  switch (t) {
  case KILN_F16: return make(dtype_code::Float, 16);
  case KILN_BF16: return make(dtype_code::Bfloat, 16);
  case KILN_F32: return make(dtype_code::Float, 32);
  case KILN_F64: return make(dtype_code::Float, 64);
  case KILN_BOOL: return make(dtype_code::Bool, 8);
  case KILN_I8: return make(dtype_code::Int, 8);
  case KILN_I16: return make(dtype_code::Int, 16);
  case KILN_I32: return make(dtype_code::Int, 32);
  case KILN_I64: return make(dtype_code::Int, 64);
  case KILN_U8: return make(dtype_code::UInt, 8);
  case KILN_U16: return make(dtype_code::UInt, 16);
  case KILN_U32: return make(dtype_code::UInt, 32);
  case KILN_U64: return make(dtype_code::UInt, 64);
  default:
    throw KilnError("kiln dtype " + std::to_string(t) + " has no numpy dtype");
  }
}

size_t dtypeBytes(kiln_dtype_t t) {
  switch (t) {
  case KILN_F16: case KILN_BF16: case KILN_I16: case KILN_U16: return 2;
  case KILN_F32: case KILN_I32: case KILN_U32: return 4;
  case KILN_F64: case KILN_I64: case KILN_U64: return 8;
  default: return 1;
  }
}

const char *dtypeName(kiln_dtype_t t) {
  static const char *const names[] = {"float16", "bfloat16", "float32", "float64", "bool",
                                      "int8",    "int16",    "int32",   "int64",   "uint8",
                                      "uint16",  "uint32",   "uint64"};
  return t >= 0 && t < 13 ? names[t] : "unknown";
}

/// A tensor's description: name, dtype name, and dims (ints, or the symbolic
/// dim's spelling: "batch", "2 * seq").
struct TensorInfo {
  std::string name, dtype;
  nb::list dims;
};

TensorInfo describe(const kiln_tensor_info_t &info) {
  TensorInfo t;
  t.name = info.name;
  t.dtype = dtypeName(info.dtype);
  for (int d = 0; d < info.rank; ++d) {
    if (info.dims[d] >= 0)
      t.dims.append(info.dims[d]);
    else
      t.dims.append(nb::str(info.dim_names[d]));
  }
  return t;
}

/// A loaded or compiled model. Models from the JIT belong to it.
class Model {
public:
  Model(kiln_model_t *model, bool owned, std::shared_ptr<void> keepAlive = {})
      : model_(model), owned_(owned), keepAlive_(std::move(keepAlive)) {}
  ~Model() {
    if (owned_)
      kiln_model_destroy(model_);
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  std::vector<TensorInfo> inputs() const { return infos(true); }
  std::vector<TensorInfo> outputs() const { return infos(false); }
  std::string backend() const {
    kiln_backend_t b = KILN_BACKEND_HOST;
    check(kiln_model_backend(model_, &b));
    return b == KILN_BACKEND_CUDA ? "cuda" : "host";
  }
  std::string backendDescription() const {
    const char *d = "";
    check(kiln_model_backend_description(model_, &d));
    return d;
  }

  /// Runs on `inputs` (name -> array); returns name -> numpy array, or with
  /// `dlpack` objects that speak DLPack (torch.from_dlpack takes them as is).
  nb::dict run(nb::dict inputs, bool dlpack) {
    size_t numInputs = 0, numOutputs = 0;
    check(kiln_model_num_inputs(model_, &numInputs));
    check(kiln_model_num_outputs(model_, &numOutputs));
    std::vector<kiln_tensor_t> in(numInputs);
    std::vector<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>> arrays;
    size_t used = 0;
    for (size_t i = 0; i < numInputs; ++i) {
      kiln_tensor_info_t info;
      check(kiln_model_input_info(model_, i, &info));
      nb::str key(info.name);
      if (!inputs.contains(key))
        throw KilnError(std::string("missing input '") + info.name + "'");
      ++used;
      nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> a;
      if (!nb::try_cast(inputs[key], a))
        throw KilnError(std::string("input '") + info.name +
                        "' is not a C-contiguous CPU array (numpy, or DLPack such as torch)");
      if (a.ndim() > KILN_MAX_RANK)
        throw KilnError(std::string("input '") + info.name + "' has rank " +
                        std::to_string(a.ndim()) + "; kiln takes at most " +
                        std::to_string(KILN_MAX_RANK));
      kiln_tensor_t &t = in[i];
      std::memset(&t, 0, sizeof(t));
      t.dtype = toKiln(a.dtype());
      t.rank = static_cast<int32_t>(a.ndim());
      for (size_t d = 0; d < a.ndim(); ++d)
        t.dims[d] = static_cast<int64_t>(a.shape(d));
      t.data = const_cast<void *>(a.data());
      t.size_bytes = a.nbytes();
      arrays.push_back(a);
    }
    if (used != nb::len(inputs)) {
      for (auto [key, value] : inputs) {
        bool known = false;
        for (size_t i = 0; i < numInputs && !known; ++i) {
          kiln_tensor_info_t info;
          check(kiln_model_input_info(model_, i, &info));
          known = nb::str(info.name).equal(key);
        }
        if (!known)
          throw KilnError("the model has no input '" + std::string(nb::str(key).c_str()) + "'");
      }
    }
    // Outputs sized from the inputs; one whose size depends on data is sized
    // by a first run that reports it.
    std::vector<kiln_tensor_t> out(numOutputs);
    std::memset(out.data(), 0, out.size() * sizeof(kiln_tensor_t));
    kiln_status_t status;
    {
      nb::gil_scoped_release release;
      status = kiln_model_output_shapes(model_, in.data(), in.size(), out.data(), out.size());
    }
    std::vector<std::unique_ptr<uint8_t[]>> buffers(numOutputs);
    auto allocate = [&] {
      for (size_t k = 0; k < numOutputs; ++k) {
        buffers[k].reset(new uint8_t[std::max<size_t>(out[k].size_bytes, 1)]);
        out[k].data = buffers[k].get();
      }
    };
    if (status == KILN_OK) {
      allocate();
      nb::gil_scoped_release release;
      status = kiln_model_run(model_, in.data(), in.size(), out.data(), out.size(), nullptr);
    } else {
      {
        nb::gil_scoped_release release;
        status = kiln_model_run(model_, in.data(), in.size(), out.data(), out.size(), nullptr);
      }
      if (status == KILN_OUT_OF_RANGE) {
        allocate();
        nb::gil_scoped_release release;
        status = kiln_model_run(model_, in.data(), in.size(), out.data(), out.size(), nullptr);
      }
    }
    check(status);
    nb::dict result;
    for (size_t k = 0; k < numOutputs; ++k) {
      kiln_tensor_info_t info;
      check(kiln_model_output_info(model_, k, &info));
      std::vector<size_t> shape(out[k].dims, out[k].dims + out[k].rank);
      uint8_t *data = buffers[k].release();
      nb::capsule owner(data, [](void *p) noexcept { delete[] static_cast<uint8_t *>(p); });
      if (dlpack)
        result[info.name] = nb::ndarray<nb::array_api>(data, shape.size(), shape.data(), owner, nullptr,
                                          toDlpack(out[k].dtype));
      else
        result[info.name] = nb::ndarray<nb::numpy>(data, shape.size(), shape.data(), owner,
                                                   nullptr, toDlpack(out[k].dtype));
    }
    return result;
  }

private:
  std::vector<TensorInfo> infos(bool inputs) const {
    size_t n = 0;
    check(inputs ? kiln_model_num_inputs(model_, &n) : kiln_model_num_outputs(model_, &n));
    std::vector<TensorInfo> list;
    for (size_t i = 0; i < n; ++i) {
      kiln_tensor_info_t info;
      check(inputs ? kiln_model_input_info(model_, i, &info) : kiln_model_output_info(model_, i, &info));
      list.push_back(describe(info));
    }
    return list;
  }

  kiln_model_t *model_;
  bool owned_;
  std::shared_ptr<void> keepAlive_; ///< the JIT, for its models
};

kiln_backend_t parseBackend(const std::string &name) {
  if (name == "auto")
    return KILN_BACKEND_AUTO;
  if (name == "cuda")
    return KILN_BACKEND_CUDA;
  if (name == "host")
    return KILN_BACKEND_HOST;
  throw KilnError("backend '" + name + "' is not auto, cuda or host");
}

std::unique_ptr<Model> load(const std::string &path, const std::string &backend) {
  kiln_model_t *model = nullptr;
  kiln_backend_t b = parseBackend(backend);
  kiln_status_t status;
  {
    nb::gil_scoped_release release;
    status = kiln_model_load_file(path.c_str(), b, &model);
  }
  check(status);
  return std::make_unique<Model>(model, true);
}

#ifdef KILN_PYTHON_HAS_JIT
/// One JIT per (cache folder, backend) for the process: models compiled twice
/// are one handle, variants are shared.
std::shared_ptr<kiln_jit_t> jitFor(const std::string &cacheDir, kiln_backend_t backend) {
  static std::mutex mutex;
  static std::vector<std::pair<std::string, std::shared_ptr<kiln_jit_t>>> jits;
  std::string key = cacheDir + "|" + std::to_string(backend);
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &[k, jit] : jits)
    if (k == key)
      return jit;
  kiln_jit_options_t options;
  kiln_jit_options_init(&options);
  options.cache_dir = cacheDir.empty() ? nullptr : cacheDir.c_str();
  options.backend = backend;
  kiln_jit_t *raw = nullptr;
  if (kiln_jit_create(&options, &raw) != KILN_OK)
    throw KilnError(kiln_jit_last_error());
  // Never destroyed: models handed to Python may outlive any one call, and
  // the JIT owns them; it lives with the process.
  std::shared_ptr<kiln_jit_t> jit(raw, [](kiln_jit_t *) {});
  jits.emplace_back(key, jit);
  return jit;
}

std::unique_ptr<Model> compileModel(nb::object model, const std::string &backend,
                                    const std::string &cacheDir, const std::string &name) {
  std::shared_ptr<kiln_jit_t> jit = jitFor(cacheDir, parseBackend(backend));
  kiln_model_t *handle = nullptr;
  kiln_status_t status;
  if (nb::isinstance<nb::bytes>(model)) {
    nb::bytes bytes = nb::cast<nb::bytes>(model);
    std::string data(bytes.c_str(), bytes.size());
    nb::gil_scoped_release release;
    status = kiln_jit_compile_memory(jit.get(), data.data(), data.size(), name.c_str(), &handle);
  } else {
    std::string path = nb::cast<std::string>(nb::str(model));
    nb::gil_scoped_release release;
    status = kiln_jit_compile_file(jit.get(), path.c_str(), &handle);
  }
  if (status != KILN_OK)
    throw KilnError(kiln_jit_last_error());
  return std::make_unique<Model>(handle, false, jit);
}
#endif

} // namespace

NB_MODULE(_kiln, m) {
  m.doc() = "kiln's runtime (and JIT, where built with it): the native half of the kiln package";
  nb::exception<KilnError>(m, "KilnError");
  nb::class_<TensorInfo>(m, "TensorInfo")
      .def_ro("name", &TensorInfo::name)
      .def_ro("dtype", &TensorInfo::dtype)
      .def_ro("dims", &TensorInfo::dims)
      .def("__repr__", [](const TensorInfo &t) {
        std::string dims;
        for (nb::handle d : t.dims)
          dims += (dims.empty() ? "" : ", ") + std::string(nb::str(d).c_str());
        return "TensorInfo(" + t.name + ": " + t.dtype + "[" + dims + "])";
      });
  nb::class_<Model>(m, "Model")
      .def_prop_ro("inputs", &Model::inputs)
      .def_prop_ro("outputs", &Model::outputs)
      .def_prop_ro("backend", &Model::backend)
      .def_prop_ro("backend_description", &Model::backendDescription)
      .def("run", &Model::run, nb::arg("inputs"), nb::arg("dlpack") = false);
  m.def("load", &load, nb::arg("path"), nb::arg("backend") = "auto");
#ifdef KILN_PYTHON_HAS_JIT
  m.def("compile", &compileModel, nb::arg("model"), nb::arg("backend") = "auto",
        nb::arg("cache_dir") = "", nb::arg("name") = "model.onnx");
  m.attr("has_jit") = true;
#else
  m.attr("has_jit") = false;
#endif
  m.def("runtime_version", [] { return std::string(kiln_runtime_version()); });
}
