//===- MarkIndependentRows.cpp - may requests be batched along a symbol? ---===//
//
// A server that batches requests (Triton's dynamic batcher) joins them along
// the first dim of every input and splits the outputs the same way. That is
// only right when row i of every output depends on row i of the inputs alone:
// a model that normalizes over the batch (x - mean over dim 0) or is
// sequence-first gives every request other answers when it shares a call. This
// pass proves it or says nothing: walking the function in order, it tracks for
// each value where the rows of the candidate symbol S (the first dim of every
// argument and result) sit, and records S as `kiln.independent_rows` on the
// function when every result has them as its first dim. The artifact carries
// the list (Model.independent_rows) and the Triton backend batches only along
// such a symbol.
//
// A value is one of:
// - invariant: computed from constants alone (the same for every request);
// - rows(axis, block): dim `axis` is S * block, and request b owns positions
//   [b * block, (b + 1) * block) of it, every other dim whole;
// - sized: computed from S's value (a shape), not from any row's data, which
//   is fine as a shape operand and mixes requests as data (y = x * batch);
// - mixed: anything else.
// Each op maps its data operands' states to its results' by the rules below,
// which follow the op's semantics; an op without a rule mixes unless its data
// operands are all invariant.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/SymbolicDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace kiln {
#define GEN_PASS_DEF_MARKINDEPENDENTROWSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct RowState {
  enum Kind { invariant, rows, sized, mixed } kind = invariant;
  int64_t axis = 0;
  DimExpr block;

  static RowState mixedState() { return {mixed, 0, {}}; }
  static RowState sizedState() { return {sized, 0, {}}; }
  static RowState rowsAt(int64_t axis, DimExpr block) { return {rows, axis, block}; }
  bool operator==(const RowState &o) const {
    return kind == o.kind && (kind != rows || (axis == o.axis && block == o.block));
  }
};

class RowTracker {
public:
  explicit RowTracker(DimExpr symbol) : symbol_(symbol) {}

  /// Tracks `func`'s body; whether every result has the rows as its first dim.
  bool independent(func::FuncOp func) {
    MLIRContext *context = func.getContext();
    for (BlockArgument arg : func.getArguments()) {
      SymShape dims = getSymShape(arg.getType());
      if (dims.empty() || dims[0] != symbol_ ||
          llvm::any_of(ArrayRef<DimExpr>(dims).drop_front(),
                       [&](DimExpr d) { return grows(d); }))
        return false;
      states_[arg] = RowState::rowsAt(0, getConstantDim(context, 1));
    }
    for (Operation &op : func.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands())
          if (!(stateOf(v) == RowState::rowsAt(0, getConstantDim(context, 1))))
            return false;
        return true;
      }
      visit(&op);
    }
    return false;
  }

