//===- SizesOnDevice.cpp - data-dependent sizes computed on the device ----===//
//
// See Passes.td (kiln-sizes-on-device). Runs after kiln-name-unknown-dims,
// whose symbols it reuses: the op that would have bound a symbol from its
// host-computed result now has the symbol bound before it by a read_sizes of a
// device-computed size, so it (and everything after it) can be a kernel.
//
//===----------------------------------------------------------------------===//

#include "passes/KernelTypes.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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

/// The non_zero of `input` on the device, its count bound to `symbol` (for
/// the report, the read names `forOp`): the count per chunk (a kernel), their
/// sum (a reduction kernel), the sum read back, then the indices placed by a
/// compaction kernel sized by the symbol.
Value nonZeroOnDevice(OpBuilder &b, Location loc, Value input, StringRef symbol,
                      Operation *forOp) {
  MLIRContext *ctx = b.getContext();
  DimExpr n = getAffineConstantExpr(1, ctx);
  for (DimExpr d : getSymShape(input.getType()))
    n = n * d;
  int64_t chunks = kMaxNonZeroChunks;
  if (std::optional<int64_t> size = getConstantDimValue(canonicalizeDim(n)))
    chunks = std::clamp<int64_t>((*size + kMinNonZeroChunkElements - 1) / kMinNonZeroChunkElements,
                                 1, kMaxNonZeroChunks);
  Type i64 = b.getI64Type();
  auto counts = CountNonZeroOp::create(b, loc, makeTensorType({getConstantDim(ctx, chunks)}, i64),
                                       input, b.getI64IntegerAttr(chunks));
  auto total = ReduceOp::create(b, loc, makeTensorType({getConstantDim(ctx, 1)}, i64), counts,
                                ReduceKind::sum, b.getDenseI64ArrayAttr({0}), true);
  auto read = ReadSizesOp::create(b, loc, total, b.getStrArrayAttr({symbol}));
  read->setAttr(kSizesForAttr, b.getStringAttr(forOp->getName().getStringRef()));
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
  DimExpr length = getAffineConstantExpr(1, ctx);
  if (std::optional<uint64_t> a = compress.getAxis()) {
    axis = static_cast<int64_t>(*a);
    if (axis < 0)
      axis += type.getRank();
    if (axis < 0 || axis >= type.getRank())
      return false;
    length = dims[axis];
  } else {
    for (DimExpr d : dims)
      length = length * d;
    length = canonicalizeDim(length);
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
    if (!inputSymbolsOnly(conditionLength) || !inputSymbolsOnly(length))
      return false;
    // Guards go first, as kiln-materialize-guards places them.
    Block *block = compress->getBlock();
    OpBuilder guards = OpBuilder::atBlockBegin(block);
    std::string node = nodeNameOf(compress.getLoc());
    GuardOp::create(guards, compress.getLoc(), GuardKind::less_equal,
                    DimsAttr::getCanonical(ctx, {conditionLength, length}),
                    guards.getStringAttr(
                        "kiln.compress" + (node.empty() ? "" : " at '" + node + "'") +
                        ": the condition must be no longer than what it selects along"));
  }
  OpBuilder b(compress);
  Location loc = compress.getLoc();
  Type i64 = b.getI64Type();
  DimExpr kept = getSymbolDim(ctx, symbol);
  Value rows = nonZeroOnDevice(b, loc, compress.getCondition(), symbol, compress);
  Value indices =
      ReshapeOp::create(b, loc, makeTensorType({kept}, i64), rows, symbolValue(b, loc, symbol));
  Value data = compress.getInput();
  if (!compress.getAxis())
    data = ReshapeOp::create(b, loc, makeTensorType({length}, type.getElementType()), data,
                             dimsValue(b, loc, {length}));
  Value gathered = GatherOp::create(b, loc, compress.getType(), data, indices,
                                    b.getI64IntegerAttr(axis));
  compress.getResult().replaceAllUsesWith(gathered);
  compress.erase();
  return true;
}

