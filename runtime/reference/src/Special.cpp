//===- Special.cpp - grid_sample, roi_align, nms, unique, det, col2im -----===//

#include "Common.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace kiln::ref {

using namespace detail;

namespace {
/// Reflects x into [lo, hi] by bouncing off the borders.
double reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0)
    return lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t n = static_cast<int64_t>(dx / range);
    double r = dx - n * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t n = static_cast<int64_t>(dx / range);
    double r = dx - n * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubicCoefficients(double t, double c[4]) {
  const double a = -0.75; // GridSample's fixed Keys coefficient
  c[0] = cubicWeight(t + 1, a);
  c[1] = cubicWeight(t, a);
  c[2] = cubicWeight(1 - t, a);
  c[3] = cubicWeight(2 - t, a);
}
} // namespace

absl::StatusOr<Tensor> gridSample(const Tensor &x, const Tensor &grid, ResizeMode mode,
                                  GridPadding padding, bool alignCorners) {
  int64_t r = x.rank() - 2, n = x.dim(0), c = x.dim(1);
  if (grid.rank() != x.rank() || grid.dim(0) != n || grid.dim(grid.rank() - 1) != r)
    return absl::InvalidArgumentError("grid_sample: grid does not match the input");
  Shape dims(x.shape().begin() + 2, x.shape().end());
  Shape outSpatial(grid.shape().begin() + 1, grid.shape().end() - 1);
  Shape shape = {n, c};
  shape.insert(shape.end(), outSpatial.begin(), outSpatial.end());
  Tensor y;
  KILN_REF_ASSIGN_OR_RETURN(y, Tensor::zeros(x.dtype(), shape));
  int64_t points = numElements(outSpatial), plane = numElements(dims);
  std::vector<int64_t> strides = stridesOf(dims);
  std::vector<std::vector<int64_t>> tapIndex(r);
  std::vector<std::vector<double>> tapWeight(r);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < points; ++p) {
      // Per spatial dim: the taps and their weights (index -1: a zero outside).
      for (int64_t d = 0; d < r; ++d) {
        int64_t size = dims[d];
        // The grid's last axis lists coordinates innermost dim first.
        double g = grid.getF((b * points + p) * r + (r - 1 - d));
        double v = alignCorners ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
        double lo = alignCorners ? 0 : -0.5, hi = alignCorners ? size - 1 : size - 0.5;
        if (mode == ResizeMode::nearest)
          v = std::nearbyint(v);
        if (v < lo || v > hi) {
          if (padding == GridPadding::border)
            v = std::clamp(v, 0.0, double(size - 1));
          else if (padding == GridPadding::reflection)
            v = reflect(v, lo, hi);
        }
        auto pixel = [&](int64_t i) -> int64_t {
          if (i >= 0 && i < size)
            return i;
          if (padding == GridPadding::zeros)
            return -1;
          if (padding == GridPadding::border)
            return std::clamp<int64_t>(i, 0, size - 1);
          return std::clamp<int64_t>(static_cast<int64_t>(reflect(double(i), lo, hi)), 0,
                                     size - 1);
        };
        tapIndex[d].clear();
        tapWeight[d].clear();
        if (mode == ResizeMode::nearest) {
          tapIndex[d].push_back(pixel(static_cast<int64_t>(v)));
          tapWeight[d].push_back(1);
        } else if (mode == ResizeMode::linear) {
          double f = std::floor(v), t = v - f;
          tapIndex[d] = {pixel(int64_t(f)), pixel(int64_t(f) + 1)};
          tapWeight[d] = {1 - t, t};
        } else {
          double f = std::floor(v), cw[4];
          cubicCoefficients(v - f, cw);
          for (int k = 0; k < 4; ++k) {
            tapIndex[d].push_back(pixel(int64_t(f) - 1 + k));
            tapWeight[d].push_back(cw[k]);
          }
        }
      }
      for (int64_t ch = 0; ch < c; ++ch) {
        int64_t base = (b * c + ch) * plane;
        double sum = 0;
        std::vector<size_t> tap(r, 0);
        while (true) {
          double w = 1;
          int64_t off = 0;
          bool zero = false;
          for (int64_t d = 0; d < r; ++d) {
            int64_t i = tapIndex[d][tap[d]];
            w *= tapWeight[d][tap[d]];
            if (i < 0)
              zero = true;
            else
              off += i * strides[d];
          }
          if (!zero && w != 0)
            sum += w * x.getF(base + off);
          int64_t d = r - 1;
          for (; d >= 0; --d) {
            if (++tap[d] < tapIndex[d].size())
              break;
            tap[d] = 0;
          }
          if (d < 0)
            break;
        }
        y.setF((b * c + ch) * points + p, sum);
      }
    }
  return y;
}

