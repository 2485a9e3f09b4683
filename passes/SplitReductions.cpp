//===- SplitReductions.cpp - long reductions in two steps -===//
//
// A reduction of very long rows to few results keeps a handful of blocks busy;
// splitting it into chunk partials and their total spreads the work. So does
// a column reduction (leading axes reduced: a thread per result walks its
// column) with too few results to fill the device: its columns are cut into
// chunks, a thread per chunk and result, then a thread per result sums the
// chunks.
//===----------------------------------------------------------------------===//

#include "ir/Kiln/KernelTypes.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace kiln {
#define GEN_PASS_DEF_SPLITREDUCTIONSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Reductions this long, to this few results, run as two reductions (split
/// reduction): a block per chunk, then one over the chunks' partial results, so
/// many blocks share the work. Chunks have equal sizes, so even mean splits.
constexpr int64_t kSplitReductionMinLength = 1 << 16;
constexpr int64_t kSplitReductionMaxResults = 64;

/// A divisor of `n` to use as the chunk count: the largest in [64, 1024].
std::optional<int64_t> chunkCount(int64_t n) {
  for (int64_t c = 1024; c >= 64; --c)
    if (n % c == 0)
      return c;
  return std::nullopt;
}

/// Column reductions with fewer results than this split when each chunk still
/// walks kMinColumnChunk elements: about 2^16 threads then share the work
/// (an H200 holds 132 x 2048). Only those of at least kMinColumnElements
/// elements and kMinColumnRows rows: a smaller one is over before a second
/// launch would pay.
constexpr int64_t kColumnThreads = 1 << 16;
constexpr int64_t kMinColumnChunk = 16;
constexpr int64_t kMinColumnElements = 1 << 16;
constexpr int64_t kMinColumnRows = 1024;

/// The chunk count of a column reduction of `length` rows to `results`
/// results: the largest divisor of `length` up to kColumnThreads / results
/// (at most 1024) that leaves chunks of at least kMinColumnChunk rows.
std::optional<int64_t> columnChunkCount(int64_t length, int64_t results) {
  int64_t most = std::min<int64_t>(1024, kColumnThreads / std::max<int64_t>(results, 1));
  for (int64_t c = most; c >= 2; --c)
    if (length % c == 0 && length / c >= kMinColumnChunk)
      return c;
  return std::nullopt;
}

/// `shape` as an i64 constant shape operand (static dims).
Value shapeConstant(OpBuilder &b, Location loc, ArrayRef<DimExpr> dims) {
  SmallVector<int64_t> v;
  for (DimExpr d : dims)
    v.push_back(*getConstantDimValue(d));
  auto t = RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getI64Type());
  return ConstantOp::create(b, loc, DenseIntElementsAttr::get(t, v));
}

/// A reduction over the leading `reducedRank` axes of a static `type` with
/// few results: [rows, rest...] as [chunks, rows / chunks, rest...], reduced
/// over axis 1 (the partials: a thread per chunk and result), then over axis
/// 0 (a thread per result over the chunks). Mean splits too: chunks are
/// equal.
void splitColumnReduction(ReduceOp r, RankedTensorType type, int64_t reducedRank) {
  MLIRContext *ctx = r.getContext();
  int64_t rank = type.getRank(), rows = 1, results = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < reducedRank ? rows : results) *= type.getDimSize(d);
  if (results >= kColumnThreads || rows < kMinColumnRows || rows * results < kMinColumnElements)
    return;
  std::optional<int64_t> chunks = columnChunkCount(rows, results);
  if (!chunks)
    return;
  OpBuilder b(r);
  Location loc = r.getLoc();
  SmallVector<DimExpr> rest, chunked = {getConstantDim(ctx, *chunks), getConstantDim(ctx, rows / *chunks)};
  for (int64_t d = reducedRank; d < rank; ++d)
    rest.push_back(getConstantDim(ctx, type.getDimSize(d)));
  chunked.append(rest.begin(), rest.end());
  Type element = type.getElementType();
  auto reshaped = ReshapeOp::create(b, loc, makeTensorType(chunked, element), r.getInput(),
                                    shapeConstant(b, loc, chunked));
  SmallVector<DimExpr> partialDims = {chunked[0]};
  partialDims.append(rest.begin(), rest.end());
  auto partial = ReduceOp::create(b, loc, makeTensorType(partialDims, element), reshaped,
                                  r.getKind(), b.getDenseI64ArrayAttr({1}), false);
  auto total = ReduceOp::create(b, loc, makeTensorType(rest, element), partial, r.getKind(),
                                b.getDenseI64ArrayAttr({0}), false);
  Value result = total;
  if (r.getType() != total.getType())
    result = ReshapeOp::create(b, loc, r.getType(), total,
                               shapeConstant(b, loc, getSymShape(r.getType())));
  r.getResult().replaceAllUsesWith(result);
  r.erase();
}

