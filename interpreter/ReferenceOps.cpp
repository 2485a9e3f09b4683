//===- ReferenceOps.cpp - kiln ops onto the reference kernels -------------===//
//
// How the interpreter computes an op. An op with a step table (every op an
// artifact can run on the host: isHostStepOp) is encoded as the artifact writer
// encodes it and decoded by the artifact library's reader, the one the runtime
// loads artifacts with, so the two cannot disagree on what an op means; the
// numbers still come from the reference kernels, in the oracle's own
// arithmetic. The few ops that only ever run inside a generated kernel, and so
// have no table, call their kernels here.
//
//===----------------------------------------------------------------------===//

#include "interpreter/ReferenceOps.h"

#include "codegen/StepEncoding.h"
#include "ir/Kiln/KilnDialect.h"
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

Results one(absl::StatusOr<ref::Tensor> t) {
  if (!t.ok())
    return t.status();
  std::vector<ref::Tensor> out;
  out.push_back(std::move(*t));
  return out;
}

} // namespace

FailureOr<artifact::HostStep> decodeReferenceStep(Operation *op) {
  // An element type the reference kernels lack is the interpreter's refusal
  // (the encoder would call it a missing artifact dtype, which is its view).
  for (TypeRange types : {TypeRange(op->getOperandTypes()), TypeRange(op->getResultTypes())})
    for (Type type : types)
      if (auto tensor = dyn_cast<ShapedType>(type); tensor && !toRefType(tensor.getElementType()))
        return op->emitOpError() << "the reference interpreter has no kernels for "
                                 << tensor.getElementType();
  flatbuffers::FlatBufferBuilder builder;
  FailureOr<EncodedStep> encoded = encodeStep(op, builder);
  if (failed(encoded))
    return failure();
  // Operand and result positions do not matter here (values are passed in
  // order); their counts are what the decoder checks.
  std::vector<int> inputs(op->getNumOperands(), 0), outputs(op->getNumResults(), 0);
  builder.Finish(schema::CreateStep(builder, encoded->type, encoded->table,
                                    builder.CreateVector(inputs), builder.CreateVector(outputs)));
  artifact::StepInfo info;
  info.kind = artifact::StepKind::Host;
  info.op = encoded->type;
  info.table = flatbuffers::GetRoot<schema::Step>(builder.GetBufferPointer());
  info.inputs = std::move(inputs);
  info.outputs = std::move(outputs);
  info.label = schema::EnumNameStepOp(encoded->type);
  // The decoded step copies what it reads out of the table, so it outlives the
  // builder.
  absl::StatusOr<artifact::HostStep> step = artifact::decodeHostStep(info, 0);
  if (!step.ok())
    return op->emitOpError() << "has a step table the artifact reader refuses: "
                             << std::string(step.status().message());
  return std::move(*step);
}

std::optional<absl::StatusOr<std::vector<ref::Tensor>>> runKernelOnlyOp(Operation *op, Inputs in) {
  auto optional = [&](size_t i) { return i < in.size() ? in[i] : nullptr; };
  return llvm::TypeSwitch<Operation *, std::optional<Results>>(op)
      .Case([&](CountNonZeroOp c) {
        return one(ref::countNonZeroChunks(*in[0], static_cast<int64_t>(c.getChunks())));
      })
      // The count it is sized by was read from the chunk counts; the result's
      // dims are checked against it where the interpreter defines the value.
      .Case([&](CompactNonZeroOp) { return one(ref::nonZero(*in[0])); })
      .Case([&](AttentionOp a) {
        return one(
            ref::attention(*in[0], *in[1], *in[2], optional(3), a.getScale().convertToDouble(),
                           a.getZeroMaskedRows()));
      })
      .Case([&](MatmulNBitsOp m) {
        // The operands in order: zero points and bias each when present.
        size_t next = 3;
        const ref::Tensor *zero = m.getZeroPoints() ? optional(next++) : nullptr;
        const ref::Tensor *bias = m.getBias() ? optional(next++) : nullptr;
        return one(ref::matmulNBits(*in[0], *in[1], *in[2], zero, bias, m.getBits(),
                                    m.getBlockSize(), m.getGlu()));
      })
      .Case([&](SampleTokensOp) -> Results {
        for (size_t i : {3, 4, 5})
          if (in[i]->numel() != 1)
            return absl::InvalidArgumentError("sample_tokens: temperature, top_k and top_p "
                                              "must hold one value");
        return one(ref::sampleTokens(*in[0], *in[1], *in[2], in[3]->getF(0), in[4]->getI(0),
                                     in[5]->getF(0)));
      })
      // The rank operand (in[2]) is the order the reference sorts by itself.
      .Case([&](NmsSelectOp n) -> Results {
        absl::StatusOr<NmsScalars> s = nmsScalars(in, 3, static_cast<bool>(n.getScoreThreshold()));
        if (!s.ok())
          return s.status();
        return one(ref::nmsSelect(*in[0], *in[1], s->maxOutput, s->iouThreshold,
                                  s->scoreThreshold, n.getCenterPointBox()));
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace kiln
