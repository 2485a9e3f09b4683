//===- DataMovement.cpp - transpose, broadcast, concat, slice, gather, ... -===//

#include "Common.h"

#include <algorithm>
#include <limits>
#include <cmath>

namespace kiln::ref {

using namespace detail;

Tensor transpose(const Tensor &x, const std::vector<int64_t> &permutation) {
  Shape shape(permutation.size());
  std::vector<int64_t> inStrides = stridesOf(x.shape()), index;
  for (size_t d = 0; d < permutation.size(); ++d)
    shape[d] = x.dim(permutation[d]);
  Tensor out(x.dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    unravel(i, shape, index);
    int64_t from = 0;
    for (size_t d = 0; d < permutation.size(); ++d)
      from += index[d] * inStrides[permutation[d]];
    copyElement(x, from, out, i);
  }
  return out;
}

Tensor transposeLastTwo(const Tensor &x) {
  if (x.rank() < 2)
    return x;
  std::vector<int64_t> perm(x.rank());
  for (int64_t d = 0; d < x.rank(); ++d)
    perm[d] = d;
  std::swap(perm[x.rank() - 2], perm[x.rank() - 1]);
  return transpose(x, perm);
}

std::vector<int64_t> integerValues(const Tensor &t) {
  std::vector<int64_t> out;
  for (int64_t k = 0; k < t.numel(); ++k)
    out.push_back(t.getI(k));
  return out;
}

absl::StatusOr<Tensor> reshape(const Tensor &x, std::vector<int64_t> shape) {
  absl::StatusOr<Shape> result = reshapeResult(x.shape(), std::move(shape), x.describe());
  if (!result.ok())
    return result.status();
  return x.reshaped(std::move(*result));
}

absl::StatusOr<Shape> reshapeResult(const Shape &inputShape, std::vector<int64_t> shape,
                                    const std::string &what) {
  int64_t known = 1, unknownAt = -1, count = numElements(inputShape);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && unknownAt < 0)
      unknownAt = static_cast<int64_t>(d);
    else if (shape[d] < 0 || __builtin_mul_overflow(known, shape[d], &known))
      return absl::InvalidArgumentError("reshape to [" + shapeToString(shape) +
                                        "] is not a shape");
  }
  if (unknownAt >= 0)
    shape[unknownAt] = known ? count / known : 0;
  if (numElements(shape) != count)
    return absl::InvalidArgumentError("reshape of " + what + " to [" + shapeToString(shape) +
                                      "] changes the element count");
  return shape;
}

absl::StatusOr<Tensor> broadcastTo(const Tensor &x, const Shape &target) {
  // ONNX Expand: the result is the broadcast of both shapes.
  absl::StatusOr<Shape> shape = broadcastShapes(x.shape(), target);
  if (!shape.ok())
    return shape.status();
  std::vector<int64_t> strides = broadcastStrides(x.shape(), shape->size()), index;
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(x.dtype(), *shape));
  for (int64_t i = 0; i < out.numel(); ++i) {
    unravel(i, *shape, index);
    int64_t from = 0;
    for (size_t d = 0; d < index.size(); ++d)
      from += index[d] * strides[d];
    copyElement(x, from, out, i);
  }
  return out;
}

absl::StatusOr<Tensor> concat(const std::vector<const Tensor *> &inputs, int64_t axis) {
  const Tensor &first = *inputs.front();
  axis = normalizeAxis(axis, first.rank());
  Shape shape = first.shape();
  shape[axis] = 0;
  for (const Tensor *t : inputs) {
    if (t->rank() != first.rank())
      return absl::InvalidArgumentError("concat: inputs of different ranks");
    for (int64_t d = 0; d < first.rank(); ++d)
      if (d != axis && t->dim(d) != first.dim(d))
        return absl::InvalidArgumentError(absl::StrCat(
            "concat: input ", t->describe(), " does not match ", first.describe(),
            " off the axis"));
    shape[axis] += t->dim(axis);
  }
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(first.dtype(), shape));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < first.rank(); ++d)
    inner *= shape[d];
  int bytes = info(first.dtype()).bytes;
  int64_t offset = 0;
  for (const Tensor *t : inputs) {
    int64_t chunk = t->dim(axis) * inner * bytes, outChunk = shape[axis] * inner * bytes;
    for (int64_t o = 0; o < outer && chunk > 0; ++o)
      std::memcpy(out.bytes() + o * outChunk + offset, t->bytes() + o * chunk, chunk);
    offset += chunk;
  }
  return out;
}

