//===- Passes.td - every kiln pass ----------------------------*- tablegen -*-===//

#ifndef KILN_PASSES_TD
#define KILN_PASSES_TD

include "mlir/Pass/PassBase.td"

def InferShapesPass : Pass<"kiln-infer-shapes", "::mlir::func::FuncOp"> {
  let summary = "Infers and refines symbolic shapes through a function";
  let description = [{
    Walks a function in order and gives every value the most refined type its shape
    function proves:

    - Dynamic dims of the arguments that carry no symbol get a fresh one
      (`arg0_d1`), so everything downstream is symbolic rather than `?`
      (with `bind-arg-symbols`, the default).
    - Shape computations (shape_of, gather, concat, arithmetic on sizes) fold to
      constants and `kiln.symbolic_constant`s as it goes, so a reshape whose target
      an exporter computed at run time gets a symbolic result type.
    - Result types are replaced by the inferred ones where those know more. A user
      outside the kiln dialect that needs the old type gets a `tensor.cast` back to
      it; `func.return` instead updates the function's result types.

    A declared type that contradicts its inferred one is a verifier error, so the
    pass never loses information: it only turns `?` into sizes.
  }];
  let options = [
    Option<"bindArgSymbols", "bind-arg-symbols", "bool", /*default=*/"true",
           "Give every unnamed dynamic argument dim a fresh symbol">
  ];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::tensor::TensorDialect"];
}

