//===- LibraryCalls.h - host steps the CUDA device runs in a library -*- C++ -*-===//
//
// The CUDA executor is op-agnostic: it places values, launches generated
// kernels, copies and times. What it knows of ops is this table: for each
// kind of host step it can keep on the device (artifact::DeviceCall: a
// matmul in cuBLASLt, or as a cuDNN graph for an epilogue cuBLASLt lacks; a
// convolution or pool in cuDNN; a reshape by a device copy), one call that
// runs it there or says why it runs on the host. A kind without an entry
// does not build (the switch in LibraryCalls.cpp has no default), and a step
// of kind `none` always runs on the host.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_LIBRARYCALLS_H
#define KILN_RUNTIME_CUDA_LIBRARYCALLS_H

#include "Executor.h"
#include "cuda/CublasLt.h"
#include "cuda/Cudnn.h"

#include <memory>
#include <string>

namespace kiln::rt {

class CudaExecutor;
class CudaState;

/// The libraries `plan`'s steps use, loaded once per executor, and the call
/// for each device-call kind.
class LibraryCalls {
public:
  /// Loads cuBLASLt when `plan` has matmul steps and cuDNN when it has conv,
  /// pool or fused matmul steps (an activation cuBLASLt lacks: a cuDNN
  /// graph). A library that does not load is not an error: its steps run on
  /// the host, and `unavailable()` says why.
  static std::unique_ptr<LibraryCalls> create(const Plan &plan);

  /// " (matmuls on the host: ...)" for each library that did not load; empty
  /// when every library the plan needs loaded.
  std::string unavailable() const;

  /// Runs host step `s` (`step`, decoded as `host`) on the device when its
  /// kind has a call and the library takes it; otherwise says it runs on the
  /// host, and why where the profile should say (a library's refusal).
  absl::StatusOr<DeviceOutcome> run(const CudaExecutor &executor, ExecutionContext &context,
                                    size_t s, const StepInfo &step,
                                    const artifact::HostStep &host) const;

private:
  /// One call's operands: the executor and its context's state.
  struct Site;
  absl::StatusOr<DeviceOutcome> matmul(const Site &site) const;
  absl::StatusOr<DeviceOutcome> dnn(const Site &site) const;
  absl::StatusOr<DeviceOutcome> reshape(const Site &site) const;

  /// Null when the library is missing (`dnnUnavailable_` says why) or the
  /// plan does not use it. (Declared cuDNN first: members go in reverse, so
  /// cuBLASLt's handle is released first, as it always was.)
  std::unique_ptr<DnnRunner> dnn_;
  std::string dnnUnavailable_;
  std::unique_ptr<MatmulRunner> matmul_;
  std::string matmulUnavailable_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_LIBRARYCALLS_H
