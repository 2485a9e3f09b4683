//===- Artifact.cpp - the plan of a function, as the runtime reads it -----===//

#include "codegen/Artifact.h"

#include "codegen/DeviceLibrary.h"
#include "codegen/KernelCache.h"
#include "codegen/StepEncoding.h"
#include "interpreter/Interpreter.h"
#include "ir/Kiln/KilnDialect.h"
#include "kiln/artifact/Plan.h"
#include "kiln/nvrtc/Nvrtc.h"
#include "kiln/version.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <atomic>
#include <map>
#include <numeric>
#include <set>
#include <thread>

using namespace mlir;

namespace kiln {
namespace fb = kiln::schema;
using artifact::kFormatVersion;
using artifact::kWeightAlignment;

namespace {

/// The schema's schedule for codegen's name of one.
std::optional<fb::Schedule> scheduleOf(llvm::StringRef name) {
  if (name == "pointwise")
    return fb::Schedule::Pointwise;
  if (name == "reduction")
    return fb::Schedule::Reduction;
  if (name == "row")
    return fb::Schedule::Row;
  if (name == "compaction")
    return fb::Schedule::Compaction;
  if (name == "attention")
    return fb::Schedule::Attention;
  return std::nullopt;
}


class Writer {
public:
  Writer(func::FuncOp func, const ArtifactOptions &options)
      : func(func), options(options),
        cacheDir(options.cacheDir.empty() ? defaultCacheDir() : options.cacheDir),
        deviceLibrary(deviceLibraryText()) {}
  FailureOr<CompiledArtifact> build();

private:
  func::FuncOp func;
  const ArtifactOptions &options;
  /// Where cubins are cached (HostKernels resolves the same default).
  std::string cacheDir;
  /// The device library the kernels compile against: shipped in the artifact and
  /// part of every cubin's cache key.
  std::string deviceLibrary;
  flatbuffers::FlatBufferBuilder builder{1 << 16};
  llvm::DenseMap<Value, int> valueIds;
  llvm::DenseMap<Value, std::string> outputNames;
  std::vector<flatbuffers::Offset<fb::Value>> values;
  std::vector<std::string> symbols;
  std::map<std::string, int> symbolIds;
  std::vector<uint8_t> weightBlob;
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  std::vector<flatbuffers::Offset<fb::Step>> steps;
  /// Where addStep puts steps: `steps`, or the body being written.
  std::vector<flatbuffers::Offset<fb::Step>> *currentSteps = &steps;
  std::vector<GeneratedKernel> kernels;
  std::vector<std::vector<fb::DType>> kernelSignatures; ///< per kernel, result first
  std::vector<std::vector<flatbuffers::Offset<fb::BufferShape>>> kernelShapes; ///< likewise
  std::map<std::string, int> kernelIds;
  llvm::json::Array kernelReport, libraryReport, graphBreaks, variantReport;
  /// ReadSizes steps: sizes the device computed, read back alone.
  llvm::json::Array sizeReads;
  std::set<std::string> boundSymbols; ///< symbols an input dim binds

  int symbolId(const std::string &name) {
    auto [it, inserted] = symbolIds.emplace(name, static_cast<int>(symbols.size()));
    if (inserted)
      symbols.push_back(name);
    return it->second;
  }

  /// Postfix form of a dim; false for a dim it cannot express (stays unknown).
  bool appendDim(DimExpr d, std::vector<fb::ExprOp> &ops) {
    if (!d)
      return false;
    switch (d.getKind()) {
    case AffineExprKind::Constant:
      ops.emplace_back(fb::ExprKind::Constant, cast<AffineConstantExpr>(d).getValue());
      return true;
    case AffineExprKind::SymbolId:
      ops.emplace_back(fb::ExprKind::Symbol, symbolId(dimToString(d)));
      return true;
    case AffineExprKind::DimId:
      return false;
    default:
      break;
    }
    auto bin = cast<AffineBinaryOpExpr>(d);
    if (!appendDim(bin.getLHS(), ops) || !appendDim(bin.getRHS(), ops))
      return false;
    fb::ExprKind kind = d.getKind() == AffineExprKind::Add        ? fb::ExprKind::Add
                        : d.getKind() == AffineExprKind::Mul      ? fb::ExprKind::Mul
                        : d.getKind() == AffineExprKind::FloorDiv ? fb::ExprKind::FloorDiv
                        : d.getKind() == AffineExprKind::CeilDiv  ? fb::ExprKind::CeilDiv
                                                                  : fb::ExprKind::Mod;
    ops.emplace_back(kind, 0);
    return true;
  }

