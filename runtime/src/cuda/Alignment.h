//===- Alignment.h - how aligned a device pointer is ------------*- C++ -*-===//
//
// cuBLASLt's heuristic and cuDNN's tensors are told how aligned each operand
// really is (an arena offset is not the 256 bytes a library may assume).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_ALIGNMENT_H
#define KILN_RUNTIME_CUDA_ALIGNMENT_H

#include <cstdint>

namespace kiln::rt {

/// The largest power of two, up to `most` (a power of two), that divides
/// `address`.
inline uint32_t pointerAlignment(uintptr_t address, uint32_t most) {
  uint32_t a = most;
  while (a > 1 && address % a != 0)
    a /= 2;
  return a;
}

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_ALIGNMENT_H
