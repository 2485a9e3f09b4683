//===- CudaEmitter.h - CUDA C for kiln.kernel regions -----------*- C++ -*-===//
//
// Each kiln.kernel becomes one `extern "C" __global__` function in CUDA C against
// runtime/include/kiln/device/kiln_device.h. The kernel-level representation is
// the region's own kiln ops: every op knows how to compute one element of its
// result from elements of its operands (an index map plus a scalar expression),
// so the emitter walks from the root's element back to the kernel's inputs,
// inlining producers and naming each (value, index) once. See
// docs/architecture.md, "Codegen".
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CUDAEMITTER_H
#define KILN_CODEGEN_CUDAEMITTER_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/JSON.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

class KernelOp;

/// A generated kernel and what a launcher must pass it.
struct GeneratedKernel {
  std::string name;     ///< kiln_<schedule>_<hash of the source>
  std::string source;   ///< the kernel's CUDA C, without the device library include
  /// The kernel's schedule by name (kiln::Schedule: pointwise, reduction, row,
  /// compaction, attention), as reports and kernel names spell it.
  std::string schedule;
  /// Symbols whose values the kernel takes, in parameter order after the
  /// buffers (output first, then the inputs). `-DKILN_SYM_<name>=<value>`
  /// specializes one.
  std::vector<std::string> symbols;
  /// Those of `symbols` the kernel reads from device memory, through a
  /// `const int64_t *kiln_device_sym_<name>` parameter in their place (the
  /// function's `kiln.device_symbols`: a decode step's length, so that the
  /// launch's arguments, and a CUDA graph holding it, stay the same as it
  /// changes).
  std::vector<std::string> deviceSymbols;
  /// One item (a result element, or a row) per block, its threads cooperating;
  /// otherwise one item per thread. Any grid and block size is correct.
  bool blockPerItem = false;
  /// The kernel checks its data and takes a last parameter `int32_t *kiln_error`
  /// (kiln_device.h, KILN_ERROR_*): the word where it reports the first failure.
  bool reportsErrors = false;
  /// The kernel's work items as a dim expression over the symbols: what a launch
  /// sizes its grid by (blocks = items for block-per-item kernels, items / block
  /// threads otherwise). Null: one item per result element.
  mlir::AffineExpr workItems;
  /// Bytes of the kernel scratch a launch uses, as a dim expression; null:
  /// none. The kernel takes `uint8_t *kiln_scratch` after its symbols: a
  /// buffer of the context's that is all zero when the launch begins and
  /// that the kernel leaves all zero (attention's split keys meet there:
  /// kiln_device.h kiln_arrive).
  mlir::AffineExpr scratchBytes;
  /// Floating-point operations per launch as a dim expression, where the
  /// kernel's arithmetic outgrows the bytes it moves (attention); null: a few
  /// per element, memory bound (the roofline in kiln-compile --report).
  mlir::AffineExpr flops;
  /// They run on tensor cores with fp16/bf16 operands (Kernel.flop_unit
  /// Half), not CUDA cores.
  bool halfTensorCoreFlops = false;
  /// Or do so at launches of `tensorCoreMinRows` rows or more, the rows
  /// being `tensorCoreRows` (Kernel.tensor_core_rows); 0: no such switch.
  mlir::AffineExpr tensorCoreRows;
  int64_t tensorCoreMinRows = 0;
  /// The L2 bytes of such a launch (Kernel.tensor_core_l2_bytes); null:
  /// l2Bytes.
  mlir::AffineExpr tensorCoreL2Bytes;
  /// A block's threads meet in it: a barrier, shared memory or a warp
  /// shuffle (the device library's block and warp reductions among them).
  /// Only such kernels can go wrong with the block size, so only they run
  /// at their launch's block size on the fake CUDA driver (HostEmulation.cpp
  /// writes them apart for it).
  bool threadsMeet = false;
  /// Inputs read only in part (Kernel.bounded_reads): input number to the
  /// most elements a launch reads of it.
  /// The input whose bytes the result is (kiln.cache_update's cache): the
  /// kernel writes into them and leaves the rest; -1 for a kernel that writes
  /// a buffer of its own.
  int inPlaceInput = -1;
  std::vector<std::pair<int, mlir::AffineExpr>> boundedReads;
  /// Bytes a launch reads through L2 where more than its buffers (attention's
  /// K/V passes, Kernel.l2_bytes); null otherwise.
  mlir::AffineExpr l2Bytes;
  /// Elements per 128-bit store of a pointwise kernel's vector path (inputs
  /// read at the result's position, or broadcast along outer dims or along
  /// the innermost one); 0 when it has none.
  int vectorWidth = 0;
  /// Inputs that path loads 128 bits at a time (those broadcast along the
  /// innermost dim are one scalar per vector).
  int vectorLoads = 0;
  /// Its index arithmetic is 32-bit (a pointwise kernel of constant sizes
  /// that fit, moving elements by position only); 64-bit otherwise.
  bool index32 = false;
  /// A pointwise kernel with symbols that 32-bit indices would suit once its
  /// sizes are known: the element counts of its buffers that have symbols.
  /// Its source holds the 32-bit body under `#ifdef KILN_INDEX32`, which a
  /// shape-bucket variant defines where index32Fits. Empty otherwise.
  std::vector<mlir::AffineExpr> index32Sizes;
  /// Bytes of one result element as stored (tools/sass-lint.py counts
  /// elements per loop trip from the stores).
  int resultBytes = 0;
  /// Bytes of its largest input one trip of its main loop reads, for a
  /// kernel that streams that input (matmul_nbits' packed weights, a vector
  /// load a chunk, a trip's chunks over its columns); 0 for the others. tools/sass-lint.py divides the
  /// instructions of the shortest such loop by it (its issue time per
  /// streamed byte: a one-row pass).
  int streamBytesATrip = 0;
  /// The model divides integers (Div, Mod, Rem on integer data): a divide
  /// per element that no index simplification removes (tools/sass-lint.py
  /// allows it).
  bool dividesData = false;
  /// The kernel keeps a matrix per thread that is too large for registers
  /// (Det over more than 4x4): local memory by design (tools/sass-lint.py
  /// allows it).
  bool perThreadMatrix = false;
  /// The kernel interpolates (Resize's and GridSample's linear and cubic
  /// modes) with tap positions and weights in double, as the reference does:
  /// more registers than 50% occupancy allows (tools/sass-lint.py reports it
  /// apart).
  bool doubleTaps = false;
};

