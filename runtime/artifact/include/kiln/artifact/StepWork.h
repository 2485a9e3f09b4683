//===- StepWork.h - what a plan step must move and compute ------*- C++ -*-===//
//
// The bytes a top-level step must move (its inputs read once, or for a kernel
// that reads one only in part, such as the rows a gather picks, what it reads;
// its results written once), the bytes it reads through L2 where it reads
// more than that (attention's passes over K and V), and the floating-point
// operations it must do, under bound symbols. The compiler's roofline (driver/Roofline.cpp) turns them into
// predicted times; the runtime's profiles into achieved GB/s and TFLOP/s
// beside measured times (kiln-run --profile). One count, so the two agree.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_STEPWORK_H
#define KILN_ARTIFACT_STEPWORK_H

#include "kiln/artifact/Plan.h"

#include <optional>

namespace kiln::artifact {

/// The unit whose peak bounds a step's operations (the artifact's enum, which
/// kernels state as Kernel.flop_unit): Fp32, CUDA cores (most generated
/// kernels, fp32 matmuls and convs); Tf32, tensor cores on TF32 operands
/// (--precision tf32); Half, tensor cores on fp16/bf16 operands (and
/// attention kernels of them); Int8, tensor cores on int8 or e4m3 operands
/// (an int8 or FP8 matmul, an int8 conv).
using FlopUnit = schema::FlopUnit;

struct StepWork {
  /// Null when a size depends on a symbol not bound.
  std::optional<int64_t> bytes;
  /// The elements of its largest buffer: what a kernel's loops stream over
  /// (a per-element instruction count scales by it); null as `bytes`.
  std::optional<int64_t> elements;
  /// Matmuls 2 M N K, convolutions 2 per output element per filter element of
  /// one output channel, kernels what they state (Kernel.flops); null for
  /// everything else (a few operations per element: memory bound).
  std::optional<double> flops;
  FlopUnit unit = FlopUnit::Fp32;
  /// Bytes read through L2 where more than `bytes` (Kernel.l2_bytes: an
  /// attention kernel's K and V once per tile of queries); null otherwise.
  std::optional<int64_t> l2Bytes;
};

/// `step`'s work under `symbols`. Shape steps move nothing (bytes 0).
StepWork stepWork(const Plan &plan, const StepInfo &step, const Bindings &symbols);

/// The library steps: matmuls, convolutions and pools (cuBLASLt, cuDNN) on
/// the CUDA backend.
bool isLibraryStep(schema::StepOp op);

} // namespace kiln::artifact

#endif // KILN_ARTIFACT_STEPWORK_H
