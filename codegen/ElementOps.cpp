//===- ElementOps.cpp - one element of each kiln op -----------------------===//
//
// elementOfOp: the element function of every op a kernel may hold (the
// elementwise ops from their op-table rows), and the gather/scatter elements.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

/// An op table row's CUDA C (kiln::ops::cudaTemplate) with `$x` (`$a`, `$b`)
/// replaced by the operands' expressions and `$T` by the compute type. The text
/// substituted is not scanned again.
static std::string expandCudaTemplate(StringRef tmpl, ArrayRef<std::pair<char, std::string>> operands,
                               StringRef computeType) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '$' || i + 1 == tmpl.size()) {
      out += tmpl[i];
      continue;
    }
    char name = tmpl[++i];
    if (name == 'T') {
      out += computeType;
      continue;
    }
    auto operand = llvm::find_if(operands, [&](const auto &o) { return o.first == name; });
    if (operand != operands.end())
      out += operand->second;
    else
      out += {'$', name}; // not a placeholder of this arity: OpTableTest reports it
  }
  return out;
}

/// One element of a gather_nd: the index tuple at the result's leading
/// position picks data's dims batch_dims..batch_dims+q; the rest of the index
/// walks the slice it names.
FailureOr<std::string> KernelEmitter::gatherNdElement(GatherNDOp gather, ArrayRef<std::string> index) {
  Value data = gather.getData(), indices = gather.getIndices();
  std::string ct = computeType(elementOf(gather.getResult()));
  SymShape dataDims = getSymShape(data.getType());
  SymShape indexDims = getSymShape(indices.getType());
  std::optional<int64_t> q = getConstantDimValue(indexDims.back());
  if (!q)
    return unsupported(gather, "needs index tuples of a known length");
  size_t batch = static_cast<size_t>(gather.getBatchDims());
  size_t leading = indexDims.size() - 1;
  std::vector<std::string> in(index.begin(), index.begin() + batch);
  std::vector<std::string> tuple(index.begin(), index.begin() + leading);
  tuple.push_back("");
  for (int64_t j = 0; j < *q; ++j) {
    tuple.back() = std::to_string(j);
    FailureOr<std::string> k = element(indices, tuple);
    if (failed(k))
      return failure();
    in.push_back(gatherPosition(*k, dataDims[batch + j]));
  }
  in.insert(in.end(), index.begin() + leading, index.end());
  return gatheredElement(data, in, ArrayRef<DimExpr>(dataDims).slice(batch, *q), ct);
}

/// `current` combined with an update by a scatter's reduction, as the
/// reference does (integers wrapping; max/min as std::max/std::min).
std::string scatterCombine(ScatterReduction reduction, const std::string &ct, bool isF,
                           const std::string &current, const std::string &update) {
  const std::string &a = current, &b = update;
  switch (reduction) {
  case ScatterReduction::none:
    return b;
  case ScatterReduction::add:
    return isF ? "(" + a + " + " + b + ")" : "(" + ct + ")((uint64_t)" + a + " + (uint64_t)" + b + ")";
  case ScatterReduction::mul:
    return isF ? "(" + a + " * " + b + ")" : "(" + ct + ")((uint64_t)" + a + " * (uint64_t)" + b + ")";
  case ScatterReduction::max:
    return "(" + a + " < " + b + " ? " + b + " : " + a + ")";
  case ScatterReduction::min:
    return "(" + b + " < " + a + " ? " + b + " : " + a + ")";
  }
  return b;
}

LogicalResult KernelEmitter::combineUpdate(Value updates, ArrayRef<std::string> at,
                                          ScatterReduction reduction, Type t,
                                          const std::string &acc) {
  FailureOr<std::string> update = element(updates, at);
  if (failed(update))
    return failure();
  line(acc + " = " + scatterCombine(reduction, computeType(t), isFloatType(t), acc, *update) + ";");
  return success();
}

