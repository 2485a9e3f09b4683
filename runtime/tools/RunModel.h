//===- RunModel.h - run a loaded model on host tensors ----------*- C++ -*-===//
//
// What the CLI tools share to run a compiled model through the C API, as an
// application would. No MLIR: the runtime-only tools (kiln-check-artifacts) use
// it as well as kiln-run and kiln-conformance.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_TOOLS_RUNMODEL_H
#define KILN_RUNTIME_TOOLS_RUNMODEL_H

#include "kiln/reference/Tensor.h"
#include "kiln/runtime.h"

#include <vector>

namespace kiln {

/// `t` as a kiln_tensor_t view of its bytes.
kiln_tensor_t tensorView(ref::Tensor &t);

/// Runs `model` on `inputs`: outputs sized from the inputs up front, and one whose
/// size depends on the data sized by a first attempt that reports it. No tensor
/// of the run, outputs included, may exceed `maxTensorBytes`.
absl::StatusOr<std::vector<ref::Tensor>>
runLoadedModel(const kiln_model_t *model, std::vector<ref::Tensor> &inputs,
               kiln_profile_t *profile = nullptr,
               uint64_t maxTensorBytes = KILN_DEFAULT_MAX_TENSOR_BYTES);

} // namespace kiln

#endif // KILN_RUNTIME_TOOLS_RUNMODEL_H
