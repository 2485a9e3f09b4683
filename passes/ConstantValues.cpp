//===- ConstantValues.cpp - reading and writing float weight constants ----===//

#include "passes/ConstantValues.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

namespace {
/// Constants at least this large are written as resource blobs (the importer's threshold).
constexpr size_t kResourceBlobBytes = 64 * 1024;
} // namespace

using namespace mlir;

namespace kiln {

/// The kiln.constant defining `v` when it is f32 or f64 of a static shape
/// (the weights the rewrites read); null otherwise.
static ConstantOp floatWeight(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto type = c ? dyn_cast<RankedTensorType>(c.getType()) : RankedTensorType();
  if (!type || !type.hasStaticShape() || !(type.getElementType().isF32() || type.getElementType().isF64()))
    return {};
  return c;
}

std::optional<std::vector<double>> readFloats(Value v) {
  ConstantOp c = floatWeight(v);
  if (!c)
    return std::nullopt;
  auto type = cast<RankedTensorType>(c.getType());
  bool wide = type.getElementType().isF64();
  std::vector<double> values(static_cast<size_t>(type.getNumElements()));
  if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue())) {
    size_t i = 0;
    for (APFloat f : dense.getValues<APFloat>())
      values[i++] = wide ? f.convertToDouble() : static_cast<double>(f.convertToFloat());
    return values;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(c.getValue())) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    size_t bytes = values.size() * (wide ? 8 : 4);
    if (!blob || blob->getData().size() != bytes)
      return std::nullopt;
    const char *data = blob->getData().data();
    for (size_t i = 0; i < values.size(); ++i) {
      if (wide) {
        std::memcpy(&values[i], data + 8 * i, 8);
      } else {
        float f;
        std::memcpy(&f, data + 4 * i, 4);
        values[i] = f;
      }
    }
    return values;
  }
  return std::nullopt;
}

std::optional<double> scalarConstant(Value v) {
  if (auto c = v.getDefiningOp<ConstantOp>())
    if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        dense && dense.getNumElements() == 1 && isa<FloatType>(dense.getElementType())) {
      APFloat f = *dense.getValues<APFloat>().begin();
      bool lost = false;
      f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      return f.convertToDouble();
    }
  std::optional<std::vector<double>> values = readFloats(v);
  if (!values || values->size() != 1)
    return std::nullopt;
  return values->front();
}

std::optional<ArrayRef<char>> constantBytes(Value v, std::vector<char> &storage) {
  // Any float or integer type of whole bytes: the bytes are moved, never
  // converted.
  auto c = v.getDefiningOp<ConstantOp>();
  auto type = c ? dyn_cast<RankedTensorType>(c.getType()) : RankedTensorType();
  Type elementType = type ? type.getElementType() : Type();
  unsigned width = elementType && (isa<FloatType, IntegerType>(elementType))
                       ? elementType.getIntOrFloatBitWidth()
                       : 0;
  if (!type || !type.hasStaticShape() || width == 0 || width % 8 != 0)
    return std::nullopt;
  size_t element = width / 8;
  size_t bytes = static_cast<size_t>(type.getNumElements()) * element;
  if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue())) {
    ArrayRef<char> raw = dense.getRawData();
    if (!dense.isSplat())
      return raw.size() == bytes ? std::optional<ArrayRef<char>>(raw) : std::nullopt;
    if (raw.size() != element)
      return std::nullopt;
    storage.resize(bytes);
    for (size_t at = 0; at < bytes; at += element)
      std::memcpy(storage.data() + at, raw.data(), element);
    return ArrayRef<char>(storage);
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(c.getValue())) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != bytes)
      return std::nullopt;
    return blob->getData();
  }
  return std::nullopt;
}

Value makeConstantFromBytes(OpBuilder &b, Location loc, RankedTensorType type, size_t bytes,
                            llvm::function_ref<void(MutableArrayRef<char>)> fill) {
  if (bytes >= kResourceBlobBytes) {
    AsmResourceBlob blob = HeapAsmResourceBlob::allocate(bytes, alignof(uint64_t));
    MutableArrayRef<char> data = blob.getMutableData();
    fill(data);
    // A splat stays a splat (a zero bias, a constant scale): dense, one element.
    size_t element = bytes / static_cast<size_t>(std::max<int64_t>(1, type.getNumElements()));
    bool splat = element > 0 && bytes % element == 0;
    for (size_t at = element; splat && at < bytes; at += element)
      splat = std::memcmp(data.data(), data.data() + at, element) == 0;
    if (!splat)
      return ConstantOp::create(b, loc,
                                cast<ElementsAttr>(DenseResourceElementsAttr::get(
                                    type, "rewritten", std::move(blob))))
          .getResult();
    return ConstantOp::create(b, loc,
                              cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(
                                  type, ArrayRef<char>(data.data(), element))))
        .getResult();
  }
  std::vector<char> data(bytes);
  fill(data);
  return ConstantOp::create(b, loc,
                            cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, data)))
      .getResult();
}

Value makeConstant(OpBuilder &b, Location loc, RankedTensorType type, ArrayRef<double> values) {
  Type element = type.getElementType();
  if (element.isF64())
    return makeConstantFromBytes(b, loc, type, values.size() * 8, [&](MutableArrayRef<char> out) {
      std::memcpy(out.data(), values.data(), out.size());
    });
  if (element.isF32())
    return makeConstantFromBytes(b, loc, type, values.size() * 4, [&](MutableArrayRef<char> out) {
      for (size_t i = 0; i < values.size(); ++i) {
        float f = static_cast<float>(values[i]);
        std::memcpy(out.data() + 4 * i, &f, 4);
      }
    });
  // f16/bf16: each value rounded to nearest even, stored as its 16 bits.
  const llvm::fltSemantics &semantics = cast<FloatType>(element).getFloatSemantics();
  return makeConstantFromBytes(b, loc, type, values.size() * 2, [&](MutableArrayRef<char> out) {
    for (size_t i = 0; i < values.size(); ++i) {
      APFloat f(values[i]);
      bool lost;
      f.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
      auto bits = static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
      std::memcpy(out.data() + 2 * i, &bits, 2);
    }
  });
}

void eraseDeadWeight(Value old) {
  auto c = old ? old.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!c || !c->use_empty())
    return;
  auto resource = dyn_cast<DenseResourceElementsAttr>(c.getValue());
  auto module = c->getParentOfType<ModuleOp>();
  c->erase();
  if (!resource || !module || llvm::range_size(module.getOps<func::FuncOp>()) != 1)
    return;
  // By the blob, not the attribute: attributes of different types may share
  // one blob (DenseResourceElementsAttr::get with another type).
  auto *entry = resource.getRawHandle().getResource();
  bool referenced = false;
  module.walk([&](ConstantOp other) {
    auto same = dyn_cast<DenseResourceElementsAttr>(other.getValue());
    referenced = same && same.getRawHandle().getResource() == entry;
    return referenced ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (!referenced)
    entry->setBlob(AsmResourceBlob());
}

Value i64Vector(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())}, b.getI64Type());
  return ConstantOp::create(b, loc, cast<ElementsAttr>(DenseIntElementsAttr::get(type, values)))
      .getResult();
}

} // namespace kiln
