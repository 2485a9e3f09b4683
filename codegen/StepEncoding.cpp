//===- StepEncoding.cpp - kiln ops as the artifact's typed steps ----------===//

#include "codegen/StepEncoding.h"

#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/OpTables.h"
#include "kiln/ops/Enums.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln {
namespace fb = kiln::schema;

namespace {

// The dialect's enums of ops' attributes and the schema's are expanded from
// the same rows (kiln/ops/OpEnums.def), so a value maps by its number;
// toSchema is one overload per enum, checked value by value here.
#define KILN_ENUM(Enum, Mnemonic, Summary)                                                        \
  [[maybe_unused]] fb::Enum toSchema(Enum value) { return ops::sameEnum<fb::Enum>(value); }        \
  namespace check_##Enum {                                                                         \
  using Ods = ::kiln::Enum;                                                                        \
  using Fb = fb::Enum;
#define KILN_CASE(Case, SchemaCase, Number)                                                       \
  static_assert(static_cast<int>(Ods::Case) == Number &&                                           \
                static_cast<int>(Fb::SchemaCase) == Number);
#define KILN_END_ENUM() }
#include "kiln/ops/OpEnums.def"

/// The schema dtype of `type`, or a diagnostic at `op`.
FailureOr<fb::DType> dtypeOf(Operation *op, Type type) {
  std::optional<ref::DType> t = toRefType(type);
  if (!t)
    return op->emitOpError() << "has no artifact dtype for " << type;
  // The schema's DType lists ref::DType's values in order (asserted in the
  // runtime's reader as well).
  static_assert(static_cast<int>(fb::DType::u2) == static_cast<int>(ref::DType::u2) &&
                    static_cast<int>(fb::DType::f16) == static_cast<int>(ref::DType::f16),
                "the schema's DType must list kiln::ref::DType in order");
  return static_cast<fb::DType>(*t);
}

} // namespace

// The casts of encodeStep: the schema's function enums are the op table's.
#define KILN_UNARY(Fn, Code, ...) static_assert(static_cast<int>(fb::UnaryFn::Fn) == Code);
#define KILN_BINARY(Fn, Code, ...) static_assert(static_cast<int>(fb::BinaryFn::Fn) == Code);
#include "kiln/ops/ElementwiseOps.def"

std::optional<ref::DType> toRefType(Type t) {
  using ref::DType;
  if (t.isF16()) return DType::f16;
  if (t.isBF16()) return DType::bf16;
  if (t.isF32()) return DType::f32;
  if (t.isF64()) return DType::f64;
  if (isa<Float8E4M3FNType>(t)) return DType::f8e4m3fn;
  if (isa<Float8E4M3FNUZType>(t)) return DType::f8e4m3fnuz;
  if (isa<Float8E5M2Type>(t)) return DType::f8e5m2;
  if (isa<Float8E5M2FNUZType>(t)) return DType::f8e5m2fnuz;
  if (isa<Float4E2M1FNType>(t)) return DType::f4e2m1fn;
  auto i = dyn_cast<IntegerType>(t);
  if (!i)
    return std::nullopt;
  bool isU = i.isUnsigned();
  switch (i.getWidth()) {
  case 1: return DType::boolean;
  case 2: return isU ? DType::u2 : DType::i2;
  case 4: return isU ? DType::u4 : DType::i4;
  case 8: return isU ? DType::u8 : DType::i8;
  case 16: return isU ? DType::u16 : DType::i16;
  case 32: return isU ? DType::u32 : DType::i32;
  case 64: return isU ? DType::u64 : DType::i64;
  default: return std::nullopt;
  }
}

bool isHostStepOp(Operation *op) {
  return isa<MatmulOp, ConvOp, ConvTransposeOp, PoolOp, CompareOp, SelectOp, CastOp, BitcastOp,
             RangeOp, ReshapeOp, TransposeOp, BroadcastToOp, ConcatOp, SliceOp, GatherOp, PadOp,
             GatherElementsOp, ScatterElementsOp, GatherNDOp, ScatterNDOp, NonZeroOp, CompressOp,
             ResizeOp, ReduceOp, ArgReduceOp, CumulativeOp, TopKOp, SoftmaxOp, LogSoftmaxOp,
             LayerNormOp, RmsNormOp, CacheUpdateOp, CacheWriteOp, GridSampleOp, RoiAlignOp, NonMaxSuppressionOp, UniqueOp, DetOp,
             Col2ImOp>(op) ||
         unaryFnOf(op) || binaryFnOf(op);
}

