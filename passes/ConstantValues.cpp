//===- ConstantValues.cpp - reading and writing float weight constants ----===//

#include "passes/ConstantValues.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

namespace {
/// Constants at least this large are written as resource blobs (the importer's threshold).
constexpr size_t kResourceBlobBytes = 64 * 1024;
} // namespace

using namespace mlir;

namespace kiln {

std::optional<std::vector<double>> readFloats(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(c.getType());
  if (!type || !type.hasStaticShape() || !(type.getElementType().isF32() || type.getElementType().isF64()))
    return std::nullopt;
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

Value makeConstant(OpBuilder &b, Location loc, RankedTensorType type, ArrayRef<double> values) {
  Type element = type.getElementType();
  DenseElementsAttr attr;
  if (element.isF64()) {
    attr = DenseElementsAttr::get(type, values);
  } else if (element.isF32()) {
    std::vector<float> narrow(values.begin(), values.end());
    attr = DenseElementsAttr::get(type, ArrayRef<float>(narrow));
  } else {
    // f16/bf16: each value rounded to nearest even, stored as its 16 bits.
    const llvm::fltSemantics &semantics = cast<FloatType>(element).getFloatSemantics();
    std::vector<uint16_t> bits(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      APFloat f(values[i]);
      bool lost;
      f.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
      bits[i] = static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
    }
    ArrayRef<char> raw(reinterpret_cast<const char *>(bits.data()), bits.size() * 2);
    // Large weights stay resource blobs, as the importer makes them, so the
    // context does not hash and unique their bytes; a splat stays a splat.
    bool splat = llvm::all_of(bits, [&](uint16_t v) { return v == bits.front(); });
    if (splat && !bits.empty())
      raw = raw.take_front(2);
    else if (raw.size() >= kResourceBlobBytes)
      return ConstantOp::create(b, loc,
                                cast<ElementsAttr>(DenseResourceElementsAttr::get(
                                    type, "narrowed",
                                    HeapAsmResourceBlob::allocateAndCopyWithAlign(
                                        raw, alignof(uint64_t)))))
          .getResult();
    attr = DenseElementsAttr::getFromRawBuffer(type, raw);
  }
  return ConstantOp::create(b, loc, cast<ElementsAttr>(attr)).getResult();
}

Value i64Vector(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())}, b.getI64Type());
  return ConstantOp::create(b, loc, cast<ElementsAttr>(DenseIntElementsAttr::get(type, values)))
      .getResult();
}

} // namespace kiln