  flatbuffers::Offset<fb::Dim> dim(DimExpr d) {
    std::vector<fb::ExprOp> ops;
    if (!appendDim(d, ops))
      ops.clear();
    return fb::CreateDim(builder, builder.CreateVectorOfStructs(ops));
  }

  FailureOr<int> addValue(Value v, fb::ValueKind kind, std::string name, int weight = -1) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    std::optional<ref::DType> dtype = type ? toRefType(type.getElementType()) : std::nullopt;
    if (!dtype) {
      if (Operation *op = v.getDefiningOp())
        return op->emitOpError() << "result type " << v.getType() << " has no runtime dtype";
      return func.emitError() << "argument type " << v.getType() << " has no runtime dtype";
    }
    std::vector<flatbuffers::Offset<fb::Dim>> shape;
    for (DimExpr d : getSymShape(type))
      shape.push_back(dim(d));
    if (auto it = outputNames.find(v); name.empty() && it != outputNames.end())
      name = it->second;
    int id = static_cast<int>(values.size());
    values.push_back(fb::CreateValue(builder, builder.CreateString(name),
                                     static_cast<fb::DType>(*dtype), builder.CreateVector(shape),
                                     kind, weight));
    valueIds[v] = id;
    return id;
  }

  FailureOr<std::vector<int>> ids(ValueRange range, Operation *user) {
    std::vector<int> out;
    for (Value v : range) {
      auto it = valueIds.find(v);
      if (it == valueIds.end())
        return user->emitOpError() << "reads a value the plan does not hold";
      out.push_back(it->second);
    }
    return out;
  }

