//===- ReferenceOps.cpp - typed kiln ops onto the reference kernels -------===//
//
// The interpreter's own dispatch: each kiln op, read through its ODS accessors,
// calls its reference kernel. It shares the kernels with the runtime's host
// steps and nothing else (the runtime decodes artifact tables in
// runtime/src/HostSteps.cpp), so the interpreter stays an independent oracle for
// the artifact path.
//
//===----------------------------------------------------------------------===//

#include "interpreter/ReferenceOps.h"

#include "interpreter/Interpreter.h"
#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/OpTables.h"
#include "kiln/reference/Kernels.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln {
namespace {

using Results = absl::StatusOr<std::vector<ref::Tensor>>;
using Inputs = ArrayRef<const ref::Tensor *>;

/// non_max_suppression's one-element operands, from in[first] on: the most
/// boxes per class, the overlap threshold and, when given, the score threshold.
struct NmsScalars {
  int64_t maxOutput = 0;
  double iouThreshold = 0;
  std::optional<double> scoreThreshold;
};
absl::StatusOr<NmsScalars> nmsScalars(Inputs in, size_t first, bool hasScoreThreshold) {
  for (size_t i = first; i < in.size(); ++i)
    if (in[i]->numel() != 1)
      return absl::InvalidArgumentError("scalar operands must hold one value");
  NmsScalars s{in[first]->getI(0), in[first + 1]->getF(0), std::nullopt};
  if (hasScoreThreshold)
    s.scoreThreshold = in[first + 2]->getF(0);
  return s;
}

// ODS enums onto the reference kernels' enums, value by value.

ref::CompareFn compareFn(CompareDirection d) {
  switch (d) {
  case CompareDirection::eq: return ref::CompareFn::eq;
  case CompareDirection::ne: return ref::CompareFn::ne;
  case CompareDirection::lt: return ref::CompareFn::lt;
  case CompareDirection::le: return ref::CompareFn::le;
  case CompareDirection::gt: return ref::CompareFn::gt;
  case CompareDirection::ge: return ref::CompareFn::ge;
  }
  llvm_unreachable("compare direction");
}

ref::ReduceKind reduceKind(ReduceKind k) {
  switch (k) {
  case ReduceKind::sum: return ref::ReduceKind::sum;
  case ReduceKind::prod: return ref::ReduceKind::prod;
  case ReduceKind::max: return ref::ReduceKind::max;
  case ReduceKind::min: return ref::ReduceKind::min;
  case ReduceKind::mean: return ref::ReduceKind::mean;
  case ReduceKind::any: return ref::ReduceKind::any;
  case ReduceKind::all: return ref::ReduceKind::all;
  }
  llvm_unreachable("reduce kind");
}

ref::ScatterReduction scatterReduction(ScatterReduction r) {
  switch (r) {
  case ScatterReduction::none: return ref::ScatterReduction::none;
  case ScatterReduction::add: return ref::ScatterReduction::add;
  case ScatterReduction::mul: return ref::ScatterReduction::mul;
  case ScatterReduction::max: return ref::ScatterReduction::max;
  case ScatterReduction::min: return ref::ScatterReduction::min;
  }
  llvm_unreachable("scatter reduction");
}

ref::PoolKind poolKind(PoolKind k) {
  switch (k) {
  case PoolKind::max: return ref::PoolKind::max;
  case PoolKind::avg: return ref::PoolKind::avg;
  case PoolKind::lp: return ref::PoolKind::lp;
  }
  llvm_unreachable("pool kind");
}

ref::PadMode padMode(PadMode m) {
  switch (m) {
  case PadMode::constant: return ref::PadMode::constant;
  case PadMode::reflect: return ref::PadMode::reflect;
  case PadMode::edge: return ref::PadMode::edge;
  case PadMode::wrap: return ref::PadMode::wrap;
  }
  llvm_unreachable("pad mode");
}

ref::ResizeMode resizeMode(ResizeMode m) {
  switch (m) {
  case ResizeMode::nearest: return ref::ResizeMode::nearest;
  case ResizeMode::linear: return ref::ResizeMode::linear;
  case ResizeMode::cubic: return ref::ResizeMode::cubic;
  }
  llvm_unreachable("resize mode");
}

ref::CoordinateMode coordinateMode(CoordinateMode m) {
  switch (m) {
  case CoordinateMode::half_pixel: return ref::CoordinateMode::half_pixel;
  case CoordinateMode::half_pixel_symmetric: return ref::CoordinateMode::half_pixel_symmetric;
  case CoordinateMode::pytorch_half_pixel: return ref::CoordinateMode::pytorch_half_pixel;
  case CoordinateMode::align_corners: return ref::CoordinateMode::align_corners;
  case CoordinateMode::asymmetric: return ref::CoordinateMode::asymmetric;
  case CoordinateMode::tf_crop_and_resize: return ref::CoordinateMode::tf_crop_and_resize;
  }
  llvm_unreachable("coordinate mode");
}

ref::NearestMode nearestMode(NearestMode m) {
  switch (m) {
  case NearestMode::round_prefer_floor: return ref::NearestMode::round_prefer_floor;
  case NearestMode::round_prefer_ceil: return ref::NearestMode::round_prefer_ceil;
  case NearestMode::floor: return ref::NearestMode::floor;
  case NearestMode::ceil: return ref::NearestMode::ceil;
  }
  llvm_unreachable("nearest mode");
}

ref::GridPadding gridPadding(GridPadding p) {
  switch (p) {
  case GridPadding::zeros: return ref::GridPadding::zeros;
  case GridPadding::border: return ref::GridPadding::border;
  case GridPadding::reflection: return ref::GridPadding::reflection;
  }
  llvm_unreachable("grid padding");
}

Results one(absl::StatusOr<ref::Tensor> t) {
  if (!t.ok())
    return t.status();
  std::vector<ref::Tensor> out;
  out.push_back(std::move(*t));
  return out;
}

absl::StatusOr<ref::Tensor> withActivation(absl::StatusOr<ref::Tensor> r, Activation a) {
  switch (a) {
  case Activation::none: return r;
  case Activation::relu:
    if (!r.ok())
      return r;
    return ref::binary(ref::BinaryFn::Max, *r, ref::Tensor(r->dtype(), {}));
  case Activation::gelu_tanh:
    if (!r.ok())
      return r;
    return ref::geluTanh(*r);
  }
  llvm_unreachable("activation");
}

std::vector<int64_t> vec(ArrayRef<int64_t> v) { return {v.begin(), v.end()}; }

absl::Status noKernels(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << "the reference interpreter has no kernels for '" << type << "'";
  return absl::InvalidArgumentError(text);
}

ref::ConvParams convParams(ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                           ArrayRef<int64_t> pads, int64_t group) {
  ref::ConvParams p;
  p.strides = vec(strides);
  p.dilations = vec(dilations);
  p.pads = vec(pads);
  p.group = group;
  return p;
}

} // namespace