/// One element of a scatter_elements, gathered instead of scattered: the
/// element of data, combined in order with every update along the axis whose
/// index names this position (the last one wins for `none`, as in the
/// reference's sequential loop). An output element reads the indices of its
/// line along the axis: updates.shape[axis] reads, fine for the short update
/// axes exported models scatter along.
FailureOr<std::string> KernelEmitter::scatterElementsElement(ScatterElementsOp scatter,
                                                             ArrayRef<std::string> index) {
  Value result = scatter.getResult();
  Type t = elementOf(result);
  std::string ct = computeType(t);
  int64_t rank = index.size();
  int64_t axis = normalizedAxis(static_cast<int64_t>(scatter.getAxis()), rank);
  FailureOr<std::string> initial = element(scatter.getData(), index);
  if (failed(initial))
    return failure();
  std::string acc = temp("acc"), u = temp("u");
  line(ct + " " + acc + " = " + *initial + ";");
  std::vector<std::string> updateShape = dims(scatter.getUpdates());
  SymShape dataDims = getSymShape(scatter.getData().getType());
  SymShape updateDims = getSymShape(scatter.getUpdates().getType());
  // Positions past the updates' extent along another dim receive nothing.
  std::string covered = "true";
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && updateDims[d] != dataDims[d])
      covered += " && " + index[d] + " < " + updateShape[d];
  openBlock("if (" + covered + ") {");
  openBlock("for (" + indexType + " " + u + " = 0; " + u + " < " + updateShape[axis] + "; ++" + u + ") {");
  std::vector<std::string> at(index.begin(), index.end());
  at[axis] = u;
  FailureOr<std::string> k = element(scatter.getIndices(), at);
  if (failed(k))
    return failure();
  std::string kk = gatherPosition(*k, dataDims[axis]);
  openBlock("if (" + kk + " == " + index[axis] + ") {");
  if (failed(combineUpdate(scatter.getUpdates(), at, scatter.getReduction(), t, acc)))
    return failure();
  closeBlock();
  closeBlock();
  closeBlock();
  return acc;
}

/// One element of a scatter_nd, gathered: the element of data combined in order
/// with the update slice of every index tuple that names this element's
/// leading q dims. Each element reads every tuple (tuples x q index reads).
FailureOr<std::string> KernelEmitter::scatterNdElement(ScatterNDOp scatter,
                                                       ArrayRef<std::string> index) {
  Value result = scatter.getResult(), indices = scatter.getIndices();
  Type t = elementOf(result);
  std::string ct = computeType(t);
  SymShape dataDims = getSymShape(scatter.getData().getType());
  SymShape indexDims = getSymShape(indices.getType());
  std::optional<int64_t> q = getConstantDimValue(indexDims.back());
  if (!q)
    return unsupported(scatter, "needs index tuples of a known length");
  FailureOr<std::string> initial = element(scatter.getData(), index);
  if (failed(initial))
    return failure();
  std::string acc = temp("acc"), tupleVar = temp("tuple"), matches = temp("match");
  line(ct + " " + acc + " = " + *initial + ";");
  std::vector<std::string> indexShape = dims(indices);
  std::vector<std::string> leadingShape(indexShape.begin(), indexShape.end() - 1);
  openBlock("for (" + indexType + " " + tupleVar + " = 0; " + tupleVar + " < " + product(leadingShape) + "; ++" +
            tupleVar + ") {");
  std::vector<std::string> tuple = unravel(tupleVar, leadingShape);
  tuple.push_back("");
  line("bool " + matches + " = true;");
  for (int64_t j = 0; j < *q; ++j) {
    tuple.back() = std::to_string(j);
    FailureOr<std::string> k = element(indices, tuple);
    if (failed(k))
      return failure();
    std::string kk = gatherPosition(*k, dataDims[j]);
    line(matches + " = " + matches + " && " + kk + " == " + index[j] + ";");
  }
  openBlock("if (" + matches + ") {");
  std::vector<std::string> at(tuple.begin(), tuple.end() - 1);
  at.insert(at.end(), index.begin() + *q, index.end());
  if (failed(combineUpdate(scatter.getUpdates(), at, scatter.getReduction(), t, acc)))
    return failure();
  closeBlock();
  closeBlock();
  return acc;
}