  LogicalResult addConstant(ConstantOp c);
  LogicalResult addStep(Operation *op);
  /// A constant, a cast (an alias) or a step, at the top level or in a body.
  LogicalResult addOp(Operation &op);
  /// The step table of a kiln.if, kiln.loop or kiln.scan, its bodies written.
  FailureOr<EncodedStep> encodeControl(Operation *op);
  /// A region's block as a Body: its arguments the parameters, its ops the
  /// steps, its yield the results.
  FailureOr<flatbuffers::Offset<fb::Body>> addBody(Region &region);
  /// Cubins of kernels[kernelIds[i]] for every requested arch, compiled with
  /// `defines` (those of the variant `variantName`, none for the generic
  /// kernels), into cubins[i]; those in `index32` from their 32-bit body.
  LogicalResult compileCubins(const std::vector<size_t> &kernelIds,
                              const std::vector<std::string> &defines,
                              std::vector<std::vector<flatbuffers::Offset<fb::Cubin>>> &cubins,
                              const std::string &variantName = "",
                              const std::set<size_t> &index32 = {});
  /// Host libraries of kernels[kernelIds], built with `defines`, for `variant`;
  /// those in `index32` from their 32-bit body.
  LogicalResult hostLibraries(const std::vector<size_t> &kernelIds,
                              const std::vector<std::string> &defines, int variant,
                              std::vector<flatbuffers::Offset<fb::HostLibrary>> &out,
                              const std::set<size_t> &index32 = {});
  /// The variants of options.variants: their kernels' cubins and host libraries.
  FailureOr<std::vector<flatbuffers::Offset<fb::Variant>>>
  buildVariants(std::vector<flatbuffers::Offset<fb::HostLibrary>> &hostLibs);
};

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

LogicalResult Writer::addConstant(ConstantOp c) {
  FailureOr<ref::Tensor> t = tensorFromElements(c.getValue(), c.getLoc());
  if (failed(t))
    return failure();
  size_t offset = (weightBlob.size() + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  weightBlob.resize(offset + t->byteSize());
  if (t->byteSize())
    std::memcpy(weightBlob.data() + offset, t->bytes(), t->byteSize());
  int weight = static_cast<int>(weights.size());
  weights.push_back(fb::CreateWeight(builder, offset, t->byteSize()));
  return addValue(c.getResult(), fb::ValueKind::Weight, "", weight);
}

LogicalResult Writer::addStep(Operation *op) {
  bool view = isViewReshape(op);
  FailureOr<std::vector<int>> inputs =
      ids(view ? ValueRange(op->getOperand(0)) : op->getOperands(), op);
  if (failed(inputs))
    return failure();
  // Host steps may have several results (top_k, unique), a size read none;
  // the others have one.
  if (op->getNumResults() != 1 && !isHostStepOp(op) && !isa<IfOp, LoopOp, ScanOp, ReadSizesOp>(op))
    return op->emitOpError() << "has " << op->getNumResults()
                             << " results; artifact steps of its kind have one";
  EncodedStep encoded;
  if (isa<IfOp, LoopOp, ScanOp>(op)) {
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
    FailureOr<EncodedStep> e = encodeControl(op);
    if (failed(e))
      return failure();
    encoded = *e;
  } else if (auto k = dyn_cast<KernelOp>(op)) {
    FailureOr<GeneratedKernel> g = emitKernel(k);
    if (failed(g))
      return failure();
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
                               {"inputs", static_cast<int64_t>(inputs->size())},
                               {"symbols", std::move(syms)}};
      addLintFacts(entry, *g);
      kernelReport.push_back(std::move(entry));
    }
    encoded = {fb::StepOp::KernelLaunch, fb::CreateKernelLaunch(builder, it->second).Union()};
  } else if (auto read = dyn_cast<ReadSizesOp>(op)) {
    if (currentSteps != &steps)
      return op->emitOpError() << "reads sizes inside control flow";
    std::vector<int> symbols;
    llvm::json::Array names;
    for (Attribute s : read.getSymbols()) {
      symbols.push_back(symbolId(cast<StringAttr>(s).getValue().str()));
      names.push_back(cast<StringAttr>(s).getValue().str());
    }
    // Not a graph break (nothing runs on the host), but a synchronization:
    // --explain lists it with what it waits for.
    auto sizesFor = op->getAttrOfType<StringAttr>(kSizesForAttr);
    std::string forOp = sizesFor ? sizesFor.getValue().str() : "kiln.read_sizes";
    std::string why = forOp == "kiln.top_k" ? "its k is computed at run time: k alone is read, and the top_k "
                               "runs as a kernel sized by it"
                             : "its result size depends on the data: the device counts, only the "
                               "count is read, and the op runs as kernels";
    sizeReads.push_back(llvm::json::Object{
        {"op", forOp},
        {"node", nodeNameOf(op->getLoc())},
        {"symbols", std::move(names)},
        {"why", why},
        {"cost", "on CUDA a stream synchronization per call to read " +
                     std::to_string(8 * symbols.size()) + " bytes"}});
    encoded = {fb::StepOp::ReadSizes,
               fb::CreateReadSizes(builder, builder.CreateVector(symbols)).Union()};
  } else if (view) {
    encoded = {fb::StepOp::View, fb::CreateView(builder).Union()};
  } else if (auto s = dyn_cast<SymbolicConstantOp>(op)) {
    std::vector<flatbuffers::Offset<fb::Dim>> dims;
    for (DimExpr d : s.getValue().getDims())
      dims.push_back(dim(d));
    encoded = {fb::StepOp::SymbolicConstant,
               fb::CreateSymbolicConstant(builder, builder.CreateVector(dims)).Union()};
  } else {
    FailureOr<EncodedStep> e = encodeStep(op, builder);
    if (failed(e))
      return failure();
    encoded = *e;
    if (isHostStepOp(op)) {
      // Library ops (matmul, conv, conv_transpose, pool: cuBLASLt/cuDNN's place)
      // and graph breaks, which the host runs between generated kernels.
      std::string type;
      llvm::raw_string_ostream(type) << op->getResult(0).getType();
      llvm::json::Object entry{{"op", op->getName().getStringRef().str()},
                               {"step", fb::EnumNameStepOp(encoded.type)},
                               {"result", type}};
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
  }
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
    if (currentSteps != &steps)
      return op->emitOpError() << "binds symbols inside control flow";
    for (Attribute a : attr) {
      auto entry = cast<ArrayAttr>(a);
      binds.emplace_back(static_cast<int>(cast<IntegerAttr>(entry[0]).getInt()),
                         static_cast<int>(cast<IntegerAttr>(entry[1]).getInt()),
                         symbolId(cast<StringAttr>(entry[2]).getValue().str()));
    }
  }
  currentSteps->push_back(fb::CreateStep(builder, encoded.type, encoded.table,
                                         builder.CreateVector(*inputs), builder.CreateVector(outs),
                                         binds.empty() ? 0 : builder.CreateVectorOfStructs(binds)));
  return success();
}

