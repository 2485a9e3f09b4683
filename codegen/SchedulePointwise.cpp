//===- SchedulePointwise.cpp - the pointwise and tiled-transpose schedules ---===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

/// How a kernel whose ops broadcast by numpy rules (ElementAccess::broadcast:
/// elementwise ops, broadcast_to; constants; and `except`, a row op whose
/// row runs along the same innermost dim) reads its inputs along the
/// innermost dim `inner` of what it computes, which trailing alignment maps
/// every input's innermost dim onto: kReadBroadcast where that dim is 1,
/// kReadContiguous where it is `inner`. Nothing when another op or an input
/// of another innermost dim rules vectors out.
std::optional<std::map<unsigned, int>> innermostReads(KernelOp kernel, int64_t inner,
                                                      Operation *except) {
  Block &body = kernel.getBody().front();
  for (Operation &op : body.without_terminator())
    if (&op != except && !isa<ConstantOp, SymbolicConstantOp>(op) &&
        elementAccessOf(&op) != ElementAccess::broadcast)
      return std::nullopt;
  std::map<unsigned, int> reads;
  for (BlockArgument arg : body.getArguments()) {
    SymShape shape = getSymShape(arg.getType());
    std::optional<int64_t> last =
        shape.empty() ? std::optional<int64_t>(1) : getConstantDimValue(shape.back());
    if (last == 1)
      reads[arg.getArgNumber()] = kReadBroadcast;
    else if (last == inner)
      reads[arg.getArgNumber()] = kReadContiguous;
    else
      return std::nullopt;
  }
  return reads;
}

/// Whether a pointwise kernel whose inputs broadcast can take the vector
/// path: the result's innermost dim is known, and every input's innermost
/// dim is either that dim or 1 (innermostReads); inputs of the result's own
/// shape are read at its position. Returns each input's PointwiseRead, or
/// nothing.
std::optional<std::map<unsigned, int>> broadcastPointwiseReads(KernelOp kernel, Value root) {
  SymShape rootShape = getSymShape(root.getType());
  std::optional<int64_t> inner =
      rootShape.empty() ? std::nullopt : getConstantDimValue(rootShape.back());
  if (!inner)
    return std::nullopt;
  std::optional<std::map<unsigned, int>> reads = innermostReads(kernel, *inner);
  if (reads)
    for (BlockArgument arg : kernel.getBody().front().getArguments())
      if (getSymShape(arg.getType()) == rootShape)
        (*reads)[arg.getArgNumber()] = kReadSame;
  return reads;
}

/// True when every element of the kernel reads every input at the result's own
/// position (elementwise ops on operands of the result's shape, splat constants):
/// then inputs and result can move in 128-bit vectors.
bool isIdentityPointwise(KernelOp kernel, Value root) {
  Type rootType = root.getType();
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (!op.hasTrait<OpTrait::Elementwise>() && !isa<CompareOp, SelectOp, CastOp>(op))
      return false;
    for (Value operand : op.getOperands()) {
      if (isa_and_nonnull<ConstantOp>(operand.getDefiningOp()))
        continue;
      if (getSymShape(operand.getType()) != getSymShape(rootType))
        return false;
    }
  }
  return true;
}

/// A transpose of a kernel input that moves the input's innermost dim (the
/// result's innermost is another input dim): the tiled schedule applies.
static bool isTiledTranspose(Value root) {
  auto t = dyn_cast_or_null<TransposeOp>(root.getDefiningOp());
  if (!t || !isa<BlockArgument>(t.getInput()))
    return false;
  ArrayRef<int64_t> perm = t.getPermutation();
  int64_t r = perm.size();
  return r >= 2 && perm[r - 1] != r - 1;
}

