//===- DeviceLaunch.h - how the CUDA executor launches a kernel -*- C++ -*-===//
//
// The block every generated kernel is launched with on a device, one value
// for the runtime's launches (runtime/src/cuda/CudaExecutor.cpp) and the
// schedules that rely on it (codegen: work a block takes; matmul_nbits'
// kernel takes it as a constant in its device build).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_DEVICELAUNCH_H
#define KILN_ARTIFACT_DEVICELAUNCH_H

namespace kiln::artifact {

/// Threads per block of every device launch of a generated kernel; the
/// device library sizes its shared scratch for it (kiln_device.h's
/// KILN_MAX_BLOCK).
constexpr unsigned kDeviceBlockThreads = 256;

} // namespace kiln::artifact

#endif // KILN_ARTIFACT_DEVICELAUNCH_H
