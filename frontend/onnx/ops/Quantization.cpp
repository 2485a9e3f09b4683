//===- Quantization.cpp - ONNX (de)quantization onto kiln ops -------------===//
//
// DequantizeLinear is (x - zero_point) * scale and QuantizeLinear is
// saturate(round(x / scale) + zero_point), computed in the scale's float type, with
// the scale (and zero point) broadcast per tensor, per axis, or per block along an
// axis. Rounding is to nearest even, as ONNX specifies.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

#include "llvm/ADT/APInt.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {

/// Shapes `param` (a scale or zero point) to broadcast against `x`: as is for a
/// scalar, along `axis` for a 1-D per-axis parameter, and repeated `blockSize` times
/// along `axis` (then cut to x's size) for a blocked one.
FailureOr<Value> broadcastParam(NodeImporter &n, Value param, Value x, int64_t axisAttr,
                                int64_t blockSize) {
  auto pt = NodeImporter::typeOf(param);
  int64_t rank = NodeImporter::typeOf(x).getRank();
  // A 1-D parameter of unknown length (a graph input compiled with dynamic
  // dims) where no axis of x could be its: one value, reshaped to [1] with a
  // guard checking its length at run time.
  if (pt.getRank() == 1 && pt.isDynamicDim(0) && blockSize == 0 &&
      (axisAttr < -rank || axisAttr >= rank)) {
    auto one = reshapeTo(n, param, {getConstantDim(n.context(), 1)});
    if (failed(one))
      return failure();
    param = *one;
    pt = NodeImporter::typeOf(param);
  }
  bool scalar = pt.getRank() == 0 || (pt.getRank() == 1 && pt.getDimSize(0) == 1 && blockSize == 0);
  if (scalar)
    return pt.getRank() == 0 ? param : n.create<ReshapeOp>({param, n.constI64({})});
  auto axes = normalizeAxes(n, {axisAttr}, rank);
  if (failed(axes))
    return failure();
  int64_t axis = (*axes)[0];
  if (blockSize <= 0) {
    if (pt.getRank() != 1)
      return n.error("a per-axis scale or zero point must be 1-D");
    SmallVector<int64_t> ones;
    for (int64_t i = 0; i < rank; ++i)
      if (i != axis)
        ones.push_back(i);
    return insertUnitDims(n, param, ones);
  }
  if (pt.getRank() != rank)
    return n.error("a blocked scale or zero point must have the input's rank");
  // [.., nb, ..] -> [.., nb, 1, ..] -> broadcast [.., nb, B, ..] -> [.., nb * B, ..]
  // -> slice to x's dim.
  auto unit = insertUnitDims(n, param, {axis + 1});
  if (failed(unit))
    return failure();
  SmallVector<Value> wide, merged;
  for (int64_t i = 0; i <= rank; ++i) {
    auto d = i == axis + 1 ? FailureOr<Value>(n.constI64({blockSize})) : dimPiece(n, *unit, i);
    if (failed(d))
      return failure();
    wide.push_back(*d);
  }
  for (int64_t i = 0; i < rank; ++i) {
    auto d = i == axis ? FailureOr<Value>(n.constI64({-1})) : dimPiece(n, param, i);
    if (failed(d))
      return failure();
    merged.push_back(*d);
  }
  auto wideShape = concatPieces(n, wide), mergedShape = concatPieces(n, merged);
  if (failed(wideShape) || failed(mergedShape))
    return failure();
  auto spread = n.create<BroadcastToOp>({*unit, *wideShape});
  auto flat = failed(spread) ? spread : n.create<ReshapeOp>({*spread, *mergedShape});
  if (failed(flat))
    return failure();
  auto end = dimPiece(n, x, axis);
  if (failed(end))
    return failure();
  SmallVector<Value> starts, ends;
  for (int64_t i = 0; i < rank; ++i) {
    starts.push_back(n.constI64({0}));
    ends.push_back(i == axis ? *end : n.constI64({INT64_MAX}));
  }
  auto s = concatPieces(n, starts), e = concatPieces(n, ends);
  if (failed(s) || failed(e))
    return failure();
  return n.create<SliceOp>({*flat, *s, *e, n.constI64(SmallVector<int64_t>(rank, 1))});
}

