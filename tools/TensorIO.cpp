//===- TensorIO.cpp - TensorProto and .npy files as reference tensors -----===//

#include "tools/TensorIO.h"

#include "frontend/onnx/NodeImporter.h"
#include "interpreter/Interpreter.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <fstream>
#include <regex>

using namespace mlir;

namespace kiln {

namespace {
int onnxDataType(ref::DType t) {
  using ref::DType;
  switch (t) {
  case DType::f32: return onnx::TensorProto::FLOAT;
  case DType::u8: return onnx::TensorProto::UINT8;
  case DType::i8: return onnx::TensorProto::INT8;
  case DType::u16: return onnx::TensorProto::UINT16;
  case DType::i16: return onnx::TensorProto::INT16;
  case DType::i32: return onnx::TensorProto::INT32;
  case DType::i64: return onnx::TensorProto::INT64;
  case DType::boolean: return onnx::TensorProto::BOOL;
  case DType::f16: return onnx::TensorProto::FLOAT16;
  case DType::f64: return onnx::TensorProto::DOUBLE;
  case DType::u32: return onnx::TensorProto::UINT32;
  case DType::u64: return onnx::TensorProto::UINT64;
  case DType::bf16: return onnx::TensorProto::BFLOAT16;
  case DType::f8e4m3fn: return 17;
  case DType::f8e4m3fnuz: return 18;
  case DType::f8e5m2: return 19;
  case DType::f8e5m2fnuz: return 20;
  case DType::u4: return 21;
  case DType::i4: return 22;
  case DType::f4e2m1fn: return 23;
  case DType::u2: return 25;
  case DType::i2: return 26;
  }
  return 0;
}

/// numpy's dtype string for the .npy header.
std::optional<ref::DType> npyType(llvm::StringRef descr) {
  using ref::DType;
  if (descr.size() < 2 || descr[0] == '>')
    return std::nullopt; // big-endian data is not supported
  llvm::StringRef code = descr.drop_front();
  return llvm::StringSwitch<std::optional<DType>>(code)
      .Case("f2", DType::f16).Case("f4", DType::f32).Case("f8", DType::f64)
      .Case("b1", DType::boolean).Case("i1", DType::i8).Case("i2", DType::i16)
      .Case("i4", DType::i32).Case("i8", DType::i64).Case("u1", DType::u8)
      .Case("u2", DType::u16).Case("u4", DType::u32).Case("u8", DType::u64)
      .Default(std::nullopt);
}

FailureOr<ref::Tensor> readNpy(MLIRContext &context, llvm::StringRef path,
                               llvm::StringRef data) {
  Location loc = FileLineColLoc::get(&context, path, 0, 0);
  if (data.size() < 10 || !data.starts_with("\x93NUMPY"))
    return emitError(loc) << "not a .npy file";
  int major = static_cast<unsigned char>(data[6]);
  size_t headerLength, offset;
  if (major == 1) {
    headerLength = static_cast<unsigned char>(data[8]) | (static_cast<unsigned char>(data[9]) << 8);
    offset = 10;
  } else {
    if (data.size() < 12)
      return emitError(loc) << "truncated .npy header";
    headerLength = 0;
    for (int i = 0; i < 4; ++i)
      headerLength |= size_t(static_cast<unsigned char>(data[8 + i])) << (8 * i);
    offset = 12;
  }
  if (offset + headerLength > data.size())
    return emitError(loc) << "truncated .npy header";
  std::string header = data.substr(offset, headerLength).str();
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")))
    return emitError(loc) << ".npy header has no descr";
  std::optional<ref::DType> dtype = npyType(m[1].str());
  if (!dtype)
    return emitError(loc) << ".npy element type '" << m[1].str() << "' is not supported";
  if (std::regex_search(header, m, std::regex("'fortran_order':\\s*True")))
    return emitError(loc) << "Fortran-ordered .npy files are not supported";
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    return emitError(loc) << ".npy header has no shape";
  ref::Shape shape;
  std::string dims = m[1].str();
  std::regex number("[0-9]+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number);
       it != std::sregex_iterator(); ++it) {
    shape.push_back(std::stoll(it->str()));
    if (shape.back() > (int64_t(1) << 40))
      return emitError(loc) << ".npy shape is absurdly large";
  }
  ref::Tensor t(*dtype, shape);
  size_t begin = offset + headerLength;
  if (data.size() - begin != t.byteSize())
    return emitError(loc) << ".npy data holds " << data.size() - begin << " bytes; shape ["
                          << ref::shapeToString(shape) << "] needs " << t.byteSize();
  std::memcpy(t.bytes(), data.data() + begin, t.byteSize());
  return t;
}
} // namespace

FailureOr<ref::Tensor> readTensorFile(MLIRContext &context, llvm::StringRef path,
                                      std::string *name) {
  Location loc = FileLineColLoc::get(&context, path, 0, 0);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return emitError(loc) << "cannot read the file: " << buffer.getError().message();
  llvm::StringRef data = (*buffer)->getBuffer();
  if (path.ends_with(".npy")) {
    if (name)
      name->clear();
    return readNpy(context, path, data);
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

LogicalResult writeTensorProto(MLIRContext &context, const ref::Tensor &t, llvm::StringRef name,
                               llvm::StringRef path) {
  onnx::TensorProto proto;
  proto.set_name(name.str());
  proto.set_data_type(onnxDataType(t.dtype()));
  for (int64_t d : t.shape())
    proto.add_dims(d);
  int bits = ref::info(t.dtype()).bits;
  if (bits == 4 || bits == 2) {
    // Sub-byte types pack into bytes, the first element in the low bits.
    int perByte = 8 / bits;
    std::string packed((t.numel() + perByte - 1) / perByte, '\0');
    for (int64_t i = 0; i < t.numel(); ++i)
      packed[i / perByte] |= static_cast<char>((t.bytes()[i] & ((1 << bits) - 1))
                                               << (bits * (i % perByte)));
    proto.set_raw_data(packed);
  } else {
    proto.set_raw_data(reinterpret_cast<const char *>(t.bytes()), t.byteSize());
  }
  std::ofstream out(path.str(), std::ios::binary);
  if (!out || !proto.SerializeToOstream(&out))
    return emitError(FileLineColLoc::get(&context, path, 0, 0)) << "cannot write the file";
  return success();
}

std::string summarizeTensor(const ref::Tensor &t, size_t maxValues) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t.describe() << " [";
  for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(maxValues); ++i) {
    if (i)
      os << ", ";
    if (ref::isFloat(t.dtype()))
      os << llvm::format("%g", t.getF(i));
    else
      os << t.getI(i);
  }
  if (t.numel() > static_cast<int64_t>(maxValues))
    os << ", ...";
  os << "]";
  return s;
}

} // namespace kiln
