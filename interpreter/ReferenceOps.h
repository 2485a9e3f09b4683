//===- ReferenceOps.h - typed kiln ops onto the reference kernels -*- C++ -*-===//

#ifndef KILN_INTERPRETER_REFERENCEOPS_H
#define KILN_INTERPRETER_REFERENCEOPS_H

#include "kiln/reference/Tensor.h"

#include "mlir/Support/LLVM.h"

#include <optional>
#include <vector>

namespace mlir {
class Operation;
} // namespace mlir

namespace kiln {

/// Runs `op` on its operands' values with the reference kernels: nullopt when
/// `op` is not one kernel call (constants, shape steps, regions), else its
/// results or the kernel's error.
std::optional<absl::StatusOr<std::vector<ref::Tensor>>>
runReferenceOp(mlir::Operation *op, llvm::ArrayRef<const ref::Tensor *> inputs);

} // namespace kiln

#endif // KILN_INTERPRETER_REFERENCEOPS_H
