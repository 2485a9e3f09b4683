//===- ElementSampling.cpp - resize, grid_sample, roi_align, col2im, det ===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

/// A double literal of `v` (an attribute's float, widened as the reference does).
static std::string doubleLiteral(double v) {
  std::string s;
  llvm::raw_string_ostream(s) << "((double)" << llvm::format("%.17g", v) << ")";
  return s;
}

/// The input coordinate of output position `o` along one dim of a resize
/// (ONNX's coordinate_transformation_mode), as a double C expression over the
/// dim's input and output sizes `in`, `out` (doubles; `outSize` the integer)
/// and its `scale`, for dim `d` of `rank`; nullopt for tf_crop_and_resize
/// without a roi of 2 * rank.
static std::optional<std::string> resizeCoordinate(CoordinateMode coordinates, const std::string &o,
                                                   const std::string &in, const std::string &out,
                                                   const std::string &outSize,
                                                   const std::string &scale, ArrayRef<float> roi,
                                                   size_t d, size_t rank) {
  std::string halfPixel = "(" + o + " + 0.5) / " + scale + " - 0.5";
  switch (coordinates) {
  case CoordinateMode::half_pixel:
    return halfPixel;
  case CoordinateMode::half_pixel_symmetric:
    return "(" + in + " / 2.0) * (1.0 - " + out + " / (" + scale + " * " + in + ")) + " + halfPixel;
  case CoordinateMode::pytorch_half_pixel:
    return outSize + " > 1 ? " + halfPixel + " : 0.0";
  case CoordinateMode::align_corners:
    return "(" + scale + " * " + in + " == 1.0 ? 0.0 : " + o + " * (" + in + " - 1.0) / (" + scale +
           " * " + in + " - 1.0))";
  case CoordinateMode::asymmetric:
    return o + " / " + scale;
  case CoordinateMode::tf_crop_and_resize: {
    if (roi.size() != 2 * rank)
      return std::nullopt;
    std::string start = doubleLiteral(roi[d]), end = doubleLiteral(roi[d + rank]);
    return outSize + " > 1 ? " + start + " * (" + in + " - 1.0) + " + o + " * (" + end + " - " +
           start + ") * (" + in + " - 1.0) / (" + out + " - 1.0) : 0.5 * (" + start + " + " + end +
           ") * (" + in + " - 1.0)";
  }
  }
  return std::nullopt;
}

