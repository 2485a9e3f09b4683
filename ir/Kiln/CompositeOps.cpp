//===- CompositeOps.cpp - matmul, conv, pool, layer_norm ------------------===//

#include "ir/Kiln/KilnDialect.h"
#include "kiln/ops/CudnnPool.h"

#include <algorithm>

using namespace mlir;

namespace kiln {

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

LogicalResult checkSameElement(std::optional<Location> location, StringRef name,
                               Value a, Value b, StringRef what) {
  if (tensorType(a).getElementType() != tensorType(b).getElementType())
    return emitShapeError(location, name, what + " must have the input's element type");
  return success();
}

/// The checks conv and conv_transpose share: a channels-first input and a filter of
/// its rank and element type, group >= 1, and k-entry strides/dilations and 2k pads.
LogicalResult checkConvLike(std::optional<Location> location, StringRef name, Value input,
                            Value filter, int64_t group, ArrayRef<int64_t> strides,
                            ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads) {
  RankedTensorType in = tensorType(input), f = tensorType(filter);
  if (in.getRank() < 3 || f.getRank() != in.getRank())
    return emitShapeError(location, name,
                          "input and filter must have one rank >= 3 ([N, C, spatial...])");
  if (failed(checkSameElement(location, name, input, filter, "filter")))
    return failure();
  if (group < 1)
    return emitShapeError(location, name, "group must be >= 1, got " + Twine(group));
  size_t k = in.getRank() - 2;
  if (failed(checkEntries(location, name, strides, k, 1, "strides")) ||
      failed(checkEntries(location, name, dilations, k, 1, "dilations")) ||
      failed(checkEntries(location, name, pads, 2 * k, 0, "pads")))
    return failure();
  return success();
}

/// Output size of a sliding window: (in + pads - dilation*(k-1) - 1) / stride + 1,
/// rounded down, or up with `ceilMode`.
DimExpr windowOutputDim(DimExpr in, DimExpr kernel, int64_t padBegin, int64_t padEnd,
                        int64_t stride, int64_t dilation, bool ceilMode) {
  if (!in || !kernel)
    return DimExpr();
  MLIRContext *ctx = in.getContext();
  DimExpr effectiveKernel =
      addDims(mulDims(subDims(kernel, getConstantDim(ctx, 1)), getConstantDim(ctx, dilation)),
              getConstantDim(ctx, 1));
  DimExpr span = subDims(addDims(in, getConstantDim(ctx, padBegin + padEnd)), effectiveKernel);
  DimExpr strideDim = getConstantDim(ctx, stride);
  DimExpr out = addDims(ceilMode ? ceilDivDims(span, strideDim) : floorDivDims(span, strideDim),
                        getConstantDim(ctx, 1));
  // ceil_mode drops a last window that would start inside the end padding.
  if (ceilMode) {
    auto o = getConstantDimValue(out), i = getConstantDimValue(in);
    if (o && i && (*o - 1) * stride >= *i + padBegin)
      out = getConstantDim(ctx, *o - 1);
    // On a symbolic size that can happen when the window starts before the input
    // (padding) or steps further than it reaches; the size is then a min(), which a
    // dim expression cannot say, so it is unknown.
    auto k = getConstantDimValue(kernel);
    if (!i && (padBegin > 0 || !k || dilation * (*k - 1) + 1 < stride))
      out = DimExpr();
  }
  return out;
}
} // namespace

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

