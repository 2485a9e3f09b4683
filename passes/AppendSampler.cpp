//===- AppendSampler.cpp - the next token chosen inside the model ---------===//
//
// A decoder returns logits [batch, positions, vocabulary]; choosing the next
// token from them on the host means copying the logits down every step (a
// 32000-token vocabulary is 128 KB a sequence) and a host pass over them.
// This pass adds the choice to the model: kiln.sample_tokens over the logits,
// returned as `next_tokens` [batch], from five new inputs:
//   sample_positions [batch] i64   which position's logits each sequence uses
//   sample_uniform   [batch] f32   the host's draw in [0, 1) (its seeded
//                                  generator: one seed, one token stream, on
//                                  every backend)
//   sample_temperature, sample_top_k, sample_top_p   scalars (f32, i64, f32)
// kiln_generate passes them and copies back `next_tokens` alone. The logits
// stay an output. kiln-compile --sample-on-device runs it, after the precision
// mode: its inputs keep float32 (a draw rounded to bf16 would have 256 values).
//===----------------------------------------------------------------------===//

#include "passes/Matching.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_APPENDSAMPLERPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr llvm::StringLiteral kName = "kiln.name";

struct AppendSamplerPass : impl::AppendSamplerPassBase<AppendSamplerPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    MLIRContext *ctx = func.getContext();
    std::optional<unsigned> logitsResult;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, kName);
      if (name && name.getValue() == "next_tokens") {
        func.emitError() << "kiln-append-sampler: the model already returns 'next_tokens'";
        return signalPassFailure();
      }
      if (name && name.getValue() == "logits")
        logitsResult = i;
    }
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name = func.getArgAttrOfType<StringAttr>(i, kName);
          name && name.getValue().starts_with("sample_")) {
        func.emitError() << "kiln-append-sampler: the model already takes an input '"
                         << name.getValue() << "'";
        return signalPassFailure();
      }
    if (!logitsResult) {
      func.emitError() << "kiln-append-sampler: the model returns no 'logits' to choose from";
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    Value logits = ret.getOperand(*logitsResult);
    auto logitsType = cast<RankedTensorType>(logits.getType());
    if (logitsType.getRank() != 3 || !isa<FloatType>(logitsType.getElementType())) {
      func.emitError() << "kiln-append-sampler: 'logits' must be float [batch, positions, "
                          "vocabulary], not "
                       << logitsType;
      return signalPassFailure();
    }
    DimExpr batch = getSymShape(logitsType)[0];
    Type i64 = IntegerType::get(ctx, 64), f32 = Float32Type::get(ctx);
    struct NewInput {
      const char *name;
      Type type;
    };
    NewInput inputs[] = {{"sample_positions", makeTensorType({batch}, i64)},
                         {"sample_uniform", makeTensorType({batch}, f32)},
                         {"sample_temperature", RankedTensorType::get({}, f32)},
                         {"sample_top_k", RankedTensorType::get({}, i64)},
                         {"sample_top_p", RankedTensorType::get({}, f32)}};
    SmallVector<Value> operands = {logits};
    Location loc = func.getLoc();
    for (const NewInput &in : inputs) {
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(index, in.type,
                                     DictionaryAttr::get(ctx, {NamedAttribute(
                                                                  StringAttr::get(ctx, kName),
                                                                  StringAttr::get(ctx, in.name))}),
                                     loc)))
        return signalPassFailure();
      operands.push_back(func.getArgument(index));
    }
    OpBuilder b(ret);
    Operation *sample =
        createInferred(b, loc, SampleTokensOp::getOperationName(), operands, {});
    if (!sample) {
      func.emitError() << "kiln-append-sampler: 'logits' " << logitsType
                       << " and the batch of the new inputs disagree";
      return signalPassFailure();
    }
    Value tokens = sample->getResult(0);
    unsigned index = func.getNumResults();
    if (failed(func.insertResult(
            index, tokens.getType(),
            DictionaryAttr::get(ctx, {NamedAttribute(StringAttr::get(ctx, kName),
                                                     StringAttr::get(ctx, "next_tokens"))}))))
      return signalPassFailure();
    ret->insertOperands(ret.getNumOperands(), tokens);
  }
};

} // namespace
} // namespace kiln