/// One output element of a resize, as the reference computes it
/// (runtime/reference/src/DataMovement.cpp): per dim, the source coordinate of
/// the output coordinate, then the taps of the interpolation (one for nearest,
/// two for linear, four for cubic, more where antialiasing stretches the filter
/// on a downsampled dim), weights normalized where exclude_outside or
/// antialiasing asks; the sum over the tensor product of every dim's taps, in
/// double. A dim that keeps its size at scale 1 reads its own position (every
/// mode but tf_crop_and_resize maps it onto itself with weight 1).
FailureOr<std::string> KernelEmitter::resizeElement(ResizeOp resize, ArrayRef<std::string> index) {
  Value input = resize.getInput(), result = resize.getResult();
  Type t = elementOf(result);
  std::string ct = computeType(t);
  SymShape inDims = getSymShape(input.getType()), outDims = getSymShape(result.getType());
  std::vector<std::string> inShape = dims(input), outShape = dims(result);
  size_t rank = index.size();
  ArrayRef<float> scales = resize.getScales(), roi = resize.getRoi();
  CoordinateMode coordinates = resize.getCoordinateMode();
  ResizeMode mode = resize.getMode();
  bool crop = coordinates == CoordinateMode::tf_crop_and_resize;
  bool exclude = resize.getExcludeOutside();
  double cubicA = resize.getCubicCoeffA().convertToDouble();
  // Per dim: the input position (identity and nearest dims) or the tap loop's
  // variables (linear and cubic dims).
  struct Taps {
    std::string position; // set: one tap of weight 1 at this position
    std::string x, floor, first, last, scale, count, norm;
  };
  std::vector<Taps> taps(rank);
  std::string outside = "false";
  auto weightAt = [&](const Taps &tp, const std::string &k) {
    std::string s = "((double)" + k + " - (" + tp.x + " - " + tp.floor + ")) * " + tp.scale;
    return mode == ResizeMode::linear ? "kiln_max<double>(0.0, 1.0 - kiln_abs(" + s + "))"
                                      : "kiln_cubic_weight(" + s + ", " + doubleLiteral(cubicA) + ")";
  };
  for (size_t d = 0; d < rank; ++d) {
    Taps &tp = taps[d];
    bool unitScale = scales.empty() || scales[d] == 1.0f;
    if (!crop && inDims[d] == outDims[d] && unitScale) {
      tp.position = index[d];
      continue;
    }
    std::string in = "(double)" + inShape[d], out = "(double)" + outShape[d];
    std::string scale = temp("scale"), x = temp("x"), o = "(double)" + index[d];
    line("const double " + scale + " = " +
         (scales.empty() ? "(" + out + " / " + in + ")" : doubleLiteral(scales[d])) + ";");
    std::optional<std::string> coordinate =
        resizeCoordinate(coordinates, o, in, out, outShape[d], scale, roi, d, rank);
    if (!coordinate)
      return unsupported(resize, "needs a roi of 2 * rank for tf_crop_and_resize");
    line("const double " + x + " = " + *coordinate + ";");
    if (crop)
      outside += " || " + x + " < 0.0 || " + x + " > " + in + " - 1.0";
    if (mode == ResizeMode::nearest) {
      tp.position = temp("p");
      line("const " + indexType + " " + tp.position + " = kiln_clamp_index((" + indexType + ")kiln_resize_nearest(" + x +
           ", " + std::to_string(static_cast<int>(resize.getNearestMode())) + "), " + inShape[d] +
           ");");
      continue;
    }
    // Antialiasing stretches the filter by 1/scale when downsampling and
    // normalizes its weights (ONNX Resize-18).
    tp.x = x;
    tp.floor = temp("f");
    tp.first = temp("first");
    tp.last = temp("last");
    tp.scale = temp("fs");
    line("const double " + tp.floor + " = kiln_floor(" + x + ");");
    std::string stretch = resize.getAntialias() ? "(" + scale + " < 1.0)" : "false";
    std::string reach = mode == ResizeMode::linear ? "1.0" : "2.0";
    std::string unstretched = mode == ResizeMode::linear ? "(" + indexType + ")0" : "(" + indexType + ")-1";
    line("const " + indexType + " " + tp.first + " = " + stretch + " ? (" + indexType + ")(kiln_floor(-" + reach + " / " +
         scale + ") + 1.0) : " + unstretched + ";");
    line("const " + indexType + " " + tp.last + " = 1 - " + tp.first + ";");
    line("const double " + tp.scale + " = " + stretch + " ? " + scale + " : 1.0;");
    tp.norm = "1.0";
    tp.count = "1";
    if (exclude || resize.getAntialias()) {
      std::string total = temp("total"), k = temp("k"), at = temp("at");
      tp.count = temp("count");
      tp.norm = temp("norm");
      line("double " + total + " = 0.0;");
      line(indexType + " " + tp.count + " = 0;");
      openBlock("for (" + indexType + " " + k + " = " + tp.first + "; " + k + " <= " + tp.last + "; ++" + k +
                ") {");
      line("const " + indexType + " " + at + " = (" + indexType + ")" + tp.floor + " + " + k + ";");
      if (exclude)
        line("if (" + at + " < 0 || " + at + " >= " + inShape[d] + ") continue;");
      line(total + " += " + weightAt(tp, k) + ";");
      line("++" + tp.count + ";");
      closeBlock();
      std::string normalize = exclude ? "true" : stretch;
      line("const double " + tp.norm + " = " + normalize + " && " + total + " != 0.0 ? " + total +
           " : 1.0;");
    }
  }
  std::string value = temp();
  line(ct + " " + value + " = (" + ct + ")" + doubleLiteral(resize.getExtrapolationValue().convertToDouble()) +
       ";");
  openBlock("if (!(" + outside + ")) {");
  std::string sum = temp("sum");
  line("double " + sum + " = 0.0;");
  std::vector<std::string> position(rank), weights;
  unsigned loops = 0;
  for (size_t d = 0; d < rank; ++d) {
    Taps &tp = taps[d];
    if (!tp.position.empty()) {
      position[d] = tp.position;
      continue;
    }
    std::string k = temp("k"), w = temp("w"), at = temp("at");
    openBlock("for (" + indexType + " " + k + " = " + tp.first + "; " + k + " <= " + tp.last + "; ++" + k +
              ") {");
    ++loops;
    line("double " + w + " = " + weightAt(tp, k) + ";");
    line(indexType + " " + at + " = (" + indexType + ")" + tp.floor + " + " + k + ";");
    if (exclude) {
      // No tap inside the input: the reference's single tap at the floor.
      line("if (" + tp.count + " == 0) { if (" + k + " != " + tp.first + ") continue; " + w +
           " = 1.0; " + at + " = kiln_clamp_index((" + indexType + ")" + tp.floor + ", " + inShape[d] +
           "); } else if (" + at + " < 0 || " + at + " >= " + inShape[d] + ") continue;");
    }
    line(at + " = kiln_clamp_index(" + at + ", " + inShape[d] + ");");
    if (tp.norm != "1.0")
      line(w + " /= " + tp.norm + ";");
    position[d] = at;
    weights.push_back(w);
  }
  // The taps' positions and weights are doubles, as the reference computes
  // them: 70 to 90 registers with two interpolated dims, which leave room for
  // 25-38% of an SM's threads (tools/sass-lint.py reports it, not as a
  // violation); held to 64, ptxas spills.
  if (loops > 0)
    doubleTaps = true;
  FailureOr<std::string> v = element(input, position);
  if (failed(v))
    return failure();
  std::string weight = "1.0";
  for (const std::string &w : weights)
    weight += " * " + w;
  // A tap of weight 0 is not read (0 * inf is NaN): the reference's rule.
  std::string tapWeight = temp("tw");
  line("const double " + tapWeight + " = " + weight + ";");
  line("if (" + tapWeight + " != 0.0) " + sum + " += " + tapWeight + " * (double)" + *v + ";");
  for (unsigned i = 0; i < loops; ++i)
    closeBlock();
  line(value + " = (" + ct + ")" + sum + ";");
  closeBlock();
  return value;
}