/// Builds op `OpT` over `operands` with the result types its shape function
/// infers (the ops below are all well-typed by construction).
template <typename OpT>
Value inferred(OpBuilder &b, Location loc, ValueRange operands,
               ArrayRef<NamedAttribute> attrs = {}) {
  OperationState state(loc, OpT::getOperationName());
  state.addOperands(operands);
  state.addAttributes(attrs);
  SmallVector<Type> types;
  // The op's Properties are filled from the attributes when it is created;
  // infer from a created op, as the importer does.
  state.addTypes(NoneType::get(b.getContext()));
  Operation *op = b.create(state);
  auto infer = cast<InferTypeOpInterface>(op);
  LogicalResult ok = infer.inferReturnTypes(b.getContext(), loc, op->getOperands(),
                                            op->getRawDictionaryAttrs(),
                                            op->getPropertiesStorage(), op->getRegions(), types);
  assert(succeeded(ok) && types.size() == 1 && "a well-typed op");
  (void)ok;
  op->getResult(0).setType(types[0]);
  return op->getResult(0);
}

/// unique(x) without an axis: everything a kernel computes per element by
/// comparing it with every other (n^2 work in all, none of it materialized:
/// the [n, n] compares fuse into their reductions), as the top_k kernel does;
/// for the class and candidate counts models ask Unique about, not vocabularies:
///
///   first[k]   = no j < k with x[j] == x[k]
///   rank[k]    = sorted: #{j first, x[j] < x[k]}; else #{j first, j < f[k]}
///                (f[k] the first occurrence of x[k]) -- inverse_indices
///   u          = #{first}, read back as the count's symbol
///   indices[r] = the first occurrence j of rank r;  counts[r] = #{k: rank[k] == r}
///   values     = gather(x, indices)
///
/// Equal as the reference's ordered map sees it (neither less: 0.0 and -0.0).
void rewriteUnique(UniqueOp unique, StringRef symbol) {
  OpBuilder b(unique);
  MLIRContext *ctx = b.getContext();
  Location loc = unique.getLoc();
  Type i64 = b.getI64Type();
  auto input = cast<RankedTensorType>(unique.getInput().getType());
  DimExpr n = getAffineConstantExpr(1, ctx);
  for (DimExpr d : getSymShape(input))
    n = n * d;
  n = canonicalizeDim(n);
  DimExpr u = getSymbolDim(ctx, symbol), one = getConstantDim(ctx, 1);
  auto reshape = [&](Value v, ArrayRef<DimExpr> dims) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    return ReshapeOp::create(b, loc, makeTensorType(dims, type.getElementType()), v,
                             dimsValue(b, loc, dims));
  };
  auto scalar = [&](DimExpr d) {
    return SymbolicConstantOp::create(b, loc, RankedTensorType::get({}, i64),
                                      DimsAttr::getCanonical(ctx, {d}));
  };
  auto iota = [&](DimExpr length) {
    return inferred<RangeOp>(b, loc,
                             {scalar(getConstantDim(ctx, 0)), scalar(length),
                              scalar(getConstantDim(ctx, 1))});
  };
  auto compare = [&](CompareDirection d, Value l, Value r) {
    return inferred<CompareOp>(b, loc, {l, r},
                               {b.getNamedAttr("direction", CompareDirectionAttr::get(ctx, d))});
  };
  auto reduce = [&](ReduceKind kind, Value v, int64_t axis, bool keep = false) {
    return inferred<ReduceOp>(b, loc, {v},
                              {b.getNamedAttr("kind", ReduceKindAttr::get(ctx, kind)),
                               b.getNamedAttr("axes", b.getDenseI64ArrayAttr({axis})),
                               b.getNamedAttr("keep_dims", b.getBoolAttr(keep))});
  };
  auto toI64 = [&](Value v) {
    return inferred<CastOp>(b, loc, {v}, {b.getNamedAttr("to", TypeAttr::get(i64))});
  };
  auto both = [&](Value l, Value r) { return inferred<AndOp>(b, loc, {l, r}); };

  Value flat = input.getRank() == 1 ? unique.getInput() : reshape(unique.getInput(), {n});
  Value column = reshape(flat, {n, one}), row = reshape(flat, {one, n});
  Value positions = iota(n);
  Value positionColumn = reshape(positions, {n, one}), positionRow = reshape(positions, {one, n});
  // The [n, n] and [u, n] compares are built once per reduction that reads
  // them: each then fuses into its reduction's kernel (a shared one would be
  // materialized, n^2 bytes). equal[k, j]: x[k] == x[j]; before[k, j]: j < k.
  auto equal = [&] { return compare(CompareDirection::eq, column, row); };
  Value before = compare(CompareDirection::lt, positionRow, positionColumn);
  Value first = inferred<NotOp>(b, loc, {reduce(ReduceKind::any, both(equal(), before), 1)});
  Value firstRow = reshape(first, {one, n});
  Value rank;
  if (unique.getSorted()) {
    rank = reduce(ReduceKind::sum,
                  toI64(both(firstRow, compare(CompareDirection::lt, row, column))), 1);
  } else {
    Value firstOccurrence = reduce(
        ReduceKind::min,
        inferred<SelectOp>(b, loc, {equal(), positionRow, scalar(n)}), 1);
    rank = reduce(ReduceKind::sum,
                  toI64(both(firstRow, compare(CompareDirection::lt, positionRow,
                                               reshape(firstOccurrence, {n, one})))),
                  1);
  }
  Value count = reduce(ReduceKind::sum, toI64(first), 0, /*keep=*/true);
  auto read = ReadSizesOp::create(b, loc, count, b.getStrArrayAttr({symbol}));
  read->setAttr(kSizesForAttr, b.getStringAttr(unique->getName().getStringRef()));
  // ranked[r, k]: element k has rank r.
  Value rankRow = reshape(rank, {one, n}), outputColumn = reshape(iota(u), {u, one});
  auto ranked = [&] { return compare(CompareDirection::eq, rankRow, outputColumn); };
  Value zero = scalar(getConstantDim(ctx, 0));
  Value indices = reduce(ReduceKind::sum,
                         inferred<SelectOp>(b, loc, {both(ranked(), firstRow), positionRow, zero}), 1);
  Value counts = reduce(ReduceKind::sum, toI64(ranked()), 1);
  Value values = GatherOp::create(b, loc, unique.getValues().getType(), flat, indices,
                                  b.getI64IntegerAttr(0));
  unique.getValues().replaceAllUsesWith(values);
  unique.getIndices().replaceAllUsesWith(indices);
  unique.getInverseIndices().replaceAllUsesWith(rank);
  unique.getCounts().replaceAllUsesWith(counts);
  unique.erase();
}

