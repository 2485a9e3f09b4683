//===- Interpreter.cpp - runs kiln IR on the reference kernels -------------===//

#include "interpreter/Interpreter.h"

#include "codegen/StepEncoding.h"
#include "interpreter/ReferenceOps.h"

#include "ir/Kiln/KilnDialect.h"
#include "kiln/reference/Kernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstring>

using namespace mlir;

namespace kiln {

namespace {

/// A loop stacking more than this is runaway (a trip count from a bad input).
constexpr size_t kMaxScanBytes = size_t(1) << 30;

std::string shapeOf(const ref::Tensor &t) { return t.describe(); }

/// An error at `op`'s location naming it, without MLIR's dump of the whole op (a
/// function's dump is the whole model).
InFlightDiagnostic opError(Operation *op) {
  InFlightDiagnostic diag = emitError(op->getLoc());
  if (isa<func::FuncOp>(op))
    diag << "model: ";
  else
    diag << "'" << op->getName() << "' op ";
  return diag;
}

/// "f32[batch x 16]": a tensor type as the errors talk about shapes.
std::string describeType(RankedTensorType type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type.getElementType() << "[";
  SymShape dims = getSymShape(type);
  for (auto [i, d] : llvm::enumerate(dims))
    os << (i ? ", " : "") << (d ? dimToString(d) : std::string("?"));
  os << "]";
  return s;
}

class Interpreter {
public:
  explicit Interpreter(const InterpretOptions &options) : options(options) {}
  LogicalResult bindArguments(func::FuncOp func, ArrayRef<ref::Tensor> inputs);
  /// Runs the ops of `block` up to its terminator and collects that terminator's
  /// operands.
  LogicalResult runBlock(Block &block, std::vector<ref::Tensor> &terminatorValues);

private:
  LogicalResult runOp(Operation *op);
  LogicalResult runRegionOp(Operation *op);
  /// The ops computed by one reference kernel call: nullopt when `op` is not one.
  std::optional<LogicalResult> runKernelOp(Operation *op);
  /// Checks (and, for a new symbol, binds) `t`'s shape against `v`'s type.
  LogicalResult checkShape(Value v, const ref::Tensor &t, Operation *where,
                           const Twine &what);
  LogicalResult define(Operation *op, unsigned i, absl::StatusOr<ref::Tensor> t);
  const ref::Tensor &get(Value v) { return values.find(v)->second; }
  std::optional<int64_t> evaluate(DimExpr dim) {
    return evaluateDim(dim, [&](unsigned pos) -> std::optional<int64_t> {
      auto it = symbols.find(pos);
      if (it == symbols.end())
        return std::nullopt;
      return it->second;
    });
  }
  FailureOr<ref::Tensor> constant(Operation *op, ElementsAttr attr);

