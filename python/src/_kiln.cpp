// _kiln: the Python binding of kiln's C API (nanobind). The public module is
// kiln/__init__.py; this file is its native half: models loaded from files or
// compiled by libkiln_jit, metadata with symbolic dims, and runs that take
// numpy arrays or anything speaking DLPack and give numpy arrays back. The GIL
// is released while a model runs; every failure raises kiln.KilnError with
// kiln's one-line message.

#include "kiln/runtime.hpp"
#ifdef KILN_PYTHON_HAS_JIT
#include "kiln/jit.h"
#endif

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

/// `text` as valid UTF-8: each byte that is not part of a well-formed
/// sequence becomes `\xNN`. Messages may quote a model's own bytes (a node
/// name from a corrupt file), and Python takes an exception's text as UTF-8:
/// an ill-formed one would arrive as an empty KilnError.
std::string utf8Safe(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool wellFormed = length > 0 && i + length <= text.size();
    for (size_t k = 1; wellFormed && k < length; ++k)
      wellFormed = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    // Overlong forms and surrogates are ill-formed too (Python refuses them).
    if (wellFormed && length == 2)
      wellFormed = c >= 0xC2;
    if (wellFormed && length == 3) {
      unsigned char d = static_cast<unsigned char>(text[i + 1]);
      wellFormed = !(c == 0xE0 && d < 0xA0) && !(c == 0xED && d >= 0xA0);
    }
    if (wellFormed && length == 4) {
      unsigned char d = static_cast<unsigned char>(text[i + 1]);
      wellFormed = c <= 0xF4 && !(c == 0xF0 && d < 0x90) && !(c == 0xF4 && d >= 0x90);
    }
    if (wellFormed) {
      out.append(text, i, length);
      i += length;
      continue;
    }
    static const char digits[] = "0123456789abcdef";
    out += "\\x";
    out += digits[c >> 4];
    out += digits[c & 15];
    ++i;
  }
  return out;
}

struct KilnError : std::runtime_error {
  explicit KilnError(const std::string &message) : std::runtime_error(utf8Safe(message)) {}
};

/// A path argument as the C API takes it: a NUL byte would end it early
/// (another file than the one named), so it is refused.
std::string pathArgument(const std::string &path) {
  if (path.find('\0') != std::string::npos)
    throw KilnError("the path '" + path.substr(0, path.find('\0')) +
                    "\\0...' holds a NUL byte, which no file name can");
  return path;
}

void check(kiln_status_t status) {
  if (status != KILN_OK)
    throw KilnError(kiln_last_error());
}

/// kiln's dtypes with their DLPack codes and numpy names: the one table both
/// directions read.
struct DtypeRow {
  kiln_dtype_t kiln;
  nb::dlpack::dtype_code code;
  uint8_t bits;
  const char *name;
};
constexpr DtypeRow kDtypes[] = {
    {KILN_F16, nb::dlpack::dtype_code::Float, 16, "float16"},
    {KILN_BF16, nb::dlpack::dtype_code::Bfloat, 16, "bfloat16"},
    {KILN_F32, nb::dlpack::dtype_code::Float, 32, "float32"},
    {KILN_F64, nb::dlpack::dtype_code::Float, 64, "float64"},
    {KILN_BOOL, nb::dlpack::dtype_code::Bool, 8, "bool"},
    {KILN_I8, nb::dlpack::dtype_code::Int, 8, "int8"},
    {KILN_I16, nb::dlpack::dtype_code::Int, 16, "int16"},
    {KILN_I32, nb::dlpack::dtype_code::Int, 32, "int32"},
    {KILN_I64, nb::dlpack::dtype_code::Int, 64, "int64"},
    {KILN_U8, nb::dlpack::dtype_code::UInt, 8, "uint8"},
    {KILN_U16, nb::dlpack::dtype_code::UInt, 16, "uint16"},
    {KILN_U32, nb::dlpack::dtype_code::UInt, 32, "uint32"},
    {KILN_U64, nb::dlpack::dtype_code::UInt, 64, "uint64"},
};

