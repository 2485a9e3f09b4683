//===- ConstantValues.cpp - reading and writing float weight constants ----===//

#include "passes/ConstantValues.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

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
  DenseElementsAttr attr;
  if (type.getElementType().isF64()) {
    attr = DenseElementsAttr::get(type, values);
  } else {
    std::vector<float> narrow(values.begin(), values.end());
    attr = DenseElementsAttr::get(type, ArrayRef<float>(narrow));
  }
  return ConstantOp::create(b, loc, cast<ElementsAttr>(attr)).getResult();
}

} // namespace kiln
