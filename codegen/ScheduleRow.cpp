//===- ScheduleRow.cpp - row kernels: softmax, log_softmax, layer_norm ----===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

/// One loop over a row kernel's rows and the passes over each row: a warp a
/// row (`warp`), or a block; with `cache` elements a thread kept in registers
/// between passes (rowCache); on the vector path (`vectorThreads` threads a
/// row, rowVectors vectors of rowWidth each in rowCache) when nonzero.
LogicalResult KernelEmitter::emitRowLoop(const RowPlan &plan, bool warp, int64_t cache,
                                         int vectorThreads) {
  Value x = plan.x;
  Type t = plan.t;
  const std::string &acc = plan.acc;
  const std::vector<std::string> &outerShape = plan.outerShape, &innerShape = plan.innerShape,
                                 &rowShape = plan.rowShape;
  const std::optional<int64_t> &staticRow = plan.staticRow;
  const int rowWidth = plan.rowWidth, rowVectors = plan.rowVectors;
  auto reduce = [&](const std::string &v, const std::string &fn) {
    if (vectorThreads > 32)
      return "kiln_group_reduce<" + std::to_string(vectorThreads / 32) + ">(" + v + ", " + fn + ", scratch)";
    return warp || vectorThreads ? "kiln_warp_reduce(" + v + ", " + fn + ")"
                                 : "kiln_block_reduce(" + v + ", " + fn + ", scratch)";
  };
  if (vectorThreads) {
    // Every thread of the block runs the same trips (the group reduction's
    // barriers): a group past the last row computes nothing it stores.
    openBlock("for (int64_t base = blockIdx.x * groups; base < rows; base += gridDim.x * groups) {");
    line("const int64_t row = base + group;");
    line("const bool live = row < rows;");
  } else {
    openBlock(warp ? "for (int64_t row = blockIdx.x * warps + threadIdx.x / 32; row < rows; row += gridDim.x * warps) {"
                   : "for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {");
  }
  // The row's position before and after the reduced axis.
  std::string rowOuter = temp("ro"), rowInner = temp("ri");
  line("const int64_t " + rowOuter + " = " + quotient("row", product(innerShape)) + ";");
  line("const int64_t " + rowInner + " = row - " + rowOuter + " * inner;");
  std::vector<std::string> outerIndex = unravel(rowOuter, outerShape);
  std::vector<std::string> innerIndex = unravel(rowInner, innerShape);
  // The element at position j of the row, and its flat offset in the result.
  auto rowIndex = [&](const std::string &j) {
    std::vector<std::string> index = outerIndex;
    std::vector<std::string> within = unravel(j, rowShape);
    index.insert(index.end(), within.begin(), within.end());
    index.insert(index.end(), innerIndex.begin(), innerIndex.end());
    return index;
  };
  std::string maxFn = "[](" + acc + " a, " + acc + " b) { return kiln_max<" + acc + ">(a, b); }";
  std::string sumFn = "[](" + acc + " a, " + acc + " b) { return a + b; }";
  if (cache)
    line(acc + " rowCache[" + std::to_string(cache) + "];");
  int pass = 0;
  std::string W = std::to_string(rowWidth), vectorType = "kiln_vec<" + storageType(t) + ", " + W + ">";
  auto loop = [&](const std::function<LogicalResult(const std::vector<std::string> &)> &f) {
    if (vectorThreads) {
      // Each thread's vectors: x's elements computed lane by lane from
      // vectors of its inputs (element() reads them through
      // broadcastReads), kept in rowCache by the first pass.
      bool first = pass++ == 0;
      openBlock("KILN_UNROLL for (int64_t k = 0; k < " + std::to_string(rowVectors) + "; ++k) {");
      line("const int64_t vj = part + k * " + std::to_string(vectorThreads) + ";");
      openBlock("if (live && vj < " + std::to_string(*staticRow / rowWidth) + ") {");
      for (lane = 0; lane < rowWidth; ++lane) {
        pushScope();
        std::vector<std::string> index = rowIndex("(vj * " + W + " + " + std::to_string(lane) + ")");
        std::string slot = "rowCache[k * " + W + " + " + std::to_string(lane) + "]";
        if (first) {
          FailureOr<std::string> v = element(x, index);
          if (failed(v))
            return failure();
          line(slot + " = " + *v + ";");
        }
        memo.back()[memoKey(x, index)] = slot;
        LogicalResult r = f(index);
        popScope();
        if (failed(r))
          return failure();
      }
      lane = 0;
      closeBlock();
      closeBlock();
      return success();
    }
    if (!cache) {
      openBlock(warp ? "for (int64_t j = lane; j < L; j += 32) {"
                     : "for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {");
      LogicalResult r = f(rowIndex("j"));
      closeBlock();
      return r;
    }
    // The first pass loads the thread's elements into rowCache; later
    // passes read them from there (x's element at this pass's index is
    // rowCache[k]).
    openBlock("KILN_UNROLL for (int64_t k = 0; k < " + std::to_string(cache) + "; ++k) {");
    line(warp ? "const int64_t j = lane + k * 32;" : "const int64_t j = threadIdx.x + k * blockDim.x;");
    openBlock("if (j < L) {");
    std::vector<std::string> index = rowIndex("j");
    if (pass++ == 0) {
      FailureOr<std::string> v = element(x, index);
      if (failed(v))
        return failure();
      line("rowCache[k] = " + *v + ";");
    }
    memo.back()[memoKey(x, index)] = "rowCache[k]";
    LogicalResult r = f(index);
    closeBlock();
    closeBlock();
    return r;
  };
  std::string flat = "(" + rowOuter + " * L + j) * inner + " + rowInner;
  // A result element at `offset` (the vector path: lane by lane into one
  // vector, stored at the last lane).
  auto storeResult = [&](const std::string &offset, const std::string &y) {
    if (!vectorThreads) {
      line("out[" + offset + "] = " + store(t, y) + ";");
      return;
    }
    if (lane == 0)
      line(vectorType + " rowOut;");
    line("rowOut.x[" + std::to_string(lane) + "] = " + store(t, y) + ";");
    if (lane == rowWidth - 1)
      line("*reinterpret_cast<" + vectorType + " *>(out + row * L + vj * " + W + ") = rowOut;");
  };
  RowPasses passes{reduce, loop, storeResult, flat, maxFn, sumFn};
  if (failed(plan.layerNorm ? emitLayerNormPasses(plan, passes) : emitSoftmaxPasses(plan, passes)))
    return failure();
  closeBlock();
  return success();
}

