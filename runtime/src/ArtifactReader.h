//===- ArtifactReader.h - a compiled model, read and checked -----*- C++ -*-===//
//
// Reads an artifact (runtime/schema/kiln_artifact.fbs) into plain structs the
// executor walks: the buffer is verified by FlatBuffers, its format version
// checked, and every index it holds (values, kernels, symbols, weights) checked
// against its tables, so a corrupt or hostile file is one error, never a crash.
// Large blobs (weights, cubins, host libraries) stay in the caller's buffer.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ARTIFACTREADER_H
#define KILN_RUNTIME_ARTIFACTREADER_H

#include "Export.h"
#include "kiln/reference/LibraryCall.h"
#include "kiln/reference/Tensor.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln::rt {

/// The artifact format this runtime reads and the compiler writes.
constexpr uint32_t kFormatVersion = 1;
/// Alignment of weights inside the artifact and of arena slots.
constexpr size_t kWeightAlignment = 64;

/// A dim expression in postfix form (see the schema's ExprOp); empty is unknown.
struct Dim {
  enum class Op : uint8_t { Constant, Symbol, Add, Mul, FloorDiv, CeilDiv, Mod };
  std::vector<std::pair<Op, int64_t>> ops;

  bool known() const { return !ops.empty(); }
  /// The value under `symbols` (one per artifact symbol; nullopt = unbound);
  /// nullopt when unknown, unbound, dividing by zero or overflowing.
  std::optional<int64_t> evaluate(const std::vector<std::optional<int64_t>> &symbols) const;
  /// The symbol number when the dim is exactly one symbol.
  std::optional<int64_t> soleSymbol() const;
  /// "2 * seq", "batch", "?" (infix, symbols named).
  std::string toString(const std::vector<std::string> &symbolNames) const;
};

enum class ValueKind : uint8_t { Input, Weight, Intermediate };

struct ValueInfo {
  std::string name;
  ref::DType dtype = ref::DType::f32;
  std::vector<Dim> shape;
  ValueKind kind = ValueKind::Intermediate;
  const uint8_t *weightData = nullptr; ///< weights: inside the artifact buffer
  size_t weightSize = 0;
};

enum class StepKind : uint8_t { Kernel, Library, SymbolicConstant, ShapeOf };

struct StepInfo {
  StepKind kind = StepKind::Kernel;
  int kernel = -1;
  std::vector<int> inputs, outputs;
  ref::LibraryCall call; ///< Library steps; call.op names the op for the others too
  std::vector<Dim> dims; ///< SymbolicConstant steps
  /// What profiles and errors call the step: the kernel's or the op's name.
  std::string label;
};

struct CubinInfo {
  int sm = 0;
  const uint8_t *data = nullptr;
  size_t size = 0;
  std::string ptx;
};

struct KernelInfo {
  std::string name, source, schedule;
  std::vector<int> symbols;
  bool blockPerItem = false;
  std::vector<CubinInfo> cubins;
};

struct HostLibraryInfo {
  std::vector<std::string> kernels;
  const uint8_t *data = nullptr;
  size_t size = 0;
};

struct GuardInfo {
  int input = 0; ///< position in Plan::inputs
  int dim = 0;
  Dim expected;
  bool binds = false;
};

/// Everything the executor needs, indices checked.
struct Plan {
  std::string producer, source;
  std::vector<std::string> symbols;
  std::vector<ValueInfo> values;
  std::vector<int> inputs, outputs;
  std::vector<GuardInfo> guards;
  std::vector<StepInfo> steps;
  std::vector<KernelInfo> kernels;
  std::vector<HostLibraryInfo> hostLibraries;
  std::string deviceLibrary;
};

/// The checksum an artifact carries: a 64-bit hash of its `size` bytes with the
/// eight at `skip` (the checksum field itself) read as zero.
KILN_RUNTIME_EXPORT uint64_t artifactChecksum(const uint8_t *data, size_t size, size_t skip);

/// Stores the checksum into a finished artifact buffer (the compiler and tests
/// call this last); false when the buffer has no checksum field.
KILN_RUNTIME_EXPORT bool sealArtifact(uint8_t *data, size_t size);

/// Bytes of a weights file beside an artifact: given its recorded name, returns
/// them (mapped; they must outlive the plan) or an error.
using WeightsFileResolver =
    std::function<absl::StatusOr<std::pair<const uint8_t *, size_t>>(const std::string &name)>;

/// Reads the artifact in `data` (which must stay alive and unchanged while the
/// plan is used: weights and binaries point into it). An artifact whose weights
/// are in a separate file needs `resolveWeights`.
KILN_RUNTIME_EXPORT absl::StatusOr<Plan>
readArtifact(const uint8_t *data, size_t size, const WeightsFileResolver &resolveWeights = {});

/// The dims of `value` under `symbols`; nullopt when one is unknown until run time.
std::optional<ref::Shape> evaluateShape(const ValueInfo &value,
                                        const std::vector<std::optional<int64_t>> &symbols);

/// Whether a computed result has the dtype and the dims (where known) the plan
/// says; the executors check every host-computed result with it.
bool matchesPlan(const ref::Tensor &got, const ValueInfo &info,
                 const std::vector<std::optional<int64_t>> &symbols);

/// What a shape step (SymbolicConstant, ShapeOf) computes: an i64 tensor of its
/// dims under `symbols`, or of `inputShape` (the ShapeOf input's). An error (no
/// step prefix) when it does not fit the plan or a dim has no value.
absl::StatusOr<ref::Tensor> evaluateShapeStep(const Plan &plan, const StepInfo &step,
                                              const std::vector<std::optional<int64_t>> &symbols,
                                              const ref::Shape &inputShape);

} // namespace kiln::rt

#endif // KILN_RUNTIME_ARTIFACTREADER_H
