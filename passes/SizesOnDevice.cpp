//===- SizesOnDevice.cpp - data-dependent sizes computed on the device ----===//
//
// See Passes.td (kiln-sizes-on-device). Runs after kiln-name-unknown-dims,
// whose symbols it reuses: the op that would have bound a symbol from its
// host-computed result now has the symbol bound before it by a read_sizes of a
// device-computed size, so it (and everything after it) can be a kernel.
//
//===----------------------------------------------------------------------===//

#include "ir/Kiln/KernelTypes.h"
#include "passes/Matching.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <functional>

namespace kiln {
#define GEN_PASS_DEF_SIZESONDEVICEPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The most chunks a non_zero's input is cut into (a block each; the
/// compaction kernel's blocks each sum the counts before theirs), and the
/// fewest elements a chunk gets when the size is known.
constexpr int64_t kMaxNonZeroChunks = 1024;
constexpr int64_t kMinNonZeroChunkElements = 4096;

/// Whether generated kernels can read `v`: a known element type, every dim
/// named (kiln-name-unknown-dims ran).
bool kernelsCanRead(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isKernelElementType(type.getElementType()) &&
         !llvm::is_contained(getSymShape(type), DimExpr());
}

/// The one symbol every entry of `binds` ([[result, dim, "symbol"], ...])
/// names, if they name one.
std::optional<StringRef> soleBoundSymbol(ArrayAttr binds) {
  std::optional<StringRef> symbol;
  for (Attribute a : binds) {
    StringRef s = cast<StringAttr>(cast<ArrayAttr>(a)[2]).getValue();
    if (symbol && *symbol != s)
      return std::nullopt;
    symbol = s;
  }
  return symbol;
}

/// An i64 vector holding `dims`' values.
Value dimsValue(OpBuilder &b, Location loc, ArrayRef<DimExpr> dims) {
  return SymbolicConstantOp::create(
      b, loc, RankedTensorType::get({static_cast<int64_t>(dims.size())}, b.getI64Type()),
      DimsAttr::getCanonical(b.getContext(), dims));
}

/// A 1-element i64 tensor holding `symbol`'s value.
Value symbolValue(OpBuilder &b, Location loc, StringRef symbol) {
  return dimsValue(b, loc, {getSymbolDim(b.getContext(), symbol)});
}

/// Builds op `OpT` over `operands` with the result types its shape function
/// infers (the ops below are all well-typed by construction).
template <typename OpT>
Value inferred(OpBuilder &b, Location loc, ValueRange operands,
               ArrayRef<NamedAttribute> attrs = {}) {
  Operation *op = createInferred(b, loc, OpT::getOperationName(), operands, attrs);
  assert(op && "a well-typed op");
  return op->getResult(0);
}

/// Builds graph ops at one place, each with the types its shape function infers.
struct GraphBuilder {
  OpBuilder &b;
  Location loc;
  MLIRContext *ctx = b.getContext();