/// The passes of a softmax or log_softmax row: its maximum, its sum of
/// exponentials, then the results.
LogicalResult KernelEmitter::emitSoftmaxPasses(const RowPlan &plan, const RowPasses &passes) {
  Value x = plan.x;
  const std::string &acc = plan.acc;
  const auto &loop = passes.loop;
  const auto &reduce = passes.reduce;
  const auto &storeResult = passes.storeResult;
  const std::string &flat = passes.flat, &maxFn = passes.maxFn, &sumFn = passes.sumFn;
  bool logarithm = isa<LogSoftmaxOp>(plan.root);
  line(acc + " mx = (" + acc + ")kiln_f32_bits(0xff800000u);");
  if (failed(loop([&](const std::vector<std::string> &index) {
        FailureOr<std::string> v = element(x, index);
        if (failed(v))
          return failure();
        line("mx = kiln_max<" + acc + ">(mx, " + *v + ");");
        return success();
      })))
    return failure();
  line("mx = " + reduce("mx", maxFn) + ";");
  line("if (kiln_isinf(mx)) mx = (" + acc + ")0;");
  line(acc + " sum = (" + acc + ")0;");
  if (failed(loop([&](const std::vector<std::string> &index) {
        FailureOr<std::string> v = element(x, index);
        if (failed(v))
          return failure();
        line("sum += kiln_exp(" + *v + " - mx);");
        return success();
      })))
    return failure();
  line("sum = " + reduce("sum", sumFn) + ";");
  if (failed(loop([&](const std::vector<std::string> &index) {
        FailureOr<std::string> v = element(x, index);
        if (failed(v))
          return failure();
        std::string y = logarithm ? "(" + *v + " - mx) - kiln_log(sum)"
                                  : "kiln_exp(" + *v + " - mx) / sum";
        storeResult(flat, y);
        return success();
      })))
    return failure();
  return success();
}