absl::StatusOr<Tensor> roiAlign(const Tensor &x, const Tensor &rois, const Tensor &batchIndices,
                                const RoiAlignParams &p) {
  int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3), count = rois.dim(0);
  Tensor y;
  KILN_REF_ASSIGN_OR_RETURN(y, Tensor::zeros(x.dtype(), Shape{count, channels, p.outputHeight, p.outputWidth}));
  double offset = p.halfPixel ? 0.5 : 0.0;
  for (int64_t r = 0; r < count; ++r) {
    int64_t batch = batchIndices.getI(r);
    if (batch < 0 || batch >= x.dim(0))
      return indexError("roi_align batch index", batch, x.dim(0));
    double startW = rois.getF(r * 4) * p.spatialScale - offset,
           startH = rois.getF(r * 4 + 1) * p.spatialScale - offset,
           endW = rois.getF(r * 4 + 2) * p.spatialScale - offset,
           endH = rois.getF(r * 4 + 3) * p.spatialScale - offset;
    double roiW = endW - startW, roiH = endH - startH;
    if (!p.halfPixel) {
      roiW = std::max(roiW, 1.0);
      roiH = std::max(roiH, 1.0);
    }
    double binH = roiH / p.outputHeight, binW = roiW / p.outputWidth;
    int64_t gridH = p.samplingRatio > 0 ? p.samplingRatio
                                        : static_cast<int64_t>(std::ceil(roiH / p.outputHeight));
    int64_t gridW = p.samplingRatio > 0 ? p.samplingRatio
                                        : static_cast<int64_t>(std::ceil(roiW / p.outputWidth));
    double samples = static_cast<double>(std::max<int64_t>(gridH * gridW, 1));
    for (int64_t ch = 0; ch < channels; ++ch) {
      int64_t base = (batch * channels + ch) * height * width;
      for (int64_t ph = 0; ph < p.outputHeight; ++ph)
        for (int64_t pw = 0; pw < p.outputWidth; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gridH; ++iy)
            for (int64_t ix = 0; ix < gridW; ++ix) {
              double yy = startH + ph * binH + (iy + 0.5) * binH / gridH;
              double xx = startW + pw * binW + (ix + 0.5) * binW / gridW;
              double w[4] = {0, 0, 0, 0};
              int64_t pos[4] = {0, 0, 0, 0};
              if (!(yy < -1.0 || yy > height || xx < -1.0 || xx > width)) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                int64_t yLow = static_cast<int64_t>(yy), xLow = static_cast<int64_t>(xx), yHigh,
                        xHigh;
                if (yLow >= height - 1) {
                  yHigh = yLow = height - 1;
                  yy = double(yLow);
                } else {
                  yHigh = yLow + 1;
                }
                if (xLow >= width - 1) {
                  xHigh = xLow = width - 1;
                  xx = double(xLow);
                } else {
                  xHigh = xLow + 1;
                }
                double ly = yy - yLow, lx = xx - xLow, hy = 1 - ly, hx = 1 - lx;
                w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
                pos[0] = yLow * width + xLow, pos[1] = yLow * width + xHigh;
                pos[2] = yHigh * width + xLow, pos[3] = yHigh * width + xHigh;
              }
              if (!p.maxMode) {
                for (int k = 0; k < 4; ++k)
                  acc += w[k] * x.getF(base + pos[k]);
              } else {
                double v = w[0] * x.getF(base + pos[0]);
                for (int k = 1; k < 4; ++k)
                  v = std::max(v, w[k] * x.getF(base + pos[k]));
                acc = first ? v : std::max(acc, v);
                first = false;
              }
            }
          if (!p.maxMode)
            acc /= samples;
          y.setF(((r * channels + ch) * p.outputHeight + ph) * p.outputWidth + pw, acc);
        }
    }
  }
  return y;
}

