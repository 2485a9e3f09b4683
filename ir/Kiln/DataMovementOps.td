//===- DataMovementOps.td - reshape, transpose, slice, ... ----*- tablegen -*-===//
//
// Ops that move data without arithmetic. The codegen expresses each as an index map,
// so they fuse into their consumers' kernels.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DATA_MOVEMENT_OPS_TD
#define KILN_DATA_MOVEMENT_OPS_TD

include "ir/Kiln/KilnAttrs.td"

def Kiln_ReshapeOp : Kiln_Op<"reshape", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "kernelDataOperands", "kernelRefusal", "runsNarrow", "elementAccess"]>]> {
  let summary = "reinterprets a tensor's elements with a new shape";
  let description = [{
    `shape` lists the result dims, each non-negative except at most one `-1`, which
    stands for whatever size keeps the element count. When `shape` is a constant or
    a symbolic constant the result type is known, symbolically where the input is
    dynamic; the element counts must then agree.

    ```mlir
    %s = kiln.symbolic_constant [batch * seq, 768] : tensor<2xi64>
    %r = kiln.reshape %x, %s : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<2xi64>) -> tensor<?x768xf32, #kiln.dims<[batch * seq, 768]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$shape);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "runsNarrow", "elementAccess"]>]> {
  let summary = "permutes the dims of a tensor";
  let description = [{
    Result dim `i` is input dim `permutation[i]`.

    ```mlir
    %r = kiln.transpose %x {permutation = array<i64: 1, 0>} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<4x?xf32, #kiln.dims<[4, n]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_BroadcastToOp : Kiln_Op<"broadcast_to", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "kernelDataOperands", "kernelRefusal", "runsNarrow", "elementAccess"]>]> {
  let summary = "broadcasts a tensor against a shape (ONNX Expand)";
  let description = [{
    The result shape is the numpy broadcast of the input's shape and `shape`, so a
    `1` in `shape` keeps the input's dim, as ONNX Expand does.

    ```mlir
    %s = kiln.constant dense<[4, 1]> : tensor<2xi64>
    %r = kiln.broadcast_to %x, %s : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$shape);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "runsNarrow", "elementAccess"]>]> {
  let summary = "joins tensors along an axis";
  let description = [{
    All inputs have one rank and element type and agree on every dim but `axis`;
    the result's `axis` dim is the sum of theirs.

    ```mlir
    %r = kiln.concat %a, %b {axis = 0 : i64} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<2x4xf32>) -> tensor<?x4xf32, #kiln.dims<[n + 2, 4]>>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "kernelDataOperands", "kernelRefusal", "runsNarrow", "elementAccess", "boundsReadsOfInput"]>]> {
  let summary = "a strided window of a tensor (ONNX Slice over every axis)";
  let description = [{
    `starts`, `ends` and `steps` hold one entry per input dim, with ONNX Slice
    semantics: negative positions count from the end, positions clamp to the dim,
    and a negative step walks backwards. A step of 0 is an error when it is a
    constant. With constant positions and a static dim the result dim is exact; on a
    symbolic dim it is symbolic when the positions are in range.

    ```mlir
    %r = kiln.slice %x, %starts, %ends, %steps : (tensor<8x6xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x6xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$starts,
                       Kiln_ShapeTensor:$ends, Kiln_ShapeTensor:$steps);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "runsNarrow", "elementAccess", "boundsReadsOfInput"]>]> {
  let summary = "selects slices along an axis by index (ONNX Gather)";
  let description = [{
    The result shape is `data.shape[:axis] + indices.shape + data.shape[axis+1:]`.
    Negative indices count from the end of the axis.

    ```mlir
    %r = kiln.gather %table, %ids {axis = 0 : i64} : (tensor<1000x64xf32>, tensor<?x?xi64, #kiln.dims<[batch, seq]>>) -> tensor<?x?x64xf32, #kiln.dims<[batch, seq, 64]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_PadOp : Kiln_Op<"pad", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "kernelDataOperands", "kernelRefusal", "runsNarrow", "elementAccess", "boundsReadsOfInput"]>]> {
  let summary = "pads a tensor at both ends of every dim";
  let description = [{
    `pads` holds `[begin_0, ..., begin_r-1, end_0, ..., end_r-1 ]` (ONNX order);
    negative pads crop. `value` (a 0-d tensor of the input's element type) fills
    in `constant` mode; `reflect`, `edge` and `wrap` mirror, repeat or wrap the
    input.

    ```mlir
    %r = kiln.pad %x, %pads, %zero {mode = #kiln<pad_mode constant>} : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$pads,
                       0DTensorOf<[Kiln_Element]>:$value, Kiln_PadModeAttr:$mode);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_GatherElementsOp : Kiln_Op<"gather_elements", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "runsNarrow", "elementAccess", "boundsReadsOfInput"]>]> {
  let summary = "picks elements along an axis by per-element index (ONNX GatherElements)";
  let description = [{
    `out[i][j][k] = data[index[i][j][k]][j][k]` for `axis = 0`, and likewise on the
    other axes. `indices` has the rank of `data` and is the result's shape; negative
    indices count from the end of the axis.

    ```mlir
    %r = kiln.gather_elements %data, %idx {axis = 1 : i64} : (tensor<?x10xf32, #kiln.dims<[n, 10]>>, tensor<?x1xi64, #kiln.dims<[n, 1]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_ScatterElementsOp : Kiln_Op<"scatter_elements", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "runsNarrow"]>]> {
  let summary = "writes updates into a copy of data at per-element indices";
  let description = [{
    The inverse of gather_elements (ONNX ScatterElements): a copy of `data` where
    `updates[i][j]` lands at `[indices[i][j]][j]` (for `axis = 0`), combined with
    the existing value by `reduction` (`none` overwrites).

    ```mlir
    %r = kiln.scatter_elements %data, %idx, %upd {axis = 0 : i64, reduction = #kiln<scatter add>} : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, Kiln_Tensor:$updates,
                       I64Attr:$axis, Kiln_ScatterReductionAttr:$reduction);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_GatherNDOp : Kiln_Op<"gather_nd", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "runsNarrow", "elementAccess", "boundsReadsOfInput"]>]> {
  let summary = "picks slices by index tuples (ONNX GatherND)";
  let description = [{
    The last dim of `indices` (static, `q`) indexes the first `q` dims of `data`
    after `batch_dims` shared leading dims. The result shape is
    `indices.shape[:-1] + data.shape[batch_dims + q:]`.

    ```mlir
    %r = kiln.gather_nd %data, %idx {batch_dims = 0 : i64} : (tensor<4x5x6xf32>, tensor<?x2xi64, #kiln.dims<[n, 2]>>) -> tensor<?x6xf32, #kiln.dims<[n, 6]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_ScatterNDOp : Kiln_Op<"scatter_nd", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "runsNarrow"]>]> {
  let summary = "writes slices into a copy of data at index tuples (ONNX ScatterND)";
  let description = [{
    `updates` has shape `indices.shape[:-1] + data.shape[q:]` for `q` the last dim
    of `indices`; each slice lands at its index tuple, combined with the existing
    value by `reduction`.

    ```mlir
    %r = kiln.scatter_nd %data, %idx, %upd {reduction = #kiln<scatter none>} : (tensor<8xf32>, tensor<4x1xi64>, tensor<4xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, Kiln_Tensor:$updates,
                       Kiln_ScatterReductionAttr:$reduction);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_NonZeroOp : Kiln_Op<"non_zero", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["kernelRefusal"]>]> {
  let summary = "indices of the non-zero elements (ONNX NonZero)";
  let description = [{
    A `[rank, count]` i64 tensor whose column j is the index tuple of the j-th
    non-zero element in row-major order. `count` depends on the data, so its dim is
    unknown (`?`): the ops after it see sizes bound at run time.

    ```mlir
    %i = kiln.non_zero %x : (tensor<3x4xf32>) -> tensor<2x?xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs RankedTensorOf<[I64]>:$result);
}

def Kiln_CountNonZeroOp : Kiln_Op<"count_non_zero", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule"]>]> {
  let summary = "the number of non-zero elements in each chunk of a tensor's row-major order";
  let description = [{
    The input's elements in row-major order are cut into `chunks` runs of
    `ceildiv(n, chunks)` elements (the last ones shorter or empty); element c of
    the result counts the non-zero elements of run c. The first half of a
    non_zero on the device (`--kiln-sizes-on-device`): their sum is the count
    read back, and `kiln.compact_non_zero` places each run's indices after the
    runs before it.

    ```mlir
    %c = kiln.count_non_zero %x {chunks = 4 : i64} : (tensor<3x4xf32>) -> tensor<4xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$chunks);
  let results = (outs RankedTensorOf<[I64]>:$counts);
}

def Kiln_CompactNonZeroOp : Kiln_Op<"compact_non_zero", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule", "kernelDataOperands"]>]> {
  let summary = "kiln.non_zero's result, placed by per-chunk counts and sized by a known count";
  let description = [{
    The same `[rank, count]` result as `kiln.non_zero %input`, computed with
    the per-chunk counts `kiln.count_non_zero` made (`chunk_counts`, whose
    length is the chunk count) and sized by `count`, a 1-element shape operand
    (a symbol a `kiln.read_sizes` bound to the counts' sum), so it can be a
    kernel: each chunk writes its indices after those of the chunks before it.

    ```mlir
    %i = kiln.compact_non_zero %x, %c, %n : (tensor<3x4xf32>, tensor<4xi64>, tensor<1xi64>) -> tensor<2x?xi64, #kiln.dims<[2, run0]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, RankedTensorOf<[I64]>:$chunk_counts,
                       Kiln_ShapeTensor:$count);
  let results = (outs RankedTensorOf<[I64]>:$result);
}

def Kiln_CompressOp : Kiln_Op<"compress", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["kernelRefusal", "runsNarrow"]>]> {
  let summary = "keeps the slices along an axis where a condition holds (ONNX Compress)";
  let description = [{
    Keeps slice i along `axis` where `condition[i]` is true (a condition shorter than
    the axis drops the rest). Without `axis` the input is flattened first. The kept
    count depends on the data, so that dim is unknown.

    ```mlir
    %r = kiln.compress %x, %c {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xi1>) -> tensor<?x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, 1DTensorOf<[I1]>:$condition,
                       OptionalAttr<I64Attr>:$axis);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_CacheUpdateOp : Kiln_Op<"cache_update", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule", "kernelDataOperands", "kernelRefusal", "runsNarrow"]>]> {
  let summary = "writes rows into a cache along an axis, in place (the KV-cache append)";
  let description = [{
    The result is `cache` with `update`'s rows written along `axis` from
    position `offset` (a one-element i64 shape tensor, a symbol's value where
    the past length is one): `update` has `cache`'s dims but along the axis,
    and `offset + update's length` must not pass the cache's. The other rows
    are `cache`'s. `--kiln-kv-cache-in-place` forms it from `present =
    concat(past, new)`. Its kernel launches over `update`'s elements only and
    writes into `cache`'s bytes (the artifact marks it in place): a decode
    step moves its new rows, not the whole cache. The cache keeps its element
    type under a precision mode (the update is cast to it), since its bytes
    are the caller's.

    ```mlir
    %p = kiln.cache_update %cache, %new, %past {axis = 2 : i64} : (tensor<?x4x?x64xbf16, #kiln.dims<[batch, 4, capacity, 64]>>, tensor<?x4x1x64xbf16, #kiln.dims<[batch, 4, 1, 64]>>, tensor<1xi64>) -> tensor<?x4x?x64xbf16, #kiln.dims<[batch, 4, capacity, 64]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$cache, Kiln_Tensor:$update, Kiln_ShapeTensor:$offset,
                       I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_CacheWriteOp : Kiln_Op<"cache_write", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "rootSchedule", "kernelDataOperands", "runsNarrow"]>]> {
  let summary = "writes each sequence's rows into a cache at its own position";
  let description = [{
    The result is `cache` with sequence b's rows of `update` written along
    `axis` from row `positions[b]` (`positions`: i64 data, one a sequence,
    the batch being dim 0): where sequences of a batch have cached different
    numbers of tokens (GroupQueryAttention's per-sequence lengths). `update`
    has `cache`'s dims but along the axis, which is not 0; a row that would
    fall outside the cache is the call's error (KILN_ERROR_INDEX_OUT_OF_RANGE).
    With `zero_tail` the rows after each sequence's written ones are 0 (what
    GroupQueryAttention's present holds there); the rows before are
    `cache`'s.

    Computed as an elementwise choice between `cache` and `update` where it
    makes a new tensor. With `in_place` (set by `--kiln-kv-cache-in-place`,
    whose `cache` is then the model's cache input) its kernel launches over
    `update`'s elements only and writes into `cache`'s bytes, leaving the
    other rows as they are: `zero_tail`'s zeros are not written there (the
    attention that reads the cache masks those rows, weighting them 0, so
    they must be finite: kiln-generate zeroes its caches). `valid_rows` (in
    place) is the length the present has (the attention mask's): a row at
    or past it is the call's error, as it is past the new tensor's end.
    A sequence whose rows do not all fit writes none of them; in place,
    other sequences' rows are written before the call fails (the caller's
    cache is then changed), and an update of no rows checks no position.

    With `circular` (ONNX TensorScatter's circular mode, a sliding-window
    cache) row i of sequence b goes to row `(positions[b] + i) mod L`, L the
    cache's length along the axis (a position any i64, the remainder taken
    non-negative): update must be no longer than the cache, and neither
    `zero_tail` nor `valid_rows` applies.

    ```mlir
    %p = kiln.cache_write %cache, %new, %lengths {axis = 2 : i64, zero_tail} : (tensor<2x4x?x64xf32, #kiln.dims<[2, 4, total, 64]>>, tensor<2x4x1x64xf32>, tensor<2xi64>) -> tensor<2x4x?x64xf32, #kiln.dims<[2, 4, total, 64]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$cache, Kiln_Tensor:$update, 1DTensorOf<[I64]>:$positions,
                       I64Attr:$axis, UnitAttr:$zero_tail, UnitAttr:$in_place,
                       OptionalAttr<Kiln_DimsAttr>:$valid_rows, UnitAttr:$circular);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_ResizeOp : Kiln_Op<"resize", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "kernelDataOperands", "kernelRefusal"]>]> {
  let summary = "resamples a tensor to a new size (ONNX Resize)";
  let description = [{
    The result's dims are `size`. Each output coordinate maps to an input coordinate
    through `coordinate_mode` with the per-dim `scales` (output / input; empty when
    they are `size / input` computed at run time, for dynamic dims), then
    `mode` interpolates: nearest (rounded by `nearest_mode`), linear or cubic (with
    `cubic_coeff_a`), and `antialias` widens the filter when downsampling.
    `exclude_outside` drops taps outside the input; `tf_crop_and_resize` reads the
    crop box from `roi` and fills outside it with `extrapolation_value`.

    ```mlir
    %r = kiln.resize %x, %size {mode = #kiln<resize_mode linear>, coordinate_mode = #kiln<coordinate_mode half_pixel>, nearest_mode = #kiln<nearest_mode round_prefer_floor>, scales = array<f32: 1.0, 1.0, 2.0, 2.0>, roi = array<f32>} : (tensor<1x3x8x8xf32>, tensor<4xi64>) -> tensor<1x3x16x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_ShapeTensor:$size,
                       Kiln_ResizeModeAttr:$mode, Kiln_CoordinateModeAttr:$coordinate_mode,
                       Kiln_NearestModeAttr:$nearest_mode, DenseF32ArrayAttr:$scales,
                       DenseF32ArrayAttr:$roi,
                       DefaultValuedAttr<F32Attr, "-0.75">:$cubic_coeff_a,
                       DefaultValuedAttr<BoolAttr, "false">:$exclude_outside,
                       DefaultValuedAttr<F32Attr, "0.0">:$extrapolation_value,
                       DefaultValuedAttr<BoolAttr, "false">:$antialias);
  let results = (outs Kiln_FloatTensor:$result);
}

#endif // KILN_DATA_MOVEMENT_OPS_TD
