//===- CudaEmitter.cpp - CUDA C for kiln.kernel regions -------------------===//
//
// KernelEmitter::run picks a kernel's schedule (the Schedule*.cpp files) and
// writes its source, launcher and facts; then the public interface of
// CudaEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace kiln {
namespace codegen {

/// The most elements a buffer of a kernel with 32-bit indices may hold
/// (Format.h says why).
constexpr int64_t kMaxIndex32Elements = artifact::kMaxIndex32Elements;

/// 32-bit index arithmetic for a pointwise kernel whose ops move elements by
/// position only (no index read from data: elementwise ops, compare, select,
/// cast, broadcast, reshape, transpose, slice, concat, pad, constants), whose
/// data has no 64-bit integers and whose every buffer holds at most
/// kMaxIndex32Elements. Then every index and size of the body, and every
/// constant of theirs, fits 32 bits, and run() emits the kernel again at
/// IndexWidth::i32 (IMAD instead of IMAD.WIDE pairs, 32-bit magic-number
/// divides). Data arithmetic through `uint64_t` (integer wraparound) is
/// written the same at either width. Sizes that are constants are checked here;
/// those with symbols go to `symbolicSizes`: such a kernel keeps 64 bits, and
/// a shape-bucket variant that fixes its symbols takes the 32-bit body when
/// they fit there (index32Fits).
bool KernelEmitter::index32Candidate(Schedule schedule, SmallVectorImpl<DimExpr> &symbolicSizes) {
  if (schedule != Schedule::pointwise)
    return false;
  bool ok = true;
  auto fits = [&](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor)
      return true;
    Type e = tensor.getElementType();
    if (e.isInteger(64) || e.isIndex())
      return false;
    DimExpr n = productOf(getSymShape(t));
    if (!n)
      return false;
    if (std::optional<int64_t> c = getConstantDimValue(n))
      return *c <= kMaxIndex32Elements;
    if (!llvm::is_contained(symbolicSizes, n))
      symbolicSizes.push_back(n);
    return true;
  };
  kernel.getBody().walk([&](Operation *op) {
    // Ops that place elements by index arithmetic alone, and the values
    // (constants) and terminator between them.
    ElementAccess access = elementAccessOf(op);
    if (!isa<YieldOp, ConstantOp, SymbolicConstantOp>(op) && access != ElementAccess::broadcast &&
        access != ElementAccess::moved)
      ok = false;
    // Shape operands (i64 constants) are compile-time values, not data; an
    // i64 data constant shows in the result of the op that reads it.
    for (Value v : isa<ConstantOp, SymbolicConstantOp>(op) ? ValueRange() : op->getResults())
      ok = ok && fits(v.getType());
  });
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    ok = ok && fits(arg.getType());
  // Symbols that no size shows (a slice's start, say) could hold anything.
  return ok && (symbols.empty() || !symbolicSizes.empty());
}

/// The inputs of `kernel` read only as the data of gathers, slices and pads,
/// each of whose result elements reads at most one input element: input
/// number to the sum of those ops' result elements (at most what a launch
/// reads of it; StepWork takes the smaller of that and the input's size).
static std::vector<std::pair<int, DimExpr>> boundedReads(KernelOp kernel) {
  std::vector<std::pair<int, DimExpr>> out;
  for (BlockArgument arg : kernel.getBody().front().getArguments()) {
    DimExpr reads;
    bool bounded = !arg.use_empty();
    for (OpOperand &use : arg.getUses()) {
      Operation *op = use.getOwner();
      auto facts = dyn_cast<KernelFacts>(op);
      bool oneReadPerElement = use.getOperandNumber() == 0 && facts && facts.boundsReadsOfInput();
      if (!oneReadPerElement) {
        bounded = false;
        break;
      }
      SymShape shape = getSymShape(op->getResult(0).getType());
      DimExpr n = productOfDims(kernel.getContext(), shape);
      reads = reads ? reads + n : n;
    }
    if (bounded)
      out.emplace_back(static_cast<int>(arg.getArgNumber()), canonicalizeDim(reads));
  }
  return out;
}