/// The passes of a layer_norm row: its mean, its variance, then the
/// normalized, scaled and shifted results. An rms_norm row is the same
/// without the mean (0): the variance pass gives the mean of squares.
LogicalResult KernelEmitter::emitLayerNormPasses(const RowPlan &plan, const RowPasses &passes) {
  Value x = plan.x, result = plan.result;
  Type t = plan.t;
  const std::string &acc = plan.acc;
  const auto &loop = passes.loop;
  const auto &reduce = passes.reduce;
  const auto &storeResult = passes.storeResult;
  const std::string &sumFn = passes.sumFn;
  auto ln = dyn_cast<LayerNormOp>(plan.root);
  auto rms = dyn_cast<RmsNormOp>(plan.root);
  Value scale = ln ? ln.getScale() : rms.getScale();
  Value bias = ln ? ln.getBias() : Value();
  double epsilon = (ln ? ln.getEpsilon() : rms.getEpsilon()).convertToDouble();
  line(acc + " mean = (" + acc + ")0;");
  if (ln) {
    if (failed(loop([&](const std::vector<std::string> &index) {
          FailureOr<std::string> v = element(x, index);
          if (failed(v))
            return failure();
          line("mean += " + *v + ";");
          return success();
        })))
      return failure();
    line("mean = " + reduce("mean", sumFn) + " / (" + acc + ")L;");
  }
  // The variance of deviations scaled by the largest one, so that squares do
  // not overflow: a row of +-1e20 normalizes to +-1 as the float64 reference
  // says, where (1e20)^2 made the variance inf and every result 0 (issue 32).
  line(acc + " spread = (" + acc + ")0;");
  if (failed(loop([&](const std::vector<std::string> &index) {
        FailureOr<std::string> v = element(x, index);
        if (failed(v))
          return failure();
        line("spread = kiln_max<" + acc + ">(spread, kiln_abs(" + *v + " - mean));");
        return success();
      })))
    return failure();
  line("spread = " + reduce("spread", passes.maxFn) + ";");
  // Deviations up to 1 square safely as they are; an inf or NaN spread
  // (the row holds one) leaves them unscaled too.
  line("const " + acc + " unit = spread > (" + acc + ")1 && spread - spread == (" + acc + ")0 ? spread : (" + acc + ")1;");
  line("const " + acc + " shrink = (" + acc + ")1 / unit;");
  line(acc + " var = (" + acc + ")0;");
  if (failed(loop([&](const std::vector<std::string> &index) {
        FailureOr<std::string> v = element(x, index);
        if (failed(v))
          return failure();
        line("var += ((" + *v + " - mean) * shrink) * ((" + *v + " - mean) * shrink);");
        return success();
      })))
    return failure();
  line("var = " + reduce("var", sumFn) + " / (" + acc + ")L;");
  std::string eps = scalarLiteral(t.isF64() ? Type(Float64Type::get(t.getContext()))
                                            : Type(Float32Type::get(t.getContext())),
                                  FloatAttr::get(Float64Type::get(t.getContext()), epsilon));
  // 1 / sqrt(unit^2 var + eps), without squaring the unit.
  line("const " + acc + " inv = (" + acc + ")1 / (unit * kiln_sqrt(var + (" + acc + ")" + eps +
       " * shrink * shrink));");
  if (failed(loop([&](const std::vector<std::string> &index) {
        FailureOr<std::string> v = element(x, index);
        if (failed(v))
          return failure();
        std::string y = "(" + *v + " - mean) * inv";
        if (scale) {
          FailureOr<std::string> g = element(scale, broadcastIndex(scale, result, index));
          if (failed(g))
            return failure();
          y += " * " + *g;
        }
        if (bias) {
          FailureOr<std::string> b = element(bias, broadcastIndex(bias, result, index));
          if (failed(b))
            return failure();
          y += " + " + *b;
        }
        storeResult("(row * L) + j", y);
        return success();
      })))
    return failure();
  return success();
}