LogicalResult Writer::addOp(Operation &op) {
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

FailureOr<flatbuffers::Offset<fb::Body>> Writer::addBody(Region &region) {
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
  llvm::scope_exit restore([&] { currentSteps = outer; });
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

FailureOr<EncodedStep> Writer::encodeControl(Operation *op) {
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

LogicalResult
Writer::compileCubins(const std::vector<size_t> &kernelIds, const std::vector<std::string> &defines,
                      std::vector<std::vector<flatbuffers::Offset<fb::Cubin>>> &cubins,
                      const std::string &variantName, const std::set<size_t> &index32) {
  struct Job {
    size_t kernel; ///< index into kernelIds
    int sm;
    absl::StatusOr<nvrtc::NvrtcResult> result = absl::UnknownError("not run");
  };
  std::vector<Job> jobs;
  for (size_t k = 0; k < kernelIds.size(); ++k)
    for (int sm : options.cubinArchs)
      jobs.push_back({k, sm});
  std::string defineKey;
  for (const std::string &d : defines)
    defineKey += "\n" + d;
  std::string version = nvrtc::nvrtcVersion();
  if (!jobs.empty())
    llvm::sys::fs::create_directories(cacheDir); // a missing cache only means no reuse
  auto run = [&](Job &job) {
    const GeneratedKernel kernel = index32.count(kernelIds[job.kernel])
                                       ? withIndex32(kernels[kernelIds[job.kernel]])
                                       : kernels[kernelIds[job.kernel]];
    if (options.prebuiltCubins && defines.empty()) {
      auto it = options.prebuiltCubins->find(kernel.name);
      if (it != options.prebuiltCubins->end()) {
        job.result = *it->second;
        return;
      }
    }
    std::string tu = kernelTranslationUnit({kernel});
    // Cached by what NVRTC sees: the source, the device library, the arch,
    // NVRTC's version and a variant's defines.
    std::string key = tu + "\n" + deviceLibrary + "\nsm_" + std::to_string(job.sm) + "\n" +
                      version + defineKey;
    llvm::SmallString<256> base(cacheDir);
    std::string hex;
    llvm::raw_string_ostream(hex) << llvm::format_hex_no_prefix(llvm::xxh3_64bits(key), 16);
    llvm::sys::path::append(base, "cubin-" + hex);
    std::string cubinPath = (base + ".cubin").str(), ptxPath = (base + ".ptx").str();
    std::optional<std::string> cachedCubin = readCacheEntry(cubinPath);
    std::optional<std::string> cachedPtx = cachedCubin ? readCacheEntry(ptxPath) : std::nullopt;
    if (cachedCubin && cachedPtx) {
      job.result = nvrtc::NvrtcResult{std::move(*cachedCubin), std::move(*cachedPtx), ""};
      return;
    }
    nvrtc::NvrtcOptions nvrtcOptions;
    nvrtcOptions.smVersion = job.sm;
    nvrtcOptions.headers = {deviceLibraryHeader()};
    nvrtcOptions.extraOptions = defines;
    job.result = nvrtc::compileWithNvrtc(tu, kernel.name + ".cu", nvrtcOptions);
    if (job.result.ok()) {
      writeCacheEntry(cubinPath, job.result->cubin); // a failed write only means no reuse
      writeCacheEntry(ptxPath, job.result->ptx);
    }
  };
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, options.jobs); ++t)
    threads.emplace_back([&] {
      for (size_t j = next++; j < jobs.size(); j = next++)
        run(jobs[j]);
    });
  for (std::thread &t : threads)
    t.join();
  cubins.assign(kernelIds.size(), {});
  for (Job &job : jobs) {
    if (!job.result.ok())
      return func.emitError() << "NVRTC failed on " << kernels[kernelIds[job.kernel]].name << " for sm_"
                              << job.sm << ": " << std::string(job.result.status().message());
    const std::string &bin = job.result->cubin;
    if (!options.cubinDumpDir.empty()) {
      // A variant's cubins go to variants/<its name>/ below the dump.
      llvm::SmallString<256> path(options.cubinDumpDir);
      if (!variantName.empty()) {
        llvm::sys::path::append(path, "variants", variantName);
        if (std::error_code ec = llvm::sys::fs::create_directories(path))
          return func.emitError() << "cannot create " << path << ": " << ec.message();
      }
      llvm::sys::path::append(path, kernels[kernelIds[job.kernel]].name + ".sm_" +
                                        std::to_string(job.sm) + ".cubin");
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      if (ec)
        return func.emitError() << "cannot write " << path << ": " << ec.message();
      os << bin;
    }
    cubins[job.kernel].push_back(fb::CreateCubin(
        builder, job.sm,
        builder.CreateVector(reinterpret_cast<const uint8_t *>(bin.data()), bin.size()),
        builder.CreateString(options.includePtx ? job.result->ptx : std::string())));
  }
  return success();
}

LogicalResult Writer::hostLibraries(const std::vector<size_t> &kernelIds,
                                    const std::vector<std::string> &defines, int variant,
                                    std::vector<flatbuffers::Offset<fb::HostLibrary>> &out,
                                    const std::set<size_t> &index32) {
  if (!options.hostLibrary || kernelIds.empty())
    return success();
  std::vector<GeneratedKernel> wantedKernels;
  for (size_t k : kernelIds)
    wantedKernels.push_back(index32.count(k) ? withIndex32(kernels[k]) : kernels[k]);
  std::unique_ptr<HostKernels> own;
  const HostKernels *host = defines.empty() ? options.hostKernels : nullptr;
  if (!host) {
    absl::StatusOr<std::unique_ptr<HostKernels>> built =
        HostKernels::build(wantedKernels, cacheDir, /*chunkSize=*/100, options.jobs, defines);
    if (!built.ok())
      return func.emitError() << std::string(built.status().message());
    own = std::move(*built);
    host = own.get();
  }
  std::set<std::string> wanted;
  for (const GeneratedKernel &k : wantedKernels)
    wanted.insert(k.name);
  for (const HostKernels::Library &lib : host->libraries()) {
    std::vector<std::string> names;
    for (const std::string &k : lib.kernels)
      if (wanted.count(k))
        names.push_back(k);
    if (names.empty())
      continue;
    // Checked once more as it goes into the artifact, which seals it: damage
    // here would otherwise ship under a valid checksum.
    std::optional<std::string> bytes = readCacheEntry(lib.path);
    if (!bytes || bytes->empty())
      return func.emitError() << "the host-emulation library " << lib.path
                              << " is missing or changed while compiling; compile again";
    std::vector<flatbuffers::Offset<flatbuffers::String>> nameOffsets;
    for (const std::string &n : names)
      nameOffsets.push_back(builder.CreateString(n));
    out.push_back(fb::CreateHostLibrary(
        builder, builder.CreateVector(nameOffsets),
        builder.CreateVector(reinterpret_cast<const uint8_t *>(bytes->data()), bytes->size()),
        variant));
  }
  return success();
}

FailureOr<std::vector<flatbuffers::Offset<fb::Variant>>>
Writer::buildVariants(std::vector<flatbuffers::Offset<fb::HostLibrary>> &hostLibs) {
  std::vector<flatbuffers::Offset<fb::Variant>> out;
  std::set<std::vector<std::pair<int, int64_t>>> seen;
  llvm::json::Array report;
  for (const std::vector<std::pair<std::string, int64_t>> &spec : options.variants) {
    // The symbols by number, ascending, as the runtime keys variants.
    std::vector<std::pair<int, int64_t>> fixed;
    for (const auto &[name, value] : spec) {
      auto it = symbolIds.find(name);
      if (it == symbolIds.end() || !boundSymbols.count(name)) {
        std::string known;
        for (const std::string &s : boundSymbols)
          known += (known.empty() ? "" : ", ") + s;
        return func.emitError() << "a bucket names symbol '" << name
                                << "', which no input dim of the model has (its symbols: "
                                << (known.empty() ? "none" : known) << ")";
      }
      if (value < 0)
        return func.emitError() << "a bucket gives symbol '" << name << "' the value " << value
                                << "; sizes are >= 0";
      fixed.emplace_back(it->second, value);
    }
    std::sort(fixed.begin(), fixed.end());
    if (fixed.empty() || fixed.size() > static_cast<size_t>(artifact::kMaxVariantSymbols))
      return func.emitError() << "a bucket fixes " << fixed.size() << " symbols; 1 to "
                              << artifact::kMaxVariantSymbols << " are allowed";
    if (!seen.insert(fixed).second)
      continue; // the same bucket twice is one variant
    std::vector<std::string> defines;
    std::vector<int> ids;
    std::vector<int64_t> values;
    std::string name;
    std::map<std::string, int64_t> fixedValues;
    for (auto [id, value] : fixed) {
      defines.push_back("-DKILN_SYM_" + symbols[id] + "=" + std::to_string(value));
      ids.push_back(id);
      values.push_back(value);
      fixedValues[symbols[id]] = value;
      name += (name.empty() ? "" : ",") + symbols[id] + "=" + std::to_string(value);
    }
    // Only kernels that take a fixed symbol have anything to specialize;
    // those whose sizes all become constants that fit take their 32-bit body
    // (withIndex32).
    std::vector<size_t> specialized;
    std::set<size_t> narrowed;
    for (size_t k = 0; k < kernels.size(); ++k)
      if (llvm::any_of(kernels[k].symbols, [&](const std::string &s) { return fixedValues.count(s); })) {
        specialized.push_back(k);
        if (index32Fits(kernels[k], fixedValues))
          narrowed.insert(k);
      }
    std::vector<std::vector<flatbuffers::Offset<fb::Cubin>>> cubins;
    if (failed(compileCubins(specialized, defines, cubins, name, narrowed)) ||
        failed(hostLibraries(specialized, defines, static_cast<int>(out.size()), hostLibs, narrowed)))
      return failure();
    std::vector<flatbuffers::Offset<fb::VariantKernel>> variantKernels;
    for (size_t i = 0; i < specialized.size(); ++i)
      variantKernels.push_back(fb::CreateVariantKernel(builder, static_cast<int>(specialized[i]),
                                                       builder.CreateVector(cubins[i])));
    out.push_back(fb::CreateVariant(builder, builder.CreateString(name), builder.CreateVector(ids),
                                    builder.CreateVector(values),
                                    builder.CreateVector(variantKernels)));
    report.push_back(llvm::json::Object{{"name", name},
                                        {"specialized_kernels", static_cast<int64_t>(specialized.size())},
                                        {"index32_kernels", static_cast<int64_t>(narrowed.size())}});
  }
  variantReport = std::move(report);
  return out;
}

FailureOr<CompiledArtifact> Writer::build() {
  if (func.getBody().getBlocks().size() != 1)
    return func.emitError() << "an artifact needs a function of one block";
  Block &body = func.getBody().front();

  // The runtime's C API describes inputs and outputs with at most kMaxIoRank
  // dims: refuse more here, not with a failed info call at run time.
  auto checkRank = [&](Type type, const std::string &what) -> LogicalResult {
    auto ranked = dyn_cast<RankedTensorType>(type);
    if (ranked && ranked.getRank() > artifact::kMaxIoRank)
      return func.emitError() << what << " has rank " << ranked.getRank()
                              << "; a model's inputs and outputs may have at most "
                              << artifact::kMaxIoRank << " dims";
    return success();
  };
  for (BlockArgument arg : body.getArguments())
    if (failed(checkRank(arg.getType(), "input " + std::to_string(arg.getArgNumber()))))
      return failure();
  for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
    if (failed(checkRank(type, "output " + std::to_string(i))))
      return failure();

  // Inputs, and their guards: constant dims and first sightings of a symbol
  // first (those bind), then dims that are expressions of bound symbols.
  std::vector<int> inputs;
  std::vector<flatbuffers::Offset<fb::Guard>> guards, laterGuards;
  std::set<std::string> &bound = boundSymbols;
  for (BlockArgument arg : body.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "kiln.name");
    std::string label = name ? name.str() : "arg" + std::to_string(arg.getArgNumber());
    FailureOr<int> id = addValue(arg, fb::ValueKind::Input, label);
    if (failed(id))
      return failure();
    inputs.push_back(*id);
    SymShape shape = getSymShape(arg.getType());
    for (auto [d, expr] : llvm::enumerate(shape)) {
      if (!expr)
        continue;
      bool sole = expr.getKind() == AffineExprKind::SymbolId;
      bool binds = sole && bound.insert(dimToString(expr)).second;
      auto guard = fb::CreateGuard(builder, static_cast<int>(arg.getArgNumber()),
                                   static_cast<int>(d), dim(expr), binds);
      (sole || getConstantDimValue(expr) ? guards : laterGuards).push_back(guard);
    }
  }
  guards.insert(guards.end(), laterGuards.begin(), laterGuards.end());

  // Outputs carry their ONNX names (through any casts to the value computed).
  for (Operation &op : body)
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        auto name = func.getResultAttrOfType<StringAttr>(i, "kiln.name");
        Value source = v;
        while (auto cast = source.getDefiningOp<tensor::CastOp>())
          source = cast.getSource();
        outputNames.try_emplace(source, name ? name.str() : "output" + std::to_string(i));
      }

  std::vector<int> outputs;
  static_assert(int(GuardKind::equal) == int(fb::PredicateKind::Equal) &&
                int(GuardKind::equal_or_one) == int(fb::PredicateKind::EqualOrOne) &&
                int(GuardKind::less_equal) == int(fb::PredicateKind::LessEqual));
  std::vector<flatbuffers::Offset<fb::Predicate>> predicates;
  llvm::json::Array guardReport;
  for (Operation &op : body) {
    if (auto g = dyn_cast<GuardOp>(op)) {
      // Facts the code relies on: the runtime checks them after binding, so
      // every symbol in them must be one an input binds.
      for (DimExpr side : {g.getLhs(), g.getRhs()}) {
        std::string unbound;
        side.walk([&](AffineExpr e) {
          if (e.getKind() == AffineExprKind::SymbolId && !bound.count(dimToString(e)))
            unbound = dimToString(e);
        });
        if (!unbound.empty())
          return g.emitOpError() << "relies on symbol '" << unbound
                                 << "', which no input dim binds";
      }
      predicates.push_back(fb::CreatePredicate(builder, static_cast<fb::PredicateKind>(g.getKind()),
                                               dim(g.getLhs()), dim(g.getRhs()),
                                               builder.CreateString(g.getReason().str())));
      guardReport.push_back(
          llvm::json::Object{{"guard", g.describe()}, {"reason", g.getReason().str()}});
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      FailureOr<std::vector<int>> ids = this->ids(ret.getOperands(), &op);
      if (failed(ids))
        return failure();
      outputs = *ids;
    } else if (failed(addOp(op))) {
      return failure();
    }
  }

  std::vector<std::vector<flatbuffers::Offset<fb::Cubin>>> cubins;
  std::vector<size_t> allKernels(kernels.size());
  std::iota(allKernels.begin(), allKernels.end(), 0);
  if (failed(compileCubins(allKernels, {}, cubins)))
    return failure();
  std::vector<flatbuffers::Offset<fb::Kernel>> kernelTable;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::optional<fb::Schedule> schedule = scheduleOf(kernels[k].schedule);
    if (!schedule)
      return func.emitError() << "kernel " << kernels[k].name << " has schedule '"
                              << kernels[k].schedule << "', which the artifact has no value for";
    std::vector<int> syms;
    for (const std::string &s : kernels[k].symbols)
      syms.push_back(symbolId(s));
    std::vector<flatbuffers::Offset<fb::Dim>> index32Sizes;
    for (DimExpr size : kernels[k].index32Sizes)
      index32Sizes.push_back(dim(size));
    std::vector<flatbuffers::Offset<fb::BoundedRead>> boundedReads;
    for (const auto &[input, elements] : kernels[k].boundedReads)
      boundedReads.push_back(fb::CreateBoundedRead(builder, input, dim(elements)));
    kernelTable.push_back(fb::CreateKernel(
        builder, builder.CreateString(kernels[k].name), builder.CreateString(kernels[k].source),
        *schedule, builder.CreateVector(syms), kernels[k].blockPerItem,
        builder.CreateVector(cubins[k]),
        builder.CreateVector(kernelSignatures[k]), builder.CreateVector(kernelShapes[k]),
        kernels[k].reportsErrors,
        kernels[k].workItems ? dim(kernels[k].workItems) : flatbuffers::Offset<fb::Dim>(),
        kernels[k].flops ? dim(kernels[k].flops) : flatbuffers::Offset<fb::Dim>(),
        index32Sizes.empty() ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Dim>>>()
                             : builder.CreateVector(index32Sizes),
        boundedReads.empty()
            ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::BoundedRead>>>()
            : builder.CreateVector(boundedReads),
        kernels[k].l2Bytes ? dim(kernels[k].l2Bytes) : flatbuffers::Offset<fb::Dim>()));
  }
  std::vector<flatbuffers::Offset<fb::HostLibrary>> hostLibs;
  if (failed(hostLibraries(allKernels, {}, -1, hostLibs)))
    return failure();
  FailureOr<std::vector<flatbuffers::Offset<fb::Variant>>> variants = buildVariants(hostLibs);
  if (failed(variants))
    return failure();

  std::vector<std::string> symbolNames = symbols;
  std::vector<flatbuffers::Offset<flatbuffers::String>> symbolOffsets;
  for (const std::string &s : symbolNames)
    symbolOffsets.push_back(builder.CreateString(s));

  bool external = !options.weightsFile.empty();
  size_t embedded = external ? 0 : weightBlob.size();
  builder.ForceVectorAlignment(embedded, 1, kWeightAlignment);
  auto blob = builder.CreateVector(weightBlob.data(), embedded);
  auto externalName = external ? builder.CreateString(options.weightsFile) : 0;
  // The checksum field must exist even while it is zero: sealArtifact fills it in.
  builder.ForceDefaults(true);
  auto model = fb::CreateModel(
      builder, kFormatVersion, builder.CreateString("kiln-compile " KILN_VERSION),
      builder.CreateString(options.source), builder.CreateVector(symbolOffsets),
      builder.CreateVector(values), builder.CreateVector(inputs), builder.CreateVector(outputs),
      builder.CreateVector(guards), builder.CreateVector(steps), builder.CreateVector(kernelTable),
      builder.CreateVector(hostLibs), builder.CreateString(deviceLibrary),
      builder.CreateVector(weights), blob, /*checksum=*/0, externalName,
      external ? weightBlob.size() : 0,
      external ? artifact::artifactChecksum(weightBlob.data(), weightBlob.size(),
                                            weightBlob.size())
               : 0,
      builder.CreateVector(predicates), builder.CreateVector(*variants));
  fb::FinishModelBuffer(builder, model);

  CompiledArtifact result;
  result.bytes.assign(reinterpret_cast<const char *>(builder.GetBufferPointer()),
                      builder.GetSize());
  auto *sealed = reinterpret_cast<uint8_t *>(result.bytes.data());
  if (!artifact::sealArtifact(sealed, result.bytes.size()))
    return func.emitError() << "internal error: the artifact has no checksum field";
  if (external)
    result.weights.assign(weightBlob.begin(), weightBlob.end());
  result.report["kernels"] = std::move(kernelReport);
  result.report["library_calls"] = std::move(libraryReport);
  result.report["graph_breaks"] = std::move(graphBreaks);
  result.report["size_reads"] = std::move(sizeReads);
  result.report["guards"] = std::move(guardReport);
  result.report["variants"] = std::move(variantReport);
  result.report["steps"] = static_cast<int64_t>(steps.size());
  // What kiln-lower-precision recorded on the function (fp32 when it did not run).
  auto precision = func->getAttrOfType<mlir::StringAttr>("kiln.precision");
  result.report["precision"] = precision ? precision.getValue().str() : std::string("fp32");
  result.report["weights"] = llvm::json::Object{{"count", static_cast<int64_t>(weights.size())},
                                                {"bytes", static_cast<int64_t>(weightBlob.size())}};
  llvm::json::Array archs(options.cubinArchs);
  result.report["cubin_archs"] = std::move(archs);
  result.report["symbols"] = llvm::json::Array(symbolNames);
  return result;
}

} // namespace

FailureOr<CompiledArtifact> buildArtifact(func::FuncOp func, const ArtifactOptions &options) {
  return Writer(func, options).build();
}

} // namespace kiln