absl::StatusOr<Tensor> cacheWrite(const Tensor &cache, const Tensor &update,
                                  const Tensor &positions, int64_t axis, bool zeroTail,
                                  bool circular) {
  if (cache.rank() < 2 || update.rank() != cache.rank() || update.dtype() != cache.dtype())
    return absl::InvalidArgumentError(absl::StrCat("cache_write: update ", update.describe(),
                                                   " does not match the cache ", cache.describe()));
  axis = normalizeAxis(axis, cache.rank());
  if (axis == 0)
    return absl::InvalidArgumentError("cache_write: the axis must not be the batch dim 0");
  for (int64_t d = 0; d < cache.rank(); ++d)
    if (d != axis && update.dim(d) != cache.dim(d))
      return absl::InvalidArgumentError(absl::StrCat("cache_write: update ", update.describe(),
                                                     " does not match the cache ",
                                                     cache.describe(), " off the axis"));
  int64_t batch = cache.dim(0), rows = update.dim(axis), length = cache.dim(axis);
  if (positions.rank() != 1 || positions.dim(0) != batch)
    return absl::InvalidArgumentError(absl::StrCat("cache_write: positions ", positions.describe(),
                                                   " must hold one position a sequence (",
                                                   batch, ")"));
  if (circular && (zeroTail || rows > length))
    return absl::InvalidArgumentError(absl::StrCat(
        "cache_write: a circular write of ", rows, " rows into a cache of ", length,
        zeroTail ? " takes no zero tail" : " would write a row twice"));
  Tensor out(cache.dtype(), cache.shape());
  if (cache.byteSize())
    std::memcpy(out.bytes(), cache.bytes(), cache.byteSize());
  // Per sequence: [outer of dims 1..axis) x [rows along the axis] x [inner].
  int64_t middle = 1, inner = 1;
  for (int64_t d = 1; d < axis; ++d)
    middle *= cache.dim(d);
  for (int64_t d = axis + 1; d < cache.rank(); ++d)
    inner *= cache.dim(d);
  int64_t bytes = info(cache.dtype()).bytes, row = inner * bytes;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t at = positions.getI(b);
    if (circular) {
      if (length == 0)
        continue; // rows is 0 too: nothing to write
      // Up to two runs: from `at` to the end of the ring, then from row 0.
      at = ((at % length) + length) % length;
      int64_t first = std::min(rows, length - at);
      for (int64_t m = 0; m < middle; ++m) {
        uint8_t *to = out.bytes() + ((b * middle + m) * length) * row;
        const uint8_t *from = update.bytes() + ((b * middle + m) * rows) * row;
        if (first > 0)
          std::memcpy(to + at * row, from, first * row);
        if (rows > first)
          std::memcpy(to, from + first * row, (rows - first) * row);
      }
      continue;
    }
    if (at < 0 || at > length - rows)
      return absl::InvalidArgumentError(absl::StrCat(
          "cache_write: sequence ", b, "'s rows [", at, ", ",
          // (the end saturated: a position near the largest i64 overflows)
          at > std::numeric_limits<int64_t>::max() - rows ? std::numeric_limits<int64_t>::max()
                                                          : at + rows,
          ") do not fit in the cache ", cache.describe(), " along axis ", axis));
    for (int64_t m = 0; m < middle; ++m) {
      uint8_t *to = out.bytes() + ((b * middle + m) * length) * row;
      const uint8_t *from = update.bytes() + ((b * middle + m) * rows) * row;
      if (rows > 0)
        std::memcpy(to + at * row, from, rows * row);
      if (zeroTail && at + rows < length)
        std::memset(to + (at + rows) * row, 0, (length - at - rows) * row);
    }
  }
  return out;
}

