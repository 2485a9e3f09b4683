//===- FormKernels.cpp - fusion into kiln.kernel regions ------------------===//

#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_FORMKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

namespace {

/// Element types the generated kernels compute with.
bool isKernelElementType(Type t) {
  if (t.isF16() || t.isBF16() || t.isF32() || t.isF64() ||
      isa<Float8E4M3FNType, Float8E4M3FNUZType, Float8E5M2Type, Float8E5M2FNUZType>(t))
    return true;
  auto i = dyn_cast<IntegerType>(t);
  return i && (i.getWidth() == 1 || i.getWidth() == 8 || i.getWidth() == 16 ||
               i.getWidth() == 32 || i.getWidth() == 64);
}

/// A value a kernel can hold: a known element type and no dim that nothing is known
/// about (codegen needs every size, as a number or an expression of symbols).
bool isKernelValue(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !isKernelElementType(type.getElementType()))
    return false;
  for (DimExpr d : getSymShape(type))
    if (!d)
      return false;
  return true;
}

/// A 0-d or splat constant: copied into each kernel as a literal.
bool isSplatConstant(Operation *op) {
  auto c = dyn_cast_or_null<ConstantOp>(op);
  if (!c)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  return dense && dense.isSplat() && isKernelElementType(dense.getElementType());
}

/// True when every element of `v` is a constant (or symbolic constant) integer.
bool isKnownShapeOperand(Value v) {
  return isa_and_nonnull<ConstantOp, SymbolicConstantOp>(v.getDefiningOp());
}

/// Ops codegen can compute element by element from their operands' elements.
bool isInlinable(Operation *op) {
  if (op->hasTrait<OpTrait::Elementwise>() ||
      isa<CompareOp, SelectOp, CastOp, TransposeOp, ConcatOp, GatherOp, GatherElementsOp>(op))
    return true;
  if (isa<BroadcastToOp, ReshapeOp>(op))
    return isKnownShapeOperand(op->getOperand(1));
  if (auto slice = dyn_cast<SliceOp>(op))
    return isKnownShapeOperand(slice.getStarts()) && isKnownShapeOperand(slice.getEnds()) &&
           isa_and_nonnull<ConstantOp>(slice.getSteps().getDefiningOp());
  if (auto pad = dyn_cast<PadOp>(op))
    return isa_and_nonnull<ConstantOp>(pad.getPads().getDefiningOp());
  return false;
}

/// Ops that root a kernel but are never inlined into a consumer.
std::optional<StringRef> reductionSchedule(Operation *op) {
  if (isa<ReduceOp, ArgReduceOp>(op))
    return StringRef("reduction");
  if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp>(op))
    return StringRef("row");
  return std::nullopt;
}

bool isKernelOp(Operation *op) {
  if (!isInlinable(op) && !reductionSchedule(op))
    return false;
  if (op->getNumResults() != 1 || !isKernelValue(op->getResult(0)))
    return false;
  // Shape operands are read at codegen time; only data operands must be kernel values.
  unsigned dataOperands = isa<BroadcastToOp, ReshapeOp>(op) ? 1
                          : isa<SliceOp>(op)              ? 1
                          : isa<PadOp>(op)                ? 1
                                                          : op->getNumOperands();
  for (unsigned i = 0; i < dataOperands; ++i)
    if (!isKernelValue(op->getOperand(i)))
      return false;
  if (auto pad = dyn_cast<PadOp>(op))
    return isKernelValue(pad.getValue());
  return true;
}

/// The operands a kernel reads as data (shape operands are compile-time values).
SmallVector<Value> dataOperands(Operation *op) {
  if (isa<BroadcastToOp, ReshapeOp, SliceOp>(op))
    return {op->getOperand(0)};
  if (auto pad = dyn_cast<PadOp>(op))
    return {pad.getInput(), pad.getValue()};
  return SmallVector<Value>(op->getOperands());
}

/// True for a splat constant equal to `value`.
bool isSplat(Value v, double value) {
  auto c = dyn_cast_or_null<ConstantOp>(v.getDefiningOp());
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return false;
  if (isa<FloatType>(dense.getElementType()))
    return dense.getSplatValue<APFloat>().convertToDouble() == value;
  return false;
}

/// The other operand when `op` is `max(v, 0)` or `max(0, v)`.
bool isReluOf(Operation *op, Value v) {
  auto m = dyn_cast<MaxOp>(op);
  if (!m || m.getType() != v.getType())
    return false;
  return (m.getLhs() == v && isSplat(m.getRhs(), 0)) || (m.getRhs() == v && isSplat(m.getLhs(), 0));
}