/// One element of a grid_sample, as the reference computes it
/// (runtime/reference/src/Special.cpp): per spatial dim, the grid's coordinate
/// (innermost dim first along the grid's last axis) unnormalized by
/// align_corners, rounded for nearest, brought inside by the padding mode, and
/// its taps (one, two, or four with Keys' a = -0.75); a tap outside the input
/// reads zero (zeros padding) or the clamped or reflected pixel. Sums in
/// double over the taps' tensor product, skipping zero weights and zero pixels.
FailureOr<std::string> KernelEmitter::gridSampleElement(GridSampleOp sample,
                                                        ArrayRef<std::string> index) {
  // Taps in double, as Resize's (GeneratedKernel::doubleTaps).
  if (sample.getMode() != ResizeMode::nearest)
    doubleTaps = true;
  Value input = sample.getInput(), grid = sample.getGrid();
  std::string ct = computeType(elementOf(sample.getResult()));
  std::vector<std::string> inShape = dims(input);
  size_t r = inShape.size() - 2;
  bool align = sample.getAlignCorners();
  ResizeMode mode = sample.getMode();
  GridPadding padding = sample.getPadding();
  int taps = mode == ResizeMode::nearest ? 1 : mode == ResizeMode::linear ? 2 : 4;
  // The grid's position of this output point: [b, spatial..., coordinate].
  std::vector<std::string> at = {index[0]};
  at.insert(at.end(), index.begin() + 2, index.end());
  at.push_back("");
  std::vector<std::string> first(r), fraction(r), lo(r), hi(r);
  for (size_t d = 0; d < r; ++d) {
    at.back() = std::to_string(r - 1 - d);
    FailureOr<std::string> g = element(grid, at);
    if (failed(g))
      return failure();
    std::string size = "(double)" + inShape[2 + d], v = temp("v");
    lo[d] = align ? "0.0" : "-0.5";
    hi[d] = align ? "(" + size + " - 1.0)" : "(" + size + " - 0.5)";
    line("double " + v + " = " +
         (align ? "((double)" + *g + " + 1.0) / 2.0 * (" + size + " - 1.0)"
                : "(((double)" + *g + " + 1.0) * " + size + " - 1.0) / 2.0") + ";");
    if (mode == ResizeMode::nearest)
      line(v + " = kiln_round(" + v + ");");
    if (padding == GridPadding::border)
      line("if (" + v + " < " + lo[d] + " || " + v + " > " + hi[d] + ") " + v + " = kiln_max<double>(0.0, kiln_min<double>(" + v + ", " + size + " - 1.0));");
    else if (padding == GridPadding::reflection)
      line("if (" + v + " < " + lo[d] + " || " + v + " > " + hi[d] + ") " + v +
           " = kiln_reflect_coordinate(" + v + ", " + lo[d] + ", " + hi[d] + ");");
    first[d] = temp("f");
    fraction[d] = temp("t");
    if (mode == ResizeMode::nearest) {
      line("const " + indexType + " " + first[d] + " = (" + indexType + ")" + v + ";");
      line("const double " + fraction[d] + " = 0.0;");
    } else {
      line("const double " + fraction[d] + " = " + v + " - kiln_floor(" + v + ");");
      line("const " + indexType + " " + first[d] + " = (" + indexType + ")kiln_floor(" + v + ")" +
           (mode == ResizeMode::cubic ? " - 1" : "") + ";");
    }
  }
  std::string sum = temp("sum");
  line("double " + sum + " = 0.0;");
  std::vector<std::string> position = {index[0], index[1]}, weights;
  for (size_t d = 0; d < r; ++d) {
    std::string k = temp("k"), w = temp("w"), p = temp("p"), size = inShape[2 + d];
    openBlock("for (" + indexType + " " + k + " = 0; " + k + " < " + std::to_string(taps) + "; ++" + k + ") {");
    switch (mode) {
    case ResizeMode::nearest:
      line("const double " + w + " = 1.0;");
      break;
    case ResizeMode::linear:
      line("const double " + w + " = " + k + " == 0 ? 1.0 - " + fraction[d] + " : " + fraction[d] + ";");
      break;
    case ResizeMode::cubic:
      line("const double " + w + " = kiln_cubic_weight(" + k + " == 0 ? " + fraction[d] + " + 1.0 : " +
           k + " == 1 ? " + fraction[d] + " : " + k + " == 2 ? 1.0 - " + fraction[d] + " : 2.0 - " +
           fraction[d] + ", -0.75);");
      break;
    }
    line(indexType + " " + p + " = " + first[d] + " + " + k + ";");
    // Outside the input: zero, or the clamped or reflected pixel.
    switch (padding) {
    case GridPadding::zeros:
      line("if (" + p + " < 0 || " + p + " >= " + size + ") continue;");
      break;
    case GridPadding::border:
      line(p + " = kiln_clamp_index(" + p + ", " + size + ");");
      break;
    case GridPadding::reflection:
      line("if (" + p + " < 0 || " + p + " >= " + size + ") " + p +
           " = kiln_clamp_index((" + indexType + ")kiln_reflect_coordinate((double)" + p + ", " + lo[d] + ", " +
           hi[d] + "), " + size + ");");
      break;
    }
    position.push_back(p);
    weights.push_back(w);
  }
  std::string weight = "1.0";
  for (const std::string &w : weights)
    weight += " * " + w;
  std::string wAll = temp("w");
  line("const double " + wAll + " = " + weight + ";");
  openBlock("if (" + wAll + " != 0.0) {");
  FailureOr<std::string> x = element(input, position);
  if (failed(x))
    return failure();
  line(sum + " += " + wAll + " * (double)" + *x + ";");
  closeBlock();
  for (size_t d = 0; d < r; ++d)
    closeBlock();
  return bind(sample.getResult(), "(" + ct + ")" + sum);
}

