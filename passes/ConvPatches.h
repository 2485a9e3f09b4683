//===- ConvPatches.h - a convolution as a matmul of its input's patches -*- C++ -*-===//
//
// A 2-D convolution of one group is a matmul: each output position's window
// of the input (its patch: KH * KW * C values) times the filter stored as
// rows [M, KH * KW * C]. Where a library multiplies a type it does not
// convolve (cuBLASLt's FP8 matmul; cuDNN's FP8 convolutions are graph-API
// only and unconfirmed on the devices kiln targets), the convolution runs as
// that matmul over its input's patches (im2col): data movement ops (a
// channels-last transpose, the padding, one strided slice per filter tap and
// a concat of them) that fuse into the one kernel which writes the patch
// rows, and which quantizes them on the way. That kernel writes each input
// element up to KH * KW times: the cost a library's implicit GEMM does not
// have, paid for the type's faster products.
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_CONVPATCHES_H
#define KILN_PASSES_CONVPATCHES_H

#include "passes/Dequantized.h"

#include "ir/Kiln/KilnDialect.h"

#include <string>

namespace kiln {

/// Builds a convolution's patch matmul in its place.
class ConvPatchBuilder : public IntegerOpBuilder {
public:
  explicit ConvPatchBuilder(ConvOp conv) : IntegerOpBuilder(conv), conv(conv) {}

  /// Why `conv` is no matmul over patches here (a 1-D or 3-D conv, groups,
  /// channels last, a filter of unknown size, input channels or spatial dims
  /// that are not known numbers, an empty dim), or empty.
  static std::string refusal(ConvOp conv);

  /// The patch rows of the conv's input `x` (its input or a value of its
  /// shape, such as the codes it dequantizes): [N * OH * OW, K'] with a row's
  /// columns in (kh, kw, c) order, K' the taps KH * KW * C rounded up to a
  /// multiple of `kMultiple` with columns of 0 (a library's row alignment).
  /// Padding holds 0. Null when an op's shape function refuses.
  mlir::Value patches(mlir::Value x, int64_t kMultiple);

  /// A filter [M, C, KH, KW] (row-major `filter`) as the patches' rows
  /// [M, K'], K' = `paddedTaps`, the columns past the taps 0.
  std::vector<double> filterRows(llvm::ArrayRef<double> filter, int64_t paddedTaps) const;

  /// A product [N * OH * OW, M] of the patches as the conv's result layout
  /// [N, M, OH, OW] (a reshape and a transpose, which fuse into the next
  /// kernel). Null when an op's shape function refuses.
  mlir::Value asConvResult(mlir::Value product);

  /// KH * KW * C.
  int64_t taps() const;
  /// The taps rounded up to a multiple of `multiple`: the patch rows' width.
  int64_t paddedTaps(int64_t multiple) const {
    return (taps() + multiple - 1) / multiple * multiple;
  }
  /// The output channels, M.
  int64_t outputChannels() const;

private:
  mutable ConvOp conv; // mutable: an op handle's accessors are not const
};

} // namespace kiln

#endif // KILN_PASSES_CONVPATCHES_H