std::optional<absl::StatusOr<std::vector<ref::Tensor>>> runReferenceOp(Operation *op, Inputs in) {
  auto optional = [&](size_t i) { return i < in.size() ? in[i] : nullptr; };
  if (std::optional<ops::UnaryFn> fn = unaryFnOf(op))
    return one(ref::unary(*fn, *in[0]));
  if (std::optional<ops::BinaryFn> fn = binaryFnOf(op))
    return one(ref::binary(*fn, *in[0], *in[1]));

  return llvm::TypeSwitch<Operation *, std::optional<Results>>(op)
      .Case([&](CompareOp c) {
        return one(ref::compare(compareFn(c.getDirection()), *in[0], *in[1]));
      })
      .Case([&](SelectOp) { return one(ref::select(*in[0], *in[1], *in[2])); })
      .Case([&](CastOp c) -> Results {
        std::optional<ref::DType> to = toRefType(c.getTo());
        if (!to)
          return noKernels(c.getTo());
        return one(ref::castTensor(*in[0], *to, c.getSaturate()));
      })
      .Case([&](BitcastOp c) -> Results {
        std::optional<ref::DType> to = toRefType(c.getTo());
        if (!to)
          return noKernels(c.getTo());
        return one(ref::bitcast(*in[0], *to));
      })
      .Case([&](RangeOp) { return one(ref::range(*in[0], *in[1], *in[2])); })
      .Case([&](ReshapeOp) { return one(ref::reshape(*in[0], ref::integerValues(*in[1]))); })
      .Case([&](TransposeOp t) { return one(ref::transpose(*in[0], vec(t.getPermutation()))); })
      .Case(
          [&](BroadcastToOp) { return one(ref::broadcastTo(*in[0], ref::integerValues(*in[1]))); })
      .Case([&](ConcatOp c) {
        return one(ref::concat(std::vector<const ref::Tensor *>(in.begin(), in.end()),
                               static_cast<int64_t>(c.getAxis())));
      })
      .Case([&](SliceOp) {
        return one(ref::slice(*in[0], ref::integerValues(*in[1]), ref::integerValues(*in[2]),
                              ref::integerValues(*in[3])));
      })
      .Case([&](GatherOp g) {
        return one(ref::gather(*in[0], *in[1], static_cast<int64_t>(g.getAxis())));
      })
      .Case([&](PadOp p) {
        return one(ref::pad(*in[0], ref::integerValues(*in[1]), padMode(p.getMode()), *in[2]));
      })
      .Case([&](GatherElementsOp g) {
        return one(ref::gatherElements(*in[0], *in[1], static_cast<int64_t>(g.getAxis())));
      })
      .Case([&](ScatterElementsOp s) {
        return one(ref::scatterElements(*in[0], *in[1], *in[2], static_cast<int64_t>(s.getAxis()),
                                        scatterReduction(s.getReduction())));
      })
      .Case([&](GatherNDOp g) {
        return one(ref::gatherND(*in[0], *in[1], static_cast<int64_t>(g.getBatchDims())));
      })
      .Case([&](ScatterNDOp s) {
        return one(ref::scatterND(*in[0], *in[1], *in[2], scatterReduction(s.getReduction())));
      })
      .Case([&](NonZeroOp) { return one(ref::nonZero(*in[0])); })
      .Case([&](CountNonZeroOp c) {
        return one(ref::countNonZeroChunks(*in[0], static_cast<int64_t>(c.getChunks())));
      })
      // The count it is sized by was read from the chunk counts; the result's
      // dims are checked against it where the interpreter defines the value.
      .Case([&](CompactNonZeroOp) { return one(ref::nonZero(*in[0])); })
      .Case([&](CompressOp c) {
        std::optional<int64_t> axis;
        if (std::optional<uint64_t> a = c.getAxis())
          axis = static_cast<int64_t>(*a);
        return one(ref::compress(*in[0], *in[1], axis));
      })
      .Case([&](ResizeOp r) {
        ref::ResizeParams p;
        p.size = ref::integerValues(*in[1]);
        p.mode = resizeMode(r.getMode());
        p.coordinateMode = coordinateMode(r.getCoordinateMode());
        p.nearestMode = nearestMode(r.getNearestMode());
        p.scales.assign(r.getScales().begin(), r.getScales().end());
        p.roi.assign(r.getRoi().begin(), r.getRoi().end());
        p.cubicCoeffA = r.getCubicCoeffA().convertToFloat();
        p.excludeOutside = r.getExcludeOutside();
        p.extrapolationValue = r.getExtrapolationValue().convertToFloat();
        p.antialias = r.getAntialias();
        return one(ref::resize(*in[0], p));
      })
      .Case([&](ReduceOp r) {
        return one(ref::reduce(*in[0], reduceKind(r.getKind()), vec(r.getAxes()), r.getKeepDims()));
      })
      .Case([&](ArgReduceOp r) {
        ref::ArgReduceKind kind = r.getKind() == ArgReduceKind::argmax ? ref::ArgReduceKind::argmax
                                                                       : ref::ArgReduceKind::argmin;
        return one(ref::argReduce(*in[0], kind, static_cast<int64_t>(r.getAxis()), r.getKeepDims(),
                                  r.getSelectLastIndex()));
      })
      .Case([&](CumulativeOp c) {
        ref::CumulativeKind kind = c.getKind() == CumulativeKind::sum ? ref::CumulativeKind::sum
                                                                      : ref::CumulativeKind::prod;
        return one(ref::cumulative(*in[0], kind, static_cast<int64_t>(c.getAxis()),
                                   c.getExclusive(), c.getReverse()));
      })
      .Case([&](TopKOp t) -> Results {
        if (in[1]->numel() != 1)
          return absl::InvalidArgumentError("k must hold one value");
        auto r = ref::topK(*in[0], in[1]->getI(0), static_cast<int64_t>(t.getAxis()),
                           t.getLargest(), t.getSorted());
        if (!r.ok())
          return r.status();
        std::vector<ref::Tensor> out;
        out.push_back(std::move(r->first));
        out.push_back(std::move(r->second));
        return out;
      })
      .Case([&](MatmulOp m) {
        auto operand = [](const ref::Tensor &t, bool transposed) {
          return transposed ? ref::transposeLastTwo(t) : t;
        };
        absl::StatusOr<ref::Tensor> r = ref::matmul(operand(*in[0], m.getTransposeLhs()),
                                                    operand(*in[1], m.getTransposeRhs()));
        if (r.ok() && m.getBias())
          r = ref::binary(ref::BinaryFn::Add, *r, *in[2]);
        return one(withActivation(std::move(r), m.getActivation()));
      })
      .Case([&](ConvOp c) {
        ref::ConvParams p = convParams(c.getStrides(), c.getDilations(), c.getPads(),
                                       static_cast<int64_t>(c.getGroup()));
        p.channelsLast = c.getChannelsLast();
        const ref::Tensor *bias = c.getBias() ? in[2] : nullptr;
        absl::StatusOr<ref::Tensor> r = ref::conv(*in[0], *in[1], bias, p);
        if (r.ok() && c.getResidual())
          r = ref::binary(ref::BinaryFn::Add, *r, *in[bias ? 3 : 2]);
        return one(withActivation(std::move(r), c.getActivation()));
      })
      .Case([&](ConvTransposeOp c) {
        ref::ConvParams p = convParams(c.getStrides(), c.getDilations(), c.getPads(),
                                       static_cast<int64_t>(c.getGroup()));
        p.outputPadding = vec(c.getOutputPadding());
        return one(ref::convTranspose(*in[0], *in[1], optional(2), p));
      })
      .Case([&](PoolOp p) {
        ref::PoolParams params;
        params.kind = poolKind(p.getKind());
        params.kernel = vec(p.getKernelShape());
        params.strides = vec(p.getStrides());
        params.pads = vec(p.getPads());
        params.dilations = vec(p.getDilations());
        params.ceilMode = p.getCeilMode();
        params.countIncludePad = p.getCountIncludePad();
        params.p = static_cast<int64_t>(p.getP());
        params.channelsLast = p.getChannelsLast();
        return one(ref::pool(*in[0], params));
      })
      .Case([&](SoftmaxOp s) {
        return one(ref::softmax(*in[0], static_cast<int64_t>(s.getAxis()), false));
      })
      .Case([&](LogSoftmaxOp s) {
        return one(ref::softmax(*in[0], static_cast<int64_t>(s.getAxis()), true));
      })
      .Case([&](LayerNormOp l) {
        return one(ref::layerNorm(*in[0], *in[1], optional(2), static_cast<int64_t>(l.getAxis()),
                                  l.getEpsilon().convertToFloat()));
      })
      .Case([&](AttentionOp a) {
        return one(
            ref::attention(*in[0], *in[1], *in[2], optional(3), a.getScale().convertToDouble()));
      })
      .Case([&](GridSampleOp g) {
        return one(ref::gridSample(*in[0], *in[1], resizeMode(g.getMode()),
                                   gridPadding(g.getPadding()), g.getAlignCorners()));
      })
      .Case([&](RoiAlignOp r) {
        ref::RoiAlignParams p;
        p.maxMode = r.getMode() == PoolKind::max;
        p.outputHeight = static_cast<int64_t>(r.getOutputHeight());
        p.outputWidth = static_cast<int64_t>(r.getOutputWidth());
        p.samplingRatio = static_cast<int64_t>(r.getSamplingRatio());
        p.spatialScale = r.getSpatialScale().convertToFloat();
        p.halfPixel = r.getHalfPixel();
        return one(ref::roiAlign(*in[0], *in[1], *in[2], p));
      })
      .Case([&](NonMaxSuppressionOp n) -> Results {
        absl::StatusOr<NmsScalars> s = nmsScalars(in, 2, static_cast<bool>(n.getScoreThreshold()));
        if (!s.ok())
          return s.status();
        return one(ref::nonMaxSuppression(*in[0], *in[1], s->maxOutput, s->iouThreshold,
                                          s->scoreThreshold, n.getCenterPointBox()));
      })
      // The rank operand (in[2]) is the order the reference sorts by itself.
      .Case([&](NmsSelectOp n) -> Results {
        absl::StatusOr<NmsScalars> s = nmsScalars(in, 3, static_cast<bool>(n.getScoreThreshold()));
        if (!s.ok())
          return s.status();
        return one(ref::nmsSelect(*in[0], *in[1], s->maxOutput, s->iouThreshold,
                                  s->scoreThreshold, n.getCenterPointBox()));
      })
      .Case([&](UniqueOp u) -> Results {
        std::optional<int64_t> axis;
        if (std::optional<uint64_t> a = u.getAxis())
          axis = static_cast<int64_t>(*a);
        return ref::unique(*in[0], axis, u.getSorted());
      })
      .Case([&](DetOp) { return one(ref::det(*in[0])); })
      .Case([&](Col2ImOp c) {
        ref::Col2ImParams p;
        p.imageShape = vec(c.getImageShape());
        p.blockShape = vec(c.getBlockShape());
        p.strides = vec(c.getStrides());
        p.dilations = vec(c.getDilations());
        p.pads = vec(c.getPads());
        return one(ref::col2im(*in[0], p));
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace kiln
