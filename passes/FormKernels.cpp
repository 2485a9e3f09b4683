//===- FormKernels.cpp - fusion into kiln.kernel regions ------------------===//

#include "passes/Passes.h"
#include "ir/Kiln/KernelTypes.h"

#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/ShapeInference.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <set>

namespace kiln {
#define GEN_PASS_DEF_FORMKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

namespace {

/// A 0-d or splat constant: copied into each kernel as a literal.
bool isSplatConstant(Operation *op) {
  auto c = dyn_cast_or_null<ConstantOp>(op);
  if (!c)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  return dense && dense.isSplat() && isKernelElementType(dense.getElementType());
}

/// Whether codegen computes `op` element by element inside its consumers'
/// kernels (KernelFacts::isInlinable; false for ops without facts).
bool isInlinable(Operation *op) {
  auto facts = dyn_cast<KernelFacts>(op);
  return facts && facts.isInlinable();
}

/// The schedule of the kernel `op` roots, for ops never inlined into a
/// consumer (KernelFacts::rootSchedule).
std::optional<Schedule> reductionSchedule(Operation *op) {
  auto facts = dyn_cast<KernelFacts>(op);
  return facts ? facts.rootSchedule() : std::nullopt;
}

/// The attention whose result `op` only permutes, keeping the feature dim
/// last, and then perhaps reshapes (the head merge after attention: [b, h, s,
/// d] -> [b, s, h, d] -> [b, s, h * d]): the attention kernel writes its result
/// in that order (a reshape keeps the row-major order), so the head merge runs
/// no kernel of its own. Fills `chain` with the ops between (root first).
AttentionOp permutedAttention(Operation *op, SmallVectorImpl<Operation *> *chain = nullptr) {
  SmallVector<Operation *> ops;
  while (auto reshape = dyn_cast<ReshapeOp>(op)) {
    if (!isCompileTimeValue(reshape.getShape()))
      return {};
    ops.push_back(op);
    op = reshape.getInput().getDefiningOp();
    if (!op || !op->hasOneUse())
      return {};
  }
  auto transpose = dyn_cast_or_null<TransposeOp>(op);
  if (!transpose)
    return {};
  ops.push_back(op);
  auto attention = transpose.getInput().getDefiningOp<AttentionOp>();
  ArrayRef<int64_t> perm = transpose.getPermutation();
  if (!attention || !attention->hasOneUse() || attention->getBlock() != op->getBlock() ||
      perm.empty() || perm.back() != static_cast<int64_t>(perm.size()) - 1)
    return {};
  if (chain)
    chain->assign(ops.begin(), ops.end());
  return attention;
}

/// The result a kernel computes for `op` (KernelFacts::kernelResult).
Value kernelResult(Operation *op) {
  if (auto facts = dyn_cast<KernelFacts>(op))
    return facts.kernelResult();
  return op->getResult(0);
}

/// The operands a kernel reads as data (KernelFacts::kernelDataOperands).
SmallVector<Value> dataOperands(Operation *op) {
  if (auto facts = dyn_cast<KernelFacts>(op))
    return facts.kernelDataOperands();
  return SmallVector<Value>(op->getOperands());
}

} // namespace

std::string whyNotKernel(Operation *op) {
  if (!isInlinable(op) && !reductionSchedule(op)) {
    auto facts = dyn_cast<KernelFacts>(op);
    return facts ? facts.kernelRefusal() : "it has no CUDA C lowering";
  }
  if (auto topK = dyn_cast<TopKOp>(op)) {
    if (!isCompileTimeValue(topK.getK()))
      return "its k is computed at run time";
    if (!topK.getValues().use_empty())
      return "its values are read directly (kiln-form-kernels gathers them by the indices)";
  } else if (op->getNumResults() != 1) {
    return "it has several results";
  }
  // The result and the data operands (shape operands are read at codegen time)
  // need a known element type and no dim that nothing is known about: codegen
  // needs every size, as a number or an expression of symbols.
  SmallVector<Value> values = dataOperands(op);
  values.insert(values.begin(), kernelResult(op));
  for (Value v : values) {
    auto spelled = [&] {
      std::string type;
      llvm::raw_string_ostream(type) << v.getType();
      return type;
    };
    auto ranked = dyn_cast<RankedTensorType>(v.getType());
    if (!ranked)
      return "its value of type " + spelled() + " is not a ranked tensor";
    if (!isKernelElementType(ranked.getElementType()))
      return "generated kernels do not handle its element type (" + spelled() + ")";
    if (llvm::is_contained(getSymShape(ranked), DimExpr()))
      return "a dim of " + spelled() + " is unknown until run time";
  }
  return "";
}

namespace {

/// Whether a kernel can compute `op`; whyNotKernel says why not.
bool isKernelOp(Operation *op) { return whyNotKernel(op).empty(); }


/// The longest chain of ops one kernel computes per element. Past it the
/// producer starts a kernel of its own: codegen's expression walk stays
/// shallow (a 4000-op chain would overflow its stack), and fusing further
/// saves nothing (the chain is compute-bound long before).
constexpr unsigned kMaxFusedDepth = 128;

/// The most op elements one kernel's code may compute per output element.
/// Codegen computes a fused producer's element once per distinct position
/// its readers ask for it at (KernelEmitter::element remembers an element
/// only at the same position): through slices, concat branches, transposes
/// and broadcasts, a producer read at k positions by a consumer read at m is
/// computed k * m times, so fusion can multiply code. SSDlite's box decode
/// (four columns, each a slice of six anchor levels' concat of grids) fused
/// whole was a 2.4 MB PTX kernel that NVRTC took 77 s to build. Past the
/// budget the producer is a kernel of its own: its result is stored once
/// and read back, which costs a launch and its bytes, not a compile.
/// Ordinary kernels (normalizations, attention masks, box decodes of one
/// level) compute a few hundred.
constexpr size_t kMaxComputedElements = 1024;

/// Whether `user` reads its operand `number` at the position it computes:
/// an elementwise op over an operand of its own dims (of any element type: a
/// cast, a compare, a select's condition). Any other read asks for the
/// producer at a position of its own (KernelEmitter::element recomputes it
/// there).
bool readsAtOwnPosition(Operation *user, unsigned number) {
  auto facts = dyn_cast<KernelFacts>(user);
  if (!facts || facts.elementAccess() != ElementAccess::broadcast)
    return false;
  return getSymShape(user->getOperand(number).getType()) == getSymShape(kernelResult(user).getType());
}

struct FormKernelsPass : public impl::FormKernelsPassBase<FormKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    // The bodies of control flow form kernels of their own (innermost first);
    // a kernel never spans two blocks.
    SmallVector<Block *> nested;
    func.walk([&](Operation *op) {
      if (isa<IfOp, LoopOp, ScanOp>(op))
        for (Region &region : op->getRegions())
          for (Block &block : region)
            nested.push_back(&block);
    });
    // Symbols the inputs bind: a body's value whose dims use any other symbol
    // (one its own shapes introduced) has no value at run time, so it stays
    // off the kernels (the host step sizes it from the data).
    llvm::DenseSet<AffineExpr> inputBound;
    for (Type t : func.getArgumentTypes())
      for (DimExpr d : getSymShape(t))
        if (d && d.getKind() == AffineExprKind::SymbolId)
          inputBound.insert(d);
    // And the symbols steps bind as they run (kiln-name-unknown-dims), at
    // the top level and in an if's branches (never in a loop's body).
    llvm::DenseSet<AffineExpr> bound = inputBound;
    func.walk([&](Operation *op) {
      if (auto binds = op->getAttrOfType<ArrayAttr>(kBindsDimsAttr))
        for (Attribute b : binds)
          bound.insert(getSymbolDim(&getContext(),
                                    cast<StringAttr>(cast<ArrayAttr>(b)[2]).getValue()));
      // Sizes read back from the device (kiln-sizes-on-device).
      if (auto read = dyn_cast<ReadSizesOp>(op))
        for (Attribute s : read.getSymbols())
          bound.insert(getSymbolDim(&getContext(), cast<StringAttr>(s).getValue()));
    });
    for (Block *block : nested)
      formKernels(*block, /*topLevel=*/false, [&](Operation *op) {
        return !op->hasAttr(kBindsDimsAttr) && usesOnlyBoundSymbols(op, bound) &&
               !reliesOnUnprovenFacts(op, {});
      });
    // At the top level, facts over the inputs' symbols are guards checked
    // when a call starts; facts over symbols steps bind are the guards
    // kiln-materialize-guards put before the op (check steps). Any other
    // fact is checked by no one before the op runs.
    std::set<std::string> guarded;
    for (auto guard : func.getBody().front().getOps<GuardOp>())
      guarded.insert(shapeFactKey(static_cast<ShapeAssumption::Kind>(guard.getKind()), guard.getLhs(),
                             guard.getRhs()));
    formKernels(func.getBody().front(), /*topLevel=*/true, [&](Operation *op) {
      return !op->hasAttr(kBindsDimsAttr) &&
             (usesOnlyBoundSymbols(op, inputBound) ||
              (usesOnlyBoundSymbols(op, bound) && !reliesOnUnprovenFacts(op, guarded)));
    });
  }