LogicalResult KernelEmitter::emitSchedule(Value root) {
  pushScope();
  Operation *rootOp = root.getDefiningOp();
  switch (kernel.getSchedule()) {
  case Schedule::reduction:
    if (auto reduce = dyn_cast_or_null<ReduceOp>(rootOp))
      return emitReduction(reduce);
    if (auto arg = dyn_cast_or_null<ArgReduceOp>(rootOp))
      return emitArgReduction(arg);
    if (auto cumulative = dyn_cast_or_null<CumulativeOp>(rootOp))
      return emitCumulative(cumulative);
    if (auto topK = dyn_cast_or_null<TopKOp>(rootOp); topK && root == topK.getIndices())
      return emitTopK(topK);
    if (auto count = dyn_cast_or_null<CountNonZeroOp>(rootOp))
      return emitCountNonZero(count);
    if (auto sample = dyn_cast_or_null<SampleTokensOp>(rootOp))
      return emitSampleTokens(sample);
    if (auto nbits = dyn_cast_or_null<MatmulNBitsOp>(rootOp))
      return emitMatmulNBits(nbits);
    return emitError(kernel.getLoc()) << "codegen: a reduction kernel must yield a kiln.reduce, "
                                         "kiln.arg_reduce, kiln.cumulative, kiln.top_k's indices, "
                                         "kiln.count_non_zero, kiln.sample_tokens or "
                                         "kiln.matmul_nbits";
  case Schedule::compaction:
    if (auto compact = dyn_cast_or_null<CompactNonZeroOp>(rootOp))
      return emitCompactNonZero(compact);
    if (auto select = dyn_cast_or_null<NmsSelectOp>(rootOp))
      return emitNmsSelect(select);
    return emitError(kernel.getLoc()) << "codegen: a compaction kernel must yield a "
                                         "kiln.compact_non_zero or kiln.nms_select";
  case Schedule::attention: {
    auto attention = dyn_cast_or_null<AttentionOp>(rootOp);
    ArrayRef<int64_t> outputPerm;
    // The head merge (kiln-form-kernels): reshapes keep the row-major order,
    // so the transpose under them says where each element lands.
    while (auto reshape = dyn_cast_or_null<ReshapeOp>(rootOp))
      rootOp = reshape.getInput().getDefiningOp();
    if (auto transpose = dyn_cast_or_null<TransposeOp>(rootOp)) {
      attention = transpose.getInput().getDefiningOp<AttentionOp>();
      outputPerm = transpose.getPermutation();
    }
    if (!attention)
      return emitError(kernel.getLoc()) << "codegen: an attention kernel must yield a "
                                           "kiln.attention or a transpose of one";
    return emitAttention(attention, outputPerm);
  }
  case Schedule::row:
    if (!isa_and_nonnull<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp>(rootOp))
      return emitError(kernel.getLoc())
             << "codegen: a row kernel must yield a softmax, log_softmax, layer_norm or rms_norm";
    return emitRow(rootOp);
  case Schedule::pointwise:
    return emitPointwise(root);
  }
  llvm_unreachable("a schedule without an emitter");
}