namespace {
/// What the step encoders share: the builder, and the function's precision
/// mode as the library steps read it.
struct StepBuilder {
  flatbuffers::FlatBufferBuilder &b;
  bool allowTf32;
  template <typename Table>
  static FailureOr<EncodedStep> step(fb::StepOp type, flatbuffers::Offset<Table> table) {
    return EncodedStep{type, table.Union()};
  }
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> longs(ArrayRef<int64_t> v) {
    return b.CreateVector(v.data(), v.size());
  }
};

/// cuBLASLt's and cuDNN's ops: matmul, conv, conv_transpose, pool.
std::optional<FailureOr<EncodedStep>> encodeLibraryStep(Operation *op, StepBuilder &s) {
  flatbuffers::FlatBufferBuilder &b = s.b;
  auto step = [](fb::StepOp type, auto table) { return StepBuilder::step(type, table); };
  auto longs = [&](ArrayRef<int64_t> v) { return s.longs(v); };
  return llvm::TypeSwitch<Operation *, std::optional<FailureOr<EncodedStep>>>(op)
      .Case([&](MatmulOp m) {
        // A float8 product's result type; f32 (the field's default) otherwise.
        ref::DType float8Result = ref::DType::f32;
        if (m.isFloat8Product())
          float8Result = toRefType(m.getType().getElementType()).value_or(ref::DType::f32);
        return step(fb::StepOp::MatMul,
                    fb::CreateMatMul(b, m.getTransposeLhs(), m.getTransposeRhs(),
                                     m.getAlpha().convertToDouble(),
                                     static_cast<bool>(m.getBias()), toSchema(m.getActivation()),
                                     s.allowTf32, static_cast<fb::DType>(float8Result)));
      })
      .Case([&](ConvOp c) {
        return step(fb::StepOp::Conv,
                    fb::CreateConv(b, longs(c.getStrides()), longs(c.getDilations()),
                                   longs(c.getPads()), static_cast<int64_t>(c.getGroup()),
                                   static_cast<bool>(c.getBias()), toSchema(c.getActivation()),
                                   s.allowTf32, static_cast<bool>(c.getResidual()),
                                   c.getChannelsLast()));
      })
      .Case([&](ConvTransposeOp c) {
        return step(fb::StepOp::ConvTranspose,
                    fb::CreateConvTranspose(b, longs(c.getStrides()), longs(c.getDilations()),
                                            longs(c.getPads()), longs(c.getOutputPadding()),
                                            static_cast<int64_t>(c.getGroup()),
                                            static_cast<bool>(c.getBias()), s.allowTf32));
      })
      .Case([&](PoolOp p) {
        return step(fb::StepOp::Pool,
                    fb::CreatePool(b, toSchema(p.getKind()), longs(p.getKernelShape()),
                                   longs(p.getStrides()), longs(p.getPads()),
                                   longs(p.getDilations()), p.getCeilMode(), p.getCountIncludePad(),
                                   static_cast<int64_t>(p.getP()), p.getChannelsLast()));
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Element-by-element ops the op tables do not hold: compare, select, casts, range.
std::optional<FailureOr<EncodedStep>> encodeElementStep(Operation *op, StepBuilder &s) {
  flatbuffers::FlatBufferBuilder &b = s.b;
  auto step = [](fb::StepOp type, auto table) { return StepBuilder::step(type, table); };
  return llvm::TypeSwitch<Operation *, std::optional<FailureOr<EncodedStep>>>(op)
      .Case([&](CompareOp c) {
        return step(fb::StepOp::Compare, fb::CreateCompare(b, toSchema(c.getDirection())));
      })
      .Case([&](SelectOp) { return step(fb::StepOp::Select, fb::CreateSelect(b)); })
      .Case([&](CastOp c) -> FailureOr<EncodedStep> {
        FailureOr<fb::DType> to = dtypeOf(op, c.getTo());
        if (failed(to))
          return failure();
        return step(fb::StepOp::Cast, fb::CreateCast(b, *to, c.getSaturate()));
      })
      .Case([&](BitcastOp c) -> FailureOr<EncodedStep> {
        FailureOr<fb::DType> to = dtypeOf(op, c.getTo());
        if (failed(to))
          return failure();
        return step(fb::StepOp::Bitcast, fb::CreateBitcast(b, *to));
      })
      .Case([&](RangeOp) { return step(fb::StepOp::Range, fb::CreateRange(b)); })
      .Default([](Operation *) { return std::nullopt; });
}

/// Ops that move elements: reshapes, transposes, gathers, scatters, compactions, resize.
std::optional<FailureOr<EncodedStep>> encodeDataMovementStep(Operation *op, StepBuilder &s) {
  flatbuffers::FlatBufferBuilder &b = s.b;
  auto step = [](fb::StepOp type, auto table) { return StepBuilder::step(type, table); };
  auto longs = [&](ArrayRef<int64_t> v) { return s.longs(v); };
  return llvm::TypeSwitch<Operation *, std::optional<FailureOr<EncodedStep>>>(op)
      .Case([&](ReshapeOp) { return step(fb::StepOp::Reshape, fb::CreateReshape(b)); })
      .Case([&](TransposeOp t) {
        return step(fb::StepOp::Transpose, fb::CreateTranspose(b, longs(t.getPermutation())));
      })
      .Case([&](BroadcastToOp) { return step(fb::StepOp::BroadcastTo, fb::CreateBroadcastTo(b)); })
      .Case([&](ConcatOp c) {
        return step(fb::StepOp::Concat, fb::CreateConcat(b, static_cast<int64_t>(c.getAxis())));
      })
      .Case([&](SliceOp) { return step(fb::StepOp::Slice, fb::CreateSlice(b)); })
      .Case([&](GatherOp g) {
        return step(fb::StepOp::Gather, fb::CreateGather(b, static_cast<int64_t>(g.getAxis())));
      })
      .Case([&](PadOp p) { return step(fb::StepOp::Pad, fb::CreatePad(b, toSchema(p.getMode()))); })
      .Case([&](GatherElementsOp g) {
        return step(fb::StepOp::GatherElements,
                    fb::CreateGatherElements(b, static_cast<int64_t>(g.getAxis())));
      })
      .Case([&](ScatterElementsOp s) {
        return step(fb::StepOp::ScatterElements,
                    fb::CreateScatterElements(b, static_cast<int64_t>(s.getAxis()),
                                              toSchema(s.getReduction())));
      })
      .Case([&](GatherNDOp g) {
        return step(fb::StepOp::GatherND,
                    fb::CreateGatherND(b, static_cast<int64_t>(g.getBatchDims())));
      })
      .Case([&](ScatterNDOp s) {
        return step(fb::StepOp::ScatterND,
                    fb::CreateScatterND(b, toSchema(s.getReduction())));
      })
      .Case([&](NonZeroOp) { return step(fb::StepOp::NonZero, fb::CreateNonZero(b)); })
      .Case([&](CompressOp c) {
        std::optional<uint64_t> axis = c.getAxis();
        return step(
            fb::StepOp::Compress,
            fb::CreateCompress(b, axis.has_value(), static_cast<int64_t>(axis.value_or(0))));
      })
      .Case([&](ResizeOp r) {
        std::vector<double> scales(r.getScales().begin(), r.getScales().end());
        std::vector<double> roi(r.getRoi().begin(), r.getRoi().end());
        return step(fb::StepOp::Resize,
                    fb::CreateResize(b, toSchema(r.getMode()),
                                     toSchema(r.getCoordinateMode()),
                                     toSchema(r.getNearestMode()), b.CreateVector(scales),
                                     b.CreateVector(roi), r.getCubicCoeffA().convertToFloat(),
                                     r.getExcludeOutside(),
                                     r.getExtrapolationValue().convertToFloat(), r.getAntialias()));
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Reductions and row ops: reduce, arg_reduce, cumulative, top_k, softmax, layer_norm.
std::optional<FailureOr<EncodedStep>> encodeReductionStep(Operation *op, StepBuilder &s) {
  flatbuffers::FlatBufferBuilder &b = s.b;
  auto step = [](fb::StepOp type, auto table) { return StepBuilder::step(type, table); };
  auto longs = [&](ArrayRef<int64_t> v) { return s.longs(v); };
  return llvm::TypeSwitch<Operation *, std::optional<FailureOr<EncodedStep>>>(op)
      .Case([&](ReduceOp r) {
        return step(fb::StepOp::Reduce, fb::CreateReduce(b, toSchema(r.getKind()),
                                                         longs(r.getAxes()), r.getKeepDims()));
      })
      .Case([&](ArgReduceOp r) {
        return step(fb::StepOp::ArgReduce,
                    fb::CreateArgReduce(b, toSchema(r.getKind()),
                                        static_cast<int64_t>(r.getAxis()), r.getKeepDims(),
                                        r.getSelectLastIndex()));
      })
      .Case([&](CumulativeOp c) {
        return step(fb::StepOp::Cumulative, fb::CreateCumulative(b, toSchema(c.getKind()),
                                                                 static_cast<int64_t>(c.getAxis()),
                                                                 c.getExclusive(), c.getReverse()));
      })
      .Case([&](TopKOp t) {
        return step(fb::StepOp::TopK, fb::CreateTopK(b, static_cast<int64_t>(t.getAxis()),
                                                     t.getLargest(), t.getSorted()));
      })
      .Case([&](SoftmaxOp s) {
        return step(fb::StepOp::Softmax,
                    fb::CreateSoftmax(b, static_cast<int64_t>(s.getAxis()), false));
      })
      .Case([&](LogSoftmaxOp s) {
        return step(fb::StepOp::Softmax,
                    fb::CreateSoftmax(b, static_cast<int64_t>(s.getAxis()), true));
      })
      .Case([&](LayerNormOp l) {
        return step(fb::StepOp::LayerNorm, fb::CreateLayerNorm(b, static_cast<int64_t>(l.getAxis()),
                                                               l.getEpsilon().convertToFloat(),
                                                               static_cast<bool>(l.getBias())));
      })
      .Case([&](CacheWriteOp w) {
        if (w.getCircular())
          return step(fb::StepOp::CacheWriteCircular,
                      fb::CreateCacheWriteCircular(b, static_cast<int64_t>(w.getAxis())));
        return step(fb::StepOp::CacheWrite,
                    fb::CreateCacheWrite(b, static_cast<int64_t>(w.getAxis()), w.getZeroTail()));
      })
      .Case([&](CacheUpdateOp u) {
        return step(fb::StepOp::CacheUpdate, fb::CreateCacheUpdate(b, static_cast<int64_t>(u.getAxis())));
      })
      .Case([&](RmsNormOp r) {
        return step(fb::StepOp::RmsNorm, fb::CreateRmsNorm(b, static_cast<int64_t>(r.getAxis()),
                                                           r.getEpsilon().convertToFloat(),
                                                           static_cast<bool>(r.getScale())));
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The rest: sampling, detection, unique, det, col2im, shape_of.
std::optional<FailureOr<EncodedStep>> encodeSpecialStep(Operation *op, StepBuilder &s) {
  flatbuffers::FlatBufferBuilder &b = s.b;
  auto step = [](fb::StepOp type, auto table) { return StepBuilder::step(type, table); };
  auto longs = [&](ArrayRef<int64_t> v) { return s.longs(v); };
  return llvm::TypeSwitch<Operation *, std::optional<FailureOr<EncodedStep>>>(op)
      .Case([&](GridSampleOp g) {
        return step(fb::StepOp::GridSample,
                    fb::CreateGridSample(b, toSchema(g.getMode()), toSchema(g.getPadding()),
                                         g.getAlignCorners()));
      })
      .Case([&](RoiAlignOp r) {
        return step(fb::StepOp::RoiAlign,
                    fb::CreateRoiAlign(b, r.getMode() == PoolKind::max,
                                       static_cast<int64_t>(r.getOutputHeight()),
                                       static_cast<int64_t>(r.getOutputWidth()),
                                       static_cast<int64_t>(r.getSamplingRatio()),
                                       r.getSpatialScale().convertToFloat(), r.getHalfPixel()));
      })
      .Case([&](NonMaxSuppressionOp n) {
        return step(fb::StepOp::NonMaxSuppression,
                    fb::CreateNonMaxSuppression(b, n.getCenterPointBox(),
                                                static_cast<bool>(n.getScoreThreshold())));
      })
      .Case([&](UniqueOp u) {
        std::optional<uint64_t> axis = u.getAxis();
        return step(fb::StepOp::Unique,
                    fb::CreateUnique(b, axis.has_value(), static_cast<int64_t>(axis.value_or(0)),
                                     u.getSorted()));
      })
      .Case([&](DetOp) { return step(fb::StepOp::Det, fb::CreateDet(b)); })
      .Case([&](Col2ImOp c) {
        return step(fb::StepOp::Col2Im,
                    fb::CreateCol2Im(b, longs(c.getImageShape()), longs(c.getBlockShape()),
                                     longs(c.getStrides()), longs(c.getDilations()),
                                     longs(c.getPads())));
      })
      .Case([&](ShapeOfOp) { return step(fb::StepOp::ShapeOf, fb::CreateShapeOf(b)); })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace

FailureOr<EncodedStep> encodeStep(Operation *op, flatbuffers::FlatBufferBuilder &b) {
  // kiln-lower-precision marks the function; only tf32 lets libraries round
  // fp32 operands (fp16/bf16 steps have narrow operand types already).
  StepBuilder s{b, precisionOf(op->getParentOp()) == Precision::tf32};

  // The schema's function enums are generated from the op table: same numbers.
  if (std::optional<ops::UnaryFn> fn = unaryFnOf(op))
    return s.step(fb::StepOp::Unary, fb::CreateUnary(b, static_cast<fb::UnaryFn>(*fn)));
  if (std::optional<ops::BinaryFn> fn = binaryFnOf(op))
    return s.step(fb::StepOp::Binary, fb::CreateBinary(b, static_cast<fb::BinaryFn>(*fn)));
  for (auto family : {encodeLibraryStep, encodeElementStep, encodeDataMovementStep,
                      encodeReductionStep, encodeSpecialStep})
    if (std::optional<FailureOr<EncodedStep>> encoded = family(op, s))
      return *encoded;
  return op->emitOpError()
         << "runs neither as a generated kernel nor on the host, so an artifact cannot hold it yet";
}

} // namespace kiln
