//===- KilnBackend.cpp - libtriton_kiln: kiln models in Triton ------------===//
//
// A Triton Inference Server backend over kiln's C API. A model repository
// entry with `backend: "kiln"` serves `<version>/model.kiln` or `model.so`
// (and `model.onnx`, compiled at load through libkiln_jit when built with it).
//
// - Config auto-completion: inputs and outputs, their dtypes and dims come from
//   the model. When every input's and output's first dim is one symbol (the
//   batch), that dim is Triton's batch dim: max_batch_size 0 becomes 8, so the
//   dynamic batcher works; the other symbolic dims are -1.
// - Instances: KIND_CPU runs host emulation, KIND_GPU the CUDA backend on the
//   instance's GPU (its device id: one model per device, shared by the
//   instances there); each instance has its own kiln context (arena, plan of
//   the last shapes). Inputs Triton holds in GPU memory are taken from the
//   instance's own GPU (copied to the host with the rest; another GPU's are
//   refused).
// - Requests of a batch whose inputs agree past the batch dim run as one call
//   (concatenated along it, each given its rows back); others one by one. A
//   request kiln refuses (a wrong name, dtype or shape: the guard's message)
//   gets an error response while the others succeed. Statistics go to Triton.
//
//===----------------------------------------------------------------------===//

#include "serving/triton/TritonApi.h"

#include "kiln/runtime.hpp"
#ifdef KILN_TRITON_HAS_JIT
#include "kiln/jit.h"
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <vector>

#define KILN_TRITON_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

