//===- CublasLt.h - cuBLASLt, loaded at run time, and matmul steps -*- C++ -*-===//
//
// Matmul steps on the CUDA backend run in cuBLASLt. Like the driver, the
// library is opened with dlopen (libcublasLt.so.13) and its entry points
// resolved through a symbol table (CublasLtSymbols.inc): the runtime loads
// without it, and a missing library is a one-line reason, after which matmuls
// run on the host as before.
//
// MatmulRunner maps a MatMul step (row-major, numpy batch broadcasting, op
// transposes, alpha, bias, ReLU) onto cuBLASLt's column-major matmul: a
// row-major [M, N] result is a column-major N x M matrix, so kiln computes
// D^T = op(B)^T op(A)^T with B's buffer as cuBLASLt's A and A's as its B;
// transposes become layouts (no copy), batches strided batches (stride 0 for
// a broadcast operand), a bias over the last dim the BIAS epilogue, any other
// bias a C operand with beta = 1. Algorithms come from the heuristic, told
// how aligned each matrix's pointers really are (cuBLASLt otherwise assumes
// 256 bytes and may choose an algorithm that faults or refuses on an arena
// offset), and are cached per shape and alignment. What the library refuses
// (no algorithm, or a call it does not support) is an UNIMPLEMENTED status the
// executor answers by running the step on the host.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_CUBLASLT_H
#define KILN_RUNTIME_CUDA_CUBLASLT_H

#include "kiln/artifact/HostSteps.h"
#include "cuda/Workspace.h"
#include "kiln/reference/Tensor.h"

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

#include <cublasLt.h>
#include <cuda.h>

#include <mutex>
#include <string>

namespace kiln::rt {

using artifact::Epilogue;
using artifact::MatMulParams;

class CublasLt {
public:
  /// The process-wide library, loaded on first use; UNAVAILABLE when
  /// libcublasLt is missing or lacks a symbol.
  static absl::StatusOr<const CublasLt *> get();

#define KILN_LT_SYMBOL(name) decltype(&::name) name = nullptr;
#include "cuda/CublasLtSymbols.inc"
#undef KILN_LT_SYMBOL

  /// "cublasLtMatmul failed: CUBLAS_STATUS_X (message)".
  std::string describe(const char *call, cublasStatus_t status) const;

private:
  CublasLt() = default;
  static absl::StatusOr<const CublasLt *> load();
};

/// One matmul: operand and result dims and device addresses. `dtype` is
/// the operands' element type; `resultDtype` the result's (and a bias's):
/// the same, except int32 for int8 operands (kiln.matmul's 8-bit product)
/// and f32, f16 or bf16 for f8e4m3fn ones (its float8 product).
struct MatmulCall {
  ref::DType dtype = ref::DType::f32;
  ref::DType resultDtype = ref::DType::f32;
  ref::Shape a, b, bias, result;
  uintptr_t aAddress = 0, bAddress = 0, biasAddress = 0, resultAddress = 0;
};

/// Runs MatMul steps in cuBLASLt for one executor (one device context).
/// Thread-safe: contexts on several threads share it.
class MatmulRunner {
public:
  ~MatmulRunner();
  /// A runner, or why matmuls cannot run on the device (no cuBLASLt).
  static absl::StatusOr<std::unique_ptr<MatmulRunner>> create();

  /// Whether cuBLASLt has `activation` as an epilogue (ReLU and the tanh
  /// GELU); a matmul with another (the erf GELU, SiLU) is a cuDNN graph
  /// (DnnRunner::matmul).
  static bool takesActivation(Epilogue activation);

  /// Whether `call` maps onto cuBLASLt (activation, dtype, batch
  /// broadcasting, bias shape); otherwise the step runs on the host.
  static bool supports(const MatMulParams &params, const MatmulCall &call);

  /// The dims of `a` (op) `b` as numpy's matmul gives them (batch dims
  /// broadcast, vectors promoted and their dim dropped), for a result whose
  /// plan leaves a dim unknown until run time; nullopt when they do not match.
  static std::optional<ref::Shape> resultShape(const MatMulParams &params, const ref::Shape &a,
                                               const ref::Shape &b);

  using WorkspaceFn = rt::WorkspaceFn;

  /// Queues the matmul on `stream`: the algorithm from the heuristic (asked
  /// once per problem and kept), the workspace it needs from `workspaceFor`.
  /// UNIMPLEMENTED when cuBLASLt refuses the problem or the call (nothing of
  /// the step may be trusted: it runs on the host).
  absl::Status run(const MatMulParams &params, const MatmulCall &call, CUstream stream,
                   WorkspaceFn workspaceFor) const;

  /// The most workspace an algorithm may ask for (the heuristic's limit); a
  /// context allocates what its calls' algorithms need, up to this.
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

private:
  MatmulRunner() = default;
  const CublasLt *lt_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  mutable std::mutex mutex_;
  /// The heuristic's answer per problem (its description, alignments
  /// included, as a string key): an algorithm and its workspace, or the
  /// library's refusal.
  struct Algorithm {
    cublasLtMatmulAlgo_t algo;
    size_t workspace = 0;
    std::string refused; ///< why there is none; empty when there is
  };
  mutable absl::flat_hash_map<std::string, Algorithm> algorithms_; // guarded by mutex_
  /// The descriptors of one call and its algorithm.
  struct Prepared;
  absl::Status prepare(const MatMulParams &params, const MatmulCall &call, Prepared &out) const;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_CUBLASLT_H
