//===- OpTable.cpp - the converter table from OnnxOps.def -----------------===//

#include "frontend/onnx/ops/Converters.h"

#include "llvm/ADT/StringMap.h"

namespace kiln::onnx_import {

ConverterEntry lookupConverter(llvm::StringRef opType, std::string *unsupportedReason) {
  static const llvm::StringMap<ConverterEntry> converters = {
#define ONNX_OP(name, converter, maxVersion) {name, {converter, maxVersion}},
#define ONNX_UNSUPPORTED(name, reason)
#include "frontend/onnx/OnnxOps.def"
#undef ONNX_OP
#undef ONNX_UNSUPPORTED
  };
  static const llvm::StringMap<const char *> unsupported = {
#define ONNX_OP(name, converter, maxVersion)
#define ONNX_UNSUPPORTED(name, reason) {name, reason},
#include "frontend/onnx/OnnxOps.def"
#undef ONNX_OP
#undef ONNX_UNSUPPORTED
  };
  if (auto it = converters.find(opType); it != converters.end())
    return it->second;
  if (auto it = unsupported.find(opType); it != unsupported.end() && unsupportedReason)
    *unsupportedReason = it->second;
  return {};
}

} // namespace kiln::onnx_import