absl::StatusOr<Tensor> cacheUpdate(const Tensor &cache, const Tensor &update, int64_t offset,
                                   int64_t axis) {
  if (update.rank() != cache.rank() || update.dtype() != cache.dtype())
    return absl::InvalidArgumentError(absl::StrCat("cache_update: update ", update.describe(),
                                                   " does not match the cache ", cache.describe()));
  axis = normalizeAxis(axis, cache.rank());
  for (int64_t d = 0; d < cache.rank(); ++d)
    if (d != axis && update.dim(d) != cache.dim(d))
      return absl::InvalidArgumentError(absl::StrCat("cache_update: update ", update.describe(),
                                                     " does not match the cache ",
                                                     cache.describe(), " off the axis"));
  if (offset < 0 || offset > cache.dim(axis) - update.dim(axis))
    return absl::InvalidArgumentError(absl::StrCat(
        "cache_update: rows [", offset, ", ", offset + update.dim(axis), ") do not fit in the cache ",
        cache.describe(), " along axis ", axis));
  Tensor out(cache.dtype(), cache.shape());
  if (cache.byteSize())
    std::memcpy(out.bytes(), cache.bytes(), cache.byteSize());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= cache.dim(d);
  for (int64_t d = axis + 1; d < cache.rank(); ++d)
    inner *= cache.dim(d);
  int64_t bytes = info(cache.dtype()).bytes;
  int64_t chunk = update.dim(axis) * inner * bytes, outChunk = cache.dim(axis) * inner * bytes;
  for (int64_t o = 0; o < outer && chunk > 0; ++o)
    std::memcpy(out.bytes() + o * outChunk + offset * inner * bytes, update.bytes() + o * chunk,
                chunk);
  return out;
}

absl::StatusOr<Tensor> slice(const Tensor &x, const std::vector<int64_t> &starts,
                             const std::vector<int64_t> &ends,
                             const std::vector<int64_t> &steps) {
  int64_t rank = x.rank();
  if ((int64_t)starts.size() != rank || (int64_t)ends.size() != rank ||
      (int64_t)steps.size() != rank)
    return absl::InvalidArgumentError("slice: starts/ends/steps must have one entry per dim");
  Shape shape(rank);
  std::vector<int64_t> first(rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = x.dim(d), step = steps[d];
    if (step == 0)
      return absl::InvalidArgumentError("slice: step 0");
    auto norm = [n](int64_t v) { return v < 0 ? std::max<int64_t>(v, -n - 1) + n : v; };
    int64_t s = norm(starts[d]), e = norm(ends[d]);
    // ceil(span / |step|) in unsigned arithmetic: |INT64_MIN| does not fit int64,
    // and ONNX gives such a step one element (the IR's shape function agrees).
    auto count = [](int64_t span, uint64_t stride) {
      return static_cast<int64_t>((static_cast<uint64_t>(span) - 1) / stride + 1);
    };
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      shape[d] = e > s ? count(e - s, static_cast<uint64_t>(step)) : 0;
    } else {
      s = std::clamp<int64_t>(s, -1, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      shape[d] = s > e ? count(s - e, 0 - static_cast<uint64_t>(step)) : 0;
    }
    first[d] = s;
  }
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(x.dtype(), shape));
  std::vector<int64_t> inStrides = stridesOf(x.shape()), index;
  for (int64_t i = 0; i < out.numel(); ++i) {
    unravel(i, shape, index);
    int64_t from = 0;
    for (int64_t d = 0; d < rank; ++d)
      from += (first[d] + index[d] * steps[d]) * inStrides[d];
    copyElement(x, from, out, i);
  }
  return out;
}

