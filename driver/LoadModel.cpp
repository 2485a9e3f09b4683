//===- LoadModel.cpp - a model file as a kiln module ----------------------===//

#include "driver/LoadModel.h"

#include "llvm/Support/FileSystem.h"

#include "passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace kiln {
namespace {
/// `module` after the graph pipeline when asked; null when either is.
OwningOpRef<ModuleOp> optimized(OwningOpRef<ModuleOp> module, const LoadOptions &options) {
  if (!module)
    return nullptr;
  if (options.optimize) {
    PassManager pm(module->getContext());
    buildGraphPipeline(pm, GraphPipelineOptions());
    if (failed(pm.run(*module)))
      return nullptr;
  }
  return module;
}
} // namespace

OwningOpRef<ModuleOp> loadModel(MLIRContext &context, llvm::StringRef path,
                                const LoadOptions &options) {
  OwningOpRef<ModuleOp> module;
  // Only regular files: a FIFO would block the reader, a device never end.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file) {
    emitError(FileLineColLoc::get(&context, path, 0, 0))
        << "cannot read the model: not a regular file";
    return nullptr;
  }
  if (path.ends_with(".mlir")) {
    module = parseSourceFile<ModuleOp>(path, &context);
  } else if (path.ends_with(".onnx")) {
    module = onnx_import::importOnnxFile(context, path, options.import);
  } else {
    emitError(UnknownLoc::get(&context))
        << path << ": not a model kiln reads (.onnx or .mlir)";
    return nullptr;
  }
  return optimized(std::move(module), options);
}

OwningOpRef<ModuleOp> loadModelBytes(MLIRContext &context, llvm::StringRef bytes,
                                     llvm::StringRef name, llvm::StringRef folder,
                                     const LoadOptions &options) {
  OwningOpRef<ModuleOp> module;
  if (name.ends_with(".mlir"))
    module = parseSourceString<ModuleOp>(bytes, &context, name);
  else
    module = onnx_import::importOnnxBytes(context, bytes, name, folder, options.import);
  return optimized(std::move(module), options);
}

func::FuncOp entryFunction(ModuleOp module) {
  func::FuncOp only;
  int count = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.getName() == "main_graph")
      return func;
    if (!func.isExternal()) {
      only = func;
      ++count;
    }
  }
  if (count == 1)
    return only;
  module.emitError() << "has " << count
                     << " functions and none is main_graph: which one should run?";
  return nullptr;
}

} // namespace kiln
