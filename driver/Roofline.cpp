//===- Roofline.cpp - predicted step times on an H200 ---------------------===//

#include "driver/Roofline.h"

#include "driver/PlanGraph.h"

#include "kiln/artifact/DeviceModel.h"
#include "kiln/artifact/StepWork.h"
#include "kiln/reference/Tensor.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <string>

namespace kiln {
namespace {

using namespace device_model;

double peakFlopsPerUs(artifact::FlopUnit unit) {
  switch (unit) {
  case artifact::FlopUnit::Tf32: return kTf32FlopsPerUs;
  case artifact::FlopUnit::Half: return kHalfFlopsPerUs;
  case artifact::FlopUnit::Int8: return kInt8OpsPerUs;
  case artifact::FlopUnit::Fp32: break;
  }
  return kFp32FlopsPerUs;
}

/// The device model's figures, as the report states them (%g: "4.3", "989").
std::string deviceDescription() {
  auto g = [](double v) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", v);
    return std::string(text);
  };
  return "H200 (model: " + g(kBandwidthBytesPerUs / 1e6) + " TB/s from memory, " +
         g(kL2BytesPerUs / 1e6) + " from L2; " + g(kFp32FlopsPerUs / 1e6) + " TFLOP/s fp32, " +
         g(kTf32FlopsPerUs / 1e6) + " tf32, " + g(kHalfFlopsPerUs / 1e6) + " fp16/bf16, " +
         g(kInt8OpsPerUs / 1e6) + " int8/fp8; " + g(kLaunchUs) + " us a launch)";
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
    case artifact::StepKind::View: kind = "view"; break;
    case artifact::StepKind::Check: kind = "check"; break;
    }
    llvm::json::Object entry{{"name", step.label}, {"kind", kind}};
    if (kind == "shape" || kind == "view" || kind == "check") {
      // Computed on the host from sizes, or a reshape that renames its
      // input's bytes: no device time.
      entry["bytes"] = 0;
      entry["predicted_us"] = 0.0;
      steps.push_back(std::move(entry));
      continue;
    }
    artifact::StepWork work = artifact::stepWork(plan, step, symbols);
    const std::optional<int64_t> &bytes = work.bytes;
    if (kind == "kernel") {
      const artifact::KernelInfo &k = plan.kernels[step.kernel];
      // As the kernels list spells it ("attention").
      std::string schedule = schema::EnumNameSchedule(k.schedule);
      if (!schedule.empty())
        schedule[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(schedule[0])));
      entry["schedule"] = schedule;
      // What its loops stream over, for a per-element instruction count to
      // scale (tools/sass-lint.py --roofline).
      entry["kernel"] = k.name;
      entry["elements"] = work.elements ? llvm::json::Value(*work.elements) : llvm::json::Value(nullptr);
    }
    entry["bytes"] = bytes ? llvm::json::Value(*bytes) : llvm::json::Value(nullptr);
    if (work.l2Bytes)
      entry["l2_bytes"] = *work.l2Bytes;
    entry["flops"] = work.flops ? llvm::json::Value(*work.flops) : llvm::json::Value(nullptr);
    if (work.flops) {
      std::string unit = schema::EnumNameFlopUnit(work.unit);
      for (char &c : unit)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      entry["flop_unit"] = unit;
    }
    // Host steps (graph breaks) and nested plans have no device model; a
    // read of sizes is a synchronization, its time the launches before it.
    if (!bytes || kind == "host" || kind == "control") {
      entry["predicted_us"] = nullptr;
      ++unpredicted;
    } else {
      double memoryUs = static_cast<double>(*bytes) / kBandwidthBytesPerUs;
      double l2Us = work.l2Bytes ? static_cast<double>(*work.l2Bytes) / kL2BytesPerUs : 0.0;
      double computeUs = work.flops ? *work.flops / peakFlopsPerUs(work.unit) : 0.0;
      double us = kLaunchUs + std::max({memoryUs, l2Us, computeUs});
      entry["bound"] = computeUs > std::max(memoryUs, l2Us) ? "compute"
                       : l2Us > memoryUs                    ? "l2"
                                                            : "memory";
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
      {"device", deviceDescription()},
      {"steps", std::move(steps)},
      {"predicted_us", total},
      {"kernel_bytes", kernelBytes},
      {"library_bytes", libraryBytes},
      {"unpredicted_steps", unpredicted}};
}

} // namespace kiln
