// libtriton_kiln.so under a Triton server of this test's own: the
// TRITONSERVER_* and TRITONBACKEND_* functions the backend calls
// (serving/triton/TritonApi.h) are defined here, so a test can give an
// instance any kind and device id and hand it inputs and output buffers in
// GPU memory, which the real server's CUDA runtime only does on a GPU (the
// fake driver cannot stand in for the runtime's private driver interfaces).
// On the fake CUDA driver with two devices (ctest serving.triton-host): a
// KIND_GPU instance on device 1 runs there, takes inputs in device 1's
// memory, writes outputs Triton puts there, and refuses device 0's memory;
// a KIND_CPU instance refuses GPU memory. Elsewhere the GPU cases skip.

#include "serving/triton/TritonApi.h"
#include "test/runtime/DriverCalls.h"

#include <gtest/gtest.h>

#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

// The server's side of the API, as the backend sees it.
struct TRITONSERVER_Error {
  TRITONSERVER_Error_Code code;
  std::string message;
};
struct TRITONSERVER_Message {
  std::string json;
};
struct TRITONBACKEND_Model {
  std::string name, repository, config;
  void *state = nullptr;
};
struct TRITONBACKEND_ModelInstance {
  TRITONBACKEND_Model *model = nullptr;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  int32_t device = 0;
  void *state = nullptr;
};
struct TRITONBACKEND_Input {
  std::string name;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_FP32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  uint64_t bytes = 0;
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
  int64_t memoryId = 0;
};
struct TRITONBACKEND_Request {
  std::vector<TRITONBACKEND_Input> inputs;
  std::vector<std::string> outputs;
  bool released = false;
};
struct TRITONBACKEND_Output {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<uint8_t> host;
  void *buffer = nullptr;
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
};
struct TRITONBACKEND_Response {
  TRITONBACKEND_Request *request = nullptr;
  std::vector<std::unique_ptr<TRITONBACKEND_Output>> outputs;
  bool sent = false;
  std::string error; ///< "" when it succeeded
};

namespace {
/// Where the server puts output buffers (a test sets it), and what it got.
struct OutputPolicy {
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
  int64_t memoryId = 0;
  void *(*allocate)(size_t bytes, int64_t device) = nullptr; ///< for GPU memory
} outputPolicy;
std::vector<std::unique_ptr<TRITONBACKEND_Response>> responses;
TRITONSERVER_Error *ok() { return nullptr; }
} // namespace