absl::StatusOr<Tensor> gather(const Tensor &data, const Tensor &indices, int64_t axis) {
  axis = normalizeAxis(axis, data.rank());
  Shape shape(data.shape().begin(), data.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  int64_t outer = 1, inner = 1, n = data.dim(axis);
  for (int64_t d = 0; d < axis; ++d)
    outer *= data.dim(d);
  for (int64_t d = axis + 1; d < data.rank(); ++d)
    inner *= data.dim(d);
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(data.dtype(), shape));
  int bytes = info(data.dtype()).bytes;
  int64_t count = indices.numel();
  // Every index is checked once; the copies go over the result's elements,
  // so an empty result is no work whatever `outer` is.
  std::vector<int64_t> rows(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    int64_t k = indices.getI(j);
    if (k < -n || k >= n)
      return indexError("gather", k, n);
    rows[j] = k < 0 ? k + n : k;
  }
  if (out.numel() == 0)
    return out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      std::memcpy(out.bytes() + ((o * count + j) * inner) * bytes,
                  data.bytes() + ((o * n + rows[j]) * inner) * bytes, inner * bytes);
  return out;
}

absl::StatusOr<Tensor> pad(const Tensor &x, const std::vector<int64_t> &pads, PadMode mode,
                           const Tensor &value) {
  int64_t rank = x.rank();
  if ((int64_t)pads.size() != 2 * rank)
    return absl::InvalidArgumentError("pad: pads must have 2 * rank entries");
  Shape shape(rank);
  for (int64_t d = 0; d < rank; ++d) {
    // A negative pad crops; no more than the dim (pads that crop past it and pad
    // it back would cancel in the size and overflow in the indexing).
    if (pads[d] < -x.dim(d) || pads[d + rank] < -x.dim(d))
      return absl::InvalidArgumentError("pad: negative pads crop more than the dim");
    if (__builtin_add_overflow(x.dim(d), pads[d], &shape[d]) ||
        __builtin_add_overflow(shape[d], pads[d + rank], &shape[d]))
      return absl::OutOfRangeError(absl::StrCat("pad: dim ", d, " of ", x.describe(),
                                                " padded by ", pads[d], " and ",
                                                pads[d + rank], " overflows"));
    if (shape[d] < 0)
      return absl::InvalidArgumentError("pad: negative pads crop more than the dim");
  }
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(x.dtype(), shape));
  std::vector<int64_t> inStrides = stridesOf(x.shape()), index;
  for (int64_t i = 0; i < out.numel(); ++i) {
    unravel(i, shape, index);
    int64_t from = 0;
    bool outside = false;
    for (int64_t d = 0; d < rank && !outside; ++d) {
      int64_t n = x.dim(d), k = index[d] - pads[d];
      if (k < 0 || k >= n) {
        if (mode == PadMode::constant || n == 0) {
          outside = true;
          break;
        }
        if (mode == PadMode::edge) {
          k = std::clamp<int64_t>(k, 0, n - 1);
        } else if (mode == PadMode::wrap) {
          k = ((k % n) + n) % n;
        } else { // reflect, without repeating the edge
          if (n == 1) {
            k = 0;
          } else {
            int64_t period = 2 * (n - 1);
            k = ((k % period) + period) % period;
            if (k >= n)
              k = period - k;
          }
        }
      }
      from += k * inStrides[d];
    }
    if (outside)
      copyElement(value, 0, out, i);
    else
      copyElement(x, from, out, i);
  }
  return out;
}