TRITONSERVER_Error *error(TRITONSERVER_Error_Code code, const std::string &message) {
  return TRITONSERVER_ErrorNew(code, ("kiln: " + message).c_str());
}

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct DtypeRow {
  kiln_dtype_t kiln;
  TRITONSERVER_DataType triton;
  const char *config;
};
constexpr DtypeRow kDtypes[] = {
    {KILN_F16, TRITONSERVER_TYPE_FP16, "TYPE_FP16"},  {KILN_BF16, TRITONSERVER_TYPE_BF16, "TYPE_BF16"},
    {KILN_F32, TRITONSERVER_TYPE_FP32, "TYPE_FP32"},  {KILN_F64, TRITONSERVER_TYPE_FP64, "TYPE_FP64"},
    {KILN_BOOL, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL"}, {KILN_I8, TRITONSERVER_TYPE_INT8, "TYPE_INT8"},
    {KILN_I16, TRITONSERVER_TYPE_INT16, "TYPE_INT16"}, {KILN_I32, TRITONSERVER_TYPE_INT32, "TYPE_INT32"},
    {KILN_I64, TRITONSERVER_TYPE_INT64, "TYPE_INT64"}, {KILN_U8, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8"},
    {KILN_U16, TRITONSERVER_TYPE_UINT16, "TYPE_UINT16"}, {KILN_U32, TRITONSERVER_TYPE_UINT32, "TYPE_UINT32"},
    {KILN_U64, TRITONSERVER_TYPE_UINT64, "TYPE_UINT64"},
};

const DtypeRow *rowOf(kiln_dtype_t t) {
  for (const DtypeRow &r : kDtypes)
    if (r.kiln == t)
      return &r;
  return nullptr;
}
const DtypeRow *rowOf(TRITONSERVER_DataType t) {
  for (const DtypeRow &r : kDtypes)
    if (r.triton == t)
      return &r;
  return nullptr;
}

/// The span [begin, end) of top-level key `key`'s value in a JSON object, or
/// {npos, npos}. Enough JSON to edit Triton's model config without a library:
/// strings (with escapes) and nesting are skipped whole.
std::pair<size_t, size_t> topLevelValue(const std::string &json, const std::string &key) {
  int depth = 0;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (c == '"') {
      size_t start = i++;
      while (i < json.size() && json[i] != '"')
        i += json[i] == '\\' ? 2 : 1;
      if (depth == 1 && json.compare(start + 1, i - start - 1, key) == 0) {
        size_t v = json.find(':', i) + 1;
        while (v < json.size() && std::isspace(static_cast<unsigned char>(json[v])))
          ++v;
        // The value ends at the comma or brace that closes it at this depth.
        int inner = 0;
        size_t e = v;
        for (; e < json.size(); ++e) {
          char d = json[e];
          if (d == '"') {
            ++e;
            while (e < json.size() && json[e] != '"')
              e += json[e] == '\\' ? 2 : 1;
          } else if (d == '[' || d == '{') {
            ++inner;
          } else if (d == ']' || d == '}') {
            if (inner == 0)
              break;
            --inner;
          } else if (d == ',' && inner == 0) {
            break;
          }
        }
        return {v, e};
      }
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return {std::string::npos, std::string::npos};
}

/// `json` with top-level `key` set to `value` (replaced, or added).
std::string withValue(std::string json, const std::string &key, const std::string &value) {
  auto [begin, end] = topLevelValue(json, key);
  if (begin != std::string::npos)
    return json.replace(begin, end - begin, value);
  size_t close = json.rfind('}');
  bool empty = json.find_first_not_of(" \t\r\n", json.find('{') + 1) == close;
  return json.insert(close, (empty ? "\"" : ",\"") + key + "\":" + value);
}

struct ModelState {
  std::string name, folder, file;
  std::mutex mutex; ///< loads per backend and device
  /// Loaded models: host emulation under -1, CUDA under the device ordinal.
  std::map<int, kiln_model_t *> models;
  bool owned = true; ///< false: the JIT owns them
#ifdef KILN_TRITON_HAS_JIT
  std::map<int, kiln_jit_t *> jits; ///< keyed as `models`
#endif
  bool batched = false;

  ~ModelState() {
    if (owned)
      for (auto &[where, model] : models)
        kiln_model_destroy(model);
#ifdef KILN_TRITON_HAS_JIT
    for (auto &[where, jit] : jits)
      kiln_jit_destroy(jit);
#endif
  }

  /// The model on `backend` (and, for CUDA, device `device`), loaded on
  /// first use.
  TRITONSERVER_Error *get(kiln_backend_t backend, int device, kiln_model_t **out) {
    std::lock_guard<std::mutex> lock(mutex);
    int where = backend == KILN_BACKEND_CUDA ? device : -1;
    kiln_model_t *&slot = models[where];
    if (!slot) {
      bool onnx = file.size() > 5 && file.compare(file.size() - 5, 5, ".onnx") == 0;
      kiln_load_options_t load = KILN_LOAD_OPTIONS_INIT;
      load.backend = backend;
      load.device = backend == KILN_BACKEND_CUDA ? device : 0;
      if (onnx) {
#ifdef KILN_TRITON_HAS_JIT
        kiln_jit_t *&jit = jits[where];
        if (!jit) {
          kiln_jit_options_t options;
          kiln_jit_options_init(&options);
          options.backend = backend;
          options.device = load.device;
          if (kiln_jit_create(&options, &jit) != KILN_OK)
            return error(TRITONSERVER_ERROR_INTERNAL, kiln_jit_last_error());
        }
        owned = false;
        if (kiln_jit_compile_file(jit, file.c_str(), &slot) != KILN_OK)
          return error(TRITONSERVER_ERROR_INVALID_ARG, kiln_jit_last_error());
#else
        return error(TRITONSERVER_ERROR_UNSUPPORTED,
                     file + ": this backend was built without libkiln_jit; serve a .kiln or .so");
#endif
      } else if (kiln_model_load_file_with(file.c_str(), &load, &slot) != KILN_OK) {
        return error(TRITONSERVER_ERROR_INVALID_ARG, kiln_last_error());
      }
    }
    *out = slot;
    return nullptr;
  }
};

struct InstanceState {
  ModelState *model = nullptr;
  kiln_model_t *handle = nullptr;
  int device = -1; ///< the CUDA device of a KIND_GPU instance; -1 on the host
  kiln::Model borrowed; ///< `handle` for the C++ wrapper (the model state owns it)
  kiln::Context context;
};

/// The model file in a version folder: model.kiln, model.so or model.onnx.
std::string findModelFile(const std::string &folder) {
  for (const char *name : {"model.kiln", "model.so", "model.onnx"}) {
    std::string path = folder + "/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      return path;
  }
  return "";
}

/// The model's inputs, then its outputs; `numInputs` says where they part.
std::vector<kiln_tensor_info_t> tensorInfos(kiln_model_t *model, size_t &numInputs) {
  size_t numOutputs = 0;
  kiln_model_num_inputs(model, &numInputs);
  kiln_model_num_outputs(model, &numOutputs);
  std::vector<kiln_tensor_info_t> infos(numInputs + numOutputs);
  for (size_t i = 0; i < infos.size(); ++i) {
    if (i < numInputs)
      kiln_model_input_info(model, i, &infos[i]);
    else
      kiln_model_output_info(model, i - numInputs, &infos[i]);
  }
  return infos;
}

/// Whether the first dim of every input and output of `model` is one symbol
/// (`batch`, its name), which a batch of requests could be joined along.
bool leadingSymbol(kiln_model_t *model, std::string &batch) {
  size_t numInputs = 0;
  batch.clear();
  for (const kiln_tensor_info_t &info : tensorInfos(model, numInputs)) {
    if (info.rank == 0 || info.dims[0] >= 0 || (!batch.empty() && batch != info.dim_names[0]))
      return false;
    batch = info.dim_names[0];
  }
  return !batch.empty();
}

/// Inputs and outputs of `model` as Triton's config JSON arrays; with
/// `batched`, their first dim is Triton's batch dim and left out.
void describe(kiln_model_t *model, bool batched, std::string &inputs, std::string &outputs) {
  size_t numInputs = 0;
  std::vector<kiln_tensor_info_t> infos = tensorInfos(model, numInputs);
  auto array = [&](size_t from, size_t to) {
    std::string json = "[";
    for (size_t i = from; i < to; ++i) {
      const kiln_tensor_info_t &info = infos[i];
      const DtypeRow *row = rowOf(info.dtype);
      json += std::string(i == from ? "" : ",") + "{\"name\":\"" + info.name +
              "\",\"data_type\":\"" + (row ? row->config : "TYPE_INVALID") + "\",\"dims\":[";
      // A batched vector ([batch]) has no dims past the batch, which Triton
      // refuses: it is [1] to clients, reshaped to [] for the model (Triton's
      // form for a tensor that is only its batch dim).
      if (batched && info.rank == 1) {
        json += "1],\"reshape\":{\"shape\":[]}}";
        continue;
      }
      for (int d = batched ? 1 : 0, first = 1; d < info.rank; ++d, first = 0)
        json += std::string(first ? "" : ",") + std::to_string(info.dims[d] >= 0 ? info.dims[d] : -1);
      json += "]}";
    }
    return json + "]";
  };
  inputs = array(0, numInputs);
  outputs = array(numInputs, infos.size());
}

/// An error response for `request`, then its release.
void fail(TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request *request,
          TRITONBACKEND_Response *response, const std::string &message, uint64_t start) {
  TRITONSERVER_Error *e = error(TRITONSERVER_ERROR_INVALID_ARG, message);
  if (response || TRITONBACKEND_ResponseNew(&response, request) == nullptr)
    TRITONBACKEND_ResponseSend(response, kTritonResponseCompleteFinal, e);
  TRITONSERVER_ErrorDelete(e);
  uint64_t end = nowNs();
  TRITONBACKEND_ModelInstanceReportStatistics(instance, request, false, start, start, end, end);
  TRITONBACKEND_RequestRelease(request, kTritonRequestReleaseAll);
}

} // namespace

KILN_TRITON_EXPORT TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *) {
  uint32_t major = 0, minor = 0;
  if (TRITONSERVER_Error *e = TRITONBACKEND_ApiVersion(&major, &minor))
    return e;
  if (major != 1)
    return error(TRITONSERVER_ERROR_UNSUPPORTED,
                 "the server's backend API is " + std::to_string(major) + "." +
                     std::to_string(minor) + "; this backend was written for 1.x");
  return nullptr;
}

KILN_TRITON_EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  auto state = std::make_unique<ModelState>();
  const char *name = nullptr, *location = nullptr;
  uint64_t version = 0;
  TRITONBACKEND_ArtifactType type;
  if (TRITONSERVER_Error *e = TRITONBACKEND_ModelName(model, &name))
    return e;
  if (TRITONSERVER_Error *e = TRITONBACKEND_ModelVersion(model, &version))
    return e;
  if (TRITONSERVER_Error *e = TRITONBACKEND_ModelRepository(model, &type, &location))
    return e;
  state->name = name;
  state->folder = std::string(location) + "/" + std::to_string(version);
  state->file = findModelFile(state->folder);
  if (state->file.empty())
    return error(TRITONSERVER_ERROR_NOT_FOUND, "model '" + state->name + "': no model.kiln, model.so or model.onnx in " + state->folder);

  // Read on the host backend: metadata is the same on every backend.
  kiln_model_t *probe = nullptr;
  if (TRITONSERVER_Error *e = state->get(KILN_BACKEND_HOST, 0, &probe))
    return e;
  // Requests are joined along the leading symbol only where that is right:
  // the compiler proved row i of every output depends on row i of the inputs
  // alone (kiln_model_rows_independent), or the user's config asks for it
  // (max_batch_size > 0: their word for the model). A model that normalizes
  // over the batch, or is sequence-first, gives each request other answers in
  // a shared call.
  std::string batch;
  bool leading = leadingSymbol(probe, batch);
  int proven = 0;
  if (leading)
    kiln_model_rows_independent(probe, batch.c_str(), &proven);

  TRITONSERVER_Message *message = nullptr;
  if (TRITONSERVER_Error *e = TRITONBACKEND_ModelConfig(model, 1, &message))
    return e;
  const char *base = nullptr;
  size_t size = 0;
  TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  std::string config(base, size);
  TRITONSERVER_MessageDelete(message);
  auto [mbBegin, mbEnd] = topLevelValue(config, "max_batch_size");
  int64_t maxBatch = mbBegin == std::string::npos ? 0 : std::atoll(config.substr(mbBegin, mbEnd - mbBegin).c_str());
  if (maxBatch > 0 && !leading)
    return error(TRITONSERVER_ERROR_INVALID_ARG,
                 "model '" + state->name + "': max_batch_size " + std::to_string(maxBatch) +
                     " needs every input's and output's first dim to be one symbol (the batch)");
  bool autocomplete = false;
  TRITONBACKEND_ModelAutoCompleteConfig(model, &autocomplete);
  // Batched when Triton will batch: the user's max_batch_size, or the 8 the
  // completion below gives a proven model.
  state->batched = leading && (maxBatch > 0 || (proven && autocomplete));
  if (leading && !proven && maxBatch == 0)
    std::fprintf(stderr,
                 "kiln backend: model '%s': requests are not batched along '%s': kiln could not "
                 "prove that each row of its outputs depends on that row of its inputs alone "
                 "(set max_batch_size to batch it anyway)\n",
                 state->name.c_str(), batch.c_str());
  std::string inputs, outputs;
  describe(probe, state->batched, inputs, outputs);
  if (autocomplete) {
    // Only what the user left out: their inputs and outputs stand as written.
    auto [inBegin, inEnd] = topLevelValue(config, "input");
    if (inBegin == std::string::npos || config.compare(inBegin, 2, "[]") == 0)
      config = withValue(config, "input", inputs);
    auto [outBegin, outEnd] = topLevelValue(config, "output");
    if (outBegin == std::string::npos || config.compare(outBegin, 2, "[]") == 0)
      config = withValue(config, "output", outputs);
    if (state->batched && maxBatch == 0)
      config = withValue(config, "max_batch_size", "8");
    TRITONSERVER_Message *completed = nullptr;
    if (TRITONSERVER_Error *e = TRITONSERVER_MessageNewFromSerializedJson(&completed, config.data(), config.size()))
      return e;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelSetConfig(model, 1, completed);
    TRITONSERVER_MessageDelete(completed);
    if (e)
      return e;
  }
  return TRITONBACKEND_ModelSetState(model, state.release());
}

