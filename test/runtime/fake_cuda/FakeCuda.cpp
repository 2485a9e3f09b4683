//===- FakeCuda.cpp - a CUDA driver that runs kernels on the host -----------===//
//
// libcuda.so.1 for tests on machines without a GPU: the entry points the runtime
// resolves (runtime/src/cuda/DriverSymbols.inc), with device memory as host
// memory, streams and events as synchronous host operations, and a kernel launch
// as a call of the kernel's host-emulation launcher (`<name>_host(args, grid)`,
// the same cuLaunchKernel-style argument array) found in the shared objects of
// $KILN_FAKE_CUDA_KERNELS (a folder of host-*.so, kiln's kernel cache). Modules'
// images (cubins) are accepted unread, so a variant's specialized cubin runs as
// its kernel's generic code (variants' libraries, hostvar-*.so, are not
// looked in: their code is right only for their shapes). It reports one
// device, sm_90.
//
// Streams made with cuStreamCreate can be captured into graphs, with CUDA's
// rules: while a stream captures, its work (launches, copies, and the
// library doubles' calls, which submit through kiln_fake_cuda_submit) is
// recorded instead of run, a launch's parameters copied as they are at the
// call (the generated launchers' `<name>_host_argc` says how many); a
// synchronization of the capturing stream, or an allocation or free on the
// capturing thread (thread-local mode), invalidates the capture and fails,
// and cuStreamEndCapture then gives no graph. cuGraphLaunch runs the recorded
// work in order. $KILN_FAKE_CUDA_GRAPH_LOG gets a line per capture ended and
// per graph launched, "capture <nodes>" / "replay <nodes>"; the legacy stream
// (null) cannot capture.
//
// Tests put its folder first on LD_LIBRARY_PATH, so the runtime's CUDA executor
// (arena placement, uploads, launches, host fallback, profiles, device buffers,
// graphs) runs in CI; numbers come from the same generated kernels as host
// emulation.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct CUctx_st {};
struct CUmod_st {};
struct CUfunc_st {
  void (*launch)(void **, int64_t);
  std::string name;
  /// Its parameters (8 bytes each, as kiln passes them), from the launcher
  /// library's `<name>_host_argc`; -1 when it has none (such a launch cannot
  /// be captured).
  int argc = -1;
};
struct CUevent_st {
  double ms = 0;
};
/// Work a capture recorded, run in order when its graph launches.
using Node = std::function<void()>;
struct CUstream_st {
  bool capturing = false, invalidated = false;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::vector<Node> recorded;
};
struct CUgraph_st {
  std::vector<Node> nodes;
};
struct CUgraphExec_st {
  std::vector<Node> nodes;
};

