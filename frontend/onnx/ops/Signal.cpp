//===- Signal.cpp - ONNX DFT ----------------------------------------------===//
//
// DFT lowers onto matmuls with constant cosine and sine matrices: for the small,
// static transform lengths models use (spectrogram frames, rotary features) that is
// what a GPU library would do too, and it keeps the transform inside the core set.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

#include <cmath>

using namespace mlir;

namespace kiln::onnx_import {

namespace {
/// Transforms longer than this would need matrices of more than 64 Mi entries.
constexpr int64_t kMaxDftLength = 8192;

/// A [rows, cols] constant of `element` type with entries f(row, col).
Value matrixConstant(NodeImporter &n, Type element, int64_t rows, int64_t cols,
                     llvm::function_ref<double(int64_t, int64_t)> f) {
  SmallVector<double> values;
  values.reserve(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      values.push_back(f(r, c));
  auto type = RankedTensorType::get({rows, cols}, n.builder().getF64Type());
  auto attr = DenseElementsAttr::get(type, ArrayRef<double>(values));
  Value f64 = ConstantOp::create(n.builder(), n.loc(), attr).getResult();
  if (element.isF64())
    return f64;
  auto cast = castTo(n, f64, element);
  return failed(cast) ? Value() : *cast;
}
} // namespace

LogicalResult convertDFT(NodeImporter &n) {
  auto x = n.requiredInput(0);
  auto inverse = n.intAttr("inverse", 0), onesided = n.intAttr("onesided", 0);
  if (failed(x) || failed(inverse) || failed(onesided))
    return failure();
  RankedTensorType type = NodeImporter::typeOf(*x);
  int64_t rank = type.getRank();
  // Version 20 moved axis from an attribute (default 1) to an input (default -2).
  int64_t axis = 1;
  if (n.version() >= 20) {
    axis = -2;
    if (n.input(2)) {
      auto given = n.constantInts(2, "axis");
      if (failed(given))
        return failure();
      if (given->size() != 1)
        return n.error("axis must hold exactly one value");
      axis = (*given)[0];
    }
  } else {
    auto attr = n.intAttr("axis", 1);
    if (failed(attr))
      return failure();
    axis = *attr;
  }
  if (rank < 2)
    return n.error("input must have rank >= 2 ([..., 1 or 2])");
  if (axis < -rank || axis >= rank)
    return n.error("axis " + Twine(axis) + " is out of range for rank " + Twine(rank));
  axis = axis < 0 ? axis + rank : axis;
  if (axis == rank - 1)
    return n.error("axis must not be the last (real/imaginary) dim");
  int64_t parts = type.getDimSize(rank - 1);
  if (parts != 1 && parts != 2)
    return n.error("the last dim must be 1 (real) or 2 (complex), got " +
                   (ShapedType::isDynamic(parts) ? std::string("?") : std::to_string(parts)));
  if (type.isDynamicDim(axis))
    return n.unsupported("DFT along a dynamic dim (kiln builds the transform as a constant)");
  int64_t inputLength = type.getDimSize(axis);
  bool irfft = *inverse && *onesided;
  int64_t length = irfft ? 2 * (inputLength - 1) : inputLength;
  if (n.input(1)) {
    auto given = n.constantInts(1, "dft_length");
    if (failed(given))
      return failure();
    if (given->size() != 1)
      return n.error("dft_length must hold exactly one value");
    length = (*given)[0];
  }
  if (length < 1 || length > kMaxDftLength)
    return n.error("dft_length " + Twine(length) + " is outside [1, " + Twine(kMaxDftLength) +
                   "]");

  // The input is truncated or zero-padded to the transform length; zero padding adds
  // nothing to the sums, so only the first `used` input entries take part.
  int64_t used = std::min(inputLength, irfft ? length / 2 + 1 : length);
  int64_t outLength = irfft ? length : (*onesided ? length / 2 + 1 : length);
  // The sums cancel: with fp32 twiddle factors, bins that should be 0 come out near
  // 1e-7 times the signal, so fp32 signals transform in f64 (and 16-bit ones in
  // f32) and round once at the end.
  Type element = type.getElementType();
  Type compute = element.getIntOrFloatBitWidth() >= 32 ? n.builder().getF64Type()
                                                       : n.builder().getF32Type();
  Chain c(n);
  // real and imag: [..., used] with the transform axis moved last.
  SmallVector<int64_t> toLast;
  for (int64_t i = 0; i < rank - 1; ++i)
    if (i != axis)
      toLast.push_back(i);
  toLast.push_back(axis);
  SmallVector<int64_t> fromLast(rank - 1);
  for (int64_t i = 0; i < rank - 1; ++i)
    fromLast[toLast[i]] = i;
  SmallVector<DimExpr> squeezed = getSymShape(type);
  squeezed.pop_back();
  squeezed[axis] = getConstantDim(n.context(), used);
  Value trimmed = used == inputLength ? *x : c.slice(*x, axis, 0, used);
  auto part = [&](int64_t p) {
    Value v = c.transpose(c.reshape(c.slice(trimmed, rank - 1, p, p + 1), squeezed), toLast);
    return v && element != compute ? c(castTo(n, v, compute)) : v;
  };
  Value real = part(0), imag = parts == 2 ? part(1) : Value();

  // out_re = re @ A + im @ B and out_im = re @ C + im @ D with
  // theta = 2 pi j k / length: forward A = D = cos, B = sin, C = -sin; inverse
  // A = D = cos / length, B = -sin / length, C = sin / length; the inverse of a
  // one-sided spectrum (irfft) weighs the bins that stand for two by 2 and keeps
  // only the real part.
  double sign = *inverse ? -1.0 : 1.0, scale = *inverse ? 1.0 / length : 1.0;
  auto weight = [&](int64_t j) {
    if (!irfft || j == 0 || 2 * j == length)
      return 1.0;
    return 2.0;
  };
  auto theta = [&](int64_t j, int64_t k) {
    // Reduce j*k mod length first so large products keep their precision.
    return 2.0 * M_PI * double((j * k) % length) / double(length);
  };
  Value cosM = matrixConstant(n, compute, used, outLength, [&](int64_t j, int64_t k) {
    return weight(j) * scale * std::cos(theta(j, k));
  });
  Value sinM = matrixConstant(n, compute, used, outLength, [&](int64_t j, int64_t k) {
    return weight(j) * scale * std::sin(theta(j, k));
  });
  if (!cosM || !sinM)
    return failure();
  Value outReal = c.matmul(real, cosM);
  if (imag) {
    Value term = c.matmul(imag, sinM);
    outReal = sign > 0 ? c.bin<AddOp>(outReal, term) : c.bin<SubOp>(outReal, term);
  }
  SmallVector<DimExpr> outDims = getSymShape(type);
  outDims[axis] = getConstantDim(n.context(), outLength);
  outDims.back() = getConstantDim(n.context(), 1);
  auto restore = [&](Value v) {
    Value r = c.reshape(c.transpose(v, fromLast), outDims);
    return r && element != compute ? c(castTo(n, r, element)) : r;
  };
  if (irfft)
    return c.done({restore(outReal)});
  // out_im = im @ cos - sign * (re @ sin)
  Value reSin = c.matmul(real, sinM);
  Value outImag = sign > 0 ? c.un<NegOp>(reSin) : reSin;
  if (imag)
    outImag = c.bin<AddOp>(outImag, c.matmul(imag, cosM));
  return c.done({c.concat({restore(outReal), restore(outImag)}, rank - 1)});
}

} // namespace kiln::onnx_import