private:
  RowState stateOf(Value v) {
    auto it = states_.find(v);
    return it == states_.end() ? RowState::mixedState() : it->second;
  }

  /// Whether `dim` may grow with the batch: it mentions the symbol, or
  /// nothing is known of it.
  bool grows(DimExpr dim) { return !dim || mentionsSymbol(dim); }

  /// Whether `dim` mentions the symbol (a size that grows with the batch).
  bool mentionsSymbol(DimExpr dim) {
    bool found = false;
    if (dim)
      dim.walk([&](AffineExpr e) { found |= e == symbol_; });
    return found;
  }

  /// S * block: the dim `axis` of a value with rows there.
  DimExpr rowsDim(DimExpr block) { return mulDims(symbol_, block); }

  /// Whether value `v`'s dim `axis` is its rows' (S * block).
  bool hasRowsDim(Value v, int64_t axis, DimExpr block) {
    SymShape dims = getSymShape(v.getType());
    return axis >= 0 && axis < static_cast<int64_t>(dims.size()) && dims[axis] &&
           dims[axis] == rowsDim(block);
  }

  void visit(Operation *op) {
    if (op->getNumResults() == 0)
      return; // guards, size reads: they compute nothing a row reads
    SmallVector<Value> data = dataOperands(op);
    SmallVector<RowState> in;
    bool allInvariant = true, anySized = false;
    for (Value v : data) {
      in.push_back(stateOf(v));
      allInvariant &= in.back().kind == RowState::invariant;
      anySized |= in.back().kind == RowState::sized;
    }
    // Values computed from shapes: sizes of this batch, not data of its rows.
    if (isa<ShapeOfOp, SymbolicConstantOp>(op)) {
      SymShape dims;
      if (auto shapeOf = dyn_cast<ShapeOfOp>(op))
        dims = getSymShape(shapeOf.getInput().getType());
      else
        dims.assign(cast<SymbolicConstantOp>(op).getValue().getDims());
      bool sized = llvm::any_of(dims, [&](DimExpr d) { return grows(d); });
      setAll(op, sized ? RowState::sizedState() : RowState{});
      return;
    }
    // Shape operands: a reshape's or broadcast_to's target only sizes the
    // result, which its dims say; elsewhere (a slice's bounds, a pad's
    // widths, top_k's k, a resize's sizes) they pick what the result holds,
    // so one that depends on the batch (its size, or its rows' data) makes
    // the result depend on it too.
    bool sizesOnly = isa<ReshapeOp, BroadcastToOp>(op), shapeGrows = false;
    for (Value v : op->getOperands()) {
      if (llvm::is_contained(data, v))
        continue;
      RowState s = stateOf(v);
      if (s.kind == RowState::rows || s.kind == RowState::mixed) {
        setAll(op, RowState::mixedState());
        return;
      }
      shapeGrows |= s.kind == RowState::sized && !sizesOnly;
    }
    if (shapeGrows) {
      setAll(op, allInvariant ? RowState::sizedState() : RowState::mixedState());
      return;
    }
    if (allInvariant && op->getNumRegions() == 0) {
      setAll(op, RowState{});
      return;
    }
    if (anySized && !allInvariant) {
      // A size used as data: while every operand is a size, so is the result
      // (shape arithmetic); beside data, it mixes requests.
      bool allSizes = llvm::all_of(in, [](const RowState &s) {
        return s.kind == RowState::sized || s.kind == RowState::invariant;
      });
      setAll(op, allSizes ? RowState::sizedState() : RowState::mixedState());
      return;
    }
    setAll(op, transfer(op, data, in));
  }

  /// The operands an op computes from (shape operands excluded: they size the
  /// result, which the types already track).
  SmallVector<Value> dataOperands(Operation *op) {
    if (auto facts = dyn_cast<KernelFacts>(op))
      return facts.kernelDataOperands();
    return SmallVector<Value>(op->getOperands());
  }

  /// Gives every result of `op` state `s`, checked against its dims: a dim
  /// that grows with the batch (mentions S, or is unknown) other than the
  /// rows' own makes a value's contents depend on how many requests share the
  /// call, which a server's join would change: an invariant value is then a
  /// size (range(0, batch)), a rows value mixed (x[:, :batch]).
  void setAll(Operation *op, RowState s) {
    for (Value r : op->getResults()) {
      RowState checked = s;
      SymShape dims = getSymShape(r.getType());
      if (checked.kind == RowState::rows &&
          (checked.axis >= static_cast<int64_t>(dims.size()) || !dims[checked.axis] ||
           dims[checked.axis] != rowsDim(checked.block)))
        checked = RowState::mixedState();
      for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
        if (!grows(dims[d]))
          continue;
        if (checked.kind == RowState::rows && d == checked.axis && dims[d] == rowsDim(checked.block))
          continue;
        if (checked.kind == RowState::invariant)
          checked = RowState::sizedState();
        else if (checked.kind == RowState::rows)
          checked = RowState::mixedState();
      }
      states_[r] = checked;
    }
  }

  /// The one rows state of the operands that have rows, if they agree once
  /// each is aligned to the result's rank from the end (numpy broadcasting);
  /// nullopt when they disagree or another operand mixes.
  std::optional<RowState> alignedRows(ArrayRef<Value> data, ArrayRef<RowState> in,
                                      int64_t resultRank) {
    std::optional<RowState> common;
    for (auto [v, s] : llvm::zip(data, in)) {
      if (s.kind == RowState::invariant)
        continue;
      if (s.kind != RowState::rows)
        return std::nullopt;
      int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
      RowState aligned = RowState::rowsAt(s.axis + resultRank - rank, s.block);
      if (common && !(*common == aligned))
        return std::nullopt;
      common = aligned;
    }
    return common;
  }

  RowState transfer(Operation *op, ArrayRef<Value> data, ArrayRef<RowState> in) {
    RowState mixed = RowState::mixedState();
    if (op->getNumRegions() != 0 || op->getNumResults() != 1)
      return topKRows(op, data, in);
    Value result = op->getResult(0);
    auto resultType = dyn_cast<RankedTensorType>(result.getType());
    if (!resultType)
      return mixed;
    int64_t rank = resultType.getRank();
    // Elementwise ops (broadcast_to and the unary, binary, compare, select and
    // cast ops): rows stay where numpy broadcasting puts them, and an
    // invariant operand broadcasts over them.
    if (auto facts = dyn_cast<KernelFacts>(op);
        facts && facts.elementAccess() == ElementAccess::broadcast) {
      std::optional<RowState> rows = alignedRows(data, in, rank);
      if (!rows || !hasRowsDim(result, rows->axis, rows->block))
        return mixed;
      return *rows;
    }
    const RowState &first = in.front();
    auto keepsAxis = [&](int64_t reduced, bool keepDims) -> RowState {
      if (first.kind != RowState::rows || first.axis == reduced)
        return mixed;
      return RowState::rowsAt(!keepDims && reduced < first.axis ? first.axis - 1 : first.axis,
                              first.block);
    };
    return llvm::TypeSwitch<Operation *, RowState>(op)
        .Case([&](TransposeOp t) {
          if (first.kind != RowState::rows)
            return mixed;
          ArrayRef<int64_t> perm = t.getPermutation();
          for (int64_t i = 0; i < static_cast<int64_t>(perm.size()); ++i)
            if (perm[i] == first.axis)
              return RowState::rowsAt(i, first.block);
          return mixed;
        })
        .Case([&](ReshapeOp r) { return reshapeRows(r, first); })
        .Case([&](ReduceOp r) {
          if (first.kind != RowState::rows)
            return mixed;
          int64_t inRank = cast<RankedTensorType>(r.getInput().getType()).getRank();
          int64_t below = 0;
          for (int64_t a : r.getAxes()) {
            int64_t axis = a < 0 ? a + inRank : a;
            if (axis == first.axis)
              return mixed;
            below += axis < first.axis;
          }
          return RowState::rowsAt(r.getKeepDims() ? first.axis : first.axis - below, first.block);
        })
        .Case([&](ArgReduceOp r) { return keepsAxis(normalize(r.getAxis(), r.getInput()), r.getKeepDims()); })
        .Case([&](CumulativeOp c) { return keepsAxis(normalize(c.getAxis(), c.getInput()), true); })
        .Case<SoftmaxOp, LogSoftmaxOp>([&](auto s) {
          return keepsAxis(normalize(s.getAxis(), s.getInput()), true);
        })
        .Case<LayerNormOp, RmsNormOp>([&](auto l) {
          // Normalized over [axis, rank): the rows must lie before it, and
          // the scale and bias be the same for every request.
          int64_t axis = normalize(l.getAxis(), l.getInput());
          if (first.kind != RowState::rows || first.axis >= axis ||
              llvm::any_of(in.drop_front(), [](const RowState &s) { return s.kind != RowState::invariant; }))
            return mixed;
          return first;
        })
        .Case([&](MatmulOp m) { return matmulRows(m, data, in); })
        .Case([&](AttentionOp a) { return attentionRows(a, data, in); })
        .Case([&](ConvOp c) {
          // Over the batch dim N (first, in either layout); the filter and
          // bias are the same for every request, the residual has the
          // result's rows.
          if (!(first == RowState::rowsAt(0, first.block)) || in[1].kind != RowState::invariant)
            return mixed;
          for (size_t i = 2; i < in.size(); ++i)
            if (in[i].kind != RowState::invariant &&
                !(data[i] == c.getResidual() && in[i] == first))
              return mixed;
          return first;
        })
        .Case([&](PoolOp) {
          return first.kind == RowState::rows && first.axis == 0 ? first : mixed;
        })
        .Case<SliceOp, PadOp, ResizeOp>([&](Operation *o) {
          // Whole along the rows' dim (no slice, pad or scale of it) and, for
          // a slice, read forwards there.
          if (first.kind != RowState::rows || !hasRowsDim(result, first.axis, first.block))
            return mixed;
          if (auto slice = dyn_cast<SliceOp>(o)) {
            DenseIntElementsAttr steps;
            if (!matchPattern(slice.getSteps(), m_Constant(&steps)) ||
                first.axis >= steps.getNumElements() ||
                !steps.getValues<APInt>()[first.axis].isStrictlyPositive())
              return mixed;
          }
          // A pad: none on the rows' dim at either end (widths that cancel,
          // -1 and +1, keep the dim and shift rows between requests), and a
          // pad value the same for every request.
          if (auto pad = dyn_cast<PadOp>(o)) {
            DenseIntElementsAttr pads;
            int64_t inRank = cast<RankedTensorType>(pad.getInput().getType()).getRank();
            if (in.size() < 2 || in[1].kind != RowState::invariant ||
                !matchPattern(pad.getPads(), m_Constant(&pads)) ||
                pads.getNumElements() != 2 * inRank ||
                !pads.getValues<APInt>()[first.axis].isZero() ||
                !pads.getValues<APInt>()[first.axis + inRank].isZero())
              return mixed;
          }
          // A resize: that dim not rescaled (scale 1), and no crop (an roi
          // along it resamples across requests).
          if (auto resize = dyn_cast<ResizeOp>(o)) {
            ArrayRef<float> scales = resize.getScales();
            if (resize.getCoordinateMode() == CoordinateMode::tf_crop_and_resize ||
                (!scales.empty() && (first.axis >= static_cast<int64_t>(scales.size()) ||
                                     scales[first.axis] != 1.0f)))
              return mixed;
          }
          return first;
        })
        .Case([&](ConcatOp c) {
          std::optional<RowState> rows = alignedRows(data, in, rank);
          if (!rows || rows->axis == normalize(c.getAxis(), result) ||
              llvm::any_of(in, [](const RowState &s) { return s.kind != RowState::rows; }))
            return mixed;
          return *rows;
        })
        .Case([&](GatherOp g) {
          int64_t axis = normalize(g.getAxis(), g.getData());
          int64_t indicesRank = cast<RankedTensorType>(g.getIndices().getType()).getRank();
          const RowState &indices = in[1];
          if (first.kind == RowState::rows && indices.kind == RowState::invariant &&
              first.axis != axis)
            return RowState::rowsAt(first.axis < axis ? first.axis : first.axis + indicesRank - 1,
                                    first.block);
          // An embedding: a table the same for every request, looked up by
          // each request's own ids.
          if (first.kind == RowState::invariant && indices.kind == RowState::rows)
            return RowState::rowsAt(axis + indices.axis, indices.block);
          return mixed;
        })
        .Default([&](Operation *) { return mixed; });
  }

  static int64_t normalize(int64_t axis, Value v) {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    return axis < 0 ? axis + rank : axis;
  }

  /// top_k's two results (values, indices) share the input's rows when k
  /// runs along another dim.
  RowState topKRows(Operation *op, ArrayRef<Value> data, ArrayRef<RowState> in) {
    auto topK = dyn_cast<TopKOp>(op);
    if (!topK || in.empty() || in.front().kind != RowState::rows ||
        normalize(topK.getAxis(), topK.getInput()) == in.front().axis)
      return RowState::mixedState();
    return in.front();
  }

  /// A reshape keeps the rows when the dims before them multiply to the same
  /// size on both sides (the rows' dim starts a new run of the row-major
  /// order at the same place), and one request's elements, block * inner of
  /// them in a row of that run, fill whole indices of some result dim j:
  /// out[j] = S * block' with block' = block * inner / inner', inner and
  /// inner' the products of the dims after the rows' on either side. That
  /// covers keeping ([B, S, H] -> [B, S, n, h]), merging ([B, S, H] ->
  /// [B * S, H], block S), splitting back, and the heads of a sequence-first
  /// attention ([S, B, H] -> [S, B * n, h], block n).
  RowState reshapeRows(ReshapeOp r, const RowState &s) {
    if (s.kind != RowState::rows)
      return RowState::mixedState();
    MLIRContext *context = r.getContext();
    SymShape in = getSymShape(r.getInput().getType()), out = getSymShape(r.getType());
    if (llvm::any_of(in, [](DimExpr d) { return !d; }) ||
        llvm::any_of(out, [](DimExpr d) { return !d; }))
      return RowState::mixedState();
    ArrayRef<DimExpr> inDims(in), outDims(out);
    DimExpr before = productOfDims(context, inDims.take_front(s.axis));
    DimExpr elements = mulDims(s.block, productOfDims(context, inDims.drop_front(s.axis + 1)));
    for (int64_t j = 0; j < static_cast<int64_t>(out.size()); ++j) {
      if (productOfDims(context, outDims.take_front(j)) != before)
        continue;
      DimExpr innerOut = productOfDims(context, outDims.drop_front(j + 1));
      DimExpr block = floorDivDims(elements, innerOut);
      if (block && mulDims(block, innerOut) == elements && out[j] == rowsDim(block))
        return RowState::rowsAt(j, block);
    }
    return RowState::mixedState();
  }

  /// lhs [.., M, K] @ rhs [.., K, N] (+ a bias over N or of the result's
  /// shape): rows in a batch dim both share (or one alone has, the other
  /// invariant), in lhs's M with rhs invariant, or in rhs's N with lhs
  /// invariant. Rows along K are summed over: mixed.
  RowState matmulRows(MatmulOp m, ArrayRef<Value> data, ArrayRef<RowState> in) {
    RowState mixed = RowState::mixedState();
    int64_t rank = cast<RankedTensorType>(m.getType()).getRank();
    auto rankOf = [](Value v) { return cast<RankedTensorType>(v.getType()).getRank(); };
    int64_t lhsRank = rankOf(m.getLhs()), rhsRank = rankOf(m.getRhs());
    if (lhsRank < 2 || rhsRank < 2)
      return mixed;
    const RowState &lhs = in[0], &rhs = in[1];
    std::optional<RowState> out;
    auto inBatch = [&](const RowState &s, int64_t operandRank) -> std::optional<RowState> {
      if (s.axis < operandRank - 2)
        return RowState::rowsAt(s.axis + rank - operandRank, s.block);
      return std::nullopt;
    };
    int64_t lhsM = m.getTransposeLhs() ? lhsRank - 1 : lhsRank - 2;
    int64_t rhsN = m.getTransposeRhs() ? rhsRank - 2 : rhsRank - 1;
    if (lhs.kind == RowState::rows && rhs.kind == RowState::rows) {
      std::optional<RowState> a = inBatch(lhs, lhsRank), b = inBatch(rhs, rhsRank);
      if (!a || !b || !(*a == *b))
        return mixed;
      out = a;
    } else if (lhs.kind == RowState::rows && rhs.kind == RowState::invariant) {
      if (std::optional<RowState> a = inBatch(lhs, lhsRank))
        out = a;
      else if (lhs.axis == lhsM)
        out = RowState::rowsAt(rank - 2, lhs.block);
    } else if (rhs.kind == RowState::rows && lhs.kind == RowState::invariant) {
      if (std::optional<RowState> b = inBatch(rhs, rhsRank))
        out = b;
      else if (rhs.axis == rhsN)
        out = RowState::rowsAt(rank - 1, rhs.block);
    }
    if (!out || !hasRowsDim(m.getResult(), out->axis, out->block))
      return mixed;
    // The bias is added to every row: the same for every request, or the
    // result's rows.
    if (in.size() > 2 && in[2].kind != RowState::invariant &&
        !(in[2] == RowState::rowsAt(out->axis + cast<RankedTensorType>(data[2].getType()).getRank() - rank,
                                    out->block)))
      return mixed;
    return *out;
  }

  /// query [.., Sq, D], key/value [.., Sk, D]: rows in a leading dim all
  /// three share, or in the query's Sq with key and value invariant.
  RowState attentionRows(AttentionOp a, ArrayRef<Value> data, ArrayRef<RowState> in) {
    RowState mixed = RowState::mixedState();
    int64_t rank = cast<RankedTensorType>(a.getType()).getRank();
    const RowState &q = in[0];
    if (q.kind != RowState::rows)
      return mixed;
    if (q.axis < rank - 2) {
      // Grouped-query heads: a request's rows along the heads would take
      // its own slice of the key/value heads too, which is not the same
      // rows. (The batch, before them, is.)
      if (q.axis == rank - 3 && getSymShape(data[0].getType())[q.axis] !=
                                    getSymShape(data[1].getType())[q.axis])
        return mixed;
      std::optional<RowState> rows = alignedRows(data, in, rank);
      if (!rows || !(*rows == q) ||
          llvm::any_of(in.take_front(3), [](const RowState &s) { return s.kind != RowState::rows; }))
        return mixed;
      return q;
    }
    if (q.axis == rank - 2 && in[1].kind == RowState::invariant &&
        in[2].kind == RowState::invariant &&
        (in.size() < 4 || in[3].kind == RowState::invariant))
      return q;
    return mixed;
  }

  DimExpr symbol_;
  llvm::DenseMap<Value, RowState> states_;
};

struct MarkIndependentRowsPass
    : public impl::MarkIndependentRowsPassBase<MarkIndependentRowsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    func->removeAttr("kiln.independent_rows");
    if (func.isExternal() || func.getNumArguments() == 0 || !func.getBody().hasOneBlock())
      return;
    // The candidate: the first dim of the first argument, when it is a
    // symbol alone (the batch a server would join requests along).
    SymShape dims = getSymShape(func.getArgument(0).getType());
    if (dims.empty() || !dims[0] || getConstantDimValue(dims[0]) ||
        dims[0].getKind() != AffineExprKind::SymbolId)
      return;
    if (!RowTracker(dims[0]).independent(func))
      return;
    std::string name = dimToString(dims[0]);
    Builder b(func.getContext());
    func->setAttr("kiln.independent_rows", b.getStrArrayAttr({name}));
  }
};

} // namespace
} // namespace kiln