void splitLongReductions(func::FuncOp func) {
  SmallVector<ReduceOp> reduces;
  func.walk([&](ReduceOp r) {
    if (r->getParentOp() == func)
      reduces.push_back(r);
  });
  MLIRContext *ctx = func.getContext();
  for (ReduceOp r : reduces) {
    auto type = cast<RankedTensorType>(r.getInput().getType());
    if (!type.hasStaticShape() || !isKernelElementType(type.getElementType()))
      continue;
    int64_t rank = type.getRank();
    SmallVector<int64_t> axes;
    for (int64_t a : r.getAxes())
      axes.push_back(a < 0 ? a + rank : a);
    llvm::sort(axes);
    if (axes.empty())
      continue;
    bool leading = axes.front() == 0 && axes.back() == static_cast<int64_t>(axes.size()) - 1 &&
                   axes.back() != rank - 1;
    if (leading) {
      splitColumnReduction(r, type, static_cast<int64_t>(axes.size()));
      continue;
    }
    if (axes.back() != rank - 1 || axes.front() != rank - static_cast<int64_t>(axes.size()))
      continue; // only trailing reductions
    int64_t length = 1, results = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d >= axes.front() ? length : results) *= type.getDimSize(d);
    std::optional<int64_t> chunks = chunkCount(length);
    if (length < kSplitReductionMinLength || results > kSplitReductionMaxResults || !chunks)
      continue;
    OpBuilder b(r);
    Location loc = r.getLoc();
    SmallVector<DimExpr> outer, chunked;
    for (int64_t d = 0; d < axes.front(); ++d)
      outer.push_back(getConstantDim(ctx, type.getDimSize(d)));
    chunked = outer;
    chunked.push_back(getConstantDim(ctx, *chunks));
    chunked.push_back(getConstantDim(ctx, length / *chunks));
    Type element = type.getElementType();
    auto reshaped = ReshapeOp::create(b, loc, makeTensorType(chunked, element), r.getInput(),
                                      shapeConstant(b, loc, chunked));
    int64_t inner = chunked.size() - 1;
    SmallVector<DimExpr> partialDims(chunked.begin(), chunked.end() - 1);
    auto partial = ReduceOp::create(b, loc, makeTensorType(partialDims, element), reshaped,
                                    r.getKind(), b.getDenseI64ArrayAttr({inner}), false);
    auto total = ReduceOp::create(b, loc, makeTensorType(outer, element), partial, r.getKind(),
                                  b.getDenseI64ArrayAttr({inner - 1}), false);
    Value result = total;
    if (r.getKeepDims() || r.getType() != total.getType()) {
      SmallVector<DimExpr> finalDims = getSymShape(r.getType());
      result = ReshapeOp::create(b, loc, r.getType(), total, shapeConstant(b, loc, finalDims));
    }
    r.getResult().replaceAllUsesWith(result);
    r.erase();
  }
}

struct SplitReductionsPass : public impl::SplitReductionsPassBase<SplitReductionsPass> {
  void runOnOperation() override { splitLongReductions(getOperation()); }
};

} // namespace
} // namespace kiln