/// The range of an integer type, for saturation.
std::pair<double, double> intRange(Type t) {
  unsigned w = t.getIntOrFloatBitWidth();
  if (t.isUnsignedInteger())
    return {0.0, double(llvm::APInt::getMaxValue(w).getZExtValue())};
  return {double(llvm::APInt::getSignedMinValue(w).getSExtValue()),
          double(llvm::APInt::getSignedMaxValue(w).getSExtValue())};
}

FailureOr<Value> quantize(NodeImporter &n, Value x, Value scale, Value zeroPoint, Type outType,
                          bool saturate) {
  Type compute = elementTypeOf(scale);
  auto xf = castTo(n, x, compute);
  auto scaled = failed(xf) ? xf : binary<DivOp>(n, *xf, scale);
  if (failed(scaled))
    return failure();
  auto addZeroPoint = [&](Value v) -> FailureOr<Value> {
    if (!zeroPoint)
      return v;
    auto zf = castTo(n, zeroPoint, compute);
    return failed(zf) ? zf : binary<AddOp>(n, v, *zf);
  };
  if (isa<FloatType>(outType)) { // float8: no rounding, saturating cast
    auto v = addZeroPoint(*scaled);
    if (failed(v))
      return failure();
    return n.create<CastOp>({*v}, {n.named("to", TypeAttr::get(outType)),
                                   n.named("saturate", n.builder().getBoolAttr(saturate))});
  }
  // Integers round before the zero point is added: with ties to even the order
  // matters for an odd zero point.
  auto rounded = unary<RoundOp>(n, *scaled);
  auto v = failed(rounded) ? rounded : addZeroPoint(*rounded);
  if (failed(v))
    return failure();
  auto [lo, hi] = intRange(outType);
  auto clamped = binary<MaxOp>(n, *v, n.constScalar(compute, lo));
  clamped = failed(clamped) ? clamped : binary<MinOp>(n, *clamped, n.constScalar(compute, hi));
  return failed(clamped) ? clamped : castTo(n, *clamped, outType);
}

/// Whether `v` is an 8-bit constant (a quantized weight: integers, or e4m3
/// floats), whose centering and scaling the importer builds unfolded for
/// --kiln-integer-matmuls (canonicalization folds what that pass leaves).
bool isQuantizedWeight(Value v) {
  return v.getDefiningOp<ConstantOp>() &&
         (elementTypeOf(v).isInteger(8) || isa<Float8E4M3FNType>(elementTypeOf(v)));
}

} // namespace

LogicalResult convertDequantizeLinear(NodeImporter &n) {
  auto x = n.requiredInput(0), scale = n.requiredInput(1);
  auto axis = n.intAttr("axis", 1), block = n.intAttr("block_size", 0);
  auto outputDtype = n.intAttr("output_dtype", 0);
  if (failed(x) || failed(scale) || failed(axis) || failed(block) || failed(outputDtype))
    return failure();
  auto s = broadcastParam(n, *scale, *x, *axis, *block);
  if (failed(s))
    return failure();
  Type compute = elementTypeOf(*scale);
  // An 8-bit constant (a quantized weight) stays (q - z) * s, unfolded, for
  // --kiln-integer-matmuls; canonicalization folds what that pass leaves.
  bool weight = isQuantizedWeight(*x);
  Value zf;
  if (Value zp = n.input(2)) {
    auto z = broadcastParam(n, zp, *x, *axis, *block);
    auto zc = failed(z) ? z : castTo(n, *z, compute);
    if (failed(zc))
      return failure();
    zf = *zc;
  }
  n.setFolding(!weight);
  auto xf = castTo(n, *x, compute);
  FailureOr<Value> centered = xf;
  if (succeeded(xf) && zf)
    centered = binary<SubOp>(n, *xf, zf);
  auto y = failed(centered) ? centered : binary<MulOp>(n, *centered, *s);
  n.setFolding(true);
  if (failed(y))
    return failure();
  if (*outputDtype) {
    Type out = convertElementType(n.context(), *outputDtype);
    if (!out)
      return n.unsupported("output_dtype " + onnxTypeName(*outputDtype));
    y = castTo(n, *y, out);
    if (failed(y))
      return failure();
  }
  return n.setResults({*y});
}

