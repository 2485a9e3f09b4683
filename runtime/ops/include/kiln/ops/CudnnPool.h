//===- CudnnPool.h - which pools cuDNN computes ------------------*- C++ -*-===//
//
// One rule on both sides of the artifact: kiln-form-kernels keeps a pool that
// passes it a library step (PoolOp::runsInCudnn; every other pool is a
// generated kernel), and the CUDA executor hands cuDNN a pool step that passes
// it at run time (planPool; the others run on the host). Stated once so that
// the two cannot disagree. No MLIR and no CUDA: both halves include it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_OPS_CUDNNPOOL_H
#define KILN_OPS_CUDNNPOOL_H

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln::ops {

/// A pool as the rule reads it.
struct PoolQuery {
  bool lp = false;         ///< an Lp pool (cuDNN pools max and average only)
  bool cudnnType = false;  ///< its element type is f32, f16, bf16 or f64
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;   ///< empty: 1
  std::vector<int64_t> pads;      ///< empty: 0; else the begins, then the ends
  std::vector<int64_t> dilations; ///< empty: 1
  bool ceilMode = false;
  /// The input's and the result's dims, channels first; nullopt for a dim not
  /// known yet (a symbol, at compile time).
  std::vector<std::optional<int64_t>> in, out;
};

/// Whether cuDNN's pooling computes the pool: max or average over 1 to 3
/// spatial dims, no dilation, symmetric pads smaller than the window, and the
/// output dims of cuDNN's floor formula, 1 + (in + 2 pad - window) / stride.
/// ONNX's ceil_mode can give one more; where a dim is not known yet only a
/// floor-mode pool passes (its dims are the formula's by shape inference).
inline bool cudnnPools(const PoolQuery &q) {
  size_t rank = q.in.size();
  if (rank < 3 || rank > 5 || q.out.size() != rank || q.lp || !q.cudnnType)
    return false;
  size_t spatial = rank - 2;
  if (q.kernel.size() != spatial || (!q.strides.empty() && q.strides.size() != spatial) ||
      (!q.pads.empty() && q.pads.size() != 2 * spatial))
    return false;
  for (int64_t d : q.dilations)
    if (d != 1)
      return false;
  for (size_t s = 0; s < spatial; ++s) {
    int64_t pad = q.pads.empty() ? 0 : q.pads[s];
    int64_t stride = q.strides.empty() ? 1 : q.strides[s];
    if ((!q.pads.empty() && q.pads[s + spatial] != pad) || pad < 0 || pad >= q.kernel[s] ||
        stride < 1)
      return false;
    std::optional<int64_t> in = q.in[2 + s], out = q.out[2 + s];
    if (!in || !out) {
      if (q.ceilMode)
        return false;
      continue;
    }
    int64_t extent = *in + 2 * pad - q.kernel[s];
    if (extent < 0 || 1 + extent / stride != *out)
      return false;
  }
  return true;
}

} // namespace kiln::ops

#endif // KILN_OPS_CUDNNPOOL_H
