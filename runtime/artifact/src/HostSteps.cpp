//===- HostSteps.cpp - typed step tables onto the reference kernels -------===//

#include "kiln/artifact/HostSteps.h"

#include "kiln/reference/Kernels.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cstring>

namespace kiln::artifact {
namespace {
namespace fb = kiln::schema;
using Inputs = std::vector<const ref::Tensor *>;

/// An enum value the schema does not define: only a damaged or hostile artifact
/// has one (the reader's structure check does not look inside step tables).
absl::Status badEnum(const char *what, int value) {
  return absl::InvalidArgumentError(absl::StrCat("corrupt artifact: ", what, " ", value));
}

// The function enums are the op table's on both sides (the schema's are generated
// from its rows), so a function maps by name; a value no row has is corrupt.
absl::StatusOr<ref::UnaryFn> unaryFn(fb::UnaryFn f) {
  switch (f) {
#define KILN_UNARY(Fn, ...)                                                                        \
  case fb::UnaryFn::Fn:                                                                            \
    return ref::UnaryFn::Fn;
#include "kiln/ops/ElementwiseOps.def"
  }
  return badEnum("unary function", static_cast<int>(f));
}

absl::StatusOr<ref::BinaryFn> binaryFn(fb::BinaryFn f) {
  switch (f) {
#define KILN_BINARY(Fn, ...)                                                                       \
  case fb::BinaryFn::Fn:                                                                           \
    return ref::BinaryFn::Fn;
#include "kiln/ops/ElementwiseOps.def"
  }
  return badEnum("binary function", static_cast<int>(f));
}

// The schema's enums of ops' attributes are the op table's (kiln/ops/OpEnums.def)
// as the reference kernels' are: every value has its row's number on both sides.
#define KILN_ENUM(Enum, Mnemonic, Summary)                                                        \
  namespace check_##Enum {                                                                         \
  using E = fb::Enum;
#define KILN_CASE(Case, SchemaCase, Number) static_assert(static_cast<int>(E::SchemaCase) == Number);
#define KILN_END_ENUM() }
#include "kiln/ops/OpEnums.def"

/// A schema enum's value as the op table's enum, or corrupt where no row has
/// its number ("corrupt artifact: coordinate_mode 9").
template <typename Enum, typename Schema> absl::StatusOr<Enum> fromSchema(Schema value) {
  std::optional<Enum> e = ops::enumFromNumber<Enum>(static_cast<int>(value));
  if (!e)
    return badEnum(ops::enumMnemonic<Enum>(), static_cast<int>(value));
  return *e;
}

/// A conv's activation: none or ReLU (cuDNN's forms).
absl::StatusOr<bool> isRelu(fb::Activation a) {
  absl::StatusOr<Epilogue> e = fromSchema<Epilogue>(a);
  if (!e.ok())
    return e.status();
  if (*e != Epilogue::none && *e != Epilogue::relu)
    return absl::InvalidArgumentError(absl::StrCat("a conv's activation is none or relu, not ",
                                                   ops::caseName(*e)));
  return *e == Epilogue::relu;
}

absl::StatusOr<ref::DType> dtype(fb::DType t) {
  if (t > fb::DType::MAX)
    return badEnum("dtype", static_cast<int>(t));
  // The schema's DType is the artifact's dtype everywhere (values too); the
  // reader maps values the same way.
  return static_cast<ref::DType>(t);
}

/// A vector's elements copied out bytewise: the verifier checks a vector's
/// length field's alignment, not its 8-byte elements', and a damaged artifact
/// may place them anywhere.
template <typename T> std::vector<T> copied(const flatbuffers::Vector<T> *v) {
  std::vector<T> out(v ? v->size() : 0);
  if (!out.empty())
    std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  return out;
}
std::vector<int64_t> longs(const flatbuffers::Vector<int64_t> *v) { return copied(v); }
std::vector<double> doubles(const flatbuffers::Vector<double> *v) { return copied(v); }

HostResults one(absl::StatusOr<ref::Tensor> t) {
  if (!t.ok())
    return t.status();
  std::vector<ref::Tensor> out;
  out.push_back(std::move(*t));
  return out;
}

/// An artifact's axis for a tensor of `rank` (the IR verified it; a damaged
/// artifact may not have): [-rank, rank), or [-rank-1, rank] where `insert`.
absl::Status axisFits(int64_t axis, int64_t rank, const char *what = "axis") {
  if (axis < -rank || axis >= rank)
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", axis, " is out of range for an input of rank ", rank));
  return absl::OkStatus();
}

absl::Status axesFit(const std::vector<int64_t> &axes, int64_t rank) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (absl::Status s = axisFits(a, rank); !s.ok())
      return s;
    size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (seen[d])
      return absl::InvalidArgumentError(absl::StrCat("axis ", a, " is repeated"));
    seen[d] = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<ref::Tensor> relu(absl::StatusOr<ref::Tensor> r, bool apply) {
  if (r.ok() && apply)
    return ref::binary(ref::BinaryFn::Max, *r, ref::Tensor(r->dtype(), {}));
  return r;
}

absl::StatusOr<ref::Tensor> matmul(const MatMulParams &p, const Inputs &in) {
  ref::Tensor a = p.transposeA ? ref::transposeLastTwo(*in[0]) : *in[0];
  ref::Tensor b = p.transposeB ? ref::transposeLastTwo(*in[1]) : *in[1];
  absl::StatusOr<ref::Tensor> r = ref::matmul(a, b);
  // A float8 product is computed as cuBLASLt's: fp32 sums (ref::matmul's
  // f32 result), alpha, the bias and the activation in fp32, then one
  // rounding to the result's type (float8Result, the bias's type too).
  bool float8 = r.ok() && r->dtype() == ref::DType::f32 && a.dtype() != ref::DType::f32;
  if (r.ok() && p.alpha != 1.0) {
    ref::Tensor alpha(r->dtype(), {});
    alpha.setF(0, p.alpha);
    r = ref::binary(ref::BinaryFn::Mul, *r, alpha);
  }
  if (r.ok() && p.hasBias)
    r = ref::binary(ref::BinaryFn::Add, *r, float8 ? ref::castTensor(*in[2], r->dtype()) : *in[2]);
  if (r.ok() && p.activation != Epilogue::none && p.activation != Epilogue::relu)
    r = ref::activation(p.activation, *r);
  r = relu(std::move(r), p.activation == Epilogue::relu);
  if (r.ok() && float8 && p.float8Result != r->dtype())
    r = ref::castTensor(*r, p.float8Result);
  return r;
}

ref::ConvParams convParams(const flatbuffers::Vector<int64_t> *strides,
                           const flatbuffers::Vector<int64_t> *dilations,
                           const flatbuffers::Vector<int64_t> *pads, int64_t group) {
  ref::ConvParams p;
  p.strides = longs(strides);
  p.dilations = longs(dilations);
  p.pads = longs(pads);
  p.group = group;
  return p;
}

/// The decoding of one step: its table's fields read, its operands counted.
class Decoder {
public:
  Decoder(const StepInfo &step) : step(step), table(*step.table) {}