/// top_k(x, k) with k computed at run time -> k read back as the symbol both
/// results are sized by, then a top_k whose k is that symbol (a kernel).
void rewriteTopK(TopKOp topK, StringRef symbol) {
  OpBuilder b(topK);
  Location loc = topK.getLoc();
  auto read = ReadSizesOp::create(b, loc, topK.getK(), b.getStrArrayAttr({symbol}));
  read->setAttr(kSizesForAttr, b.getStringAttr(topK->getName().getStringRef()));
  topK.getKMutable().assign(symbolValue(b, loc, symbol));
  topK->removeAttr(kBindsDimsAttr);
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
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
      auto binds = op.getAttrOfType<ArrayAttr>(kBindsDimsAttr);
      if (!binds)
        continue;
      std::optional<StringRef> symbol = soleBoundSymbol(binds);
      if (!symbol)
        continue;
      if (auto nonZero = dyn_cast<NonZeroOp>(op); nonZero && kernelsCanRead(nonZero.getInput()))
        rewriteNonZero(nonZero, *symbol);
      else if (auto compress = dyn_cast<CompressOp>(op);
               compress && kernelsCanRead(compress.getInput()) &&
               kernelsCanRead(compress.getCondition()))
        rewriteCompress(compress, *symbol, inputBound);
      else if (auto unique = dyn_cast<UniqueOp>(op);
               unique && !unique.getAxis() && kernelsCanRead(unique.getInput()))
        rewriteUnique(unique, *symbol);
      else if (auto topK = dyn_cast<TopKOp>(op);
               topK && kernelsCanRead(topK.getInput()) &&
               cast<RankedTensorType>(topK.getK().getType()).hasStaticShape())
        rewriteTopK(topK, *symbol);
    }
  }
};

} // namespace
} // namespace kiln
