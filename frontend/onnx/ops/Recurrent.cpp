//===- Recurrent.cpp - ONNX RNN, GRU and LSTM -----------------------------===//
//
// The recurrences unroll over a static sequence length: the input projection of
// every step is one matmul up front, then each step is a matmul with the recurrent
// weights and a few pointwise ops, which the fusion pass later groups per step.
// Over a dynamic (or very long) sequence the same step is the body of a
// kiln.scan over the projection, which the runtime iterates.
// Per-batch sequence_lens mask the steps past each sequence's end (its state is
// held and its outputs are zero), which also makes the reverse direction start at
// each sequence's own last step.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {
/// Unrolling past this many steps would build an absurdly large graph.
constexpr int64_t kMaxUnrolledSteps = 4096;

enum class CellKind { rnn, gru, lstm };

/// One of the activations the ONNX recurrences name, with its alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

struct RecurrenceSpec {
  CellKind kind;
  int64_t gates;                      // 1, 3 or 4 blocks of hidden_size rows in W
  SmallVector<StringRef, 3> defaults; // the activations when none are given
};

Value applyActivation(Chain &c, const Activation &a, Value x) {
  StringRef name = a.name;
  if (name == "Tanh")
    return c.un<TanhOp>(x);
  if (name == "Sigmoid")
    return c.un<SigmoidOp>(x);
  if (name == "Relu")
    return c.bin<MaxOp>(x, c.k(x, 0));
  if (name == "LeakyRelu")
    return c.sel(c.cmp(CompareDirection::lt, x, c.k(x, 0)), c.bin<MulOp>(x, c.k(x, a.alpha)), x);
  if (name == "ThresholdedRelu")
    return c.sel(c.cmp(CompareDirection::gt, x, c.k(x, a.alpha)), x, c.k(x, 0));
  if (name == "HardSigmoid")
    return hardSigmoid(c, x, a.alpha, a.beta);
  if (name == "Affine")
    return c.bin<AddOp>(c.bin<MulOp>(x, c.k(x, a.alpha)), c.k(x, a.beta));
  if (name == "ScaledTanh")
    return c.bin<MulOp>(c.k(x, a.alpha), c.un<TanhOp>(c.bin<MulOp>(x, c.k(x, a.beta))));
  if (name == "Elu") {
    Value em1 = c.bin<SubOp>(c.un<ExpOp>(x), c.k(x, 1));
    return c.sel(c.cmp(CompareDirection::lt, x, c.k(x, 0)), c.bin<MulOp>(em1, c.k(x, a.alpha)),
                 x);
  }
  if (name == "Softsign")
    return c.bin<DivOp>(x, c.bin<AddOp>(c.un<AbsOp>(x), c.k(x, 1)));
  if (name == "Softplus")
    return softplus(c, x);
  c.ok = false; // names are validated before any step is built
  return {};
}

/// Reads `activations`, `activation_alpha` and `activation_beta`: `perDirection`
/// names for each direction, alphas and betas consumed in order by the
/// activations that take them.
FailureOr<SmallVector<Activation>> readActivations(NodeImporter &n, const RecurrenceSpec &spec,
                                                   int64_t directions) {
  size_t perDirection = spec.defaults.size();
  SmallVector<std::string> names;
  if (n.hasAttr("activations")) {
    const onnx::AttributeProto *attr = nullptr;
    for (const auto &a : n.proto().attribute())
      if (a.name() == "activations")
        attr = &a;
    if (attr->type() != onnx::AttributeProto::STRINGS)
      return n.error("attribute 'activations' must be STRINGS");
    for (const std::string &s : attr->strings())
      names.push_back(s);
    if (names.size() != perDirection * directions)
      return n.error("activations lists " + Twine(names.size()) + " names; expected " +
                     Twine(perDirection * directions));
  } else {
    for (int64_t d = 0; d < directions; ++d)
      for (StringRef s : spec.defaults)
        names.push_back(s.str());
  }
  auto alphas = n.floatsAttr("activation_alpha", SmallVector<float>{});
  auto betas = n.floatsAttr("activation_beta", SmallVector<float>{});
  if (failed(alphas) || failed(betas))
    return failure();
  size_t nextAlpha = 0, nextBeta = 0;
  SmallVector<Activation> result;
  for (const std::string &name : names) {
    // Default alpha, beta; whether the activation takes them.
    auto [alpha, beta, takesAlpha, takesBeta] =
        llvm::StringSwitch<std::tuple<double, double, bool, bool>>(name)
            .Case("LeakyRelu", {0.01, 0, true, false})
            .Case("ThresholdedRelu", {1.0, 0, true, false})
            .Case("Elu", {1.0, 0, true, false})
            .Case("HardSigmoid", {0.2, 0.5, true, true})
            .Case("Affine", {1.0, 0.0, true, true})
            .Case("ScaledTanh", {1.0, 1.0, true, true})
            .Cases({"Tanh", "Sigmoid", "Relu", "Softsign", "Softplus"}, {0, 0, false, false})
            .Default({-1, -1, false, false});
    if (alpha == -1)
      return n.unsupported("activation '" + name + "'");
    if (takesAlpha && nextAlpha < alphas->size())
      alpha = (*alphas)[nextAlpha++];
    if (takesBeta && nextBeta < betas->size())
      beta = (*betas)[nextBeta++];
    result.push_back({name, alpha, beta});
  }
  return result;
}

