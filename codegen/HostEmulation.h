//===- HostEmulation.h - generated kernels run on the CPU -------*- C++ -*-===//
//
// The emitted CUDA C compiles as plain C++ against the host flavor of the device
// library (one thread per block, blocks as loop iterations with OpenMP across
// them); the shared objects are cached by content hash and loaded with dlopen.
// This is how CI checks generated kernels' numbers without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_HOSTEMULATION_H
#define KILN_CODEGEN_HOSTEMULATION_H

#include "codegen/CudaEmitter.h"
#include "interpreter/Interpreter.h"
#include "kiln/reference/Tensor.h"

#include <map>
#include <memory>

namespace kiln {

/// Where compiled kernels (host libraries, cubins) are cached unless a tool is
/// told otherwise: $KILN_CACHE_DIR, else ~/.cache/kiln.
std::string defaultCacheDir();

class HostKernels {
public:
  ~HostKernels();
  HostKernels(const HostKernels &) = delete;
  HostKernels &operator=(const HostKernels &) = delete;

  /// Compiles `kernels` for the host in translation units of up to `chunkSize`
  /// kernels, `jobs` compilers at a time, reusing shared objects already in
  /// `cacheDir` (default: $KILN_CACHE_DIR, else ~/.cache/kiln), and loads them.
  /// `defines` ("-DKILN_SYM_batch=8") specialize the kernels for a variant.
  static absl::StatusOr<std::unique_ptr<HostKernels>>
  build(const std::vector<GeneratedKernel> &kernels, std::string cacheDir = "",
        int chunkSize = 100, int jobs = 2, const std::vector<std::string> &defines = {});

  /// Runs one kernel: `result` (already shaped) is written; `symbolValues` follow
  /// kernel.symbols.
  absl::Status run(const GeneratedKernel &kernel, const std::vector<const ref::Tensor *> &inputs,
                   ref::Tensor &result, const std::vector<int64_t> &symbolValues) const;

  bool has(const std::string &name) const { return launchers.count(name) != 0; }

  /// A built shared object and the kernels it holds.
  struct Library {
    std::string path;
    std::vector<std::string> kernels;
  };
  /// What build() compiled or found in the cache, in chunk order.
  const std::vector<Library> &libraries() const { return built; }

private:
  HostKernels() = default;
  std::vector<Library> built;
  std::vector<void *> handles;
  std::map<std::string, void (*)(void **, int64_t)> launchers;
};

/// The interpreter hook that runs each kiln.kernel through `kernels` (which must
/// have been built from the same module's kernels).
std::function<mlir::FailureOr<ref::Tensor>(KernelOp, llvm::ArrayRef<ref::Tensor>,
                                           InterpretOptions::Evaluate)>
hostKernelRunner(const HostKernels &kernels);

} // namespace kiln

#endif // KILN_CODEGEN_HOSTEMULATION_H
