//===- Roofline.cpp - predicted step times on an H200 ---------------------===//

#include "tools/Roofline.h"

#include "tools/PlanGraph.h"

#include "kiln/reference/Tensor.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace kiln {
namespace {

// H200 SXM. Bandwidth: what streaming kernels reach of its 4.8 TB/s HBM3e.
// Peaks: dense, without sparsity. A launch: the stream's cost per kernel or
// library call without CUDA graphs.
constexpr double kBandwidthBytesPerUs = 4.3e6; // 4.3 TB/s
constexpr double kFp32FlopsPerUs = 67e6;       // CUDA cores, fp32 FMA
constexpr double kTf32FlopsPerUs = 495e6;      // tensor cores
constexpr double kHalfFlopsPerUs = 989e6;      // tensor cores, fp16/bf16 in
constexpr double kLaunchUs = 2.0;

std::optional<int64_t> valueBytes(const artifact::Plan &plan, int v,
                                  const artifact::Bindings &symbols) {
  std::optional<ref::Shape> shape = artifact::evaluateShape(plan.values[v], symbols);
  if (!shape)
    return std::nullopt;
  return ref::numElements(*shape) * ref::info(plan.values[v].dtype).bytes;
}

double elements(const ref::Shape &s) { return static_cast<double>(ref::numElements(s)); }

/// A library step's operations and the rate its unit reaches, where known.
struct Work {
  std::optional<double> flops;
  double flopsPerUs = kFp32FlopsPerUs;
};

Work libraryWork(const artifact::Plan &plan, const artifact::StepInfo &step,
                 const artifact::Bindings &symbols) {
  Work w;
  if (step.inputs.size() < 2 || step.outputs.empty())
    return w;
  std::optional<ref::Shape> a = artifact::evaluateShape(plan.values[step.inputs[0]], symbols),
                            b = artifact::evaluateShape(plan.values[step.inputs[1]], symbols),
                            out = artifact::evaluateShape(plan.values[step.outputs[0]], symbols);
  if (!a || !b || !out || a->empty() || b->empty())
    return w;
  ref::DType type = plan.values[step.inputs[0]].dtype;
  bool half = type == ref::DType::f16 || type == ref::DType::bf16;
  if (step.op == schema::StepOp::MatMul) {
    const schema::MatMul *t = step.table->op_as_MatMul();
    // C = A B: K is A's last dim (its second last when A is read transposed);
    // a vector A has K elements.
    int64_t k = a->size() == 1 ? (*a)[0]
                : t && t->transpose_a() ? (*a)[a->size() - 2]
                                        : a->back();
    w.flops = 2.0 * elements(*out) * static_cast<double>(k);
    w.flopsPerUs = half ? kHalfFlopsPerUs
                   : t && t->allow_tf32() ? kTf32FlopsPerUs
                                          : kFp32FlopsPerUs;
  } else if (step.op == schema::StepOp::Conv || step.op == schema::StepOp::ConvTranspose) {
    // Each output element of a conv (each input element of a transposed one)
    // meets the filter elements of one of its first dim's entries (a conv's
    // output channels, a transposed conv's input channels).
    bool conv = step.op == schema::StepOp::Conv;
    double firstDim = static_cast<double>((*b)[0]);
    if (firstDim <= 0)
      return w;
    bool allowTf32 = conv ? step.table->op_as_Conv() && step.table->op_as_Conv()->allow_tf32()
                          : step.table->op_as_ConvTranspose() &&
                                step.table->op_as_ConvTranspose()->allow_tf32();
    w.flops = 2.0 * elements(conv ? *out : *a) * (elements(*b) / firstDim);
    w.flopsPerUs = half ? kHalfFlopsPerUs : allowTf32 ? kTf32FlopsPerUs : kFp32FlopsPerUs;
  }
  return w;
}

} // namespace

llvm::json::Object rooflineReport(const artifact::Plan &plan, const artifact::Bindings &symbols) {
  llvm::json::Array steps;
  double total = 0, kernelBytes = 0, libraryBytes = 0;
  int64_t unpredicted = 0;
  for (const artifact::StepInfo &step : plan.steps) {
    std::string kind;
    switch (step.kind) {
    case artifact::StepKind::Kernel: kind = "kernel"; break;
    case artifact::StepKind::Host:
      kind = isLibraryStep(step.op) ? "library" : "host";
      break;
    case artifact::StepKind::SymbolicConstant:
    case artifact::StepKind::ShapeOf: kind = "shape"; break;
    case artifact::StepKind::Control: kind = "control"; break;
    case artifact::StepKind::ReadSizes: kind = "sync"; break;
    }
    llvm::json::Object entry{{"name", step.label}, {"kind", kind}};
    if (kind == "shape") {
      // Computed on the host from sizes: no device time.
      entry["bytes"] = 0;
      entry["predicted_us"] = 0.0;
      steps.push_back(std::move(entry));
      continue;
    }
    std::optional<int64_t> bytes = 0;
    for (const std::vector<int> *values : {&step.inputs, &step.outputs})
      for (int v : *values) {
        std::optional<int64_t> b = valueBytes(plan, v, symbols);
        bytes = b && bytes ? std::optional<int64_t>(*bytes + *b) : std::nullopt;
      }
    Work work;
    if (kind == "kernel") {
      const artifact::KernelInfo &k = plan.kernels[step.kernel];
      // As the kernels list spells it ("attention").
      std::string schedule = schema::EnumNameSchedule(k.schedule);
      if (!schedule.empty())
        schedule[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(schedule[0])));
      entry["schedule"] = schedule;
      if (k.flops.known())
        if (std::optional<int64_t> f = k.flops.evaluate(symbols))
          work.flops = static_cast<double>(*f);
    } else if (kind == "library") {
      work = libraryWork(plan, step, symbols);
    }
    entry["bytes"] = bytes ? llvm::json::Value(*bytes) : llvm::json::Value(nullptr);
    entry["flops"] = work.flops ? llvm::json::Value(*work.flops) : llvm::json::Value(nullptr);
    // Host steps (graph breaks) and nested plans have no device model; a
    // read of sizes is a synchronization, its time the launches before it.
    if (!bytes || kind == "host" || kind == "control") {
      entry["predicted_us"] = nullptr;
      ++unpredicted;
    } else {
      double memoryUs = static_cast<double>(*bytes) / kBandwidthBytesPerUs;
      double computeUs = work.flops ? *work.flops / work.flopsPerUs : 0.0;
      double us = kLaunchUs + std::max(memoryUs, computeUs);
      entry["bound"] = computeUs > memoryUs ? "compute" : "memory";
      entry["predicted_us"] = us;
      total += us;
      if (kind == "kernel")
        kernelBytes += static_cast<double>(*bytes);
      else if (kind == "library")
        libraryBytes += static_cast<double>(*bytes);
    }
    steps.push_back(std::move(entry));
  }
  return llvm::json::Object{
      {"device", "H200 (model: 4.3 TB/s; 67 TFLOP/s fp32, 495 tf32, 989 fp16/bf16; 2 us a launch)"},
      {"steps", std::move(steps)},
      {"predicted_us", total},
      {"kernel_bytes", kernelBytes},
      {"library_bytes", libraryBytes},
      {"unpredicted_steps", unpredicted}};
}

} // namespace kiln