extern "C" {
TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char *message) {
  return new TRITONSERVER_Error{code, message};
}
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *error) { delete error; }
const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *error) { return error->message.c_str(); }
TRITONSERVER_Error *TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message **message,
                                                              const char *base, size_t size) {
  *message = new TRITONSERVER_Message{std::string(base, size)};
  return ok();
}
TRITONSERVER_Error *TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message *message,
                                                        const char **base, size_t *size) {
  *base = message->json.data();
  *size = message->json.size();
  return ok();
}
TRITONSERVER_Error *TRITONSERVER_MessageDelete(TRITONSERVER_Message *message) {
  delete message;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor) {
  *major = 1;
  *minor = 19;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelName(TRITONBACKEND_Model *model, const char **name) {
  *name = model->name.c_str();
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelVersion(TRITONBACKEND_Model *, uint64_t *version) {
  *version = 1;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelRepository(TRITONBACKEND_Model *model,
                                                  TRITONBACKEND_ArtifactType *type,
                                                  const char **location) {
  *type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = model->repository.c_str();
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelConfig(TRITONBACKEND_Model *model, uint32_t,
                                              TRITONSERVER_Message **config) {
  *config = new TRITONSERVER_Message{model->config};
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model *, bool *autocomplete) {
  *autocomplete = false;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model *model, uint32_t,
                                                 TRITONSERVER_Message *config) {
  model->config = config->json;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelState(TRITONBACKEND_Model *model, void **state) {
  *state = model->state;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelSetState(TRITONBACKEND_Model *model, void *state) {
  model->state = state;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance *instance,
                                                     TRITONBACKEND_Model **model) {
  *model = instance->model;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance *instance,
                                                    TRITONSERVER_InstanceGroupKind *kind) {
  *kind = instance->kind;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance *instance,
                                                        int32_t *deviceId) {
  *deviceId = instance->device;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance *instance,
                                                     void **state) {
  *state = instance->state;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance *instance,
                                                        void *state) {
  instance->state = state;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance *,
                                                                TRITONBACKEND_Request *, bool,
                                                                uint64_t, uint64_t, uint64_t,
                                                                uint64_t) {
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance *,
                                                                     uint64_t, uint64_t, uint64_t,
                                                                     uint64_t, uint64_t) {
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_RequestInput(TRITONBACKEND_Request *request, const char *name,
                                               TRITONBACKEND_Input **input) {
  for (TRITONBACKEND_Input &i : request->inputs)
    if (i.name == name) {
      *input = &i;
      return ok();
    }
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_NOT_FOUND, "no such input");
}
TRITONSERVER_Error *TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request *request, uint32_t *count) {
  *count = static_cast<uint32_t>(request->inputs.size());
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_RequestInputName(TRITONBACKEND_Request *request, uint32_t index,
                                                   const char **name) {
  *name = request->inputs.at(index).name.c_str();
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request *request, uint32_t *count) {
  *count = static_cast<uint32_t>(request->outputs.size());
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request *request, uint32_t index,
                                                    const char **name) {
  *name = request->outputs.at(index).c_str();
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *request, uint32_t) {
  request->released = true;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_InputProperties(TRITONBACKEND_Input *input, const char **name,
                                                  TRITONSERVER_DataType *datatype,
                                                  const int64_t **shape, uint32_t *dimsCount,
                                                  uint64_t *byteSize, uint32_t *bufferCount) {
  if (name)
    *name = input->name.c_str();
  *datatype = input->datatype;
  *shape = input->shape.data();
  *dimsCount = static_cast<uint32_t>(input->shape.size());
  *byteSize = input->bytes;
  *bufferCount = 1;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_InputBuffer(TRITONBACKEND_Input *input, uint32_t,
                                              const void **buffer, uint64_t *byteSize,
                                              TRITONSERVER_MemoryType *memoryType,
                                              int64_t *memoryTypeId) {
  *buffer = input->data;
  *byteSize = input->bytes;
  *memoryType = input->memory;
  *memoryTypeId = input->memoryId;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **response,
                                              TRITONBACKEND_Request *request) {
  responses.push_back(std::make_unique<TRITONBACKEND_Response>());
  responses.back()->request = request;
  *response = responses.back().get();
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response *) { return ok(); }
TRITONSERVER_Error *TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response *response,
                                                 TRITONBACKEND_Output **output, const char *name,
                                                 TRITONSERVER_DataType, const int64_t *shape,
                                                 uint32_t dimsCount) {
  response->outputs.push_back(std::make_unique<TRITONBACKEND_Output>());
  response->outputs.back()->name = name;
  response->outputs.back()->shape.assign(shape, shape + dimsCount);
  *output = response->outputs.back().get();
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output *output, void **buffer,
                                               uint64_t byteSize, TRITONSERVER_MemoryType *memoryType,
                                               int64_t *memoryTypeId) {
  output->memory = outputPolicy.memory;
  if (outputPolicy.memory == TRITONSERVER_MEMORY_GPU) {
    output->buffer = outputPolicy.allocate(byteSize, outputPolicy.memoryId);
  } else {
    output->host.resize(byteSize);
    output->buffer = output->host.data();
  }
  *buffer = output->buffer;
  *memoryType = outputPolicy.memory;
  *memoryTypeId = outputPolicy.memoryId;
  return ok();
}
TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *response, uint32_t,
                                               TRITONSERVER_Error *error) {
  response->sent = true;
  response->error = error ? error->message : "";
  return ok();
}
} // extern "C"

namespace {

// The backend's entry points.
using ModelFn = TRITONSERVER_Error *(*)(TRITONBACKEND_Model *);
using InstanceFn = TRITONSERVER_Error *(*)(TRITONBACKEND_ModelInstance *);
using ExecuteFn = TRITONSERVER_Error *(*)(TRITONBACKEND_ModelInstance *, TRITONBACKEND_Request **,
                                          uint32_t);

/// GPU memory of a given device, through the driver's calls.
struct Driver {
  kiln::test::DriverCalls cu;

  /// With `device`'s primary context current, `body()`.
  template <typename F> void on(int device, F body) {
    CUcontext context = nullptr, popped = nullptr;
    ASSERT_EQ(cu.retain(&context, device), CUDA_SUCCESS);
    ASSERT_EQ(cu.push(context), CUDA_SUCCESS);
    body();
    ASSERT_EQ(cu.pop(&popped), CUDA_SUCCESS);
  }
  void *upload(int device, const void *data, size_t bytes) {
    CUdeviceptr p = 0;
    on(device, [&] {
      ASSERT_EQ(cu.alloc(&p, bytes), CUDA_SUCCESS);
      ASSERT_EQ(cu.copyIn(p, data, bytes, nullptr), CUDA_SUCCESS);
      ASSERT_EQ(cu.synchronize(nullptr), CUDA_SUCCESS);
    });
    return reinterpret_cast<void *>(p);
  }
  std::vector<float> download(int device, const void *p, size_t count) {
    std::vector<float> out(count);
    on(device, [&] {
      ASSERT_EQ(cu.copyOut(out.data(), reinterpret_cast<CUdeviceptr>(p), count * sizeof(float), nullptr),
                CUDA_SUCCESS);
      ASSERT_EQ(cu.synchronize(nullptr), CUDA_SUCCESS);
    });
    return out;
  }
};
Driver driver;

void *allocateOnDevice(size_t bytes, int64_t device) {
  CUdeviceptr p = 0;
  driver.on(static_cast<int>(device), [&] { ASSERT_EQ(driver.cu.alloc(&p, bytes), CUDA_SUCCESS); });
  return reinterpret_cast<void *>(p);
}

/// Whether the driver is the fake one with at least two devices (the GPU
/// cases skip otherwise).
bool twoFakeDevices() {
  driver.cu = kiln::test::DriverCalls::open();
  int n = 0;
  return driver.cu.fake() && driver.cu.complete() && driver.cu.init(0) == CUDA_SUCCESS &&
         driver.cu.count(&n) == CUDA_SUCCESS && n >= 2;
}

/// The pointwise model (test/runtime/pointwise-model.mlir: y = tanh(softmax(
/// exp(x) / 2 + 1)) over rows of 64) in a repository folder, and the backend.
class TritonHost : public ::testing::Test {
protected:
  void SetUp() override {
    backend = dlopen(KILN_TRITON_BACKEND, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(backend, nullptr) << dlerror();
    char folder[] = "/tmp/kiln-triton-host-XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    repository = folder;
    ASSERT_EQ(std::system(("mkdir -p " + repository + "/1 && cp " + KILN_TEST_POINTWISE + " " +
                           repository + "/1/model.kiln")
                              .c_str()),
              0);
    model.name = "pointwise";
    model.repository = repository;
    model.config = R"({"name":"pointwise","backend":"kiln","max_batch_size":0})";
    auto initialize = reinterpret_cast<ModelFn>(dlsym(backend, "TRITONBACKEND_ModelInitialize"));
    ASSERT_NE(initialize, nullptr);
    TRITONSERVER_Error *e = initialize(&model);
    ASSERT_EQ(e, nullptr) << e->message;
    for (int i = 0; i < 2 * 64; ++i)
      x.push_back(static_cast<float>(i % 17) / 8.0f - 1.0f);
    responses.clear();
    outputPolicy = OutputPolicy{};
  }
  void TearDown() override {
    for (TRITONBACKEND_ModelInstance *instance : instances)
      reinterpret_cast<InstanceFn>(dlsym(backend, "TRITONBACKEND_ModelInstanceFinalize"))(instance);
    if (model.state)
      reinterpret_cast<ModelFn>(dlsym(backend, "TRITONBACKEND_ModelFinalize"))(&model);
    std::system(("rm -rf " + repository).c_str());
  }

  /// A new instance of `kind` on `device`; its initialization's error or "".
  std::string addInstance(TRITONSERVER_InstanceGroupKind kind, int32_t device,
                          TRITONBACKEND_ModelInstance *&out) {
    owned.push_back(std::make_unique<TRITONBACKEND_ModelInstance>());
    out = owned.back().get();
    out->model = &model;
    out->kind = kind;
    out->device = device;
    TRITONSERVER_Error *e = reinterpret_cast<InstanceFn>(
        dlsym(backend, "TRITONBACKEND_ModelInstanceInitialize"))(out);
    if (e) {
      std::string message = e->message;
      delete e;
      return message;
    }
    instances.push_back(out);
    return "";
  }

  /// One request of x (rows of 64) at `data` in `memory` of GPU `memoryId`;
  /// its response.
  TRITONBACKEND_Response &execute(TRITONBACKEND_ModelInstance *instance, const void *data,
                                  TRITONSERVER_MemoryType memory, int64_t memoryId) {
    request = TRITONBACKEND_Request{};
    request.inputs.push_back({"x", TRITONSERVER_TYPE_FP32, {2, 64}, data, x.size() * sizeof(float),
                              memory, memoryId});
    request.outputs = {"y"};
    TRITONBACKEND_Request *requests[] = {&request};
    size_t before = responses.size();
    TRITONSERVER_Error *e =
        reinterpret_cast<ExecuteFn>(dlsym(backend, "TRITONBACKEND_ModelInstanceExecute"))(
            instance, requests, 1);
    EXPECT_EQ(e, nullptr);
    EXPECT_TRUE(request.released);
    EXPECT_EQ(responses.size(), before + 1);
    return *responses.back();
  }

  /// The model's answer for row values `x`, computed here.
  std::vector<float> expected() const {
    std::vector<float> y(x.size());
    for (size_t r = 0; r < x.size() / 64; ++r) {
      double a[64], sum = 0, peak = -INFINITY;
      for (int c = 0; c < 64; ++c)
        peak = std::fmax(peak, a[c] = std::exp(static_cast<double>(x[r * 64 + c])) * 0.5 + 1.0);
      for (int c = 0; c < 64; ++c)
        sum += std::exp(a[c] - peak);
      for (int c = 0; c < 64; ++c)
        y[r * 64 + c] = static_cast<float>(std::tanh(std::exp(a[c] - peak) / sum));
    }
    return y;
  }
  static std::vector<float> floats(const TRITONBACKEND_Output &o) {
    std::vector<float> v(o.host.size() / sizeof(float));
    std::memcpy(v.data(), o.host.data(), o.host.size());
    return v;
  }
  static void expectNear(const std::vector<float> &got, const std::vector<float> &want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;
  }

  void *backend = nullptr;
  std::string repository;
  TRITONBACKEND_Model model;
  std::vector<std::unique_ptr<TRITONBACKEND_ModelInstance>> owned;
  std::vector<TRITONBACKEND_ModelInstance *> instances;
  TRITONBACKEND_Request request;
  std::vector<float> x;
};

TEST_F(TritonHost, CpuInstanceServesHostInputsAndRefusesGpuMemory) {
  TRITONBACKEND_ModelInstance *cpu = nullptr;
  ASSERT_EQ(addInstance(TRITONSERVER_INSTANCEGROUPKIND_CPU, 0, cpu), "");
  TRITONBACKEND_Response &served = execute(cpu, x.data(), TRITONSERVER_MEMORY_CPU, 0);
  ASSERT_EQ(served.error, "");
  ASSERT_EQ(served.outputs.size(), 1u);
  expectNear(floats(*served.outputs[0]), expected());
  float fakeDevicePointer = 0;
  TRITONBACKEND_Response &refused = execute(cpu, &fakeDevicePointer, TRITONSERVER_MEMORY_GPU, 0);
  EXPECT_EQ(refused.error, "kiln: input 'x' is in the memory of GPU 0 and this instance runs on the host");
}

TEST_F(TritonHost, GpuInstanceRunsOnItsDeviceWithItsDevicesMemory) {
  if (!twoFakeDevices())
    GTEST_SKIP() << "needs the fake CUDA driver with two devices (KILN_FAKE_CUDA_DEVICES=2)";
  TRITONBACKEND_ModelInstance *gpu1 = nullptr, *gpu0 = nullptr;
  ASSERT_EQ(addInstance(TRITONSERVER_INSTANCEGROUPKIND_GPU, 1, gpu1), "");
  ASSERT_EQ(addInstance(TRITONSERVER_INSTANCEGROUPKIND_GPU, 0, gpu0), "");
  // Host inputs and outputs on device 1's instance.
  TRITONBACKEND_Response &host = execute(gpu1, x.data(), TRITONSERVER_MEMORY_CPU, 0);
  ASSERT_EQ(host.error, "");
  expectNear(floats(*host.outputs[0]), expected());
  // Inputs in device 1's memory, outputs Triton puts there too.
  void *x1 = driver.upload(1, x.data(), x.size() * sizeof(float));
  outputPolicy = {TRITONSERVER_MEMORY_GPU, 1, allocateOnDevice};
  TRITONBACKEND_Response &device = execute(gpu1, x1, TRITONSERVER_MEMORY_GPU, 1);
  ASSERT_EQ(device.error, "");
  ASSERT_EQ(device.outputs.size(), 1u);
  EXPECT_EQ(device.outputs[0]->memory, TRITONSERVER_MEMORY_GPU);
  expectNear(driver.download(1, device.outputs[0]->buffer, x.size()), expected());
  // Device 0's memory is not device 1's instance's: refused, not read.
  void *x0 = driver.upload(0, x.data(), x.size() * sizeof(float));
  EXPECT_EQ(execute(gpu1, x0, TRITONSERVER_MEMORY_GPU, 0).error,
            "kiln: input 'x' is in the memory of GPU 0 and this instance runs on GPU 1");
  // An output buffer on the other device is refused as well.
  outputPolicy = {TRITONSERVER_MEMORY_GPU, 0, allocateOnDevice};
  EXPECT_EQ(execute(gpu1, x1, TRITONSERVER_MEMORY_GPU, 1).error,
            "kiln: Triton gave output 'y' a buffer in the memory of GPU 0, not this instance's");
  // Device 0's instance takes device 0's memory: each device has its model.
  TRITONBACKEND_Response &zero = execute(gpu0, x0, TRITONSERVER_MEMORY_GPU, 0);
  ASSERT_EQ(zero.error, "");
  expectNear(driver.download(0, zero.outputs[0]->buffer, x.size()), expected());
  // A device the driver lacks fails the instance's initialization, naming it.
  TRITONBACKEND_ModelInstance *gpu7 = nullptr;
  EXPECT_NE(addInstance(TRITONSERVER_INSTANCEGROUPKIND_GPU, 7, gpu7).find("7"), std::string::npos);
}

} // namespace