/// Elementwise and scalar-producing ops: compare, select, cast, bitcast, the
/// op table's unary and binary functions, splat constants, range and shape
/// vectors.
FailureOr<std::string> KernelEmitter::scalarElement(Operation *op, Value v,
                                                    ArrayRef<std::string> index) {
  Type t = elementOf(v);
  std::string ct = computeType(t);
  bool isF = isFloatType(t);
  auto operandElement = [&](unsigned i) {
    return element(op->getOperand(i), broadcastIndex(op->getOperand(i), v, index));
  };
  if (auto c = dyn_cast<CompareOp>(op)) {
    FailureOr<std::string> a = operandElement(0), b = failed(a) ? a : operandElement(1);
    if (failed(a) || failed(b))
      return failure();
    static const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
    return bind(v, "(" + *a + " " + ops[static_cast<int>(c.getDirection())] + " " + *b + ")");
  }
  if (isa<SelectOp>(op)) {
    FailureOr<std::string> c = operandElement(0);
    FailureOr<std::string> a = failed(c) ? c : operandElement(1);
    FailureOr<std::string> b = failed(a) ? a : operandElement(2);
    if (failed(b))
      return failure();
    return bind(v, "(" + *c + " ? " + *a + " : " + *b + ")");
  }
  if (auto cast = dyn_cast<CastOp>(op)) {
    FailureOr<std::string> x = operandElement(0);
    if (failed(x))
      return failure();
    Type from = elementOf(cast.getInput());
    if (t.isInteger(1))
      return bind(v, "(" + *x + " != 0)");
    if (isF) {
      std::string e = "(" + ct + ")(" + *x + ")";
      if (t.isF16())
        e = "kiln_load(kiln_to_f16(" + e + "))";
      else if (t.isBF16())
        e = "kiln_load(kiln_to_bf16(" + e + "))";
      else if (std::string f8 = float8Name(t); !f8.empty())
        e = "kiln_load(kiln_to_" + f8 + "(" + e + ", " +
            (cast.getSaturate() ? "true" : "false") + "))";
      return bind(v, e);
    }
    if (isFloatType(from))
      return bind(v, "kiln_f2i<" + ct + ">(" + *x + ")");
    return bind(v, "(" + ct + ")(" + *x + ")");
  }
  if (auto bc = dyn_cast<BitcastOp>(op)) {
    // Through the storage types: the value's bits as stored, read back as the new
    // type (f16/bf16/float8 convert on both sides).
    FailureOr<std::string> x = operandElement(0);
    if (failed(x))
      return failure();
    Type from = elementOf(bc.getInput());
    return bind(v, "kiln_load(kiln_bitcast<" + storageType(t) + ">(" + store(from, *x) + "))");
  }
  // Unary and binary elementwise ops: their rows in the op table spell them.
  if (std::optional<ops::UnaryFn> fn = unaryFnOf(op)) {
    FailureOr<std::string> x = operandElement(0);
    if (failed(x))
      return failure();
    return bind(v, expandCudaTemplate(ops::cudaTemplate(*fn, isF), {{'x', *x}}, ct));
  }
  if (std::optional<ops::BinaryFn> fn = binaryFnOf(op)) {
    FailureOr<std::string> a = operandElement(0), b = failed(a) ? a : operandElement(1);
    if (failed(a) || failed(b))
      return failure();
    // An integer divisor that is a nonzero constant needs no check.
    if (!isF && ops::intDivides(*fn)) {
      dividesData = true;
      DenseElementsAttr divisor;
      if (!matchPattern(op->getOperand(1), m_Constant(&divisor)) || !divisor.isSplat() ||
          divisor.getSplatValue<APInt>().isZero())
        checkData(*b + " == 0", "KILN_ERROR_DIVISION_BY_ZERO");
    }
    return bind(v, expandCudaTemplate(ops::cudaTemplate(*fn, isF), {{'a', *a}, {'b', *b}}, ct));
  }
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense || !dense.isSplat())
      return unsupported(op, "is not a splat (it should be a kernel operand)");
    return scalarLiteral(t, dense.getSplatValue<Attribute>());
  }
  if (auto range = dyn_cast<RangeOp>(op)) {
    // As the reference: floats in double, integers wrapping.
    FailureOr<std::string> start = element(range.getStart(), {});
    FailureOr<std::string> delta = failed(start) ? start : element(range.getDelta(), {});
    if (failed(delta))
      return failure();
    if (isF)
      return bind(v, "(" + ct + ")((double)" + *start + " + (double)" + index[0] + " * (double)" +
                         *delta + ")");
    return bind(v, "(" + ct + ")((uint64_t)" + *start + " + (uint64_t)" + index[0] +
                       " * (uint64_t)" + *delta + ")");
  }
  if (auto sc = dyn_cast<SymbolicConstantOp>(op)) {
    // A shape vector in a kernel (Tile's repeats times the input's dims, say):
    // element k is its k-th dim expression, symbols read as kernel parameters.
    ArrayRef<DimExpr> values = sc.getValue().getDims();
    if (index.empty())
      return bind(v, "(" + ct + ")" + dim(values.front()));
    std::string expr = "(" + ct + ")" + dim(values.back());
    for (size_t k = values.size() - 1; k-- > 0;)
      expr = "(" + index[0] + " == " + std::to_string(k) + " ? (" + ct + ")" + dim(values[k]) +
             " : " + expr + ")";
    return bind(v, expr);
  }
  return unsupported(op, "has no CUDA C lowering yet");
}