/// kiln's dtype of a DLPack dtype, or an error naming it.
kiln_dtype_t toKiln(nb::dlpack::dtype t) {
  if (t.lanes != 1)
    throw KilnError("vector dtypes are not supported");
  for (const DtypeRow &r : kDtypes)
    if (static_cast<uint8_t>(r.code) == t.code && r.bits == t.bits)
      return r.kiln;
  throw KilnError("an array of dtype code " + std::to_string(t.code) + " with " +
                  std::to_string(t.bits) + " bits has no kiln dtype");
}

const DtypeRow &rowOf(kiln_dtype_t t) {
  for (const DtypeRow &r : kDtypes)
    if (r.kiln == t)
      return r;
  throw KilnError("kiln dtype " + std::to_string(t) + " has no numpy dtype");
}

nb::dlpack::dtype toDlpack(kiln_dtype_t t) {
  const DtypeRow &r = rowOf(t);
  nb::dlpack::dtype d;
  d.code = static_cast<uint8_t>(r.code);
  d.bits = r.bits;
  d.lanes = 1;
  return d;
}

const char *dtypeName(kiln_dtype_t t) {
  for (const DtypeRow &r : kDtypes)
    if (r.kiln == t)
      return r.name;
  return "unknown";
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
  /// The CUDA device ordinal it runs on; None in host emulation.
  std::optional<int> device() const {
    int32_t d = -1;
    check(kiln_model_device(model_, &d));
    return d < 0 ? std::nullopt : std::optional<int>(d);
  }
  std::string backendDescription() const {
    const char *d = "";
    check(kiln_model_backend_description(model_, &d));
    return d;
  }

  /// kiln_generate: new token ids [batch, max_new_tokens] (int64) after each
  /// prompt of `ids` [batch, length] (int64, C order); `on_tokens(step,
  /// tokens)` sees each step's tokens and ends generation by returning True.
  nb::ndarray<nb::numpy, int64_t> generate(
      nb::ndarray<const int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> ids,
      std::optional<nb::ndarray<const int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>> mask,
      int32_t maxNewTokens, std::vector<int64_t> stopTokens, float temperature, int32_t topK,
      float topP, uint64_t seed, std::optional<nb::callable> onTokens) {
    size_t batch = ids.shape(0), length = ids.shape(1);
    if (mask && (mask->shape(0) != batch || mask->shape(1) != length))
      throw nb::value_error("attention_mask must have input_ids' shape");
    if (maxNewTokens < 0)
      throw nb::value_error("max_new_tokens must be >= 0");
    kiln_generate_options_t options = KILN_GENERATE_OPTIONS_INIT;
    options.max_new_tokens = maxNewTokens;
    options.stop_tokens = stopTokens.data();
    options.num_stop_tokens = stopTokens.size();
    options.temperature = temperature;
    options.top_k = topK;
    options.top_p = topP;
    options.seed = seed;
    // The callback runs on this thread with the GIL held; an exception it
    // raises stops generation and is raised again here.
    struct Callback {
      nb::callable fn;
      std::optional<nb::python_error> error;
    } callback{onTokens ? *onTokens : nb::callable(), std::nullopt};
    if (onTokens) {
      options.user = &callback;
      options.on_tokens = [](void *user, size_t step, const int64_t *tokens, size_t n) -> int {
        auto *cb = static_cast<Callback *>(user);
        nb::gil_scoped_acquire acquired;
        try {
          std::vector<int64_t> copy(tokens, tokens + n);
          nb::list list;
          for (int64_t t : copy)
            list.append(t);
          return nb::cast<bool>(nb::bool_(cb->fn(step, list))) ? 1 : 0;
        } catch (nb::python_error &e) {
          cb->error.emplace(std::move(e));
          return 1;
        }
      };
    }
    auto *out = new std::vector<int64_t>(std::max<size_t>(batch * maxNewTokens, 1));
    nb::capsule owner(out, [](void *p) noexcept { delete static_cast<std::vector<int64_t> *>(p); });
    size_t steps = 0;
    kiln_status_t status;
    {
      // Other threads run while the model does; the callback takes the GIL back.
      nb::gil_scoped_release released;
      status = kiln_generate(model_, ids.data(), mask ? mask->data() : nullptr, batch, length,
                             &options, out->data(), &steps);
    }
    if (callback.error)
      throw std::move(*callback.error);
    check(status);
    size_t shape[2] = {batch, static_cast<size_t>(maxNewTokens)};
    return nb::ndarray<nb::numpy, int64_t>(out->data(), 2, shape, owner);
  }

  /// Runs on `inputs` (name -> array); returns name -> numpy array, or with
  /// `dlpack` objects that speak DLPack (torch.from_dlpack takes them as is).
  /// Inputs on the CUDA device (DLPack, such as torch CUDA tensors) run with
  /// device buffers, and the outputs stay on the device (DLPack objects).
  nb::dict run(nb::handle self, nb::dict inputs, bool dlpack) {
    size_t numInputs = 0;
    check(kiln_model_num_inputs(model_, &numInputs));
    std::vector<kiln_tensor_info_t> infos(numInputs);
    for (size_t i = 0; i < numInputs; ++i)
      check(kiln_model_input_info(model_, i, &infos[i]));
    // Unknown names first: a misspelt name explains the input it leaves missing.
    for (auto [key, value] : inputs) {
      bool known = false;
      for (const kiln_tensor_info_t &info : infos)
        known = known || nb::str(info.name).equal(key);
      if (!known) {
        std::string names;
        for (const kiln_tensor_info_t &info : infos)
          names += (names.empty() ? "" : ", ") + std::string(info.name);
        throw KilnError("the model has no input '" + std::string(nb::str(key).c_str()) +
                        "' (its inputs: " + names + ")");
      }
    }
    std::vector<kiln_tensor_t> in(numInputs);
    std::vector<AnyArray> arrays;
    const char *firstDevice = nullptr, *firstHost = nullptr;
    for (size_t i = 0; i < numInputs; ++i) {
      const kiln_tensor_info_t &info = infos[i];
      nb::str key(info.name);
      if (!inputs.contains(key))
        throw KilnError(std::string("missing input '") + info.name + "'");
      AnyArray a;
      if (!nb::try_cast(inputs[key], a))
        throw KilnError(std::string("input '") + info.name +
                        "' is not a C-contiguous array (numpy, or DLPack such as torch)");
      (onDevice(a, std::string("input '") + info.name + "'") ? firstDevice : firstHost) = info.name;
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
    if (firstDevice && firstHost)
      throw KilnError(std::string("input '") + firstDevice + "' is on the CUDA device and input '" +
                      firstHost + "' on the host; one call takes its inputs from one of them");
    if (firstDevice) {
      requireDevice(std::string("input '") + firstDevice + "' is on the CUDA device");
      return runOnDevice(self, in);
    }
    // Sized and run by the C++ wrapper (outputs sized by the data, the size
    // limit), on views of the arrays: no copy of the inputs.
    std::vector<kiln::HostTensor> outputs;
    kiln::Status status;
    {
      nb::gil_scoped_release release;
      status = kiln::Model::borrow(model_).run(in, &outputs);
    }
    if (!status.ok())
      throw KilnError(status.message());
    nb::dict result;
    for (size_t k = 0; k < outputs.size(); ++k) {
      kiln_tensor_info_t info;
      check(kiln_model_output_info(model_, k, &info));
      std::vector<size_t> shape(outputs[k].dims.begin(), outputs[k].dims.end());
      // The array owns the output's bytes from here on.
      auto *bytes = new std::vector<uint8_t>(std::move(outputs[k].data));
      nb::capsule owner(bytes, [](void *p) noexcept { delete static_cast<std::vector<uint8_t> *>(p); });
      if (dlpack)
        result[info.name] = nb::ndarray<nb::array_api>(bytes->data(), shape.size(), shape.data(), owner,
                                                       nullptr, toDlpack(outputs[k].dtype));
      else
        result[info.name] = nb::ndarray<nb::numpy>(bytes->data(), shape.size(), shape.data(), owner,
                                                   nullptr, toDlpack(outputs[k].dtype));
    }
    return result;
  }

  /// A copy of a host array in device memory of the model's device (a DLPack
  /// object, freed with its last reference).
  nb::object toDevice(nb::handle self, nb::handle array) {
    requireDevice("to_device");
    AnyArray a;
    if (!nb::try_cast(array, a))
      throw KilnError("to_device takes a C-contiguous array (numpy, or DLPack such as torch)");
    if (onDevice(a, "to_device's array"))
      throw KilnError("to_device: the array is on the CUDA device already");
    void *device = nullptr;
    check(kiln_model_device_alloc(model_, a.nbytes(), &device));
    kiln_status_t copied;
    {
      nb::gil_scoped_release release;
      copied = kiln_model_copy_to_device(model_, device, a.data(), a.nbytes());
    }
    if (copied != KILN_OK) {
      std::string message = kiln_last_error();
      kiln_model_device_free(model_, device);
      throw KilnError(message);
    }
    std::vector<size_t> shape(a.shape_ptr(), a.shape_ptr() + a.ndim());
    return deviceArray(self, device, toKiln(a.dtype()), shape);
  }

  /// A numpy copy of a DLPack array on the model's device (or of a host array).
  nb::object toHost(nb::handle array) {
    AnyArray a;
    if (!nb::try_cast(array, a))
      throw KilnError("to_host takes a C-contiguous array (numpy, or DLPack such as torch)");
    auto *bytes = new std::vector<uint8_t>(a.nbytes());
    nb::capsule owner(bytes, [](void *p) noexcept { delete static_cast<std::vector<uint8_t> *>(p); });
    if (onDevice(a, "to_host's array")) {
      requireDevice("to_host");
      kiln_status_t copied;
      {
        nb::gil_scoped_release release;
        copied = kiln_model_copy_to_host(model_, bytes->data(), a.data(), a.nbytes());
      }
      check(copied);
    } else if (a.nbytes()) {
      std::memcpy(bytes->data(), a.data(), a.nbytes());
    }
    std::vector<size_t> shape(a.shape_ptr(), a.shape_ptr() + a.ndim());
    return nb::cast(nb::ndarray<nb::numpy>(bytes->data(), shape.size(), shape.data(), owner, nullptr,
                                           a.dtype()));
  }

private:
  using AnyArray = nb::ndarray<nb::ro, nb::c_contig>;

  /// Whether `a` is in CUDA device memory (true) or host memory (false);
  /// anything else, or another device than the model's, is an error naming
  /// `what`.
  bool onDevice(const AnyArray &a, const std::string &what) const {
    switch (a.device_type()) {
    case nb::device::cpu::value:
    case nb::device::cuda_host::value:
      return false;
    case nb::device::cuda::value:
    case nb::device::cuda_managed::value: {
      std::optional<int> mine = device();
      if (mine && a.device_id() != *mine)
        throw KilnError(what + " is on cuda:" + std::to_string(a.device_id()) +
                        " and the model runs on cuda:" + std::to_string(*mine) +
                        " (load it with device=" + std::to_string(a.device_id()) + ")");
      return true;
    }
    default:
      throw KilnError(what + " is on DLPack device type " + std::to_string(a.device_type()) +
                      ", neither the host nor CUDA");
    }
  }

  void requireDevice(const std::string &what) const {
    kiln_backend_t backend = KILN_BACKEND_HOST;
    check(kiln_model_backend(model_, &backend));
    if (backend != KILN_BACKEND_CUDA)
      throw KilnError(what + " but the model runs in host emulation (load it with "
                             "backend='cuda' on a machine with a GPU)");
  }

  /// Device memory the model allocated, freed with the array that holds it.
  /// Keeps the Python model (and so the kiln model) alive until then.
  struct DeviceBuffer {
    nb::object model;
    kiln_model_t *handle;
    void *address;
    ~DeviceBuffer() { kiln_model_device_free(handle, address); }
  };

  nb::object deviceArray(nb::handle self, void *address, kiln_dtype_t dtype,
                         const std::vector<size_t> &shape) {
    auto *buffer = new DeviceBuffer{nb::borrow(self), model_, address};
    nb::capsule owner(buffer, [](void *p) noexcept { delete static_cast<DeviceBuffer *>(p); });
    return nb::cast(nb::ndarray<nb::array_api>(address, shape.size(), shape.data(), owner, nullptr,
                                               toDlpack(dtype), nb::device::cuda::value,
                                               device().value_or(0)));
  }

  /// A run on device inputs: outputs in device memory the model allocates,
  /// sized from the inputs, or (sizes that depend on the data) by a first
  /// attempt that reports them.
  nb::dict runOnDevice(nb::handle self, std::vector<kiln_tensor_t> &in) {
    size_t numOutputs = 0;
    check(kiln_model_num_outputs(model_, &numOutputs));
    std::vector<kiln_tensor_t> out(numOutputs);
    std::memset(out.data(), 0, out.size() * sizeof(kiln_tensor_t));
    std::vector<void *> buffers(numOutputs, nullptr);
    std::vector<size_t> capacity(numOutputs, 0);
    std::string error;
    {
      nb::gil_scoped_release release;
      kiln_status_t status =
          kiln_model_output_shapes(model_, in.data(), in.size(), out.data(), out.size());
      if (status != KILN_OK && status != KILN_FAILED_PRECONDITION)
        error = kiln_last_error();
      kiln_run_options_t options = KILN_RUN_OPTIONS_INIT;
      options.device_buffers = 1;
      for (size_t attempt = 0; error.empty() && attempt <= numOutputs; ++attempt) {
        for (size_t i = 0; i < numOutputs && error.empty(); ++i) {
          if (out[i].size_bytes > KILN_DEFAULT_MAX_TENSOR_BYTES) {
            error = "output " + std::to_string(i) + " is " + std::to_string(out[i].size_bytes) +
                    " bytes, over the limit of " + std::to_string(KILN_DEFAULT_MAX_TENSOR_BYTES) +
                    " bytes for one tensor (max tensor bytes)";
          } else if (!buffers[i] || out[i].size_bytes > capacity[i]) {
            kiln_model_device_free(model_, buffers[i]);
            buffers[i] = nullptr;
            if (kiln_model_device_alloc(model_, out[i].size_bytes, &buffers[i]) != KILN_OK)
              error = kiln_last_error();
            capacity[i] = out[i].size_bytes;
          }
          out[i].data = buffers[i];
          out[i].size_bytes = capacity[i];
        }
        if (!error.empty())
          break;
        status = kiln_model_run(model_, in.data(), in.size(), out.data(), out.size(), &options);
        if (status == KILN_OK)
          break;
        if (status != KILN_OUT_OF_RANGE || attempt == numOutputs)
          error = kiln_last_error();
      }
      if (!error.empty())
        for (void *b : buffers)
          kiln_model_device_free(model_, b);
    }
    if (!error.empty())
      throw KilnError(error);
    nb::dict result;
    for (size_t k = 0; k < numOutputs; ++k) {
      kiln_tensor_info_t info;
      check(kiln_model_output_info(model_, k, &info));
      std::vector<size_t> shape(out[k].dims, out[k].dims + out[k].rank);
      result[info.name] = deviceArray(self, buffers[k], out[k].dtype, shape);
    }
    return result;
  }

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

std::unique_ptr<Model> load(const std::string &path, const std::string &backend, int device) {
  pathArgument(path);
  kiln_model_t *model = nullptr;
  kiln_load_options_t options = KILN_LOAD_OPTIONS_INIT;
  options.backend = parseBackend(backend);
  options.device = device;
  kiln_status_t status;
  {
    nb::gil_scoped_release release;
    status = kiln_model_load_file_with(path.c_str(), &options, &model);
  }
  check(status);
  return std::make_unique<Model>(model, true);
}

#ifdef KILN_PYTHON_HAS_JIT
/// One JIT per (cache folder, backend, device) for the process: models
/// compiled twice are one handle, variants are shared.
struct JitRegistry {
  std::mutex mutex;
  std::vector<std::pair<std::string, std::shared_ptr<kiln_jit_t>>> jits;
};
JitRegistry &jitRegistry() {
  static JitRegistry registry;
  return registry;
}

/// kiln-compile's modes a JIT compiles every model in: --precision,
/// --weights, --group-size (0: the default), --calibrate.
struct CompileModes {
  std::string precision, weights;
  int64_t groupSize = 0;
  std::string calibration;
};

std::shared_ptr<kiln_jit_t> jitFor(const std::string &cacheDir, kiln_backend_t backend, int device,
                                   const CompileModes &modes = {}) {
  pathArgument(cacheDir);
  if (!modes.calibration.empty())
    pathArgument(modes.calibration);
  auto &[mutex, jits] = jitRegistry();
  // "" is fp32 and float weights: one JIT (and one handle per model) for
  // both spellings.
  std::string key = cacheDir + "|" + std::to_string(backend) + "|" + std::to_string(device) + "|" +
                    (modes.precision.empty() ? "fp32" : modes.precision) + "|" +
                    (modes.weights.empty() ? "float" : modes.weights) + "|" +
                    // 0 is the default, 128; float weights take none.
                    (modes.weights.empty() || modes.weights == "float"
                         ? std::string()
                         : std::to_string(modes.groupSize ? modes.groupSize : 128)) +
                    "|" + modes.calibration;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &[k, jit] : jits)
    if (k == key)
      return jit;
  kiln_jit_options_t options;
  kiln_jit_options_init(&options);
  options.cache_dir = cacheDir.empty() ? nullptr : cacheDir.c_str();
  options.backend = backend;
  options.device = device;
  options.precision = modes.precision.c_str();
  options.weights = modes.weights.c_str();
  options.weight_group_size = modes.groupSize;
  options.calibration_dir = modes.calibration.c_str();
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
                                    const std::string &cacheDir, const std::string &name,
                                    int device, const std::string &precision,
                                    const std::string &weights, int64_t groupSize,
                                    const std::string &calibrate) {
  std::shared_ptr<kiln_jit_t> jit = jitFor(cacheDir, parseBackend(backend), device,
                                           CompileModes{precision, weights, groupSize, calibrate});
  kiln_model_t *handle = nullptr;
  kiln_status_t status;
  if (nb::isinstance<nb::bytes>(model)) {
    nb::bytes bytes = nb::cast<nb::bytes>(model);
    std::string data(bytes.c_str(), bytes.size());
    nb::gil_scoped_release release;
    status = kiln_jit_compile_memory(jit.get(), data.data(), data.size(), name.c_str(), &handle);
  } else {
    std::string path = pathArgument(nb::cast<std::string>(nb::str(model)));
    nb::gil_scoped_release release;
    status = kiln_jit_compile_file(jit.get(), path.c_str(), &handle);
  }
  if (status != KILN_OK)
    throw KilnError(kiln_jit_last_error());
  // The Python object's end gives its handle back (the JIT destroys the model
  // when no other handle of it is left); the deleter keeps the JIT alive.
  std::shared_ptr<void> release(handle, [jit](void *model) {
    kiln_jit_release(jit.get(), static_cast<kiln_model_t *>(model));
  });
  return std::make_unique<Model>(handle, false, std::move(release));
}

/// kiln-compile --explain's lines for a model's bytes (kiln.explain).
std::string explainModel(nb::bytes model, const std::string &backend, const std::string &cacheDir,
                         const std::string &name, int device, const std::string &precision,
                         const std::string &weights, int64_t groupSize,
                         const std::string &calibrate) {
  std::shared_ptr<kiln_jit_t> jit = jitFor(cacheDir, parseBackend(backend), device,
                                           CompileModes{precision, weights, groupSize, calibrate});
  std::string data(model.c_str(), model.size());
  const char *text = nullptr;
  kiln_status_t status;
  {
    nb::gil_scoped_release release;
    status = kiln_jit_explain_memory(jit.get(), data.data(), data.size(), name.c_str(), &text);
  }
  if (status != KILN_OK)
    throw KilnError(kiln_jit_last_error());
  return text;
}

/// The statistics of every JIT this process made, summed (kiln.jit_stats()).
/// `wait`: first let each finish its queued specializations.
nb::dict jitStats(bool wait) {
  std::vector<std::shared_ptr<kiln_jit_t>> jits;
  {
    auto &[mutex, registered] = jitRegistry();
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &entry : registered)
      jits.push_back(entry.second);
  }
  // The counters, named as kiln.jit_stats() names them: one table for the
  // sum and the dict.
  static const std::pair<const char *, uint64_t kiln_jit_stats_t::*> counters[] = {
      {"memory_hits", &kiln_jit_stats_t::memory_hits},
      {"disk_hits", &kiln_jit_stats_t::disk_hits},
      {"misses", &kiln_jit_stats_t::misses},
      {"compiles", &kiln_jit_stats_t::compiles},
      {"evictions", &kiln_jit_stats_t::evictions},
      {"damaged", &kiln_jit_stats_t::damaged},
      {"specializations", &kiln_jit_stats_t::specializations},
      {"dropped", &kiln_jit_stats_t::dropped},
      {"failed", &kiln_jit_stats_t::failed},
  };
  kiln_jit_stats_t sum{};
  for (const std::shared_ptr<kiln_jit_t> &jit : jits) {
    kiln_jit_stats_t one{};
    kiln_status_t status;
    {
      nb::gil_scoped_release release;
      status = wait ? kiln_jit_wait_idle(jit.get()) : KILN_OK;
      if (status == KILN_OK)
        status = kiln_jit_stats(jit.get(), &one);
    }
    if (status != KILN_OK)
      throw KilnError(kiln_jit_last_error());
    for (const auto &[name, field] : counters)
      sum.*field += one.*field;
    sum.compile_ms += one.compile_ms;
  }
  nb::dict out;
  out["jits"] = jits.size();
  for (const auto &[name, field] : counters)
    out[name] = sum.*field;
  out["compile_ms"] = sum.compile_ms;
  return out;
}
#endif

} // namespace

