//===- CudaExecutor.h - a plan on a CUDA device -----------------*- C++ -*-===//
//
// Runs an artifact's plan on device 0 through the driver API: kernels from the
// artifact's cubin for the device's SM (or its PTX, which the driver JIT-compiles
// for a newer device), weights uploaded once at load, one device arena per call
// placed by the memory plan. Library ops and shape steps run on the host for now
// (inputs copied down, the reference kernel, the result copied up); cuBLASLt and
// cuDNN calls replace that next (docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDAEXECUTOR_H
#define KILN_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "ArtifactReader.h"
#include "MemoryPlan.h"
#include "BufferPool.h"
#include "cuda/CudaDriver.h"

#include <functional>
#include <memory>

namespace kiln::rt {

struct Profile;

/// Where output `index` (of this dtype and shape) goes: a host or device address
/// with room for it, or an error (a buffer too small).
using OutputSink = std::function<absl::StatusOr<void *>(size_t index, ref::DType dtype,
                                                        const ref::Shape &shape)>;

class CudaExecutor {
public:
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor &) = delete;
  CudaExecutor &operator=(const CudaExecutor &) = delete;

  /// Loads `plan`'s kernels and weights on device 0; UNAVAILABLE without a
  /// device, FAILED_PRECONDITION when the artifact has no code for its SM.
  static absl::StatusOr<std::unique_ptr<CudaExecutor>> create(const Plan &plan);

  /// "NVIDIA H200 (sm_90)"
  const std::string &description() const { return description_; }

  /// Runs with `inputs` as host tensors, or (deviceBuffers) as views whose data
  /// are device pointers; outputs are copied where `sink` says, host or device
  /// as deviceBuffers says. Ordered on `stream` (a CUstream; null is the default
  /// stream) and complete on return.
  absl::Status run(const Plan &plan, const std::vector<std::optional<int64_t>> &symbols,
                   const MemoryPlan &memory, const std::vector<ref::Tensor> &inputs,
                   bool deviceBuffers, void *stream, const OutputSink &sink,
                   Profile *profile) const;

private:
  CudaExecutor() = default;
  const CudaDriver *driver_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string description_;
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_;  ///< per Plan::kernels entry
  std::vector<CUdeviceptr> weights_;   ///< per value; 0 unless a weight
  /// Arenas, input copies and dynamic results, reused across calls.
  std::unique_ptr<BufferPool<CUdeviceptr>> pool_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_CUDAEXECUTOR_H