FailureOr<std::string> KernelEmitter::reshapeElement(ReshapeOp r, Value v,
                                                     ArrayRef<std::string> index) {
  std::vector<std::string> outShape = dims(v), inShape = dims(r.getInput());
  // Dims the reshape keeps, splits or merges map group by group: a split
  // dim's index is its parts' linear position, a merged one's indices come
  // from dividing by the parts only (no divide for a head split).
  std::vector<std::array<size_t, 4>> groups = {{0, outShape.size(), 0, inShape.size()}};
  if (auto found = reshapeGroups(getSymShape(v.getType()), getSymShape(r.getInput().getType())))
    groups = std::move(*found);
  std::vector<std::string> in;
  ArrayRef<std::string> outIndex(index), outDims(outShape), inDims(inShape);
  for (auto [ob, oe, ib, ie] : groups) {
    std::string linear = linearize(outIndex.slice(ob, oe - ob), outDims.slice(ob, oe - ob));
    if (ie - ib == 1) {
      in.push_back(linear);
      continue;
    }
    std::string l = temp("l");
    line("const " + indexType + " " + l + " = " + linear + ";");
    for (std::string &i : unravel(l, inDims.slice(ib, ie - ib)))
      in.push_back(std::move(i));
  }
  return element(r.getInput(), in);
}

FailureOr<std::string> KernelEmitter::sliceElement(SliceOp s, Value,
                                                   ArrayRef<std::string> index) {
  Operation *op = s;
  std::optional<SymShape> starts = getKnownElements(s.getStarts());
  std::optional<SymShape> steps = getKnownElements(s.getSteps());
  if (!starts || !steps)
    return unsupported(op, "needs constant starts and steps");
  std::vector<std::string> inShape = dims(s.getInput()), in;
  for (size_t d = 0; d < index.size(); ++d) {
    if (!(*starts)[d] || !(*steps)[d])
      return unsupported(op, "needs constant starts and steps");
    std::string step = dim((*steps)[d]);
    in.push_back("(kiln_slice_start(" + dim((*starts)[d]) + ", " + step + ", " + inShape[d] +
                 ") + " + index[d] + " * " + step + ")");
  }
  return element(s.getInput(), in);
}

FailureOr<std::string> KernelEmitter::concatElement(ConcatOp c, Value v,
                                                    ArrayRef<std::string> index) {
  std::string ct = computeType(elementOf(v));
  int64_t rank = index.size();
  int64_t axis = normalizedAxis(static_cast<int64_t>(c.getAxis()), rank);
  std::string result = temp();
  line(ct + " " + result + ";");
  // Each input's end offset is a variable of its own, defined from the
  // previous one: code linear in the inputs (spelling the sums out would be
  // quadratic; 500 inputs made hundreds of megabytes of C).
  std::vector<std::string> ends;
  std::string offset = "((" + indexType + ")0)";
  for (Value input : c.getInputs()) {
    std::string end = temp("end");
    line("const " + indexType + " " + end + " = " + offset + " + " +
         dim(getSymShape(input.getType())[axis]) + ";");
    ends.push_back(end);
    offset = end;
  }
  offset = "((" + indexType + ")0)";
  for (auto [k, input] : llvm::enumerate(c.getInputs())) {
    std::string next = ends[k];
    bool last = k + 1 == c.getInputs().size();
    openBlock((k ? "} else " : "") + std::string(last ? "{" : "if (" + index[axis] + " < " + next + ") {"));
    std::vector<std::string> in(index.begin(), index.end());
    in[axis] = "(" + index[axis] + " - " + offset + ")";
    FailureOr<std::string> e = element(input, in);
    if (failed(e))
      return failure();
    line(result + " = " + *e + ";");
    popScope();
    --indent;
    offset = next;
  }
  line("}");
  return result;
}