absl::StatusOr<Tensor> gatherElements(const Tensor &data, const Tensor &indices,
                                      int64_t axis) {
  axis = normalizeAxis(axis, data.rank());
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(data.dtype(), indices.shape()));
  std::vector<int64_t> strides = stridesOf(data.shape()), index;
  int64_t n = data.dim(axis);
  // Every other dim of indices must fit in data's (a size a step bound, which
  // no guard could check before the call, meets this check here).
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && indices.dim(d) > data.dim(d) && indices.numel() > 0)
      return absl::InvalidArgumentError(
          absl::StrCat("gather_elements: dim ", d, " of indices (", indices.dim(d),
                       ") exceeds data's (", data.dim(d), ")"));
  for (int64_t i = 0; i < out.numel(); ++i) {
    unravel(i, indices.shape(), index);
    int64_t k = indices.getI(i);
    if (k < -n || k >= n)
      return indexError("gather_elements", k, n);
    index[axis] = k < 0 ? k + n : k;
    int64_t from = 0;
    for (int64_t d = 0; d < data.rank(); ++d)
      from += index[d] * strides[d];
    copyElement(data, from, out, i);
  }
  return out;
}

namespace {
void combine(Tensor &out, int64_t at, const Tensor &updates, int64_t from,
             ScatterReduction reduction) {
  if (reduction == ScatterReduction::none) {
    copyElement(updates, from, out, at);
    return;
  }
  if (isFloat(out.dtype())) {
    double a = out.getF(at), b = updates.getF(from), r = b;
    switch (reduction) {
    case ScatterReduction::add: r = a + b; break;
    case ScatterReduction::mul: r = a * b; break;
    case ScatterReduction::max: r = std::max(a, b); break;
    case ScatterReduction::min: r = std::min(a, b); break;
    default: break;
    }
    out.setF(at, r);
    return;
  }
  int64_t a = out.getI(at), b = updates.getI(from), r = b;
  bool isU = isUnsigned(out.dtype());
  switch (reduction) {
  case ScatterReduction::add: r = static_cast<int64_t>(uint64_t(a) + uint64_t(b)); break;
  case ScatterReduction::mul: r = static_cast<int64_t>(uint64_t(a) * uint64_t(b)); break;
  case ScatterReduction::max: r = isU ? int64_t(std::max(uint64_t(a), uint64_t(b))) : std::max(a, b); break;
  case ScatterReduction::min: r = isU ? int64_t(std::min(uint64_t(a), uint64_t(b))) : std::min(a, b); break;
  default: break;
  }
  out.setI(at, r);
}
} // namespace

absl::StatusOr<Tensor> scatterElements(const Tensor &data, const Tensor &indices,
                                       const Tensor &updates, int64_t axis,
                                       ScatterReduction reduction) {
  axis = normalizeAxis(axis, data.rank());
  if (indices.shape() != updates.shape())
    return absl::InvalidArgumentError("scatter_elements: indices and updates differ in shape");
  Tensor out = data;
  std::vector<int64_t> strides = stridesOf(data.shape()), index;
  int64_t n = data.dim(axis);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    unravel(i, indices.shape(), index);
    int64_t k = indices.getI(i);
    if (k < -n || k >= n)
      return indexError("scatter_elements", k, n);
    index[axis] = k < 0 ? k + n : k;
    int64_t at = 0;
    for (int64_t d = 0; d < data.rank(); ++d) {
      if (index[d] >= data.dim(d))
        return indexError("scatter_elements", index[d], data.dim(d));
      at += index[d] * strides[d];
    }
    combine(out, at, updates, i, reduction);
  }
  return out;
}