/// One element of a roi_align, as the reference computes it: the region's
/// bin [ph, pw] of channel ch in the image its batch index names (out of range
/// is the call's error, the nearest image read meanwhile), sampled on a
/// gridH x gridW grid (sampling_ratio, or ceil(roi size / bins)) by bilinear
/// interpolation, averaged or maxed; in double.
FailureOr<std::string> KernelEmitter::roiAlignElement(RoiAlignOp roi, ArrayRef<std::string> index) {
  Value input = roi.getInput();
  std::string ct = computeType(elementOf(roi.getResult()));
  std::vector<std::string> inShape = dims(input);
  std::string height = inShape[2], width = inShape[3];
  std::string oh = std::to_string(roi.getOutputHeight()), ow = std::to_string(roi.getOutputWidth());
  FailureOr<std::string> batchValue = element(roi.getBatchIndices(), {index[0]});
  if (failed(batchValue))
    return failure();
  // No counting from the end here: a negative batch index is out of range.
  std::string batch = temp("b"), images = inShape[0];
  line(indexType + " " + batch + " = (" + indexType + ")" + *batchValue + ";");
  checkData(batch + " < 0 || " + batch + " >= " + images, "KILN_ERROR_INDEX_OUT_OF_RANGE");
  line(batch + " = kiln_clamp_index(" + batch + ", " + images + ");");
  std::vector<std::string> corner(4);
  for (int k = 0; k < 4; ++k) {
    FailureOr<std::string> c = element(roi.getRois(), {index[0], std::to_string(k)});
    if (failed(c))
      return failure();
    corner[k] = *c;
  }
  std::string scale = doubleLiteral(roi.getSpatialScale().convertToDouble());
  std::string offset = roi.getHalfPixel() ? "0.5" : "0.0";
  std::string sw = temp("sw"), sh = temp("sh"), rw = temp("rw"), rh = temp("rh"), bh = temp("bh"),
              bw = temp("bw"), gh = temp("gh"), gw = temp("gw"), acc = temp("acc"), first = temp("first");
  line("const double " + sw + " = (double)" + corner[0] + " * " + scale + " - " + offset + ";");
  line("const double " + sh + " = (double)" + corner[1] + " * " + scale + " - " + offset + ";");
  line("double " + rw + " = (double)" + corner[2] + " * " + scale + " - " + offset + " - " + sw + ";");
  line("double " + rh + " = (double)" + corner[3] + " * " + scale + " - " + offset + " - " + sh + ";");
  if (!roi.getHalfPixel()) {
    line(rw + " = kiln_max<double>(" + rw + ", 1.0);");
    line(rh + " = kiln_max<double>(" + rh + ", 1.0);");
  }
  line("const double " + bh + " = " + rh + " / " + oh + ".0, " + bw + " = " + rw + " / " + ow + ".0;");
  int64_t ratio = roi.getSamplingRatio();
  line("const " + indexType + " " + gh + " = " +
       (ratio > 0 ? std::to_string(ratio) : "(" + indexType + ")kiln_ceil(" + rh + " / " + oh + ".0)") + ";");
  line("const " + indexType + " " + gw + " = " +
       (ratio > 0 ? std::to_string(ratio) : "(" + indexType + ")kiln_ceil(" + rw + " / " + ow + ".0)") + ";");
  bool max = roi.getMode() == PoolKind::max;
  line("double " + acc + " = 0.0;");
  line("bool " + first + " = true;");
  std::string iy = temp("iy"), ix = temp("ix"), yy = temp("yy"), xx = temp("xx");
  openBlock("for (" + indexType + " " + iy + " = 0; " + iy + " < " + gh + "; ++" + iy + ") {");
  openBlock("for (" + indexType + " " + ix + " = 0; " + ix + " < " + gw + "; ++" + ix + ") {");
  line("double " + yy + " = " + sh + " + (double)" + index[2] + " * " + bh + " + ((double)" + iy +
       " + 0.5) * " + bh + " / (double)" + gh + ";");
  line("double " + xx + " = " + sw + " + (double)" + index[3] + " * " + bw + " + ((double)" + ix +
       " + 0.5) * " + bw + " / (double)" + gw + ";");
  // Four taps and weights; all zero when the point is off the image.
  std::string w = temp("w"), y0 = temp("y0"), x0 = temp("x0"), y1 = temp("y1"), x1 = temp("x1");
  line("double " + w + "[4] = {0.0, 0.0, 0.0, 0.0};");
  line(indexType + " " + y0 + " = 0, " + x0 + " = 0, " + y1 + " = 0, " + x1 + " = 0;");
  openBlock("if (!(" + yy + " < -1.0 || " + yy + " > (double)" + height + " || " + xx + " < -1.0 || " +
            xx + " > (double)" + width + ")) {");
  line(yy + " = kiln_max<double>(" + yy + ", 0.0);");
  line(xx + " = kiln_max<double>(" + xx + ", 0.0);");
  line(y0 + " = (" + indexType + ")" + yy + ";");
  line(x0 + " = (" + indexType + ")" + xx + ";");
  line("if (" + y0 + " >= " + height + " - 1) { " + y0 + " = " + y1 + " = " + height + " - 1; " + yy +
       " = (double)" + y0 + "; } else { " + y1 + " = " + y0 + " + 1; }");
  line("if (" + x0 + " >= " + width + " - 1) { " + x0 + " = " + x1 + " = " + width + " - 1; " + xx +
       " = (double)" + x0 + "; } else { " + x1 + " = " + x0 + " + 1; }");
  line("const double ly = " + yy + " - (double)" + y0 + ", lx = " + xx + " - (double)" + x0 +
       ", hy = 1.0 - ly, hx = 1.0 - lx;");
  line(w + "[0] = hy * hx; " + w + "[1] = hy * lx; " + w + "[2] = ly * hx; " + w + "[3] = ly * lx;");
  closeBlock();
  std::vector<std::string> taps;
  for (auto [py, px] : {std::pair{y0, x0}, {y0, x1}, {y1, x0}, {y1, x1}}) {
    FailureOr<std::string> v = element(input, {batch, index[1], py, px});
    if (failed(v))
      return failure();
    taps.push_back(*v);
  }
  if (!max) {
    for (int k = 0; k < 4; ++k)
      line(acc + " += " + w + "[" + std::to_string(k) + "] * (double)" + taps[k] + ";");
  } else {
    std::string v = temp("v");
    line("double " + v + " = " + w + "[0] * (double)" + taps[0] + ";");
    for (int k = 1; k < 4; ++k)
      line(v + " = kiln_max_plain(" + v + ", " + w + "[" + std::to_string(k) + "] * (double)" + taps[k] + ");");
    line(acc + " = " + first + " ? " + v + " : kiln_max_plain(" + acc + ", " + v + ");");
    line(first + " = false;");
  }
  closeBlock();
  closeBlock();
  if (!max)
    line(acc + " /= (double)(" + gh + " * " + gw + " > 1 ? " + gh + " * " + gw + " : 1);");
  return bind(roi.getResult(), "(" + ct + ")" + acc);
}