  /// Whether every dim of `op`'s operands and results uses only `bound` symbols.
  static bool usesOnlyBoundSymbols(Operation *op, const llvm::DenseSet<AffineExpr> &bound) {
    bool ok = true;
    for (Type t : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
      for (DimExpr d : getSymShape(t))
        if (d)
          d.walk([&](AffineExpr e) {
            if (e.getKind() == AffineExprKind::SymbolId && !bound.count(e))
              ok = false;
          });
    return ok;
  }

  /// Whether `op`'s shape function takes a fact on trust (matmul dims equal,
  /// a broadcast dim 1 or equal) that the symbols do not prove. At the top
  /// level kiln-materialize-guards makes such facts guards every call checks;
  /// in a body they may hold only when the body runs (a branch taken for some
  /// shapes), so an op relying on one stays a host step, which checks its
  /// operands when it runs.
  static bool reliesOnUnprovenFacts(Operation *op, const std::set<std::string> &guarded) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return false;
    std::vector<ShapeAssumption> assumptions;
    SmallVector<Type> inferred;
    {
      ShapeAssumptionScope scope(assumptions);
      if (failed(infer.inferReturnTypes(op->getContext(), std::nullopt, op->getOperands(),
                                        op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
                                        op->getRegions(), inferred)))
        return true;
    }
    for (const ShapeAssumption &a : assumptions)
      if (a.lhs && a.rhs && decideShapeAssumption(a.kind, a.lhs, a.rhs) != std::optional<bool>(true) &&
          !guarded.count(shapeFactKey(a.kind, a.lhs, a.rhs)))
        return true;
    // A dim the shape function leaves unknown is trusted where
    // kiln-sizes-on-device computed it for this op (kSizedOnDeviceAttr).
    llvm::DenseSet<AffineExpr> sized;
    if (auto names = op->getAttrOfType<ArrayAttr>(kSizedOnDeviceAttr))
      for (Attribute n : names)
        sized.insert(getSymbolDim(op->getContext(), cast<StringAttr>(n).getValue()));
    for (auto [declared, type] : llvm::zip(op->getResultTypes(), inferred)) {
      if (declared == type)
        continue;
      auto d = dyn_cast<RankedTensorType>(declared), t = dyn_cast<RankedTensorType>(type);
      if (!d || !t || d.getElementType() != t.getElementType() || d.getRank() != t.getRank())
        return true;
      for (auto [want, got] : llvm::zip(getSymShape(d), getSymShape(t)))
        if (want != got && (got || !sized.count(want)))
          return true;
    }
    return false;
  }

