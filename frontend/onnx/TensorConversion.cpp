//===- TensorConversion.cpp - ONNX TensorProto to MLIR ElementsAttr -------===//
//
// Small tensors become DenseElementsAttr. Large ones become resource blobs so the
// IR holds them once: data read from external files is memory-mapped and never
// copied; an initializer's inline raw_data moves out of the protobuf into its
// blob (convertInitializer), other inline data is copied once.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/NodeImporter.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Alignment.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace mlir;

namespace kiln::onnx_import {

namespace {
// Element types newer than libonnx-dev's proto (ONNX 1.12) names.
constexpr int kOnnxFloat8E4M3FN = 17, kOnnxFloat8E4M3FNUZ = 18, kOnnxFloat8E5M2 = 19,
              kOnnxFloat8E5M2FNUZ = 20;
constexpr int kOnnxUInt4 = 21, kOnnxInt4 = 22, kOnnxFloat4E2M1 = 23, kOnnxFloat8E8M0 = 24,
              kOnnxUInt2 = 25, kOnnxInt2 = 26;

/// Tensors at least this large are kept as resource blobs rather than dense
/// attributes, whose uniquing would hash and copy every byte.
constexpr int64_t kBlobThresholdBytes = 64 * 1024;
/// The largest tensor kiln accepts: dims multiplying past this are corrupt input,
/// not a reason to try a giant allocation.
constexpr int64_t kMaxElements = int64_t(1) << 40;

int64_t bytesPerElement(Type t) {
  if (t.isInteger(1))
    return 1; // ONNX stores bools as bytes
  return (t.getIntOrFloatBitWidth() + 7) / 8;
}

/// 4- and 2-bit types are packed, low bits first, several to a byte.
unsigned packedBits(Type t) {
  unsigned w = t.getIntOrFloatBitWidth();
  return (w == 4 || w == 2) && !t.isInteger(1) ? w : 0;
}

/// Unpacks sub-byte elements from `bytes` into an attribute of `type`.
ElementsAttr unpackSubByte(RankedTensorType type, ArrayRef<uint8_t> bytes, unsigned bits) {
  Type element = type.getElementType();
  int64_t count = type.getNumElements();
  unsigned perByte = 8 / bits;
  auto valueBits = [&](int64_t i) -> uint64_t {
    return (bytes[i / perByte] >> ((i % perByte) * bits)) & ((1u << bits) - 1);
  };
  if (auto f = dyn_cast<FloatType>(element)) {
    SmallVector<APFloat> values;
    for (int64_t i = 0; i < count; ++i)
      values.push_back(APFloat(f.getFloatSemantics(), APInt(bits, valueBits(i))));
    return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
  }
  SmallVector<APInt> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(APInt(bits, valueBits(i)));
  return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
}
} // namespace

Type convertElementType(MLIRContext *ctx, int onnxType) {
  Builder b(ctx);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  case onnx::TensorProto::INT8:
    return b.getIntegerType(8);
  case onnx::TensorProto::INT16:
    return b.getIntegerType(16);
  case onnx::TensorProto::INT32:
    return b.getIntegerType(32);
  case onnx::TensorProto::INT64:
    return b.getIntegerType(64);
  case onnx::TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case onnx::TensorProto::UINT16:
    return b.getIntegerType(16, false);
  case onnx::TensorProto::UINT32:
    return b.getIntegerType(32, false);
  case onnx::TensorProto::UINT64:
    return b.getIntegerType(64, false);
  case kOnnxFloat8E4M3FN:
    return b.getType<Float8E4M3FNType>();
  case kOnnxFloat8E4M3FNUZ:
    return b.getType<Float8E4M3FNUZType>();
  case kOnnxFloat8E5M2:
    return b.getType<Float8E5M2Type>();
  case kOnnxFloat8E5M2FNUZ:
    return b.getType<Float8E5M2FNUZType>();
  case kOnnxUInt4:
    return b.getIntegerType(4, false);
  case kOnnxInt4:
    return b.getIntegerType(4);
  case kOnnxFloat4E2M1:
    return b.getType<Float4E2M1FNType>();
  case kOnnxFloat8E8M0:
    return b.getType<Float8E8M0FNUType>();
  case kOnnxUInt2:
    return b.getIntegerType(2, false);
  case kOnnxInt2:
    return b.getIntegerType(2);
  default:
    return nullptr;
  }
}

