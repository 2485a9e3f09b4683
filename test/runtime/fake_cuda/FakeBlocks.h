//===- FakeBlocks.h - the fake driver's kernels at a launch's block size --===//
//
// kiln's host-emulation libraries (host-<hash>.so in the kernel cache) run one
// thread per block. A launch of 256 threads per block of a kernel whose
// threads meet (a barrier, shared memory, a warp shuffle) runs instead its
// source built again with KILN_HOST_BLOCK_THREADS=256 (kiln_device.h's fibers:
// real barriers, shared memory and warp shuffles): kiln-compile writes those
// kernels of each library apart (host-<hash>.threads.cpp) with the compiler
// and flags it used (host-<hash>.flags). The build is kept in the cache as
// fakeblock<N>-<hash>.so, so a suite builds each library once per block size.
// A kernel whose threads never meet computes the same at any block size and
// runs as the library has it (building every kernel twice would double the
// host compiles of every fake-CUDA suite).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_FAKE_BLOCKS_H
#define KILN_TEST_FAKE_BLOCKS_H

#include <cstdint>
#include <string>

namespace kiln::fake {

/// A kernel's launcher built for one block size.
class BlockLauncher {
public:
  using Launch = void (*)(void **args, int64_t grid);
  BlockLauncher(Launch launch, char *fault, void *lock) : launch_(launch), fault_(fault), lock_(lock) {}
  /// Runs the launch's blocks; "" or what its threads did wrong (a barrier
  /// they do not all reach).
  std::string run(void **args, int64_t grid) const;

private:
  Launch launch_;
  char *fault_; ///< the library's kiln_host_block_fault
  void *lock_;  ///< the library's launches, one at a time (its fault is one text)
};

/// Kernel `kernel` of host-emulation library `library` (a host-*.so path) at
/// `block` threads per block, built on first use; nullptr with `error` empty
/// when its threads never meet (the library's own launcher is right), with
/// `error` set when it cannot be built. Safe from any thread; returns quickly
/// once built.
const BlockLauncher *blockLauncher(const std::string &library, const std::string &kernel,
                                   unsigned block, std::string &error);

} // namespace kiln::fake

#endif