/// Whether `t` is one of the float8 types cuBLASLt multiplies (OCP's e4m3
/// and e5m2; not the fnuz variants).
static bool isFloat8(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                         Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType lhs = tensorType(adaptor.getLhs()), rhs = tensorType(adaptor.getRhs());
  if (failed(checkSameElement(location, name, adaptor.getLhs(), adaptor.getRhs(), "rhs")))
    return failure();
  if (lhs.getRank() == 0 || rhs.getRank() == 0)
    return emitShapeError(location, name, "operands must have rank >= 1");
  SymShape a = getSymShape(lhs), b = getSymShape(rhs);
  bool lhsVector = a.size() == 1, rhsVector = b.size() == 1;
  // A transposed operand is its last two dims swapped (a layout for cuBLASLt).
  // The attributes are read as attributes: a builder given a partial attribute
  // list leaves the defaults unset.
  auto flag = [](BoolAttr attr) { return attr && attr.getValue(); };
  if (flag(adaptor.getTransposeLhsAttr())) {
    if (lhsVector)
      return emitShapeError(location, name, "transpose_lhs needs a lhs of rank >= 2");
    std::swap(a[a.size() - 1], a[a.size() - 2]);
  }
  if (flag(adaptor.getTransposeRhsAttr())) {
    if (rhsVector)
      return emitShapeError(location, name, "transpose_rhs needs a rhs of rank >= 2");
    std::swap(b[b.size() - 1], b[b.size() - 2]);
  }
  MLIRContext *ctx = lhs.getContext();
  if (lhsVector)
    a.insert(a.begin(), getConstantDim(ctx, 1));
  if (rhsVector)
    b.push_back(getConstantDim(ctx, 1));
  FailureOr<DimExpr> k = unifyDims(location, name, a.back(), b[b.size() - 2],
                                   "contraction dims (lhs dim -1, rhs dim -2)");
  if (failed(k))
    return failure();
  SymShape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  FailureOr<SymShape> batch = broadcastShapes(location, name, {batchA, batchB});
  if (failed(batch))
    return failure();
  SymShape out = *batch;
  if (!lhsVector)
    out.push_back(a[a.size() - 2]);
  if (!rhsVector)
    out.push_back(b.back());
  Type float8Result = adaptor.getFloat8ResultAttr() ? adaptor.getFloat8ResultAttr().getValue() : Type();
  bool float8 = isFloat8(lhs.getElementType());
  if (float8Result && (!float8 || !isa<Float32Type, Float16Type, BFloat16Type>(float8Result)))
    return emitShapeError(location, name,
                          "float8_result is f32, f16 or bf16, for float8 operands only");
  if (float8 && !isa<Float8E4M3FNType>(lhs.getElementType()))
    return emitShapeError(location, name,
                          "float8 operands are f8E4M3FN (cuBLASLt's e5m2 products are not taken)");
  Type element = productElementType(lhs.getElementType(), float8Result);
  bool activation = adaptor.getActivationAttr() &&
                    adaptor.getActivationAttr().getValue() != Activation::none;
  if (isa<IntegerType>(element) && element != lhs.getElementType() &&
      (adaptor.getBias() || activation))
    return emitShapeError(location, name, "an 8-bit integer product takes no bias or activation");
  // cuBLASLt's FP8 epilogues: a bias vector, ReLU, the tanh GELU.
  if (float8 && activation && adaptor.getActivationAttr().getValue() != Activation::relu &&
      adaptor.getActivationAttr().getValue() != Activation::gelu_tanh)
    return emitShapeError(location, name,
                          "a float8 product's activation is relu or gelu_tanh (cuBLASLt's)");
  if (adaptor.getAlphaAttr() && adaptor.getAlphaAttr().getValueAsDouble() != 1.0 && !float8)
    return emitShapeError(location, name, "alpha scales float8 products only");
  if (Value bias = adaptor.getBias()) {
    if (float8 ? tensorType(bias).getElementType() != element
               : failed(checkSameElement(location, name, adaptor.getLhs(), bias, "bias")))
      return float8 ? emitShapeError(location, name,
                                     "a float8 product's bias has the result's element type")
                    : failure();
    RankedTensorType biasType = tensorType(bias);
    SymShape biasDims = getSymShape(biasType);
    if (out.empty() || (biasType.getRank() != 1 && biasDims.size() != out.size()))
      return emitShapeError(location, name,
                            "bias must be 1-D (one value per result column) or of the result's "
                            "shape (a residual)");
    if (biasType.getRank() == 1) {
      if (failed(unifyDims(location, name, out.back(), biasDims[0],
                           "bias length (the result's last dim)")))
        return failure();
    } else {
      for (size_t d = 0; d < out.size(); ++d) {
        FailureOr<DimExpr> unified =
            unifyDims(location, name, out[d], biasDims[d], "dim " + Twine(d) + " of the bias and the result");
        if (failed(unified))
          return failure();
        out[d] = *unified;
      }
    }
  }
  inferred.push_back(makeTensorType(out, element));
  return success();
}