KILN_TRITON_EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *state = nullptr;
  TRITONBACKEND_ModelState(model, &state);
  delete static_cast<ModelState *>(state);
  return nullptr;
}

KILN_TRITON_EXPORT TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *instance) {
  TRITONBACKEND_Model *model = nullptr;
  void *modelState = nullptr;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  if (TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceModel(instance, &model))
    return e;
  TRITONBACKEND_ModelState(model, &modelState);
  TRITONBACKEND_ModelInstanceKind(instance, &kind);
  auto state = std::make_unique<InstanceState>();
  state->model = static_cast<ModelState *>(modelState);
  kiln_backend_t backend = kind == TRITONSERVER_INSTANCEGROUPKIND_GPU ? KILN_BACKEND_CUDA : KILN_BACKEND_HOST;
  if (backend == KILN_BACKEND_CUDA) {
    int32_t device = 0;
    if (TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceDeviceId(instance, &device))
      return e;
    state->device = device;
  }
  if (TRITONSERVER_Error *e = state->model->get(backend, state->device, &state->handle))
    return e;
  state->borrowed = kiln::Model::borrow(state->handle);
  if (kiln::Status s = kiln::Context::create(state->borrowed, &state->context); !s.ok())
    return error(TRITONSERVER_ERROR_INTERNAL, s.message());
  return TRITONBACKEND_ModelInstanceSetState(instance, state.release());
}