  llvm::DenseMap<Value, ref::Tensor> values;
  llvm::DenseMap<unsigned, int64_t> symbols;
  /// Each host step op's table, decoded on its first run (a loop body's ops run
  /// once per iteration).
  llvm::DenseMap<Operation *, artifact::HostStepFn> decodedSteps;
  const InterpretOptions &options;
};

LogicalResult Interpreter::checkShape(Value v, const ref::Tensor &t, Operation *where,
                                      const Twine &what) {
  auto type = cast<RankedTensorType>(v.getType());
  std::optional<ref::DType> dtype = toRefType(type.getElementType());
  if (!dtype || *dtype != t.dtype())
    return opError(where) << what << " is " << shapeOf(t) << ", but the IR says "
                          << describeType(type);
  if (type.getRank() != t.rank())
    return opError(where) << what << " is " << shapeOf(t) << ", but the IR says "
                          << describeType(type);
  SymShape dims = getSymShape(type);
  for (int64_t d = 0; d < t.rank(); ++d) {
    DimExpr dim = dims[d];
    if (!dim)
      continue;
    if (auto symbol = dyn_cast<AffineSymbolExpr>(dim);
        symbol && !symbols.count(symbol.getPosition())) {
      symbols[symbol.getPosition()] = t.dim(d);
      continue;
    }
    std::optional<int64_t> expected = evaluate(dim);
    if (expected && *expected != t.dim(d))
      return opError(where) << what << " dim " << d << " is " << t.dim(d)
                                << " at run time, but the IR says " << dimToString(dim)
                                << " = " << *expected;
  }
  return success();
}

LogicalResult Interpreter::bindArguments(func::FuncOp func, ArrayRef<ref::Tensor> inputs) {
  if (inputs.size() != func.getNumArguments())
    return opError(func) << "takes " << func.getNumArguments() << " inputs, got "
                            << inputs.size();
  // Bind the plain symbols of every argument first, so a composite dim of an early
  // argument can use a symbol that only a later one binds.
  for (auto [arg, t] : llvm::zip(func.getArguments(), inputs)) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (type.getRank() != t.rank())
      continue;
    SymShape dims = getSymShape(type);
    for (int64_t d = 0; d < t.rank(); ++d)
      if (auto symbol = dyn_cast_or_null<AffineSymbolExpr>(dims[d]))
        if (!symbols.count(symbol.getPosition()))
          symbols[symbol.getPosition()] = t.dim(d);
  }
  for (auto [i, pair] : llvm::enumerate(llvm::zip(func.getArguments(), inputs))) {
    auto [arg, t] = pair;
    std::string what = "input " + std::to_string(i);
    if (auto name = func.getArgAttrOfType<StringAttr>(i, "kiln.name"))
      what += " '" + name.str() + "'";
    if (failed(checkShape(arg, t, func, what)))
      return failure();
    values[arg] = t;
  }
  return success();
}

LogicalResult Interpreter::define(Operation *op, unsigned i, absl::StatusOr<ref::Tensor> t) {
  if (!t.ok())
    return opError(op) << t.status().message();
  Value result = op->getResult(i);
  if (failed(checkShape(result, *t, op, "result " + Twine(i))))
    return failure();
  values[result] = std::move(*t);
  return success();
}

FailureOr<ref::Tensor> Interpreter::constant(Operation *op, ElementsAttr attr) {
  return tensorFromElements(attr, op->getLoc());
}

LogicalResult Interpreter::runBlock(Block &block, std::vector<ref::Tensor> &terminatorValues) {
  for (Operation &op : block) {
    if (op.hasTrait<mlir::OpTrait::IsTerminator>()) {
      terminatorValues.clear();
      for (Value v : op.getOperands())
        terminatorValues.push_back(get(v));
      return success();
    }
    if (options.observe) {
      std::vector<const ref::Tensor *> operands;
      for (Value v : op.getOperands())
        operands.push_back(values.count(v) ? &values.find(v)->second : nullptr);
      options.observe(&op, operands);
    }
    if (failed(runOp(&op)))
      return failure();
  }
  return opError(block.getParentOp()) << "a block without a terminator";
}

LogicalResult Interpreter::runRegionOp(Operation *op) {
  std::vector<ref::Tensor> yielded;
  if (auto kernel = dyn_cast<KernelOp>(op)) {
    std::vector<ref::Tensor> inputs;
    for (Value v : kernel.getInputs())
      inputs.push_back(get(v));
    if (options.runKernel) {
      FailureOr<ref::Tensor> r = options.runKernel(
          kernel, inputs, [&](AffineExpr d) { return evaluate(d); });
      if (failed(r))
        return failure();
      return define(op, 0, std::move(*r));
    }
    Block &body = kernel.getBody().front();
    for (auto [arg, t] : llvm::zip(body.getArguments(), inputs))
      values[arg] = t;
    if (failed(runBlock(body, yielded)))
      return failure();
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      if (failed(define(op, i, yielded[i])))
        return failure();
    return success();
  }
  // A condition or trip count holds one value (ONNX); the runtime checks the same.
  auto oneValue = [&](Value v, StringRef what) -> FailureOr<int64_t> {
    const ref::Tensor &t = get(v);
    if (t.numel() != 1)
      return opError(op) << what << " is " << t.describe() << "; it must hold one value";
    return t.getI(0);
  };
  if (auto ifOp = dyn_cast<IfOp>(op)) {
    FailureOr<int64_t> condition = oneValue(ifOp.getCondition(), "its condition");
    if (failed(condition))
      return failure();
    Region &region = *condition ? ifOp.getThenRegion() : ifOp.getElseRegion();
    if (failed(runBlock(region.front(), yielded)))
      return failure();
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      if (failed(define(op, i, yielded[i])))
        return failure();
    return success();
  }
  if (auto loop = dyn_cast<LoopOp>(op)) {
    Block &body = loop.getBody().front();
    FailureOr<int64_t> trips = oneValue(loop.getMaxTripCount(), "its trip count");
    FailureOr<int64_t> initial = oneValue(loop.getCondition(), "its condition");
    if (failed(trips) || failed(initial))
      return failure();
    int64_t maxTrips = *trips;
    bool condition = *initial != 0;
    std::vector<ref::Tensor> carried;
    for (Value v : loop.getInitial())
      carried.push_back(get(v));
    size_t numCarried = carried.size();
    size_t numScan = op->getNumResults() - numCarried;
    std::vector<std::vector<ref::Tensor>> scans(numScan);
    size_t scanBytes = 0;
    for (int64_t i = 0; i < maxTrips && condition; ++i) {
      if (i >= options.maxLoopIterations)
        return opError(op) << "the loop passed " << options.maxLoopIterations
                           << " iterations (its trip count is " << maxTrips
                           << "); the reference interpreter stops there";
      ref::Tensor iteration(ref::DType::i64, {});
      iteration.setI(0, i);
      ref::Tensor cond(ref::DType::boolean, {});
      cond.setI(0, 1);
      values[body.getArgument(0)] = iteration;
      values[body.getArgument(1)] = cond;
      for (size_t k = 0; k < numCarried; ++k)
        values[body.getArgument(2 + k)] = carried[k];
      if (failed(runBlock(body, yielded)))
        return failure();
      if (yielded[0].numel() != 1)
        return opError(op) << "the body's condition is " << yielded[0].describe()
                           << "; it must hold one value";
      condition = yielded[0].getI(0) != 0;
      for (size_t k = 0; k < numCarried; ++k)
        carried[k] = yielded[1 + k];
      for (size_t k = 0; k < numScan; ++k) {
        // Each slice also costs a tensor object: count it, or 0-d slices run away.
        scanBytes += yielded[1 + numCarried + k].byteSize() + sizeof(ref::Tensor) + 64;
        scans[k].push_back(yielded[1 + numCarried + k]);
      }
      if (scanBytes > kMaxScanBytes)
        return opError(op) << "the loop's scan outputs pass " << (kMaxScanBytes >> 30)
                               << " GiB after " << i + 1 << " iterations";
    }
    for (size_t k = 0; k < numCarried; ++k)
      if (failed(define(op, k, carried[k])))
        return failure();
    for (size_t k = 0; k < numScan; ++k) {
      Value result = op->getResult(numCarried + k);
      auto type = cast<RankedTensorType>(result.getType());
      if (scans[k].empty()) {
        // No iteration: an empty stack whose slice dims come from the type
        // (symbols bound by the inputs; 0 where nothing says).
        ref::Shape shape = {0};
        SymShape dims = getSymShape(type);
        for (int64_t d = 1; d < type.getRank(); ++d)
          shape.push_back(dims[d] ? evaluate(dims[d]).value_or(0) : 0);
        if (failed(define(op, numCarried + k, ref::Tensor(*toRefType(type.getElementType()), shape))))
          return failure();
        continue;
      }
      std::vector<ref::Tensor> expanded;
      std::vector<const ref::Tensor *> parts;
      for (const ref::Tensor &s : scans[k]) {
        ref::Shape shape = {1};
        shape.insert(shape.end(), s.shape().begin(), s.shape().end());
        expanded.push_back(s.reshaped(shape));
      }
      for (const ref::Tensor &s : expanded)
        parts.push_back(&s);
      if (failed(define(op, numCarried + k, ref::concat(parts, 0))))
        return failure();
    }
    return success();
  }
  auto scan = cast<ScanOp>(op);
  Block &body = scan.getBody().front();
  int64_t numScanInputs = scan.getNumScanInputs();
  size_t numInputs = scan.getInputs().size();
  size_t numStates = numInputs - numScanInputs;
  std::vector<ref::Tensor> states;
  for (size_t k = 0; k < numStates; ++k)
    states.push_back(get(scan.getInputs()[k]));
  ArrayRef<int64_t> inAxes = scan.getScanInputAxes(), inDirs = scan.getScanInputDirections(),
                    outAxes = scan.getScanOutputAxes(), outDirs = scan.getScanOutputDirections();
  int64_t steps = -1;
  std::vector<int64_t> axes;
  for (int64_t j = 0; j < numScanInputs; ++j) {
    const ref::Tensor &x = get(scan.getInputs()[numStates + j]);
    int64_t axis = j < (int64_t)inAxes.size() ? inAxes[j] : 0;
    axis = axis < 0 ? axis + x.rank() : axis;
    axes.push_back(axis);
    if (steps >= 0 && x.dim(axis) != steps)
      return opError(op) << "scanned inputs differ in length";
    steps = x.dim(axis);
  }
  size_t numScanOutputs = op->getNumResults() - numStates;
  std::vector<std::vector<ref::Tensor>> outs(numScanOutputs);
  for (int64_t t = 0; t < std::max<int64_t>(steps, 0); ++t) {
    for (size_t k = 0; k < numStates; ++k)
      values[body.getArgument(k)] = states[k];
    for (int64_t j = 0; j < numScanInputs; ++j) {
      const ref::Tensor &x = get(scan.getInputs()[numStates + j]);
      bool reverse = j < (int64_t)inDirs.size() && inDirs[j] == 1;
      int64_t at = reverse ? steps - 1 - t : t;
      std::vector<int64_t> starts(x.rank(), 0), ends(x.shape()), stepsV(x.rank(), 1);
      starts[axes[j]] = at;
      ends[axes[j]] = at + 1;
      absl::StatusOr<ref::Tensor> slice = ref::slice(x, starts, ends, stepsV);
      ref::Shape shape = x.shape();
      shape.erase(shape.begin() + axes[j]);
      values[body.getArgument(numStates + j)] = slice->reshaped(shape);
    }
    if (failed(runBlock(body, yielded)))
      return failure();
    for (size_t k = 0; k < numStates; ++k)
      states[k] = yielded[k];
    for (size_t k = 0; k < numScanOutputs; ++k)
      outs[k].push_back(yielded[numStates + k]);
  }
  for (size_t k = 0; k < numStates; ++k)
    if (failed(define(op, k, states[k])))
      return failure();
  for (size_t k = 0; k < numScanOutputs; ++k) {
    Value result = op->getResult(numStates + k);
    auto type = cast<RankedTensorType>(result.getType());
    int64_t axis = k < outAxes.size() ? outAxes[k] : 0;
    axis = axis < 0 ? axis + type.getRank() : axis;
    bool reverse = k < outDirs.size() && outDirs[k] == 1;
    if (outs[k].empty()) {
      ref::Shape shape;
      SymShape dims = getSymShape(type);
      for (int64_t d = 0; d < type.getRank(); ++d)
        shape.push_back(d == axis || !dims[d] ? 0 : evaluate(dims[d]).value_or(0));
      if (failed(define(op, numStates + k, ref::Tensor(*toRefType(type.getElementType()), shape))))
        return failure();
      continue;
    }
    if (reverse)
      std::reverse(outs[k].begin(), outs[k].end());
    std::vector<ref::Tensor> expanded;
    std::vector<const ref::Tensor *> parts;
    for (const ref::Tensor &s : outs[k]) {
      ref::Shape shape = s.shape();
      shape.insert(shape.begin() + axis, 1);
      expanded.push_back(s.reshaped(shape));
    }
    for (const ref::Tensor &s : expanded)
      parts.push_back(&s);
    if (failed(define(op, numStates + k, ref::concat(parts, axis))))
      return failure();
  }
  return success();
}

std::optional<LogicalResult> Interpreter::runKernelOp(Operation *op) {
  std::vector<const ref::Tensor *> inputs;
  for (Value v : op->getOperands())
    inputs.push_back(&get(v));
  std::optional<absl::StatusOr<std::vector<ref::Tensor>>> results;
  if (isHostStepOp(op)) {
    auto it = decodedSteps.find(op);
    if (it == decodedSteps.end()) {
      FailureOr<artifact::HostStep> step = decodeReferenceStep(op);
      if (failed(step))
        return failure();
      it = decodedSteps.try_emplace(op, std::move(step->run)).first;
    }
    results = it->second(inputs);
  } else {
    results = runKernelOnlyOp(op, inputs);
  }
  if (!results)
    return std::nullopt;
  if (!results->ok())
    return opError(op) << std::string(results->status().message());
  for (unsigned i = 0; i < (*results)->size() && i < op->getNumResults(); ++i)
    if (failed(define(op, i, std::move((**results)[i]))))
      return failure();
  return success();
}

LogicalResult Interpreter::runOp(Operation *op) {
  if (isa<IfOp, LoopOp, ScanOp, KernelOp>(op))
    return runRegionOp(op);
  auto one = [&](absl::StatusOr<ref::Tensor> t) { return define(op, 0, std::move(t)); };
  // What needs the IR itself (constants, dims) here; every other op through
  // runKernelOp.
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<ConstantOp>([&](ConstantOp c) -> LogicalResult {
        FailureOr<ref::Tensor> t = constant(op, c.getValue());
        return failed(t) ? failure() : one(std::move(*t));
      })
      .Case<SymbolicConstantOp>([&](SymbolicConstantOp c) -> LogicalResult {
        ArrayRef<AffineExpr> dims = c.getValue().getDims();
        auto type = cast<RankedTensorType>(c.getType());
        ref::Tensor t(ref::DType::i64, ref::Shape(type.getShape().begin(), type.getShape().end()));
        for (auto [i, d] : llvm::enumerate(dims)) {
          std::optional<int64_t> v = evaluate(d);
          if (!v)
            return opError(op) << "symbolic dim " << dimToString(d)
                                   << " has no value here (an unbound symbol)";
          t.setI(i, *v);
        }
        return one(std::move(t));
      })
      .Case<ShapeOfOp>([&](auto) {
        const ref::Tensor &x = get(op->getOperand(0));
        ref::Tensor t(ref::DType::i64, {x.rank()});
        for (int64_t d = 0; d < x.rank(); ++d)
          t.setI(d, x.dim(d));
        return one(std::move(t));
      })
      .Case<tensor::CastOp>([&](auto) { return one(get(op->getOperand(0))); })
      .Case<ReadSizesOp>([&](ReadSizesOp r) -> LogicalResult {
        // Binds as the runtime's step does; a symbol a value bound already
        // must agree.
        const ref::Tensor &sizes = get(r.getSizes());
        for (auto [i, name] : llvm::enumerate(r.getSymbols().getAsValueRange<StringAttr>())) {
          int64_t v = sizes.getI(static_cast<int64_t>(i));
          if (v < 0)
            return opError(op) << "size " << v << " for " << name << " is negative";
          unsigned position =
              cast<AffineSymbolExpr>(getSymbolDim(op->getContext(), name)).getPosition();
          if (auto it = symbols.find(position); it != symbols.end() && it->second != v)
            return opError(op) << "size " << v << " for " << name << " disagrees with its value "
                               << it->second;
          symbols[position] = v;
        }
        return success();
      })
      .Case<GuardOp>([&](GuardOp g) -> LogicalResult {
        // The interpreter computes with the real sizes either way; it checks
        // guards so that it refuses exactly the inputs compiled code refuses.
        std::optional<int64_t> l = evaluate(g.getLhs()), r = evaluate(g.getRhs());
        if (!l || !r)
          return success(); // a symbol only a later value binds: checked there
        bool holds = g.getKind() == GuardKind::equal          ? *l == *r
                     : g.getKind() == GuardKind::equal_or_one ? (*l == *r || *l == 1)
                                                              : *l <= *r;
        if (!holds)
          return opError(op) << "guard '" << g.describe() << "' does not hold (" << *l
                             << " against " << *r << "): " << g.getReason();
        return success();
      })
      .Default([&](Operation *) -> LogicalResult {
        if (std::optional<LogicalResult> ran = runKernelOp(op))
          return *ran;
        return opError(op) << "the reference interpreter does not run this op";
      });
}

} // namespace