/// Rows [d * rows, (d + 1) * rows) of `w`'s direction d, as [rows, cols] transposed
/// to [cols, rows] (so x @ it applies the weights).
Value directionWeights(Chain &c, Value w, int64_t d) {
  Value slice = c.slice(w, 0, d, d + 1);
  if (!slice)
    return {};
  SmallVector<DimExpr> dims = getSymShape(slice.getType());
  return c.transpose(c.reshape(slice, {dims[1], dims[2]}), {1, 0});
}

/// Row d of a [directions, ...] tensor, without its leading dim.
Value directionRow(Chain &c, Value v, int64_t d) {
  Value slice = c.slice(v, 0, d, d + 1);
  if (!slice)
    return {};
  SmallVector<DimExpr> dims = getSymShape(slice.getType());
  dims.erase(dims.begin());
  return c.reshape(slice, dims);
}

LogicalResult convertRecurrence(NodeImporter &n, const RecurrenceSpec &spec) {
  auto x = n.requiredInput(0), w = n.requiredInput(1), r = n.requiredInput(2);
  auto hidden = n.intAttr("hidden_size"), layout = n.intAttr("layout", 0);
  auto direction = n.stringAttr("direction", "forward");
  auto linearBeforeReset = n.intAttr("linear_before_reset", 0);
  auto inputForget = n.intAttr("input_forget", 0);
  if (failed(x) || failed(w) || failed(r) || failed(hidden) || failed(layout) ||
      failed(direction) || failed(linearBeforeReset) || failed(inputForget))
    return failure();
  if (*direction != "forward" && *direction != "reverse" && *direction != "bidirectional")
    return n.error("direction '" + *direction + "' is not forward, reverse or bidirectional");
  if (*layout != 0 && *layout != 1)
    return n.error("layout must be 0 or 1, got " + Twine(*layout));
  if (*hidden < 1)
    return n.error("hidden_size must be >= 1, got " + Twine(*hidden));
  if (*inputForget != 0)
    return n.unsupported("LSTM with input_forget (coupled input and forget gates)");
  int64_t directions = *direction == "bidirectional" ? 2 : 1;
  auto activations = readActivations(n, spec, directions);
  if (failed(activations))
    return failure();
  std::optional<double> clip;
  if (n.hasAttr("clip")) {
    auto value = n.floatAttr("clip");
    if (failed(value))
      return failure();
    clip = *value;
  }

  RankedTensorType xType = NodeImporter::typeOf(*x);
  if (xType.getRank() != 3)
    return n.error("X must be 3-D ([seq, batch, input] or, with layout 1, [batch, seq, input])");
  for (Value v : {*w, *r})
    if (NodeImporter::typeOf(v).getRank() != 3)
      return n.error("W and R must be 3-D ([directions, gates * hidden, ...])");
  int64_t seqAxis = *layout == 0 ? 0 : 1;
  // A static length up to kMaxUnrolledSteps unrolls (each step's ops fuse
  // across steps); any other length becomes a kiln.scan the host iterates.
  bool dynamicSteps = xType.isDynamicDim(seqAxis) || xType.getDimSize(seqAxis) > kMaxUnrolledSteps;
  int64_t steps = dynamicSteps ? 0 : xType.getDimSize(seqAxis);
  int64_t h = *hidden, g = spec.gates;
  MLIRContext *ctx = n.context();
  DimExpr hDim = getConstantDim(ctx, h);

  Chain c(n);
  // Time-major input: [seq, batch, input].
  Value xs = *layout == 0 ? *x : c.transpose(*x, {1, 0, 2});
  DimExpr batch = xs ? getSymShape(xs.getType())[1] : DimExpr();
  // State inputs are [directions, batch, hidden], or [batch, directions, hidden].
  auto stateInput = [&](size_t i) -> Value {
    Value v = n.input(i);
    if (!v || *layout == 0)
      return v;
    return c.transpose(v, {1, 0, 2});
  };
  Value initialH = stateInput(5), initialC = spec.kind == CellKind::lstm ? stateInput(6) : Value();
  Value bias = n.input(3), peepholes = spec.kind == CellKind::lstm ? n.input(7) : Value();
  Value mask;
  if (Value lengths = n.input(4)) {
    auto asI64 = castTo(n, lengths, n.builder().getI64Type());
    mask = c.reshape(c(asI64), {batch, getConstantDim(ctx, 1)});
  }
  Value zeroState = c(n.create<BroadcastToOp>({c.k(xs, 0), shapeConstant(n, {batch, hDim})}));

  SmallVector<Value> outputsPerDirection, finalH, finalC;
  for (int64_t d = 0; d < directions; ++d) {
    ArrayRef<Activation> acts =
        ArrayRef<Activation>(*activations).slice(d * spec.defaults.size(), spec.defaults.size());
    Value wT = directionWeights(c, *w, d), rT = directionWeights(c, *r, d);
    // The input projection of every step at once: [seq, batch, gates * hidden].
    Value projected = c.matmul(xs, wT);
    Value recurrentBias;
    if (bias) {
      Value b = directionRow(c, bias, d); // [2 * gates * hidden]: Wb then Rb
      projected = c.bin<AddOp>(projected, c.slice(b, 0, 0, g * h));
      recurrentBias = c.slice(b, 0, g * h, 2 * g * h);
    }
    Value p = peepholes ? directionRow(c, peepholes, d) : Value();
    Value state = initialH ? directionRow(c, initialH, d) : zeroState;
    Value cell = initialC ? directionRow(c, initialC, d) : zeroState;
    bool reverse = *direction == "reverse" || d == 1;
    auto clipped = [&](Value v) {
      return clip ? c.bin<MinOp>(c.bin<MaxOp>(v, c.k(v, -*clip)), c.k(v, *clip)) : v;
    };
    // Gate k of a [batch, gates * hidden] value, or of a [gates * hidden] bias.
    auto gate = [&](Value v, int64_t k) {
      int64_t axis = v ? NodeImporter::typeOf(v).getRank() - 1 : 0;
      return c.slice(v, axis, k * h, (k + 1) * h);
    };
    // One step of the recurrence: the projected input `xt` [batch, gates *
    // hidden] and the state in, the step's output and the new state out; `t`
    // is the step's time index (0-d i64) where sequence_lens masks.
    struct StepResult {
      Value output, state, cell;
    };
    auto cellStep = [&](Value xt, Value state, Value cell, Value t) -> StepResult {
      Value hr = c.matmul(state, rT);
      Value newState, newCell;
      switch (spec.kind) {
      case CellKind::rnn: {
        Value pre = c.bin<AddOp>(xt, hr);
        if (recurrentBias)
          pre = c.bin<AddOp>(pre, recurrentBias);
        newState = applyActivation(c, acts[0], clipped(pre));
        break;
      }
      case CellKind::gru: {
        // Gate order z, r, h; the h gate's recurrent term depends on the reset gate.
        Value rb = recurrentBias;
        auto pre = [&](int64_t k, Value recurrent) {
          Value v = c.bin<AddOp>(gate(xt, k), recurrent);
          return rb ? c.bin<AddOp>(v, gate(rb, k)) : v;
        };
        Value z = applyActivation(c, acts[0], clipped(pre(0, gate(hr, 0))));
        Value reset = applyActivation(c, acts[0], clipped(pre(1, gate(hr, 1))));
        Value candidatePre;
        if (*linearBeforeReset) {
          Value hh = gate(hr, 2);
          if (rb)
            hh = c.bin<AddOp>(hh, gate(rb, 2));
          candidatePre = c.bin<AddOp>(gate(xt, 2), c.bin<MulOp>(reset, hh));
        } else {
          Value rh = c.matmul(c.bin<MulOp>(reset, state), c.slice(rT, 1, 2 * h, 3 * h));
          candidatePre = c.bin<AddOp>(gate(xt, 2), rh);
          if (rb)
            candidatePre = c.bin<AddOp>(candidatePre, gate(rb, 2));
        }
        Value candidate = applyActivation(c, acts[1], clipped(candidatePre));
        // (1 - z) * candidate + z * state
        newState = c.bin<AddOp>(c.bin<MulOp>(c.bin<SubOp>(c.k(z, 1), z), candidate),
                         c.bin<MulOp>(z, state));
        break;
      }
      case CellKind::lstm: {
        // Gate order i, o, f, c; peepholes i, o, f.
        Value all = c.bin<AddOp>(xt, hr);
        if (recurrentBias)
          all = c.bin<AddOp>(all, recurrentBias);
        auto peep = [&](Value v, int64_t k, Value withCell) {
          return p ? c.bin<AddOp>(v, c.bin<MulOp>(c.slice(p, 0, k * h, (k + 1) * h), withCell))
                   : v;
        };
        Value in = applyActivation(c, acts[0], clipped(peep(gate(all, 0), 0, cell)));
        Value forget = applyActivation(c, acts[0], clipped(peep(gate(all, 2), 2, cell)));
        Value candidate = applyActivation(c, acts[1], clipped(gate(all, 3)));
        newCell = c.bin<AddOp>(c.bin<MulOp>(forget, cell), c.bin<MulOp>(in, candidate));
        Value out = applyActivation(c, acts[0], clipped(peep(gate(all, 1), 1, newCell)));
        newState = c.bin<MulOp>(out, applyActivation(c, acts[2], newCell));
        break;
      }
      }
      Value output = newState;
      if (mask) {
        Value live = c.cmp(CompareDirection::lt, t, mask);
        output = c.sel(live, newState, c.k(newState, 0));
        newState = c.sel(live, newState, state);
        if (newCell)
          newCell = c.sel(live, newCell, cell);
      }
      return {output, newState, newCell};
    };
    if (dynamicSteps) {
      // A scan over the time-major projection (backwards for the reverse
      // direction): one step per slice, the state carried, the outputs
      // stacked in time order. The host runs it; the step's ops are kernels
      // and its matmul a library call.
      bool lstm = spec.kind == CellKind::lstm;
      // The carried state has the step's type, [batch, hidden]: initial
      // states with dims of their own are broadcast to it (their dims are
      // guarded to agree).
      auto asStateType = [&](Value v) {
        if (!v || getSymShape(v.getType()) == SmallVector<DimExpr>{batch, hDim})
          return v;
        return c(n.create<BroadcastToOp>({v, shapeConstant(n, {batch, hDim})}));
      };
      state = asStateType(state);
      if (lstm)
        cell = asStateType(cell);
      SmallVector<Value> operands = {state};
      if (lstm)
        operands.push_back(cell);
      operands.push_back(projected);
      Value times = mask ? c.iota(xs, 0, 0, 1) : Value();
      if (mask)
        operands.push_back(times);
      if (!c.ok)
        return failure();
      int64_t states = lstm ? 2 : 1, scanned = mask ? 2 : 1;
      DimExpr seq = getSymShape(xs.getType())[0];
      Type stateType = state.getType();
      Type stackedType = makeTensorType({seq, batch, hDim}, NodeImporter::typeOf(state).getElementType());
      SmallVector<Type> results(states, stateType);
      results.push_back(stackedType);
      OpBuilder &b = n.builder();
      SmallVector<int64_t> directions(scanned, reverse ? 1 : 0);
      OperationState opState(n.loc(), ScanOp::getOperationName());
      opState.addOperands(operands);
      opState.addAttribute("num_scan_inputs", b.getI64IntegerAttr(scanned));
      opState.addAttribute("scan_input_axes", b.getDenseI64ArrayAttr(SmallVector<int64_t>(scanned, 0)));
      opState.addAttribute("scan_input_directions", b.getDenseI64ArrayAttr(directions));
      opState.addAttribute("scan_output_axes", b.getDenseI64ArrayAttr({0}));
      opState.addAttribute("scan_output_directions", b.getDenseI64ArrayAttr({reverse ? 1 : 0}));
      opState.addTypes(results);
      Region *region = opState.addRegion();
      Block *body = new Block();
      region->push_back(body);
      Value bodyState = body->addArgument(stateType, n.loc());
      Value bodyCell = lstm ? body->addArgument(stateType, n.loc()) : Value();
      SmallVector<DimExpr> xtDims = getSymShape(projected.getType());
      xtDims.erase(xtDims.begin());
      Value xt = body->addArgument(makeTensorType(xtDims, NodeImporter::typeOf(projected).getElementType()),
                                   n.loc());
      Value t = mask ? body->addArgument(RankedTensorType::get({}, b.getI64Type()), n.loc()) : Value();
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(body);
        StepResult r = cellStep(xt, bodyState, bodyCell, t);
        if (!c.ok || !r.output || !r.state)
          return failure();
        SmallVector<Value> yields = {r.state};
        if (lstm)
          yields.push_back(r.cell);
        yields.push_back(r.output);
        YieldOp::create(b, n.loc(), yields);
      }
      Operation *scan = b.create(opState);
      state = scan->getResult(0);
      if (lstm)
        cell = scan->getResult(1);
      outputsPerDirection.push_back(
          c.reshape(scan->getResult(states), {seq, getConstantDim(ctx, 1), batch, hDim}));
      finalH.push_back(c.reshape(state, {getConstantDim(ctx, 1), batch, hDim}));
      finalC.push_back(c.reshape(cell, {getConstantDim(ctx, 1), batch, hDim}));
      continue;
    }
    SmallVector<Value> stepOutputs(steps);
    for (int64_t i = 0; i < steps; ++i) {
      int64_t t = reverse ? steps - 1 - i : i;
      Value xt = c.reshape(c.slice(projected, 0, t, t + 1), {batch, getConstantDim(ctx, g * h)});
      StepResult r = cellStep(xt, state, cell, mask ? n.constI64({t}, /*scalar=*/true) : Value());
      state = r.state;
      if (r.cell)
        cell = r.cell;
      stepOutputs[t] = c.reshape(r.output, {getConstantDim(ctx, 1), getConstantDim(ctx, 1), batch, hDim});
      if (!c.ok)
        return failure();
    }
    outputsPerDirection.push_back(c.concat(stepOutputs, 0));
    finalH.push_back(c.reshape(state, {getConstantDim(ctx, 1), batch, hDim}));
    finalC.push_back(c.reshape(cell, {getConstantDim(ctx, 1), batch, hDim}));
  }
  Value y = c.concat(outputsPerDirection, 1);        // [seq, dirs, batch, hidden]
  Value yh = c.concat(finalH, 0), yc = c.concat(finalC, 0); // [dirs, batch, hidden]
  if (*layout == 1) {
    y = c.transpose(y, {2, 0, 1, 3});
    yh = c.transpose(yh, {1, 0, 2});
    yc = c.transpose(yc, {1, 0, 2});
  }
  if (spec.kind == CellKind::lstm)
    return c.done({y, yh, yc});
  return c.done({y, yh});
}
} // namespace

LogicalResult convertRNN(NodeImporter &n) {
  return convertRecurrence(n, {CellKind::rnn, 1, {"Tanh"}});
}

LogicalResult convertGRU(NodeImporter &n) {
  return convertRecurrence(n, {CellKind::gru, 3, {"Sigmoid", "Tanh"}});
}

LogicalResult convertLSTM(NodeImporter &n) {
  return convertRecurrence(n, {CellKind::lstm, 4, {"Sigmoid", "Tanh", "Tanh"}});
}

} // namespace kiln::onnx_import
