//===- KernelPipelineOptions.h - what the kernel pipeline runs besides its fixed passes -*- C++ -*-===//
//
// A plain struct, free of MLIR, so that the artifact options (codegen/Artifact.h)
// hold it as it is and the driver hands it to buildKernelPipeline (Passes.h)
// without copying field by field.
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_KERNELPIPELINEOPTIONS_H
#define KILN_PASSES_KERNELPIPELINEOPTIONS_H

#include <cstdint>
#include <string>

namespace kiln {

struct KernelPipelineOptions {
  /// kiln-lower-precision's mode (kiln-compile --precision): fp32, tf32,
  /// fp16, bf16 or fp8 (buildArtifact reads the mode the pass recorded on the
  /// function).
  std::string precision = "fp32";
  /// kiln-fp8-matmuls' calibration data sets (kiln-compile --calibrate),
  /// with precision fp8.
  std::string calibration;
  /// kiln-kv-cache-in-place (kiln-compile --kv-cache-in-place): a decoder's
  /// past/present pairs become caches the model updates in place.
  bool kvCacheInPlace = false;
  /// kiln-append-sampler (kiln-compile --sample-on-device): the model also
  /// returns `next_tokens`.
  bool sampleOnDevice = false;
  /// kiln-quantize-weights' bits (kiln-compile --weights int4|int8); 0: off.
  int64_t weightBits = 0;
  /// kiln-quantize-weights' group size (kiln-compile --group-size).
  int64_t weightGroupSize = 128;
};

} // namespace kiln

#endif // KILN_PASSES_KERNELPIPELINEOPTIONS_H
