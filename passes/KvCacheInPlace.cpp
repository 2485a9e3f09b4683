//===- KvCacheInPlace.cpp - a decoder's KV cache updated in place ----------===//
//
// Decoders exported with their KV cache (transformers, optimum) take each
// layer's past keys and values as inputs [batch, heads, past, head] and
// return `present = concat(past, new)` along the sequence: every decode step
// copies the whole cache into a new present, O(context) bytes per token, and
// the past length is a dim that changes every step.
//
// This pass rewrites such a model into the in-place form: each past input
// becomes the cache itself, [batch, heads, cache_capacity, head], of which
// the first `past` rows are valid; `present` is that cache with the new rows
// written at row `past` (kiln.cache_update, a kernel over the new rows whose
// bytes are the input's), and the ops that read present (attention) read its
// first `past + new` rows through a slice. The present output is the cache
// input's buffer, so a caller that keeps one buffer per layer and passes it
// as both writes only the new rows per step.
//
// `past` is no input's dim any more: it becomes `total - new`, where `total`
// is the attention mask's length (the past and the new tokens, as Hugging
// Face defines it), so the runtime still binds every symbol from the inputs.
//
// A model already in ONNX's own cache form (TensorScatter-24: past and
// present at the cache's full length, the new rows written at each
// sequence's write index, imported as kiln.cache_write) needs none of that:
// where its past is an input read by the write alone and its present an
// output, the write just goes into the input's bytes (`in_place`).
// kiln-compile --kv-cache-in-place runs it; docs/runtime.md has the form.
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Matching.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AttrTypeSubElements.h"