LogicalResult KernelEmitter::emitRow(Operation *root) {
  halfOccupancy = true;
  blockPerItem = true;
  Value x = root->getOperand(0), result = root->getResult(0);
  Type t = elementOf(result);
  std::string acc = computeType(t);
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  int64_t axis = isa<LayerNormOp>(root) ? static_cast<int64_t>(cast<LayerNormOp>(root).getAxis())
                 : isa<RmsNormOp>(root) ? static_cast<int64_t>(cast<RmsNormOp>(root).getAxis())
                 : isa<SoftmaxOp>(root) ? static_cast<int64_t>(cast<SoftmaxOp>(root).getAxis())
                                        : static_cast<int64_t>(cast<LogSoftmaxOp>(root).getAxis());
  axis = axis < 0 ? axis + rank : axis;
  std::vector<std::string> shape = dims(x);
  // Both normalizations run over the trailing dims from the axis.
  bool layerNorm = isa<LayerNormOp, RmsNormOp>(root);
  // A row: softmax runs along one axis (outer x inner rows); layer_norm over the
  // trailing dims from the axis (outer rows).
  std::vector<std::string> outerShape(shape.begin(), shape.begin() + axis), innerShape,
      rowShape;
  if (layerNorm) {
    rowShape.assign(shape.begin() + axis, shape.end());
  } else {
    rowShape.push_back(shape[axis]);
    innerShape.assign(shape.begin() + axis + 1, shape.end());
  }
  line("__shared__ " + acc + " scratch[KILN_MAX_BLOCK];");
  line("const int64_t rows = " + product(outerShape) + " * " + product(innerShape) + ";");
  std::optional<int64_t> staticRow = getConstantDimValue(
      productOf(ArrayRef<DimExpr>(getSymShape(x.getType())).slice(axis, layerNorm ? rank - axis : 1)));
  // The vector path: a row of a known length that lies contiguous in memory
  // (layer norm's trailing dims; softmax along the last axis), whose kernel
  // reads its inputs along the row's innermost dim or broadcast there
  // (elementwise producers of x, layer norm's scale and bias), moves in
  // 128-bit vectors of `rowWidth` elements: `rowThreads` threads a row (a
  // warp, or a group of whole warps reducing through one shared-memory
  // step), each keeping its `rowVectors` vectors in registers between the
  // passes, and kBlockThreads / rowThreads rows a block.
  int rowWidth = 0, rowThreads = 0, rowVectors = 0;
  std::map<unsigned, int> rowReads;
  {
    SymShape d = getSymShape(x.getType());
    bool contiguous = layerNorm || getConstantDimValue(productOf(ArrayRef<DimExpr>(d).drop_front(axis + 1))) == 1;
    std::optional<int64_t> innermost = d.empty() ? std::nullopt : getConstantDimValue(d.back());
    std::optional<std::map<unsigned, int>> reads;
    if (staticRow && contiguous && innermost && *innermost > 1)
      reads = innermostReads(kernel, *innermost, root);
    unsigned narrowest = storageBytes(t);
    if (reads) {
      rowReads = *reads;
      for (auto [n, read] : rowReads)
        if (read == kReadContiguous)
          narrowest = std::min(narrowest, storageBytes(elementOf(kernel.getBody().front().getArgument(n))));
    }
    int width = 16 / static_cast<int>(narrowest);
    if (reads && *innermost % width == 0 && *staticRow >= 32 * width) {
      int64_t vectors = *staticRow / width;
      for (int threads = 32; threads <= kBlockThreads && !rowThreads; threads *= 2)
        if ((vectors + threads - 1) / threads * width <= kMaxRowValuesPerThread / (t.isF64() ? 2 : 1)) {
          rowThreads = threads;
          rowVectors = static_cast<int>((vectors + threads - 1) / threads);
          rowWidth = width;
        }
    }
    // A block per row, or for rows known to take the warp path (at most
    // kMaxWarpRow elements) a block per eight rows, or for the vector path
    // kBlockThreads / rowThreads: the rows, not the elements.
    SymShape rowDims(d.begin(), d.begin() + axis);
    if (!layerNorm)
      rowDims.append(d.begin() + axis + 1, d.end());
    int64_t rowsPerBlock = rowThreads ? kBlockThreads / rowThreads : staticRow && *staticRow <= kMaxWarpRow ? kBlockThreads / 32 : 1;
    workItems = canonicalizeDim(productOf(rowDims).ceilDiv(rowsPerBlock));
  }
  line("const int64_t L = " + product(rowShape) + ";");
  line("const int64_t inner = " + product(innerShape) + ";");
  // Short rows take a warp each (lanes stride the row, shuffles reduce; rows
  // of a known length up to kMaxWarpRow kept in registers, ceil(L / 32) values
  // a lane); longer ones a block each (warp shuffles and one shared-memory
  // step). A row of a known length up to kMaxCachedRow (half that in double)
  // is read once: each
  // thread keeps its K = ceil(L / 128) elements in registers (rowCache) for
  // the passes after the first, when the block has the threads for it
  // (blockDim * K >= L: the runtime's 256 always; host emulation's threaded
  // test mode from 128 up); otherwise every pass reads the row again. Host
  // emulation with one thread per block always takes the uncached block path.
  int64_t cacheLimit = kMaxCachedRow / (t.isF64() ? 2 : 1);
  int64_t cached = staticRow && *staticRow > kMaxWarpRow && *staticRow <= cacheLimit ? (*staticRow + 127) / 128 : 0;
  RowPlan plan{root,       x,         result,    t,        acc,     outerShape, innerShape,
               rowShape,   staticRow, rowWidth,  rowVectors, layerNorm};
  // A row of a known length up to kMaxWarpRow takes a warp with the row in
  // registers (ceil(L / 32) values a lane); of a length known at run time, a
  // warp when it holds at most 32.
  if (rowThreads) {
    std::string T = std::to_string(rowThreads), aligned;
    for (auto [n, read] : rowReads)
      if (read == kReadContiguous)
        aligned += " && kiln_aligned(in" + std::to_string(n) + ", sizeof(" +
                   storageType(elementOf(kernel.getBody().front().getArgument(n))) + ") * " +
                   std::to_string(rowWidth) + ")";
    line("if (blockDim.x % " + T + " == 0 && kiln_aligned(out, sizeof(" + storageType(t) + ") * " +
         std::to_string(rowWidth) + ")" + aligned + ") {");
    ++indent;
    line("const int64_t part = threadIdx.x % " + T + ", group = threadIdx.x / " + T +
         ", groups = blockDim.x / " + T + ";");
    broadcastReads = rowReads;
    broadcastWidth = rowWidth;
    laneZeroReads.clear();
    LogicalResult r = emitRowLoop(plan, false, int64_t{rowVectors} * rowWidth, rowThreads);
    broadcastReads.clear();
    laneZeroReads.clear();
    if (failed(r))
      return failure();
    vectorWidth = rowWidth;
    vectorLoads = static_cast<int>(llvm::count_if(rowReads, [](auto &r) { return r.second == kReadContiguous; }));
    line("return;");
    --indent;
    line("}");
  }
  bool warpRow = staticRow && *staticRow <= kMaxWarpRow;
  line(warpRow ? "if (blockDim.x % 32 == 0) {" : "if (L <= 32 && blockDim.x % 32 == 0) {");
  ++indent;
  line("const int64_t lane = threadIdx.x % 32, warps = blockDim.x / 32;");
  if (failed(emitRowLoop(plan, true, warpRow ? (*staticRow + 31) / 32 : 0)))
    return failure();
  line("return;");
  --indent;
  line("}");
  if (cached) {
    line("if (blockDim.x * " + std::to_string(cached) + " >= L) {");
    ++indent;
    if (failed(emitRowLoop(plan, false, cached)))
      return failure();
    line("return;");
    --indent;
    line("}");
  }
  return emitRowLoop(plan, false, 0);
}


} // namespace kiln::codegen