FailureOr<GeneratedKernel> KernelEmitter::run() {
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
  if (yield.getValues().size() != 1)
    return emitError(kernel.getLoc()) << "codegen: a kernel with "
                                      << yield.getValues().size() << " results";
  Value root = yield.getValues()[0];
  Schedule schedule = kernel.getSchedule();
  if (failed(emitSchedule(root)))
    return failure();

  // The signature: result, inputs, then one value per symbol.
  std::string params = storageType(elementOf(root)) + " *KILN_RESTRICT out";
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    params += ", const " + storageType(elementOf(arg)) + " *KILN_RESTRICT in" +
              std::to_string(arg.getArgNumber());
  GeneratedKernel g;
  g.schedule = stringifySchedule(schedule).str();
  g.blockPerItem = blockPerItem;
  // Symbols the function reads from device memory (kiln.device_symbols)
  // come through a pointer each, loaded once at the kernel's start.
  std::set<std::string> onDevice;
  if (auto func = kernel->getParentOfType<func::FuncOp>())
    if (auto list = func->getAttrOfType<ArrayAttr>(kDeviceSymbolsAttr))
      for (Attribute a : list)
        onDevice.insert(cast<StringAttr>(a).getValue().str());
  std::string loads;
  for (const std::string &s : symbols) {
    g.symbols.push_back(s);
    if (onDevice.count(s)) {
      params += ", const int64_t *KILN_RESTRICT kiln_device_sym_" + s;
      loads += "  const int64_t sym_" + s + " = *kiln_device_sym_" + s + ";\n";
      g.deviceSymbols.push_back(s);
    } else {
      params += ", int64_t sym_" + s;
    }
  }
  g.reportsErrors = reportsErrors;
  g.workItems = workItems;
  g.flops = flops;
  g.halfTensorCoreFlops = halfTensorCoreFlops;
  g.tensorCoreRows = tensorCoreRows;
  g.tensorCoreMinRows = tensorCoreMinRows;
  g.tensorCoreL2Bytes = tensorCoreL2Bytes;
  g.l2Bytes = l2Bytes;
  g.scratchBytes = scratchBytes;
  g.boundedReads = boundedReads(kernel);
  // The cache a cache_update writes into is not read: a bounded read of none.
  Value inPlaceCache;
  if (auto update = dyn_cast_or_null<CacheUpdateOp>(root.getDefiningOp()))
    inPlaceCache = update.getCache();
  if (auto write = dyn_cast_or_null<CacheWriteOp>(root.getDefiningOp()); write && write.getInPlace())
    inPlaceCache = write.getCache();
  if (auto cache = dyn_cast_or_null<BlockArgument>(inPlaceCache)) {
    g.inPlaceInput = static_cast<int>(cache.getArgNumber());
    g.boundedReads.emplace_back(g.inPlaceInput, getConstantDim(kernel.getContext(), 0));
  }
  // The primitives by which threads of a block meet, as the schedules and
  // the device library spell them.
  for (const char *meet : {"__syncthreads", "__shared__", "kiln_shfl", "kiln_warp_", "kiln_block_"})
    g.threadsMeet = g.threadsMeet || body.find(meet) != std::string::npos;
  g.vectorWidth = vectorWidth;
  g.vectorLoads = vectorLoads;
  g.resultBytes = static_cast<int>(storageBytes(elementOf(root)));
  g.dividesData = dividesData;
  g.perThreadMatrix = perThreadMatrix;
  g.streamBytesATrip = streamBytesATrip;
  g.doubleTaps = doubleTaps;
  if (scratchBytes)
    params += ", uint8_t *KILN_RESTRICT kiln_scratch";
  if (reportsErrors)
    params += ", int32_t *kiln_error";
  body = loads + prologue + body;
  SmallVector<DimExpr> symbolicSizes;
  if (index32Candidate(schedule, symbolicSizes)) {
    // The same kernel again at 32 bits: the emission is deterministic, so
    // the two bodies differ only in their index type and literals.
    KernelEmitter narrow(kernel, IndexWidth::i32);
    if (succeeded(narrow.emitSchedule(root)) && !narrow.indexLiteralOverflow) {
      std::string narrowBody = loads + narrow.prologue + narrow.body;
      if (symbols.empty()) {
        body = std::move(narrowBody);
        g.index32 = true;
      } else {
        // Both bodies; a variant whose sizes fit defines KILN_INDEX32.
        body = "#ifdef KILN_INDEX32\n" + narrowBody + "#else\n" + body + "#endif\n";
        g.index32Sizes.assign(symbolicSizes.begin(), symbolicSizes.end());
      }
    }
  }
  // (KILN_HALF_OCCUPANCY follows from the body: row kernels and matmul_nbits
  // have it.)
  uint64_t hash = llvm::xxh3_64bits(StringRef(params + "\n" + g.schedule + "\n" + body));
  std::string hex;
  llvm::raw_string_ostream(hex) << llvm::format_hex_no_prefix(hash, 16);
  g.name = "kiln_" + g.schedule + "_" + hex;

  std::string src;
  llvm::raw_string_ostream os(src);
  os << "// " << g.name << ": " << g.schedule << " kernel\n";
  // A symbol the build defines (a variant's -DKILN_SYM_<name>=<value>) is a
  // constant, and it tags the entry point, KILN_ENTRY: the name followed by
  // "_v<position>_<value>" per defined symbol (kiln/artifact/EntryName.h), so
  // the code states the values it was built for and a loader looking it up
  // by a variant's values cannot get code built for others.
  std::string entry = g.name;
  for (size_t i = 0; i < g.symbols.size(); ++i) {
    const std::string &s = g.symbols[i];
    std::string tag = "KILN_TAG" + std::to_string(i);
    os << "#ifndef KILN_SYM_" << s << "\n#define KILN_SYM_" << s << " sym_" << s
       << "\n#define KILN_UNDEF_SYM_" << s << "\n#define " << tag << "\n#else\n#define " << tag
       << " KILN_PASTE(_v" << i << "_, KILN_SYM_" << s << ")\n#endif\n";
    entry = "KILN_PASTE(" + entry + ", " + tag + ")";
  }
  os << "#define KILN_ENTRY " << entry << "\n";
  os << "extern \"C\" __global__ void " << (halfOccupancy ? "KILN_HALF_OCCUPANCY " : "")
     << "KILN_ENTRY(" << params << ") {\n"
     << body << "}\n";
  // Host emulation: the launcher runs blocks as iterations (OpenMP across them,
  // unless there is one block: a team per tiny kernel costs more than the
  // kernel); `args` holds a pointer to each parameter, as cuLaunchKernel takes them.
  // (KILN_HOST_BLOCK_THREADS, a test mode of kiln_device.h: threads per
  // block, blocks in order.)
  std::string call = "KILN_ENTRY(*(" + storageType(elementOf(root)) + " **)args[0]";
  unsigned next = 1;
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    call += ", *(const " + storageType(elementOf(arg)) + " **)args[" + std::to_string(next++) + "]";
  for (const std::string &s : g.symbols)
    call += (onDevice.count(s) ? ", *(const int64_t **)args[" : ", *(int64_t *)args[") +
            std::to_string(next++) + "]";
  if (scratchBytes)
    call += ", *(uint8_t **)args[" + std::to_string(next++) + "]";
  if (reportsErrors)
    call += ", *(int32_t **)args[" + std::to_string(next++) + "]";
  call += ")";
  os << "#ifndef __CUDACC_RTC__\nextern \"C\" void KILN_PASTE(KILN_ENTRY, _host)"
     << "(void **args, int64_t grid) {\n"
     << "#ifdef KILN_HOST_BLOCK_THREADS\n"
     << "  kiln_run_blocks(grid, [&] { " << call << "; });\n"
     << "#else\n"
     << "#pragma omp parallel for schedule(static) if(grid > 1)\n"
     << "  for (int64_t b = 0; b < grid; ++b) {\n"
     << "    blockIdx.x = b;\n    gridDim.x = grid;\n    " << call << ";\n  }\n"
     << "#endif\n}\n"
     // How many parameters the launcher reads: a capturing driver (the fake
     // CUDA driver's graphs) copies their values as the launch is recorded.
     << "extern \"C\" const int KILN_PASTE(KILN_ENTRY, _host_argc) = " << next << ";\n#endif\n";
  os << "#undef KILN_ENTRY\n";
  for (size_t i = 0; i < g.symbols.size(); ++i)
    os << "#undef KILN_TAG" << i << "\n#ifdef KILN_UNDEF_SYM_" << g.symbols[i]
       << "\n#undef KILN_SYM_" << g.symbols[i] << "\n#undef KILN_UNDEF_SYM_" << g.symbols[i]
       << "\n#endif\n";
  g.source = src;
  return g;
}

} // namespace codegen