  absl::StatusOr<HostStep> decode();

private:
  const StepInfo &step;
  const fb::Step &table;

  absl::Status operands(size_t least, size_t most, size_t results = 1) const {
    if (step.inputs.size() < least || step.inputs.size() > most)
      return absl::InvalidArgumentError(absl::StrCat("corrupt artifact: ", step.label, " takes ",
                                                     least == most ? "" : absl::StrCat(least, "-"),
                                                     most, " inputs, the step has ",
                                                     step.inputs.size()));
    if (step.outputs.size() != results)
      return absl::InvalidArgumentError(absl::StrCat("corrupt artifact: ", step.label, " has ",
                                                     results, " results, the step ",
                                                     step.outputs.size()));
    return absl::OkStatus();
  }

  /// A step of `count` inputs computing one result with `fn`.
  absl::StatusOr<HostStep> simple(size_t count,
                                  std::function<absl::StatusOr<ref::Tensor>(const Inputs &)> fn) {
    if (absl::Status s = operands(count, count); !s.ok())
      return s;
    return HostStep{[fn = std::move(fn)](const Inputs &in) { return one(fn(in)); }, std::nullopt};
  }
};

absl::StatusOr<HostStep> Decoder::decode() {
  switch (step.op) {
  case fb::StepOp::MatMul: {
    const fb::MatMul &t = *table.op_as_MatMul();
    MatMulParams p;
    p.transposeA = t.transpose_a();
    p.transposeB = t.transpose_b();
    p.alpha = t.alpha();
    p.hasBias = t.has_bias();
    p.allowTf32 = t.allow_tf32();
    absl::StatusOr<ref::DType> float8Result = dtype(t.float8_result());
    if (!float8Result.ok())
      return float8Result.status();
    p.float8Result = *float8Result;
    absl::StatusOr<Epilogue> e = fromSchema<Epilogue>(t.activation());
    if (!e.ok())
      return e.status();
    p.activation = *e;
    size_t count = p.hasBias ? 3 : 2;
    if (absl::Status s = operands(count, count); !s.ok())
      return s;
    return HostStep{[p](const Inputs &in) { return one(matmul(p, in)); }, p};
  }
  case fb::StepOp::Conv: {
    const fb::Conv &t = *table.op_as_Conv();
    ref::ConvParams p = convParams(t.strides(), t.dilations(), t.pads(), t.group());
    p.channelsLast = t.channels_last();
    absl::StatusOr<bool> r = isRelu(t.activation());
    if (!r.ok())
      return r.status();
    bool bias = t.has_bias(), residual = t.has_residual();
    size_t count = 2 + (bias ? 1 : 0) + (residual ? 1 : 0);
    absl::StatusOr<HostStep> decoded =
        simple(count, [p, bias, residual, relu = *r](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
          absl::StatusOr<ref::Tensor> y = ref::conv(*in[0], *in[1], bias ? in[2] : nullptr, p);
          if (y.ok() && residual) {
            const ref::Tensor &z = *in[bias ? 3 : 2];
            if (z.shape() != y->shape())
              return absl::InvalidArgumentError("the residual's dims are not the conv result's");
            y = ref::binary(ref::BinaryFn::Add, *y, z);
          }
          return kiln::artifact::relu(std::move(y), relu);
        });
    if (decoded.ok())
      decoded->conv = ConvStepParams{p, bias, *r, t.allow_tf32(), residual};
    return decoded;
  }
  case fb::StepOp::ConvTranspose: {
    const fb::ConvTranspose &t = *table.op_as_ConvTranspose();
    ref::ConvParams p = convParams(t.strides(), t.dilations(), t.pads(), t.group());
    p.outputPadding = longs(t.output_padding());
    bool bias = t.has_bias();
    absl::StatusOr<HostStep> decoded = simple(bias ? 3 : 2, [p, bias](const Inputs &in) {
      return ref::convTranspose(*in[0], *in[1], bias ? in[2] : nullptr, p);
    });
    if (decoded.ok())
      decoded->convTranspose = ConvStepParams{p, bias, false, t.allow_tf32()};
    return decoded;
  }
  case fb::StepOp::Pool: {
    const fb::Pool &t = *table.op_as_Pool();
    absl::StatusOr<ref::PoolKind> kind = fromSchema<ref::PoolKind>(t.kind());
    if (!kind.ok())
      return kind.status();
    ref::PoolParams p;
    p.kind = *kind;
    p.kernel = longs(t.kernel_shape());
    p.strides = longs(t.strides());
    p.pads = longs(t.pads());
    p.dilations = longs(t.dilations());
    p.ceilMode = t.ceil_mode();
    p.countIncludePad = t.count_include_pad();
    p.p = t.p();
    p.channelsLast = t.channels_last();
    absl::StatusOr<HostStep> decoded = simple(1, [p](const Inputs &in) { return ref::pool(*in[0], p); });
    if (decoded.ok())
      decoded->pool = p;
    return decoded;
  }
  case fb::StepOp::Unary: {
    absl::StatusOr<ref::UnaryFn> f = unaryFn(table.op_as_Unary()->fn());
    if (!f.ok())
      return f.status();
    return simple(1, [f = *f](const Inputs &in) { return ref::unary(f, *in[0]); });
  }
  case fb::StepOp::Binary: {
    absl::StatusOr<ref::BinaryFn> f = binaryFn(table.op_as_Binary()->fn());
    if (!f.ok())
      return f.status();
    return simple(2, [f = *f](const Inputs &in) { return ref::binary(f, *in[0], *in[1]); });
  }
  case fb::StepOp::Compare: {
    absl::StatusOr<ref::CompareFn> f = fromSchema<ref::CompareFn>(table.op_as_Compare()->direction());
    if (!f.ok())
      return f.status();
    return simple(2, [f = *f](const Inputs &in) { return ref::compare(f, *in[0], *in[1]); });
  }
  case fb::StepOp::Select:
    return simple(3, [](const Inputs &in) { return ref::select(*in[0], *in[1], *in[2]); });
  case fb::StepOp::Cast: {
    const fb::Cast &t = *table.op_as_Cast();
    absl::StatusOr<ref::DType> to = dtype(t.to());
    if (!to.ok())
      return to.status();
    bool saturate = t.saturate();
    return simple(1, [to = *to, saturate](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      return ref::castTensor(*in[0], to, saturate);
    });
  }
  case fb::StepOp::Bitcast: {
    absl::StatusOr<ref::DType> to = dtype(table.op_as_Bitcast()->to());
    if (!to.ok())
      return to.status();
    return simple(1, [to = *to](const Inputs &in) { return ref::bitcast(*in[0], to); });
  }
  case fb::StepOp::Range:
    return simple(3, [](const Inputs &in) { return ref::range(*in[0], *in[1], *in[2]); });
  case fb::StepOp::Reshape: {
    absl::StatusOr<HostStep> decoded = simple(
        2, [](const Inputs &in) { return ref::reshape(*in[0], ref::integerValues(*in[1])); });
    if (decoded.ok())
      decoded->reshape = true;
    return decoded;
  }
  case fb::StepOp::Transpose: {
    std::vector<int64_t> perm = longs(table.op_as_Transpose()->permutation());
    return simple(1, [perm](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t d = 0; d < sorted.size(); ++d)
        if (sorted[d] != static_cast<int64_t>(d))
          sorted.clear();
      if (static_cast<int64_t>(perm.size()) != in[0]->rank() || sorted.size() != perm.size())
        return absl::InvalidArgumentError("the permutation does not fit the input's rank");
      return ref::transpose(*in[0], perm);
    });
  }
  case fb::StepOp::BroadcastTo:
    return simple(
        2, [](const Inputs &in) { return ref::broadcastTo(*in[0], ref::integerValues(*in[1])); });
  case fb::StepOp::Concat: {
    int64_t axis = table.op_as_Concat()->axis();
    if (absl::Status s = operands(1, SIZE_MAX); !s.ok())
      return s;
    return HostStep{[axis](const Inputs &in) -> HostResults {
                      for (const ref::Tensor *t : in)
                        if (absl::Status s = axisFits(axis, t->rank()); !s.ok())
                          return s;
                      return one(ref::concat(in, axis));
                    },
                    std::nullopt};
  }
  case fb::StepOp::Slice:
    return simple(4, [](const Inputs &in) {
      return ref::slice(*in[0], ref::integerValues(*in[1]), ref::integerValues(*in[2]),
                        ref::integerValues(*in[3]));
    });
  case fb::StepOp::Gather: {
    int64_t axis = table.op_as_Gather()->axis();
    return simple(2, [axis](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
        return s;
      return ref::gather(*in[0], *in[1], axis);
    });
  }
  case fb::StepOp::Pad: {
    absl::StatusOr<ref::PadMode> mode = fromSchema<ref::PadMode>(table.op_as_Pad()->mode());
    if (!mode.ok())
      return mode.status();
    return simple(3, [mode = *mode](const Inputs &in) {
      return ref::pad(*in[0], ref::integerValues(*in[1]), mode, *in[2]);
    });
  }
  case fb::StepOp::GatherElements: {
    int64_t axis = table.op_as_GatherElements()->axis();
    return simple(2,
                  [axis](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
                    if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
                      return s;
                    return ref::gatherElements(*in[0], *in[1], axis);
                  });
  }
  case fb::StepOp::ScatterElements: {
    const fb::ScatterElements &t = *table.op_as_ScatterElements();
    absl::StatusOr<ref::ScatterReduction> r = fromSchema<ref::ScatterReduction>(t.reduction());
    if (!r.ok())
      return r.status();
    int64_t axis = t.axis();
    return simple(3, [axis, r = *r](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
        return s;
      return ref::scatterElements(*in[0], *in[1], *in[2], axis, r);
    });
  }
  case fb::StepOp::GatherND: {
    int64_t batchDims = table.op_as_GatherND()->batch_dims();
    return simple(
        2, [batchDims](const Inputs &in) { return ref::gatherND(*in[0], *in[1], batchDims); });
  }
  case fb::StepOp::ScatterND: {
    absl::StatusOr<ref::ScatterReduction> r =
        fromSchema<ref::ScatterReduction>(table.op_as_ScatterND()->reduction());
    if (!r.ok())
      return r.status();
    return simple(3,
                  [r = *r](const Inputs &in) { return ref::scatterND(*in[0], *in[1], *in[2], r); });
  }
  case fb::StepOp::NonZero:
    return simple(
        1, [](const Inputs &in) -> absl::StatusOr<ref::Tensor> { return ref::nonZero(*in[0]); });
  case fb::StepOp::Compress: {
    const fb::Compress &t = *table.op_as_Compress();
    std::optional<int64_t> axis;
    if (t.has_axis())
      axis = t.axis();
    return simple(2, [axis](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (axis)
        if (absl::Status s = axisFits(*axis, in[0]->rank()); !s.ok())
          return s;
      return ref::compress(*in[0], *in[1], axis);
    });
  }
  case fb::StepOp::Resize: {
    const fb::Resize &t = *table.op_as_Resize();
    absl::StatusOr<ref::ResizeMode> mode = fromSchema<ref::ResizeMode>(t.mode());
    absl::StatusOr<ref::CoordinateMode> coordinates =
        fromSchema<ref::CoordinateMode>(t.coordinate_mode());
    absl::StatusOr<ref::NearestMode> nearest = fromSchema<ref::NearestMode>(t.nearest_mode());
    for (const absl::Status &s : {mode.status(), coordinates.status(), nearest.status()})
      if (!s.ok())
        return s;
    ref::ResizeParams p;
    p.mode = *mode;
    p.coordinateMode = *coordinates;
    p.nearestMode = *nearest;
    p.scales = doubles(t.scales());
    p.roi = doubles(t.roi());
    p.cubicCoeffA = t.cubic_coeff_a();
    p.excludeOutside = t.exclude_outside();
    p.extrapolationValue = t.extrapolation_value();
    p.antialias = t.antialias();
    return simple(2, [p](const Inputs &in) {
      ref::ResizeParams q = p;
      q.size = ref::integerValues(*in[1]);
      return ref::resize(*in[0], q);
    });
  }
  case fb::StepOp::Reduce: {
    const fb::Reduce &t = *table.op_as_Reduce();
    absl::StatusOr<ref::ReduceKind> kind = fromSchema<ref::ReduceKind>(t.kind());
    if (!kind.ok())
      return kind.status();
    std::vector<int64_t> axes = longs(t.axes());
    bool keep = t.keep_dims();
    return simple(1, [kind = *kind, axes, keep](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (absl::Status s = axesFit(axes, in[0]->rank()); !s.ok())
        return s;
      return ref::reduce(*in[0], kind, axes, keep);
    });
  }
  case fb::StepOp::ArgReduce: {
    const fb::ArgReduce &t = *table.op_as_ArgReduce();
    absl::StatusOr<ref::ArgReduceKind> kind = fromSchema<ref::ArgReduceKind>(t.kind());
    if (!kind.ok())
      return kind.status();
    int64_t axis = t.axis();
    bool keep = t.keep_dims(), last = t.select_last_index();
    return simple(1, [kind = *kind, axis, keep, last](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
        return s;
      return ref::argReduce(*in[0], kind, axis, keep, last);
    });
  }
  case fb::StepOp::Cumulative: {
    const fb::Cumulative &t = *table.op_as_Cumulative();
    absl::StatusOr<ref::CumulativeKind> kind = fromSchema<ref::CumulativeKind>(t.kind());
    if (!kind.ok())
      return kind.status();
    int64_t axis = t.axis();
    bool exclusive = t.exclusive(), reverse = t.reverse();
    return simple(
        1, [kind = *kind, axis, exclusive, reverse](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
          if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
            return s;
          return ref::cumulative(*in[0], kind, axis, exclusive, reverse);
        });
  }
  case fb::StepOp::TopK: {
    const fb::TopK &t = *table.op_as_TopK();
    if (absl::Status s = operands(2, 2, 2); !s.ok())
      return s;
    int64_t axis = t.axis();
    bool largest = t.largest(), sorted = t.sorted();
    return HostStep{[axis, largest, sorted](const Inputs &in) -> HostResults {
                      if (in[1]->numel() != 1)
                        return absl::InvalidArgumentError("k must hold one value");
                      if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
                        return s;
                      auto r = ref::topK(*in[0], in[1]->getI(0), axis, largest, sorted);
                      if (!r.ok())
                        return r.status();
                      std::vector<ref::Tensor> out;
                      out.push_back(std::move(r->first));
                      out.push_back(std::move(r->second));
                      return out;
                    },
                    std::nullopt};
  }
  case fb::StepOp::Softmax: {
    const fb::Softmax &t = *table.op_as_Softmax();
    int64_t axis = t.axis();
    bool logarithm = t.logarithm();
    return simple(1, [axis, logarithm](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
        return s;
      return ref::softmax(*in[0], axis, logarithm);
    });
  }
  case fb::StepOp::LayerNorm: {
    const fb::LayerNorm &t = *table.op_as_LayerNorm();
    int64_t axis = t.axis();
    // The IR's epsilon is an f32 attribute: the reference rounds it as the IR does.
    double epsilon = static_cast<float>(t.epsilon());
    bool bias = t.has_bias();
    return simple(bias ? 3 : 2, [axis, epsilon, bias](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
        return s;
      return ref::layerNorm(*in[0], *in[1], bias ? in[2] : nullptr, axis, epsilon);
    });
  }
  case fb::StepOp::RmsNorm: {
    const fb::RmsNorm &t = *table.op_as_RmsNorm();
    int64_t axis = t.axis();
    double epsilon = static_cast<float>(t.epsilon()); // an f32 attribute, as LayerNorm's
    bool scale = t.has_scale();
    return simple(scale ? 2 : 1, [axis, epsilon, scale](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
        return s;
      return ref::rmsNorm(*in[0], scale ? in[1] : nullptr, axis, epsilon);
    });
  }
  case fb::StepOp::CacheUpdate: {
    int64_t axis = table.op_as_CacheUpdate()->axis();
    return simple(3, [axis](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
        return s;
      if (in[2]->numel() != 1)
        return absl::InvalidArgumentError("cache_update: the offset must hold one value");
      return ref::cacheUpdate(*in[0], *in[1], in[2]->getI(0), axis);
    });
  }
  case fb::StepOp::CacheWrite: {
    const fb::CacheWrite &t = *table.op_as_CacheWrite();
    int64_t axis = t.axis();
    bool zeroTail = t.zero_tail();
    return simple(3, [axis, zeroTail](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
        return s;
      return ref::cacheWrite(*in[0], *in[1], *in[2], axis, zeroTail);
    });
  }
  case fb::StepOp::CacheWriteCircular: {
    int64_t axis = table.op_as_CacheWriteCircular()->axis();
    return simple(3, [axis](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
      if (absl::Status s = axisFits(axis, in[0]->rank()); !s.ok())
        return s;
      return ref::cacheWrite(*in[0], *in[1], *in[2], axis, /*zeroTail=*/false, /*circular=*/true);
    });
  }
  case fb::StepOp::GridSample: {
    const fb::GridSample &t = *table.op_as_GridSample();
    absl::StatusOr<ref::ResizeMode> mode = fromSchema<ref::ResizeMode>(t.mode());
    absl::StatusOr<ref::GridPadding> padding = fromSchema<ref::GridPadding>(t.padding());
    for (const absl::Status &s : {mode.status(), padding.status()})
      if (!s.ok())
        return s;
    bool align = t.align_corners();
    return simple(2, [mode = *mode, padding = *padding, align](const Inputs &in) {
      return ref::gridSample(*in[0], *in[1], mode, padding, align);
    });
  }
  case fb::StepOp::RoiAlign: {
    const fb::RoiAlign &t = *table.op_as_RoiAlign();
    ref::RoiAlignParams p;
    p.maxMode = t.max_mode();
    p.outputHeight = t.output_height();
    p.outputWidth = t.output_width();
    p.samplingRatio = t.sampling_ratio();
    p.spatialScale = static_cast<float>(t.spatial_scale());
    p.halfPixel = t.half_pixel();
    return simple(3, [p](const Inputs &in) { return ref::roiAlign(*in[0], *in[1], *in[2], p); });
  }
  case fb::StepOp::NonMaxSuppression: {
    const fb::NonMaxSuppression &t = *table.op_as_NonMaxSuppression();
    bool center = t.center_point_box(), hasScore = t.has_score_threshold();
    return simple(hasScore ? 5 : 4,
                  [center, hasScore](const Inputs &in) -> absl::StatusOr<ref::Tensor> {
                    for (size_t i = 2; i < in.size(); ++i)
                      if (in[i]->numel() != 1)
                        return absl::InvalidArgumentError("scalar operands must hold one value");
                    std::optional<double> scoreThreshold;
                    if (hasScore)
                      scoreThreshold = in[4]->getF(0);
                    return ref::nonMaxSuppression(*in[0], *in[1], in[2]->getI(0), in[3]->getF(0),
                                                  scoreThreshold, center);
                  });
  }
  case fb::StepOp::Unique: {
    const fb::Unique &t = *table.op_as_Unique();
    if (absl::Status s = operands(1, 1, 4); !s.ok())
      return s;
    std::optional<int64_t> axis;
    if (t.has_axis())
      axis = t.axis();
    bool sorted = t.sorted();
    return HostStep{[axis, sorted](const Inputs &in) -> HostResults {
                      if (axis)
                        if (absl::Status s = axisFits(*axis, in[0]->rank()); !s.ok())
                          return s;
                      return ref::unique(*in[0], axis, sorted);
                    },
                    std::nullopt};
  }
  case fb::StepOp::Det:
    return simple(1,
                  [](const Inputs &in) -> absl::StatusOr<ref::Tensor> { return ref::det(*in[0]); });
  case fb::StepOp::Col2Im: {
    const fb::Col2Im &t = *table.op_as_Col2Im();
    ref::Col2ImParams p;
    p.imageShape = longs(t.image_shape());
    p.blockShape = longs(t.block_shape());
    p.strides = longs(t.strides());
    p.dilations = longs(t.dilations());
    p.pads = longs(t.pads());
    return simple(1, [p](const Inputs &in) { return ref::col2im(*in[0], p); });
  }
  case fb::StepOp::NONE:
  case fb::StepOp::KernelLaunch:
  case fb::StepOp::KernelInPlace:
  case fb::StepOp::SymbolicConstant:
  case fb::StepOp::ShapeOf:
  case fb::StepOp::If:
  case fb::StepOp::Loop:
  case fb::StepOp::Scan:
  case fb::StepOp::ReadSizes:
  case fb::StepOp::View:
  case fb::StepOp::Check: break;
  }
  return absl::InternalError(absl::StrCat(step.label, " is not a host step"));
}

} // namespace

absl::StatusOr<HostStep> decodeHostStep(const StepInfo &step, size_t index) {
  absl::StatusOr<HostStep> decoded = Decoder(step).decode();
  if (!decoded.ok())
    return absl::Status(decoded.status().code(), absl::StrCat("step ", index, " (", step.label,
                                                              "): ", decoded.status().message()));
  return decoded;
}

} // namespace kiln::artifact