/// One element of a col2im, gathered: the image pixel sums, in block-element
/// order as the reference adds them, the column entry of every block element
/// whose sliding position lands on it (at most one position per element).
FailureOr<std::string> KernelEmitter::col2ImElement(Col2ImOp op, ArrayRef<std::string> index) {
  ArrayRef<int64_t> image = op.getImageShape(), block = op.getBlockShape(), strides = op.getStrides(),
                    dilations = op.getDilations(), pads = op.getPads();
  size_t k = image.size();
  int64_t blockSize = 1;
  for (int64_t b : block)
    blockSize *= b;
  std::vector<int64_t> counts(k);
  for (size_t d = 0; d < k; ++d)
    counts[d] = (image[d] + pads[d] + pads[d + k] - (dilations[d] * (block[d] - 1) + 1)) / strides[d] + 1;
  std::string ct = computeType(elementOf(op.getResult()));
  std::string sum = temp("sum"), e = temp("e");
  line("double " + sum + " = 0.0;");
  openBlock("for (" + indexType + " " + e + " = 0; " + e + " < " + std::to_string(blockSize) + "; ++" + e + ") {");
  std::vector<std::string> blockShape, blockIndex;
  for (int64_t b : block)
    blockShape.push_back(indexLiteral(b));
  blockIndex = unravel(e, blockShape);
  std::string position = "0", inside = "true";
  for (size_t d = 0; d < k; ++d) {
    std::string shifted = temp("s"), pos = temp("pos");
    line("const " + indexType + " " + shifted + " = " + index[2 + d] + " + " + indexLiteral(pads[d]) + " - " +
         blockIndex[d] + " * " + indexLiteral(dilations[d]) + ";");
    line("const " + indexType + " " + pos + " = " + shifted + " / " + indexLiteral(strides[d]) + ";");
    inside += " && " + shifted + " >= 0 && " + shifted + " % " + indexLiteral(strides[d]) + " == 0 && " +
              pos + " < " + indexLiteral(counts[d]);
    position = d == 0 ? pos : "(" + position + " * " + indexLiteral(counts[d]) + " + " + pos + ")";
  }
  openBlock("if (" + inside + ") {");
  FailureOr<std::string> v = element(
      op.getInput(), {index[0], "(" + index[1] + " * " + indexLiteral(blockSize) + " + " + e + ")", position});
  if (failed(v))
    return failure();
  line(sum + " += (double)" + *v + ";");
  closeBlock();
  closeBlock();
  return bind(op.getResult(), "(" + ct + ")" + sum);
}

