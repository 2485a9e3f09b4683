//===- LoadModel.h - a model file as a kiln module, for the CLI tools -*- C++ -*-===//

#ifndef KILN_DRIVER_LOADMODEL_H
#define KILN_DRIVER_LOADMODEL_H

#include "frontend/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {

struct LoadOptions {
  onnx_import::ImportOptions import;
  /// Run the graph pipeline (shape inference, canonicalization, CSE) after loading.
  bool optimize = true;
};

/// Imports an .onnx model or parses a kiln .mlir module, then optionally runs the
/// graph pipeline. Null after a diagnostic.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(mlir::MLIRContext &context, llvm::StringRef path,
                                            const LoadOptions &options);

/// loadModel for a model's bytes: `name` says what they are (".onnx" or ".mlir"
/// at its end) and names them in diagnostics; an ONNX model's external data
/// resolves in `folder` (empty: none may be named).
mlir::OwningOpRef<mlir::ModuleOp> loadModelBytes(mlir::MLIRContext &context,
                                                 llvm::StringRef bytes, llvm::StringRef name,
                                                 llvm::StringRef folder,
                                                 const LoadOptions &options);

/// The function a model runs: `main_graph`, else the module's only function; null
/// after a diagnostic.
mlir::func::FuncOp entryFunction(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_DRIVER_LOADMODEL_H
