//===- Dequantized.cpp - operands the importer dequantized, as integers ---===//

#include "passes/Dequantized.h"

#include "passes/ConstantValues.h"
#include "passes/Matching.h"

#include "ir/Kiln/KilnDialect.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

/// The values of a float constant of any float type as doubles.
std::optional<std::vector<double>> floatValues(Value v) {
  if (std::optional<std::vector<double>> values = readFloats(v))
    return values;
  if (std::optional<double> one = scalarConstant(v))
    return std::vector<double>{*one};
  return std::nullopt;
}

/// The values of an integer constant as doubles: a zero point MatMulInteger's
/// import subtracts in i32.
std::optional<std::vector<double>> intValues(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseIntElementsAttr>(c.getValue()) : DenseIntElementsAttr();
  if (!dense)
    return std::nullopt;
  std::vector<double> values;
  for (const APInt &i : dense.getValues<APInt>())
    values.push_back(static_cast<double>(i.getSExtValue()));
  return values;
}

/// Whether constant `v` holds one value, or one per index of dim `axis` of
/// `of` with its other dims 1 (numpy broadcasting: `v`'s dims align with
/// `of`'s last ones).
bool perTensorOrAxis(Value v, RankedTensorType of, int64_t axis) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!v.getDefiningOp<ConstantOp>() || !t.hasStaticShape() || t.getRank() > of.getRank())
    return false;
  if (t.getNumElements() == 1)
    return true;
  if (axis < 0 || ShapedType::isDynamic(of.getDimSize(axis)))
    return false;
  int64_t offset = of.getRank() - t.getRank();
  for (int64_t d = 0; d < t.getRank(); ++d)
    if (t.getDimSize(d) != (d + offset == axis ? of.getDimSize(axis) : 1))
      return false;
  return axis >= offset;
}

/// `centered` as q - zero or q, of an 8-bit q of `codes` cast to `type`'s
/// shape.
std::optional<Dequantized> centeredQ(Value centered, RankedTensorType type, int64_t axis,
                                     QuantizedCodes codes) {
  Dequantized d;
  Value zero;
  if (auto sub = centered.getDefiningOp<SubOp>()) {
    zero = sub.getRhs();
    centered = sub.getLhs();
    if (!perTensorOrAxis(zero, type, axis))
      return std::nullopt;
  }
  auto cast = centered.getDefiningOp<CastOp>();
  auto qType = cast ? dyn_cast<RankedTensorType>(cast.getInput().getType()) : RankedTensorType();
  if (!qType || qType.getShape() != type.getShape())
    return std::nullopt;
  if (codes == QuantizedCodes::e4m3) {
    if (!isa<Float8E4M3FNType>(qType.getElementType()))
      return std::nullopt;
    d.q = cast.getInput();
    // A float8 zero point that is not 0 would shift every product; the
    // formats' tools write 0.
    std::optional<std::vector<double>> z = zero ? floatValues(zero) : std::vector<double>{};
    if (!z || llvm::any_of(*z, [](double x) { return x != 0; }))
      return std::nullopt;
    return d;
  }
  auto integer = dyn_cast<IntegerType>(qType.getElementType());
  if (!integer || integer.getWidth() != 8)
    return std::nullopt;
  d.q = cast.getInput();
  d.isUnsigned = integer.isUnsigned();
  if (zero) {
    std::optional<std::vector<double>> z =
        isa<FloatType>(type.getElementType()) ? floatValues(zero) : intValues(zero);
    // A zero point is an integer of q's range.
    double lo = d.isUnsigned ? 0 : -128, hi = d.isUnsigned ? 255 : 127;
    if (!z || llvm::any_of(*z, [&](double x) { return x != std::round(x) || x < lo || x > hi; }))
      return std::nullopt;
    d.zero = *z;
  }
  return d;
}

} // namespace

std::optional<Dequantized> dequantized(Value v, int64_t axis, QuantizedCodes codes) {
  auto type = cast<RankedTensorType>(v.getType());
  auto mul = v.getDefiningOp<MulOp>();
  // No scale: MatMulInteger's operands (i32) and ConvInteger's (f32, the
  // type its conv computes in) are exact integers, (q - zero) alone.
  if (type.getElementType().isInteger(32) || !mul) {
    std::optional<Dequantized> d = centeredQ(v, type, axis, codes);
    if (d)
      d->scale = {1.0};
    return d;
  }
  for (int side = 0; side < 2; ++side) {
    Value centered = mul->getOperand(side), scale = mul->getOperand(1 - side);
    if (!perTensorOrAxis(scale, type, axis))
      continue;
    std::optional<Dequantized> d = centeredQ(centered, type, axis, codes);
    std::optional<std::vector<double>> s = d ? floatValues(scale) : std::nullopt;
    if (!s)
      continue;
    d->scale = *s;
    return d;
  }
  return std::nullopt;
}

double at(const std::vector<double> &values, int64_t i) {
  return values.size() == 1 ? values[0] : values[static_cast<size_t>(i)];
}

std::vector<int64_t> int8Zeros(const Dequantized &d, int64_t count) {
  std::vector<int64_t> zeros;
  int64_t shift = d.isUnsigned ? 128 : 0;
  for (int64_t c = 0; c < (d.zero.size() > 1 ? count : 1); ++c)
    zeros.push_back((d.zero.empty() ? 0 : static_cast<int64_t>(at(d.zero, c))) - shift);
  return zeros;
}

Value IntegerOpBuilder::make(StringRef name, ValueRange operands,
                             ArrayRef<NamedAttribute> attributes) {
  if (llvm::any_of(operands, [](Value v) { return !v; }))
    return {};
  Operation *op = createInferred(b, loc, name, operands, attributes);
  return op ? op->getResult(0) : Value();
}

Value IntegerOpBuilder::castTo(Value v, Type element) {
  return make(CastOp::getOperationName(), {v}, {b.getNamedAttr("to", TypeAttr::get(element))});
}

Value IntegerOpBuilder::transposed(Value v, ArrayRef<int64_t> permutation) {
  return make(TransposeOp::getOperationName(), {v},
              {b.getNamedAttr("permutation", b.getDenseI64ArrayAttr(permutation))});
}

Value IntegerOpBuilder::scalar(Type element, int64_t value) {
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({}, element),
                             APInt(element.getIntOrFloatBitWidth(), value, /*isSigned=*/true)));
}

Value IntegerOpBuilder::asInt8(const Dequantized &d) {
  if (!d.isUnsigned)
    return d.q;
  Value wide = castTo(d.q, b.getI32Type());
  return castTo(make(SubOp::getOperationName(), {wide, scalar(b.getI32Type(), 128)}),
                b.getI8Type());
}

void recordKeptFloat(Operation *op, StringRef why, SmallVectorImpl<Attribute> &kept,
                     StringRef call) {
  Builder b(op->getContext());
  kept.push_back(b.getDictionaryAttr(
      {b.getNamedAttr("op", b.getStringAttr(op->getName().getStringRef())),
       b.getNamedAttr("call", b.getStringAttr(call)),
       b.getNamedAttr("node", b.getStringAttr(nodeNameOf(op->getLoc()))),
       b.getNamedAttr("why", b.getStringAttr(why.empty() ? "an op refused its operands" : why))}));
}

} // namespace kiln