namespace {
/// Per batch and class (row b * classes + c), the box indices
/// non_max_suppression takes, in the order it takes them.
std::vector<std::vector<int64_t>> nmsSelections(const Tensor &boxes, const Tensor &scores,
                                                int64_t maxOutputPerClass, double iouThreshold,
                                                std::optional<double> scoreThreshold,
                                                bool centerPointBox) {
  int64_t batches = boxes.dim(0), count = boxes.dim(1), classes = scores.dim(1);
  struct Box {
    double y1, x1, y2, x2;
  };
  auto boxAt = [&](int64_t b, int64_t i) {
    const int64_t o = (b * count + i) * 4;
    double a = boxes.getF(o), bb = boxes.getF(o + 1), c = boxes.getF(o + 2), d = boxes.getF(o + 3);
    if (centerPointBox) // x_center, y_center, width, height
      return Box{bb - d / 2, a - c / 2, bb + d / 2, a + c / 2};
    return Box{std::min(a, c), std::min(bb, d), std::max(a, c), std::max(bb, d)};
  };
  auto iou = [](const Box &a, const Box &b) {
    double h = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
    double w = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
    double inter = h * w;
    double areaA = (a.y2 - a.y1) * (a.x2 - a.x1), areaB = (b.y2 - b.y1) * (b.x2 - b.x1);
    double uni = areaA + areaB - inter;
    return uni <= 0 ? 0.0 : inter / uni;
  };
  std::vector<std::vector<int64_t>> rows(batches * classes);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < count; ++i) {
        double s = scores.getF((b * classes + c) * count + i);
        if (!scoreThreshold || s > *scoreThreshold)
          candidates.push_back(i);
      }
      // Highest score first; equal scores keep the lower box index first.
      std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t i, int64_t j) {
        return scores.getF((b * classes + c) * count + i) >
               scores.getF((b * classes + c) * count + j);
      });
      std::vector<int64_t> &kept = rows[b * classes + c];
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(kept.size()) >= maxOutputPerClass)
          break;
        Box bi = boxAt(b, i);
        bool suppressed = false;
        for (int64_t k : kept)
          if (iou(bi, boxAt(b, k)) > iouThreshold) {
            suppressed = true;
            break;
          }
        if (!suppressed)
          kept.push_back(i);
      }
    }
  return rows;
}
} // namespace

absl::StatusOr<Tensor> nonMaxSuppression(const Tensor &boxes, const Tensor &scores,
                                         int64_t maxOutputPerClass, double iouThreshold,
                                         std::optional<double> scoreThreshold,
                                         bool centerPointBox) {
  int64_t classes = scores.dim(1);
  std::vector<std::vector<int64_t>> rows = nmsSelections(
      boxes, scores, maxOutputPerClass, iouThreshold, scoreThreshold, centerPointBox);
  std::vector<int64_t> selected;
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t i : rows[r])
      selected.insert(selected.end(), {static_cast<int64_t>(r) / classes,
                                       static_cast<int64_t>(r) % classes, i});
  int64_t n = static_cast<int64_t>(selected.size()) / 3;
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(DType::i64, Shape{n, 3}));
  for (int64_t i = 0; i < 3 * n; ++i)
    out.setI(i, selected[i]);
  return out;
}

absl::StatusOr<Tensor> nmsSelect(const Tensor &boxes, const Tensor &scores,
                                 int64_t maxOutputPerClass, double iouThreshold,
                                 std::optional<double> scoreThreshold, bool centerPointBox) {
  std::vector<std::vector<int64_t>> rows = nmsSelections(
      boxes, scores, maxOutputPerClass, iouThreshold, scoreThreshold, centerPointBox);
  int64_t count = boxes.dim(1);
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(
      out, Tensor::zeros(DType::i64, Shape{scores.dim(0), scores.dim(1), count}));
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t k = 0; k < count; ++k)
      out.setI(static_cast<int64_t>(r) * count + k,
               k < static_cast<int64_t>(rows[r].size()) ? rows[r][k] : -1);
  return out;
}

std::vector<Tensor> unique(const Tensor &x, std::optional<int64_t> axis, bool sorted) {
  Tensor input = axis ? x : x.reshaped({x.numel()});
  int64_t a = axis ? normalizeAxis(*axis, x.rank()) : 0;
  int64_t outer = 1, n = input.dim(a), inner = 1;
  for (int64_t d = 0; d < a; ++d)
    outer *= input.dim(d);
  for (int64_t d = a + 1; d < input.rank(); ++d)
    inner *= input.dim(d);
  bool isF = isFloat(x.dtype());
  // Slice k as a vector of comparable values.
  auto key = [&](int64_t k) {
    std::vector<double> v;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t at = (o * n + k) * inner + i;
        v.push_back(isF ? input.getF(at) : static_cast<double>(input.getI(at)));
      }
    return v;
  };
  std::map<std::vector<double>, int64_t> firstOf; // key -> first position
  std::vector<int64_t> firsts, inverseKey(n);
  std::vector<std::vector<double>> keys(n);
  for (int64_t k = 0; k < n; ++k) {
    keys[k] = key(k);
    auto [it, inserted] = firstOf.emplace(keys[k], k);
    if (inserted)
      firsts.push_back(k);
  }
  std::vector<int64_t> order = firsts; // first occurrence order
  if (sorted)
    std::sort(order.begin(), order.end(),
              [&](int64_t i, int64_t j) { return keys[i] < keys[j]; });
  std::map<int64_t, int64_t> rankOfFirst;
  for (size_t i = 0; i < order.size(); ++i)
    rankOfFirst[order[i]] = static_cast<int64_t>(i);
  int64_t u = static_cast<int64_t>(order.size());
  Tensor positions(DType::i64, {u}), inverse(DType::i64, {n}), counts(DType::i64, {u});
  for (int64_t i = 0; i < u; ++i)
    positions.setI(i, order[i]);
  for (int64_t k = 0; k < n; ++k) {
    int64_t r = rankOfFirst[firstOf[keys[k]]];
    inverse.setI(k, r);
    counts.setI(r, counts.getI(r) + 1);
  }
  absl::StatusOr<Tensor> values = gather(input, positions, a);
  return {std::move(*values), positions, inverse, counts};
}

