//===- Model.h - a loaded model ---------------------------------*- C++ -*-===//
//
// A Model owns the artifact's bytes (mapped from a file, or copied), the plan
// read from them, each host step decoded, and the executor of the backend it
// chose. It checks a call's inputs against the guards, binding the symbols, and
// keeps the memory plan of each binding. Runs happen in ExecutionContexts
// (Executor.h); a Model is immutable after load and serves any number of
// contexts on any threads.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_MODEL_H
#define KILN_RUNTIME_MODEL_H

#include "Executor.h"
#include "kiln/artifact/HostSteps.h"

#include "absl/container/flat_hash_map.h"

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>

namespace kiln::rt {

using artifact::HostResults;
using artifact::HostStep;
using artifact::decodeHostStep;

enum class Backend { Auto, Cuda, Host };

class Model {
public:
  ~Model();
  /// `device`: the CUDA device ordinal the CUDA backend (or AUTO's choice of
  /// it) runs on.
  static absl::StatusOr<std::unique_ptr<Model>> loadFile(const std::string &path,
                                                         Backend backend, int device = 0);
  /// Bytes used in place; they outlive the model.
  static absl::StatusOr<std::unique_ptr<Model>> loadEmbedded(const void *data, size_t size,
                                                             Backend backend, int device = 0);
  static absl::StatusOr<std::unique_ptr<Model>> loadMemory(const void *data, size_t size,
                                                           Backend backend, int device = 0);

  const Plan &plan() const { return plan_; }
  const Executor &executor() const { return *executor_; }
  Backend backend() const { return executor_->isCuda() ? Backend::Cuda : Backend::Host; }
  /// The CUDA device ordinal it runs on; -1 in host emulation.
  int device() const { return device_; }
  /// Which backend runs and why: "cuda on NVIDIA H200 (sm_90)", or "host emulation
  /// (no CUDA driver: ...)".
  const std::string &backendDescription() const { return description_; }
  /// Step `index`'s decoded host function (StepKind::Host steps only).
  /// Step `index` (StepInfo::index: nested steps too) decoded for the host.
  const HostStep &hostStep(size_t index) const { return hostSteps_[index]; }
  /// What errors call step `index` (StepInfo::index).
  const std::string &stepLabel(size_t index) const { return stepLabels_[index]; }
  /// Whether a kernel of the plan reports data errors (runs then read the
  /// steps' error words).
  bool reportsErrors() const { return reportsErrors_; }

  /// Checks `inputs` against the guards (dtype, rank, every dim) and writes every
  /// symbol's value into `symbols` (sized to the plan's symbols; no allocation).
  absl::Status bindSymbols(absl::Span<const TensorRef> inputs, Bindings &symbols) const;

  /// The variant whose values the bound `symbols` equal (among the variants
  /// fixing the most symbols first), or -1 for the generic kernels. One hash
  /// probe per distinct set of fixed symbols, however many variants there are;
  /// lock-free against installs.
  int chooseVariant(const Bindings &symbols) const;
  /// "batch=8,seq=128", or "generic" for -1.
  const std::string &variantName(int variant) const;

  /// Installs the variants of a variant pack compiled for this artifact
  /// (kiln_variants.fbs; the bytes are copied). Safe while other threads run
  /// the model: a call that binds afterwards may pick them. Variants whose
  /// values the model has already are skipped. Returns how many were added.
  absl::StatusOr<int> addVariants(const void *pack, size_t size);

  /// Called on the running thread when a call binds shapes its context did not
  /// run last and no variant has them: `symbols` holds every symbol's value
  /// (-1 unbound). It must not block. Set before runs start.
  using VariantMissHandler = void (*)(void *user, const int64_t *symbols, size_t count);
  void setVariantMissHandler(VariantMissHandler handler, void *user) {
    missHandler_ = handler;
    missUser_ = user;
  }