FailureOr<ref::Tensor> tensorFromElements(ElementsAttr attr, Location loc) {
  auto type = cast<RankedTensorType>(attr.getType());
  std::optional<ref::DType> dtype = toRefType(type.getElementType());
  if (!dtype)
    return emitError(loc) << "the reference interpreter has no kernels for "
                           << type.getElementType();
  absl::StatusOr<ref::Tensor> allocated =
      ref::Tensor::zeros(*dtype, ref::Shape(type.getShape().begin(), type.getShape().end()));
  if (!allocated.ok())
    return emitError(loc) << "constant: " << std::string(allocated.status().message());
  ref::Tensor t = std::move(*allocated);
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (dense.isSplat() && t.numel() > 0) {
      // One element converted, then its bytes repeated: a splat of 2^28
      // elements costs a memcpy, not 2^28 APFloat conversions.
      if (isa<FloatType>(type.getElementType())) {
        APFloat v = dense.getSplatValue<APFloat>();
        bool losesInfo;
        v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
        t.setF(0, v.convertToDouble());
      } else {
        APInt v = dense.getSplatValue<APInt>();
        bool isU = type.getElementType().isUnsignedInteger() || type.getElementType().isInteger(1);
        t.setI(0, isU ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue());
      }
      size_t element = t.byteSize() / static_cast<size_t>(t.numel());
      for (size_t filled = element; filled < t.byteSize(); filled *= 2)
        std::memcpy(t.bytes() + filled, t.bytes(), std::min(filled, t.byteSize() - filled));
      return t;
    }
    if (isa<FloatType>(type.getElementType())) {
      int64_t i = 0;
      for (APFloat v : dense.getValues<APFloat>()) {
        bool losesInfo;
        v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
        t.setF(i++, v.convertToDouble());
      }
    } else {
      bool isU = type.getElementType().isUnsignedInteger() ||
                 type.getElementType().isInteger(1);
      int64_t i = 0;
      for (const APInt &v : dense.getValues<APInt>())
        t.setI(i++, isU ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue());
    }
    return t;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != t.byteSize())
      return emitError(loc) << "constant resource '" << resource.getRawHandle().getKey()
                             << "' is missing or has the wrong size";
    std::memcpy(t.bytes(), blob->getData().data(), t.byteSize());
    return t;
  }
  return emitError(loc) << "the reference interpreter cannot read this constant";
}

