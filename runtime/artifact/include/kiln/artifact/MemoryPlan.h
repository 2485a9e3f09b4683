//===- MemoryPlan.h - one arena for every intermediate ----------*- C++ -*-===//
//
// Each intermediate whose size is known once the symbols are bound gets an offset
// in one arena. Two values may share bytes when their live ranges (from the step
// that defines one to the last step that reads it; outputs live to the end) do
// not overlap. Values are placed largest first at the lowest offset free for their
// whole range — the greedy-by-size scheme TFLite and others use, close to optimal
// on inference graphs. kiln-compile's --report shows the same plan.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_MEMORYPLAN_H
#define KILN_ARTIFACT_MEMORYPLAN_H

#include "kiln/artifact/Plan.h"

namespace kiln::artifact {

struct MemoryPlan {
  /// Per value: its arena offset, or -1 (inputs, weights, views, which are
  /// their input's bytes, and intermediates whose size is only known when they
  /// are computed: those get their own allocation).
  std::vector<int64_t> offsets;
  /// Per value: its size in bytes when known (0 otherwise).
  std::vector<size_t> bytes;
  size_t peakBytes = 0; ///< the arena's size
  size_t sumBytes = 0;  ///< every planned intermediate in its own buffer
  size_t plannedValues = 0, dynamicValues = 0, viewValues = 0;
  /// The largest planned value (its index, -1 when none) and its bytes: runs
  /// compare it with their size limit.
  int largestValue = -1;
  size_t largestBytes = 0;
};

/// Whether top-level step `step` makes its output a view of its first input
/// (the same bytes under other dims): a View step, or a Reshape host step (a
/// shape computed at run time). The memory plan gives the output no bytes and
/// keeps the input live while the output is read.
inline bool isViewStep(const StepInfo &step) {
  return step.kind == StepKind::View ||
         (step.kind == StepKind::Host && step.op == schema::StepOp::Reshape &&
          !step.inputs.empty() && !step.outputs.empty());
}

/// `symbols` with each of the plan's device symbols (Plan::deviceSymbols) at
/// its bound where that evaluates and is not smaller: what memory is planned
/// for, and pointwise grids sized by, so that a stretch of launches has the
/// same addresses and grids for every value up to the bound.
Bindings planningSymbols(const Plan &plan, const Bindings &symbols);
/// The same into `out`, reusing its storage (a run in steady state allocates nothing).
void planningSymbolsInto(const Plan &plan, const Bindings &symbols, Bindings &out);

/// The plan of `plan`'s intermediates under `symbols`, or an error naming the
/// first value whose size has a negative dim, overflows, or exceeds
/// `maxTensorBytes`.
absl::StatusOr<MemoryPlan> planMemory(const Plan &plan, const Bindings &symbols,
                                      uint64_t maxTensorBytes = ref::kDefaultMaxTensorBytes);

} // namespace kiln::artifact

#endif // KILN_ARTIFACT_MEMORYPLAN_H
