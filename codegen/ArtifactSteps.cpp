//===- ArtifactSteps.cpp - ops as artifact steps ----------------------------===//
//
// ArtifactWriter's walk of a function: each op becomes a step (a kernel
// launch, a library call, a graph break, a size read, control flow with its
// bodies), and what --explain and --report say of it.
//
//===----------------------------------------------------------------------===//

#include "codegen/ArtifactWriter.h"

#include "kiln/artifact/Plan.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/ScopeExit.h"

using namespace mlir;

namespace kiln {

/// A top-level reshape outside any kernel whose result dims the plan can
/// evaluate from the symbols: a View step, its input's bytes under new dims
/// (kiln-form-kernels leaves a reshape with nothing fused into it for this).
static bool isViewReshape(Operation *op) {
  auto reshape = dyn_cast<ReshapeOp>(op);
  if (!reshape || !isa<func::FuncOp>(op->getParentOp()) ||
      !isa_and_nonnull<ConstantOp, SymbolicConstantOp>(reshape.getShape().getDefiningOp()))
    return false;
  return llvm::all_of(getSymShape(reshape.getType()), [](DimExpr d) { return bool(d); });
}


/// An If, Loop or Scan step; --explain and --strict name it as a graph break.
FailureOr<EncodedStep> ArtifactWriter::encodeControlStep(Operation *op) {
  // The host drives control flow: --explain and --strict name it with the
  // synchronizations it costs, before the steps of its bodies.
  std::string type;
  llvm::raw_string_ostream(type) << op->getResult(0).getType();
  std::string why, cost;
  if (isa<IfOp>(op)) {
    why = "control flow: which branch runs depends on the data";
    cost = "on CUDA a stream synchronization per call to read the condition; the branch's "
           "steps run on the device";
  } else if (isa<LoopOp>(op)) {
    why = "control flow: the host runs the body once per iteration";
    cost = "on CUDA a stream synchronization per call to read the trip count and condition, "
           "and one per iteration when the body computes its condition; the body's steps run "
           "on the device";
  } else {
    why = "control flow: the host runs the body once per scanned slice";
    cost = "a launch of each body step per slice, no synchronization; slices along the first "
           "dim are views, others copies";
  }
  graphBreaks.push_back(llvm::json::Object{
      {"op", op->getName().getStringRef().str()},
      {"node", nodeNameOf(op->getLoc())},
      {"step", isa<IfOp>(op) ? "If" : isa<LoopOp>(op) ? "Loop" : "Scan"},
      {"result", type},
      {"why", why},
      {"cost", cost}});
  return encodeControl(op);
}

/// A launch of `k`'s generated kernel, emitted and added to the kernel table
/// (and the report) the first time its code is met.
FailureOr<EncodedStep> ArtifactWriter::encodeKernelStep(KernelOp k) {
  FailureOr<GeneratedKernel> g = emitKernel(k);
  if (failed(g))
    return failure();
  // Writing into an input's bytes is safe only where the input is the
  // caller's (a model input, at the top level) and nothing else reads it.
  if (g->inPlaceInput >= 0) {
    auto cache = dyn_cast<BlockArgument>(k->getOperand(g->inPlaceInput));
    if (!cache || cache.getOwner() != &func.getBody().front() || !cache.hasOneUse() ||
        k->getBlock() != &func.getBody().front())
      return k.emitOpError() << "writes its result into the bytes of operand "
                             << g->inPlaceInput
                             << " (kiln.cache_update, or kiln.cache_write in place), which must be a model input nothing "
                                "else reads";
  }
  auto [it, inserted] = kernelIds.emplace(g->name, static_cast<int>(kernels.size()));
  if (inserted) {
    kernels.push_back(*g);
    // The signature the runtime checks launches against: result, then inputs.
    std::vector<fb::DType> signature;
    std::vector<flatbuffers::Offset<fb::BufferShape>> shapes;
    for (Type t : llvm::concat<const Type>(k->getResultTypes(), k->getOperandTypes())) {
      std::optional<ref::DType> d = toRefType(cast<RankedTensorType>(t).getElementType());
      if (!d)
        return k.emitOpError() << "has a buffer of type " << t << " with no runtime dtype";
      signature.push_back(static_cast<fb::DType>(*d));
      std::vector<flatbuffers::Offset<fb::Dim>> dims;
      for (DimExpr e : getSymShape(t))
        dims.push_back(dim(e));
      shapes.push_back(fb::CreateBufferShape(builder, builder.CreateVector(dims)));
    }
    kernelSignatures.push_back(std::move(signature));
    kernelShapes.push_back(std::move(shapes));
    llvm::json::Array ops;
    k.getBody().walk([&](Operation *inner) {
      if (!isa<YieldOp>(inner))
        ops.push_back(inner->getName().getStringRef().str());
    });
    llvm::json::Array syms(g->symbols);
    // What launches size their grids by: "[rows]" as the IR spells dims.
    std::string items = "elements of the result";
    if (g->workItems) {
      items.clear();
      llvm::raw_string_ostream(items) << DimsAttr::getCanonical(k.getContext(), {g->workItems});
    }
    llvm::json::Object entry{{"name", g->name},
                             {"schedule", g->schedule},
                             {"work_items", items},
                             {"ops", std::move(ops)},
                             {"inputs", static_cast<int64_t>(k->getNumOperands())},
                             {"symbols", std::move(syms)}};
    addLintFacts(entry, *g);
    kernelReport.push_back(std::move(entry));
  }
  if (g->inPlaceInput >= 0)
    return EncodedStep{fb::StepOp::KernelInPlace,
                       fb::CreateKernelInPlace(builder, it->second, g->inPlaceInput).Union()};
  return EncodedStep{fb::StepOp::KernelLaunch, fb::CreateKernelLaunch(builder, it->second).Union()};
}

/// A read of sizes the device computed; --explain lists it as a synchronization.
FailureOr<EncodedStep> ArtifactWriter::encodeReadSizes(ReadSizesOp read) {
  if (loopBodies > 0)
    return read.emitOpError() << "reads sizes inside a loop's body";
  std::vector<int> symbols;
  llvm::json::Array names;
  for (Attribute s : read.getSymbols()) {
    symbols.push_back(symbolId(cast<StringAttr>(s).getValue().str()));
    names.push_back(cast<StringAttr>(s).getValue().str());
    stepBoundSymbols.insert(cast<StringAttr>(s).getValue().str());
  }
  // Not a graph break (nothing runs on the host), but a synchronization:
  // --explain lists it with what it waits for.
  auto sizesFor = read->getAttrOfType<StringAttr>(kSizesForAttr);
  std::string forOp = sizesFor ? sizesFor.getValue().str() : "kiln.read_sizes";
  std::string why =
      forOp == "kiln.top_k"    ? "its k is computed at run time: k alone is read, and the top_k "
                                 "runs as a kernel sized by it"
      : forOp == "kiln.resize" ? "its sizes are data: they alone are read, and the resize runs as "
                                 "a kernel sized by them"
      : forOp == "kiln.slice"  ? "it ends past a count the data decides: its length is computed "
                                 "on the device and read, and the slice runs as a kernel"
      : forOp == "kiln.range"  ? "its bounds are data: its length is computed on the device and "
                                 "read, and the range runs as a kernel"
                               : "its result size depends on the data: the device counts, only "
                                 "the count is read, and the op runs as kernels";
  sizeReads.push_back(llvm::json::Object{
      {"op", forOp},
      {"node", nodeNameOf(read->getLoc())},
      {"symbols", std::move(names)},
      {"why", why},
      {"cost", "on CUDA a stream synchronization per call to read " +
                   std::to_string(8 * symbols.size()) + " bytes"}});
  // What a negative size means, for the call's error.
  std::string node = nodeNameOf(read->getLoc());
  std::string op = node.empty() ? forOp : forOp + " at '" + node + "'";
  std::string what =
      forOp == "kiln.range"
          ? "the length of " + op +
                " (a zero delta, a NaN bound, or more elements than a tensor holds)"
          : "the size for " + op;
  return EncodedStep{fb::StepOp::ReadSizes,
                     fb::CreateReadSizes(builder, builder.CreateVector(symbols),
                                         builder.CreateString(what))
                         .Union()};
}

/// A symbol of `guard` in neither `bound` nor `alsoBound` (null: none), or "".
std::string ArtifactWriter::symbolOutside(GuardOp guard, const std::set<std::string> &bound,
                                          const std::set<std::string> *alsoBound) {
  std::string outside;
  for (DimExpr side : {guard.getLhs(), guard.getRhs()})
    side.walk([&](AffineExpr e) {
      if (e.getKind() == AffineExprKind::SymbolId && !bound.count(dimToString(e)) &&
          !(alsoBound && alsoBound->count(dimToString(e))))
        outside = dimToString(e);
    });
  return outside;
}

/// `guard` as the artifact's Predicate, listed in the report's guards.
flatbuffers::Offset<fb::Predicate> ArtifactWriter::encodePredicate(GuardOp guard,
                                                                   bool atCheckStep) {
  llvm::json::Object report{{"guard", guard.describe()}, {"reason", guard.getReason().str()}};
  if (atCheckStep)
    report["checked"] = "where its sizes are bound";
  guardReport.push_back(std::move(report));
  return fb::CreatePredicate(builder, static_cast<fb::PredicateKind>(guard.getKind()),
                             dim(guard.getLhs()), dim(guard.getRhs()),
                             builder.CreateString(guard.getReason().str()));
}

/// A guard over sizes steps bind: a check step where it stands (the call's
/// start, where Model.predicates are checked, is before those sizes exist).
FailureOr<EncodedStep> ArtifactWriter::encodeCheck(GuardOp guard) {
  // Every symbol must be bound before the check: by the inputs or by a step
  // written earlier (a read, a host step's result, an if's).
  if (std::string unbound = symbolOutside(guard, boundSymbols, &stepBoundSymbols);
      !unbound.empty())
    return guard.emitOpError() << "relies on symbol '" << unbound
                               << "', which neither an input nor a step before it binds";
  auto predicate = encodePredicate(guard, /*atCheckStep=*/true);
  return EncodedStep{fb::StepOp::Check,
                     fb::CreateCheck(builder, builder.CreateVector(std::vector{predicate})).Union()};
}

/// A symbolic constant's step: its dims, evaluated at run time.
FailureOr<EncodedStep> ArtifactWriter::encodeSymbolicConstant(SymbolicConstantOp s) {
  std::vector<flatbuffers::Offset<fb::Dim>> dims;
  for (DimExpr d : s.getValue().getDims())
    dims.push_back(dim(d));
  return EncodedStep{fb::StepOp::SymbolicConstant,
                     fb::CreateSymbolicConstant(builder, builder.CreateVector(dims)).Union()};
}

/// Every other op through the step table (StepEncoding.cpp); library calls and
/// graph breaks are reported.
FailureOr<EncodedStep> ArtifactWriter::encodeHostStep(Operation *op) {
  FailureOr<EncodedStep> e = encodeStep(op, builder);
  if (failed(e))
    return failure();
  EncodedStep encoded = *e;
  if (isHostStepOp(op)) {
    // Library ops (matmul, conv, conv_transpose, pool: cuBLASLt/cuDNN's place)
    // and graph breaks, which the host runs between generated kernels.
    std::string type;
    llvm::raw_string_ostream(type) << op->getResult(0).getType();
    llvm::json::Object entry{{"op", op->getName().getStringRef().str()},
                             {"step", fb::EnumNameStepOp(encoded.type)},
                             {"result", type}};
    // The operands' element type of a product: i8 for the int8 library
    // calls (kiln-integer-matmuls, kiln-integer-convs).
    if (isa<MatmulOp, ConvOp>(op)) {
      std::string input;
      llvm::raw_string_ostream(input) << getElementTypeOrSelf(op->getOperand(0).getType());
      entry["input_type"] = input;
    }
    // The epilogue it applies (a GELU or SiLU here is no kernel of its own).
    if (auto matmul = dyn_cast<MatmulOp>(op))
      entry["activation"] = stringifyActivation(matmul.getActivation()).str();
    // The layout kiln-select-conv-layout chose (the node names which op).
    if (isa<ConvOp, PoolOp>(op)) {
      bool channelsLast = isa<ConvOp>(op) ? cast<ConvOp>(op).getChannelsLast()
                                          : cast<PoolOp>(op).getChannelsLast();
      entry["node"] = nodeNameOf(op->getLoc());
      entry["layout"] = channelsLast ? "NHWC" : "NCHW";
    }
    libraryReport.push_back(std::move(entry));
    if (!isa<MatmulOp, ConvOp, ConvTransposeOp, PoolOp>(op)) {
      // Neither a generated kernel nor a GPU library call: --explain and
      // --strict name it, with why and what it costs.
      std::string why = whyNotKernel(op);
      if (why.empty() && op->hasAttr(kBindsDimsAttr))
        why = "its result size depends on the data";
      graphBreaks.push_back(llvm::json::Object{
          {"op", op->getName().getStringRef().str()},
          {"node", nodeNameOf(op->getLoc())},
          {"step", fb::EnumNameStepOp(encoded.type)},
          {"result", type},
          {"why", why.empty() ? "it was not fused into a kernel" : why},
          {"cost", isa<ReshapeOp>(op)
                       ? "on CUDA a stream synchronization per call to read its shape "
                         "operand; the data is copied on the device"
                       : "on CUDA a host round trip per call: its inputs are copied to the "
                         "host and its results back, with a stream synchronization"}});
    }
  }
  return encoded;
}

LogicalResult ArtifactWriter::addStep(Operation *op) {
  bool view = isViewReshape(op);
  FailureOr<std::vector<int>> inputs =
      ids(view ? ValueRange(op->getOperand(0)) : op->getOperands(), op);
  if (failed(inputs))
    return failure();
  // Host steps may have several results (top_k, unique), a size read none;
  // the others have one.
  if (op->getNumResults() != 1 && !isHostStepOp(op) &&
      !isa<IfOp, LoopOp, ScanOp, ReadSizesOp, GuardOp>(op))
    return op->emitOpError() << "has " << op->getNumResults()
                             << " results; artifact steps of its kind have one";
  FailureOr<EncodedStep> encoded = failure();
  if (isa<IfOp, LoopOp, ScanOp>(op))
    encoded = encodeControlStep(op);
  else if (auto k = dyn_cast<KernelOp>(op))
    encoded = encodeKernelStep(k);
  else if (auto read = dyn_cast<ReadSizesOp>(op))
    encoded = encodeReadSizes(read);
  else if (auto guard = dyn_cast<GuardOp>(op))
    encoded = encodeCheck(guard);
  else if (view)
    encoded = EncodedStep{fb::StepOp::View, fb::CreateView(builder).Union()};
  else if (auto sym = dyn_cast<SymbolicConstantOp>(op))
    encoded = encodeSymbolicConstant(sym);
  else
    encoded = encodeHostStep(op);
  if (failed(encoded))
    return failure();
  std::vector<int> outs;
  for (Value result : op->getResults()) {
    FailureOr<int> out = addValue(result, fb::ValueKind::Intermediate, "");
    if (failed(out))
      return failure();
    outs.push_back(*out);
  }
  // Sizes this step's data decides, named for the steps after it.
  std::vector<fb::DimBinding> binds;
  if (auto attr = op->getAttrOfType<ArrayAttr>(kBindsDimsAttr)) {
    if (loopBodies > 0)
      return op->emitOpError() << "binds symbols inside a loop's body";
    for (Attribute a : attr) {
      auto entry = cast<ArrayAttr>(a);
      binds.emplace_back(static_cast<int>(cast<IntegerAttr>(entry[0]).getInt()),
                         static_cast<int>(cast<IntegerAttr>(entry[1]).getInt()),
                         symbolId(cast<StringAttr>(entry[2]).getValue().str()));
      stepBoundSymbols.insert(cast<StringAttr>(entry[2]).getValue().str());
    }
  }
  currentSteps->push_back(fb::CreateStep(builder, encoded->type, encoded->table,
                                         builder.CreateVector(*inputs), builder.CreateVector(outs),
                                         binds.empty() ? 0 : builder.CreateVectorOfStructs(binds)));
  return success();
}

LogicalResult ArtifactWriter::addOp(Operation &op) {
  // A shape operand only views read: the view's dims are its value's, so the
  // operand is neither a weight nor a step.
  if (isa<ConstantOp, SymbolicConstantOp>(op) && !op.use_empty() &&
      llvm::all_of(op.getUses(), [](OpOperand &use) {
        return isViewReshape(use.getOwner()) && use.getOperandNumber() == 1;
      }))
    return success();
  if (auto c = dyn_cast<ConstantOp>(op))
    return addConstant(c);
  if (auto cast = dyn_cast<tensor::CastOp>(op)) {
    // A cast only restates a type: the result is the operand's value.
    auto it = valueIds.find(cast.getSource());
    if (it == valueIds.end())
      return op.emitOpError() << "reads a value the plan does not hold";
    valueIds[cast.getResult()] = it->second;
    return success();
  }
  return addStep(&op);
}

FailureOr<flatbuffers::Offset<fb::Body>> ArtifactWriter::addBody(Region &region) {
  Block &block = region.front();
  std::vector<int> parameters, results;
  for (BlockArgument arg : block.getArguments()) {
    FailureOr<int> id = addValue(arg, fb::ValueKind::Intermediate, "");
    if (failed(id))
      return failure();
    parameters.push_back(*id);
  }
  std::vector<flatbuffers::Offset<fb::Step>> bodySteps;
  std::vector<flatbuffers::Offset<fb::Step>> *outer = currentSteps;
  currentSteps = &bodySteps;
  bool loop = !isa<IfOp>(region.getParentOp());
  loopBodies += loop;
  llvm::scope_exit restore([&] {
    currentSteps = outer;
    loopBodies -= loop;
  });
  for (Operation &op : block) {
    if (auto yield = dyn_cast<YieldOp>(op)) {
      FailureOr<std::vector<int>> ids = this->ids(yield.getOperands(), &op);
      if (failed(ids))
        return failure();
      results = *ids;
    } else if (isa<GuardOp>(op)) {
      return op.emitOpError() << "inside control flow: guards are checked once per call, at "
                                 "the top level";
    } else if (failed(addOp(op))) {
      return failure();
    }
  }
  return fb::CreateBody(builder, builder.CreateVector(parameters),
                        builder.CreateVector(bodySteps), builder.CreateVector(results));
}

FailureOr<EncodedStep> ArtifactWriter::encodeControl(Operation *op) {
  if (auto ifOp = dyn_cast<IfOp>(op)) {
    FailureOr<flatbuffers::Offset<fb::Body>> thenBody = addBody(ifOp.getThenRegion());
    if (failed(thenBody))
      return failure();
    FailureOr<flatbuffers::Offset<fb::Body>> elseBody = addBody(ifOp.getElseRegion());
    if (failed(elseBody))
      return failure();
    return EncodedStep{fb::StepOp::If, fb::CreateIf(builder, *thenBody, *elseBody).Union()};
  }
  if (auto loop = dyn_cast<LoopOp>(op)) {
    FailureOr<flatbuffers::Offset<fb::Body>> body = addBody(loop.getBody());
    if (failed(body))
      return failure();
    return EncodedStep{fb::StepOp::Loop, fb::CreateLoop(builder, *body).Union()};
  }
  auto scan = cast<ScanOp>(op);
  int64_t scanned = scan.getNumScanInputs();
  int64_t states = static_cast<int64_t>(scan.getInputs().size()) - scanned;
  // Axes as the runtime takes them: non-negative, against the scanned input's
  // rank and the stacked output's.
  std::vector<int64_t> inputAxes, outputAxes;
  std::vector<uint8_t> inputReverse, outputReverse;
  for (int64_t j = 0; j < scanned; ++j) {
    int64_t rank = cast<RankedTensorType>(scan.getInputs()[states + j].getType()).getRank();
    int64_t axis = j < (int64_t)scan.getScanInputAxes().size() ? scan.getScanInputAxes()[j] : 0;
    inputAxes.push_back(axis < 0 ? axis + rank : axis);
    inputReverse.push_back(j < (int64_t)scan.getScanInputDirections().size() &&
                           scan.getScanInputDirections()[j] == 1);
  }
  for (int64_t k = 0; k + states < (int64_t)op->getNumResults(); ++k) {
    int64_t rank = cast<RankedTensorType>(op->getResult(states + k).getType()).getRank();
    int64_t axis = k < (int64_t)scan.getScanOutputAxes().size() ? scan.getScanOutputAxes()[k] : 0;
    outputAxes.push_back(axis < 0 ? axis + rank : axis);
    outputReverse.push_back(k < (int64_t)scan.getScanOutputDirections().size() &&
                            scan.getScanOutputDirections()[k] == 1);
  }
  FailureOr<flatbuffers::Offset<fb::Body>> body = addBody(scan.getBody());
  if (failed(body))
    return failure();
  return EncodedStep{
      fb::StepOp::Scan,
      fb::CreateScan(builder, *body, scanned, builder.CreateVector(inputAxes),
                     builder.CreateVector(inputReverse),
                     builder.CreateVector(outputAxes),
                     builder.CreateVector(outputReverse))
          .Union()};
}

} // namespace kiln
