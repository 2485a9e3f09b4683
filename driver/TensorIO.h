//===- TensorIO.h - tensors in and out of files for the CLI tools -*- C++ -*-===//
//
// ONNX TensorProto files (.pb, what the ONNX test data uses and kiln-run writes)
// and numpy .npy files, as reference tensors.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_TENSORIO_H
#define KILN_DRIVER_TENSORIO_H

#include "TensorFiles.h"
#include "kiln/reference/Tensor.h"

#include "mlir/IR/MLIRContext.h"

#include <string>

namespace kiln {

/// Reads a .pb TensorProto or a .npy file (by extension); `name` gets the
/// TensorProto's name (empty for .npy). Errors are one diagnostic naming the file.
mlir::FailureOr<ref::Tensor> readTensorFile(mlir::MLIRContext &context, llvm::StringRef path,
                                            std::string *name = nullptr);

// Writing tensors and summaries: runtime/tools/TensorFiles.h (no MLIR needed).

} // namespace kiln

#endif // KILN_DRIVER_TENSORIO_H