  Value reshape(Value v, ArrayRef<DimExpr> dims) {
    auto type = cast<RankedTensorType>(v.getType());
    return ReshapeOp::create(b, loc, makeTensorType(dims, type.getElementType()), v,
                             dimsValue(b, loc, dims));
  }
  /// A 0-d i64 tensor holding `d`.
  Value scalar(DimExpr d) {
    return SymbolicConstantOp::create(b, loc, RankedTensorType::get({}, b.getI64Type()),
                                      DimsAttr::getCanonical(ctx, {d}));
  }
  Value scalar(int64_t v) { return scalar(getConstantDim(ctx, v)); }
  /// 0, 1, ..., length - 1.
  Value iota(DimExpr length) {
    return inferred<RangeOp>(b, loc, {scalar(0), scalar(length), scalar(1)});
  }
  Value compare(CompareDirection d, Value l, Value r) {
    return inferred<CompareOp>(b, loc, {l, r},
                               {b.getNamedAttr("direction", CompareDirectionAttr::get(ctx, d))});
  }
  Value reduce(ReduceKind kind, Value v, int64_t axis, bool keep = false) {
    return inferred<ReduceOp>(b, loc, {v},
                              {b.getNamedAttr("kind", ReduceKindAttr::get(ctx, kind)),
                               b.getNamedAttr("axes", b.getDenseI64ArrayAttr({axis})),
                               b.getNamedAttr("keep_dims", b.getBoolAttr(keep))});
  }
  Value toI64(Value v) {
    return inferred<CastOp>(b, loc, {v}, {b.getNamedAttr("to", TypeAttr::get(b.getI64Type()))});
  }
  Value both(Value l, Value r) { return inferred<AndOp>(b, loc, {l, r}); }
  Value either(Value l, Value r) { return inferred<OrOp>(b, loc, {l, r}); }
  Value select(Value c, Value t, Value f) { return inferred<SelectOp>(b, loc, {c, t, f}); }
};

/// The product of `dims`, canonical.
DimExpr productOf(MLIRContext *ctx, ArrayRef<DimExpr> dims) {
  DimExpr p = getAffineConstantExpr(1, ctx);
  for (DimExpr d : dims)
    p = p * d;
  return canonicalizeDim(p);
}

/// Binds `symbol` to the one element of `sizes` when the step runs; the report
/// names `forOp` as the op whose size it is.
void readSize(OpBuilder &b, Location loc, Value sizes, StringRef symbol, Operation *forOp) {
  auto read = ReadSizesOp::create(b, loc, sizes, b.getStrArrayAttr({symbol}));
  read->setAttr(kSizesForAttr, b.getStringAttr(forOp->getName().getStringRef()));
}

/// The non_zero of `input` on the device, its count bound to `symbol` (for
/// the report, the read names `forOp`): the count per chunk (a kernel), their
/// sum (a reduction kernel), the sum read back, then the indices placed by a
/// compaction kernel sized by the symbol.
Value nonZeroOnDevice(OpBuilder &b, Location loc, Value input, StringRef symbol,
                      Operation *forOp) {
  MLIRContext *ctx = b.getContext();
  int64_t chunks = kMaxNonZeroChunks;
  if (std::optional<int64_t> size =
          getConstantDimValue(productOf(ctx, getSymShape(input.getType()))))
    chunks = std::clamp<int64_t>((*size + kMinNonZeroChunkElements - 1) / kMinNonZeroChunkElements,
                                 1, kMaxNonZeroChunks);
  Type i64 = b.getI64Type();
  auto counts = CountNonZeroOp::create(b, loc, makeTensorType({getConstantDim(ctx, chunks)}, i64),
                                       input, b.getI64IntegerAttr(chunks));
  auto total = ReduceOp::create(b, loc, makeTensorType({getConstantDim(ctx, 1)}, i64), counts,
                                ReduceKind::sum, b.getDenseI64ArrayAttr({0}), true);
  readSize(b, loc, total, symbol, forOp);
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  Type type = makeTensorType({getConstantDim(ctx, rank), getSymbolDim(ctx, symbol)}, i64);
  return CompactNonZeroOp::create(b, loc, type, input, counts, symbolValue(b, loc, symbol));
}

void rewriteNonZero(NonZeroOp nonZero, StringRef symbol) {
  OpBuilder b(nonZero);
  Value indices = nonZeroOnDevice(b, nonZero.getLoc(), nonZero.getInput(), symbol, nonZero);
  nonZero.getResult().replaceAllUsesWith(indices);
  nonZero.erase();
}

/// compress(x, condition, axis) -> the condition's non_zero on the device (its
/// count is the kept count's symbol), flattened, and a gather of x (flattened
/// when there is no axis) by it: kernels throughout. The reference refuses a
/// condition longer than the axis, even when what is past the axis is false (a
/// gather would not): where the symbols do not prove it no longer, that is a
/// guard every call checks (over the inputs' symbols, `inputBound`), else the
/// op stays a host step.
bool rewriteCompress(CompressOp compress, StringRef symbol,
                     const llvm::DenseSet<AffineExpr> &inputBound) {
  auto type = cast<RankedTensorType>(compress.getInput().getType());
  SymShape dims = getSymShape(type);
  MLIRContext *ctx = compress.getContext();
  int64_t axis = 0;
  DimExpr length = productOf(ctx, dims);
  if (std::optional<uint64_t> a = compress.getAxis()) {
    axis = static_cast<int64_t>(*a);
    if (axis < 0)
      axis += type.getRank();
    if (axis < 0 || axis >= type.getRank())
      return false;
    length = dims[axis];
  }
  DimExpr conditionLength = getSymShape(compress.getCondition().getType())[0];
  std::optional<bool> fits =
      decideShapeAssumption(ShapeAssumption::Kind::LessEqual, conditionLength, length);
  if (fits == std::optional<bool>(false))
    return false;
  if (!fits) {
    auto inputSymbolsOnly = [&](DimExpr d) {
      bool ok = true;
      d.walk([&](AffineExpr e) {
        ok &= e.getKind() != AffineExprKind::SymbolId || inputBound.count(e);
      });
      return ok;
    };
    // A guard is checked once per call, at the top level: in an if's branch
    // it would refuse inputs for a branch that does not run.
    if (!inputSymbolsOnly(conditionLength) || !inputSymbolsOnly(length) ||
        !isa<func::FuncOp>(compress->getParentOp()))
      return false;
    // Guards go first, as kiln-materialize-guards places them.
    Block *block = compress->getBlock();
    OpBuilder guards = OpBuilder::atBlockBegin(block);
    GuardOp::create(guards, compress.getLoc(), GuardKind::less_equal,
                    DimsAttr::getCanonical(ctx, {conditionLength, length}),
                    guards.getStringAttr(describeOp(compress) +
                                         ": the condition must be no longer than what it "
                                         "selects along"));
  }
  OpBuilder b(compress);
  Location loc = compress.getLoc();
  GraphBuilder g{b, loc};
  Value rows = nonZeroOnDevice(b, loc, compress.getCondition(), symbol, compress);
  Value indices = g.reshape(rows, {getSymbolDim(ctx, symbol)});
  Value data = compress.getInput();
  if (!compress.getAxis())
    data = g.reshape(data, {length});
  Value gathered = GatherOp::create(b, loc, compress.getType(), data, indices,
                                    b.getI64IntegerAttr(axis));
  compress.getResult().replaceAllUsesWith(gathered);
  compress.erase();
  return true;
}

/// unique(x): everything computed per element (per slice along the axis) by
/// comparing it with every other, in reductions (n^2 work in all), as the
/// top_k kernel does: for the class and candidate counts models ask Unique
/// about, not vocabularies.
///
///   first[k]   = no j < k with key(j) == key(k)
///   rank[k]    = sorted: #{j first, key(j) < key(k)}; else #{j first, j < f[k]}
///                (f[k] the first occurrence of key(k)) -- inverse_indices
///   u          = #{first}, read back as the count's symbol
///   indices[r] = the first occurrence j of rank r;  counts[r] = #{k: rank[k] == r}
///   values     = gather(x, indices, axis)
///
/// A key is an element, or with an axis the slice at that position (compared
/// in row-major order of the other dims, lexicographically). Equal and less as
/// the reference's ordered map of keys sees them (0.0 and -0.0 are one).
void rewriteUnique(UniqueOp unique, StringRef symbol) {
  OpBuilder b(unique);
  MLIRContext *ctx = b.getContext();
  Location loc = unique.getLoc();
  GraphBuilder g{b, loc};
  auto input = cast<RankedTensorType>(unique.getInput().getType());
  SymShape dims = getSymShape(input);
  DimExpr one = getConstantDim(ctx, 1), u = getSymbolDim(ctx, symbol);
  std::optional<int64_t> axisAttr = unique.getAxis();
  int64_t axis = !axisAttr ? 0 : *axisAttr < 0 ? *axisAttr + input.getRank() : *axisAttr;
  // The number of keys, and each key's position as a column and a row.
  DimExpr n = axisAttr ? dims[axis] : productOf(ctx, dims);
  Value positions = g.iota(n);
  Value positionColumn = g.reshape(positions, {n, one});
  Value positionRow = g.reshape(positions, {one, n});
  // equal() and less() give [n, n] tensors: [k, j] compares key(j) with
  // key(k). Without an axis they are fresh compares each time (each fuses
  // into the reduction that reads it: nothing of n^2 size is stored); with
  // one they are computed once, reducing over the slices.
  std::function<Value()> equal, less;
  Value data; // what the values gather from, along `axis`
  if (axisAttr) {
    SmallVector<int64_t> perm = {axis};
    SmallVector<DimExpr> rest;
    for (int64_t d = 0; d < input.getRank(); ++d)
      if (d != axis) {
        perm.push_back(d);
        rest.push_back(dims[d]);
      }
    DimExpr m = productOf(ctx, rest);
    Value moved = inferred<TransposeOp>(
        b, loc, {unique.getInput()}, {b.getNamedAttr("permutation", b.getDenseI64ArrayAttr(perm))});
    Value keys = g.reshape(moved, {n, m});
    Value mine = g.reshape(keys, {n, one, m}), theirs = g.reshape(keys, {one, n, m});
    Value same = g.reduce(ReduceKind::all, g.compare(CompareDirection::eq, theirs, mine), 2);
    // The first position the keys differ at (m when they do not), and the
    // two keys' elements there.
    Value at = g.reshape(g.iota(m), {one, one, m});
    Value differ = g.reduce(
        ReduceKind::min,
        g.select(g.compare(CompareDirection::ne, theirs, mine), at, g.scalar(m)), 2);
    Value inside = g.compare(CompareDirection::lt, differ, g.scalar(m));
    Value clamped = g.select(inside, differ, g.scalar(0));
    auto elementAt = [&](Value which) {
      Value pairs = inferred<ConcatOp>(
          b, loc, {g.reshape(which, {n, n, one}), g.reshape(clamped, {n, n, one})},
          {b.getNamedAttr("axis", b.getI64IntegerAttr(2))});
      return inferred<GatherNDOp>(b, loc, {keys, pairs});
    };
    Value square = dimsValue(b, loc, {n, n});
    Value theirIndex = inferred<BroadcastToOp>(b, loc, {positionRow, square});
    Value myIndex = inferred<BroadcastToOp>(b, loc, {positionColumn, square});
    Value before = g.both(inside, g.compare(CompareDirection::lt, elementAt(theirIndex),
                                            elementAt(myIndex)));
    equal = [same] { return same; };
    less = [before] { return before; };
    data = unique.getInput();
  } else {
    data = input.getRank() == 1 ? unique.getInput() : g.reshape(unique.getInput(), {n});
    Value column = g.reshape(data, {n, one}), row = g.reshape(data, {one, n});
    equal = [&g, column, row] { return g.compare(CompareDirection::eq, column, row); };
    less = [&g, column, row] { return g.compare(CompareDirection::lt, row, column); };
  }
  // before[k, j]: j < k.
  Value before = g.compare(CompareDirection::lt, positionRow, positionColumn);
  Value first = inferred<NotOp>(b, loc, {g.reduce(ReduceKind::any, g.both(equal(), before), 1)});
  Value firstRow = g.reshape(first, {one, n});
  Value rank;
  if (unique.getSorted()) {
    rank = g.reduce(ReduceKind::sum, g.toI64(g.both(firstRow, less())), 1);
  } else {
    Value firstOccurrence =
        g.reduce(ReduceKind::min, g.select(equal(), positionRow, g.scalar(n)), 1);
    rank = g.reduce(ReduceKind::sum,
                    g.toI64(g.both(firstRow, g.compare(CompareDirection::lt, positionRow,
                                                       g.reshape(firstOccurrence, {n, one})))),
                    1);
  }
  Value count = g.reduce(ReduceKind::sum, g.toI64(first), 0, /*keep=*/true);
  readSize(b, loc, count, symbol, unique);
  // ranked[r, k]: key k has rank r (fresh per reduction, as above).
  Value rankRow = g.reshape(rank, {one, n}), outputColumn = g.reshape(g.iota(u), {u, one});
  auto ranked = [&] { return g.compare(CompareDirection::eq, rankRow, outputColumn); };
  Value indices = g.reduce(ReduceKind::sum,
                           g.select(g.both(ranked(), firstRow), positionRow, g.scalar(0)), 1);
  Value counts = g.reduce(ReduceKind::sum, g.toI64(ranked()), 1);
  Value values = GatherOp::create(b, loc, unique.getValues().getType(), data, indices,
                                  b.getI64IntegerAttr(axis));
  unique.getValues().replaceAllUsesWith(values);
  unique.getIndices().replaceAllUsesWith(indices);
  unique.getInverseIndices().replaceAllUsesWith(rank);
  unique.getCounts().replaceAllUsesWith(counts);
  unique.erase();
}

/// non_max_suppression -> each box's rank in its row's descending score order
/// (compares of every box with every other, fused into a sum), the greedy
/// selection per (batch, class) row as a kernel (kiln.nms_select), then the
/// taken entries listed by the non_zero of the taken mask on the device (the
/// count read back) with their box indices gathered: [batch, class, box] per
/// selection, in the reference's order.
void rewriteNonMaxSuppression(NonMaxSuppressionOp nms, StringRef symbol) {
  OpBuilder b(nms);
  MLIRContext *ctx = b.getContext();
  Location loc = nms.getLoc();
  GraphBuilder g{b, loc};
  SymShape dims = getSymShape(nms.getScores().getType());
  DimExpr batches = dims[0], classes = dims[1], count = dims[2], one = getConstantDim(ctx, 1);
  Value scores = nms.getScores();
  // [B, K, S, S]: box j (last dim) comes before box i (the one before).
  Value mine = g.reshape(scores, {batches, classes, count, one});
  Value theirs = g.reshape(scores, {batches, classes, one, count});
  Value positions = g.iota(count);
  Value myPosition = g.reshape(positions, {count, one});
  Value theirPosition = g.reshape(positions, {one, count});
  Value before = g.either(
      g.compare(CompareDirection::gt, theirs, mine),
      g.both(g.compare(CompareDirection::eq, theirs, mine),
             g.compare(CompareDirection::lt, theirPosition, myPosition)));
  if (Value threshold = nms.getScoreThreshold())
    before = g.both(before, g.compare(CompareDirection::gt, theirs, threshold));
  Value rank = g.reduce(ReduceKind::sum, g.toI64(before), 3);
  auto selectType = makeTensorType(dims, b.getI64Type());
  Value selected = NmsSelectOp::create(b, loc, selectType, nms.getBoxes(), scores, rank,
                                       nms.getMaxOutputBoxesPerClass(), nms.getIouThreshold(),
                                       nms.getScoreThreshold(), nms.getCenterPointBox());
  Value taken = g.compare(CompareDirection::ge, selected, g.scalar(0));
  // [3, n]: (batch, class, order) of each taken entry, in row-major order.
  Value where = nonZeroOnDevice(b, loc, taken, symbol, nms);
  DimExpr n = getSymbolDim(ctx, symbol);
  Value rows = inferred<TransposeOp>(b, loc, {where},
                                     {b.getNamedAttr("permutation", b.getDenseI64ArrayAttr({1, 0}))});
  Value box = inferred<GatherNDOp>(b, loc, {selected, rows});
  Value batchClass = GatherOp::create(
      b, loc, makeTensorType({n, getConstantDim(ctx, 2)}, b.getI64Type()), rows,
      ConstantOp::create(b, loc, DenseIntElementsAttr::get(
                                     RankedTensorType::get({2}, b.getI64Type()), {0L, 1L})),
      b.getI64IntegerAttr(1));
  Value listed = ConcatOp::create(b, loc, nms.getType(),
                                  ValueRange{batchClass, g.reshape(box, {n, one})},
                                  b.getI64IntegerAttr(1));
  nms.getResult().replaceAllUsesWith(listed);
  nms.erase();
}

/// top_k(x, k) with k computed at run time -> k read back as the symbol both
/// results are sized by, then a top_k whose k is that symbol (a kernel).
void rewriteTopK(TopKOp topK, StringRef symbol) {
  OpBuilder b(topK);
  Location loc = topK.getLoc();
  readSize(b, loc, topK.getK(), symbol, topK);
  topK.getKMutable().assign(symbolValue(b, loc, symbol));
  topK->removeAttr(kBindsDimsAttr);
}

/// slice(x, starts, ends, steps) whose length along one dim only a step's
/// count decides (keep[:8] after NonMaxSuppression: 8 may lie past the count,
/// and no guard can say it does not) -> that length, max(0, min(end, dim) -
/// min(start, dim)), computed from the bound count and read back as the
/// symbol the result is sized by, then the slice a kernel. Starts and ends
/// there must be sizes (numbers or dims, >= 0: an even Split's bounds over a
/// count) and the step 1; anything else stays the slice's own host step.
/// Returns whether it rewrote.
bool rewriteSlice(SliceOp slice, ArrayAttr binds, StringRef symbol) {
  if (binds.size() != 1)
    return false;
  auto entry = cast<ArrayAttr>(binds[0]);
  int64_t result = cast<IntegerAttr>(entry[0]).getInt(), axis = cast<IntegerAttr>(entry[1]).getInt();
  auto starts = getKnownElements(slice.getStarts()), ends = getKnownElements(slice.getEnds()),
       steps = getKnownElements(slice.getSteps());
  SymShape in = getSymShape(slice.getInput().getType());
  if (result != 0 || !starts || !ends || !steps || axis < 0 || axis >= (int64_t)in.size() ||
      (int64_t)starts->size() != (int64_t)in.size() || !in[axis])
    return false;
  DimExpr start = (*starts)[axis], end = (*ends)[axis];
  std::optional<int64_t> step = getConstantDimValue((*steps)[axis]);
  if (!start || !end || !step || !isProvablyNonNegative(start) ||
      !isProvablyNonNegative(end) || *step != 1)
    return false;
  OpBuilder b(slice);
  Location loc = slice.getLoc();
  Value dim = dimsValue(b, loc, {in[axis]});
  auto number = [&](int64_t v) { return dimsValue(b, loc, {getConstantDim(b.getContext(), v)}); };
  Value to = inferred<MinOp>(b, loc, {dim, dimsValue(b, loc, {end})});
  Value from = inferred<MinOp>(b, loc, {dim, dimsValue(b, loc, {start})});
  Value length = inferred<MaxOp>(b, loc, {inferred<SubOp>(b, loc, {to, from}), number(0)});
  readSize(b, loc, length, symbol, slice);
  slice->removeAttr(kBindsDimsAttr);
  slice->setAttr(kSizedOnDeviceAttr, b.getStrArrayAttr({symbol}));
  return true;
}

/// resize(x, size) whose size is data (read from a tensor) -> the size's
/// entries at the dims the data decides, read back as those dims' symbols,
/// then a resize whose size is the result's dims (a kernel; its scales are
/// size / input at run time).
void rewriteResize(ResizeOp resize, ArrayAttr binds) {
  OpBuilder b(resize);
  Location loc = resize.getLoc();
  SmallVector<DimExpr> positions;
  SmallVector<StringRef> symbols;
  for (Attribute a : binds) {
    auto entry = cast<ArrayAttr>(a);
    positions.push_back(getConstantDim(b.getContext(), cast<IntegerAttr>(entry[1]).getInt()));
    symbols.push_back(cast<StringAttr>(entry[2]).getValue());
  }
  Value picked = inferred<GatherOp>(b, loc, {resize.getSize(), dimsValue(b, loc, positions)},
                                    {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
  auto read = ReadSizesOp::create(b, loc, picked, b.getStrArrayAttr(symbols));
  read->setAttr(kSizesForAttr, b.getStringAttr(resize->getName().getStringRef()));
  resize.getSizeMutable().assign(
      dimsValue(b, loc, getSymShape(cast<RankedTensorType>(resize.getType()))));
  resize->removeAttr(kBindsDimsAttr);
}

/// range(start, limit, delta) whose operands are data (an anchor grid's
/// `arange(0, grid_width)` with the width cast to int32) -> its length,
/// max(ceil((limit - start) / delta), 0) in double as the reference computes
/// it, read back as the symbol it is sized by, then the range a kernel. A zero
/// delta, a NaN or a length past 2^62 (errors of the reference's range) read
/// as -1, which the read refuses with one line.
void rewriteRange(RangeOp range, StringRef symbol) {
  OpBuilder b(range);
  Location loc = range.getLoc();
  GraphBuilder g{b, loc};
  auto toF64 = [&](Value v) {
    return inferred<CastOp>(b, loc, {v}, {b.getNamedAttr("to", TypeAttr::get(b.getF64Type()))});
  };
  auto number = [&](double v) {
    return ConstantOp::create(b, loc, DenseElementsAttr::get(
                                          RankedTensorType::get({}, b.getF64Type()), v));
  };
  Value start = toF64(range.getStart()), limit = toF64(range.getLimit()),
        delta = toF64(range.getDelta());
  Value quotient = inferred<CeilOp>(
      b, loc, {inferred<DivOp>(b, loc, {inferred<SubOp>(b, loc, {limit, start}), delta})});
  // NaN compares false: a NaN bound or quotient is invalid too.
  Value valid = g.both(g.compare(CompareDirection::ne, delta, number(0.0)),
                       g.compare(CompareDirection::lt, quotient, number(0x1p62)));
  Value length = g.select(valid, inferred<MaxOp>(b, loc, {quotient, number(0.0)}), number(-1.0));
  readSize(b, loc, g.reshape(g.toI64(length), {getConstantDim(b.getContext(), 1)}), symbol,
           range);
  range->removeAttr(kBindsDimsAttr);
  range->setAttr(kSizedOnDeviceAttr, b.getStrArrayAttr({symbol}));
}

struct SizesOnDevicePass : impl::SizesOnDevicePassBase<SizesOnDevicePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    // The symbols the inputs bind: facts over them can be guards.
    llvm::DenseSet<AffineExpr> inputBound;
    for (Type t : func.getArgumentTypes())
      for (DimExpr d : getSymShape(t))
        if (d)
          d.walk([&](AffineExpr e) {
            if (e.getKind() == AffineExprKind::SymbolId)
              inputBound.insert(e);
          });
    rewriteBlock(func.getBody().front(), inputBound);
  }

  /// Rewrites the size-binding ops of `block` (the function's, or an if's
  /// branch: kiln-name-unknown-dims names sizes there too).
  void rewriteBlock(Block &block, const llvm::DenseSet<AffineExpr> &inputBound) {
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto ifOp = dyn_cast<IfOp>(op)) {
        rewriteBlock(ifOp.getThenRegion().front(), inputBound);
        rewriteBlock(ifOp.getElseRegion().front(), inputBound);
      }
      auto binds = op.getAttrOfType<ArrayAttr>(kBindsDimsAttr);
      if (!binds || isa<IfOp>(op))
        continue;
      // A resize's data sizes bind a symbol per dim they decide.
      if (auto resize = dyn_cast<ResizeOp>(op);
          resize && kernelsCanRead(resize.getInput()) && kernelsCanRead(resize.getSize()) &&
          llvm::all_of(binds, [](Attribute a) {
            return cast<IntegerAttr>(cast<ArrayAttr>(a)[0]).getInt() == 0;
          })) {
        rewriteResize(resize, binds);
        continue;
      }
      std::optional<StringRef> symbol = soleBoundSymbol(binds);
      if (!symbol)
        continue;
      if (auto nonZero = dyn_cast<NonZeroOp>(op); nonZero && kernelsCanRead(nonZero.getInput()))
        rewriteNonZero(nonZero, *symbol);
      else if (auto compress = dyn_cast<CompressOp>(op);
               compress && kernelsCanRead(compress.getInput()) &&
               kernelsCanRead(compress.getCondition()))
        rewriteCompress(compress, *symbol, inputBound);
      else if (auto unique = dyn_cast<UniqueOp>(op); unique && kernelsCanRead(unique.getInput()))
        rewriteUnique(unique, *symbol);
      else if (auto nms = dyn_cast<NonMaxSuppressionOp>(op);
               nms && kernelsCanRead(nms.getBoxes()) && kernelsCanRead(nms.getScores()))
        rewriteNonMaxSuppression(nms, *symbol);
      else if (auto topK = dyn_cast<TopKOp>(op);
               topK && kernelsCanRead(topK.getInput()) &&
               cast<RankedTensorType>(topK.getK().getType()).hasStaticShape())
        rewriteTopK(topK, *symbol);
      else if (auto slice = dyn_cast<SliceOp>(op); slice && kernelsCanRead(slice.getInput()))
        rewriteSlice(slice, binds, *symbol);
      else if (auto range = dyn_cast<RangeOp>(op);
               range && kernelsCanRead(range.getStart()) && kernelsCanRead(range.getLimit()) &&
               kernelsCanRead(range.getDelta()))
        rewriteRange(range, *symbol);
    }
  }
};

} // namespace
} // namespace kiln
