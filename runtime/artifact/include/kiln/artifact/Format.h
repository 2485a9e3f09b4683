//===- Format.h - the artifact format's version and layout rules -*- C++ -*-===//
//
// The one definition of the numbers the compiler's writer and the runtime's
// reader must agree on. runtime/schema/kiln_artifact.fbs says when the version
// changes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_FORMAT_H
#define KILN_ARTIFACT_FORMAT_H

#include <cstddef>
#include <cstdint>

namespace kiln::artifact {

/// The artifact format this build writes and reads. 2: typed step tables (a
/// StepOp union) instead of op names with attributes; schema-owned enums.
/// 3: kernels carry their buffers' dims (Kernel.buffer_shapes), checked at load.
/// 4: predicates over the symbols (Model.predicates) that every call checks; a
/// runtime that ignored them would compute with sizes the code does not fit;
/// variants (kernels specialized for symbol values).
/// 5: Conv/Pool.channels_last (NHWC) and the GeluTanh activation: a runtime
/// that ignored them would compute channels-first or skip the GELU.
/// 6: symbols bound by steps (Step.binds: a data-dependent size named for the
/// kernels after it) and control steps (If, Loop, Scan); a runtime that
/// ignored the bindings would launch those kernels with a size of 0.
/// 7: ReadSizes steps (a size the device computed, bound before the kernels
/// it sizes) and the Compaction schedule (the Attention schedule came later,
/// at the end of its enum: compatible growth, an older reader refuses it).
/// 8: a variant's kernels name their entry points after the values they were
/// built for (EntryName.h) and are looked up by the values the Variant states;
/// a 7 reader would look up untagged names and find none.
/// Since 8, without a new number (compatible growth: an older reader refuses
/// what it does not know): ReadSizes.what, and Check steps (facts over sizes
/// steps bind, checked where the step stands) at the end of StepOp; the
/// GeluErf and Silu activations (a MatMul that runs as a cuDNN graph).
/// 9: Kernel.scratch_bytes (a kernel that takes the context's zeroed scratch
/// as a parameter; an 8 reader would launch it without one).
constexpr uint32_t kFormatVersion = 9;

/// The most symbols one variant fixes (the runtime's dispatch key is that wide).
constexpr int kMaxVariantSymbols = 8;

/// The most elements a buffer of a kernel with 32-bit indices may hold (and
/// the largest symbol value such a kernel may be specialized for): a
/// grid-stride loop steps past the end by at most one stride (65535 blocks of
/// 256 threads, under 2^25) before it stops, and that must still fit.
constexpr int64_t kMaxIndex32Elements = (int64_t{1} << 31) - (int64_t{1} << 25);

/// Alignment of weights inside the artifact (a mapped file is used in place).
constexpr size_t kWeightAlignment = 64;

/// The highest rank of a model input or output: the C API's fixed-size dims
/// (KILN_MAX_RANK in kiln/runtime.h). The compiler refuses a model beyond it;
/// intermediates may have any rank.
constexpr int kMaxIoRank = 8;

/// Alignment of every arena slot: enough for 128-bit vector access on a GPU and
/// for cuBLASLt's preferred alignment.
constexpr size_t kSlotAlignment = 256;

} // namespace kiln::artifact

#endif // KILN_ARTIFACT_FORMAT_H