absl::StatusOr<Tensor> det(const Tensor &x) {
  if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2))
    return absl::InvalidArgumentError("det: the input " + x.describe() +
                                      " is not a stack of square matrices");
  int64_t m = x.dim(x.rank() - 1);
  Shape shape(x.shape().begin(), x.shape().end() - 2);
  Tensor out(x.dtype(), shape);
  std::vector<double> a(m * m);
  for (int64_t b = 0; b < out.numel(); ++b) {
    for (int64_t i = 0; i < m * m; ++i)
      a[i] = x.getF(b * m * m + i);
    double d = 1;
    for (int64_t col = 0; col < m; ++col) {
      int64_t pivot = col;
      for (int64_t r = col + 1; r < m; ++r)
        if (std::fabs(a[r * m + col]) > std::fabs(a[pivot * m + col]))
          pivot = r;
      if (a[pivot * m + col] == 0) {
        d = 0;
        break;
      }
      if (pivot != col) {
        for (int64_t k = 0; k < m; ++k)
          std::swap(a[col * m + k], a[pivot * m + k]);
        d = -d;
      }
      d *= a[col * m + col];
      for (int64_t r = col + 1; r < m; ++r) {
        double f = a[r * m + col] / a[col * m + col];
        for (int64_t k = col; k < m; ++k)
          a[r * m + k] -= f * a[col * m + k];
      }
    }
    out.setF(b, d);
  }
  return out;
}

absl::StatusOr<Tensor> col2im(const Tensor &x, const Col2ImParams &p) {
  size_t k = p.imageShape.size();
  // The IR verified these; a damaged artifact may not have: check before
  // indexing anything by them.
  if (x.rank() != 3 || p.blockShape.size() != k || p.strides.size() != k ||
      p.dilations.size() != k || p.pads.size() != 2 * k)
    return absl::InvalidArgumentError("col2im: the input " + x.describe() +
                                      " or the block parameters do not fit the image's rank");
  for (size_t d = 0; d < k; ++d)
    if (p.imageShape[d] < 0 || p.blockShape[d] < 1 || p.strides[d] < 1 || p.dilations[d] < 1 ||
        p.pads[d] < 0 || p.pads[d + k] < 0)
      return absl::InvalidArgumentError("col2im: a block, stride, dilation or pad is out of range");
  int64_t blockSize = numElements(p.blockShape);
  if (x.dim(1) % blockSize != 0)
    return absl::InvalidArgumentError("col2im: the input's dim 1 is not a multiple of the block size");
  int64_t n = x.dim(0), c = x.dim(1) / blockSize, positions = x.dim(2);
  std::vector<int64_t> counts(k);
  for (size_t d = 0; d < k; ++d)
    counts[d] = (p.imageShape[d] + p.pads[d] + p.pads[d + k] -
                 (p.dilations[d] * (p.blockShape[d] - 1) + 1)) /
                    p.strides[d] +
                1;
  if (numElements(counts) != positions)
    return absl::InvalidArgumentError("col2im: the input's block count does not match");
  Shape shape = {n, c};
  shape.insert(shape.end(), p.imageShape.begin(), p.imageShape.end());
  Tensor y;
  KILN_REF_ASSIGN_OR_RETURN(y, Tensor::zeros(x.dtype(), shape));
  std::vector<double> acc(y.numel(), 0);
  std::vector<int64_t> imageStrides = stridesOf(p.imageShape), blockIndex, posIndex;
  int64_t plane = numElements(p.imageShape);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t e = 0; e < blockSize; ++e) {
        unravel(e, p.blockShape, blockIndex);
        for (int64_t l = 0; l < positions; ++l) {
          unravel(l, counts, posIndex);
          int64_t off = 0;
          bool inside = true;
          for (size_t d = 0; d < k; ++d) {
            int64_t at = posIndex[d] * p.strides[d] - p.pads[d] + blockIndex[d] * p.dilations[d];
            if (at < 0 || at >= p.imageShape[d])
              inside = false;
            off += at * imageStrides[d];
          }
          if (inside)
            acc[(b * c + ch) * plane + off] += x.getF(((b * c + ch) * blockSize + e) * positions + l);
        }
      }
  for (int64_t i = 0; i < y.numel(); ++i)
    y.setF(i, acc[i]);
  return y;
}

} // namespace kiln::ref
