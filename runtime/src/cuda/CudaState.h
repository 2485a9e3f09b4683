//===- CudaState.h - what a CUDA context keeps between calls ----*- C++ -*-===//
//
// Private to the CUDA backend (CudaExecutor.cpp, LibraryCalls.cpp): a
// context's device buffers, stream, events and CUDA graphs, and how the steps
// of a graph segment are running.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDASTATE_H
#define KILN_RUNTIME_CUDA_CUDASTATE_H

#include "cuda/CudaExecutor.h"

#include <deque>

namespace kiln::rt {

/// Makes the model's context current on the calling thread for a scope.
class ContextScope {
public:
  ContextScope(const CudaDriver *driver, CUcontext context) : driver(driver) {
    ok = driver->cuCtxPushCurrent(context) == CUDA_SUCCESS;
  }
  ~ContextScope() {
    CUcontext popped;
    if (ok)
      driver->cuCtxPopCurrent(&popped);
  }
  bool ok = false;

private:
  const CudaDriver *driver;
};


/// How a context runs the steps of a segment (CudaExecutor::runSegment).
enum class SegmentMode {
  Off,     ///< outside segments: launches run, nothing is recorded
  Dry,     ///< bookkeeping only (values placed, arguments built), no device work
  Collect, ///< device work queued and its signature recorded
  Capture, ///< likewise, into a graph: a step that would leave the device stops it
};

/// A context's graphs of one segment, and the signature of the last run
/// that did not replay one (a second run with the same signature captures).
struct SegmentGraphs {
  struct Graph {
    std::vector<uint64_t> signature;
    CUgraphExec exec = nullptr;
  };
  std::vector<Graph> graphs;
  std::vector<uint64_t> lastSignature;
  /// Signatures whose capture failed: they run step by step from then on.
  std::vector<std::vector<uint64_t>> refused;
};

/// A context's device buffers: an arena and a staging buffer per input, each
/// grown to the largest call seen and kept; data-dependent results of the
/// current call; profiling events.
class CudaState : public BackendState {
public:
  CudaState(const CudaExecutor &executor, size_t inputs)
      : executor(executor), staging(inputs, {0, 0}) {}
  ~CudaState() override {
    if (executor.contextWasReset())
      return; // its buffers, streams and graphs went with the context
    const CudaDriver &cu = *executor.driver_;
    ContextScope scope(&cu, executor.context_);
    releaseDynamic();
    if (arena.first)
      cu.cuMemFree(arena.first);
    for (auto [p, size] : staging)
      if (p)
        cu.cuMemFree(p);
    if (errorWords.first)
      cu.cuMemFree(errorWords.first);
    if (symbolWords.first)
      cu.cuMemFree(symbolWords.first);
    if (workspace.first)
      cu.cuMemFree(workspace.first);
    if (kernelScratch.first)
      cu.cuMemFree(kernelScratch.first);
    for (CUevent e : events)
      cu.cuEventDestroy(e);
    if (legacyMark)
      cu.cuEventDestroy(legacyMark);
    for (SegmentGraphs &segment : segments)
      for (SegmentGraphs::Graph &g : segment.graphs)
        cu.cuGraphExecDestroy(g.exec);
    if (ownStream)
      cu.cuStreamDestroy(ownStream);
  }

  /// The library workspace grown to `bytes` (a call's algorithm's need):
  /// its address and size (WorkspaceFn).
  absl::StatusOr<std::pair<uintptr_t, size_t>> workspaceOf(size_t bytes) {
    if (bytes)
      if (absl::Status st = ensure(workspace, bytes); !st.ok())
        return st;
    return std::make_pair(static_cast<uintptr_t>(workspace.first), workspace.second);
  }
  /// `buffer` grown to hold `bytes`.
  absl::Status ensure(std::pair<CUdeviceptr, size_t> &buffer, size_t bytes) {
    bytes = std::max(bytes, artifact::kSlotAlignment);
    if (buffer.second >= bytes)
      return absl::OkStatus();
    const CudaDriver &cu = *executor.driver_;
    if (buffer.first)
      cu.cuMemFree(buffer.first);
    buffer = {0, 0};
    CUdeviceptr p = 0;
    if (CUresult r = cu.cuMemAlloc(&p, bytes); r != CUDA_SUCCESS)
      return isStickyError(r) ? executor.driverError("cuMemAlloc", r)
                              : absl::ResourceExhaustedError(absl::StrCat(
                                    "cannot allocate ", bytes,
                                    " bytes on the device: ", cu.describe("cuMemAlloc", r)));
    buffer = {p, bytes};
    return absl::OkStatus();
  }