KILN_TRITON_EXPORT TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *instance) {
  void *state = nullptr;
  TRITONBACKEND_ModelInstanceState(instance, &state);
  delete static_cast<InstanceState *>(state);
  return nullptr;
}

namespace {
/// One request on its way through Execute.
struct Pending {
  TRITONBACKEND_Request *request = nullptr;
  uint64_t start = 0, computeStart = 0, computeEnd = 0;
  std::vector<kiln_tensor_t> in; ///< views of `gathered`
  std::vector<std::vector<uint8_t>> gathered;
  std::vector<kiln::HostTensor> outputs;
  std::string problem;
  int64_t batch = 0; ///< dim 0 of its inputs when the model is batched
};

/// Reads the request's inputs by the model's names into host buffers.
void gatherInputs(kiln_model_t *model, int device, bool batched, Pending &p) {
  size_t numInputs = 0;
  kiln_model_num_inputs(model, &numInputs);
  p.in.assign(numInputs, kiln_tensor_t{});
  p.gathered.assign(numInputs, {});
  uint32_t given = 0;
  TRITONBACKEND_RequestInputCount(p.request, &given);
  if (given != numInputs) {
    p.problem = "the model takes " + std::to_string(numInputs) + " inputs, the request has " +
                std::to_string(given);
    return;
  }
  for (size_t i = 0; i < numInputs; ++i) {
    kiln_tensor_info_t info;
    kiln_model_input_info(model, i, &info);
    TRITONBACKEND_Input *input = nullptr;
    if (TRITONSERVER_Error *e = TRITONBACKEND_RequestInput(p.request, info.name, &input)) {
      TRITONSERVER_ErrorDelete(e);
      p.problem = std::string("the request has no input '") + info.name + "'";
      return;
    }
    TRITONSERVER_DataType datatype;
    const int64_t *shape = nullptr;
    uint32_t rank = 0, buffers = 0;
    uint64_t bytes = 0;
    TRITONBACKEND_InputProperties(input, nullptr, &datatype, &shape, &rank, &bytes, &buffers);
    const DtypeRow *row = rowOf(datatype);
    if (!row || rank > KILN_MAX_RANK) {
      p.problem = std::string("input '") + info.name + "' has a datatype or rank kiln models do not take";
      return;
    }
    kiln_tensor_t &t = p.in[i];
    t.dtype = row->kiln;
    t.rank = static_cast<int32_t>(rank);
    for (uint32_t d = 0; d < rank; ++d)
      t.dims[d] = shape[d];
    if (batched && rank > 0)
      p.batch = shape[0];
    p.gathered[i].resize(bytes);
    uint64_t at = 0;
    for (uint32_t b = 0; b < buffers; ++b) {
      const void *data = nullptr;
      uint64_t size = 0;
      TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
      int64_t memoryId = 0;
      TRITONBACKEND_InputBuffer(input, b, &data, &size, &memory, &memoryId);
      if (at + size > bytes) {
        p.problem = std::string("input '") + info.name + "' has more bytes in its buffers than its shape";
        return;
      }
      if (memory == TRITONSERVER_MEMORY_GPU) {
        // The instance's own GPU only: kiln's copies are its device's.
        if (device < 0 || memoryId != device) {
          p.problem = std::string("input '") + info.name + "' is in the memory of GPU " +
                      std::to_string(memoryId) + " and this instance runs " +
                      (device < 0 ? std::string("on the host") : "on GPU " + std::to_string(device));
          return;
        }
        if (size > 0 &&
            kiln_model_copy_to_host(model, p.gathered[i].data() + at, data, size) != KILN_OK) {
          p.problem = std::string("input '") + info.name + "': " + kiln_last_error();
          return;
        }
      } else {
        std::memcpy(p.gathered[i].data() + at, data, size);
      }
      at += size;
    }
    t.data = p.gathered[i].data();
    t.size_bytes = bytes;
  }
}

/// Runs `p`'s inputs in `context` into outputs of its own (sized by the C++
/// wrapper, data-dependent sizes included); on failure sets p.problem to
/// kiln's message (the guard's, for shapes the model refuses).
void runOne(kiln::Context &context, Pending &p) {
  p.computeStart = nowNs();
  kiln::Status status = context.run(p.in, &p.outputs);
  p.computeEnd = nowNs();
  if (!status.ok())
    p.problem = status.message();
}

/// Runs requests whose inputs agree past the batch dim as one call, their
/// inputs concatenated along it, then gives each its rows of every output.
/// False (nothing changed) when the combined call fails: the caller runs them
/// one by one, so an error lands on the request that caused it.
bool runTogether(kiln::Context &context, std::vector<Pending *> &group) {
  Pending all;
  all.in = group.front()->in;
  all.gathered.assign(all.in.size(), {});
  int64_t total = 0;
  for (Pending *p : group)
    total += p->batch;
  for (size_t i = 0; i < all.in.size(); ++i) {
    for (Pending *p : group)
      all.gathered[i].insert(all.gathered[i].end(), p->gathered[i].begin(), p->gathered[i].end());
    all.in[i].dims[0] = total;
    all.in[i].data = all.gathered[i].data();
    all.in[i].size_bytes = all.gathered[i].size();
  }
  runOne(context, all);
  if (!all.problem.empty())
    return false;
  for (const kiln::HostTensor &o : all.outputs)
    if (o.dims.empty() || o.dims[0] != total)
      return false; // an output not batched by rows: run them one by one
  int64_t row = 0;
  for (Pending *p : group) {
    p->computeStart = all.computeStart;
    p->computeEnd = all.computeEnd;
    p->outputs.clear();
    for (const kiln::HostTensor &o : all.outputs) {
      size_t rowBytes = total ? o.data.size() / static_cast<size_t>(total) : 0;
      kiln::HostTensor mine;
      mine.dtype = o.dtype;
      mine.dims = o.dims;
      mine.dims[0] = p->batch;
      auto from = o.data.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(row) * rowBytes);
      mine.data.assign(from, from + static_cast<std::ptrdiff_t>(static_cast<size_t>(p->batch) * rowBytes));
      p->outputs.push_back(std::move(mine));
    }
    row += p->batch;
  }
  return true;
}