Type MatmulOp::productElementType(Type operand, Type float8Result) {
  auto integer = dyn_cast<IntegerType>(operand);
  if (integer && integer.getWidth() == 8)
    return IntegerType::get(operand.getContext(), 32);
  if (isFloat8(operand))
    return float8Result ? float8Result : Float32Type::get(operand.getContext());
  return operand;
}

/// Whether `t` is a tensor of 8-bit integers.
static bool isInt8Tensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  auto integer = tensor ? dyn_cast<IntegerType>(tensor.getElementType()) : IntegerType();
  return integer && integer.getWidth() == 8;
}

// Passes that rewrite operands one at a time (kiln-lower-precision) may
// leave operand and result types apart for a moment: the operand's type
// says what the op is.
bool MatmulOp::isInt8Product() { return isInt8Tensor(getLhs().getType()); }
bool MatmulOp::isFloat8Product() {
  return isFloat8(cast<RankedTensorType>(getLhs().getType()).getElementType());
}

//===----------------------------------------------------------------------===//
// conv
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                       Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType input = tensorType(adaptor.getInput()), filter = tensorType(adaptor.getFilter());
  int64_t group = adaptor.getGroup();
  if (failed(checkConvLike(location, name, adaptor.getInput(), adaptor.getFilter(), group,
                           adaptor.getStrides(), adaptor.getDilations(), adaptor.getPads())))
    return failure();
  // cuDNN's fused conv-bias-activation has ReLU only: the others are matmul epilogues.
  if (adaptor.getActivation() != Activation::none && adaptor.getActivation() != Activation::relu)
    return emitShapeError(location, name,
                          Twine("activation is none or relu (") +
                              stringifyActivation(adaptor.getActivation()) + " is a matmul epilogue)");
  size_t k = input.getRank() - 2;
  SymShape x = getSymShape(input), w = getSymShape(filter);
  bool channelsLast = adaptor.getChannelsLast();
  // 8-bit integers convolve into f32 (cuDNN's int8 convolution), channels
  // last, with no epilogue; other operands are floats of the result's type.
  Type element = input.getElementType();
  auto integer = dyn_cast<IntegerType>(element);
  if (integer && integer.getWidth() == 8) {
    if (!channelsLast || adaptor.getBias() || adaptor.getResidual() ||
        adaptor.getActivation() != Activation::none)
      return emitShapeError(location, name,
                            "an 8-bit integer conv is channels last and takes no bias, residual "
                            "or activation");
    element = Float32Type::get(context);
  } else if (!isa<FloatType>(element)) {
    return emitShapeError(location, name, "input must be float or 8-bit integers");
  }
  // Channels last: the same rules on channels-first views, the result moved back.
  if (channelsLast) {
    std::rotate(x.begin() + 1, x.end() - 1, x.end());
    std::rotate(w.begin() + 1, w.end() - 1, w.end());
  }
  // Channels: C == filter[1] * group, and M divisible by group.
  DimExpr channels = mulDims(w[1], getConstantDim(context, group));
  if (failed(unifyDims(location, name, x[1], channels, "input channels and filter dim 1 * group")))
    return failure();
  if (auto m = getConstantDimValue(w[0]); m && *m % group != 0)
    return emitShapeError(location, name, "filter dim 0 (" + Twine(*m) +
                                              ") is not divisible by group " + Twine(group));
  if (Value bias = adaptor.getBias()) {
    if (failed(checkSameElement(location, name, adaptor.getInput(), bias, "bias")))
      return failure();
    RankedTensorType b = tensorType(bias);
    if (b.getRank() != 1)
      return emitShapeError(location, name, "bias must be 1-D with one entry per output channel");
    if (failed(unifyDims(location, name, getSymShape(b)[0], w[0], "bias size and filter dim 0")))
      return failure();
  }
  SymShape out{x[0], w[0]};
  for (size_t i = 0; i < k; ++i)
    out.push_back(windowOutputDim(x[i + 2], w[i + 2], adaptor.getPads()[i],
                                  adaptor.getPads()[i + k], adaptor.getStrides()[i],
                                  adaptor.getDilations()[i], /*ceilMode=*/false));
  for (auto [i, d] : llvm::enumerate(out))
    if (auto c = getConstantDimValue(d); c && *c < 0)
      return emitShapeError(location, name, "the window is larger than the padded input");
  if (channelsLast)
    std::rotate(out.begin() + 1, out.begin() + 2, out.end());
  // The residual is added element for element: the result's dims exactly.
  if (Value residual = adaptor.getResidual()) {
    if (failed(checkSameElement(location, name, adaptor.getInput(), residual, "residual")))
      return failure();
    SymShape r = getSymShape(tensorType(residual));
    if (r.size() != out.size())
      return emitShapeError(location, name, "the residual must have the result's rank");
    for (size_t i = 0; i < out.size(); ++i)
      if (failed(unifyDims(location, name, r[i], out[i], "residual dim and result dim")))
        return failure();
  }
  inferred.push_back(makeTensorType(out, element));
  return success();
}

