//===- Plan.h - an artifact, read and checked -------------------*- C++ -*-===//
//
// The artifact library (kiln_artifact) is what both halves of kiln share: the
// schema, this reader and its checks, the checksum, dim evaluation and the
// memory planner. The compiler links it to write and report on artifacts, the
// runtime to load them; neither links the other.
//
// readArtifact verifies the buffer with FlatBuffers, checks the format version
// and checksum, and every index the artifact holds (values, kernels, symbols,
// weights, step inputs and outputs), so a corrupt or hostile file is one error,
// never a crash. What a step computes stays in its typed schema table
// (StepInfo::table); the runtime decodes those at load (runtime/src/HostSteps).
// Large blobs (weights, cubins, host libraries) stay in the caller's buffer.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_PLAN_H
#define KILN_ARTIFACT_PLAN_H

#include "kiln/artifact/Format.h"
#include "kiln/reference/Tensor.h"
#include "kiln/schema/kiln_artifact_generated.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <functional>
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace kiln::artifact {

/// Values of the symbols, one per artifact symbol; nullopt while unbound.
using Bindings = std::vector<std::optional<int64_t>>;

/// A dim expression in postfix form (see the schema's ExprOp); empty is unknown.
struct Dim {
  enum class Op : uint8_t { Constant, Symbol, Add, Mul, FloorDiv, CeilDiv, Mod };
  std::vector<std::pair<Op, int64_t>> ops;

  bool known() const { return !ops.empty(); }
  /// The value under `symbols`; nullopt when unknown, unbound, dividing by zero
  /// or overflowing.
  std::optional<int64_t> evaluate(const Bindings &symbols) const;
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

/// A fact about the symbols the code relies on (the schema's Predicate).
struct PredicateInfo {
  enum class Kind : uint8_t { Equal, EqualOrOne, LessEqual };
  Kind kind = Kind::Equal;
  Dim lhs, rhs;
  std::string reason;
  /// Whether it holds under `symbols`; nullopt when a side has no value.
  std::optional<bool> holds(const Bindings &symbols) const;
  /// "seq * 64 == 320", "n == 4 or n == 1", "3 <= seq".
  std::string toString(const std::vector<std::string> &symbolNames) const;
  /// "guard 'seq <= 512' does not hold (seq = 600)": a call's error when it
  /// does not hold under `symbols` (or "cannot be evaluated").
  std::string broken(const Bindings &symbols, const std::vector<std::string> &symbolNames) const;
};

/// What the executors do with a step: launch a generated kernel, run a typed
/// host step (library ops and graph breaks: the runtime decides where each runs),
/// compute a shape, run nested bodies (If, Loop, Scan), read sizes back,
/// name an input's bytes under other dims (View), or check facts about
/// symbols steps bound (Check).
enum class StepKind : uint8_t {
  Kernel,
  Host,
  SymbolicConstant,
  ShapeOf,
  Control,
  ReadSizes,
  View,
  Check
};

struct StepInfo;

/// A plan nested in a control-flow step (the schema's Body).
struct BodyInfo {
  std::vector<int> parameters, results;
  std::vector<StepInfo> steps;
};

struct StepInfo {
  StepKind kind = StepKind::Kernel;
  /// The schema table's type and the table itself (inside the artifact buffer).
  schema::StepOp op = schema::StepOp::NONE;
  const schema::Step *table = nullptr;
  int kernel = -1;
  /// A KernelInPlace launch: the input (0 the first) whose bytes the result
  /// is, the kernel writing part of them; -1 for every other step.
  int inPlaceInput = -1;
  std::vector<int> inputs, outputs;
  std::vector<Dim> dims; ///< SymbolicConstant steps
  /// What profiles and errors call the step: the kernel's name, or the step
  /// table's ("MatMul", "TopK").
  std::string label;
  /// The step's number among all steps of the plan, nested ones included: the
  /// top-level steps are 0..steps.size()-1 in order, then each control step's
  /// bodies' steps depth first. Error words and decoded host steps are indexed
  /// by it.
  int index = 0;
  /// Control steps: If [then, else]; Loop and Scan [body].
  std::vector<BodyInfo> bodies;
  /// Scan steps: the schema table's fields, copied out at load (a damaged
  /// artifact may misalign its 8-byte elements). Entries past a list's end
  /// mean axis 0, forward.
  struct ScanInfo {
    int64_t numScanInputs = 0;
    std::vector<int64_t> inputAxes, outputAxes;
    std::vector<uint8_t> inputReverse, outputReverse;
  };
  ScanInfo scan;
  /// Symbols the step binds when it completes (schema DimBinding): dim `dim`
  /// of output `output` is symbol `symbol`'s value from then on.
  struct Binding {
    int output = 0, dim = 0, symbol = 0;
  };
  std::vector<Binding> binds;
  /// ReadSizes steps: element i of the input is symbol readSymbols[i]'s value
  /// from then on; `readWhat` names those sizes for the error a negative one
  /// is (empty in artifacts written before it).
  std::vector<int> readSymbols;
  std::string readWhat;
  /// Check steps: the facts, in order.
  std::vector<PredicateInfo> checks;
};

struct CubinInfo {
  int sm = 0;
  const uint8_t *data = nullptr;
  size_t size = 0;
  std::string ptx;
};

struct KernelInfo {
  std::string name, source;
  schema::Schedule schedule = schema::Schedule::Pointwise;
  std::vector<int> symbols;
  /// Kernel.device_symbols: those of `symbols` the code reads from device
  /// memory (a launch passes the address of the symbol's word).
  std::vector<int> deviceSymbols;
  bool readsOnDevice(int symbol) const {
    return std::find(deviceSymbols.begin(), deviceSymbols.end(), symbol) != deviceSymbols.end();
  }
  bool blockPerItem = false;
  std::vector<CubinInfo> cubins;
  /// Element types and dims of the buffers, output first, then the inputs.
  std::vector<ref::DType> bufferDtypes;
  std::vector<std::vector<Dim>> bufferShapes;
  /// Takes a last parameter, its step's error word (kiln_device.h KILN_ERROR_*).
  bool reportsErrors = false;
  /// What a launch sizes its grid by; unknown (no ops): the result's elements.
  Dim workItems;
  /// Floating-point operations per launch (Kernel.flops); unknown: memory bound.
  Dim flops;
  /// The unit they run on (Kernel.flop_unit).
  schema::FlopUnit flopUnit = schema::FlopUnit::Fp32;
  /// With tensorCoreMinRows > 0: Half at a launch whose tensorCoreRows is at
  /// least that (Kernel.tensor_core_rows, tensor_core_min_rows).
  Dim tensorCoreRows;
  int64_t tensorCoreMinRows = 0;
  /// Their L2 bytes, l2Bytes' stand-in at those launches
  /// (Kernel.tensor_core_l2_bytes); unknown: l2Bytes.
  Dim tensorCoreL2Bytes;
  /// Kernel.index32_sizes: where a specialization may take the kernel's
  /// 32-bit body (index32Fits).
  std::vector<Dim> index32Sizes;
  /// Kernel.bounded_reads: (input number, the most elements a launch reads
  /// of it) for the inputs it reads only in part.
  std::vector<std::pair<int, Dim>> boundedReads;
  /// Kernel.l2_bytes: bytes a launch reads through L2; unknown: its buffers.
  Dim l2Bytes;
  /// Kernel.scratch_bytes: the zeroed kernel scratch a launch takes (its
  /// `kiln_scratch` parameter, after the symbols); unknown: none.
  Dim scratchBytes;
};

/// Whether a specialization of `kernel` with every symbol bound in `symbols`
/// may define KILN_INDEX32: the kernel has the 32-bit body, each of its
/// symbols is bound and each of its index32 sizes evaluates, all at most
/// kMaxIndex32Elements.
bool index32Fits(const KernelInfo &kernel, const Bindings &symbols);

struct HostLibraryInfo {
  std::vector<std::string> kernels;
  const uint8_t *data = nullptr;
  size_t size = 0;
  int variant = -1; ///< the Variant these launchers are specialized for; -1 generic
};

/// Kernels specialized for exact values of some symbols (the schema's Variant).
struct VariantInfo {
  std::string name; ///< "batch=8,seq=128"
  std::vector<int> symbols; ///< ascending, at most kMaxVariantSymbols
  std::vector<int64_t> values;
  /// Per specialized kernel: its index in Plan::kernels and its cubins.
  std::vector<std::pair<int, std::vector<CubinInfo>>> kernels;
};

/// The entry point `kernel`'s code built for `variant` exports (EntryName.h):
/// looked up by it, code built for other values is not found.
std::string variantEntryName(const KernelInfo &kernel, const VariantInfo &variant);

struct GuardInfo {
  int input = 0; ///< position in Plan::inputs
  int dim = 0;
  Dim expected;
  bool binds = false;
};

/// Everything the executors need, indices checked.
struct Plan {
  std::string producer, source;
  std::vector<std::string> symbols;
  std::vector<ValueInfo> values;
  std::vector<int> inputs, outputs;
  std::vector<GuardInfo> guards;
  std::vector<PredicateInfo> predicates;
  std::vector<StepInfo> steps;
  /// Steps of every level (StepInfo::index numbers them).
  size_t stepCount = 0;
  std::vector<KernelInfo> kernels;
  std::vector<HostLibraryInfo> hostLibraries;
  std::vector<VariantInfo> variants;
  /// Symbols (indices into `symbols`) along which requests may be batched
  /// (Model.independent_rows).
  std::vector<int> independentRows;
  /// Model.device_symbols: symbols kernels read from device memory, each
  /// with the dim it never exceeds; memory is planned, and pointwise grids
  /// sized, at that bound (planningSymbols).
  struct DeviceSymbol {
    int symbol = -1;
    Dim bound;
  };
  std::vector<DeviceSymbol> deviceSymbols;
  std::string deviceLibrary;
  /// Model.checksum: what variant packs name the artifact by.
  uint64_t checksum = 0;
};

/// Calls `visit` on every step of `plan`, nested ones included, in index order
/// within each level (a control step before its bodies' steps).
void forEachStep(const Plan &plan, const std::function<void(const StepInfo &)> &visit);

/// A variant pack (kiln_variants.fbs) read and checked against the plan it was
/// compiled for; its blobs stay in the caller's buffer.
struct VariantPackInfo {
  std::vector<VariantInfo> variants;
  /// `variant` indexes `variants` above.
  std::vector<HostLibraryInfo> hostLibraries;
};

/// Reads a variant pack for `plan`: identifier, structure, version, checksum,
/// the artifact it names, and every variant as readArtifact checks them.
absl::StatusOr<VariantPackInfo> readVariantPack(const uint8_t *data, size_t size,
                                                const Plan &plan);

/// Stores the checksum into a finished variant pack buffer.
bool sealVariantPack(uint8_t *data, size_t size);

/// The checksum an artifact carries: a 64-bit hash (XXH3) of its `size` bytes
/// with the eight at `skip` (the checksum field itself) read as zero; `skip` =
/// `size` skips nothing.
uint64_t artifactChecksum(const uint8_t *data, size_t size, size_t skip);

/// Stores the checksum into a finished artifact buffer (the compiler and tests
/// call this last); false when the buffer has no checksum field.
bool sealArtifact(uint8_t *data, size_t size);

/// artifactChecksum of an artifact of `size` bytes whose checksum field is
/// still zero, given in pieces: `pieces` calls its argument with each piece in
/// order (their sizes summing to `size`). The compiler streams an artifact's
/// weights this way instead of holding them beside the module's.
uint64_t artifactChecksumOfPieces(
    size_t size,
    const std::function<void(const std::function<void(const uint8_t *, size_t)> &)> &pieces);

/// Where a finished artifact buffer keeps its checksum's eight bytes; nullopt
/// when it has no checksum field.
std::optional<size_t> artifactChecksumOffset(const uint8_t *data);

/// Bytes of a weights file beside an artifact: given its recorded name, returns
/// them (they must outlive the plan) or an error.
using WeightsFileResolver =
    std::function<absl::StatusOr<std::pair<const uint8_t *, size_t>>(const std::string &name)>;

/// Reads the artifact in `data` (which must stay alive and unchanged while the
/// plan is used: weights, binaries and step tables point into it). An artifact
/// whose weights are in a separate file needs `resolveWeights`.
absl::StatusOr<Plan> readArtifact(const uint8_t *data, size_t size,
                                  const WeightsFileResolver &resolveWeights = {});

/// The dims of `value` under `symbols`; nullopt when one is unknown until run time.
std::optional<ref::Shape> evaluateShape(const ValueInfo &value, const Bindings &symbols);
/// The same into `shape` (its storage reused: no allocation once it has room).
bool evaluateShapeInto(const ValueInfo &value, const Bindings &symbols, ref::Shape &shape);

/// Whether a computed result has the dtype and the dims (where known) the plan
/// says; the executors check every host-computed result with it.
bool matchesPlan(const ref::Tensor &got, const ValueInfo &info, const Bindings &symbols);
/// The same for a result known by its dtype and dims (one not on the host).
bool matchesPlan(ref::DType dtype, const ref::Shape &shape, const ValueInfo &info,
                 const Bindings &symbols);

/// "f32[batch, 16]": a value's type as messages spell it.
std::string describeValue(const ValueInfo &value, const std::vector<std::string> &symbols);

/// The dtype names as kiln's IR spells them ("f32", "i64", "bool").
std::string dtypeName(ref::DType t);

/// What a shape step (SymbolicConstant, ShapeOf) computes: an i64 tensor of its
/// dims under `symbols`, or of `inputShape` (the ShapeOf input's). An error (no
/// step prefix) when it does not fit the plan or a dim has no value.
absl::StatusOr<ref::Tensor> evaluateShapeStep(const Plan &plan, const StepInfo &step,
                                              const Bindings &symbols,
                                              const ref::Shape &inputShape);

} // namespace kiln::artifact

#endif // KILN_ARTIFACT_PLAN_H