  /// Fuses the ops of `block` into kernels: ops a kernel can compute that
  /// `allowed` accepts (their sizes are known when they run).
  /// A reshape with nothing fused into it moves no data: at the top level the
  /// artifact makes it a View step (its input's bytes under new dims), not a
  /// copy kernel. In a body it stays a kernel: a view there could alias a loop
  /// parameter that the body's results are copied into.
  static bool isLoneReshape(ArrayRef<Operation *> group) {
    auto reshape = group.size() == 1 ? dyn_cast<ReshapeOp>(group.front()) : ReshapeOp();
    return reshape && isCompileTimeValue(reshape.getShape());
  }

  void formKernels(Block &block, bool topLevel, llvm::function_ref<bool(Operation *)> allowed) {
    auto isCandidate = [&](Operation *op) { return isKernelOp(op) && allowed(op); };
    gatherTopKValues(block);
    DenseMap<Operation *, unsigned> groupOf;
    SmallVector<SmallVector<Operation *>> groups;
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *root : llvm::reverse(ops)) {
      if (groupOf.count(root) || !isCandidate(root))
        continue;
      unsigned g = groups.size();
      groups.push_back({root});
      groupOf[root] = g;
      DenseMap<Operation *, unsigned> depth = {{root, 0}};
      // The positions codegen computes each member's element at (ids; the
      // root's is 0), and their total: see kMaxComputedElements.
      DenseMap<Operation *, SmallVector<unsigned>> positions = {{root, {0}}};
      unsigned nextPosition = 1;
      size_t computed = 1;
      SmallVector<Operation *> worklist = {root};
      // A root that reads its inputs many times has them materialized.
      if (auto facts = dyn_cast<KernelFacts>(root); facts && !facts.fusesProducers())
        worklist.clear();
      // The head merge after attention: the attention kernel writes in its
      // order, and the attention's producers fuse into its loads.
      SmallVector<Operation *> merge;
      if (AttentionOp attention = permutedAttention(root, &merge);
          attention && isCandidate(attention) && llvm::all_of(merge, isCandidate)) {
        for (Operation *op : llvm::drop_begin(merge)) {
          groupOf[op] = g;
          depth[op] = 0;
          positions[op] = {0};
          groups[g].push_back(op);
        }
        groupOf[attention] = g;
        depth[attention] = 1;
        positions[attention] = {0};
        groups[g].push_back(attention);
        worklist = {attention};
      }
      while (!worklist.empty()) {
        Operation *cur = worklist.pop_back_val();
        for (Value operand : dataOperands(cur)) {
          Operation *producer = operand.getDefiningOp();
          if (!producer || producer->getBlock() != &block || groupOf.count(producer) ||
              !isCandidate(producer) || !isInlinable(producer))
            continue;
          if (depth[cur] + 1 > kMaxFusedDepth)
            continue; // a kernel of its own: see kMaxFusedDepth
          bool allUsersHere = llvm::all_of(producer->getUsers(), [&](Operation *user) {
            auto it = groupOf.find(user);
            return it != groupOf.end() && it->second == g;
          });
          if (!allUsersHere)
            continue; // materialized by its own kernel, not recomputed
          // Every user is a member, so their positions are final: a member's
          // users all joined before it did.
          SmallVector<unsigned> at;
          size_t mostOfAUser = 0;
          for (OpOperand &use : producer->getUses()) {
            ArrayRef<unsigned> ofUser = positions[use.getOwner()];
            mostOfAUser = std::max(mostOfAUser, ofUser.size());
            for (unsigned p : ofUser)
              at.push_back(readsAtOwnPosition(use.getOwner(), use.getOperandNumber())
                               ? p
                               : nextPosition++);
          }
          llvm::sort(at);
          at.erase(std::unique(at.begin(), at.end()), at.end());
          // Over budget, the cut falls where the copies multiply (a value
          // read at more positions than any one reader is computed at), so
          // that value is stored once and its readers (slices, say) still
          // fuse; a producer that only follows its reader joins, up to twice
          // the budget.
          size_t after = computed + at.size();
          if (after > kMaxComputedElements &&
              (at.size() > mostOfAUser || after > 2 * kMaxComputedElements))
            continue; // a kernel of its own: see kMaxComputedElements
          computed += at.size();
          positions[producer] = std::move(at);
          groupOf[producer] = g;
          depth[producer] = depth[cur] + 1;
          groups[g].push_back(producer);
          worklist.push_back(producer);
        }
      }
    }
    for (SmallVector<Operation *> &group : groups)
      if (!(topLevel && isLoneReshape(group)))
        outline(group);
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto constant = dyn_cast<ConstantOp>(op))
        fillLargeSplat(constant);
      // A size only kernels read now (they hold copies): no step of its own.
      else if (isa<SymbolicConstantOp>(op) && op.use_empty())
        op.erase();
    }
  }

  /// A top_k with a known k becomes a kernel computing its indices; its values
  /// are read through a gather_elements of them (a pointwise kernel that fuses
  /// with its readers).
  void gatherTopKValues(Block &block) {
    SmallVector<TopKOp> topKs;
    for (Operation &op : block)
      if (auto topK = dyn_cast<TopKOp>(op))
        if (isCompileTimeValue(topK.getK()) && !topK.getValues().use_empty())
          topKs.push_back(topK);
    for (TopKOp topK : topKs) {
      OpBuilder builder(topK->getContext());
      builder.setInsertionPointAfter(topK);
      auto gathered = GatherElementsOp::create(builder, topK.getLoc(), topK.getValues().getType(),
                                               topK.getInput(), topK.getIndices(), topK.getAxis());
      topK.getValues().replaceAllUsesWith(gathered.getResult());
    }
  }

  /// A splat constant of at least this many bytes that a library op, a graph
  /// break or the function's result reads is filled by a kernel at run time
  /// instead of stored as a weight: a ConstantOfShape to 2^28 elements costs a
  /// launch, not a gigabyte of artifact.
  static constexpr int64_t kFillKernelMinBytes = 4096;

  void fillLargeSplat(ConstantOp constant) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    if (!dense || !dense.isSplat() || !type || !type.hasStaticShape() ||
        !isKernelElementType(type.getElementType()))
      return;
    int64_t bits = type.getElementType().getIntOrFloatBitWidth();
    if (type.getNumElements() * ((bits + 7) / 8) < kFillKernelMinBytes)
      return;
    SmallVector<OpOperand *> reads;
    for (OpOperand &use : constant->getUses()) {
      Operation *user = use.getOwner();
      if (isa<KernelOp>(user) || !llvm::is_contained(dataOperands(user), use.get()))
        continue; // kernels copy splats in; shape operands need the constant itself
      reads.push_back(&use);
    }
    if (reads.empty())
      return;
    OpBuilder builder(constant->getContext());
    builder.setInsertionPointAfter(constant);
    auto kernel = KernelOp::create(builder, constant.getLoc(), TypeRange{type},
                                   Schedule::pointwise, ValueRange{});
    builder.createBlock(&kernel.getBody());
    Operation *copy = builder.clone(*constant);
    YieldOp::create(builder, constant.getLoc(), copy->getResults());
    for (OpOperand *use : reads)
      use->set(kernel.getResult(0));
    if (constant->use_empty())
      constant->erase();
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
    // A head merge whose attention joined the group writes as the attention does.
    AttentionOp merged = permutedAttention(root);
    Schedule schedule = merged && members.count(merged)
                            ? Schedule::attention
                            : reductionSchedule(root).value_or(Schedule::pointwise);
    SmallVector<Type> inputTypes;
    for (Value v : inputs)
      inputTypes.push_back(v.getType());
    Value result = kernelResult(root);
    auto kernel = KernelOp::create(builder, root->getLoc(), TypeRange{result.getType()},
                                   schedule, inputs.getArrayRef());
    Block *body = builder.createBlock(&kernel.getBody());
    IRMapping mapping;
    for (Value v : inputs)
      mapping.map(v, body->addArgument(v.getType(), v.getLoc()));
    builder.setInsertionPointToStart(body);
    for (Operation *c : copiedConstants)
      builder.clone(*c, mapping);
    for (Operation *op : ordered)
      builder.clone(*op, mapping);
    YieldOp::create(builder, root->getLoc(), ValueRange{mapping.lookup(result)});
    result.replaceAllUsesWith(kernel.getResult(0));
    for (Operation *op : llvm::reverse(ordered))
      op->erase();
  }
};

} // namespace
} // namespace kiln