/// Adds what tools/sass-lint.py reads about `kernel` beside its SASS to `o`
/// (vector_width, result_bytes, divides_data, per_thread_matrix,
/// double_taps): kiln-compile --report's kernels and kiln-conformance
/// --cubin-dir's manifest.
void addLintFacts(llvm::json::Object &o, const GeneratedKernel &kernel);

/// Whether `kernel`'s 32-bit body (GeneratedKernel::index32Sizes) is exact
/// with its symbols fixed to `symbolValues` (a shape-bucket variant's): each
/// of them fixed, and each size and symbol at most 2^31 - 2^25.
bool index32Fits(const GeneratedKernel &kernel, const std::map<std::string, int64_t> &symbolValues);

/// `kernel` as a specialization compiles its 32-bit body (index32Fits):
/// its source between `#define KILN_INDEX32` and `#undef KILN_INDEX32`, so
/// that it builds beside other kernels in one translation unit with the same
/// flags.
GeneratedKernel withIndex32(GeneratedKernel kernel);

/// Emits `kernel`; a diagnostic naming the op codegen cannot handle otherwise.
mlir::FailureOr<GeneratedKernel> emitKernel(KernelOp kernel);

/// Emits every kiln.kernel of `module`, in order.
mlir::FailureOr<std::vector<GeneratedKernel>> emitKernels(mlir::ModuleOp module);

/// The source a compiler sees: the device library include, then the kernels.
std::string kernelTranslationUnit(const std::vector<GeneratedKernel> &kernels);

} // namespace kiln

#endif // KILN_CODEGEN_CUDAEMITTER_H