LogicalResult KernelEmitter::emitTiledTranspose(TransposeOp root) {
  // 32x32 tiles through shared memory (one column of padding against bank
  // conflicts) over two input dims: `a`, which becomes the result's innermost,
  // and the input's innermost. Reads walk the input's innermost dim and
  // writes the result's, so both are coalesced; every other dim is a batch
  // of tiles (NCHW -> NHWC tiles C against W for each n, h; a head split's
  // [B, S, H, D] -> [B, H, D, S] tiles S against D). A block per tile; any
  // block size.
  blockPerItem = true;
  Value input = root.getInput();
  std::vector<std::string> shape = dims(input), outShape = dims(root.getResult());
  ArrayRef<int64_t> perm = root.getPermutation();
  size_t r = shape.size(), a = static_cast<size_t>(perm[r - 1]), c = r - 1;
  std::string T = storageType(elementOf(input));
  std::vector<std::string> batchShape;
  SymShape d = getSymShape(input.getType());
  SmallVector<DimExpr> batchDims;
  for (size_t k = 0; k < r; ++k)
    if (k != a && k != c) {
      batchShape.push_back(shape[k]);
      batchDims.push_back(d[k]);
    }
  workItems = canonicalizeDim(productOf(batchDims) * d[a].ceilDiv(32) * d[c].ceilDiv(32));
  line("__shared__ " + T + " tile[32][33];");
  line("const " + indexType + " batch = " + product(batchShape) + ";");
  line("const " + indexType + " A = " + shape[a] + ", C = " + shape[c] + ";");
  line("const " + indexType + " tilesA = (A + 31) / 32, tilesC = (C + 31) / 32;");
  std::string tilesA = "((" + shape[a] + " + 31) / 32)", tilesC = "((" + shape[c] + " + 31) / 32)";
  // The tiles' loops, moving `width` elements at a time along the input's
  // innermost dim as it is read and along the result's as it is written.
  auto tiles = [&](int width) {
    std::string W = std::to_string(width), perRow = std::to_string(32 / width);
    std::string vec = "kiln_vec<" + T + ", " + W + ">";
    openBlock("for (" + indexType + " t = blockIdx.x; t < batch * tilesA * tilesC; t += gridDim.x) {");
    line("const " + indexType + " b = " + quotient("t", "(" + tilesA + " * " + tilesC + ")") + ";");
    line("const " + indexType + " ac = t - b * tilesA * tilesC;");
    line("const " + indexType + " ta = " + quotient("ac", tilesC) + ", tc = ac - ta * tilesC;");
    // The tile's batch coordinates, then the input index of (row, col).
    std::vector<std::string> batchIndex = unravel("b", batchShape);
    auto inputIndex = [&](const std::string &row, const std::string &col) {
      std::vector<std::string> index;
      for (size_t k = 0, next = 0; k < r; ++k)
        index.push_back(k == a ? row : k == c ? col : batchIndex[next++]);
      return index;
    };
    openBlock("for (" + indexType + " e = threadIdx.x; e < 32 * " + perRow + "; e += blockDim.x) {");
    line("const " + indexType + " i = e / " + perRow + ", j = e % " + perRow + " * " + W +
         ", row = ta * 32 + i, col = tc * 32 + j;");
    std::string from = "in0 + " + linearize(inputIndex("row", "col"), shape);
    if (width == 1) {
      line("if (row < A && col < C) tile[i][j] = *(" + from + ");");
    } else {
      openBlock("if (row < A && col < C) {");
      line("const " + vec + " v = *reinterpret_cast<const " + vec + " *>(" + from + ");");
      line("KILN_UNROLL for (int l = 0; l < " + W + "; ++l) tile[i][j + l] = v.x[l];");
      closeBlock();
    }
    closeBlock();
    line("__syncthreads();");
    openBlock("for (" + indexType + " e = threadIdx.x; e < 32 * " + perRow + "; e += blockDim.x) {");
    line("const " + indexType + " i = e / " + perRow + ", j = e % " + perRow + " * " + W +
         ", col = tc * 32 + i, row = ta * 32 + j;");
    std::vector<std::string> in = inputIndex("row", "col"), outIndex;
    for (size_t k = 0; k < r; ++k)
      outIndex.push_back(in[perm[k]]);
    std::string to = "out + " + linearize(outIndex, outShape);
    if (width == 1) {
      line("if (row < A && col < C) *(" + to + ") = tile[j][i];");
    } else {
      openBlock("if (row < A && col < C) {");
      // kiln_store_vec: a plain vector store of lanes read from shared
      // memory comes out a lane at a time (the SASS lint's vector rule saw
      // four STG.E).
      line(vec + " v;");
      for (int l = 0; l < width; ++l)
        line("v.x[" + std::to_string(l) + "] = tile[j + " + std::to_string(l) + "][i];");
      line("kiln_store_vec(" + to + ", v);");
      closeBlock();
    }
    closeBlock();
    line("__syncthreads();");
    closeBlock();
  };
  // 128-bit accesses when both tiled dims are known multiples of the width
  // (a vector never crosses the edge of either dim, and every vector starts
  // at a multiple of the width: the other strides are multiples of the
  // innermost dims) and the buffers are aligned (checked at run time). The
  // padded shared-memory rows keep both directions free of bank conflicts:
  // a warp's 32 accesses of one lane fall on 32 banks.
  int width = 16 / static_cast<int>(storageBytes(elementOf(input)));
  std::optional<int64_t> staticA = getConstantDimValue(d[a]), staticC = getConstantDimValue(d[c]);
  if (width > 1 && staticA && staticC && *staticA % width == 0 && *staticC % width == 0) {
    std::string bytes = "sizeof(" + T + ") * " + std::to_string(width);
    openBlock("if (kiln_aligned(in0, " + bytes + ") && kiln_aligned(out, " + bytes + ")) {");
    tiles(width);
    line("return;");
    closeBlock();
    vectorWidth = width;
    vectorLoads = 1;
  }
  tiles(1);
  return success();
}