def CheckTensorSizesPass : Pass<"kiln-check-tensor-sizes", "::mlir::ModuleOp"> {
  let summary = "Refuses tensors whose static size overflows or exceeds a limit";
  let description = [{
    Every value with static dims (results, block arguments, function arguments)
    whose element count or byte count does not fit 64 bits, or whose bytes exceed
    `max-bytes`, is an error at the op that produces it: a ConstantOfShape,
    Expand, Tile, Pad or Resize to an absurd size fails at compile time instead
    of wrapping into a small arena. Dims that are symbolic or unknown are checked
    by the runtime when their values are known. kiln-compile runs this check
    after import and after the graph pipeline (`--max-tensor-bytes`).
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "uint64_t", /*default=*/"uint64_t(1) << 36",
           "The largest tensor allowed, in bytes">
  ];
}

def MaterializeGuardsPass : Pass<"kiln-materialize-guards", "::mlir::func::FuncOp"> {
  let summary = "Turns the shape facts shape functions assumed into kiln.guard ops";
  let description = [{
    Shape functions take some facts about symbolic dims on trust: two dims that
    must match are taken equal (matmul's contraction, concat's other dims, conv
    channels), a symbolic dim broadcast against another is taken to be 1 or
    equal, slice positions are taken to lie inside their dim, and a reshape's
    element counts are taken equal (an exporter that baked an example's sizes into
    a reshape breaks this at other sizes). A declared result dim that differs from
    the inferred one is kept as an assumption as well. This pass runs each op's
    shape function again, collecting those facts, and puts every distinct one at
    the top of the function as a `kiln.guard`, cheapest to evaluate first, named by
    the first op that relied on it. A fact that can never hold is an error. The
    runtime checks the guards on every call, after binding the symbols, and fails
    a call that breaks one with the guard, its reason and the input dims.
    Rerunning the pass collects the existing guards again (idempotent). Bodies of
    if/loop/scan are not guarded yet.

    Facts over symbols a step binds (kiln-name-unknown-dims: a size read from
    the device, a host step's result) cannot be checked when a call starts.
    The pass puts each such fact of a top-level op right before the op, where
    those sizes are bound: the artifact makes it a check step there, and
    kiln-form-kernels may then make the op a kernel. It runs once more after
    kiln-sizes-on-device for them; guards already placed so stay where they
    are. A fact over a symbol the op itself binds is not guarded (the op
    stays a host step, which checks its operands as it runs).
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def MarkIndependentRowsPass : Pass<"kiln-mark-independent-rows", "::mlir::func::FuncOp"> {
  let summary = "Proves that requests may be batched along the first dim";
  let description = [{
    A server that batches requests joins them along the first dim of every
    input and splits the outputs the same way, which is right only when row i
    of every output depends on row i of the inputs alone. When the first dim
    of every argument and result is one symbol, this pass tracks where that
    symbol's rows sit through every op (elementwise ops broadcast over them,
    matmuls keep them in a batch dim or in M, reductions and normalizations
    must run along other dims, reshapes may merge or split them with the dims
    after them, a size read as data mixes them) and, when every result has
    them as its first dim, records the symbol as `kiln.independent_rows` on
    the function. Otherwise it records nothing: a model that normalizes over
    the batch, or is sequence-first, is not batched.

    ```mlir
    func.func @f(%x: tensor<?x16xf32, #kiln.dims<[batch, 16]>>) -> ... attributes {kiln.independent_rows = ["batch"]}
    ```
  }];
}

def FormKernelsPass : Pass<"kiln-form-kernels", "::mlir::func::FuncOp"> {
  let summary = "Groups graph ops into kiln.kernel regions for codegen";
  let description = [{
    Walks the function from its end. Every op codegen can generate (elementwise,
    compare, select, cast, broadcast_to, transpose, reshape, slice, concat, pad,
    gather, gather_elements; reduce, arg_reduce, softmax, log_softmax and
    layer_norm as roots) that no kernel
    has taken starts a kernel as its root. A producer joins the kernel when codegen
    can inline it (not a reduction: inlining one would recompute it per element)
    and every user of it is already in that kernel; a producer with users
    elsewhere is materialized by a kernel of its own rather than recomputed.
    Splat constants are copied into every kernel that reads them. Values with dims
    nothing is known about, and element types codegen lacks, stay outside kernels.
    Matmul, conv, pooling and the irregular ops stay library ops (run
    `--kiln-absorb-epilogues` first to give them their epilogues).

    A kernel's schedule follows its root: `pointwise`, `reduction` (kiln.reduce)
    (kiln.reduce, kiln.arg_reduce) or `row` (softmax, log_softmax, layer_norm,
    rms_norm).
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def NameUnknownDimsPass : Pass<"kiln-name-unknown-dims", "::mlir::func::FuncOp"> {
  let summary = "Names each data-dependent dim with a symbol its step binds at run time";
  let description = [{
    A dim no symbol expression states (`?`: a NonZero's count, a slice whose
    bounds are data, a size computed from data) keeps every op after it off the
    kernels, which need their sizes as parameters. This pass walks the
    function's top level in order, re-infers each op's types from its (already
    named) operands, and gives every dim still unknown a fresh symbol,
    recording on the op `kiln.binds_dims = [[result, dim, "symbol"], ...]`. The
    op stays a host step (kiln-form-kernels leaves it alone); the runtime binds
    the symbol from the result the step computed (artifact Step.binds), and the
    ops after it compute with that symbol as with any other. Facts the later
    ops' shape functions assume about such symbols are not guards (nothing
    binds them before the call starts): an op relying on one stays a host step.
    Bodies of control flow are left as they are (a body's step would bind its
    symbol once per iteration).
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def SizesOnDevicePass : Pass<"kiln-sizes-on-device", "::mlir::func::FuncOp"> {
  let summary = "Computes data-dependent sizes on the device and reads back only the size";
  let description = [{
    Runs after `--kiln-name-unknown-dims`. An op whose result size only the
    data decides would run on the host (on CUDA: its inputs copied down, its
    results up). Where the computation fits generated kernels, this pass
    computes the size on the device and reads back only it:

    - `kiln.non_zero %x` becomes `kiln.count_non_zero` (non-zeros per chunk of
      the row-major order), a `kiln.reduce` sum of the counts,
      `kiln.read_sizes` binding the count's symbol to that sum, and
      `kiln.compact_non_zero` (each chunk's indices after the chunks before
      it), sized by the symbol;
    - `kiln.compress %x, %condition` becomes that non_zero of the condition,
      flattened, and a `kiln.gather` of `%x` (flattened without an axis) by it;
      the reference refuses a condition longer than the axis, so where the
      symbols do not prove it no longer that is a `kiln.guard` (over the
      inputs' symbols; otherwise the op stays a host step);
    - `kiln.unique` becomes compares of every element (slice, along an axis)
      with every other fused into reductions (first occurrences, ranks: the
      inverse indices), the distinct count read back, then per-output
      reductions (first positions, counts) and a gather (O(n^2) work, as the
      top_k kernel's);
    - `kiln.non_max_suppression` becomes score ranks (compares and a sum),
      `kiln.nms_select` (the greedy selection per batch and class row, a
      kernel) and the non_zero of its taken entries, listed with a gather;
    - `kiln.top_k` whose `k` is computed at run time gets
      `kiln.read_sizes %k` binding the symbol both results are sized by, and
      reads `k` as that symbol from then on.

    The symbols are those kiln-name-unknown-dims named (the ops' own
    `kiln.binds_dims` goes away: the read binds them first), so every op after
    is unchanged; kiln-form-kernels then makes the new ops kernels. Inputs of
    an element type kernels do not handle, or with dims nothing names, stay
    host steps. Bodies of control flow are left alone (a body's step would
    bind its symbol once per iteration).
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FoldConvAffinePass : Pass<"kiln-fold-conv-affine", "::mlir::func::FuncOp"> {
  let summary = "Folds per-channel constant arithmetic after a conv (batch norm) into its weights";
  let description = [{
    A `kiln.conv` with constant filter (and bias, if any) whose only user
    multiplies, adds or subtracts a constant that varies only along the output
    channels (a scalar, `[C, 1, 1]`, `[1, C, 1, 1]`, ...) takes it into new
    filter and bias constants, repeatedly: an inference batch norm, which
    imports as `(x - mean) * factor + bias`, disappears into the conv before it,
    at any weight size. f32 and f64; the conv must not have an activation yet
    (run before `--kiln-absorb-epilogues`).
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseAttentionPass : Pass<"kiln-fuse-attention", "::mlir::func::FuncOp"> {
  let summary = "Forms kiln.attention from the matmul/scale/mask/softmax/matmul chain";
  let description = [{
    `matmul(softmax(matmul(q, kT) * scale + mask), v)`, with the scale a
    division or multiplication by a one-element constant (or none), the mask
    an optional addend of the scores' shape or one that broadcasts to it, the
    softmax over the last dim (for f16/bf16 scores optionally in f32 between
    a cast up and a cast back, as the exports write it), plain matmuls (no bias, activation or
    transposed left operand) and every intermediate read only by the chain,
    becomes `kiln.attention(q, k, v, mask) {scale}`. `k` is `kT` transposed
    back, folded into the transpose that made `kT` (or `kT`'s input when the
    scores matmul reads it transposed, or a reshape of `k` when `kT` is
    reshape-transpose-reshape regrouping the leading dims only, as torch's
    export writes it). A multiplication of `q` or `kT` by a one-element
    constant goes into the scale; weights guarded as `select(is_nan(p), 0,
    p)` (torch's export) give `zero_masked_rows`. q, kT and v must share their leading
    dims (no broadcasting matmul) and have static feature dims of at most
    256, what the attention kernel's tiles hold. The mask may also be boolean,
    as `select(seen, scores, -inf)` writes it; and q, kT, v may be [.., H,
    G, S, D], [.., H, 1, D, T], [.., H, 1, T, Dv], the matmuls broadcasting
    each key/value head over G query heads (onnxruntime's
    GroupQueryAttention as kiln's importer expands it): the attention then
    takes q as [.., H * G, S, D] and H key/value heads, its mask merged or
    dropped along (H, G) likewise, and its result is split back. Then each attention whose
    key and value are both repeated for grouped-query heads
    (`reshape(broadcast_to(reshape(x, [.., H, 1, S, D]), [.., H, G, S, D]),
    [.., H * G, S, D])`, transformers' repeat_kv) reads them before the
    repeat: H key/value heads, each read once for its G query heads. Runs
    before `--kiln-absorb-matmul-transposes` and the precision mode.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseRmsNormPass : Pass<"kiln-fuse-rms-norm", "::mlir::func::FuncOp"> {
  let summary = "Forms kiln.rms_norm from the mean-of-squares chain";
  let description = [{
    `x * rsqrt(mean(x^2) + eps)` (the root also as `reciprocal(sqrt(.))`, or
    `x / sqrt(.)`; the square as `pow(x, 2)` or `x * x`), the mean a
    `kiln.reduce` over the trailing dims from some axis keeping them, `eps` a
    non-negative scalar constant, every intermediate read only by the chain,
    becomes `kiln.rms_norm(x) {axis, epsilon}`. When x is an f16/bf16 value
    cast up to f32 and the result is cast back to that type, the op reads the
    narrow value and yields the narrow result (it computes in f32 and rounds
    once). A product with a tensor of the result's element type over the
    normalized dims after it becomes the op's `scale`. Runs beside
    `--kiln-fuse-attention`, before the precision mode.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KvCacheInPlacePass : Pass<"kiln-kv-cache-in-place", "::mlir::func::FuncOp"> {
  let summary = "Turns a decoder's past/present KV cache pairs into caches updated in place";
  let description = [{
    Each input read only by `present = kiln.concat(past, new)` along a symbolic
    dim `past`, the present returned, becomes the cache itself: its dim there
    becomes a fresh symbol `cache_capacity`, the present becomes
    `kiln.cache_update(cache, new, past)` (returned: the output is the input's
    buffer with the new rows written) and the present's other readers read a
    slice of its first `past + new` rows. `past` is bound by no input then:
    it becomes `total - new` everywhere, `total` the length of the input named
    `attention_mask` ([batch, total], the past and the new tokens). Guards:
    `total <= cache_capacity`, `new <= total`. A model without such pairs, or
    without that mask, is an error: kiln-compile --kv-cache-in-place asked for
    it. Runs after `--kiln-fuse-attention` (attention then reads the slice
    inside its kernel) and before the precision mode.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def AppendSamplerPass : Pass<"kiln-append-sampler", "::mlir::func::FuncOp"> {
  let summary = "Adds each sequence's next-token choice to a decoder (kiln.sample_tokens)";
  let description = [{
    A model returning `logits` [batch, positions, vocabulary] also returns
    `next_tokens` [batch] (i64), `kiln.sample_tokens` over the logits of each
    sequence's chosen position, which become the `logits` output ([batch, 1,
    vocabulary]: when the logits are casts of a matmul of [batch, positions,
    hidden] by a 2-D weight, that matmul runs on the chosen hidden rows
    alone; otherwise the rows are gathered from the logits), and
    takes five more inputs: `sample_positions` [batch] (i64, which position
    each sequence chooses from), `sample_uniform` [batch] (f32, the host's
    draw in [0, 1)), and the scalars `sample_temperature` (f32),
    `sample_top_k` (i64) and `sample_top_p` (f32). A model without `logits`
    of that form, or with a `next_tokens` output or `sample_*` input already,
    is an error: kiln-compile --sample-on-device asked for it. Runs after the
    precision mode, so that its inputs stay f32.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def AbsorbMatmulTransposesPass : Pass<"kiln-absorb-matmul-transposes", "::mlir::func::FuncOp"> {
  let summary = "Turns transposes of matmul operands into the matmul's layout flags";
  let description = [{
    A `kiln.transpose` that swaps exactly the last two dims of a `kiln.matmul`
    operand is absorbed: the matmul reads the transpose's input and toggles
    `transpose_lhs` or `transpose_rhs`, which cuBLASLt applies through its
    layouts (and the host path as a transposed view), so no transpose kernel
    runs. A transpose with other users stays for them. Runs before
    `--kiln-form-kernels`, which would otherwise give the transpose a kernel.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def IntegerConvsPass : Pass<"kiln-integer-convs", "::mlir::func::FuncOp"> {
  let summary = "Turns convolutions of dequantized 8-bit tensors into int8 cuDNN convolutions";
  let description = [{
    A 2-D `kiln.conv` of one group of `(x - zx) * sx` by `(w - zw) * sw`
    (DequantizeLinear as the importer writes it: `x` of 8-bit integers with
    one scale and zero point, `w` a constant of 8-bit integers with one
    scale or one an output channel and zero points of 0), input and output
    channels known multiples of 4, becomes a channels-last `kiln.conv` of
    the int8 operands into f32 (cuDNN's int8 convolution, INT8_EXT_CONFIG):
    `x` padded with `zx` explicitly (what a dequantized 0 is; the conv then
    pads nothing) and transposed to NHWC, the filter stored `[M, KH, KW, C]`,
    the result transposed back, then `- zx * sum(w[m])`, times
    `sx * sw[m]`, plus the conv's bias. uint8 operands are stored minus 128
    as int8. Other convs stay float and are listed in the function's
    `kiln.float_quantized_ops`. Runs first in the graph pipeline, with
    `--kiln-integer-matmuls`.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def IntegerMatmulsPass : Pass<"kiln-integer-matmuls", "::mlir::func::FuncOp"> {
  let summary = "Turns matmuls of dequantized 8-bit tensors into int8 products into int32";
  let description = [{
    A `kiln.matmul` of `(a - za) * sa` and `(b - zb) * sb` (DequantizeLinear
    and QLinearMatMul as the importer writes them: `a`, `b` of 8-bit
    integers, `sa`, `za` one value, `sb`, `zb` one value or one a column; or
    MatMulInteger's `a - za` and `b - zb` in i32, with no scale) becomes `kiln.matmul` of the
    int8 operands into i32 (cuBLASLt's int8 tensor cores, in its only layout:
    the right operand stored `[.., N, K]`, `transpose_rhs`), the zero points'
    terms (`- zb * rowsum(a) - za * colsum(b - zb)`, a constant for a
    constant `b`) added in i32, then one multiply by `sa * sb` into the
    matmul's float type. uint8 operands are stored minus 128 as int8. Other
    matmuls, and those whose K or N is not a known multiple of 4 (cuBLASLt's
    rule) or whose sums could overflow int32, are left alone. FP8 Q/DQ
    (`a`, `b` of e4m3fn, zero points 0, `b` a constant weight, K a multiple
    of 16 and N of 8) becomes cuBLASLt's FP8 matmul instead: `b` stored
    `[N, K]`, `alpha` the scales' product (a scale a column multiplies the
    result), where `float8` says every target GPU has FP8 tensor cores
    (sm_89 or newer; off, such matmuls stay float and are recorded). Runs
    before canonicalization, which would fold a constant weight's
    dequantization into a float constant.
  }];
  let options = [
    Option<"float8", "float8", "bool", /*default=*/"false",
           "FP8 Q/DQ matmuls become cuBLASLt FP8 calls (every target sm_89 or newer)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def QuantizeWeightsPass : Pass<"kiln-quantize-weights", "::mlir::func::FuncOp"> {
  let summary = "Quantizes constant matmul weights to 4 or 8 bits in blocks (kiln.matmul_nbits)";
  let description = [{
    `kiln-compile --weights int4|int8 [--group-size N]`. A `kiln.matmul`
    whose right operand is a constant float matrix (`[K, N]`, or `[N, K]`
    read with `transpose_rhs`), with no epilogue yet, becomes a
    `kiln.matmul_nbits` of the same input: per output column, blocks of
    `group-size` along K, each block's range widened to hold 0 over the
    `2^bits` codes (round to nearest), a scale in the weight's type (or
    the narrow type `precision` will store an fp32 model in; rounded up) and
    a packed zero point a block. Other matmuls are left alone. Runs after
    `--kiln-absorb-matmul-transposes` and before `--kiln-absorb-epilogues`
    and `--kiln-lower-precision` (it reads the weights as the model has them).
  }];
  let options = [
    Option<"bits", "bits", "int64_t", /*default=*/"4", "4 or 8">,
    Option<"groupSize", "group-size", "int64_t", /*default=*/"128",
           "weights a scale covers along K: a power of 2 from 16 to 65536">,
    Option<"precision", "precision", "std::string", /*default=*/"\"fp32\"",
           "the precision mode to come (kiln-lower-precision's): with fp16 or bf16, an "
           "fp32 model's scales are stored narrow already">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def SymmetricConvPadsPass : Pass<"kiln-symmetric-conv-pads", "::mlir::func::FuncOp"> {
  let summary = "Splits asymmetric conv pads into a symmetric library call and a pad or slice";
  let description = [{
    cuDNN pads each spatial dim by one amount at both ends. A `kiln.conv` whose
    pads differ at the two ends keeps the smaller of each pair and reads its
    input through a zero `kiln.pad` of the rest (a generated kernel); a
    `kiln.conv_transpose`, whose pads crop its result, keeps the smaller pads
    and a `kiln.slice` crops the rest. Symmetric convs are left alone.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def SelectConvLayoutPass : Pass<"kiln-select-conv-layout", "::mlir::func::FuncOp"> {
  let summary = "Picks NCHW or NHWC per convolution (cuDNN's tensor-core layout for fp16/bf16)";
  let description = [{
    The cost rule (docs/precision.md, layouts): a 2-D `kiln.conv` on f16 or bf16
    data with one group and input and output channels both static multiples of
    8 runs channels last (`channels_last`: NHWC activations, KRSC filter), where
    cuDNN's tensor-core kernels read it without transposing; every other conv
    (fp32/f64, where NCHW kernels are as fast; grouped and depthwise convs;
    channel counts tensor cores would pad) stays NCHW. A chosen conv reads its
    input (and residual) through a transpose to NHWC and its result goes back
    through a transpose to NCHW; a constant filter is transposed at compile time.
    Transposes that meet (an NHWC conv feeding another) compose away; the
    others are generated kernels or fuse into the pointwise kernels next to
    them. A 2-D pool cuDNN runs whose input comes from an NHWC conv pools the
    NHWC tensor (`channels_last`), so conv-pool-conv keeps NHWC throughout.
    `kiln-compile --report` shows each conv's layout.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def MergeSiblingMatmulsPass : Pass<"kiln-merge-sibling-matmuls", "::mlir::func::FuncOp"> {
  let summary = "Merges matmuls of one input by constant weights (Q, K, V) into one";
  let description = [{
    `kiln.matmul`s at the function's top level with the same left operand (and
    `transpose_lhs`), the same activation, and constant 2-D f64, f32, f16 or
    bf16 right operands (their bytes are moved, not converted) with as many
    rows become one matmul by the weights side by side
    (their biases likewise, zeros where a member had none), and each member's
    result a `kiln.slice` of the last dim, which the kernels reading it take in
    place. HuggingFace-style Q, K and V projections become one cuBLASLt call.
    `kiln.matmul_nbits` of one input with the same bits, block size and
    blocks, constant weights, scales and zero points of one kind (or none)
    and no bias or a constant vector one merge likewise: their weights,
    scales and zero points (a row a column) one after the other, one GEMV
    kernel for the group. Before that, two such products whose only reader
    is SwiGLU's gate, `silu(g) * u` (`g * sigmoid(g)`), with codes below 8
    bits and a multiple of 8 columns each, become one
    `kiln.matmul_nbits {glu}`: their rows interleaved by 8, the gated
    product its kernel's epilogue (`gates=false` leaves them siblings: the
    baseline a benchmark compares against).
    Runs after `--kiln-absorb-epilogues`, so the biases and ReLUs ride along.
  }];
  let options = [
    Option<"gates", "gates", "bool", /*default=*/"true",
           "fuse SwiGLU's gate over two weight-only products into one gated product">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def AbsorbEpiloguesPass : Pass<"kiln-absorb-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Moves the epilogues cuBLASLt and cuDNN fuse into matmul and conv";
  let description = [{
    A matmul whose only user adds a bias vector over its last dim, or a
    residual of its result's type (cuBLASLt's C with beta 1: a transformer's
    `x + proj(attn)` runs no add kernel), takes it as its `bias` operand, and
    then a following ReLU or tanh-form GELU as its `activation` (cuBLASLt's
    epilogues), or an exact (erf) GELU or a SiLU `x * sigmoid(x)` that is
    not a SwiGLU gate multiplying another matmul's result (a cuDNN
    graph: matmul and pointwise ops; f16 and bf16 always, f32 only where the
    precision mode allows TF32 or narrows it, since cuDNN's fused matmuls run
    f32 on TF32 tensor cores); a conv
    takes a following ReLU, or, when it has a bias, a residual add of a tensor
    of its result's type followed by a ReLU (its `residual` operand: cuDNN's
    fused conv-bias-activation). A `kiln.matmul_nbits` takes a following add
    of a vector over its last dim or of a residual as its `bias` (its kernel
    adds it). Only float types, only when the library op is the
    value's one user (the unfused value is not needed elsewhere). Runs before
    `--kiln-form-kernels`, which would otherwise give those ops kernels of their
    own.
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"fp32\"",
           "the precision mode to come (kiln-lower-precision's): fp32 keeps an f32 "
           "matmul's erf GELU and SiLU as kernels">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def Fp8MatmulsPass : Pass<"kiln-fp8-matmuls", "::mlir::func::FuncOp"> {
  let summary = "Matmuls and convs by constant weights on FP8 tensor cores, scales from calibration";
  let description = [{
    `kiln-compile --precision fp8 --calibrate DIR`. A `kiln.matmul` of an f32
    activation (not transposed) by a constant f32 matrix, K a multiple of 16
    and N of 8, with no epilogue or cuBLASLt's (bias, relu, gelu_tanh),
    becomes a float8 product: the weight divided by its scale (the power of
    two at or above its largest magnitude over 448) and rounded to
    `f8E4M3FN`, stored `[N, K]` (`transpose_rhs`); the activation multiplied
    by the inverse of its scale (the same of the largest magnitude it reaches
    when the float64 reference interpreter runs the function on each data set
    of `calibration`) and cast
    to `f8E4M3FN`, saturating (the cast marked `kiln.fp8_operand`); `alpha`
    the two scales' product. A 2-D `kiln.conv` of one group by a constant f32
    filter, channels first, its channels and spatial dims static and its
    output channels a multiple of 8, becomes the same product over its
    input's patches (passes/ConvPatches.h: a transpose to channels last, the
    padding, a slice a filter tap, their concat along the channels and a
    reshape to rows of KH * KW * C, padded to a multiple of 16 with zeros),
    the filter stored as rows `[M, K']` in the patches' order, the conv's
    bias (and ReLU, unless a residual comes first) in the call, the result
    reshaped and transposed back, then the residual added and the ReLU.
    A conv is taken only where the device model (kiln/artifact/DeviceModel.h)
    predicts the patch kernel and the FP8 product (and with a residual, the
    sum's own kernel) faster than the conv in bf16 (cuDNN's implicit GEMM,
    which reads its input once), per output position: at a large batch
    where the batch is symbolic, with the patch kernel's launch and the
    filters' bytes shared by the positions of a static batch
    (`every-conv` takes each conv that maps).
    Other matmuls and convs, and those inside region bodies,
    are left alone. An error when a matmul or conv would be rewritten and
    `calibration` is empty, names no data set, or a data set does not run, or
    when a matmul's or conv's activation is infinite or NaN there. Runs before `--kiln-lower-precision` (whose
    bf16 mode then gives the products a bf16 `float8_result`).
  }];
  let options = [
    Option<"calibration", "calibration", "std::string", /*default=*/"\"\"",
           "a folder of data sets (test_data_set_N/input_K.pb or .npy), or one data set">,
    Option<"everyConv", "every-conv", "bool", /*default=*/"false",
           "rewrite every conv that maps, not only those the device model predicts faster "
           "(tests of the rewrite itself)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def LowerPrecisionPass : Pass<"kiln-lower-precision", "::mlir::func::FuncOp"> {
  let summary = "Stores weights and activations in fp16/bf16, or allows TF32 (--precision)";
  let description = [{
    `precision=fp16|bf16`: every fp32 constant whose users all run narrow is
    rewritten in the narrow type (rounded to nearest even), fp32 inputs are
    cast once at entry and outputs cast back before the return, and the ops
    that take float data and give the same type (elementwise ops, matmul,
    conv, conv transpose, pool, softmax, log-softmax, layer norm, data
    movement) get narrow operands and results. Everything else keeps fp32
    (reductions and cumulative sums, whose results grow with the row; ranges
    and resize, whose float operands are positions and scales; region ops):
    narrow operands are cast back first. A cast to f32 casts to the narrow
    type instead. Generated kernels still compute in fp32 registers and
    library steps accumulate in fp32. `precision=tf32` changes no type;
    like the narrow modes it records `kiln.precision` on the function, which
    lets matmul and conv steps round fp32 operands to TF32. `fp32` (the
    default) does nothing. An f32 matmul the narrow modes keep in f32 whose
    activation is the erf GELU or SiLU (cuDNN graphs, which would read its
    operands as TF32) gets that activation back as elementwise ops after it.
    Runs after the passes that rewrite weights in
    fp32/f64 (batch norm folding, sibling-matmul merging).
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"fp32\"",
           "fp32, tf32, fp16 or bf16">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def SplitReductionsPass : Pass<"kiln-split-reductions", "::mlir::func::FuncOp"> {
  let summary = "Splits long trailing reductions to few results into two";
  let description = [{
    A `kiln.reduce` over trailing axes of a static input, with at least 65536
    elements per result and at most 64 results, becomes a reshape into equal
    chunks (a divisor between 64 and 1024), a reduction per chunk and one over the
    partials, so many blocks share the work instead of a handful. Equal chunks
    keep `mean` exact.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

#endif // KILN_PASSES_TD