absl::StatusOr<Tensor> gatherND(const Tensor &data, const Tensor &indices, int64_t batchDims) {
  if (indices.rank() < 1 || batchDims < 0 || batchDims >= indices.rank() ||
      batchDims > data.rank())
    return absl::InvalidArgumentError(absl::StrCat("gather_nd: indices ", indices.describe(),
                                                   " and batch dims ", batchDims,
                                                   " do not fit data ", data.describe()));
  int64_t q = indices.dim(indices.rank() - 1);
  if (batchDims + q > data.rank())
    return absl::InvalidArgumentError("gather_nd: index tuples are longer than the data rank");
  Shape shape(indices.shape().begin(), indices.shape().end() - 1);
  shape.insert(shape.end(), data.shape().begin() + batchDims + q, data.shape().end());
  int64_t inner = 1, batch = 1;
  for (int64_t d = batchDims + q; d < data.rank(); ++d)
    inner *= data.dim(d);
  for (int64_t d = 0; d < batchDims; ++d)
    batch *= data.dim(d);
  int64_t tuples = numElements(Shape(indices.shape().begin(), indices.shape().end() - 1));
  int64_t tuplesPerBatch = batch ? tuples / batch : 0;
  int64_t batchSize = 1; // elements of data per batch entry
  for (int64_t d = batchDims; d < data.rank(); ++d)
    batchSize *= data.dim(d);
  std::vector<int64_t> strides = stridesOf(data.shape());
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(data.dtype(), shape));
  int bytes = info(data.dtype()).bytes;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t b = tuplesPerBatch ? t / tuplesPerBatch : 0;
    int64_t from = b * batchSize;
    for (int64_t j = 0; j < q; ++j) {
      int64_t n = data.dim(batchDims + j), k = indices.getI(t * q + j);
      if (k < -n || k >= n)
        return indexError("gather_nd", k, n);
      from += (k < 0 ? k + n : k) * strides[batchDims + j];
    }
    std::memcpy(out.bytes() + t * inner * bytes, data.bytes() + from * bytes, inner * bytes);
  }
  return out;
}

absl::StatusOr<Tensor> scatterND(const Tensor &data, const Tensor &indices,
                                 const Tensor &updates, ScatterReduction reduction) {
  if (indices.rank() < 1)
    return absl::InvalidArgumentError("scatter_nd: the indices must have rank 1 or more");
  int64_t q = indices.dim(indices.rank() - 1);
  if (q > data.rank())
    return absl::InvalidArgumentError("scatter_nd: index tuples are longer than the data rank");
  int64_t inner = 1;
  for (int64_t d = q; d < data.rank(); ++d)
    inner *= data.dim(d);
  int64_t tuples = indices.numel() / std::max<int64_t>(q, 1);
  if (q == 0)
    tuples = numElements(Shape(indices.shape().begin(), indices.shape().end() - 1));
  if (updates.numel() != tuples * inner)
    return absl::InvalidArgumentError("scatter_nd: updates do not match indices and data");
  std::vector<int64_t> strides = stridesOf(data.shape());
  Tensor out = data;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t at = 0;
    for (int64_t j = 0; j < q; ++j) {
      int64_t n = data.dim(j), k = indices.getI(t * q + j);
      if (k < -n || k >= n)
        return indexError("scatter_nd", k, n);
      at += (k < 0 ? k + n : k) * strides[j];
    }
    for (int64_t e = 0; e < inner; ++e)
      combine(out, at + e, updates, t * inner + e, reduction);
  }
  return out;
}

namespace {
/// Whether element i of `x` is non-zero (NaN is).
bool nonZeroAt(const Tensor &x, int64_t i) {
  return isFloat(x.dtype()) ? x.getF(i) != 0 : x.getI(i) != 0;
}
} // namespace

Tensor countNonZeroChunks(const Tensor &x, int64_t chunks) {
  chunks = std::max<int64_t>(chunks, 1);
  int64_t n = x.numel(), chunk = (n + chunks - 1) / chunks;
  Tensor out(DType::i64, {chunks});
  for (int64_t i = 0; i < n; ++i)
    if (nonZeroAt(x, i))
      out.setI(i / chunk, out.getI(i / chunk) + 1);
  return out;
}

Tensor nonZero(const Tensor &x) {
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (nonZeroAt(x, i))
      hits.push_back(i);
  int64_t count = static_cast<int64_t>(hits.size());
  Tensor out(DType::i64, {x.rank(), count});
  std::vector<int64_t> index;
  for (int64_t j = 0; j < count; ++j) {
    unravel(hits[j], x.shape(), index);
    for (int64_t d = 0; d < x.rank(); ++d)
      out.setI(d * count + j, index[d]);
  }
  return out;
}

