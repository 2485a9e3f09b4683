//===- Workspace.h - a library call's workspace, from the context ---------===//
//
// cuBLASLt and cuDNN calls ask for the workspace their algorithm needs; the
// executor answers from the context's, grown to the need (CudaExecutor.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_WORKSPACE_H
#define KILN_RUNTIME_CUDA_WORKSPACE_H

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace kiln::rt {

/// The workspace of `bytes` (at least) that a call's algorithm needs: its
/// address and size (the context's, grown if need be).
using WorkspaceFn = absl::FunctionRef<absl::StatusOr<std::pair<uintptr_t, size_t>>(size_t bytes)>;

} // namespace kiln::rt

#endif // KILN_RUNTIME_CUDA_WORKSPACE_H