StringRef onnxTypeName(int onnxType) {
  switch (onnxType) {
  case 0: return "UNDEFINED";
  case 1: return "FLOAT";
  case 2: return "UINT8";
  case 3: return "INT8";
  case 4: return "UINT16";
  case 5: return "INT16";
  case 6: return "INT32";
  case 7: return "INT64";
  case 8: return "STRING";
  case 9: return "BOOL";
  case 10: return "FLOAT16";
  case 11: return "DOUBLE";
  case 12: return "UINT32";
  case 13: return "UINT64";
  case 14: return "COMPLEX64";
  case 15: return "COMPLEX128";
  case 16: return "BFLOAT16";
  case 17: return "FLOAT8E4M3FN";
  case 18: return "FLOAT8E4M3FNUZ";
  case 19: return "FLOAT8E5M2";
  case 20: return "FLOAT8E5M2FNUZ";
  case 21: return "UINT4";
  case 22: return "INT4";
  case 23: return "FLOAT4E2M1";
  default: return "an unknown type";
  }
}

namespace {

/// Reads `length` bytes at `offset` of an external data file, memory-mapped.
FailureOr<AsmResourceBlob> readExternal(const onnx::TensorProto &tensor, StringRef base,
                                        int64_t expectedBytes, Location loc,
                                        const Twine &what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset" && !llvm::to_integer(entry.value(), offset))
      return emitError(loc) << what << ": external data offset '" << entry.value()
                            << "' is not an integer";
    else if (entry.key() == "length" && !llvm::to_integer(entry.value(), length))
      return emitError(loc) << what << ": external data length '" << entry.value()
                            << "' is not an integer";
  }
  if (location.empty())
    return emitError(loc) << what << ": external data has no location";
  if (base.empty())
    return emitError(loc) << what << ": its data is in the external file '" << location
                          << "', and the model came as bytes, from no folder: load it from "
                             "its file so that the file is found beside it";
  if (llvm::sys::path::is_absolute(location) || StringRef(location).contains(".."))
    return emitError(loc) << what << ": external data location '" << location
                          << "' must be a relative path inside the model's directory";
  SmallString<256> path(base);
  llvm::sys::path::append(path, location);
  if (length < 0)
    length = expectedBytes;
  if (length != expectedBytes || offset < 0)
    return emitError(loc) << what << ": external data holds " << length
                          << " bytes at offset " << offset << " but the tensor needs "
                          << expectedBytes;
  // The location must stay inside the model's directory once resolved: a
  // symlink there pointing elsewhere (/etc/passwd) is refused like "..". And it
  // must be a regular file (a FIFO would block the reader).
  SmallString<256> realBase, realPath;
  if (!llvm::sys::fs::real_path(base, realBase) &&
      !llvm::sys::fs::real_path(path, realPath)) {
    if (!StringRef(realPath).starts_with((realBase + "/").str()))
      return emitError(loc) << what << ": external data location '" << location
                            << "' resolves to '" << realPath
                            << "', outside the model's directory";
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(realPath, status) ||
        status.type() != llvm::sys::fs::file_type::regular_file)
      return emitError(loc) << what << ": external data '" << path << "' is not a regular file";
  }
  uint64_t fileSize = 0;
  if (llvm::sys::fs::file_size(path, fileSize) ||
      uint64_t(offset) + uint64_t(length) > fileSize)
    return emitError(loc) << what << ": external data file '" << path
                          << "' is missing or shorter than offset + length ("
                          << offset + length << " bytes)";
  auto buffer = llvm::MemoryBuffer::getFileSlice(path, length, offset,
                                                 /*IsVolatile=*/false);
  if (!buffer)
    return emitError(loc) << what << ": cannot read external data '" << path
                          << "': " << buffer.getError().message();
  std::shared_ptr<llvm::MemoryBuffer> owned(std::move(*buffer));
  ArrayRef<char> data(owned->getBufferStart(), owned->getBufferSize());
  return UnmanagedAsmResourceBlob::allocateWithAlign(
      data, /*align=*/1, [owned](void *, size_t, size_t) mutable { owned.reset(); });
}

} // namespace

