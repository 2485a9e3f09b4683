//===- HostExecutor.h - a plan in host emulation ----------------*- C++ -*-===//
//
// Generated kernels run through their host-emulation launchers (the artifact's
// host library, loaded from memory), host steps on the reference kernels in
// place, and every value lives in host memory: the context's arena, the
// caller's inputs, the artifact's weights.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_HOSTEXECUTOR_H
#define KILN_RUNTIME_HOSTEXECUTOR_H

#include "Executor.h"

#include "kiln/artifact/HostLaunch.h"

namespace kiln::rt {

class HostExecutor final : public Executor {
public:
  /// Loads `plan`'s host libraries; `why` says why the model runs here (no
  /// CUDA device, ...), for the description.
  static absl::StatusOr<std::unique_ptr<HostExecutor>> create(const Plan &plan, std::string why);

  std::string description() const override { return description_; }
  bool isCuda() const override { return false; }
  absl::Status installVariant(int variant, const artifact::VariantInfo &info,
                              absl::Span<const artifact::HostLibraryInfo> libraries) override;

protected:
  absl::Status begin(ExecutionContext &context, const RunRequest &request) const override;
  absl::Status place(ExecutionContext &context, int v, const ref::Shape &shape) const override;
  absl::Status launch(ExecutionContext &context, const StepInfo &step) const override;
  absl::StatusOr<ref::Tensor> hostValue(ExecutionContext &context, int v) const override;
  absl::Status store(ExecutionContext &context, int v, ref::Tensor result) const override;
  absl::Status finish(ExecutionContext &context, const RunRequest &request,
                      OutputSink sink) const override;
  void abandon(ExecutionContext &context, const RunRequest &request) const override;
  uintptr_t errorWords(ExecutionContext &context) const override;
  uintptr_t symbolWords(ExecutionContext &context) const override;
  absl::StatusOr<uintptr_t> kernelScratch(ExecutionContext &context,
                                          size_t bytes) const override;
  absl::Status readErrorWords(ExecutionContext &context,
                              std::vector<int32_t> &words) const override;
  void mark(ExecutionContext &context, const RunRequest &request, size_t index) const override;
  absl::Status copyBytes(ExecutionContext &context, uintptr_t to, uintptr_t from,
                         size_t bytes) const override;
  absl::StatusOr<double> elapsedUs(ExecutionContext &context, size_t from,
                                   size_t to) const override;

private:
  HostExecutor() = default;
  std::string description_;
  const Plan *plan_ = nullptr;
  /// Per variant, per kernel (Plan::kernels index), its launcher.
  VariantTables<artifact::HostLauncher> launchers_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_HOSTEXECUTOR_H