FailureOr<std::string> KernelEmitter::padElement(PadOp p, Value v,
                                                 ArrayRef<std::string> index) {
  Operation *op = p;
  std::string ct = computeType(elementOf(v));
  std::optional<SymShape> pads = getKnownElements(p.getPads());
  if (!pads)
    return unsupported(op, "needs constant pads");
  std::vector<std::string> inShape = dims(p.getInput()), in;
  std::string inside = "true";
  for (size_t d = 0; d < index.size(); ++d) {
    std::string k = "(" + index[d] + " - " + dim((*pads)[d]) + ")";
    switch (p.getMode()) {
    case PadMode::constant:
      inside += " && " + k + " >= 0 && " + k + " < " + inShape[d];
      in.push_back(k);
      break;
    case PadMode::edge:
      in.push_back("kiln_clamp_index(" + k + ", " + inShape[d] + ")");
      break;
    case PadMode::reflect:
      in.push_back("kiln_reflect_index(" + k + ", " + inShape[d] + ")");
      break;
    case PadMode::wrap:
      in.push_back("kiln_floormod(" + k + ", " + inShape[d] + ")");
      break;
    }
  }
  if (p.getMode() != PadMode::constant)
    return element(p.getInput(), in);
  FailureOr<std::string> fill = element(p.getValue(), {});
  if (failed(fill))
    return failure();
  std::string result = temp();
  line(ct + " " + result + " = " + *fill + ";");
  openBlock("if (" + inside + ") {");
  FailureOr<std::string> e = element(p.getInput(), in);
  if (failed(e))
    return failure();
  line(result + " = " + *e + ";");
  closeBlock();
  return result;
}

FailureOr<std::string> KernelEmitter::gatherElement(GatherOp g, Value v,
                                                    ArrayRef<std::string> index) {
  std::string ct = computeType(elementOf(v));
  int64_t rank = cast<RankedTensorType>(g.getData().getType()).getRank();
  int64_t axis = normalizedAxis(static_cast<int64_t>(g.getAxis()), rank);
  int64_t ri = cast<RankedTensorType>(g.getIndices().getType()).getRank();
  std::vector<std::string> at(index.begin() + axis, index.begin() + axis + ri);
  FailureOr<std::string> k = element(g.getIndices(), at);
  if (failed(k))
    return failure();
  DimExpr n = getSymShape(g.getData().getType())[axis];
  std::string kk = gatherPosition(*k, n);
  std::vector<std::string> in(index.begin(), index.begin() + axis);
  in.push_back(kk);
  in.insert(in.end(), index.begin() + axis + ri, index.end());
  return gatheredElement(g.getData(), in, n, ct);
}

FailureOr<std::string> KernelEmitter::gatherElementsElement(GatherElementsOp g, Value v,
                                                            ArrayRef<std::string> index) {
  std::string ct = computeType(elementOf(v));
  int64_t rank = index.size();
  int64_t axis = normalizedAxis(static_cast<int64_t>(g.getAxis()), rank);
  FailureOr<std::string> k = element(g.getIndices(), index);
  if (failed(k))
    return failure();
  std::vector<std::string> in(index.begin(), index.end());
  DimExpr n = getSymShape(g.getData().getType())[axis];
  in[axis] = gatherPosition(*k, n);
  return gatheredElement(g.getData(), in, n, ct);
}

