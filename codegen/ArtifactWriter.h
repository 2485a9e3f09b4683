//===- ArtifactWriter.h - the writer behind buildArtifact -------*- C++ -*-===//
//
// Private to codegen/: the state buildArtifact keeps while it walks a function
// (values, weights, steps, kernels, report), shared by the files that
// implement it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_ARTIFACTWRITER_H
#define KILN_CODEGEN_ARTIFACTWRITER_H

#include "codegen/Artifact.h"
#include "codegen/CudaEmitter.h"
#include "codegen/DeviceLibrary.h"
#include "codegen/KernelCache.h"
#include "codegen/StepEncoding.h"
#include "interpreter/Interpreter.h"
#include "ir/Kiln/KilnDialect.h"
#include "kiln/artifact/Format.h"
#include "kiln/schema/kiln_artifact_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln {
namespace fb = kiln::schema;
// Private to codegen/, as KernelEmitter.h: MLIR's names unqualified.
using namespace mlir;

/// The schema's schedule for codegen's name of one.
std::optional<schema::Schedule> scheduleOf(llvm::StringRef name);

/// A constant's place in the weights; its bytes are written there only once
/// the buffer that holds them exists, or the file (forEachWeightPiece).
struct WeightPlace {
  ConstantOp constant;
  size_t offset, bytes;
};

/// Calls `emit` with the weights' `total` bytes in order: the zeros between
/// constants, and each constant's data as a view of its own storage where it
/// stores the artifact's layout (elementsView), else a copy.
mlir::LogicalResult forEachWeightPiece(std::vector<WeightPlace> &places, size_t total,
                                       llvm::function_ref<void(llvm::ArrayRef<char>)> emit);

/// A FlatBufferBuilder that makes room ahead of need: the embedded weights are
/// the last large thing an artifact adds, and nothing after them may grow the
/// buffer (a growth copies all of it, the weights' room included).
class ArtifactBuilder : public flatbuffers::FlatBufferBuilder {
public:
  using FlatBufferBuilder::FlatBufferBuilder;
  void reserve(size_t bytes) { buf_.ensure_space(bytes); }
};

/// Writes one function's artifact (buildArtifact): Artifact.cpp lays out
/// inputs, weights, the root table and the checksum; ArtifactSteps.cpp turns
/// ops into steps; ArtifactKernels.cpp compiles kernels and variants.
class ArtifactWriter {
public:
  ArtifactWriter(func::FuncOp func, const ArtifactOptions &options)
      : func(func), options(options),
        cacheDir(options.cacheDir.empty() ? defaultCacheDir() : options.cacheDir),
        deviceLibrary(deviceLibraryText()) {}
  FailureOr<CompiledArtifact> build();

private:
  LogicalResult addInputs(Block &body);
  LogicalResult addBody(Block &body);
  FailureOr<std::vector<flatbuffers::Offset<fb::Kernel>>>
  buildKernelTable(const std::vector<size_t> &allKernels);
  LogicalResult finish(const std::vector<flatbuffers::Offset<fb::Kernel>> &kernelTable,
                       const std::vector<flatbuffers::Offset<fb::HostLibrary>> &hostLibs,
                       const std::vector<flatbuffers::Offset<fb::Variant>> &variants,
                       CompiledArtifact &result);
  LogicalResult takeBuffer(size_t embedded, size_t blobFromEnd, CompiledArtifact &result);
  FailureOr<EncodedStep> encodeControlStep(Operation *op);
  FailureOr<EncodedStep> encodeKernelStep(KernelOp k);
  FailureOr<EncodedStep> encodeReadSizes(ReadSizesOp read);
  FailureOr<EncodedStep> encodeCheck(GuardOp guard);
  flatbuffers::Offset<fb::Predicate> encodePredicate(GuardOp guard, bool atCheckStep);
  static std::string symbolOutside(GuardOp guard, const std::set<std::string> &bound,
                                   const std::set<std::string> *alsoBound = nullptr);
  FailureOr<EncodedStep> encodeSymbolicConstant(SymbolicConstantOp s);
  FailureOr<EncodedStep> encodeHostStep(Operation *op);

  func::FuncOp func;
  const ArtifactOptions &options;
  /// Where cubins are cached (HostKernels resolves the same default).
  std::string cacheDir;
  /// The device library the kernels compile against: shipped in the artifact and
  /// part of every cubin's cache key.
  std::string deviceLibrary;
  ArtifactBuilder builder{1 << 16};
  llvm::DenseMap<Value, int> valueIds;
  llvm::DenseMap<Value, std::string> outputNames;
  std::vector<flatbuffers::Offset<fb::Value>> values;
  std::vector<std::string> symbols;
  std::map<std::string, int> symbolIds;
  std::vector<WeightPlace> weightPlaces;
  size_t weightBytes = 0; ///< the weights' size, alignment padding included
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  std::vector<int> inputs, outputs; ///< value ids
  std::vector<flatbuffers::Offset<fb::Guard>> guards;
  std::vector<flatbuffers::Offset<fb::Predicate>> predicates; ///< the body's kiln.guard facts
  llvm::json::Array guardReport;
  std::vector<flatbuffers::Offset<fb::Step>> steps;
  /// Where addStep puts steps: `steps`, or the body being written.
  std::vector<flatbuffers::Offset<fb::Step>> *currentSteps = &steps;
  /// How many loop or scan bodies addStep is inside: sizes are bound (binds,
  /// read_sizes) at the top level and in an if's branches, never per iteration.
  int loopBodies = 0;
  std::vector<GeneratedKernel> kernels;
  std::vector<std::vector<fb::DType>> kernelSignatures; ///< per kernel, result first
  std::vector<std::vector<flatbuffers::Offset<fb::BufferShape>>> kernelShapes; ///< likewise
  std::map<std::string, int> kernelIds;
  llvm::json::Array kernelReport, libraryReport, graphBreaks, variantReport;
  /// ReadSizes steps: sizes the device computed, read back alone.
  llvm::json::Array sizeReads;
  std::set<std::string> boundSymbols; ///< symbols an input dim binds
  /// Symbols steps written so far bind (reads, host steps' results).
  std::set<std::string> stepBoundSymbols;

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
  /// The weights' bytes (weightBytes of them) into `out`.
  LogicalResult writeWeights(MutableArrayRef<char> out);
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

} // namespace kiln

#endif // KILN_CODEGEN_ARTIFACTWRITER_H