NB_MODULE(_kiln, m) {
  m.doc() = "kiln's runtime (and JIT, where built with it): the native half of the kiln package";
  nb::exception<KilnError>(m, "KilnError");
  // Models may live until the interpreter's end in other modules' caches
  // (torch.compile keeps the backend's callables in its code caches, freed
  // after this module at shutdown): nanobind would report them as leaks.
  nb::set_leak_warnings(false);
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
      .def_prop_ro("device", &Model::device)
      .def("run",
           [](nb::handle self, nb::dict inputs, bool dlpack) {
             return nb::cast<Model &>(self).run(self, inputs, dlpack);
           },
           nb::arg("inputs"), nb::arg("dlpack") = false)
      .def("to_device",
           [](nb::handle self, nb::handle array) { return nb::cast<Model &>(self).toDevice(self, array); },
           nb::arg("array"))
      .def("to_host", &Model::toHost, nb::arg("array"))
      .def("generate", &Model::generate, nb::arg("input_ids"), nb::arg("attention_mask").none(),
           nb::arg("max_new_tokens"), nb::arg("stop_tokens"), nb::arg("temperature"),
           nb::arg("top_k"), nb::arg("top_p"), nb::arg("seed"), nb::arg("on_tokens").none());
  m.def("load", &load, nb::arg("path"), nb::arg("backend") = "auto", nb::arg("device") = 0);
#ifdef KILN_PYTHON_HAS_JIT
  m.def("compile", &compileModel, nb::arg("model"), nb::arg("backend") = "auto",
        nb::arg("cache_dir") = "", nb::arg("name") = "model.onnx", nb::arg("device") = 0,
        nb::arg("precision") = "", nb::arg("weights") = "", nb::arg("group_size") = 0,
        nb::arg("calibrate") = "");
  m.def("jit_stats", &jitStats, nb::arg("wait") = false);
  m.def("explain", &explainModel, nb::arg("model"), nb::arg("backend") = "auto",
        nb::arg("cache_dir") = "", nb::arg("name") = "model.onnx", nb::arg("device") = 0,
        nb::arg("precision") = "", nb::arg("weights") = "", nb::arg("group_size") = 0,
        nb::arg("calibrate") = "");
  m.attr("has_jit") = true;
#else
  m.attr("has_jit") = false;
#endif
  m.def("runtime_version", [] { return std::string(kiln_runtime_version()); });
}
