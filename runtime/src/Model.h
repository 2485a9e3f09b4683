//===- Model.h - a loaded model and its executor ----------------*- C++ -*-===//
//
// A Model owns the artifact's bytes (mapped from a file or copied), the plan read
// from them and what its backend loaded (host-emulation launchers). run() binds
// the symbols from the inputs through the guards, takes an arena sized by the
// memory plan for that binding, and walks the steps. run() is const and keeps its
// state per call, so one Model serves many threads.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_MODEL_H
#define KILN_RUNTIME_MODEL_H

#include "ArtifactReader.h"
#include "BufferPool.h"
#include "MemoryPlan.h"
#include "cuda/CudaExecutor.h"

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>

namespace kiln::rt {

enum class Backend { Auto, Cuda, Host };

struct ProfileEvent {
  std::string name, kind;
  double startUs = 0, durationUs = 0;
};

struct Profile {
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  absl::Mutex mutex;
  std::vector<ProfileEvent> events;
};


class Model {
public:
  ~Model();
  static absl::StatusOr<std::unique_ptr<Model>> loadFile(const std::string &path,
                                                         Backend backend);
  /// Bytes used in place; they outlive the model.
  static absl::StatusOr<std::unique_ptr<Model>> loadEmbedded(const void *data, size_t size,
                                                             Backend backend);
  static absl::StatusOr<std::unique_ptr<Model>> loadMemory(const void *data, size_t size,
                                                           Backend backend);

  const Plan &plan() const { return plan_; }
  Backend backend() const { return backend_; }

  /// Checks `inputs` (views) against the guards and returns every symbol's value.
  absl::StatusOr<std::vector<std::optional<int64_t>>>
  bindSymbols(const std::vector<ref::Tensor> &inputs) const;

  /// The memory plan for a binding (computed once per binding and kept).
  std::shared_ptr<const MemoryPlan> memoryPlan(const std::vector<std::optional<int64_t>> &symbols) const;

  /// Runs on `inputs` (views of host memory, or of device memory when
  /// `deviceBuffers`, CUDA only); `sink` says where each output goes.
  absl::Status run(const std::vector<ref::Tensor> &inputs, bool deviceBuffers, void *stream,
                   const OutputSink &sink, Profile *profile) const;

  /// Which backend runs and why: "cuda on NVIDIA H200 (sm_90)", or "host emulation
  /// (no CUDA driver: ...)".
  const std::string &backendDescription() const { return backendDescription_; }

  /// "input 'x'" / "output 'y'" for messages.
  std::string describeInput(size_t i) const;

private:
  Model() = default;
  /// A model over `data` (owned through `mapping` when set) from `folder` (where a
  /// separate weights file is looked for; empty: nowhere).
  static absl::StatusOr<std::unique_ptr<Model>> loadWith(const void *data, size_t size,
                                                         Backend backend, std::string folder,
                                                         void *mapping);
  static absl::StatusOr<std::pair<void *, size_t>> mapFile(const std::string &path);
  absl::Status prepare(Backend requested);
  absl::Status runStep(size_t index, std::vector<ref::Tensor> &values,
                       const std::vector<std::optional<int64_t>> &symbols,
                       const MemoryPlan &memory, uint8_t *arena) const;

  /// The artifact's bytes: a read-only mapping, or a copy aligned for FlatBuffers.
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  void *mapping_ = nullptr;
  std::string folder_;
  void *weightsMapping_ = nullptr; ///< a separate weights file, mapped
  size_t weightsSize_ = 0;
  std::unique_ptr<uint8_t, void (*)(void *)> copy_{nullptr, nullptr};

  Plan plan_;
  Backend backend_ = Backend::Host;
  std::string backendDescription_;
  std::unique_ptr<CudaExecutor> cuda_;
  /// Host emulation: per kernel (Plan::kernels index), its launcher.
  std::vector<void (*)(void **, int64_t)> hostLaunchers_;

  /// Host-emulation arenas, reused across calls.
  mutable BufferPool<uint8_t *> arenas_{
      [](size_t bytes) -> absl::StatusOr<uint8_t *> {
        void *p = std::aligned_alloc(kSlotAlignment, (bytes + kSlotAlignment - 1) /
                                                         kSlotAlignment * kSlotAlignment);
        if (!p)
          return absl::ResourceExhaustedError(
              absl::StrCat("cannot allocate a ", bytes, "-byte arena"));
        return static_cast<uint8_t *>(p);
      },
      [](uint8_t *p) { std::free(p); }};
  mutable absl::Mutex cacheMutex_;
  mutable std::map<std::vector<std::optional<int64_t>>, std::shared_ptr<const MemoryPlan>>
      memoryPlans_;
};

/// The dtype names as MLIR spells them ("f32", "i64").
std::string dtypeName(ref::DType t);

} // namespace kiln::rt

#endif // KILN_RUNTIME_MODEL_H
