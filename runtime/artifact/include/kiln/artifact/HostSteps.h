//===- HostSteps.h - what each typed step table runs ------------*- C++ -*-===//
//
// The one reading of the artifact's step tables (library ops and graph breaks):
// each table is decoded once into a host function over the reference kernels,
// its enums mapped value by value and its operand counts checked, so a bad
// table is a load error and a run only calls. Matmul and conv keep their
// decoded parameters too: a device library call (cuBLASLt, cuDNN) reads them
// where the GPU runs them.
//
// Both halves run it: the runtime decodes an artifact's steps at load, and the
// compiler's interpreter runs every op with a step table by encoding it
// (codegen/StepEncoding.h) and decoding it here, so the interpreter and the
// runtime cannot disagree on what a table means. The oracle's arithmetic stays
// its own: the reference kernels.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_HOSTSTEPS_H
#define KILN_ARTIFACT_HOSTSTEPS_H

#include "kiln/artifact/Plan.h"
#include "kiln/reference/Kernels.h"

#include <functional>

namespace kiln::artifact {

using HostResults = absl::StatusOr<std::vector<ref::Tensor>>;
using HostStepFn = std::function<HostResults(const std::vector<const ref::Tensor *> &inputs)>;

/// What a library op applies to its result last (the op table's Activation).
using Epilogue = ops::Activation;

/// A MatMul table, decoded.
struct MatMulParams {
  bool transposeA = false, transposeB = false;
  double alpha = 1.0;
  bool hasBias = false;
  Epilogue activation = Epilogue::none;
  /// fp32 operands may be rounded to TF32 (--precision tf32).
  bool allowTf32 = false;
  /// A float8 product's result type (MatMul.float8_result).
  ref::DType float8Result = ref::DType::f32;
};

/// A Conv table, decoded.
struct ConvStepParams {
  ref::ConvParams conv;
  bool hasBias = false;
  bool relu = false;
  bool allowTf32 = false;
  /// Conv only: an input after the bias added before the ReLU.
  bool hasResidual = false;
};

/// What a device backend may run a host step as instead of its host
/// function: the key of a backend's table of library calls (the CUDA
/// executor's LibraryCalls).
enum class DeviceCall { none, matmul, conv, convTranspose, pool, reshape };

struct HostStep {
  HostStepFn run;
  /// Set for MatMul steps.
  std::optional<MatMulParams> matmul;
  /// Set for Conv, ConvTranspose and Pool steps: what a cuDNN call reads.
  std::optional<ConvStepParams> conv, convTranspose;
  std::optional<ref::PoolParams> pool;
  /// A Reshape step: a device backend reads only its shape operand (the
  /// result's dims depend on those values) and copies the data on the device.
  bool reshape = false;

  /// Which of the parameters above is set (at most one is).
  DeviceCall deviceCall() const {
    return matmul          ? DeviceCall::matmul
           : conv          ? DeviceCall::conv
           : convTranspose ? DeviceCall::convTranspose
           : pool          ? DeviceCall::pool
           : reshape       ? DeviceCall::reshape
                           : DeviceCall::none;
  }
};

/// Decodes step number `index`, `step` (a StepKind::Host step); an error names
/// the step.
absl::StatusOr<HostStep> decodeHostStep(const StepInfo &step, size_t index);

} // namespace kiln::artifact

#endif // KILN_ARTIFACT_HOSTSTEPS_H