LogicalResult convertQuantizeLinear(NodeImporter &n) {
  auto x = n.requiredInput(0), scale = n.requiredInput(1);
  auto axis = n.intAttr("axis", 1), block = n.intAttr("block_size", 0);
  auto outputDtype = n.intAttr("output_dtype", 0), saturate = n.intAttr("saturate", 1);
  if (failed(x) || failed(scale) || failed(axis) || failed(block) || failed(outputDtype) ||
      failed(saturate))
    return failure();
  Value zp = n.input(2);
  Type outType = zp ? elementTypeOf(zp) : n.builder().getIntegerType(8, /*isSigned=*/false);
  if (*outputDtype) {
    outType = convertElementType(n.context(), *outputDtype);
    if (!outType)
      return n.unsupported("output_dtype " + onnxTypeName(*outputDtype));
  }
  auto s = broadcastParam(n, *scale, *x, *axis, *block);
  if (failed(s))
    return failure();
  Value z;
  if (zp) {
    auto zb = broadcastParam(n, zp, *x, *axis, *block);
    if (failed(zb))
      return failure();
    z = *zb;
  }
  auto y = quantize(n, *x, *s, z, outType, *saturate);
  return failed(y) ? failure() : n.setResults({*y});
}

LogicalResult convertDynamicQuantizeLinear(NodeImporter &n) {
  auto x = n.requiredInput(0);
  if (failed(x))
    return failure();
  SmallVector<int64_t> all = allAxes(NodeImporter::typeOf(*x).getRank());
  auto reduceAll = [&](ReduceKind kind) { return reduce(n, *x, kind, all, false); };
  Type u8 = n.builder().getIntegerType(8, /*isSigned=*/false);
  Value zero = scalarLike(n, *x, 0);
  // scale = (max(0, max x) - min(0, min x)) / 255; zero_point = round(-min / scale).
  auto mx = reduceAll(ReduceKind::max), mn = reduceAll(ReduceKind::min);
  if (failed(mx) || failed(mn))
    return failure();
  auto hi = binary<MaxOp>(n, *mx, zero), lo = binary<MinOp>(n, *mn, zero);
  auto range = failed(hi) || failed(lo) ? FailureOr<Value>(failure()) : binary<SubOp>(n, *hi, *lo);
  auto scale = failed(range) ? range : binary<DivOp>(n, *range, scalarLike(n, *x, 255));
  auto negMin = failed(scale) ? scale : binary<SubOp>(n, zero, *lo);
  auto zpf = failed(negMin) ? negMin : binary<DivOp>(n, *negMin, *scale);
  auto zpr = failed(zpf) ? zpf : unary<RoundOp>(n, *zpf);
  auto zpc = failed(zpr) ? zpr : binary<MaxOp>(n, *zpr, zero);
  zpc = failed(zpc) ? zpc : binary<MinOp>(n, *zpc, scalarLike(n, *x, 255));
  auto zp = failed(zpc) ? zpc : castTo(n, *zpc, u8);
  auto y = failed(zp) ? zp : quantize(n, *x, *scale, *zp, u8, true);
  return failed(y) ? failure() : n.setResults({*y, *scale, *zp});
}