  /// The memory plan for a binding (computed once per binding and kept).
  /// The memory plan under `symbols` (cached), or an error when a planned size
  /// overflows. Sizes are checked against no limit here: runs compare
  /// largestBytes with their own.
  absl::StatusOr<std::shared_ptr<const MemoryPlan>> memoryPlan(const Bindings &symbols) const;

  /// Binds, plans and runs in `context` (which must be this model's).
  absl::Status run(ExecutionContext &context, const RunRequest &request, OutputSink sink) const;

  /// A context from the model's pool, for callers without one of their own
  /// (kiln_model_run); give it back when the call is done.
  std::unique_ptr<ExecutionContext> takeContext() const;
  void giveContext(std::unique_ptr<ExecutionContext> context) const;

  /// "input 'x'" for messages.
  std::string describeInput(size_t i) const;

private:
  Model() = default;
  /// A model over `data` (owned through `mapping` when set) from `folder` (where a
  /// separate weights file is looked for; empty: nowhere).
  static absl::StatusOr<std::unique_ptr<Model>> loadWith(const void *data, size_t size,
                                                         Backend backend, int device,
                                                         std::string folder, void *mapping);
  static absl::StatusOr<std::pair<void *, size_t>> mapFile(const std::string &path);
  absl::Status prepare(Backend requested, int device);
  /// The error for inputs that break predicate `p`.
  absl::Status brokenPredicate(const artifact::PredicateInfo &p,
                               absl::Span<const TensorRef> inputs, const Bindings &symbols) const;

  /// The artifact's bytes: a read-only mapping, or a copy aligned for FlatBuffers.
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  void *mapping_ = nullptr;
  std::string folder_;
  void *weightsMapping_ = nullptr; ///< a separate weights file, mapped
  size_t weightsSize_ = 0;
  std::unique_ptr<uint8_t, void (*)(void *)> copy_{nullptr, nullptr};

  Plan plan_;
  std::vector<HostStep> hostSteps_; ///< per step; empty functions for other kinds
  std::vector<std::string> stepLabels_; ///< per step, every level
  bool reportsErrors_ = false;
  std::unique_ptr<Executor> executor_;
  int device_ = -1;
  std::string description_;

  /// Variants grouped by the symbols they fix, groups fixing more first; the
  /// key is those symbols' values, padded with zeros.
  using VariantKey = std::array<int64_t, artifact::kMaxVariantSymbols>;
  struct VariantGroup {
    std::vector<int> symbols;
    absl::flat_hash_map<VariantKey, int> byValues;
  };
  /// What calls choose from: published whole (an atomic pointer), replaced by
  /// a copy with more variants on each install; every table published stays
  /// alive with the model, since a call may still be reading an older one.
  struct DispatchTable {
    std::vector<VariantGroup> groups;
    std::vector<std::string> names; ///< per variant index
  };
  /// A variant's key (its values), and the key of bound `values` for a
  /// group fixing `symbols`: zeros past the group's symbols.
  static VariantKey keyOf(const artifact::VariantInfo &variant);
  static VariantKey keyOf(const std::vector<int> &symbols, const Bindings &values);
  /// `table` with variant `index` (its symbols, values, name) added.
  static void addToTable(DispatchTable &table, const artifact::VariantInfo &variant, int index);
  /// The variant of `table` with exactly `variant`'s symbols and values, or -1.
  static int chooseIn(const DispatchTable &table, const artifact::VariantInfo &variant);
  std::atomic<const DispatchTable *> dispatch_{nullptr};
  std::string genericName_ = "generic";
  std::mutex installMutex_;
  std::vector<std::unique_ptr<const DispatchTable>> tables_;
  VariantMissHandler missHandler_ = nullptr;
  void *missUser_ = nullptr;

  mutable std::mutex cacheMutex_;
  mutable std::map<Bindings, std::shared_ptr<const MemoryPlan>> memoryPlans_;
  mutable std::mutex poolMutex_;
  mutable std::vector<std::unique_ptr<ExecutionContext>> idleContexts_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_MODEL_H