using codegen::KernelEmitter;
using codegen::kMaxIndex32Elements;

FailureOr<GeneratedKernel> emitKernel(KernelOp kernel) { return KernelEmitter(kernel).run(); }

bool index32Fits(const GeneratedKernel &kernel, const std::map<std::string, int64_t> &symbolValues) {
  if (kernel.index32Sizes.empty())
    return false;
  std::map<unsigned, int64_t> byPosition;
  for (const std::string &name : kernel.symbols) {
    auto it = symbolValues.find(name);
    if (it == symbolValues.end() || it->second < 0 || it->second > kMaxIndex32Elements)
      return false;
    byPosition[cast<AffineSymbolExpr>(getSymbolDim(kernel.index32Sizes[0].getContext(), name))
                   .getPosition()] = it->second;
  }
  for (DimExpr size : kernel.index32Sizes) {
    std::optional<int64_t> n = evaluateDim(size, [&](unsigned position) -> std::optional<int64_t> {
      auto it = byPosition.find(position);
      return it == byPosition.end() ? std::nullopt : std::optional<int64_t>(it->second);
    });
    if (!n || *n > kMaxIndex32Elements)
      return false;
  }
  return true;
}

GeneratedKernel withIndex32(GeneratedKernel kernel) {
  kernel.source = "#define KILN_INDEX32\n" + kernel.source + "#undef KILN_INDEX32\n";
  return kernel;
}

void addLintFacts(llvm::json::Object &o, const GeneratedKernel &kernel) {
  o["vector_width"] = kernel.vectorWidth;
  o["vector_loads"] = kernel.vectorLoads;
  o["index32"] = kernel.index32;
  o["result_bytes"] = kernel.resultBytes;
  o["divides_data"] = kernel.dividesData;
  o["per_thread_matrix"] = kernel.perThreadMatrix;
  o["stream_bytes_a_trip"] = kernel.streamBytesATrip;
  o["double_taps"] = kernel.doubleTaps;
}

FailureOr<std::vector<GeneratedKernel>> emitKernels(ModuleOp module) {
  std::vector<GeneratedKernel> kernels;
  WalkResult r = module.walk([&](KernelOp k) {
    FailureOr<GeneratedKernel> g = emitKernel(k);
    if (failed(g))
      return WalkResult::interrupt();
    kernels.push_back(std::move(*g));
    return WalkResult::advance();
  });
  if (r.wasInterrupted())
    return failure();
  return kernels;
}

std::string kernelTranslationUnit(const std::vector<GeneratedKernel> &kernels) {
  std::string tu = "#include \"kiln/device/kiln_device.h\"\n";
  std::set<std::string> seen;
  for (const GeneratedKernel &k : kernels)
    if (seen.insert(k.name).second)
      tu += "\n" + k.source;
  return tu;
}

} // namespace kiln