/// Sends `p`'s response (its outputs, or its error) and releases the request.
void respond(TRITONBACKEND_ModelInstance *instance, kiln_model_t *model, int device, Pending &p) {
  if (!p.problem.empty()) {
    fail(instance, p.request, nullptr, p.problem, p.start);
    return;
  }
  TRITONBACKEND_Response *response = nullptr;
  if (TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&response, p.request)) {
    TRITONSERVER_ErrorDelete(e);
    TRITONBACKEND_RequestRelease(p.request, kTritonRequestReleaseAll);
    return;
  }
  uint32_t requested = 0;
  TRITONBACKEND_RequestOutputCount(p.request, &requested);
  std::string problem;
  for (size_t k = 0; k < p.outputs.size() && problem.empty(); ++k) {
    const kiln::HostTensor &result = p.outputs[k];
    kiln_tensor_info_t info;
    kiln_model_output_info(model, k, &info);
    bool wanted = requested == 0;
    for (uint32_t o = 0; o < requested && !wanted; ++o) {
      const char *name = nullptr;
      TRITONBACKEND_RequestOutputName(p.request, o, &name);
      wanted = name && std::strcmp(name, info.name) == 0;
    }
    if (!wanted)
      continue;
    const DtypeRow *row = rowOf(result.dtype);
    TRITONBACKEND_Output *output = nullptr;
    void *buffer = nullptr;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
    int64_t memoryId = 0;
    TRITONSERVER_Error *e = TRITONBACKEND_ResponseOutput(response, &output, info.name, row->triton,
                                                         result.dims.data(),
                                                         static_cast<uint32_t>(result.dims.size()));
    if (!e)
      e = TRITONBACKEND_OutputBuffer(output, &buffer, result.data.size(), &memory, &memoryId);
    if (e) {
      problem = TRITONSERVER_ErrorMessage(e);
      TRITONSERVER_ErrorDelete(e);
    } else if (memory == TRITONSERVER_MEMORY_GPU) {
      // Copied to the instance's own GPU; any other memory is not kiln's.
      if (device < 0 || memoryId != device)
        problem = "Triton gave output '" + std::string(info.name) + "' a buffer in the memory of GPU " +
                  std::to_string(memoryId) + ", not this instance's";
      else if (!result.data.empty() &&
               kiln_model_copy_to_device(model, buffer, result.data.data(), result.data.size()) != KILN_OK)
        problem = std::string("output '") + info.name + "': " + kiln_last_error();
    } else if (!result.data.empty()) {
      std::memcpy(buffer, result.data.data(), result.data.size());
    }
  }
  if (!problem.empty()) {
    fail(instance, p.request, response, problem, p.start);
    return;
  }
  TRITONBACKEND_ResponseSend(response, kTritonResponseCompleteFinal, nullptr);
  TRITONBACKEND_ModelInstanceReportStatistics(instance, p.request, true, p.start, p.computeStart,
                                              p.computeEnd, nowNs());
  TRITONBACKEND_RequestRelease(p.request, kTritonRequestReleaseAll);
}
} // namespace

