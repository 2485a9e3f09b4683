//===- TensorIO.cpp - TensorProto and .npy files as reference tensors -----===//

#include "driver/TensorIO.h"

#include "TensorFiles.h"

#include "frontend/onnx/NodeImporter.h"
#include "interpreter/Interpreter.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"


using namespace mlir;

namespace kiln {

FailureOr<ref::Tensor> readTensorFile(MLIRContext &context, llvm::StringRef path,
                                      std::string *name) {
  Location loc = FileLineColLoc::get(&context, path, 0, 0);
  // Only regular files (a FIFO would block, /dev/zero never ends).
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return emitError(loc) << "cannot read the file: " << ec.message();
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return emitError(loc) << "cannot read the file: not a regular file";
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return emitError(loc) << "cannot read the file: " << buffer.getError().message();
  llvm::StringRef data = (*buffer)->getBuffer();
  if (path.ends_with(".npy")) {
    if (name)
      name->clear();
    absl::StatusOr<ref::Tensor> t = parseNpy(data.str());
    if (!t.ok())
      return emitError(loc) << std::string(t.status().message());
    return std::move(*t);
  }
  onnx::TensorProto proto;
  if (data.size() > INT32_MAX || !proto.ParseFromArray(data.data(), static_cast<int>(data.size())))
    return emitError(loc) << "not a TensorProto (.pb) file";
  if (name)
    *name = proto.name();
  FailureOr<ElementsAttr> attr = onnx_import::convertTensor(
      proto, &context, loc, llvm::sys::path::parent_path(path), "tensor");
  if (failed(attr))
    return failure();
  return tensorFromElements(*attr, loc);
}

} // namespace kiln