FailureOr<size_t> elementsByteSize(ElementsAttr attr, Location loc) {
  auto type = cast<RankedTensorType>(attr.getType());
  std::optional<ref::DType> dtype = toRefType(type.getElementType());
  if (!dtype)
    return emitError(loc) << "the reference interpreter has no kernels for "
                           << type.getElementType();
  size_t count = 1;
  for (int64_t d : type.getShape()) {
    if (d < 0 || (d > 0 && count > (SIZE_MAX / ref::info(*dtype).bytes) / static_cast<size_t>(d)))
      return emitError(loc) << "constant: " << type << " has no byte size";
    count *= static_cast<size_t>(d);
  }
  return count * ref::info(*dtype).bytes;
}

std::optional<ArrayRef<char>> elementsView(ElementsAttr attr) {
  auto type = cast<RankedTensorType>(attr.getType());
  std::optional<ref::DType> dtype = toRefType(type.getElementType());
  if (!dtype || !type.hasStaticShape())
    return std::nullopt;
  size_t bytes = static_cast<size_t>(type.getNumElements()) * ref::info(*dtype).bytes;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != bytes)
      return std::nullopt;
    return blob->getData();
  }
  // Dense data of whole-byte elements is stored as the reference stores it
  // (little-endian, one element after another). Booleans (bit-packed) and
  // sub-byte integers (not sign-extended in their byte) are not.
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  Type element = type.getElementType();
  unsigned bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 0;
  if (dense && !dense.isSplat() && !element.isIndex() &&
      (bits == 8 || bits == 16 || bits == 32 || bits == 64) && dense.getRawData().size() == bytes)
    return dense.getRawData();
  return std::nullopt;
}