absl::StatusOr<Tensor> compress(const Tensor &x, const Tensor &condition,
                                std::optional<int64_t> axis) {
  Tensor input = axis ? x : x.reshaped({x.numel()});
  int64_t a = axis ? normalizeAxis(*axis, x.rank()) : 0;
  int64_t n = input.dim(a);
  if (condition.numel() > n)
    return absl::InvalidArgumentError("compress: condition is longer than the axis");
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < condition.numel(); ++i)
    if (condition.getI(i))
      kept.push_back(i);
  Tensor indices(DType::i64, {static_cast<int64_t>(kept.size())});
  for (size_t i = 0; i < kept.size(); ++i)
    indices.setI(i, kept[i]);
  return gather(input, indices, a);
}

//===----------------------------------------------------------------------===//
// resize
//===----------------------------------------------------------------------===//

namespace {
/// The input coordinate of output coordinate `o` along one dim.
double sourceCoordinate(const ResizeParams &p, int64_t d, double o, int64_t inSize,
                        int64_t outSize, double scale, int64_t rank) {
  switch (p.coordinateMode) {
  case CoordinateMode::half_pixel:
    return (o + 0.5) / scale - 0.5;
  case CoordinateMode::half_pixel_symmetric: {
    double adjustment = outSize / (scale * inSize);
    double center = inSize / 2.0;
    double offset = center * (1 - adjustment);
    return offset + (o + 0.5) / scale - 0.5;
  }
  case CoordinateMode::pytorch_half_pixel:
    return outSize > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  case CoordinateMode::align_corners: {
    // ONNX takes the resized length as input * scale, unrounded.
    double outLength = scale * inSize;
    return outLength == 1 ? 0.0 : o * (inSize - 1) / (outLength - 1);
  }
  case CoordinateMode::asymmetric:
    return o / scale;
  case CoordinateMode::tf_crop_and_resize: {
    double start = p.roi[d], end = p.roi[d + rank];
    return outSize > 1 ? start * (inSize - 1) + o * (end - start) * (inSize - 1) / (outSize - 1)
                       : 0.5 * (start + end) * (inSize - 1);
  }
  }
  return o;
}

/// Taps and weights of one output coordinate along one dim.
struct Taps {
  std::vector<int64_t> index;
  std::vector<double> weight;
  bool outside = false; // tf_crop_and_resize beyond the input: extrapolate
};

Taps tapsFor(const ResizeParams &p, int64_t d, int64_t o, int64_t inSize, int64_t outSize,
             double scale, int64_t rank) {
  Taps t;
  double x = sourceCoordinate(p, d, static_cast<double>(o), inSize, outSize, scale, rank);
  if (p.coordinateMode == CoordinateMode::tf_crop_and_resize &&
      (x < 0 || x > inSize - 1)) {
    t.outside = true;
    return t;
  }
  if (p.mode == ResizeMode::nearest) {
    double r;
    switch (p.nearestMode) {
    case NearestMode::round_prefer_floor:
      r = (x - std::floor(x) == 0.5) ? std::floor(x) : std::round(x);
      break;
    case NearestMode::round_prefer_ceil:
      r = (x - std::floor(x) == 0.5) ? std::ceil(x) : std::round(x);
      break;
    case NearestMode::floor:
      r = std::floor(x);
      break;
    default:
      r = std::ceil(x);
      break;
    }
    t.index.push_back(std::clamp<int64_t>(static_cast<int64_t>(r), 0, inSize - 1));
    t.weight.push_back(1);
    return t;
  }
  // Linear and cubic. Antialiasing, when downsampling, stretches the filter by
  // 1/scale and normalizes its weights (ONNX Resize-18).
  bool stretch = p.antialias && scale < 1;
  double f = std::floor(x), ratio = x - f;
  int64_t first, last;
  if (p.mode == ResizeMode::linear) {
    first = stretch ? static_cast<int64_t>(std::floor(-1 / scale) + 1) : 0;
    last = 1 - first;
  } else {
    first = stretch ? static_cast<int64_t>(std::floor(-2 / scale) + 1) : -1;
    last = 1 - first;
  }
  double filterScale = stretch ? scale : 1;
  double total = 0;
  for (int64_t i = first; i <= last; ++i) {
    double s = (i - ratio) * filterScale;
    double w = p.mode == ResizeMode::linear ? std::max(0.0, 1 - std::fabs(s))
                                            : cubicWeight(s, p.cubicCoeffA);
    int64_t idx = static_cast<int64_t>(f) + i;
    if (idx < 0 || idx >= inSize) {
      if (p.excludeOutside)
        continue;
      idx = std::clamp<int64_t>(idx, 0, inSize - 1);
    }
    t.index.push_back(idx);
    t.weight.push_back(w);
    total += w;
  }
  if ((p.excludeOutside || stretch) && total != 0)
    for (double &w : t.weight)
      w /= total;
  if (t.index.empty()) {
    t.index.push_back(std::clamp<int64_t>(static_cast<int64_t>(std::floor(x)), 0, inSize - 1));
    t.weight.push_back(1);
  }
  return t;
}
} // namespace