/// Element `index` of kiln.cache_write's new tensor: the update's row
/// `index[axis] - positions[b]` (modulo the cache's length where circular)
/// where that lies in the update, else the cache's element (0 after the
/// written rows with zero_tail). A sequence whose rows would leave the cache
/// is reported.
FailureOr<std::string> KernelEmitter::cacheWriteElement(CacheWriteOp w, Value v,
                                                        ArrayRef<std::string> index) {
  std::string ct = computeType(elementOf(v));
  int64_t axis = normalizedAxis(static_cast<int64_t>(w.getAxis()), index.size());
  FailureOr<std::string> at = element(w.getPositions(), {index[0]});
  if (failed(at))
    return failure();
  std::string rows = dim(getSymShape(w.getUpdate().getType())[axis]),
              length = dim(getSymShape(w.getCache().getType())[axis]);
  std::string start = temp("start"), offset = temp("offset"), result = temp();
  // The position in 64 bits, as the data holds it (a 32-bit index would
  // wrap a large one into the cache).
  line("const int64_t " + start + " = (int64_t)" + *at + ";");
  if (w.getCircular()) {
    // The row's distance from the start around the ring: every start is in
    // range, and (rows <= length) each row lands once.
    std::string ring = ringLength(w, axis), place = temp("place");
    line("const int64_t " + place + " = " + ringPlace(start, ring) + ";");
    line("const int64_t " + offset + " = (int64_t)" + index[axis] + " >= " + place +
         " ? (int64_t)" + index[axis] + " - " + place + " : (int64_t)" + index[axis] + " - " +
         place + " + " + ring + ";");
  } else {
    // -1 (the cache's element) for a start outside: reported, and no
    // subtraction that could overflow.
    std::string outside = start + " < 0 || " + start + " > " + length + " - " + rows;
    checkData(outside, "KILN_ERROR_INDEX_OUT_OF_RANGE");
    line("const int64_t " + offset + " = " + outside + " ? -1 : (int64_t)" + index[axis] + " - " +
         start + ";");
  }
  line(ct + " " + result + ";");
  std::vector<std::string> in(index.begin(), index.end());
  in[axis] = "(" + indexType + ")" + offset;
  openBlock("if (" + offset + " >= 0 && " + offset + " < " + rows + ") {");
  FailureOr<std::string> e = element(w.getUpdate(), in);
  if (failed(e))
    return failure();
  line(result + " = " + *e + ";");
  closeBlock();
  if (w.getZeroTail()) {
    openBlock("else if (" + offset + " >= " + rows + ") {");
    line(result + " = (" + ct + ")0;");
    closeBlock();
  }
  openBlock("else {");
  FailureOr<std::string> c = element(w.getCache(), index);
  if (failed(c))
    return failure();
  line(result + " = " + *c + ";");
  closeBlock();
  return result;
}

std::string KernelEmitter::ringLength(CacheWriteOp w, int64_t axis) {
  DimExpr length = getSymShape(w.getCache().getType())[axis];
  std::optional<int64_t> known = getConstantDimValue(length);
  if (!known)
    dividesData = true;
  return known == std::optional<int64_t>(0) ? std::string("1") : dim(length);
}

FailureOr<std::string> KernelEmitter::elementOfOp(Operation *op, Value v,
                                                  ArrayRef<std::string> index) {
  if (auto b = dyn_cast<BroadcastToOp>(op))
    return element(b.getInput(), broadcastIndex(b.getInput(), v, index));
  if (auto tr = dyn_cast<TransposeOp>(op)) {
    std::vector<std::string> in(index.size());
    for (auto [d, p] : llvm::enumerate(tr.getPermutation()))
      in[p] = index[d];
    return element(tr.getInput(), in);
  }
  // Ops whose element is an index map of their own, or a loop or a search
  // (KernelEmitter::*Element); the rest compute a scalar from their operands.
  return llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
      .Case([&](ReshapeOp o) { return reshapeElement(o, v, index); })
      .Case([&](SliceOp o) { return sliceElement(o, v, index); })
      .Case([&](ConcatOp o) { return concatElement(o, v, index); })
      .Case([&](PadOp o) { return padElement(o, v, index); })
      .Case([&](GatherOp o) { return gatherElement(o, v, index); })
      .Case([&](GatherElementsOp o) { return gatherElementsElement(o, v, index); })
      .Case([&](CacheWriteOp o) { return cacheWriteElement(o, v, index); })
      .Case([&](PoolOp o) { return poolElement(o, index); })
      .Case([&](MatmulOp o) { return matmulElement(o, index); })
      .Case([&](ResizeOp o) { return resizeElement(o, index); })
      .Case([&](GatherNDOp o) { return gatherNdElement(o, index); })
      .Case([&](GridSampleOp o) { return gridSampleElement(o, index); })
      .Case([&](RoiAlignOp o) { return roiAlignElement(o, index); })
      .Case([&](ScatterElementsOp o) { return scatterElementsElement(o, index); })
      .Case([&](ScatterNDOp o) { return scatterNdElement(o, index); })
      .Case([&](Col2ImOp o) { return col2ImElement(o, index); })
      .Case([&](DetOp o) { return detElement(o, index); })
      .Default([&](Operation *) { return scalarElement(op, v, index); });
}

} // namespace kiln::codegen