namespace {
/// x - zero_point in `compute`; a 1-D zero point of the left operand is per row.
/// A quantized weight's cast and subtraction are built unfolded (its zero
/// point's cast folds).
FailureOr<Value> centered(NodeImporter &n, Value x, Value zp, Type compute, bool perRow) {
  FailureOr<Value> z = zp ? castTo(n, zp, compute) : FailureOr<Value>(Value());
  if (failed(z))
    return failure();
  n.setFolding(!isQuantizedWeight(x));
  auto xc = castTo(n, x, compute);
  n.setFolding(true);
  if (failed(xc) || !zp)
    return xc;
  Value zz = *z;
  auto zt = NodeImporter::typeOf(zz);
  if (perRow && zt.getRank() == 1 && !(zt.hasStaticShape() && zt.getNumElements() == 1)) {
    auto r = insertUnitDims(n, zz, {1});
    if (failed(r))
      return failure();
    zz = *r;
  }
  n.setFolding(!isQuantizedWeight(x));
  auto d = binary<SubOp>(n, *xc, zz);
  n.setFolding(true);
  return d;
}

/// A per-tensor or per-row (left) / per-column (right) scale shaped to broadcast.
FailureOr<Value> scaleFor(NodeImporter &n, Value scale, bool perRow) {
  auto t = NodeImporter::typeOf(scale);
  if (perRow && t.getRank() == 1 && !(t.hasStaticShape() && t.getNumElements() == 1))
    return insertUnitDims(n, scale, {1});
  return scale;
}
} // namespace

LogicalResult convertMatMulInteger(NodeImporter &n) {
  auto a = n.requiredInput(0), b = n.requiredInput(1);
  if (failed(a) || failed(b))
    return failure();
  Type i32 = n.builder().getI32Type();
  auto ac = centered(n, *a, n.input(2), i32, /*perRow=*/true);
  auto bc = centered(n, *b, n.input(3), i32, /*perRow=*/false);
  auto r = failed(ac) || failed(bc) ? FailureOr<Value>(failure())
                                    : n.create<MatmulOp>({*ac, *bc});
  return failed(r) ? failure() : n.setResults({*r});
}

LogicalResult convertQLinearMatMul(NodeImporter &n) {
  // y = quantize(dequantize(a) @ dequantize(b)); computed in float, which rounds
  // like the int32-accumulating reference except at exact rounding ties.
  auto inputs = n.requiredInputs(0, 8);
  if (failed(inputs))
    return failure();
  SmallVector<Value> &in = *inputs;
  Type compute = elementTypeOf(in[1]);
  auto as = scaleFor(n, in[1], true), bs = scaleFor(n, in[4], false);
  auto ac = centered(n, in[0], in[2], compute, true);
  if (failed(as) || failed(bs) || failed(ac))
    return failure();
  auto af = binary<MulOp>(n, *ac, *as);
  auto bc = centered(n, in[3], in[5], compute, false);
  n.setFolding(!isQuantizedWeight(in[3]));
  auto bf = failed(bc) ? bc : binary<MulOp>(n, *bc, *bs);
  n.setFolding(true);
  auto prod = failed(af) || failed(bf) ? FailureOr<Value>(failure()) : n.create<MatmulOp>({*af, *bf});
  if (failed(prod))
    return failure();
  auto ys = scaleFor(n, in[6], false);
  auto y = failed(ys) ? ys : quantize(n, *prod, *ys, in[7], elementTypeOf(in[7]), true);
  return failed(y) ? failure() : n.setResults({*y});
}

