//===- DeviceModel.h - the device kiln's roofline predicts for -*- C++ -*-===//
//
// An H200 SXM, as the roofline (driver/Roofline.cpp, `kiln-compile
// --report`) charges a step, and as passes that choose between two forms of
// an op by their predicted time read it. Bandwidth: what streaming kernels
// reach of its 4.8 TB/s HBM3e. Peaks: dense, without sparsity. A launch: the
// stream's cost per kernel or library call without CUDA graphs.
// docs/performance.md says which figures a device has measured (none yet).
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_DEVICEMODEL_H
#define KILN_ARTIFACT_DEVICEMODEL_H

namespace kiln::device_model {

constexpr double kBandwidthBytesPerUs = 4.3e6; // 4.3 TB/s
// L2 reads: an assumption until a GPU measures it (docs/performance.md): a
// microbenchmark of the PCIe H100 (114 SMs) read about 5.5 TB/s from L2;
// the SXM part's 132 SMs at higher clocks, about 7.
constexpr double kL2BytesPerUs = 7e6;     // 7 TB/s
constexpr double kFp32FlopsPerUs = 67e6;  // CUDA cores, fp32 FMA
constexpr double kTf32FlopsPerUs = 495e6; // tensor cores
constexpr double kHalfFlopsPerUs = 989e6; // tensor cores, fp16/bf16 in
constexpr double kInt8OpsPerUs = 1979e6;  // tensor cores, int8 or fp8 (e4m3) in
constexpr double kLaunchUs = 2.0;

} // namespace kiln::device_model

#endif // KILN_ARTIFACT_DEVICEMODEL_H