namespace {
CUctx_st theContext;
CUmod_st theModule;

/// Every host-emulation library in $KILN_FAKE_CUDA_KERNELS, opened once.
const std::vector<void *> &kernelLibraries() {
  static std::vector<void *> libraries = [] {
    std::vector<void *> out;
    const char *dir = std::getenv("KILN_FAKE_CUDA_KERNELS");
    if (!dir)
      return out;
    if (DIR *d = opendir(dir)) {
      while (dirent *e = readdir(d)) {
        std::string name = e->d_name;
        if (name.rfind("host-", 0) == 0 && name.size() > 3 &&
            name.compare(name.size() - 3, 3, ".so") == 0)
          if (void *h = dlopen((std::string(dir) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL))
            out.push_back(h);
      }
      closedir(d);
    }
    return out;
  }();
  return libraries;
}

/// Captures this thread began and has not ended (outside relaxed mode): an
/// allocation or free here then breaks the capture, as CUDA's rules say.
thread_local std::vector<CUstream> capturesHere;

/// Fails the calling thread's captures (CUDA invalidates them) when an unsafe
/// call is made during one; true when there was one.
bool unsafeDuringCapture() {
  bool any = false;
  for (CUstream s : capturesHere)
    if (s->mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
      s->invalidated = true;
      any = true;
    }
  return any;
}

/// Runs `work` now, or records it when `stream` is capturing.
void submit(CUstream stream, Node work) {
  if (stream && stream->capturing) {
    stream->recorded.push_back(std::move(work));
    return;
  }
  work();
}

void logGraph(const char *what, size_t nodes) {
  if (const char *log = std::getenv("KILN_FAKE_CUDA_GRAPH_LOG")) {
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    if (FILE *file = std::fopen(log, "a")) {
      std::fprintf(file, "%s %zu\n", what, nodes);
      std::fclose(file);
    }
  }
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

extern "C" {

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice) {
  std::strncpy(name, "kiln fake CUDA device", static_cast<size_t>(len));
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice) {
  *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char **text) {
  *text = "fake CUDA error";
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  *context = &theContext;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxPushCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent(CUcontext *context) {
  *context = &theContext;
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  *module = &theModule;
  return image ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
}
CUresult cuModuleGetFunction(CUfunction *function, CUmodule, const char *name) {
  // A kernel's name hashes its device code, not its launcher: a cache may
  // hold libraries from before launchers stated their argument count, so
  // one that states it is preferred.
  CUfunc_st *found = nullptr;
  for (void *library : kernelLibraries())
    if (void *symbol = dlsym(library, (std::string(name) + "_host").c_str())) {
      auto *argc = static_cast<const int *>(dlsym(library, (std::string(name) + "_host_argc").c_str()));
      if (found && !argc)
        continue;
      delete found;
      found = new CUfunc_st{reinterpret_cast<void (*)(void **, int64_t)>(symbol), name};
      if (argc) {
        found->argc = *argc;
        break;
      }
    }
  *function = found;
  return found ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  if (unsafeDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  *pointer = reinterpret_cast<CUdeviceptr>(p);
  return p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree(CUdeviceptr pointer) {
  if (unsafeDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}
// Copies keep their pointers, as CUDA's copy nodes do: a graph's copy reads
// the host memory as it is when the graph runs.
CUresult cuMemcpyHtoDAsync(CUdeviceptr to, const void *from, size_t bytes, CUstream stream) {
  submit(stream, [=] { std::memcpy(reinterpret_cast<void *>(to), from, bytes); });
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoHAsync(void *to, CUdeviceptr from, size_t bytes, CUstream stream) {
  submit(stream, [=] { std::memcpy(to, reinterpret_cast<const void *>(from), bytes); });
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream stream) {
  submit(stream, [=] {
    std::memmove(reinterpret_cast<void *>(to), reinterpret_cast<const void *>(from), bytes);
  });
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream stream) {
  // Waiting for work that is only being recorded: CUDA refuses, and the
  // capture is broken.
  if (stream && stream->capturing) {
    stream->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gridX, unsigned gridY, unsigned gridZ,
                        unsigned blockX, unsigned blockY, unsigned blockZ, unsigned,
                        CUstream stream, void **args, void **extra) {
  if (!f || gridX == 0 || gridY != 1 || gridZ != 1 || blockX == 0 || blockX > 1024 ||
      blockY != 1 || blockZ != 1 || extra)
    return CUDA_ERROR_INVALID_VALUE;
  auto run = [f, gridX, blockX](void **arguments) {
    // $KILN_FAKE_CUDA_LAUNCH_LOG: one line per launch run, "<kernel> <grid>
    // <block>", for tests of launch geometry.
    if (const char *log = std::getenv("KILN_FAKE_CUDA_LAUNCH_LOG")) {
      static std::mutex mutex;
      std::lock_guard<std::mutex> lock(mutex);
      if (FILE *file = std::fopen(log, "a")) {
        std::fprintf(file, "%s %u %u\n", f->name.c_str(), gridX, blockX);
        std::fclose(file);
      }
    }
    f->launch(arguments, gridX);
  };
  if (!(stream && stream->capturing)) {
    run(args);
    return CUDA_SUCCESS;
  }
  // A kernel node holds its parameters' values from the time of the call.
  if (f->argc < 0) {
    stream->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  auto values = std::make_shared<std::vector<uint64_t>>(static_cast<size_t>(f->argc));
  for (int i = 0; i < f->argc; ++i)
    std::memcpy(&(*values)[i], args[i], sizeof(uint64_t));
  stream->recorded.push_back([run, values] {
    std::vector<void *> pointers;
    for (uint64_t &v : *values)
      pointers.push_back(&v);
    run(pointers.data());
  });
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  *stream = new CUstream_st();
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy_v2(CUstream stream) {
  if (!stream || stream->capturing)
    return CUDA_ERROR_INVALID_VALUE;
  delete stream;
  return CUDA_SUCCESS;
}
CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  if (!stream)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; // the legacy stream
  if (stream->capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  stream->capturing = true;
  stream->invalidated = false;
  stream->mode = mode;
  stream->recorded.clear();
  capturesHere.push_back(stream);
  return CUDA_SUCCESS;
}
CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status) {
  *status = !(stream && stream->capturing) ? CU_STREAM_CAPTURE_STATUS_NONE
            : stream->invalidated          ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                           : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}
CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  if (!stream || !stream->capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  stream->capturing = false;
  for (size_t i = 0; i < capturesHere.size(); ++i)
    if (capturesHere[i] == stream) {
      capturesHere.erase(capturesHere.begin() + static_cast<long>(i));
      break;
    }
  std::vector<Node> recorded = std::move(stream->recorded);
  stream->recorded.clear();
  if (stream->invalidated) {
    *graph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  logGraph("capture", recorded.size());
  *graph = new CUgraph_st{std::move(recorded)};
  return CUDA_SUCCESS;
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long) {
  if (!graph)
    return CUDA_ERROR_INVALID_VALUE;
  *exec = new CUgraphExec_st{graph->nodes};
  return CUDA_SUCCESS;
}
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  if (!exec)
    return CUDA_ERROR_INVALID_VALUE;
  logGraph("replay", exec->nodes.size());
  for (const Node &node : exec->nodes)
    submit(stream, node);
  return CUDA_SUCCESS;
}
CUresult cuGraphExecDestroy(CUgraphExec exec) {
  delete exec;
  return CUDA_SUCCESS;
}
CUresult cuGraphDestroy(CUgraph graph) {
  delete graph;
  return CUDA_SUCCESS;
}

/// For the library doubles beside this driver: runs `run(data)` now, or
/// records it when `stream` is capturing; `release(data)` when it is no
/// longer needed (after the run, or with the last graph holding it).
int kiln_fake_cuda_submit(CUstream stream, void (*run)(void *), void (*release)(void *),
                          void *data) {
  std::shared_ptr<void> owned(data, release);
  submit(stream, [run, owned] { run(owned.get()); });
  return 0;
}
CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = new CUevent_st();
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream stream) {
  submit(stream, [event] { event->ms = nowMs(); });
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  *ms = static_cast<float>(end->ms - start->ms);
  return CUDA_SUCCESS;
}
// NVRTC opens libcuda.so.1 itself and asks for this (undocumented) table; a
// driver without it must say so rather than be missing.
CUresult cuGetExportTable(const void **table, const CUuuid *) {
  *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuEventDestroy(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}

} // extern "C"