LogicalResult convertQLinearConv(NodeImporter &n) {
  // y = quantize(conv(dequantize(x), dequantize(w)) + B * x_scale * w_scale),
  // computed in float (exact up to float32 rounding for 8-bit operands); the
  // weight's dequantization stays unfolded for --kiln-integer-convs, which
  // makes it an int8 convolution.
  auto inputs = n.requiredInputs(0, 8);
  if (failed(inputs))
    return failure();
  SmallVector<Value> &in = *inputs;
  Type compute = elementTypeOf(in[1]);
  int64_t rank = NodeImporter::typeOf(in[3]).getRank();
  // The filter's scale and zero point: one, or one an output channel ([M]
  // as [M, 1, ...]).
  auto perOutputChannel = [&](Value v) -> FailureOr<Value> {
    auto t = NodeImporter::typeOf(v);
    if (t.getRank() != 1 || (t.hasStaticShape() && t.getNumElements() == 1))
      return v;
    SmallVector<int64_t> ones;
    for (int64_t d = 1; d < rank; ++d)
      ones.push_back(d);
    return insertUnitDims(n, v, ones);
  };
  auto ws = perOutputChannel(in[4]);
  auto wz = failed(ws) ? ws : castTo(n, in[5], compute);
  wz = failed(wz) ? wz : perOutputChannel(*wz);
  auto xc = centered(n, in[0], in[2], compute, /*perRow=*/false);
  auto xd = failed(xc) ? xc : binary<MulOp>(n, *xc, in[1]);
  if (failed(ws) || failed(wz) || failed(xd))
    return failure();
  bool weight = isQuantizedWeight(in[3]);
  n.setFolding(!weight);
  auto wf = castTo(n, in[3], compute);
  auto wc = failed(wf) ? wf : binary<SubOp>(n, *wf, *wz);
  auto wd = failed(wc) ? wc : binary<MulOp>(n, *wc, *ws);
  n.setFolding(true);
  if (failed(wd))
    return failure();
  Value bias;
  if (Value b = n.input(8)) {
    // B is int32 at scale x_scale * w_scale (one an output channel).
    auto bf = castTo(n, b, compute);
    auto sx = failed(bf) ? bf : binary<MulOp>(n, *bf, in[1]);
    auto sb = failed(sx) ? sx : binary<MulOp>(n, *sx, in[4]);
    if (failed(sb))
      return failure();
    bias = *sb;
  }
  auto y = buildConv(n, *xd, *wd, bias);
  auto q = failed(y) ? y : quantize(n, *y, in[6], in[7], elementTypeOf(in[7]), true);
  return failed(q) ? failure() : n.setResults({*q});
}

LogicalResult convertConvInteger(NodeImporter &n) {
  auto x = n.requiredInput(0), w = n.requiredInput(1);
  if (failed(x) || failed(w))
    return failure();
  // Zero points: per tensor for x; per tensor or per output channel for w. The conv
  // then runs in f32 (exact for 8-bit inputs) and the result converts to int32.
  // A constant 8-bit filter stays cast(w) - z, unfolded, so that
  // --kiln-integer-convs reads it back as int8 (canonicalization folds what
  // that pass leaves).
  Type f32 = n.builder().getF32Type();
  auto xc = centered(n, *x, n.input(2), f32, false);
  n.setFolding(!isQuantizedWeight(*w));
  FailureOr<Value> wc = castTo(n, *w, f32);
  n.setFolding(true);
  if (Value wzp = n.input(3); succeeded(wc) && wzp) {
    auto z = castTo(n, wzp, f32);
    int64_t rank = NodeImporter::typeOf(*w).getRank();
    SmallVector<int64_t> ones;
    for (int64_t i = 1; i < rank; ++i)
      ones.push_back(i);
    auto zt = failed(z) ? z
              : NodeImporter::typeOf(*z).getRank() == 1 ? insertUnitDims(n, *z, ones)
                                                         : z;
    n.setFolding(!isQuantizedWeight(*w));
    wc = failed(zt) ? zt : binary<SubOp>(n, *wc, *zt);
    n.setFolding(true);
  }
  if (failed(xc) || failed(wc))
    return failure();
  // Conv's own import: group, kernel_shape and auto_pad as Conv reads them
  // (zeros around the centered input are the zero point around x).
  auto conv = buildConv(n, *xc, *wc, Value());
  auto r = failed(conv) ? conv : castTo(n, *conv, n.builder().getI32Type());
  return failed(r) ? failure() : n.setResults({*r});
}

} // namespace kiln::onnx_import