/// kiln.cache_update's kernel: one thread per element of the update, which
/// it computes (the producers fused in: RoPE on a new key) and stores at its
/// row plus the offset in the cache, whose bytes are the result's (the
/// artifact marks the kernel in place). The cache's other rows are not
/// touched: a decode step writes its new rows only.
LogicalResult KernelEmitter::emitCacheUpdate(CacheUpdateOp update) {
  Value rows = update.getUpdate();
  std::optional<SymShape> offset = getKnownElements(update.getOffset());
  if (!offset || offset->size() != 1 || !(*offset)[0])
    return emitError(update.getLoc()) << "codegen: kiln.cache_update needs its offset at "
                                         "compile time";
  int64_t rank = getSymShape(rows.getType()).size();
  int64_t axis = normalizedAxis(static_cast<int64_t>(update.getAxis()), rank);
  std::vector<std::string> shape = dims(rows), cacheShape = dims(update.getCache());
  workItems = productOf(getSymShape(rows.getType()));
  line("const " + indexType + " n = " + product(shape) + ";");
  line("const " + indexType + " offset = " + dim((*offset)[0]) + ";");
  openBlock("for (" + indexType + " i = kiln_thread_index(); i < n; i += kiln_thread_count()) {");
  std::vector<std::string> index = unravel("i", shape);
  FailureOr<std::string> v = element(rows, index);
  if (failed(v))
    return failure();
  // A row the cache does not hold is not written (the guards keep every row
  // inside; this keeps a damaged artifact's writes inside the caller's buffer).
  std::string row = temp("row");
  line("const " + indexType + " " + row + " = " + index[axis] + " + offset;");
  index[axis] = row;
  line("if (" + row + " >= 0 && " + row + " < " + cacheShape[axis] + ") out[" +
       linearize(index, cacheShape) + "] = " + store(elementOf(rows), *v) + ";");
  closeBlock();
  return success();
}

