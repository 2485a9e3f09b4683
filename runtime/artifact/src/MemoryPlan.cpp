//===- MemoryPlan.cpp - offsets from liveness ------------------------------===//

#include "kiln/artifact/MemoryPlan.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <functional>

namespace kiln::artifact {

namespace {
/// No one value is planned larger than this (2^48 bytes, 256 TiB), whatever the
/// limit asked for: sums and offsets of the plan then cannot wrap.
constexpr uint64_t kMaxPlannedBytes = uint64_t{1} << 48;

size_t alignUp(size_t n, size_t a) { return (n + a - 1) / a * a; }
} // namespace

void planningSymbolsInto(const Plan &plan, const Bindings &symbols, Bindings &out) {
  out.assign(symbols.begin(), symbols.end());
  for (const Plan::DeviceSymbol &d : plan.deviceSymbols)
    if (std::optional<int64_t> bound = d.bound.evaluate(symbols);
        bound && out[d.symbol] && *bound >= *out[d.symbol])
      out[d.symbol] = *bound;
}

Bindings planningSymbols(const Plan &plan, const Bindings &symbols) {
  Bindings planning;
  planningSymbolsInto(plan, symbols, planning);
  return planning;
}

absl::StatusOr<MemoryPlan> planMemory(const Plan &plan, const Bindings &symbols,
                                      uint64_t maxTensorBytes) {
  size_t n = plan.values.size();
  MemoryPlan out;
  out.offsets.assign(n, -1);
  out.bytes.assign(n, 0);
  std::vector<int64_t> first(n, -1), last(n, -1);
  // A control step's bodies run while the step does: every value they read,
  // define or pass (parameters, results) is live for the whole step, so values
  // of a body never share bytes with each other or with what the step reads
  // and writes (a loop's iterations reuse them instead).
  std::function<void(const std::vector<StepInfo> &, int64_t)> nested =
      [&](const std::vector<StepInfo> &steps, int64_t s) {
        auto touch = [&](int v) {
          if (first[v] < 0)
            first[v] = s;
          last[v] = std::max(last[v], s);
        };
        for (const StepInfo &step : steps) {
          for (int v : step.inputs)
            touch(v);
          for (int v : step.outputs)
            touch(v);
          for (const BodyInfo &body : step.bodies) {
            for (int v : body.parameters)
              touch(v);
            for (int v : body.results)
              touch(v);
            nested(body.steps, s);
          }
        }
      };
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    for (int v : plan.steps[s].inputs)
      last[v] = static_cast<int64_t>(s);
    for (int v : plan.steps[s].outputs)
      first[v] = last[v] = static_cast<int64_t>(s);
    for (const BodyInfo &body : plan.steps[s].bodies) {
      for (int v : body.parameters)
        first[v] = last[v] = static_cast<int64_t>(s);
      for (int v : body.results)
        last[v] = std::max(last[v], static_cast<int64_t>(s));
      nested(body.steps, static_cast<int64_t>(s));
    }
  }
  for (int v : plan.outputs)
    last[v] = static_cast<int64_t>(plan.steps.size());
  // A view's bytes are its input's: the input stays live as long as the view
  // does, and the view takes no bytes of its own. Later views first, so a view
  // of a view passes its range down the chain. A top-level reshape to a shape
  // computed at run time is one too (the executors alias its input).
  std::vector<bool> isView(n, false);
  for (size_t s = plan.steps.size(); s-- > 0;) {
    const StepInfo &step = plan.steps[s];
    // So does a kernel's result that is its input's bytes (a KV cache
    // updated in place).
    bool view = isViewStep(step);
    if (!view && step.inPlaceInput < 0)
      continue;
    int in = step.inputs[view ? 0 : step.inPlaceInput], result = step.outputs[0];
    last[in] = std::max(last[in], last[result]);
    isView[result] = true;
    out.viewValues += view;
  }

  std::vector<int> placed;
  for (size_t v = 0; v < n; ++v) {
    const ValueInfo &value = plan.values[v];
    if (value.kind != ValueKind::Intermediate || first[v] < 0 || isView[v])
      continue;
    std::optional<ref::Shape> shape = evaluateShape(value, symbols);
    if (!shape) {
      ++out.dynamicValues;
      continue;
    }
    // Offsets never exceed the sum of the sizes, which is checked here.
    absl::StatusOr<uint64_t> bytes = ref::checkedByteSize(
        value.dtype, *shape, std::min<uint64_t>(maxTensorBytes, kMaxPlannedBytes));
    if (!bytes.ok())
      return absl::Status(bytes.status().code(),
                          absl::StrCat("value '", value.name, "': ", bytes.status().message()));
    out.bytes[v] = *bytes;
    if (out.largestValue < 0 || out.bytes[v] > out.largestBytes) {
      out.largestValue = static_cast<int>(v);
      out.largestBytes = out.bytes[v];
    }
    if (__builtin_add_overflow(out.sumBytes,
                               alignUp(std::max<size_t>(out.bytes[v], 1), kSlotAlignment),
                               &out.sumBytes))
      return absl::ResourceExhaustedError("the planned intermediates' sizes overflow 64 bits");
    placed.push_back(static_cast<int>(v));
  }
  out.plannedValues = placed.size();
  std::stable_sort(placed.begin(), placed.end(),
                   [&](int a, int b) { return out.bytes[a] > out.bytes[b]; });

  // Place each value at the lowest offset that no already-placed value with an
  // overlapping live range occupies.
  std::vector<int> done;
  for (int v : placed) {
    std::vector<std::pair<size_t, size_t>> busy; // [begin, end) of overlapping values
    for (int u : done)
      if (!(last[u] < first[v] || last[v] < first[u]))
        busy.push_back({static_cast<size_t>(out.offsets[u]),
                        static_cast<size_t>(out.offsets[u]) +
                            alignUp(std::max<size_t>(out.bytes[u], 1), kSlotAlignment)});
    std::sort(busy.begin(), busy.end());
    size_t size = alignUp(std::max<size_t>(out.bytes[v], 1), kSlotAlignment);
    size_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + size <= begin)
        break;
      offset = std::max(offset, end);
    }
    out.offsets[v] = static_cast<int64_t>(offset);
    out.peakBytes = std::max(out.peakBytes, offset + size);
    done.push_back(v);
  }
  return out;
}

} // namespace kiln::artifact