LogicalResult writeElements(ElementsAttr attr, Location loc, MutableArrayRef<char> out) {
  FailureOr<size_t> bytes = elementsByteSize(attr, loc);
  if (failed(bytes))
    return failure();
  if (*bytes != out.size())
    return emitError(loc) << "internal error: constant of " << *bytes << " bytes written to "
                           << out.size();
  if (std::optional<ArrayRef<char>> view = elementsView(attr)) {
    if (!out.empty())
      std::memcpy(out.data(), view->data(), out.size());
    return success();
  }
  FailureOr<ref::Tensor> t = tensorFromElements(attr, loc);
  if (failed(t))
    return failure();
  if (t->byteSize() != out.size())
    return emitError(loc) << "internal error: constant of " << t->byteSize()
                           << " bytes written to " << out.size();
  if (!out.empty())
    std::memcpy(out.data(), t->bytes(), out.size());
  return success();
}

FailureOr<std::vector<ref::Tensor>> interpret(func::FuncOp func, ArrayRef<ref::Tensor> inputs,
                                              const InterpretOptions &options) {
  Interpreter interpreter(options);
  if (failed(interpreter.bindArguments(func, inputs)))
    return failure();
  std::vector<ref::Tensor> outputs;
  if (func.getBody().empty())
    return opError(func) << "has no body";
  if (failed(interpreter.runBlock(func.getBody().front(), outputs)))
    return failure();
  return outputs;
}

} // namespace kiln