/// kiln.cache_write in place: one thread per element of the update, stored
/// at its row plus its sequence's position in the cache (modulo its length
/// where circular), whose bytes are the result's. A row outside the cache is
/// reported (KILN_ERROR_INDEX_OUT_OF_RANGE) and not written.
LogicalResult KernelEmitter::emitCacheWrite(CacheWriteOp write) {
  Value rows = write.getUpdate();
  int64_t rank = getSymShape(rows.getType()).size();
  int64_t axis = normalizedAxis(static_cast<int64_t>(write.getAxis()), rank);
  std::vector<std::string> shape = dims(rows), cacheShape = dims(write.getCache());
  workItems = productOf(getSymShape(rows.getType()));
  line("const " + indexType + " n = " + product(shape) + ";");
  openBlock("for (" + indexType + " i = kiln_thread_index(); i < n; i += kiln_thread_count()) {");
  std::vector<std::string> index = unravel("i", shape);
  FailureOr<std::string> v = element(rows, index);
  FailureOr<std::string> at = failed(v) ? v : element(write.getPositions(), {index[0]});
  if (failed(at))
    return failure();
  // Rows past the present's valid length are past the end of the tensor the
  // copying form would make: the same error there.
  const std::string length = cacheShape[axis];
  std::string limit = length;
  if (DimsAttr valid = write.getValidRowsAttr(); valid && valid.getDims().size() == 1)
    limit = "kiln_min<" + indexType + ">(" + limit + ", " + dim(valid.getDims()[0]) + ")";
  // The row in 64 bits, from the position as the data holds it (a 32-bit
  // index would wrap a large one into the cache): around the ring where
  // circular (never outside it; a length of 0 has no rows to write, and 1
  // keeps a literal `% 0` out of the code), else -1 for every row of a
  // sequence whose rows do not all fit, as the copying form refuses the
  // sequence whole (in place, the rows that fit would be written into the
  // caller's cache before the call fails).
  std::string row = temp("row"), start = temp("start");
  line("const int64_t " + start + " = (int64_t)" + *at + ";");
  if (write.getCircular()) {
    // (The place and the row's index are each below the length: one
    // subtraction wraps their sum.)
    std::string ring = ringLength(write, axis), place = temp("place");
    line("const int64_t " + place + " = " + ringPlace(start, ring) + " + (int64_t)" + index[axis] +
         ";");
    line("const int64_t " + row + " = " + place + " >= " + ring + " ? " + place + " - " + ring +
         " : " + place + ";");
  } else {
    line("const int64_t " + row + " = " + start + " < 0 || " + start + " > (int64_t)" + limit +
         " - (int64_t)" + shape[axis] + " ? -1 : " + start + " + (int64_t)" + index[axis] + ";");
  }
  const std::string outside = row + " < 0 || " + row + " >= " + limit;
  checkData(outside, "KILN_ERROR_INDEX_OUT_OF_RANGE");
  index[axis] = "(" + indexType + ")" + row;
  line("if (!(" + outside + ")) out[" + linearize(index, cacheShape) + "] = " +
       store(elementOf(rows), *v) + ";");
  closeBlock();
  return success();
}

