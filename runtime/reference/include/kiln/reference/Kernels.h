//===- Kernels.h - host reference kernels of kiln's core ops ----*- C++ -*-===//
//
// One function per kiln op (or op family), with the op's semantics as
// ir/Kiln/*.td describe them. Floats compute in double and round once into the
// result's element type; integers are exact (wrapping at their width). Kernels
// that can meet bad data (an index out of range, an integer division by zero)
// return a status naming it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REFERENCE_KERNELS_H
#define KILN_REFERENCE_KERNELS_H

#include "kiln/ops/Elementwise.h"
#include "kiln/ops/Enums.h"
#include "kiln/reference/Tensor.h"

#include <optional>

namespace kiln::ref {

//===--- Elementwise ------------------------------------------------------===//

/// The functions of the op table (kiln/ops/ElementwiseOps.def): its rows give the
/// semantics unary() and binary() compute.
using UnaryFn = ops::UnaryFn;
using BinaryFn = ops::BinaryFn;
/// The enums of ops' attributes are the op table's (kiln/ops/OpEnums.def).
using CompareFn = ops::CompareDirection;
using ops::ArgReduceKind;
using ops::CoordinateMode;
using ops::CumulativeKind;
using ops::GridPadding;
using ops::NearestMode;
using ops::PadMode;
using ops::PoolKind;
using ops::ReduceKind;
using ops::ResizeMode;
using ops::ScatterReduction;

/// numpy broadcasting of two shapes, or an error.
absl::StatusOr<Shape> broadcastShapes(const Shape &a, const Shape &b);

Tensor unary(UnaryFn fn, const Tensor &x);
/// A library op's activation (ops::Activation says each formula) of a float
/// tensor, in double, rounded once to x's type.
Tensor activation(ops::Activation a, const Tensor &x);
absl::StatusOr<Tensor> binary(BinaryFn fn, const Tensor &a, const Tensor &b);
absl::StatusOr<Tensor> compare(CompareFn fn, const Tensor &a, const Tensor &b);
absl::StatusOr<Tensor> select(const Tensor &condition, const Tensor &onTrue,
                              const Tensor &onFalse);
/// Reinterprets the bytes as `to`, of the same width.
absl::StatusOr<Tensor> bitcast(const Tensor &x, DType to);

//===--- Shapes -----------------------------------------------------------===//

/// start, start + delta, ... up to limit (exclusive), of `dtype`.
absl::StatusOr<Tensor> range(const Tensor &start, const Tensor &limit, const Tensor &delta);

//===--- Data movement ----------------------------------------------------===//

/// The values of an integer tensor (shape operands: sizes, starts, pads).
std::vector<int64_t> integerValues(const Tensor &t);
/// `x` with the dims in `shape`, one of which may be -1 (inferred), as ONNX
/// Reshape without `allowzero`; an error when the element count differs.
absl::StatusOr<Tensor> reshape(const Tensor &x, std::vector<int64_t> shape);
/// reshape's result dims for an input of `inputShape` (`what` names the input
/// in errors, as "f32[2, 3]"): -1 takes the remaining count.
absl::StatusOr<Shape> reshapeResult(const Shape &inputShape, std::vector<int64_t> shape,
                                    const std::string &what);
Tensor transpose(const Tensor &x, const std::vector<int64_t> &permutation);
/// `x` with its last two dims swapped (a matmul's transposed operand); a
/// vector or scalar is returned as it is.
Tensor transposeLastTwo(const Tensor &x);
absl::StatusOr<Tensor> broadcastTo(const Tensor &x, const Shape &shape);
absl::StatusOr<Tensor> concat(const std::vector<const Tensor *> &inputs, int64_t axis);
/// `cache` with `update`'s rows written along `axis` from row `offset`
/// (kiln.cache_update): update has cache's dims but along the axis, and the
/// rows must fit.
absl::StatusOr<Tensor> cacheUpdate(const Tensor &cache, const Tensor &update, int64_t offset,
                                   int64_t axis);
/// `cache` with sequence b's rows of `update` written along `axis` (not 0)
/// from row `positions[b]` (kiln.cache_write; `positions` holds one i64 a
/// sequence); with `zeroTail` the rows after each sequence's written ones
/// are 0. A row outside the cache is an error. With `circular` row i goes to
/// `(positions[b] + i) mod L` (L the cache's length along the axis; update
/// no longer than L; no zero tail).
absl::StatusOr<Tensor> cacheWrite(const Tensor &cache, const Tensor &update,
                                  const Tensor &positions, int64_t axis, bool zeroTail,
                                  bool circular = false);
/// ONNX Slice with one start/end/step per dim (clamped like ONNX).
absl::StatusOr<Tensor> slice(const Tensor &x, const std::vector<int64_t> &starts,
                             const std::vector<int64_t> &ends,
                             const std::vector<int64_t> &steps);
absl::StatusOr<Tensor> gather(const Tensor &data, const Tensor &indices, int64_t axis);
/// pads: [begin..., end...], negative entries crop.
absl::StatusOr<Tensor> pad(const Tensor &x, const std::vector<int64_t> &pads, PadMode mode,
                           const Tensor &value);
absl::StatusOr<Tensor> gatherElements(const Tensor &data, const Tensor &indices,
                                      int64_t axis);
absl::StatusOr<Tensor> scatterElements(const Tensor &data, const Tensor &indices,
                                       const Tensor &updates, int64_t axis,
                                       ScatterReduction reduction);
absl::StatusOr<Tensor> gatherND(const Tensor &data, const Tensor &indices, int64_t batchDims);
absl::StatusOr<Tensor> scatterND(const Tensor &data, const Tensor &indices,
                                 const Tensor &updates, ScatterReduction reduction);
Tensor nonZero(const Tensor &x);
/// The non-zero count of each of `chunks` runs of ceil(numel / chunks)
/// elements of x's row-major order (the last ones shorter or empty).
Tensor countNonZeroChunks(const Tensor &x, int64_t chunks);
absl::StatusOr<Tensor> compress(const Tensor &x, const Tensor &condition,
                                std::optional<int64_t> axis);

struct ResizeParams {
  Shape size;
  ResizeMode mode = ResizeMode::nearest;
  CoordinateMode coordinateMode = CoordinateMode::half_pixel;
  NearestMode nearestMode = NearestMode::round_prefer_floor;
  std::vector<double> scales; // per dim; empty: output / input
  std::vector<double> roi;    // [begin..., end...] for tf_crop_and_resize
  double cubicCoeffA = -0.75;
  bool excludeOutside = false;
  double extrapolationValue = 0;
  bool antialias = false;
};
absl::StatusOr<Tensor> resize(const Tensor &x, const ResizeParams &params);

//===--- Reductions -------------------------------------------------------===//

Tensor reduce(const Tensor &x, ReduceKind kind, const std::vector<int64_t> &axes,
              bool keepDims);
absl::StatusOr<Tensor> argReduce(const Tensor &x, ArgReduceKind kind, int64_t axis,
                                 bool keepDims, bool selectLastIndex);
Tensor cumulative(const Tensor &x, CumulativeKind kind, int64_t axis, bool exclusive,
                  bool reverse);
absl::StatusOr<std::pair<Tensor, Tensor>> topK(const Tensor &x, int64_t k, int64_t axis,
                                               bool largest, bool sorted);
/// kiln.sample_tokens (its description says the rule): logits [B, S, V],
/// positions (i64) and uniform [B]; i64 [B], -1 for a row it cannot choose
/// from.
absl::StatusOr<Tensor> sampleTokens(const Tensor &logits, const Tensor &positions,
                                    const Tensor &uniform, double temperature, int64_t topK,
                                    double topP);

//===--- Composite --------------------------------------------------------===//

/// numpy's matmul of two tensors of one element type; 8-bit integers give
/// int32 and float8 f32 (kiln.matmul's rule), every other type itself.
absl::StatusOr<Tensor> matmul(const Tensor &a, const Tensor &b);
/// kiln.matmul_nbits (CompositeOps.td says the rule): `x` [.., K] times the
/// transpose of the weights that `weights` (ui8 [N, blocks, block_size * bits
/// / 8]), `scales` [N, blocks] and `zeroPoints` (null, packed ui8 or float)
/// stand for, plus `bias` ([N] or [.., N]) when given; [.., N] in x's type.
/// With `glu`, [.., N / 2]: silu of each group of 16 columns' first 8 times
/// its last 8 (N a multiple of 16, the bias a vector).
absl::StatusOr<Tensor> matmulNBits(const Tensor &x, const Tensor &weights, const Tensor &scales,
                                   const Tensor *zeroPoints, const Tensor *bias, int64_t bits,
                                   int64_t blockSize, bool glu = false);
struct ConvParams {
  std::vector<int64_t> strides, dilations, pads, outputPadding;
  int64_t group = 1;
  /// conv only: x, the result are [N, D1..Dk, C] and w is [M, K1..Kk, C / group]
  /// (NHWC / KRSC) instead of channels first.
  bool channelsLast = false;
};
absl::StatusOr<Tensor> conv(const Tensor &x, const Tensor &w, const Tensor *bias,
                            const ConvParams &p);
absl::StatusOr<Tensor> convTranspose(const Tensor &x, const Tensor &w, const Tensor *bias,
                                     const ConvParams &p);
struct PoolParams {
  PoolKind kind = PoolKind::max;
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
  bool countIncludePad = false;
  int64_t p = 2;
  /// x and the result are [N, D1..Dk, C] (NHWC) instead of channels first.
  bool channelsLast = false;
};
absl::StatusOr<Tensor> pool(const Tensor &x, const PoolParams &p);
Tensor softmax(const Tensor &x, int64_t axis, bool logarithm);
absl::StatusOr<Tensor> layerNorm(const Tensor &x, const Tensor &scale, const Tensor *bias,
                                 int64_t axis, double epsilon);
/// x / sqrt(mean(x^2) + epsilon) over the dims from `axis` (no mean
/// subtracted), times `scale` when given (broadcast against those dims).
absl::StatusOr<Tensor> rmsNorm(const Tensor &x, const Tensor *scale, int64_t axis,
                               double epsilon);
/// Scaled dot-product attention: q [P.., Sq, D], k [P.., Sk, D], v [P.., Sk, Dv]
/// (k and v may have fewer heads, dim -3, a divisor of q's: query head h
/// reads head h / (q's heads / k's)), `mask` (optional) added to the scores,
/// or boolean: the score where true, -inf where false; broadcast to [P.., Sq,
/// Sk]; per
/// query row, softmax(q . k_j * scale + mask_j) weighs the rows of v. The
/// softmax is ref::softmax's (a row that is all -inf gives NaN), or with
/// `zeroMaskedRows` such a row is 0.
absl::StatusOr<Tensor> attention(const Tensor &q, const Tensor &k, const Tensor &v,
                                 const Tensor *mask, double scale, bool zeroMaskedRows = false);

//===--- Irregular ops ----------------------------------------------------===//

absl::StatusOr<Tensor> gridSample(const Tensor &x, const Tensor &grid, ResizeMode mode,
                                  GridPadding padding, bool alignCorners);
struct RoiAlignParams {
  bool maxMode = false;
  int64_t outputHeight = 1, outputWidth = 1, samplingRatio = 0;
  double spatialScale = 1;
  bool halfPixel = true;
};
absl::StatusOr<Tensor> roiAlign(const Tensor &x, const Tensor &rois,
                                const Tensor &batchIndices, const RoiAlignParams &p);
absl::StatusOr<Tensor> nonMaxSuppression(const Tensor &boxes, const Tensor &scores,
                                         int64_t maxOutputPerClass, double iouThreshold,
                                         std::optional<double> scoreThreshold,
                                         bool centerPointBox);
/// non_max_suppression's selections before they are listed: [batch, classes,
/// boxes], row [b, c] the box indices taken in the order taken, then -1.
absl::StatusOr<Tensor> nmsSelect(const Tensor &boxes, const Tensor &scores,
                                 int64_t maxOutputPerClass, double iouThreshold,
                                 std::optional<double> scoreThreshold, bool centerPointBox);
/// values, indices, inverse_indices, counts.
std::vector<Tensor> unique(const Tensor &x, std::optional<int64_t> axis, bool sorted);
/// Determinants of the square matrices in x's last two dims; an error for any
/// other shape.
absl::StatusOr<Tensor> det(const Tensor &x);
struct Col2ImParams {
  std::vector<int64_t> imageShape, blockShape, strides, dilations, pads;
};
absl::StatusOr<Tensor> col2im(const Tensor &x, const Col2ImParams &p);

} // namespace kiln::ref

#endif // KILN_REFERENCE_KERNELS_H
