//===- TensorIO.h - tensors in and out of files for the CLI tools -*- C++ -*-===//
//
// ONNX TensorProto files (.pb, what the ONNX test data uses and kiln-run writes)
// and numpy .npy files, as reference tensors.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_TENSORIO_H
#define KILN_TOOLS_TENSORIO_H

#include "kiln/reference/Tensor.h"

#include "mlir/IR/MLIRContext.h"

#include <string>

namespace kiln {

/// Reads a .pb TensorProto or a .npy file (by extension); `name` gets the
/// TensorProto's name (empty for .npy). Errors are one diagnostic naming the file.
mlir::FailureOr<ref::Tensor> readTensorFile(mlir::MLIRContext &context, llvm::StringRef path,
                                            std::string *name = nullptr);

/// Writes `t` as a TensorProto named `name`.
mlir::LogicalResult writeTensorProto(mlir::MLIRContext &context, const ref::Tensor &t,
                                     llvm::StringRef name, llvm::StringRef path);

/// A short summary for printing: dtype, shape, and the first values.
std::string summarizeTensor(const ref::Tensor &t, size_t maxValues = 8);

} // namespace kiln

#endif // KILN_TOOLS_TENSORIO_H