/// convertTensor, where a non-null `takeRaw` is the tensor's own raw_data,
/// which a blob may take instead of copying.
static FailureOr<ElementsAttr> convert(const onnx::TensorProto &tensor, std::string *takeRaw,
                                       MLIRContext *ctx, Location loc, StringRef externalBase,
                                       const Twine &what) {
  Type element = convertElementType(ctx, tensor.data_type());
  if (!element)
    return emitError(loc) << what << ": element type " << onnxTypeName(tensor.data_type())
                          << " is not supported by kiln";
  SmallVector<int64_t> shape;
  int64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return emitError(loc) << what << ": negative dim " << d;
    if (d > 0 && count > kMaxElements / d)
      return emitError(loc) << what << ": more than 2^40 elements";
    count *= d;
    shape.push_back(d);
  }
  auto type = RankedTensorType::get(shape, element);
  int64_t elemBytes = bytesPerElement(element);
  int64_t expectedBytes = count * elemBytes;
  if (unsigned bits = packedBits(element)) {
    unsigned perByte = 8 / bits;
    int64_t packedBytes = (count + perByte - 1) / perByte;
    SmallVector<uint8_t> bytes;
    if (tensor.has_raw_data()) {
      if ((int64_t)tensor.raw_data().size() != packedBytes)
        return emitError(loc) << what << ": raw_data has " << tensor.raw_data().size()
                              << " bytes but " << type << " needs " << packedBytes;
      bytes.assign(tensor.raw_data().begin(), tensor.raw_data().end());
    } else if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
      return emitError(loc) << what << ": external data of a packed " << bits
                            << "-bit type is not supported";
    } else {
      if (tensor.int32_data_size() != packedBytes)
        return emitError(loc) << what << ": holds " << tensor.int32_data_size()
                              << " packed bytes but " << type << " needs " << packedBytes;
      for (int32_t b : tensor.int32_data())
        bytes.push_back(static_cast<uint8_t>(b));
    }
    return unpackSubByte(type, bytes, bits);
  }

  // Raw bytes: inline or external. Both are little-endian, as MLIR's buffers are
  // (kiln builds on little-endian hosts only), except bools, which MLIR packs.
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL ||
      tensor.has_raw_data()) {
    FailureOr<AsmResourceBlob> blob = failure();
    StringRef raw;
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
      blob = readExternal(tensor, externalBase, expectedBytes, loc, what);
      if (failed(blob))
        return failure();
      raw = StringRef(blob->getData().data(), blob->getData().size());
    } else {
      raw = tensor.raw_data();
      if ((int64_t)raw.size() != expectedBytes)
        return emitError(loc) << what << ": raw_data has " << raw.size()
                              << " bytes but " << type << " needs " << expectedBytes;
    }
    if (element.isInteger(1)) {
      SmallVector<bool> values;
      for (char c : raw)
        values.push_back(c != 0);
      return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
    }
    if (expectedBytes >= kBlobThresholdBytes) {
      std::string name = tensor.name().empty() ? std::string("tensor") : tensor.name();
      if (succeeded(blob))
        return cast<ElementsAttr>(DenseResourceElementsAttr::get(type, name, std::move(*blob)));
      if (takeRaw && llvm::isAddrAligned(llvm::Align(alignof(uint64_t)), takeRaw->data())) {
        // The string's heap buffer moves into the blob, which frees it.
        auto *owned = new std::string(std::move(*takeRaw));
        return cast<ElementsAttr>(DenseResourceElementsAttr::get(
            type, name,
            AsmResourceBlob(ArrayRef<char>(owned->data(), owned->size()), alignof(uint64_t),
                            [owned](void *, size_t, size_t) { delete owned; },
                            /*dataIsMutable=*/true)));
      }
      return cast<ElementsAttr>(DenseResourceElementsAttr::get(
          type, name,
          HeapAsmResourceBlob::allocateAndCopyWithAlign(ArrayRef<char>(raw.data(), raw.size()),
                                                        alignof(uint64_t))));
    }
    bool detectedSplat = false;
    if (!DenseElementsAttr::isValidRawBuffer(type, ArrayRef<char>(raw.data(), raw.size()),
                                             detectedSplat))
      return emitError(loc) << what << ": raw data does not match " << type;
    return cast<ElementsAttr>(
        DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(raw.data(), raw.size())));
  }

  // Typed fields.
  auto checkCount = [&](int64_t have) -> LogicalResult {
    if (have == count)
      return success();
    return emitError(loc) << what << ": holds " << have << " values but " << type
                          << " needs " << count;
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT: {
    if (failed(checkCount(tensor.float_data_size())))
      return failure();
    SmallVector<float> v(tensor.float_data().begin(), tensor.float_data().end());
    return cast<ElementsAttr>(DenseElementsAttr::get(type, ArrayRef<float>(v)));
  }
  case onnx::TensorProto::DOUBLE: {
    if (failed(checkCount(tensor.double_data_size())))
      return failure();
    SmallVector<double> v(tensor.double_data().begin(), tensor.double_data().end());
    return cast<ElementsAttr>(DenseElementsAttr::get(type, ArrayRef<double>(v)));
  }
  case onnx::TensorProto::INT64: {
    if (failed(checkCount(tensor.int64_data_size())))
      return failure();
    SmallVector<int64_t> v(tensor.int64_data().begin(), tensor.int64_data().end());
    return cast<ElementsAttr>(DenseElementsAttr::get(type, ArrayRef<int64_t>(v)));
  }
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64: {
    if (failed(checkCount(tensor.uint64_data_size())))
      return failure();
    SmallVector<APInt> v;
    for (uint64_t x : tensor.uint64_data())
      v.push_back(APInt(element.getIntOrFloatBitWidth(), x, false, /*implicitTrunc=*/true));
    return cast<ElementsAttr>(DenseElementsAttr::get(type, v));
  }
  case onnx::TensorProto::BOOL: {
    if (failed(checkCount(tensor.int32_data_size())))
      return failure();
    SmallVector<bool> v;
    for (int32_t x : tensor.int32_data())
      v.push_back(x != 0);
    return cast<ElementsAttr>(DenseElementsAttr::get(type, v));
  }
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
  case kOnnxFloat8E4M3FN:
  case kOnnxFloat8E4M3FNUZ:
  case kOnnxFloat8E5M2:
  case kOnnxFloat8E5M2FNUZ:
  case kOnnxFloat8E8M0: { // the bit patterns, one per int32
    if (failed(checkCount(tensor.int32_data_size())))
      return failure();
    const llvm::fltSemantics &sem = cast<FloatType>(element).getFloatSemantics();
    unsigned width = element.getIntOrFloatBitWidth();
    SmallVector<APFloat> v;
    for (int32_t x : tensor.int32_data())
      v.push_back(APFloat(sem, APInt(width, static_cast<uint64_t>(static_cast<uint32_t>(x)),
                                     false, /*implicitTrunc=*/true)));
    return cast<ElementsAttr>(DenseElementsAttr::get(type, v));
  }
  default: { // INT8/16/32, UINT8/16 live in int32_data
    if (failed(checkCount(tensor.int32_data_size())))
      return failure();
    SmallVector<APInt> v;
    unsigned width = element.getIntOrFloatBitWidth();
    for (int32_t x : tensor.int32_data())
      v.push_back(APInt(width, static_cast<uint64_t>(static_cast<int64_t>(x)),
                        /*isSigned=*/true, /*implicitTrunc=*/true));
    return cast<ElementsAttr>(DenseElementsAttr::get(type, v));
  }
  }
}

FailureOr<ElementsAttr> convertTensor(const onnx::TensorProto &tensor, MLIRContext *ctx,
                                      Location loc, StringRef externalBase,
                                      const Twine &what) {
  return convert(tensor, /*takeRaw=*/nullptr, ctx, loc, externalBase, what);
}

FailureOr<ElementsAttr> convertInitializer(onnx::TensorProto &tensor, MLIRContext *ctx,
                                           Location loc, StringRef externalBase,
                                           const Twine &what) {
  std::string *raw = tensor.has_raw_data() ? tensor.mutable_raw_data() : nullptr;
  return convert(tensor, raw, ctx, loc, externalBase, what);
}

} // namespace kiln::onnx_import
