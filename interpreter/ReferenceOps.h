//===- ReferenceOps.h - kiln ops onto the reference kernels -----*- C++ -*-===//

#ifndef KILN_INTERPRETER_REFERENCEOPS_H
#define KILN_INTERPRETER_REFERENCEOPS_H

#include "kiln/artifact/HostSteps.h"

#include "mlir/Support/LLVM.h"
#include "mlir/Support/LogicalResult.h"

#include <optional>
#include <vector>

namespace mlir {
class Operation;
} // namespace mlir

namespace kiln {

/// `op` (an isHostStepOp op) as the runtime runs it: its step table, encoded as
/// the artifact writer does and decoded by the artifact library. A diagnostic at
/// `op` when it has no table or the reader refuses the table.
mlir::FailureOr<artifact::HostStep> decodeReferenceStep(mlir::Operation *op);

/// Runs an op that has no step table because it only runs inside a generated
/// kernel (count/compact non-zero, attention, nms_select) on its reference
/// kernel: nullopt for any other op, else its results or the kernel's error.
std::optional<absl::StatusOr<std::vector<ref::Tensor>>>
runKernelOnlyOp(mlir::Operation *op, llvm::ArrayRef<const ref::Tensor *> inputs);

} // namespace kiln

#endif // KILN_INTERPRETER_REFERENCEOPS_H
