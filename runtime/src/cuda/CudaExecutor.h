//===- CudaExecutor.h - a plan on a CUDA device -----------------*- C++ -*-===//
//
// Runs an artifact's plan on a CUDA device (device 0 unless asked) through the
// driver API: kernels from the artifact's cubin for the device's SM (or its
// PTX, which the driver JIT-compiles for a newer device), weights uploaded once
// at load, and per context a device arena placed by the memory plan and
// staging buffers for host inputs (CudaState.h). The executor knows no ops: the
// host steps a library runs on the device (matmuls, convolutions, pools,
// reshapes) are LibraryCalls' table; every other host step copies its inputs
// to the host, runs there and copies its results back (docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDAEXECUTOR_H
#define KILN_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "BufferPool.h"
#include "absl/functional/function_ref.h"
#include "Executor.h"
#include "cuda/CudaDriver.h"


#include <memory>
#include <mutex>

namespace kiln::rt {

class LibraryCalls;

/// Whether CUDA keeps `r` for the context's life (an asynchronous fault):
/// every later call in the context fails, until it is reset.
bool isStickyError(CUresult r);

class CudaExecutor final : public Executor, private DeviceMemory {
public:
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor &) = delete;
  CudaExecutor &operator=(const CudaExecutor &) = delete;

  /// Loads `plan`'s kernels and weights on device `device` (an ordinal);
  /// UNAVAILABLE without that device, FAILED_PRECONDITION when the artifact
  /// has no code for its SM.
  static absl::StatusOr<std::unique_ptr<CudaExecutor>> create(const Plan &plan, int device = 0);

  std::string description() const override;
  bool isCuda() const override { return true; }
  absl::Status installVariant(int variant, const artifact::VariantInfo &info,
                              absl::Span<const artifact::HostLibraryInfo> libraries) override;
  /// Its own: allocations and copies in the model's context, the copies on
  /// the executor's stream after the legacy stream's work.
  const DeviceMemory *deviceMemory() const override { return this; }

protected:
  absl::Status begin(ExecutionContext &context, const RunRequest &request) const override;
  absl::Status place(ExecutionContext &context, int v, const ref::Shape &shape) const override;
  absl::Status launch(ExecutionContext &context, const StepInfo &step) const override;
  absl::StatusOr<ref::Tensor> hostValue(ExecutionContext &context, int v) const override;
  absl::Status store(ExecutionContext &context, int v, ref::Tensor result) const override;
  absl::Status finish(ExecutionContext &context, const RunRequest &request,
                      OutputSink sink) const override;
  absl::StatusOr<DeviceOutcome> runOnDevice(ExecutionContext &context, size_t s,
                                            const StepInfo &step) const override;
  void abandon(ExecutionContext &context, const RunRequest &request) const override;
  uintptr_t errorWords(ExecutionContext &context) const override;
  uintptr_t symbolWords(ExecutionContext &context) const override;
  absl::StatusOr<uintptr_t> kernelScratch(ExecutionContext &context,
                                          size_t bytes) const override;
  absl::Status readErrorWords(ExecutionContext &context,
                              std::vector<int32_t> &words) const override;
  void mark(ExecutionContext &context, const RunRequest &request, size_t index) const override;
  absl::Status copyBytes(ExecutionContext &context, uintptr_t to, uintptr_t from,
                         size_t bytes) const override;
  absl::Status settle(ExecutionContext &context) const override;
  absl::StatusOr<double> elapsedUs(ExecutionContext &context, size_t from,
                                   size_t to) const override;
  /// CUDA graphs: a segment's first run at a signature runs step by step, the
  /// second is captured into a graph, later ones replay it (docs/runtime.md,
  /// "CUDA graphs").
  absl::StatusOr<size_t> runSegment(ExecutionContext &context, const RunRequest &request,
                                    size_t s) const override;

private:
  CudaExecutor() = default;
  // DeviceMemory
  absl::StatusOr<void *> allocate(size_t bytes) const override;
  absl::Status free(void *address) const override;
  absl::Status copyToDevice(void *device, const void *host, size_t bytes) const override;
  absl::Status copyToHost(void *host, const void *device, size_t bytes) const override;
  /// Runs `copy` (a driver copy on `transfer_`, ordered after the legacy
  /// stream's work by an event) in the model's context and waits for it;
  /// `call` names it in errors.
  absl::Status copySynchronously(const char *call, absl::FunctionRef<CUresult()> copy) const;
  /// The error a failed driver call returns: UNAVAILABLE, and the executor
  /// marked lost, for the errors CUDA makes sticky (an illegal address, a
  /// failed launch: the context cannot be used again); INTERNAL otherwise.
  absl::Status driverError(const char *call, CUresult r) const;
  /// UNAVAILABLE, saying why, once the context is lost (or was reset by a
  /// later load); OK before.
  absl::Status lostStatus() const;
  /// Whether a load reset the device's primary context after this executor
  /// retained it (its resources are gone; CudaExecutor.cpp).
  bool contextWasReset() const;

  const CudaDriver *driver_ = nullptr;
  /// The executor's own copies' stream (non-blocking; never the legacy one).
  CUstream transfer_ = nullptr;
  /// The device's count of kiln's primary-context resets when this executor
  /// retained it (CudaExecutor.cpp: a reset context is not released).
  uint64_t resetsAtRetain_ = 0;
  mutable std::mutex lostMutex_;
  mutable std::string lost_; // guarded by lostMutex_
  CUdevice deviceHandle_ = 0;
  CUcontext context_ = nullptr;
  std::string device_; ///< "NVIDIA H200 (sm_90)"
  std::vector<CUmodule> modules_;
  const Plan *plan_ = nullptr;
  int sm_ = 0;
  /// Per variant, per Plan::kernels entry, its function.
  VariantTables<CUfunction> functions_;
  std::vector<CUdeviceptr> weights_;  ///< per value; 0 unless a weight
  /// Device buffers of data-dependent results, reused across calls.
  std::unique_ptr<BufferPool<CUdeviceptr>> pool_;
  /// The host steps this device runs in a library (cuBLASLt, cuDNN) or by a
  /// device copy: the one place the executor's op knowledge lives.
  std::unique_ptr<LibraryCalls> calls_;
  /// Top-level stretches [first, end) of device steps a context may replay
  /// as one graph, and per top-level step the segment it starts (-1 none);
  /// empty when KILN_CUDA_GRAPHS=0.
  std::vector<std::pair<size_t, size_t>> segments_;
  std::vector<int> segmentAt_;

  friend class CudaState;
  /// A library call places its result, reads a shape operand and copies on
  /// the device through the executor, like a step of the loop.
  friend class LibraryCalls;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_CUDAEXECUTOR_H