LogicalResult KernelEmitter::emitPointwise(Value root) {
  if (auto update = dyn_cast_or_null<CacheUpdateOp>(root.getDefiningOp()))
    return emitCacheUpdate(update);
  // (Not in place, a cache_write is a new tensor whose elements the loop
  // below computes, as any inlined op's.)
  if (auto write = dyn_cast_or_null<CacheWriteOp>(root.getDefiningOp()); write && write.getInPlace())
    return emitCacheWrite(write);
  if (isTiledTranspose(root) &&
      cast<BlockArgument>(cast<TransposeOp>(root.getDefiningOp()).getInput()).getArgNumber() == 0)
    return emitTiledTranspose(cast<TransposeOp>(root.getDefiningOp()));
  std::vector<std::string> shape = dims(root);
  line("const " + indexType + " n = " + product(shape) + ";");
  Block &body = kernel.getBody().front();
  std::string outType = storageType(elementOf(root));
  // 128-bit vector loads and stores when every input is read at the result's
  // position: whole vectors first, then the scalar loop takes the elements
  // after the last whole vector (all of them when a buffer is not aligned,
  // which is checked at run time). Not for a result known to hold less than
  // one vector, where the vector loop would never run.
  std::string scalarStart = "0";
  std::optional<int64_t> staticElements =
      getConstantDimValue(productOf(getSymShape(root.getType())));
  // The narrowest buffer moves 16 bytes per access; wider ones several 16-byte
  // accesses (a cast from f16 to f32 loads 8 halves, stores 2 x 4 floats).
  unsigned narrowest = storageBytes(elementOf(root));
  for (BlockArgument arg : body.getArguments())
    narrowest = std::min(narrowest, storageBytes(elementOf(arg)));
  int width = 16 / static_cast<int>(narrowest);
  // Inputs that broadcast (a bias, a per-channel scale, a mask) take the
  // vector path too when every vector stays inside one innermost row: the
  // innermost dim a multiple of the width. Inputs read one scalar per vector
  // do not count towards the width.
  bool identity = isIdentityPointwise(kernel, root);
  std::optional<std::map<unsigned, int>> reads;
  if (!identity)
    if ((reads = broadcastPointwiseReads(kernel, root))) {
      narrowest = storageBytes(elementOf(root));
      for (BlockArgument arg : body.getArguments())
        if ((*reads)[arg.getArgNumber()] != kReadBroadcast)
          narrowest = std::min(narrowest, storageBytes(elementOf(arg)));
      width = 16 / static_cast<int>(narrowest);
      if (*getConstantDimValue(getSymShape(root.getType()).back()) % width != 0)
        reads.reset();
    }
  if ((identity || reads) &&
      (!staticElements || *staticElements >= width)) {
    std::string W = std::to_string(width);
    vectorWidth = width;
    // Sized for the vector path (W elements per thread); the scalar fallback
    // strides over the same grid.
    workItems = canonicalizeDim(productOf(getSymShape(root.getType())).ceilDiv(width));
    std::string aligned = "kiln_aligned(out, sizeof(" + outType + ") * " + W + ")";
    for (BlockArgument arg : body.getArguments())
      if (!reads || (*reads)[arg.getArgNumber()] != kReadBroadcast)
        aligned += " && kiln_aligned(in" + std::to_string(arg.getArgNumber()) + ", sizeof(" +
                   storageType(elementOf(arg)) + ") * " + W + ")";
    line(indexType + " vectorized = 0; // elements the vector loop covers");
    line("if (" + aligned + ") {");
    ++indent;
    line("for (" + indexType + " vi = kiln_thread_index(); vi < n / " + W + "; vi += kiln_thread_count()) {");
    ++indent;
    for (BlockArgument arg : body.getArguments()) {
      if (reads && (*reads)[arg.getArgNumber()] != kReadSame) {
        broadcastReads[arg.getArgNumber()] = (*reads)[arg.getArgNumber()];
        vectorLoads += (*reads)[arg.getArgNumber()] == kReadContiguous;
        continue;
      }
      std::string t = storageType(elementOf(arg)), name = temp("v");
      line("const kiln_vec<" + t + ", " + W + "> " + name + " = *reinterpret_cast<const kiln_vec<" +
           t + ", " + W + "> *>(in" + std::to_string(arg.getArgNumber()) + " + vi * " + W + ");");
      vectorInputs[arg.getArgNumber()] = name;
      ++vectorLoads;
    }
    broadcastWidth = width;
    laneZeroReads.clear();
    line("kiln_vec<" + outType + ", " + W + "> result;");
    for (lane = 0; lane < width; ++lane) {
      pushScope();
      std::vector<std::string> index =
          unravel("vi * " + W + " + " + std::to_string(lane), shape);
      FailureOr<std::string> v = element(root, index);
      if (failed(v))
        return failure();
      line("result.x[" + std::to_string(lane) + "] = " + store(elementOf(root), *v) + ";");
      popScope();
    }
    vectorInputs.clear();
    broadcastReads.clear();
    laneZeroReads.clear();
    lane = 0;
    line("*reinterpret_cast<kiln_vec<" + outType + ", " + W + "> *>(out + vi * " + W + ") = result;");
    --indent;
    line("}");
    line("vectorized = n / " + W + " * " + W + ";");
    --indent;
    line("}");
    scalarStart = "vectorized";
  }
  openBlock("for (" + indexType + " i = " + (scalarStart == "0" ? "" : scalarStart + " + ") +
            "kiln_thread_index(); i < n; i += kiln_thread_count()) {");
  std::vector<std::string> index = unravel("i", shape);
  FailureOr<std::string> v = element(root, index);
  if (failed(v))
    return failure();
  line("out[i] = " + store(elementOf(root), *v) + ";");
  closeBlock();
  return success();
}

} // namespace kiln::codegen
