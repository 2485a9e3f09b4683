//===- OpTable.cpp - the converter table: OnnxOps.def and the op table -----===//

#include "frontend/onnx/ops/Converters.h"

#include "llvm/ADT/StringMap.h"

namespace kiln::onnx_import {

ConverterEntry lookupConverter(llvm::StringRef opType, std::string *unsupportedReason) {
  static const llvm::StringMap<ConverterEntry> converters = [] {
    llvm::StringMap<ConverterEntry> map = {
#define ONNX_OP(name, converter, maxVersion) {name, {converter, maxVersion}},
#define ONNX_UNSUPPORTED(name, reason)
#include "frontend/onnx/OnnxOps.def"
#undef ONNX_OP
#undef ONNX_UNSUPPORTED
    };
    // The op table's rows with an ONNX op of their own ("" where there is none).
    auto addOneToOne = [&](llvm::StringRef name, Converter convert, int64_t maxVersion) {
      if (!name.empty())
        map.try_emplace(name, ConverterEntry{convert, maxVersion});
    };
#define KILN_UNARY(Fn, Code, OpClass, Onnx, OnnxVersion, ...)                                      \
  addOneToOne(Onnx, mapUnary<OpClass>, OnnxVersion);
#define KILN_BINARY(Fn, Code, OpClass, Onnx, OnnxVersion, ...)                                     \
  addOneToOne(Onnx, mapBinary<OpClass>, OnnxVersion);
#include "kiln/ops/ElementwiseOps.def"
    return map;
  }();
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

ConverterEntry lookupDomainConverter(llvm::StringRef domain, llvm::StringRef opType) {
  static const llvm::StringMap<ConverterEntry> converters = [] {
    llvm::StringMap<ConverterEntry> map;
#define ONNX_OP(name, converter, maxVersion)
#define ONNX_UNSUPPORTED(name, reason)
#define ONNX_DOMAIN_OP(domain, name, converter, maxVersion)                                   \
  map[std::string(domain) + ":" + name] = {converter, maxVersion};
#include "frontend/onnx/OnnxOps.def"
#undef ONNX_OP
#undef ONNX_UNSUPPORTED
#undef ONNX_DOMAIN_OP
    return map;
  }();
  auto it = converters.find((domain + ":" + opType).str());
  return it == converters.end() ? ConverterEntry{} : it->second;
}

} // namespace kiln::onnx_import
