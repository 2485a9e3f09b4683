//===- CompositeOps.td - ops the codegen wants to see whole ---*- tablegen -*-===//
//
// Matmul and conv map onto cuBLASLt and cuDNN; softmax and layer_norm map onto one
// fused row-reduction kernel each. Keeping them whole spares the codegen from
// re-discovering them in a soup of elementwise ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPOSITE_OPS_TD
#define KILN_COMPOSITE_OPS_TD

include "ir/Kiln/KilnAttrs.td"

def Kiln_MatmulOp : Kiln_Op<"matmul", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "runsNarrow"]>]> {
  let summary = "matrix product with numpy batch broadcasting";
  let description = [{
    numpy `matmul`: the last two dims multiply, leading dims broadcast; a 1-D operand
    is promoted to a matrix and the promoted dim dropped from the result. Both
    operands have one element type, which is the result's, except that 8-bit
    integers multiply into `i32` (exact up to K = 2^17, as cuBLASLt's int8
    tensor-core matmul and ONNX's MatMulInteger accumulate; made by
    `--kiln-integer-matmuls` from dequantized operands). Such a product takes
    no `bias` or `activation`. Float8 operands (`f8E4M3FN`, from
    `--kiln-fp8-matmuls`) multiply into `float8_result` (f32, f16 or bf16;
    f32 when absent), accumulating in fp32 as cuBLASLt's FP8 matmul does;
    `alpha` scales the product before the bias (cuBLASLt's alpha: the
    operands' dequantization scales). The fusion pass may give
    it an epilogue cuBLASLt applies: a `bias` of the result's last dim, added to
    every row, or of the result's whole shape (a residual: cuBLASLt's C, beta
    1), then an `activation`. `transpose_lhs` / `transpose_rhs` swap an
    operand's last two dims before the product (set by
    `--kiln-absorb-matmul-transposes`: cuBLASLt reads the operand transposed
    through its layout, so no transpose kernel runs); they need an operand of
    rank >= 2.

    ```mlir
    %r = kiln.matmul %a, %w : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<768x3072xf32>) -> tensor<?x?x3072xf32, #kiln.dims<[batch, seq, 3072]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs, Optional<Kiln_Tensor>:$bias,
                       DefaultValuedAttr<Kiln_ActivationAttr, "::kiln::Activation::none">:$activation,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       OptionalAttr<TypeAttr>:$float8_result);
  let results = (outs Kiln_Tensor:$result);
  let extraClassDeclaration = [{
    /// The result's element type for operands of `operand`: i32 for 8-bit
    /// integers, `float8Result` (f32 when null) for float8, the operand's own
    /// otherwise.
    static ::mlir::Type productElementType(::mlir::Type operand,
                                           ::mlir::Type float8Result = {});
    /// Whether this is an 8-bit integer product into i32 (cuBLASLt's int8
    /// tensor-core matmul; never inside a generated kernel).
    bool isInt8Product();
    /// Whether this is a float8 product (cuBLASLt's FP8 matmul; never inside
    /// a generated kernel).
    bool isFloat8Product();
  }];
}

def Kiln_ConvOp : Kiln_Op<"conv", [
    AttrSizedOperandSegments, DeclareOpInterfaceMethods<Kiln_KernelFacts, ["runsNarrow"]>]> {
  let summary = "N-d grouped convolution, channels first";
  let description = [{
    `input` is `[N, C, D1..Dk]`, `filter` is `[M, C / group, K1..Kk]`, the optional
    `bias` is `[M]`. `strides` and `dilations` have k entries, `pads` has 2k
    (`[begin..., end...]`). The optional `residual` (from the epilogue pass: a
    ResNet block's skip connection) has the result's shape and is added after
    the bias; `activation` (cuDNN's fused conv-bias-activation) applies last:
    `activation(conv(input, filter) + bias + residual)`. Output dim i is
    `(D_i + pb_i + pe_i - dilation_i * (K_i - 1) - 1) floordiv stride_i + 1`.
    With `channels_last` (kiln-select-conv-layout: cuDNN's NHWC), `input`,
    `residual` and the result are `[N, D1..Dk, C]` and `filter` is
    `[M, K1..Kk, C / group]`.

    8-bit integer `input` and `filter` (`--kiln-integer-convs`, from
    dequantized operands) give an f32 result: cuDNN's int8 convolution
    (INT8_EXT_CONFIG), whose int32 sums are rounded once to f32. It is
    channels last (the only layout cuDNN's int8 convolution reads) and takes
    no `bias`, `residual` or `activation`.

    ```mlir
    %y = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<?x3x32x32xf32, #kiln.dims<[n, 3, 32, 32]>>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x32x32xf32, #kiln.dims<[n, 16, 32, 32]>>
    %z = kiln.conv %y, %w2, %b2 residual(%y) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, activation = #kiln<activation relu>} : (...) -> ...
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$filter,
                       Optional<Kiln_FloatTensor>:$bias, Optional<Kiln_FloatTensor>:$residual,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads, DefaultValuedAttr<I64Attr, "1">:$group,
                       DefaultValuedAttr<Kiln_ActivationAttr, "::kiln::Activation::none">:$activation,
                       DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Kiln_FloatTensor:$result);
  let extraClassDeclaration = [{
    /// Whether this is an 8-bit integer convolution into f32 (cuDNN's int8
    /// convolution).
    bool isInt8Conv();
  }];
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? (`residual` `(` $residual^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Kiln_ConvTransposeOp : Kiln_Op<"conv_transpose", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["runsNarrow"]>]> {
  let summary = "N-d grouped transposed convolution, channels first";
  let description = [{
    The gradient of `kiln.conv` with respect to its input (ONNX ConvTranspose):
    `input` is `[N, C, D1..Dk]`, `filter` is `[C, M / group, K1..Kk]`, the optional
    `bias` is `[M]`. Output dim i is
    `stride_i * (D_i - 1) + output_padding_i + dilation_i * (K_i - 1) + 1 - pb_i - pe_i`.

    ```mlir
    %y = kiln.conv_transpose %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, output_padding = array<i64: 0, 0>} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x17x17xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$filter,
                       Optional<Kiln_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$output_padding,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Kiln_FloatTensor:$result);
}

def Kiln_PoolOp : Kiln_Op<"pool", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "runsNarrow"]>]> {
  let summary = "N-d max, average or Lp pooling, channels first";
  let description = [{
    Pools `input` (`[N, C, D1..Dk]`) over windows of `kernel_shape`. With
    `ceil_mode` the output dim rounds up instead of down, and a window that would
    start in the end padding is dropped. `count_include_pad` makes `avg` divide by the
    full window; `p` is the norm of `lp`.

    ```mlir
    %y = kiln.pool %x {kind = #kiln<pool max>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_PoolKindAttr:$kind,
                       DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                       DefaultValuedAttr<I64Attr, "2">:$p,
                       DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let extraClassDeclaration = [{
    /// Whether cuDNN's pooling computes this pool for every shape its type
    /// allows, so it stays a library step: kiln::ops::cudnnPools
    /// (kiln/ops/CudnnPool.h), the rule the CUDA executor's planPool applies
    /// at run time, on the dims known now. Every other pool is a generated
    /// kernel.
    bool runsInCudnn();
  }];
  let results = (outs Kiln_FloatTensor:$result);
}

class Kiln_SoftmaxLikeOp<string mnemonic, string formula>
    : Kiln_Op<mnemonic, [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule", "runsNarrow"]>]> {
  let summary = mnemonic # " along one axis";
  let description = "Computes `" # formula # "` along `axis` (negative counts from the "
    # "end), subtracting the maximum first for stability." # [{

    ```mlir
    }] # "%y = kiln." # mnemonic # [{ %x {axis = -1 : i64} : (tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>) -> tensor<?x?x128xf32, #kiln.dims<[b, s, 128]>>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$result);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::kiln::inferSameShapeAlongAxis(location, getOperationName(),
          adaptor.getInput(), adaptor.getAxis(), inferred);
    }
  }];
}

def Kiln_SoftmaxOp : Kiln_SoftmaxLikeOp<"softmax", "exp(x) / sum(exp(x))">;
def Kiln_LogSoftmaxOp : Kiln_SoftmaxLikeOp<"log_softmax", "x - log(sum(exp(x)))">;

def Kiln_LayerNormOp : Kiln_Op<"layer_norm", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule", "runsNarrow"]>]> {
  let summary = "normalizes over the trailing dims from axis, then scales and shifts";
  let description = [{
    Normalizes `input` over dims `axis..rank-1` to zero mean and unit variance
    (`epsilon` added to the variance), then multiplies by `scale` and adds the
    optional `bias`; both broadcast against those trailing dims (ONNX
    LayerNormalization).

    ```mlir
    %y = kiln.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<?x768xf32, #kiln.dims<[n, 768]>>, tensor<768xf32>, tensor<768xf32>) -> tensor<?x768xf32, #kiln.dims<[n, 768]>>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Optional<Kiln_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
}

def Kiln_RmsNormOp : Kiln_Op<"rms_norm", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule", "runsNarrow"]>]> {
  let summary = "divides by the root mean square over the trailing dims from axis, then scales";
  let description = [{
    `input / sqrt(mean(input^2) + epsilon)` over dims `axis..rank-1` (no mean
    subtracted), times the optional `scale`, which broadcasts against those
    trailing dims (ONNX RMSNormalization). Computed in the compute type (f32
    for f16/bf16 inputs), rounded once to the result. `--kiln-fuse-rms-norm`
    forms it from the mean-of-squares chain exporters write; it runs as one
    row kernel.

    ```mlir
    %y = kiln.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f32} : (tensor<?x2048xbf16, #kiln.dims<[n, 2048]>>, tensor<2048xbf16>) -> tensor<?x2048xbf16, #kiln.dims<[n, 2048]>>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Optional<Kiln_FloatTensor>:$scale,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
}

def Kiln_AttentionOp : Kiln_Op<"attention", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule", "runsNarrow"]>]> {
  let summary = "scaled dot-product attention: softmax(query key^T * scale + mask) value";
  let description = [{
    `query` is `[P.., Sq, D]`, `key` `[P.., Sk, D]` (keys as rows, not
    transposed), `value` `[P.., Sk, Dv]`, with the same leading dims `P` (batch,
    heads), except that key and value may have fewer heads (dim -3, static)
    than the query, a divisor of its count: grouped-query attention, query
    head `h` reading key/value head `h / (query heads / key heads)` (the
    grouping of transformers' `repeat_kv` and ONNX `Attention`; its K/V rows
    are read once for the whole group). The optional `mask` is added to the
    scores, or, boolean (`i1`), keeps the scores where it is true and makes
    them -inf where false (ONNX Attention's boolean mask, onnxruntime's
    GroupQueryAttention's causal and window tests); it broadcasts to
    `[P.., Sq, Sk]` (a causal or padding mask: 0 where a key is seen, -inf
    where not). Per query row, the softmax over the keys (the maximum
    subtracted first, as `kiln.softmax`) weighs the rows of `value`; the
    result is `[P.., Sq, Dv]`. A query row whose every score is -inf (it
    sees no key) is NaN, as `kiln.softmax` makes it, or 0 with
    `zero_masked_rows` (torch's export of `scaled_dot_product_attention`
    guards its weights so: a left-padded row must not carry NaN into the
    values the next layer reads). `--kiln-fuse-attention` forms it from the
    matmul/scale/mask/softmax/matmul chain exporters write; it runs as one
    kernel that never writes the scores.

    ```mlir
    %o = kiln.attention %q, %k, %v {scale = 0.125 : f64} : (tensor<?x12x?x64xf32, #kiln.dims<[b, 12, s, 64]>>, tensor<?x12x?x64xf32, #kiln.dims<[b, 12, s, 64]>>, tensor<?x12x?x64xf32, #kiln.dims<[b, 12, s, 64]>>) -> tensor<?x12x?x64xf32, #kiln.dims<[b, 12, s, 64]>>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$query, Kiln_FloatTensor:$key,
                       Kiln_FloatTensor:$value, Optional<Kiln_Tensor>:$mask,
                       F64Attr:$scale, UnitAttr:$zero_masked_rows);
  let results = (outs Kiln_FloatTensor:$result);
}

def Kiln_MatmulNBitsOp : Kiln_Op<"matmul_nbits", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule", "fusesProducers", "runsNarrow"]>]> {
  let summary = "matrix product with weights of 2, 4 or 8 bits in blocks along K";
  let description = [{
    `input` `[.., K]` times the transpose of the dequantized weights, `[.., N]`
    in the input's type: onnxruntime's `MatMulNBits`. `weights` is `[N,
    blocks, block_size * bits / 8]` bytes, each column's K codes in blocks of
    `block_size` (`blocks` = ceil(K / block_size); the last block's padding
    is never read), packed low bits first. Code `q` of column `n` in block `j`
    stands for `(q - z) * scales[n, j]`, where `z` is `2^(bits - 1)` without
    `zero_points`, the `bits`-wide field `j` of row `n` of packed bytes
    `[N, ceil(blocks * bits / 8)]` (ui8), or `zero_points[n, j]` when it
    is float `[N, blocks]`. The products accumulate in fp32; the optional
    `bias` (a vector `[N]`, or a residual of the result's shape; the
    input's type) is added to them before the result is rounded to its
    type (onnxruntime's bias input; `--kiln-absorb-epilogues` moves a
    following add in). It roots a
    kernel of its own (codegen/ScheduleMatmulNBits.cpp) that reads the
    packed bytes and dequantizes in registers: at decode sizes (a few rows)
    the weights are read once, which is the point of quantizing them.

    With `glu` (a gated linear unit: SwiGLU's `silu(x Wg) * (x Wu)`, which
    `--kiln-merge-sibling-matmuls` forms from the two products) the N
    columns come in groups of 16, 8 gate columns and then those 8 gates' up
    columns, and the result has N / 2 columns: column `8 g + i` is
    `silu(c[16 g + i]) * c[16 g + 8 + i]`, each `c` with its bias added (a
    vector; no residual), in fp32, rounded once. N must be a multiple of 16.
    A thread of the kernel holds a gate and its up column together (the
    tensor-core tile's lane holds columns 8 apart), so the gated product is
    its epilogue and the N columns are never stored.

    ```mlir
    %y = kiln.matmul_nbits %x, %w, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x?x2048xf32, #kiln.dims<[b, s, 2048]>>, tensor<512x64x16xui8>, tensor<512x64xf32>) -> tensor<?x?x512xf32, #kiln.dims<[b, s, 512]>>
    %z = kiln.matmul_nbits %x, %w, %s, %zp bias(%r) {bits = 4 : i64, block_size = 32 : i64} : (...) -> ...
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, RankedTensorOf<[UI8]>:$weights,
                       Kiln_FloatTensor:$scales, Optional<Kiln_Tensor>:$zero_points,
                       Optional<Kiln_FloatTensor>:$bias, I64Attr:$bits, I64Attr:$block_size,
                       UnitAttr:$glu);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weights `,` $scales (`,` $zero_points^)? (`bias` `(` $bias^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

#endif // KILN_COMPOSITE_OPS_TD