namespace kiln {
#define GEN_PASS_DEF_KVCACHEINPLACEPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// One layer's key or value: the past input and the op that makes its
/// present: `concat(past, new)`, or (GroupQueryAttention's per-sequence
/// lengths) `cache_write(concat(past, zeros), new, positions)`.
struct CachePair {
  BlockArgument past;
  Operation *present;
  Value update;    // the new rows
  Value positions; // a cache_write's, one a sequence; null for a concat
  unsigned result; // the function result the present is
  int64_t axis;
};

/// Whether `v` is 0 everywhere: a broadcast of a zero constant.
bool isZeros(Value v) {
  if (auto b = v.getDefiningOp<BroadcastToOp>())
    return isZeros(b.getInput());
  std::optional<double> x = scalarConstant(v);
  return x && *x == 0.0;
}

std::string argName(func::FuncOp func, unsigned i) {
  auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
  return name ? name.str() : "input " + std::to_string(i);
}

struct KvCacheInPlacePass : impl::KvCacheInPlacePassBase<KvCacheInPlacePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (failed(rewrite(func)))
      signalPassFailure();
  }

  /// Replaces each symbol that an `equal` guard pins to a constant by the
  /// constant in every type and dims attribute (the guards then hold by
  /// construction and go), and drops the reshapes that change no type.
  /// The inputs then state the constant, which the runtime checks as the
  /// guard did.
  void pinSymbolsToConstants(func::FuncOp func) {
    MLIRContext *ctx = func.getContext();
    llvm::DenseMap<AffineExpr, AffineExpr> pinned;
    // Only symbols that name an input's dim, which the runtime then checks
    // against the constant (not a size read from data: its guard would go
    // unchecked), and only the function's own guards (one inside a branch
    // holds on that branch alone).
    llvm::DenseSet<AffineExpr> inputDims;
    for (Type t : func.getArgumentTypes())
      if (auto ranked = dyn_cast<RankedTensorType>(t))
        for (DimExpr e : getSymShape(ranked))
          if (e && e.getKind() == AffineExprKind::SymbolId)
            inputDims.insert(e);
    for (GuardOp g : func.getBody().front().getOps<GuardOp>()) {
      if (g.getKind() != GuardKind::equal)
        continue;
      AffineExpr a = g.getLhs(), b = g.getRhs();
      if (b && b.getKind() == AffineExprKind::SymbolId)
        std::swap(a, b);
      if (a && b && inputDims.contains(a) && isa<AffineConstantExpr>(b))
        pinned.try_emplace(a, b);
    }
    if (pinned.empty())
      return;
    auto pin = [&](ArrayRef<AffineExpr> dims) {
      SmallVector<AffineExpr> replaced;
      for (AffineExpr e : dims)
        replaced.push_back(e ? e.replace(pinned) : e);
      return replaced;
    };
    AttrTypeReplacer replacer;
    replacer.addReplacement([&](DimsAttr dims) -> std::optional<Attribute> {
      return DimsAttr::getCanonical(ctx, pin(dims.getDims()));
    });
    // A tensor's dims, and its static shape with them (a pinned dim is static).
    replacer.addReplacement([&](RankedTensorType t) -> std::optional<Type> {
      if (!isa_and_nonnull<DimsAttr>(t.getEncoding()))
        return std::nullopt;
      SmallVector<AffineExpr> dims = pin(getSymShape(t));
      return makeTensorType(SymShape(dims.begin(), dims.end()), t.getElementType());
    });
    replacer.recursivelyReplaceElementsIn(func, /*replaceAttrs=*/true, /*replaceLocs=*/false,
                                          /*replaceTypes=*/true);
    func.setType(FunctionType::get(ctx, func.getBody().front().getArgumentTypes(),
                                   func.getBody().front().getTerminator()->getOperandTypes()));
    SmallVector<Operation *> dead;
    func.getBody().front().walk([&](Operation *op) {
      if (auto g = dyn_cast<GuardOp>(op); g && g->getBlock() == &func.getBody().front()) {
        if (g.getKind() == GuardKind::equal &&
            decideShapeAssumption(ShapeAssumption::Kind::Equal, g.getLhs(), g.getRhs()) ==
                std::optional<bool>(true))
          dead.push_back(g);
      } else if (auto r = dyn_cast<ReshapeOp>(op)) {
        if (r.getInput().getType() == r.getResult().getType()) {
          r.getResult().replaceAllUsesWith(r.getInput());
          dead.push_back(r);
        }
      }
    });
    for (Operation *op : dead) {
      SmallVector<Value> operands(op->getOperands());
      op->erase();
      for (Value v : operands)
        eraseUnreadProducers(v);
    }
  }

  LogicalResult rewrite(func::FuncOp func) {
    MLIRContext *ctx = func.getContext();
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    // A symbol a guard pins to a constant is that constant (GroupQueryAttention
    // names its past's head dim and guards it equal to the head: reshapes
    // between the inputs and their concats would hide the pairs), and the
    // reshapes that then change no dim go.
    pinSymbolsToConstants(func);

    // ONNX's cache form (TensorScatter): an input read only by a write into
    // it, which the function returns. Its shape stays; the write goes in place.
    SmallVector<CacheWriteOp> scatters;
    for (BlockArgument arg : body.getArguments()) {
      if (!arg.hasOneUse())
        continue;
      auto write = dyn_cast<CacheWriteOp>(*arg.getUsers().begin());
      if (!write || write.getCache() != arg || write.getInPlace() || write.getZeroTail() ||
          write.getValidRowsAttr())
        continue;
      if (llvm::any_of(write->getUses(), [&](OpOperand &use) { return use.getOwner() == ret; }))
        scatters.push_back(write);
    }
    for (CacheWriteOp write : scatters)
      write.setInPlace(true);

    // The pairs: an input read only by a two-input concat on a symbolic dim
    // (it first), whose result the function returns.
    SmallVector<CachePair> pairs;
    DimExpr past, rows;
    for (BlockArgument arg : body.getArguments()) {
      if (!arg.hasOneUse())
        continue;
      auto concat = dyn_cast<ConcatOp>(*arg.getUsers().begin());
      if (!concat || concat.getInputs().size() != 2 || concat.getInputs()[0] != arg)
        continue;
      // The present: the concat, or the cache_write whose cache the concat
      // of the past and zero rows is (its rows past each sequence's new
      // ones are zero: zero_tail, which the attention reading it masks).
      Operation *present = concat;
      Value update = concat.getInputs()[1], positions;
      if (concat->hasOneUse())
        if (auto write = dyn_cast<CacheWriteOp>(*concat->getUsers().begin()))
          if (write.getCache() == concat.getResult() && write.getZeroTail() &&
              !write.getInPlace() && isZeros(concat.getInputs()[1]) &&
              write.getAxis() == concat.getAxis()) {
            present = write;
            update = write.getUpdate();
            positions = write.getPositions();
          }
      std::optional<unsigned> result;
      for (OpOperand &use : present->getResult(0).getUses())
        if (use.getOwner() == ret)
          result = use.getOperandNumber();
      if (!result)
        continue;
      SymShape shape = getSymShape(arg.getType());
      int64_t rank = shape.size(), axis = static_cast<int64_t>(concat.getAxis());
      axis = axis < 0 ? axis + rank : axis;
      if (axis < 0 || axis >= rank)
        continue;
      DimExpr length = shape[axis];
      DimExpr added = getSymShape(update.getType())[axis];
      if (!length || length.getKind() != AffineExprKind::SymbolId || !added)
        continue;
      if (past && (length != past || added != rows))
        return func.emitError() << "kiln-kv-cache-in-place: the caches disagree on the past "
                                   "length or the new rows ('"
                                << argName(func, arg.getArgNumber()) << "' has "
                                << dimToString(length) << " and " << dimToString(added)
                                << ", an earlier one " << dimToString(past) << " and "
                                << dimToString(rows) << ")";
      past = length;
      rows = added;
      pairs.push_back({arg, present, update, positions, *result, axis});
    }
    if (pairs.empty() && !scatters.empty())
      return success();
    if (pairs.empty())
      return func.emitError() << "kiln-kv-cache-in-place: no input is a KV cache (read only by a "
                                 "concat along a symbolic dim, or by a TensorScatter, that the "
                                 "model returns)";

    // The mask's length binds the past: total = past + new rows.
    DimExpr total;
    for (BlockArgument arg : body.getArguments())
      if (argName(func, arg.getArgNumber()) == "attention_mask") {
        SymShape mask = getSymShape(arg.getType());
        if (mask.size() == 2 && mask[1] && mask[1].getKind() == AffineExprKind::SymbolId &&
            mask[1] != past && mask[1] != rows)
          total = mask[1];
      }
    if (!total)
      return func.emitError()
             << "kiln-kv-cache-in-place: no input 'attention_mask' [batch, total] whose length "
                "is a symbol of its own: the past length "
             << dimToString(past) << " would be bound by no input once the caches are in place";

    // past -> total - rows, in every type and dims attribute of the function.
    DimExpr pastValue = canonicalizeDim(total - rows);
    AttrTypeReplacer replacer;
    replacer.addReplacement([&](DimsAttr dims) -> std::optional<Attribute> {
      SmallVector<AffineExpr> replaced;
      for (AffineExpr e : dims.getDims())
        replaced.push_back(e ? e.replace(past, pastValue) : e);
      return DimsAttr::getCanonical(ctx, replaced);
    });
    replacer.recursivelyReplaceElementsIn(func, /*replaceAttrs=*/true, /*replaceLocs=*/false,
                                          /*replaceTypes=*/true);

    // Guards the substitution made hold by construction (a slice to the
    // keys' length was `past + new <= total`, now `total <= total`).
    SmallVector<GuardOp> decided;
    func.walk([&](GuardOp g) {
      auto kind = g.getKind() == GuardKind::equal         ? ShapeAssumption::Kind::Equal
                  : g.getKind() == GuardKind::less_equal ? ShapeAssumption::Kind::LessEqual
                                                          : ShapeAssumption::Kind::EqualOrOne;
      if (decideShapeAssumption(kind, g.getLhs(), g.getRhs()) == std::optional<bool>(true))
        decided.push_back(g);
    });
    for (GuardOp g : decided)
      g.erase();

    // Each cache input at its capacity; its present the cache with the new
    // rows written; the present's readers read the valid rows.
    DimExpr capacity = getFreshSymbolDim(ctx, "cache_capacity");
    OpBuilder guards = OpBuilder::atBlockBegin(&body);
    GuardOp::create(guards, func.getLoc(), GuardKind::less_equal,
                    DimsAttr::getCanonical(ctx, {total, capacity}),
                    guards.getStringAttr("kiln-kv-cache-in-place: the caches must hold the past "
                                         "and the new rows (attention_mask's length)"));
    GuardOp::create(guards, func.getLoc(), GuardKind::less_equal,
                    DimsAttr::getCanonical(ctx, {rows, total}),
                    guards.getStringAttr("kiln-kv-cache-in-place: attention_mask must cover the "
                                         "new tokens"));
    for (CachePair &p : pairs) {
      auto type = cast<RankedTensorType>(p.past.getType());
      SymShape dims = getSymShape(type);
      dims[p.axis] = capacity;
      p.past.setType(makeTensorType(dims, type.getElementType()));

      OpBuilder b(p.present);
      Location loc = p.present->getLoc();
      Operation *update;
      if (p.positions) {
        // Each sequence's rows at its own position, in the cache's bytes;
        // the rows after them keep what the cache holds (zero_tail's zeros
        // would be a write of every row: the attention masks those).
        update = createInferred(b, loc, CacheWriteOp::getOperationName(),
                                {p.past, p.update, p.positions},
                                {b.getNamedAttr("axis", b.getI64IntegerAttr(p.axis)),
                                 b.getNamedAttr("in_place", b.getUnitAttr()),
                                 b.getNamedAttr("valid_rows", DimsAttr::getCanonical(ctx, {total}))});
      } else {
        Value offset = SymbolicConstantOp::create(
            b, loc, RankedTensorType::get({1}, b.getI64Type()), DimsAttr::getCanonical(ctx, {pastValue}));
        update = createInferred(b, loc, CacheUpdateOp::getOperationName(),
                                {p.past, p.update, offset},
                                {b.getNamedAttr("axis", b.getI64IntegerAttr(p.axis))});
      }
      if (!update)
        return p.present->emitError() << "kiln-kv-cache-in-place: the new rows do not fit the cache";
      // The valid rows: [0, total) along the axis, everything along the others.
      // (Constant starts and steps: what lets a kernel read through the slice.)
      int64_t rank = dims.size();
      SmallVector<DimExpr> ends(rank, getConstantDim(ctx, std::numeric_limits<int64_t>::max()));
      ends[p.axis] = total;
      Value endsValue = SymbolicConstantOp::create(
          b, loc, RankedTensorType::get({rank}, b.getI64Type()), DimsAttr::getCanonical(ctx, ends));
      Operation *valid = createInferred(
          b, loc, SliceOp::getOperationName(),
          {update->getResult(0), i64Vector(b, loc, SmallVector<int64_t>(rank, 0)), endsValue,
           i64Vector(b, loc, SmallVector<int64_t>(rank, 1))},
          {}, p.present->getResult(0).getType());
      if (!valid)
        return p.present->emitError()
               << "kiln-kv-cache-in-place: the cache's valid rows do not have the present's dims";
      ret->setOperand(p.result, update->getResult(0));
      p.present->getResult(0).replaceAllUsesWith(valid->getResult(0));
      // A cache_write's concat of the past and zero rows goes with it.
      SmallVector<Value> inputs(p.present->getOperands());
      p.present->erase();
      for (Value v : inputs)
        eraseUnreadProducers(v);
    }

    // The signature: the caches in, the caches out.
    func.setType(FunctionType::get(ctx, body.getArgumentTypes(), ret.getOperandTypes()));
    // The mask's length changes every decode step and nothing else does:
    // kernels read it from device memory, and the runtime sizes grids and
    // the memory plan at the caches' capacity, so that one CUDA graph serves
    // every step of a generation.
    func->setAttr(kDeviceSymbolsAttr,
                  ArrayAttr::get(ctx, {StringAttr::get(ctx, dimToString(total))}));
    func->setAttr(kDeviceSymbolBoundsAttr, DimsAttr::getCanonical(ctx, {capacity}));
    return success();
  }
};

} // namespace
} // namespace kiln