KILN_TRITON_EXPORT TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *instance,
                                   TRITONBACKEND_Request **requests, const uint32_t count) {
  void *raw = nullptr;
  TRITONBACKEND_ModelInstanceState(instance, &raw);
  InstanceState &state = *static_cast<InstanceState *>(raw);
  kiln_model_t *model = state.handle;
  bool batched = state.model->batched;
  uint64_t batchStart = nowNs();
  std::vector<Pending> pending(count);
  for (uint32_t r = 0; r < count; ++r) {
    pending[r].request = requests[r];
    pending[r].start = nowNs();
    gatherInputs(model, state.device, batched, pending[r]);
  }
  // Dynamic batching: requests whose inputs agree past the batch dim run as
  // one call; any other request (or a group whose combined call fails) alone.
  std::vector<bool> ran(count, false);
  if (batched && count > 1) {
    std::map<std::string, std::vector<Pending *>> groups;
    for (Pending &p : pending) {
      if (!p.problem.empty())
        continue;
      std::string key;
      for (const kiln_tensor_t &t : p.in) {
        key += std::to_string(t.dtype) + ":";
        for (int d = 1; d < t.rank; ++d)
          key += std::to_string(t.dims[d]) + ",";
        key += ";";
      }
      groups[key].push_back(&p);
    }
    for (auto &[key, group] : groups)
      if (group.size() > 1 && runTogether(state.context, group))
        for (Pending *p : group)
          ran[p - pending.data()] = true;
  }
  uint64_t batchSize = 0;
  for (uint32_t r = 0; r < count; ++r) {
    Pending &p = pending[r];
    if (!ran[r] && p.problem.empty())
      runOne(state.context, p);
    batchSize += batched ? static_cast<uint64_t>(p.batch) : 1;
    respond(instance, model, state.device, p);
  }
  uint64_t batchEnd = nowNs();
  TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, batchSize ? batchSize : count, batchStart,
                                                   batchStart, batchEnd, batchEnd);
  return nullptr;
}
