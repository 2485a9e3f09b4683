//===- kiln-bench-dispatch.cpp - what choosing a variant costs a call -----===//
//
//   kiln-bench-dispatch MODEL.kiln [--iterations N] [--rounds R]
//
// A model compiled with shape buckets (kiln-compile --buckets) checks its
// guards and picks a variant on every call whose shapes differ from the
// context's last ones. This measures, in one process and on the host backend:
//   dispatch  binding the symbols through the guards and predicates, then
//             choosing the variant, cycling through every variant's shapes and
//             one shape no variant has (so no per-context cache helps)
//   call      one whole run at a fixed shape (the context's cache warm): for a
//             model of one trivial kernel, the fixed cost of a call
// each as the median of R rounds of N calls, in nanoseconds per call, and the
// ratio of the two. Nothing here fails on a time: the machines are shared.
//
//===----------------------------------------------------------------------===//

#include "Model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-bench-dispatch: error: %s\n", message.c_str());
  return 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  std::string path;
  long iterations = 100000, rounds = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--iterations" || a == "--rounds") && i + 1 < argc) {
      char *end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end || v < 1)
        return fail(a + " needs a positive count");
      (a == "--iterations" ? iterations : rounds) = v;
    } else if (!a.empty() && a[0] != '-' && path.empty()) {
      path = a;
    } else {
      return fail("usage: kiln-bench-dispatch MODEL.kiln [--iterations N] [--rounds R]");
    }
  }
  if (path.empty())
    return fail("usage: kiln-bench-dispatch MODEL.kiln [--iterations N] [--rounds R]");
  absl::StatusOr<std::unique_ptr<kiln::rt::Model>> loaded =
      kiln::rt::Model::loadFile(path, kiln::rt::Backend::Host);
  if (!loaded.ok())
    return fail(std::string(loaded.status().message()));
  const kiln::rt::Model &model = **loaded;
  const kiln::artifact::Plan &plan = model.plan();

  // One set of input shapes per variant (its symbols at its values, every other
  // symbol 1), and one past them all that only the generic code serves.
  std::vector<kiln::artifact::Bindings> bindings;
  for (const kiln::artifact::VariantInfo &v : plan.variants) {
    kiln::artifact::Bindings b(plan.symbols.size(), int64_t(1));
    for (size_t i = 0; i < v.symbols.size(); ++i)
      b[v.symbols[i]] = v.values[i];
    bindings.push_back(b);
  }
  kiln::artifact::Bindings generic(plan.symbols.size(), int64_t(1));
  for (const kiln::artifact::VariantInfo &v : plan.variants)
    for (size_t i = 0; i < v.symbols.size(); ++i)
      generic[v.symbols[i]] = std::max(*generic[v.symbols[i]], v.values[i] + 1);
  bindings.push_back(generic);

  std::vector<std::vector<std::vector<int64_t>>> dims(bindings.size());
  std::vector<std::vector<std::vector<uint8_t>>> data(bindings.size());
  std::vector<std::vector<kiln::rt::TensorRef>> inputs(bindings.size());
  for (size_t s = 0; s < bindings.size(); ++s) {
    for (int v : plan.inputs) {
      std::optional<kiln::ref::Shape> shape = kiln::artifact::evaluateShape(plan.values[v], bindings[s]);
      if (!shape)
        return fail("an input's dims are not fixed by the symbols alone");
      dims[s].emplace_back(shape->begin(), shape->end());
      int64_t bytes = kiln::ref::info(plan.values[v].dtype).bytes;
      for (int64_t d : *shape)
        bytes *= d;
      data[s].emplace_back(static_cast<size_t>(bytes));
    }
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      inputs[s].push_back({plan.values[plan.inputs[i]].dtype, dims[s][i], data[s][i].data()});
  }

  // Dispatch: guards, predicates and the variant choice, shapes changing every call.
  kiln::artifact::Bindings symbols;
  std::vector<double> dispatchNs;
  long chosen = 0;
  for (long r = 0; r < rounds; ++r) {
    Clock::time_point start = Clock::now();
    for (long i = 0; i < iterations; ++i) {
      const std::vector<kiln::rt::TensorRef> &in = inputs[i % inputs.size()];
      if (absl::Status s = model.bindSymbols(in, symbols); !s.ok())
        return fail(std::string(s.message()));
      chosen += model.chooseVariant(symbols);
    }
    dispatchNs.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
                         static_cast<double>(iterations));
  }

  // A whole call at one shape, in one context.
  std::unique_ptr<kiln::rt::ExecutionContext> context = model.takeContext();
  std::vector<std::vector<uint8_t>> outputs(plan.outputs.size());
  auto sink = [&](size_t index, kiln::ref::DType dtype,
                  const kiln::ref::Shape &shape) -> absl::StatusOr<void *> {
    int64_t bytes = kiln::ref::info(dtype).bytes;
    for (int64_t d : shape)
      bytes *= d;
    outputs[index].resize(static_cast<size_t>(bytes));
    return static_cast<void *>(outputs[index].data());
  };
  kiln::rt::RunRequest request;
  request.inputs = inputs.front();
  long callIterations = std::max<long>(1, iterations / 10);
  std::vector<double> callNs;
  for (long r = 0; r < rounds; ++r) {
    Clock::time_point start = Clock::now();
    for (long i = 0; i < callIterations; ++i)
      if (absl::Status s = model.run(*context, request, sink); !s.ok())
        return fail(std::string(s.message()));
    callNs.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
                     static_cast<double>(callIterations));
  }
  model.giveContext(std::move(context));

  size_t groups = 0;
  {
    std::vector<std::vector<int>> sets;
    for (const kiln::artifact::VariantInfo &v : plan.variants)
      if (std::find(sets.begin(), sets.end(), v.symbols) == sets.end())
        sets.push_back(v.symbols);
    groups = sets.size();
  }
  double d = median(dispatchNs), c = median(callNs);
  std::printf("model: %s: %zu variants over %zu symbol set(s), %zu guards, %zu predicates\n",
              path.c_str(), plan.variants.size(), groups, plan.guards.size(),
              plan.predicates.size());
  std::printf("dispatch: %.1f ns per call (guards, predicates and variant choice; %zu shapes "
              "in turn; median of %ld rounds of %ld)\n",
              d, inputs.size(), rounds, iterations);
  std::printf("call: %.1f ns per call (one whole run at %s; median of %ld rounds of %ld)\n", c,
              model.variantName(model.chooseVariant(bindings.front())).c_str(), rounds,
              callIterations);
  std::printf("dispatch/call: %.3f\n", c > 0 ? d / c : 0.0);
  return chosen == -1234567 ? 2 : 0; // keeps the choice loop from being optimized away
}