bool ConvOp::isInt8Conv() { return isInt8Tensor(getInput().getType()); }

//===----------------------------------------------------------------------===//
// conv_transpose
//===----------------------------------------------------------------------===//

LogicalResult ConvTransposeOp::inferReturnTypes(MLIRContext *context,
                                                std::optional<Location> location,
                                                Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType input = tensorType(adaptor.getInput()), filter = tensorType(adaptor.getFilter());
  int64_t group = adaptor.getGroup();
  if (failed(checkConvLike(location, name, adaptor.getInput(), adaptor.getFilter(), group,
                           adaptor.getStrides(), adaptor.getDilations(), adaptor.getPads())))
    return failure();
  size_t k = input.getRank() - 2;
  if (failed(checkEntries(location, name, adaptor.getOutputPadding(), k, 0, "output_padding")))
    return failure();
  SymShape x = getSymShape(input), w = getSymShape(filter);
  if (failed(unifyDims(location, name, x[1], w[0], "input channels and filter dim 0")))
    return failure();
  DimExpr m = mulDims(w[1], getConstantDim(context, group));
  if (Value bias = adaptor.getBias()) {
    if (failed(checkSameElement(location, name, adaptor.getInput(), bias, "bias")))
      return failure();
    RankedTensorType b = tensorType(bias);
    if (b.getRank() != 1)
      return emitShapeError(location, name, "bias must be 1-D with one entry per output channel");
    if (failed(unifyDims(location, name, getSymShape(b)[0], m, "bias size and output channels")))
      return failure();
  }
  SymShape out{x[0], m};
  for (size_t i = 0; i < k; ++i) {
    auto c = [&](int64_t v) { return getConstantDim(context, v); };
    int64_t s = adaptor.getStrides()[i], d = adaptor.getDilations()[i];
    DimExpr o = addDims(mulDims(c(s), subDims(x[i + 2], c(1))),
                        addDims(mulDims(c(d), subDims(w[i + 2], c(1))),
                                c(1 + adaptor.getOutputPadding()[i] - adaptor.getPads()[i] -
                                  adaptor.getPads()[i + k])));
    if (auto v = getConstantDimValue(o); v && *v < 0)
      return emitShapeError(location, name, "the pads exceed the output in spatial dim " + Twine(i));
    out.push_back(o);
  }
  inferred.push_back(makeTensorType(out, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// pool
//===----------------------------------------------------------------------===//

LogicalResult PoolOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                       Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType input = tensorType(adaptor.getInput());
  if (input.getRank() < 3)
    return emitShapeError(location, name, "input must have rank >= 3 ([N, C, spatial...])");
  size_t k = input.getRank() - 2;
  if (failed(checkEntries(location, name, adaptor.getKernelShape(), k, 1, "kernel_shape")) ||
      failed(checkEntries(location, name, adaptor.getStrides(), k, 1, "strides")) ||
      failed(checkEntries(location, name, adaptor.getDilations(), k, 1, "dilations")) ||
      failed(checkEntries(location, name, adaptor.getPads(), 2 * k, 0, "pads")))
    return failure();
  if (adaptor.getKind() == PoolKind::lp && int64_t(adaptor.getP()) < 1)
    return emitShapeError(location, name, "p must be >= 1");
  SymShape x = getSymShape(input);
  // Channels last (kiln-select-conv-layout): the window runs over dims 1..k.
  bool channelsLast = adaptor.getChannelsLast();
  if (channelsLast)
    std::rotate(x.begin() + 1, x.end() - 1, x.end());
  SymShape out{x[0], x[1]};
  for (size_t i = 0; i < k; ++i) {
    DimExpr d = windowOutputDim(x[i + 2], getConstantDim(context, adaptor.getKernelShape()[i]),
                                adaptor.getPads()[i], adaptor.getPads()[i + k],
                                adaptor.getStrides()[i], adaptor.getDilations()[i],
                                adaptor.getCeilMode());
    if (auto c = getConstantDimValue(d); c && *c < 1)
      return emitShapeError(location, name,
                            "the window is larger than the padded input in spatial dim " +
                                Twine(i));
    out.push_back(d);
  }
  if (channelsLast)
    std::rotate(out.begin() + 1, out.begin() + 2, out.end());
  inferred.push_back(makeTensorType(out, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// layer_norm
//===----------------------------------------------------------------------===//

/// layer_norm's and rms_norm's result: the input's type, once `axis` is in
/// range and each of `operands` (null when absent) has the input's element
/// type and broadcasts against the normalized trailing dims.
static LogicalResult inferNormalization(std::optional<Location> location, StringRef name,
                                        Value inputValue, int64_t axisAttr,
                                        ArrayRef<Value> operands, ArrayRef<StringRef> names,
                                        InferredTypes &inferred) {
  RankedTensorType input = tensorType(inputValue);
  FailureOr<int64_t> axis = normalizeAxis(location, name, axisAttr, input.getRank());
  if (failed(axis))
    return failure();
  SymShape all = getSymShape(input);
  SymShape normalized(all.begin() + *axis, all.end());
  for (auto [operand, what] : llvm::zip(operands, names)) {
    if (!operand)
      continue;
    if (failed(checkSameElement(location, name, inputValue, operand, what)))
      return failure();
    SymShape s = getSymShape(operand.getType());
    if (s.size() > normalized.size())
      return emitShapeError(location, name,
                            what + " has more dims than the normalized trailing dims");
    if (failed(broadcastShapes(location, name, {normalized, s})))
      return failure();
  }
  inferred.push_back(input);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                            Adaptor adaptor, InferredTypes &inferred) {
  return inferNormalization(location, getOperationName(), adaptor.getInput(), adaptor.getAxis(),
                            {adaptor.getScale(), adaptor.getBias()}, {"scale", "bias"}, inferred);
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                          Adaptor adaptor, InferredTypes &inferred) {
  return inferNormalization(location, getOperationName(), adaptor.getInput(), adaptor.getAxis(),
                            {adaptor.getScale()}, {"scale"}, inferred);
}

LogicalResult MatmulNBitsOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                              Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  int64_t bits = adaptor.getBits(), blockSize = adaptor.getBlockSize();
  if (bits != 2 && bits != 4 && bits != 8)
    return emitShapeError(location, name, "bits must be 2, 4 or 8, not " + Twine(bits));
  if (blockSize < 16 || blockSize > (1 << 20) || !llvm::isPowerOf2_64(blockSize))
    return emitShapeError(location, name,
                          "block_size must be a power of 2 from 16 to 2^20, not " + Twine(blockSize));
  SymShape x = getSymShape(adaptor.getInput().getType());
  std::optional<int64_t> k = x.empty() ? std::nullopt : getConstantDimValue(x.back());
  if (!k)
    return emitShapeError(location, name, "the input's last dim (K) must be known");
  int64_t blocks = (*k + blockSize - 1) / blockSize;
  auto known = [](Value v, int64_t rank) {
    auto t = tensorType(v);
    return t.getRank() == rank && t.hasStaticShape();
  };
  if (!known(adaptor.getWeights(), 3))
    return emitShapeError(location, name, "weights must be [N, blocks, bytes a block] of known dims");
  ArrayRef<int64_t> w = tensorType(adaptor.getWeights()).getShape();
  if (w[1] != blocks || w[2] != blockSize * bits / 8)
    return emitShapeError(location, name,
                          "weights must be [N, " + Twine(blocks) + ", " + Twine(blockSize * bits / 8) +
                              "] for K " + Twine(*k) + " in blocks of " + Twine(blockSize) +
                              " at " + Twine(bits) + " bits");
  int64_t n = w[0];
  if (!known(adaptor.getScales(), 2) || tensorType(adaptor.getScales()).getShape() != ArrayRef<int64_t>{n, blocks})
    return emitShapeError(location, name, "scales must be [" + Twine(n) + ", " + Twine(blocks) + "]");
  if (Value zp = adaptor.getZeroPoints()) {
    auto t = tensorType(zp);
    bool packed = t.getElementType().isUnsignedInteger(8);
    int64_t columns = packed ? (blocks * bits + 7) / 8 : blocks;
    if ((!packed && !isa<FloatType>(t.getElementType())) || !known(zp, 2) ||
        t.getShape() != ArrayRef<int64_t>{n, columns})
      return emitShapeError(location, name,
                            "zero_points must be ui8 [" + Twine(n) + ", " +
                                Twine((blocks * bits + 7) / 8) + "] (packed) or float [" + Twine(n) +
                                ", " + Twine(blocks) + "]");
  }
  if (adaptor.getGlu() && n % 16 != 0)
    return emitShapeError(location, name,
                          "glu needs the columns in groups of 16 (8 gates, 8 ups), not " + Twine(n));
  SymShape result = x;
  MLIRContext *ctx = adaptor.getInput().getContext();
  result.back() = getAffineConstantExpr(n, ctx);
  if (Value bias = adaptor.getBias()) {
    if (failed(checkSameElement(location, name, adaptor.getInput(), bias, "bias")))
      return failure();
    SymShape b = getSymShape(bias.getType());
    if (adaptor.getGlu() && b != SymShape{result.back()})
      return emitShapeError(location, name, "glu's bias must be [" + Twine(n) + "]");
    if (b != SymShape{result.back()} && b != result)
      return emitShapeError(location, name,
                            "bias must be [" + Twine(n) + "] or the result's shape");
  }
  if (adaptor.getGlu())
    result.back() = getAffineConstantExpr(n / 2, ctx);
  inferred.push_back(makeTensorType(result, tensorType(adaptor.getInput()).getElementType()));
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                            Adaptor adaptor, InferredTypes &inferred) {
  StringRef name = getOperationName();
  RankedTensorType query = tensorType(adaptor.getQuery());
  int64_t rank = query.getRank();
  if (rank < 2 || tensorType(adaptor.getKey()).getRank() != rank ||
      tensorType(adaptor.getValue()).getRank() != rank)
    return emitShapeError(location, name,
                          "query, key and value must have one rank >= 2 ([.., rows, features])");
  if (failed(checkSameElement(location, name, adaptor.getQuery(), adaptor.getKey(), "key")) ||
      failed(checkSameElement(location, name, adaptor.getQuery(), adaptor.getValue(), "value")) ||
      (adaptor.getMask() && !tensorType(adaptor.getMask()).getElementType().isInteger(1) &&
       failed(checkSameElement(location, name, adaptor.getQuery(), adaptor.getMask(), "mask"))))
    return failure();
  SymShape q = getSymShape(query), k = getSymShape(adaptor.getKey().getType()),
           v = getSymShape(adaptor.getValue().getType());
  SymShape result(q.begin(), q.end() - 1);
  for (int64_t d = 0; d + 2 < rank; ++d) {
    // Grouped-query heads: key and value share a static head count that
    // divides the query's.
    std::optional<int64_t> qHeads = getConstantDimValue(q[d]), kHeads = getConstantDimValue(k[d]);
    if (d + 3 == rank && qHeads && kHeads && *qHeads != *kHeads) {
      if (*kHeads <= 0 || *qHeads % *kHeads != 0)
        return emitShapeError(location, name,
                              "key heads (" + Twine(*kHeads) + ") must divide query heads (" +
                                  Twine(*qHeads) + ")");
      if (failed(unifyDims(location, name, k[d], v[d], "heads of value")))
        return failure();
      continue;
    }
    FailureOr<DimExpr> withKey = unifyDims(location, name, q[d], k[d], "leading dim of key");
    if (failed(withKey))
      return failure();
    FailureOr<DimExpr> withValue = unifyDims(location, name, *withKey, v[d], "leading dim of value");
    if (failed(withValue))
      return failure();
    result[d] = *withValue;
  }
  FailureOr<DimExpr> keys = unifyDims(location, name, k[rank - 2], v[rank - 2], "key count of value");
  if (failed(keys) ||
      failed(unifyDims(location, name, q[rank - 1], k[rank - 1], "feature dim of key")))
    return failure();
  if (Value mask = adaptor.getMask()) {
    SymShape scores(result.begin(), result.end());
    scores.push_back(*keys);
    SymShape m = getSymShape(mask.getType());
    if (m.size() > scores.size())
      return emitShapeError(location, name, "mask has more dims than the scores");
    FailureOr<SymShape> b = broadcastShapes(location, name, {scores, m});
    if (failed(b))
      return failure();
    if (b->size() != scores.size())
      return emitShapeError(location, name, "mask must broadcast to the scores");
  }
  result.push_back(v[rank - 1]);
  inferred.push_back(makeTensorType(result, query.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel facts (KernelFacts.td)
//===----------------------------------------------------------------------===//

bool PoolOp::runsInCudnn() {
  auto input = cast<RankedTensorType>(getInput().getType());
  Type element = input.getElementType();
  ops::PoolQuery q;
  q.lp = getKind() == PoolKind::lp;
  q.cudnnType = element.isF32() || element.isF16() || element.isBF16() || element.isF64();
  q.kernel.assign(getKernelShape().begin(), getKernelShape().end());
  q.strides.assign(getStrides().begin(), getStrides().end());
  q.pads.assign(getPads().begin(), getPads().end());
  q.dilations.assign(getDilations().begin(), getDilations().end());
  q.ceilMode = getCeilMode();
  SymShape in = getSymShape(input), out = getSymShape(getType());
  if (getChannelsLast()) {
    std::rotate(in.begin() + 1, in.end() - 1, in.end());
    std::rotate(out.begin() + 1, out.end() - 1, out.end());
  }
  for (DimExpr d : in)
    q.in.push_back(getConstantDimValue(d));
  for (DimExpr d : out)
    q.out.push_back(getConstantDimValue(d));
  return ops::cudnnPools(q);
}

// A channels-last pool (kiln-select-conv-layout) is always cuDNN's.
bool PoolOp::isInlinable() { return !getChannelsLast() && !runsInCudnn(); }
bool PoolOp::runsNarrow() { return true; }

// cuBLASLt multiplies floats and 8-bit integers; a wider integer matmul
// (MatMulInteger's, centered in i32) is a generated dot product per element.
bool MatmulOp::isInlinable() {
  return isa<IntegerType>(getType().getElementType()) && !isInt8Product();
}
// The library ops accumulate in fp32 inside; an int8 product's int32 stays,
// and a float8 product's operands are quantized already (kiln-lower-precision
// gives it a narrow float8_result instead).
bool MatmulOp::runsNarrow() { return !isInt8Product() && !isFloat8Product(); }
// An int8 conv's f32 result holds int32 sums, which narrow types round.
bool ConvOp::runsNarrow() { return !isInt8Conv(); }
bool ConvTransposeOp::runsNarrow() { return true; }

// The normalizations and attention hold fp32 in registers; only the stored
// result is narrow.
std::optional<Schedule> SoftmaxOp::rootSchedule() { return Schedule::row; }
bool SoftmaxOp::runsNarrow() { return true; }
std::optional<Schedule> LogSoftmaxOp::rootSchedule() { return Schedule::row; }
bool LogSoftmaxOp::runsNarrow() { return true; }
std::optional<Schedule> LayerNormOp::rootSchedule() { return Schedule::row; }
bool LayerNormOp::runsNarrow() { return true; }
std::optional<Schedule> RmsNormOp::rootSchedule() { return Schedule::row; }
bool RmsNormOp::runsNarrow() { return true; }
// A block per tile of query rows, the scores on chip (kiln-fuse-attention).
std::optional<Schedule> AttentionOp::rootSchedule() { return Schedule::attention; }
bool AttentionOp::runsNarrow() { return true; }
// A block per few columns reads the packed weights once for the input's rows
// (a GEMV at decode sizes): the input is read by every block, so it is
// materialized rather than recomputed. Narrow inputs are read as they are,
// and the products accumulate in fp32.
std::optional<Schedule> MatmulNBitsOp::rootSchedule() { return Schedule::reduction; }
bool MatmulNBitsOp::fusesProducers() { return false; }
bool MatmulNBitsOp::runsNarrow() { return true; }

} // namespace kiln
