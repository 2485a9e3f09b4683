//===- SplitReductions.cpp - long reductions in two steps -===//
//
// A reduction of very long rows to few results keeps a handful of blocks busy;
// splitting it into chunk partials and their total spreads the work.
//===----------------------------------------------------------------------===//

#include "passes/KernelTypes.h"
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
    if (axes.empty() || axes.back() != rank - 1 ||
        axes.front() != rank - static_cast<int64_t>(axes.size()))
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
    auto shapeConst = [&](ArrayRef<DimExpr> dims) {
      SmallVector<int64_t> v;
      for (DimExpr d : dims)
        v.push_back(*getConstantDimValue(d));
      auto t = RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getI64Type());
      return ConstantOp::create(b, loc, DenseIntElementsAttr::get(t, v));
    };
    Type element = type.getElementType();
    auto reshaped = ReshapeOp::create(b, loc, makeTensorType(chunked, element), r.getInput(),
                                      shapeConst(chunked));
    int64_t inner = chunked.size() - 1;
    SmallVector<DimExpr> partialDims(chunked.begin(), chunked.end() - 1);
    auto partial = ReduceOp::create(b, loc, makeTensorType(partialDims, element), reshaped,
                                    r.getKind(), b.getDenseI64ArrayAttr({inner}), false);
    auto total = ReduceOp::create(b, loc, makeTensorType(outer, element), partial, r.getKind(),
                                  b.getDenseI64ArrayAttr({inner - 1}), false);
    Value result = total;
    if (r.getKeepDims() || r.getType() != total.getType()) {
      SmallVector<DimExpr> finalDims = getSymShape(r.getType());
      result = ReshapeOp::create(b, loc, r.getType(), total, shapeConst(finalDims));
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
