//===- Artifact.cpp - the plan of a function, as the runtime reads it -----===//
//
// buildArtifact's frame: inputs and their guards, the body's steps in order,
// the weights laid out then copied once (or deferred to writeArtifact), the
// root table and the checksum. Steps are ArtifactSteps.cpp's, kernels and
// variants ArtifactKernels.cpp's.
//
//===----------------------------------------------------------------------===//

#include "codegen/Artifact.h"
#include "codegen/ArtifactWriter.h"

#include "kiln/artifact/Plan.h"
#include "kiln/version.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <numeric>

using namespace mlir;

namespace kiln {
using artifact::kFormatVersion;
using artifact::kWeightAlignment;

/// Calls `emit` with the weights' `total` bytes in order: the zeros between
/// constants, and each constant's data as a view of its own storage where it
/// stores the artifact's layout (elementsView), else a copy.
LogicalResult forEachWeightPiece(std::vector<WeightPlace> &places, size_t total,
                                 llvm::function_ref<void(ArrayRef<char>)> emit) {
  static const char kZeros[kWeightAlignment] = {};
  size_t end = 0;
  auto zeros = [&](size_t n) {
    for (; n > 0; n -= std::min(n, sizeof(kZeros)))
      emit(ArrayRef<char>(kZeros, std::min(n, sizeof(kZeros))));
  };
  for (WeightPlace &w : places) {
    zeros(w.offset - end);
    if (std::optional<ArrayRef<char>> view = elementsView(w.constant.getValue());
        view && view->size() == w.bytes) {
      emit(*view);
    } else {
      std::vector<char> copy(w.bytes);
      if (failed(writeElements(w.constant.getValue(), w.constant.getLoc(), copy)))
        return failure();
      emit(copy);
    }
    end = w.offset + w.bytes;
  }
  zeros(total - end);
  return success();
}

LogicalResult ArtifactWriter::addConstant(ConstantOp c) {
  FailureOr<size_t> bytes = elementsByteSize(c.getValue(), c.getLoc());
  if (failed(bytes))
    return failure();
  size_t offset = (weightBytes + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  weightBytes = offset + *bytes;
  weightPlaces.push_back({c, offset, *bytes});
  int weight = static_cast<int>(weights.size());
  weights.push_back(fb::CreateWeight(builder, offset, *bytes));
  return addValue(c.getResult(), fb::ValueKind::Weight, "", weight);
}

LogicalResult ArtifactWriter::writeWeights(MutableArrayRef<char> out) {
  size_t at = 0;
  return forEachWeightPiece(weightPlaces, out.size(), [&](ArrayRef<char> piece) {
    std::memcpy(out.data() + at, piece.data(), piece.size());
    at += piece.size();
  });
}

FailureOr<CompiledArtifact> ArtifactWriter::build() {
  if (func.getBody().getBlocks().size() != 1)
    return func.emitError() << "an artifact needs a function of one block";
  Block &body = func.getBody().front();
  if (failed(addInputs(body)) || failed(addBody(body)))
    return failure();
  std::vector<size_t> allKernels(kernels.size());
  std::iota(allKernels.begin(), allKernels.end(), 0);
  FailureOr<std::vector<flatbuffers::Offset<fb::Kernel>>> kernelTable = buildKernelTable(allKernels);
  if (failed(kernelTable))
    return failure();
  std::vector<flatbuffers::Offset<fb::HostLibrary>> hostLibs;
  if (failed(hostLibraries(allKernels, {}, -1, hostLibs)))
    return failure();
  FailureOr<std::vector<flatbuffers::Offset<fb::Variant>>> variants = buildVariants(hostLibs);
  if (failed(variants))
    return failure();
  CompiledArtifact result;
  if (failed(finish(*kernelTable, hostLibs, *variants, result)))
    return failure();
  result.report["kernels"] = std::move(kernelReport);
  result.report["library_calls"] = std::move(libraryReport);
  result.report["graph_breaks"] = std::move(graphBreaks);
  result.report["size_reads"] = std::move(sizeReads);
  result.report["guards"] = std::move(guardReport);
  // Q/DQ matmuls and convs that stay float (kiln-integer-matmuls and
  // kiln-integer-convs say why).
  llvm::json::Array floatQuantized;
  if (auto kept = func->getAttrOfType<ArrayAttr>(kFloatQuantizedOpsAttr))
    for (auto entry : kept.getAsRange<DictionaryAttr>()) {
      auto text = [&](StringRef key) {
        auto s = entry.getAs<StringAttr>(key);
        return s ? s.getValue().str() : std::string();
      };
      floatQuantized.push_back(llvm::json::Object{
          {"op", text("op")}, {"node", text("node")}, {"call", text("call")}, {"why", text("why")}});
    }
  result.report["float_quantized_ops"] = std::move(floatQuantized);
  // Symbols requests may be batched along (kiln-mark-independent-rows).
  llvm::json::Array independentRows;
  if (auto names = func->getAttrOfType<ArrayAttr>("kiln.independent_rows"))
    for (auto name : names.getAsValueRange<StringAttr>())
      independentRows.push_back(name.str());
  result.report["independent_rows"] = std::move(independentRows);
  result.report["variants"] = std::move(variantReport);
  result.report["steps"] = static_cast<int64_t>(steps.size());
  // What kiln-lower-precision recorded on the function (fp32 when it did not run).
  result.report["precision"] = stringifyPrecision(precisionOf(func)).str();
  result.report["weights"] = llvm::json::Object{{"count", static_cast<int64_t>(weights.size())},
                                                {"bytes", static_cast<int64_t>(weightBytes)}};
  llvm::json::Array archs(options.cubinArchs);
  result.report["cubin_archs"] = std::move(archs);
  result.report["symbols"] = llvm::json::Array(symbols);
  return result;
}

/// The function's arguments as inputs, with their guards: constant dims and
/// first sightings of a symbol first (those bind), then dims that are
/// expressions of bound symbols.
LogicalResult ArtifactWriter::addInputs(Block &body) {
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

  std::vector<flatbuffers::Offset<fb::Guard>> laterGuards;
  std::set<std::string> &bound = boundSymbols;
  for (BlockArgument arg : body.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr);
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

  return success();
}

/// The function's body as steps, its guards as predicates and its results as
/// outputs.
LogicalResult ArtifactWriter::addBody(Block &body) {
  const std::set<std::string> &bound = boundSymbols;
  // Outputs carry their ONNX names (through any casts to the value computed).
  for (Operation &op : body)
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
        Value source = v;
        while (auto cast = source.getDefiningOp<tensor::CastOp>())
          source = cast.getSource();
        outputNames.try_emplace(source, name ? name.str() : "output" + std::to_string(i));
      }

  static_assert(int(GuardKind::equal) == int(fb::PredicateKind::Equal) &&
                int(GuardKind::equal_or_one) == int(fb::PredicateKind::EqualOrOne) &&
                int(GuardKind::less_equal) == int(fb::PredicateKind::LessEqual));
  for (Operation &op : body) {
    if (auto g = dyn_cast<GuardOp>(op)) {
      // Facts the code relies on. Over symbols the inputs bind, the runtime
      // checks them when a call starts; over symbols steps bind (sizes read
      // from the device), a check step where the guard stands does.
      if (!symbolOutside(g, bound).empty()) {
        if (failed(addOp(op)))
          return failure();
        continue;
      }
      predicates.push_back(encodePredicate(g, /*atCheckStep=*/false));
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      FailureOr<std::vector<int>> ids = this->ids(ret.getOperands(), &op);
      if (failed(ids))
        return failure();
      outputs = *ids;
    } else if (failed(addOp(op))) {
      return failure();
    }
  }

  return success();
}

/// The root table, then the weights: in `result.bytes`, in `result.weights`
/// (a weights file), or deferred to writeArtifact; sealed.
LogicalResult ArtifactWriter::finish(const std::vector<flatbuffers::Offset<fb::Kernel>> &kernelTable,
                             const std::vector<flatbuffers::Offset<fb::HostLibrary>> &hostLibs,
                             const std::vector<flatbuffers::Offset<fb::Variant>> &variants,
                             CompiledArtifact &result) {
  std::vector<flatbuffers::Offset<flatbuffers::String>> symbolOffsets;
  for (const std::string &s : symbols)
    symbolOffsets.push_back(builder.CreateString(s));

  bool external = !options.weightsFile.empty();
  uint64_t externalChecksum = 0;
  if (external && options.deferWeights) {
    // The weights file streams from the module's constants as it is written
    // (writeWeightsFile); its checksum reads them once now, the same way.
    auto places = std::make_shared<std::vector<WeightPlace>>(std::move(weightPlaces));
    size_t total = weightBytes;
    result.deferredWeightsFileBytes = total;
    result.deferredWeightsFile = [places, total](llvm::function_ref<void(ArrayRef<char>)> emit) {
      return forEachWeightPiece(*places, total, emit);
    };
    bool readable = true;
    externalChecksum = artifact::artifactChecksumOfPieces(total, [&](const auto &update) {
      readable = succeeded(result.deferredWeightsFile([&](ArrayRef<char> piece) {
        update(reinterpret_cast<const uint8_t *>(piece.data()), piece.size());
      }));
    });
    if (!readable)
      return failure();
  } else if (external) {
    result.weights.assign(weightBytes, '\0');
    if (failed(writeWeights(MutableArrayRef<char>(result.weights.data(), weightBytes))))
      return failure();
    externalChecksum = artifact::artifactChecksum(
        reinterpret_cast<const uint8_t *>(result.weights.data()), result.weights.size(),
        result.weights.size());
  }
  // Everything the root table points at, before the weights: once they are in
  // the buffer nothing else grows it (a growth copies the whole buffer).
  auto generator = builder.CreateString("kiln-compile " KILN_VERSION);
  auto source = builder.CreateString(options.source);
  auto symbolVector = builder.CreateVector(symbolOffsets);
  auto valueVector = builder.CreateVector(values);
  auto inputVector = builder.CreateVector(inputs);
  auto outputVector = builder.CreateVector(outputs);
  auto guardVector = builder.CreateVector(guards);
  auto stepVector = builder.CreateVector(steps);
  auto kernelVector = builder.CreateVector(kernelTable);
  auto hostLibVector = builder.CreateVector(hostLibs);
  auto deviceLibraryString = builder.CreateString(deviceLibrary);
  auto weightVector = builder.CreateVector(weights);
  auto predicateVector = builder.CreateVector(predicates);
  auto variantVector = builder.CreateVector(variants);
  // kiln-mark-independent-rows' proof, by symbol index.
  std::vector<int32_t> independent;
  if (auto names = func->getAttrOfType<ArrayAttr>("kiln.independent_rows"))
    for (auto name : names.getAsValueRange<StringAttr>())
      if (auto it = llvm::find(symbols, name.str()); it != symbols.end())
        independent.push_back(static_cast<int32_t>(it - symbols.begin()));
  auto independentVector = builder.CreateVector(independent);
  // Symbols the kernels read from device memory, with their bounds.
  std::vector<flatbuffers::Offset<fb::DeviceSymbol>> deviceSymbols;
  auto deviceNames = func->getAttrOfType<ArrayAttr>(kDeviceSymbolsAttr);
  auto deviceBounds = func->getAttrOfType<DimsAttr>(kDeviceSymbolBoundsAttr);
  if (deviceNames) {
    if (!deviceBounds || deviceBounds.getDims().size() != deviceNames.size())
      return func.emitError() << "kiln.device_symbols needs one bound per symbol";
    for (auto [name, bound] : llvm::zip(deviceNames.getAsValueRange<StringAttr>(),
                                        deviceBounds.getDims()))
      deviceSymbols.push_back(fb::CreateDeviceSymbol(builder, symbolId(name.str()), dim(bound)));
  }
  auto deviceSymbolVector = builder.CreateVector(deviceSymbols);
  auto externalName = external ? builder.CreateString(options.weightsFile) : 0;
  // The embedded weights' room, left unwritten until the buffer is copied out
  // (untouched pages are not resident): the weights are in memory at most
  // twice, the IR's and the artifact's, and once when deferred. Its place
  // counts from the buffer's end, which stays put while the builder grows
  // downward.
  size_t embedded = external ? 0 : weightBytes;
  builder.reserve(embedded + kWeightAlignment + (64 << 10)); // the root table after it: < 1 KB
  builder.ForceVectorAlignment(embedded, 1, kWeightAlignment);
  uint8_t *unused = nullptr;
  auto blob = builder.CreateUninitializedVector<uint8_t>(embedded, &unused);
  size_t blobFromEnd = builder.GetSize() - sizeof(flatbuffers::uoffset_t);
  // The checksum field must exist even while it is zero: sealArtifact fills it in.
  builder.ForceDefaults(true);
  auto model = fb::CreateModel(
      builder, kFormatVersion, generator, source, symbolVector, valueVector, inputVector,
      outputVector, guardVector, stepVector, kernelVector, hostLibVector, deviceLibraryString,
      weightVector, blob, /*checksum=*/0, externalName, external ? weightBytes : 0,
      externalChecksum, predicateVector, variantVector, independentVector, deviceSymbolVector);
  fb::FinishModelBuffer(builder, model);

  return takeBuffer(embedded, blobFromEnd, result);
}

/// The finished buffer into `result`, the embedded weights (`embedded` bytes,
/// `blobFromEnd` from the buffer's end) written or deferred, and its checksum.
LogicalResult ArtifactWriter::takeBuffer(size_t embedded, size_t blobFromEnd, CompiledArtifact &result) {
  const char *finished = reinterpret_cast<const char *>(builder.GetBufferPointer());
  size_t total = builder.GetSize(), weightsAt = total - blobFromEnd;
  std::optional<size_t> checksumAt =
      artifact::artifactChecksumOffset(builder.GetBufferPointer());
  if (!checksumAt || *checksumAt + 8 > weightsAt)
    return func.emitError() << "internal error: the artifact has no checksum field before its weights";
  if (options.deferWeights && embedded) {
    result.head.assign(finished, weightsAt);
    result.tail.assign(finished + weightsAt + embedded, total - weightsAt - embedded);
    builder.Reset(); // frees the buffer
    auto places = std::make_shared<std::vector<WeightPlace>>(std::move(weightPlaces));
    result.deferredWeightBytes = embedded;
    result.deferredWeights = [places, embedded](llvm::function_ref<void(ArrayRef<char>)> emit) {
      return forEachWeightPiece(*places, embedded, emit);
    };
    bool readable = true;
    uint64_t sum = artifact::artifactChecksumOfPieces(total, [&](const auto &update) {
      auto bytes = [&](ArrayRef<char> piece) {
        update(reinterpret_cast<const uint8_t *>(piece.data()), piece.size());
      };
      bytes(result.head);
      readable = succeeded(result.deferredWeights(bytes));
      bytes(result.tail);
    });
    if (!readable)
      return failure();
    std::memcpy(result.head.data() + *checksumAt, &sum, 8);
  } else {
    // The bytes around the weights' room only: the room itself was never
    // written (reading it would read uninitialized memory).
    result.bytes.assign(total, '\0');
    std::memcpy(result.bytes.data(), finished, weightsAt);
    std::memcpy(result.bytes.data() + weightsAt + embedded, finished + weightsAt + embedded,
                total - weightsAt - embedded);
    builder.Reset(); // frees the buffer
    if (embedded &&
        failed(writeWeights(MutableArrayRef<char>(result.bytes.data() + weightsAt, embedded))))
      return failure();
    uint64_t sum = artifact::artifactChecksum(reinterpret_cast<const uint8_t *>(result.bytes.data()),
                                              total, *checksumAt);
    std::memcpy(result.bytes.data() + *checksumAt, &sum, 8);
  }
  return success();
}

FailureOr<CompiledArtifact> buildArtifact(func::FuncOp func, const ArtifactOptions &options) {
  return ArtifactWriter(func, options).build();
}

LogicalResult forEachArtifactPiece(const CompiledArtifact &artifact,
                                   llvm::function_ref<void(ArrayRef<char>)> emit) {
  if (!artifact.deferredWeights) {
    emit(ArrayRef<char>(artifact.bytes.data(), artifact.bytes.size()));
    return success();
  }
  emit(ArrayRef<char>(artifact.head.data(), artifact.head.size()));
  if (failed(artifact.deferredWeights(emit)))
    return failure();
  emit(ArrayRef<char>(artifact.tail.data(), artifact.tail.size()));
  return success();
}

LogicalResult writeWeightsFile(const CompiledArtifact &artifact, llvm::raw_ostream &os) {
  if (!artifact.deferredWeightsFile) {
    os.write(artifact.weights.data(), artifact.weights.size());
    return success();
  }
  return artifact.deferredWeightsFile(
      [&](ArrayRef<char> piece) { os.write(piece.data(), piece.size()); });
}

LogicalResult writeArtifact(const CompiledArtifact &artifact, llvm::raw_ostream &os) {
  return forEachArtifactPiece(artifact,
                              [&](ArrayRef<char> piece) { os.write(piece.data(), piece.size()); });
}

} // namespace kiln