/// The epilogues cuBLASLt and cuDNN fuse into the library op: a matmul takes
/// `+ bias` (a vector over its last dim, on float types) and then a ReLU; a conv
/// takes a ReLU after its bias. The op must be the only user of the value.
void absorbEpilogues(func::FuncOp func) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<MatmulOp, ConvOp>(op) && op->getParentOp() == func)
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    Value result = op->getResult(0);
    auto type = cast<RankedTensorType>(result.getType());
    if (!isa<FloatType>(type.getElementType()))
      continue;
    if (auto matmul = dyn_cast<MatmulOp>(op); matmul && !matmul.getBias() && type.getRank() >= 1 &&
                                              result.hasOneUse()) {
      auto add = dyn_cast<AddOp>(*result.getUsers().begin());
      if (add && add.getType() == type) {
        Value bias = add.getLhs() == result ? add.getRhs() : add.getLhs();
        auto biasType = cast<RankedTensorType>(bias.getType());
        if (biasType.getRank() == 1 && getSymShape(biasType)[0] == getSymShape(type).back() &&
            bias != result) {
          OpBuilder b(add);
          auto fused = MatmulOp::create(b, matmul.getLoc(), type, matmul.getLhs(), matmul.getRhs(),
                                        bias, Activation::none);
          add.getResult().replaceAllUsesWith(fused.getResult());
          add.erase();
          matmul.erase();
          op = fused;
          result = fused.getResult();
        }
      }
    }
    if (!result.hasOneUse() || !isReluOf(*result.getUsers().begin(), result))
      continue;
    Operation *relu = *result.getUsers().begin();
    if (auto matmul = dyn_cast<MatmulOp>(op))
      matmul.setActivation(Activation::relu);
    else
      cast<ConvOp>(op).setActivation(Activation::relu);
    relu->getResult(0).replaceAllUsesWith(result);
    relu->erase();
  }
}

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

struct FormKernelsPass : public impl::FormKernelsPassBase<FormKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    absorbEpilogues(func);
    splitLongReductions(func);
    Block &block = func.getBody().front();
    DenseMap<Operation *, unsigned> groupOf;
    SmallVector<SmallVector<Operation *>> groups;
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *root : llvm::reverse(ops)) {
      if (groupOf.count(root) || !isKernelOp(root))
        continue;
      unsigned g = groups.size();
      groups.push_back({root});
      groupOf[root] = g;
      SmallVector<Operation *> worklist = {root};
      while (!worklist.empty()) {
        Operation *cur = worklist.pop_back_val();
        for (Value operand : dataOperands(cur)) {
          Operation *producer = operand.getDefiningOp();
          if (!producer || producer->getBlock() != &block || groupOf.count(producer) ||
              !isKernelOp(producer) || !isInlinable(producer))
            continue;
          bool allUsersHere = llvm::all_of(producer->getUsers(), [&](Operation *user) {
            auto it = groupOf.find(user);
            return it != groupOf.end() && it->second == g;
          });
          if (!allUsersHere)
            continue; // materialized by its own kernel, not recomputed
          groupOf[producer] = g;
          groups[g].push_back(producer);
          worklist.push_back(producer);
        }
      }
    }
    for (SmallVector<Operation *> &group : groups)
      outline(group);
  }

  /// Moves `group` (root first) into a kiln.kernel placed where the root was.
  void outline(ArrayRef<Operation *> group) {
    Operation *root = group.front();
    llvm::SmallPtrSet<Operation *, 16> members(group.begin(), group.end());
    SmallVector<Operation *> ordered(group.begin(), group.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    llvm::SetVector<Value> inputs;
    SmallVector<Operation *> copiedConstants;
    for (Operation *op : ordered)
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && members.count(def))
          continue;
        if (isSplatConstant(def) || isa_and_nonnull<SymbolicConstantOp>(def) ||
            (isa_and_nonnull<ConstantOp>(def) && !llvm::is_contained(dataOperands(op), operand))) {
          if (!llvm::is_contained(copiedConstants, def))
            copiedConstants.push_back(def);
          continue;
        }
        inputs.insert(operand);
      }
    OpBuilder builder(root);
    StringRef schedule = reductionSchedule(root).value_or("pointwise");
    SmallVector<Type> inputTypes;
    for (Value v : inputs)
      inputTypes.push_back(v.getType());
    auto kernel = KernelOp::create(builder, root->getLoc(), root->getResultTypes(),
                                   builder.getStringAttr(schedule), inputs.getArrayRef());
    Block *body = builder.createBlock(&kernel.getBody());
    IRMapping mapping;
    for (Value v : inputs)
      mapping.map(v, body->addArgument(v.getType(), v.getLoc()));
    builder.setInsertionPointToStart(body);
    for (Operation *c : copiedConstants)
      builder.clone(*c, mapping);
    for (Operation *op : ordered)
      builder.clone(*op, mapping);
    YieldOp::create(builder, root->getLoc(), ValueRange{mapping.lookup(root->getResult(0))});
    root->getResult(0).replaceAllUsesWith(kernel.getResult(0));
    for (Operation *op : llvm::reverse(ordered))
      op->erase();
  }
};

} // namespace
} // namespace kiln
