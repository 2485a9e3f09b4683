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
// kiln_generate passes them and copies back `next_tokens` alone.
//
// Only one position of each sequence is chosen from, so the `logits` output
// becomes those positions' logits, [batch, 1, vocabulary], and when the LM
// head is a matmul by a weight (every decoder: [batch, positions, hidden]
// times [hidden, vocabulary], casts after it) it runs on the gathered hidden
// rows alone: a prefill of S tokens computes and stores one row of logits per
// sequence instead of S (at a 32000 vocabulary, 128 KB per position in f32).
// Any other producer keeps its logits, and the chosen rows are gathered from
// them. kiln-compile --sample-on-device runs it, after the precision mode:
// its inputs keep float32 (a draw rounded to bf16 would have 256 values).
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

/// Rows `positions[b]` of `x` [batch, S, W] along dim 1: [batch, 1, W]
/// (kiln.gather_elements, which checks the positions), or null when the
/// shape functions refuse.
Value gatherRows(OpBuilder &b, Location loc, Value x, Value positions) {
  MLIRContext *ctx = b.getContext();
  SymShape dims = getSymShape(x.getType());
  DimExpr one = getConstantDim(ctx, 1);
  auto shape = [&](ArrayRef<DimExpr> d) {
    return SymbolicConstantOp::create(
        b, loc, RankedTensorType::get({static_cast<int64_t>(d.size())}, b.getI64Type()),
        DimsAttr::getCanonical(ctx, d));
  };
  Operation *column = createInferred(b, loc, ReshapeOp::getOperationName(),
                                     {positions, shape({dims[0], one, one})}, {});
  Operation *index =
      column ? createInferred(b, loc, BroadcastToOp::getOperationName(),
                              {column->getResult(0), shape({dims[0], one, dims[2]})}, {})
             : nullptr;
  Operation *rows =
      index ? createInferred(b, loc, GatherElementsOp::getOperationName(),
                             {x, index->getResult(0)},
                             {b.getNamedAttr("axis", b.getI64IntegerAttr(1))})
            : nullptr;
  return rows ? rows->getResult(0) : Value();
}

/// The logits at `positions` as the LM head computes them on those hidden
/// rows alone: `logits` must be casts of a matmul of [batch, S, hidden] by a
/// 2-D weight with at most a per-column bias; null otherwise.
Value headOnRows(OpBuilder &b, Location loc, Value logits, Value positions) {
  SmallVector<CastOp> casts;
  Value v = logits;
  while (auto cast = v.getDefiningOp<CastOp>()) {
    casts.push_back(cast);
    v = cast.getInput();
  }
  auto head = v.getDefiningOp<MatmulOp>();
  if (!head || head.getTransposeLhs() ||
      cast<RankedTensorType>(head.getLhs().getType()).getRank() != 3 ||
      cast<RankedTensorType>(head.getRhs().getType()).getRank() != 2 ||
      (head.getBias() && cast<RankedTensorType>(head.getBias().getType()).getRank() > 1))
    return {};
  Value rows = gatherRows(b, loc, head.getLhs(), positions);
  if (!rows)
    return {};
  SmallVector<Value> operands = {rows, head.getRhs()};
  if (head.getBias())
    operands.push_back(head.getBias());
  Operation *on = createInferred(b, loc, MatmulOp::getOperationName(), operands,
                                 llvm::to_vector(head->getAttrs()));
  for (CastOp cast : llvm::reverse(casts))
    on = on ? createInferred(b, loc, CastOp::getOperationName(), {on->getResult(0)},
                             llvm::to_vector(cast->getAttrs()))
            : nullptr;
  return on ? on->getResult(0) : Value();
}

struct AppendSamplerPass : impl::AppendSamplerPassBase<AppendSamplerPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    MLIRContext *ctx = func.getContext();
    std::optional<unsigned> logitsResult;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
      if (name && name.getValue() == "next_tokens") {
        func.emitError() << "kiln-append-sampler: the model already returns 'next_tokens'";
        return signalPassFailure();
      }
      if (name && name.getValue() == "logits")
        logitsResult = i;
    }
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
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
                                                                  StringAttr::get(ctx, kNameAttr),
                                                                  StringAttr::get(ctx, in.name))}),
                                     loc)))
        return signalPassFailure();
      operands.push_back(func.getArgument(index));
    }
    OpBuilder b(ret);
    // The chosen rows' logits: the LM head on those rows alone, or the rows of
    // the logits.
    Value positions = operands[1];
    Value chosen = headOnRows(b, loc, logits, positions);
    if (!chosen)
      chosen = gatherRows(b, loc, logits, positions);
    if (!chosen) {
      func.emitError() << "kiln-append-sampler: cannot take one row per sequence of 'logits' "
                       << logitsType;
      return signalPassFailure();
    }
    // The sampler reads row 0 of each sequence's one row.
    Value zero = ConstantOp::create(
        b, loc, DenseIntElementsAttr::get(RankedTensorType::get({}, i64), int64_t(0)));
    Operation *zeros = createInferred(
        b, loc, BroadcastToOp::getOperationName(),
        {zero, SymbolicConstantOp::create(b, loc, RankedTensorType::get({1}, i64),
                                          DimsAttr::getCanonical(ctx, {batch}))},
        {});
    if (!zeros) {
      func.emitError() << "kiln-append-sampler: cannot build the batch's row indices";
      return signalPassFailure();
    }
    operands[0] = chosen;
    operands[1] = zeros->getResult(0);
    ret->setOperand(*logitsResult, chosen);
    eraseUnreadProducers(logits);
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
            DictionaryAttr::get(ctx, {NamedAttribute(StringAttr::get(ctx, kNameAttr),
                                                     StringAttr::get(ctx, "next_tokens"))}))))
      return signalPassFailure();
    ret->insertOperands(ret.getNumOperands(), tokens);
    SmallVector<Type> results(ret.getOperandTypes());
    func.setFunctionType(FunctionType::get(ctx, func.getArgumentTypes(), results));
  }
};

} // namespace
} // namespace kiln
