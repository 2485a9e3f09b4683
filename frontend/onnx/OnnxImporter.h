//===- OnnxImporter.h - ONNX models to kiln IR ------------------*- C++ -*-===//
//
// The library kiln-translate, kiln-compile, kiln-run and kiln-conformance call to
// read an ONNX model. Errors are reported through the context's diagnostic engine,
// one diagnostic per problem, naming the node (or initializer, or input) and what is
// wrong; the importer never aborts on bad input.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_ONNX_ONNXIMPORTER_H
#define KILN_FRONTEND_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::onnx_import {

struct ImportOptions {
  /// Dims of graph inputs forced dynamic: input name -> dim index -> symbol name
  /// (`--dynamic input:0=batch`). An empty symbol name asks for a fresh one.
  std::map<std::string, std::map<int64_t, std::string>> dynamicDims;
  /// Make every dim of every graph input symbolic (`--all-dynamic`), keeping the
  /// model's dim_param names where it has them.
  bool allDynamic = false;
  /// Graph inputs the importer may bake in as constants where an op needs a
  /// compile-time value (Reduce axes, Split sizes, ...): input name -> a file
  /// holding a serialized TensorProto. A bound input stays a function argument
  /// (marked `kiln.bound_constant`); callers must pass that same value.
  std::map<std::string, std::string> constantInputs;
  /// Name of the function the graph becomes.
  std::string functionName = "main_graph";
};

/// Imports the ONNX model at `path` (external data is read from beside it) into a
/// new module holding one func.func. Returns null after emitting diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &context,
                                                 llvm::StringRef path,
                                                 const ImportOptions &options = {});

/// Imports a model from serialized bytes; `baseDir` locates external data
/// (empty: the model may have none, and one that has is refused, naming the
/// file it wanted, since bytes come from no folder).
mlir::OwningOpRef<mlir::ModuleOp> importOnnxBytes(mlir::MLIRContext &context,
                                                  llvm::StringRef bytes,
                                                  llvm::StringRef modelName,
                                                  llvm::StringRef baseDir,
                                                  const ImportOptions &options = {});

/// The external data files a serialized model's tensors name (initializers,
/// sparse initializers, tensor attributes, in subgraphs too), each once, as the
/// model writes them (relative to its folder); nullopt when the bytes do not
/// parse. For keying a cache by what a compile reads.
std::optional<std::vector<std::string>> externalDataLocations(llvm::StringRef bytes);

/// Dialects the imported IR uses; load them before importing.
void loadImportDialects(mlir::MLIRContext &context);

} // namespace kiln::onnx_import

#endif // KILN_FRONTEND_ONNX_ONNXIMPORTER_H
