//===- Cudnn.h - cuDNN, loaded at run time, for conv and pool steps -*- C++ -*-===//
//
// Conv, ConvTranspose and pool steps on the CUDA backend run in cuDNN 9, opened with dlopen
// (libcudnn.so.9) through a symbol table (CudnnSymbols.inc) like the driver
// and cuBLASLt: without it they run on the host and the backend says why.
//
// Which cuDNN API: the descriptor ("legacy") API of cudnn_ops/cudnn_cnn, which
// cuDNN 9 still ships (marked deprecated) and whose semantics are few and
// documented call by call, so the double CI runs against can implement them
// exactly. Conv + bias + ReLU is three calls (ConvolutionForward, AddTensor,
// ActivationForward in place); a ConvTranspose is ConvolutionBackwardData
// (then AddTensor). The graph (backend) API, which fuses them into
// one kernel and is where NVIDIA develops, is the next step; the runner's
// interface (supports/run per step) does not change with it.
//
// Mapping: NCHW tensors as cuDNN's N-d descriptors with packed strides; a 1-D
// conv/pool as 2-D with a height of 1; symmetric pads only (ONNX allows
// asymmetric ones: those stay on the host); groups and dilations as the
// descriptor's; fp32 with FMA math only (no TF32), fp16/bf16 with tensor ops
// and fp32 compute, f64 in f64. Pools: max and average (counting the padding
// or not), no dilation, output dims as cuDNN's floor formula gives them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUDNN_H
#define KILN_RUNTIME_CUDA_CUDNN_H

#include "kiln/artifact/HostSteps.h"
#include "cuda/CublasLt.h"
#include "cuda/Workspace.h"

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include <cuda.h>
#include <cudnn.h>

#include <memory>
#include <mutex>
#include <string>

namespace kiln::rt {

using artifact::ConvStepParams;

class Cudnn {
public:
  /// The process-wide library, loaded on first use; UNAVAILABLE without it.
  static absl::StatusOr<const Cudnn *> get();

#define KILN_DNN_SYMBOL(name) decltype(&::name) name = nullptr;
#include "cuda/CudnnSymbols.inc"
#undef KILN_DNN_SYMBOL

  std::string describe(const char *call, cudnnStatus_t status) const;

private:
  Cudnn() = default;
  static absl::StatusOr<const Cudnn *> load();
};

/// One conv or pool call: operand dims and device addresses.
struct DnnCall {
  ref::DType dtype = ref::DType::f32;
  ref::Shape x, w, result;
  uintptr_t xAddress = 0, wAddress = 0, biasAddress = 0, resultAddress = 0;
  /// A conv's residual (ConvStepParams::hasResidual), of the result's dims.
  uintptr_t residualAddress = 0;
};

/// A fused matmul's execution plan (CudnnMatmul.cpp), which destroys the
/// descriptors it was built from.
struct GraphPlan;
struct GraphPlanDeleter {
  void operator()(GraphPlan *plan) const;
};

/// Runs Conv and Pool steps in cuDNN for one executor. Thread-safe.
class DnnRunner {
public:
  ~DnnRunner();
  static absl::StatusOr<std::unique_ptr<DnnRunner>> create();

  static bool supportsConv(const ConvStepParams &params, const DnnCall &call);
  /// ConvTranspose is the data gradient of the conv that maps its result to
  /// its input (cudnnConvolutionBackwardData), with the same filter.
  static bool supportsConvTranspose(const ConvStepParams &params, const DnnCall &call);
  static bool supportsPool(const ref::PoolParams &params, const DnnCall &call);

  /// The result dims of a conv (or conv transpose) of `x` by `w`, or of a pool
  /// of `x`, by ONNX's formulas as the reference kernels apply them: for a
  /// result whose plan leaves a dim unknown until run time. nullopt when the
  /// dims do not fit (the host step then reports why).
  static std::optional<ref::Shape> convResultShape(const ConvStepParams &params, bool transpose,
                                                   const ref::Shape &x, const ref::Shape &w);
  static std::optional<ref::Shape> poolResultShape(const ref::PoolParams &params,
                                                   const ref::Shape &x);

  /// Queue the call on `stream` (the handle is bound to it for the call):
  /// the fastest algorithm the heuristic offers within kMaxWorkspaceBytes
  /// (asked once per problem and kept), the workspace it needs from
  /// `workspaceFor`. UNIMPLEMENTED when cuDNN has no such algorithm.
  absl::Status conv(const ConvStepParams &params, const DnnCall &call, CUstream stream,
                    WorkspaceFn workspaceFor) const;
  absl::Status convTranspose(const ConvStepParams &params, const DnnCall &call, CUstream stream,
                             WorkspaceFn workspaceFor) const;
  /// The most workspace a convolution's algorithm may take (the fastest
  /// ones, FFT and Winograd among them, take hundreds of MB on large
  /// images); a context allocates what its calls' algorithms need, up to it.
  static constexpr size_t kMaxWorkspaceBytes = size_t{256} << 20;
  absl::Status pool(const ref::PoolParams &params, const DnnCall &call, CUstream stream) const;

  /// A matmul whose activation cuBLASLt lacks (the erf GELU, SiLU:
  /// MatmulRunner::takesActivation) as one graph of cuDNN's backend API
  /// (CudnnMatmul.cpp): the product, the bias added and the activation
  /// applied in f32 before the one rounding to the result's type. Whether
  /// the call's shapes map onto it (3-D operands after folding a 2-D
  /// weight's batch into M, equal batches, alpha 1, f16/bf16/f32).
  static bool supportsMatmul(const MatMulParams &params, const MatmulCall &call);
  /// Queues it on `stream`: the first engine configuration the heuristic
  /// offers that finalizes into a plan (an f32 product only on one without
  /// tensor cores unless the artifact allows TF32), kept per problem.
  /// UNIMPLEMENTED when cuDNN has none: the step runs on the host.
  absl::Status matmul(const MatMulParams &params, const MatmulCall &call, CUstream stream,
                      WorkspaceFn workspaceFor) const;

private:
  DnnRunner() = default;
  const Cudnn *dnn_ = nullptr;
  /// cuDNN handles carry a stream: one call at a time per handle.
  mutable std::mutex mutex_;
  // Guarded by mutex_:
  cudnnHandle_t handle_ = nullptr;
  /// The algorithm per convolution problem (forward, and backward data for
  /// ConvTranspose).
  template <typename Algo> struct Chosen {
    Algo algo;
    size_t workspaceBytes; ///< what it needs
  };
  mutable absl::flat_hash_map<std::string, Chosen<cudnnConvolutionFwdAlgo_t>> algorithms_;
  mutable absl::flat_hash_map<std::string, Chosen<cudnnConvolutionBwdDataAlgo_t>> backwardAlgorithms_;
  /// A fused matmul's execution plan and the descriptors it holds, or why
  /// cuDNN has none, per problem (CudnnMatmul.cpp).
  mutable absl::flat_hash_map<std::string, std::unique_ptr<GraphPlan, GraphPlanDeleter>> graphPlans_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_CUDNN_H