absl::StatusOr<Tensor> resize(const Tensor &x, const ResizeParams &p) {
  int64_t rank = x.rank();
  if ((int64_t)p.size.size() != rank)
    return absl::InvalidArgumentError("resize: size must have one entry per dim");
  for (int64_t d = 0; d < rank; ++d)
    if (p.size[d] < 0 || (x.dim(d) == 0 && p.size[d] != 0))
      return absl::InvalidArgumentError("resize: bad output size");
  if (p.coordinateMode == CoordinateMode::tf_crop_and_resize && (int64_t)p.roi.size() != 2 * rank)
    return absl::InvalidArgumentError("resize: tf_crop_and_resize needs a roi of 2 * rank");
  std::vector<std::vector<Taps>> taps(rank);
  for (int64_t d = 0; d < rank; ++d) {
    double scale = p.scales.empty() ? double(p.size[d]) / double(x.dim(d)) : p.scales[d];
    for (int64_t o = 0; o < p.size[d]; ++o)
      taps[d].push_back(tapsFor(p, d, o, x.dim(d), p.size[d], scale, rank));
  }
  Tensor out;
  KILN_REF_ASSIGN_OR_RETURN(out, Tensor::zeros(x.dtype(), p.size));
  std::vector<int64_t> strides = stridesOf(x.shape()), index, tap(rank);
  for (int64_t i = 0; i < out.numel(); ++i) {
    unravel(i, p.size, index);
    bool outside = false;
    for (int64_t d = 0; d < rank; ++d)
      outside |= taps[d][index[d]].outside;
    if (outside) {
      out.setF(i, p.extrapolationValue);
      continue;
    }
    // Sum over the tensor product of every dim's taps.
    double sum = 0;
    std::fill(tap.begin(), tap.end(), 0);
    while (true) {
      double w = 1;
      int64_t from = 0;
      for (int64_t d = 0; d < rank; ++d) {
        const Taps &t = taps[d][index[d]];
        w *= t.weight[tap[d]];
        from += t.index[tap[d]] * strides[d];
      }
      // A tap of weight 0 is not read: an output on an input position is
      // that input, even beside an infinity (0 * inf would make it NaN), as
      // the generated kernel's untouched dims are (issue 32; docs/precision.md).
      if (w != 0)
        sum += w * x.getF(from);
      int64_t d = rank - 1;
      for (; d >= 0; --d) {
        if (++tap[d] < (int64_t)taps[d][index[d]].index.size())
          break;
        tap[d] = 0;
      }
      if (d < 0)
        break;
    }
    out.setF(i, sum);
  }
  return out;
}

} // namespace kiln::ref