  /// After the stream has finished (or been abandoned): the call's
  /// data-dependent buffers go back to the pool, its uploads' host copies go.
  void releaseDynamic() {
    for (auto [p, size] : dynamic)
      executor.pool_->give(p, size);
    dynamic.clear();
    valueBuffers.clear();
    uploads.clear();
  }

  const CudaExecutor &executor;
  std::pair<CUdeviceptr, size_t> arena = {0, 0}; ///< address, bytes
  std::vector<std::pair<CUdeviceptr, size_t>> staging;
  std::vector<std::pair<CUdeviceptr, size_t>> dynamic;
  /// Per value: the buffer of `dynamic` it was last placed in this call.
  std::vector<std::pair<CUdeviceptr, size_t>> valueBuffers;
  /// Host results of this call's host steps, queued for copying to the device:
  /// kept until the call's last synchronization, so no step waits for its copy.
  std::deque<ref::Tensor> uploads; // a deque: queued copies read from stable addresses
  /// One int32 per step where kernels report data errors, and the zeros that
  /// reset them (copied at the start of each call, on the call's stream).
  std::pair<CUdeviceptr, size_t> errorWords = {0, 0};
  /// cuBLASLt's workspace, allocated at the context's first matmul.
  std::pair<CUdeviceptr, size_t> workspace = {0, 0};
  /// The kernel scratch (Executor::kernelScratch): zero between launches;
  /// and the zeros a new one is cleared from (kept: the copy reads them
  /// when it runs).
  std::pair<CUdeviceptr, size_t> kernelScratch = {0, 0};
  std::vector<uint8_t> scratchZeros;
  std::vector<int32_t> errorZeros;
  /// One int64 per symbol holding the call's values, where kernels read device
  /// symbols (Plan::deviceSymbols), and its host copy, uploaded at the start
  /// of each call (kept until the next: the copy reads it when it runs).
  std::pair<CUdeviceptr, size_t> symbolWords = {0, 0};
  std::vector<int64_t> symbolValues;
  std::vector<CUevent> events;
  /// The call's stream: the caller's, or `ownStream` (made at the context's
  /// first call that gives none: the legacy stream cannot be captured). It
  /// is non-blocking: a blocking stream's capture would make the legacy
  /// stream unusable to every other thread of the process (CUDA fails its
  /// calls with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT); the call waits for the
  /// legacy stream's earlier work through `legacyMark` instead.
  CUstream stream = nullptr;
  CUstream ownStream = nullptr;
  /// Marks the legacy stream's work at a call without a stream (begin).
  CUevent legacyMark = nullptr;
  std::unique_ptr<ContextScope> scope;
  /// CUDA graphs: per executor segment; the mode of the steps running now
  /// and the signature they have recorded (every value the device work of
  /// the segment takes: kernels, grids, addresses, sizes).
  std::vector<SegmentGraphs> segments;
  SegmentMode mode = SegmentMode::Off;
  std::vector<uint64_t> signature;
  /// Set when a step of a dry run or capture would have run on the host.
  bool leftDevice = false;

  void sign(uint64_t v) { signature.push_back(v); }
  void sign(const ref::Shape &shape) {
    signature.push_back(shape.size());
    for (int64_t d : shape)
      signature.push_back(static_cast<uint64_t>(d));
  }
  /// A library call's part of the signature: its step (which fixes its
  /// parameters), element type, operand dims, addresses and workspace.
  void signCall(size_t step, ref::DType dtype, std::initializer_list<const ref::Shape *> shapes,
                std::initializer_list<uintptr_t> addresses, CUdeviceptr workspaceAddress) {
    sign(step);
    sign(static_cast<uint64_t>(dtype));
    for (const ref::Shape *shape : shapes)
      sign(*shape);
    for (uintptr_t address : addresses)
      sign(address);
    sign(workspaceAddress);
  }
};

inline CudaState &stateOf(ExecutionContext &context) {
  return *context.backendState<CudaState>();
}

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_CUDASTATE_H