/// Det matrices up to this size live in registers (16 doubles); larger ones in
/// local memory.
constexpr int64_t kMaxRegisterDetRows = 4;

/// One determinant, as the reference computes it: the matrix into an array,
/// Gaussian elimination with partial pivoting in double, the product of the
/// pivots (negated per swap; 0 at a zero pivot).
FailureOr<std::string> KernelEmitter::detElement(DetOp op, ArrayRef<std::string> index) {
  SymShape shape = getSymShape(op.getInput().getType());
  std::optional<int64_t> m = getConstantDimValue(shape.back());
  if (!m || *m > kMaxDetRows)
    return unsupported(op, "needs a known matrix size of at most 16");
  std::string ct = computeType(elementOf(op.getResult()));
  std::string a = temp("a"), d = temp("det"), M = std::to_string(*m);
  line("double " + a + "[" + std::to_string(std::max<int64_t>(*m * *m, 1)) + "];");
  // Up to 4x4 every loop unrolls, so every index is a constant and the
  // matrix lives in registers; larger matrices need it in local memory.
  perThreadMatrix = *m > kMaxRegisterDetRows;
  std::string unroll = perThreadMatrix ? "" : "KILN_UNROLL ";
  std::string i = temp("i"), j = temp("j");
  openBlock(unroll + "for (" + indexType + " " + i + " = 0; " + i + " < " + M + "; ++" + i + ") {");
  openBlock(unroll + "for (" + indexType + " " + j + " = 0; " + j + " < " + M + "; ++" + j + ") {");
  std::vector<std::string> at(index.begin(), index.end());
  at.push_back(i);
  at.push_back(j);
  FailureOr<std::string> v = element(op.getInput(), at);
  if (failed(v))
    return failure();
  line(a + "[" + i + " * " + M + " + " + j + "] = (double)" + *v + ";");
  closeBlock();
  closeBlock();
  // Gaussian elimination with partial pivoting, written so that every index
  // is a loop counter: the pivot row is swapped in by a test per row, not by
  // indexing with it.
  line("double " + d + " = 1.0;");
  openBlock(unroll + "for (" + indexType + " col = 0; col < " + M + "; ++col) {");
  line(indexType + " pivot = col;");
  line("double best = kiln_abs(" + a + "[col * " + M + " + col]);");
  line(unroll + "for (" + indexType + " r = col + 1; r < " + M + "; ++r) if (kiln_abs(" + a + "[r * " + M +
       " + col]) > best) { best = kiln_abs(" + a + "[r * " + M + " + col]); pivot = r; }");
  line("if (best == 0.0) { " + d + " = 0.0; break; }");
  line("if (pivot != col) { " + d + " = -" + d + "; " + unroll + "for (" + indexType + " r = col + 1; r < " + M +
       "; ++r) if (r == pivot) { " + unroll + "for (" + indexType + " c = 0; c < " + M + "; ++c) { const double t = " +
       a + "[col * " + M + " + c]; " + a + "[col * " + M + " + c] = " + a + "[r * " + M + " + c]; " + a +
       "[r * " + M + " + c] = t; } } }");
  line(d + " *= " + a + "[col * " + M + " + col];");
  line(unroll + "for (" + indexType + " r = col + 1; r < " + M + "; ++r) { const double f = " + a + "[r * " + M +
       " + col] / " + a + "[col * " + M + " + col]; " + unroll + "for (" + indexType + " c = col; c < " + M + "; ++c) " +
       a + "[r * " + M + " + c] -= f * " + a + "[col * " + M + " + c]; }");
  closeBlock();
  return bind(op.getResult(), "(" + ct + ")" + d);
}

} // namespace kiln::codegen
