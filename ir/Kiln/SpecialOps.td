//===- SpecialOps.td - irregular ops kept whole ------------*- tablegen -*-===//
//
// Ops whose data access is irregular (sampling at computed coordinates, greedy
// selection, data-dependent output sizes, small dense linear algebra). They do not
// decompose into the core set without losing their meaning or their speed, so they
// stay whole: the reference kernels and the host fallback run them as units.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SPECIAL_OPS_TD
#define KILN_SPECIAL_OPS_TD

include "ir/Kiln/KilnBase.td"
include "ir/Kiln/KilnAttrs.td"

def Kiln_GridSampleOp : Kiln_Op<"grid_sample", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable"]>]> {
  let summary = "samples a tensor at the coordinates a grid gives (ONNX GridSample)";
  let description = [{
    `input` is `[N, C, D1..Dr]` and `grid` is `[N, H1..Hr, r]`, the last axis holding
    normalized coordinates in [-1, 1] ordered innermost dim first (x, y, z). The
    result is `[N, C, H1..Hr]`. `mode` interpolates (nearest rounds half to even,
    linear, cubic with a = -0.75); `padding` says what is read outside the input; with
    `align_corners` -1 and 1 are the centers of the corner elements, else their outer
    edges.

    ```mlir
    %y = kiln.grid_sample %x, %g {mode = #kiln<resize_mode linear>, padding = #kiln<grid_padding zeros>} : (tensor<1x3x8x8xf32>, tensor<1x4x4x2xf32>) -> tensor<1x3x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_FloatTensor:$grid,
                       Kiln_ResizeModeAttr:$mode, Kiln_GridPaddingAttr:$padding,
                       DefaultValuedAttr<BoolAttr, "false">:$align_corners);
  let results = (outs Kiln_Tensor:$result);
}

def Kiln_RoiAlignOp : Kiln_Op<"roi_align", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable"]>]> {
  let summary = "pools regions of interest by bilinear sampling (ONNX RoiAlign)";
  let description = [{
    `input` is `[N, C, H, W]`, `rois` is `[R, 4]` boxes `(x1, y1, x2, y2)` in input
    coordinates before `spatial_scale`, `batch_indices` is `[R]`. Each box is split
    into `output_height x output_width` bins; each bin averages (or takes the max of)
    `sampling_ratio^2` bilinear samples (adaptive, ceil(bin size), when 0). With
    `half_pixel` the box is shifted by -0.5 after scaling. Result `[R, C, oh, ow]`.

    ```mlir
    %y = kiln.roi_align %x, %rois, %b {mode = #kiln<pool avg>, output_height = 5 : i64, output_width = 5 : i64, sampling_ratio = 2 : i64, spatial_scale = 1.0 : f32} : (tensor<1x1x10x10xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x1x5x5xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$rois,
                       RankedTensorOf<[I64]>:$batch_indices,
                       Kiln_PoolKindAttr:$mode, I64Attr:$output_height,
                       I64Attr:$output_width, I64Attr:$sampling_ratio,
                       F32Attr:$spatial_scale,
                       DefaultValuedAttr<BoolAttr, "true">:$half_pixel);
  let results = (outs Kiln_FloatTensor:$result);
}

def Kiln_NmsSelectOp : Kiln_Op<"nms_select", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule", "fusesProducers"]>]> {
  let summary = "per batch and class, the boxes non_max_suppression keeps, in selection order";
  let description = [{
    The selection of `kiln.non_max_suppression` (same operands and meaning),
    before it is listed: `[B, K, S]`, where row `[b, k]` holds the box indices
    taken for batch b and class k in the order they were taken, then -1.
    `rank` (`[B, K, S]` i64) is each box's position in its row's descending
    score order among the boxes above the score threshold (ties by box index);
    boxes at or below the threshold are never taken whatever their rank.
    `--kiln-sizes-on-device` computes the ranks with compares and sums, this op
    as a kernel (a block per row, the greedy loop in order, the overlap tests
    across the block's threads), and lists the non-negative entries.

    ```mlir
    %k = kiln.nms_select %boxes, %scores, %rank, %max, %iou : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1x1x6xi64>, tensor<1xi64>, tensor<1xf32>) -> tensor<1x1x6xi64>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$boxes, Kiln_FloatTensor:$scores,
                       RankedTensorOf<[I64]>:$rank,
                       Kiln_ShapeTensor:$max_output_boxes_per_class,
                       Kiln_FloatTensor:$iou_threshold,
                       Optional<Kiln_FloatTensor>:$score_threshold,
                       DefaultValuedAttr<BoolAttr, "false">:$center_point_box);
  let results = (outs RankedTensorOf<[I64]>:$selected);
}

def Kiln_NonMaxSuppressionOp : Kiln_Op<"non_max_suppression", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["kernelRefusal"]>]> {
  let summary = "greedy box selection by score and overlap (ONNX NonMaxSuppression)";
  let description = [{
    `boxes` is `[B, S, 4]` (corners `y1, x1, y2, x2` in either order, or
    `x_center, y_center, width, height` with `center_point_box`), `scores` is
    `[B, K, S]`. Per batch and class, boxes are taken in descending score order,
    skipping any whose IoU with a taken box exceeds `iou_threshold`, up to
    `max_output_boxes_per_class` (a 1-element i64 tensor; 0 selects nothing); boxes
    scoring at or below `score_threshold`, when given, are never taken. The result
    lists `[batch, class, box]` per selection; its length depends on the data.

    ```mlir
    %s = kiln.non_max_suppression %boxes, %scores, %max, %iou, %score : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x3xi64>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$boxes, Kiln_FloatTensor:$scores,
                       Kiln_ShapeTensor:$max_output_boxes_per_class,
                       Kiln_FloatTensor:$iou_threshold,
                       Optional<Kiln_FloatTensor>:$score_threshold,
                       DefaultValuedAttr<BoolAttr, "false">:$center_point_box);
  let results = (outs RankedTensorOf<[I64]>:$selected);
}

def Kiln_UniqueOp : Kiln_Op<"unique", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["kernelRefusal"]>]> {
  let summary = "the distinct elements or slices of a tensor (ONNX Unique)";
  let description = [{
    Without `axis` the input is flattened and `values` holds its distinct elements;
    with `axis`, distinct slices along it. `sorted` orders them ascending, else they
    keep the order of first occurrence. `indices` gives each distinct one's first
    position, `inverse_indices` maps each input element (slice) to its distinct one,
    `counts` counts occurrences. The distinct count depends on the data.

    ```mlir
    %y, %i, %inv, %c = kiln.unique %x {sorted = true} : (tensor<6xf32>) -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>)
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, OptionalAttr<I64Attr>:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs Kiln_Tensor:$values, RankedTensorOf<[I64]>:$indices,
                      RankedTensorOf<[I64]>:$inverse_indices,
                      RankedTensorOf<[I64]>:$counts);
}

def Kiln_DetOp : Kiln_Op<"det", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable", "kernelRefusal"]>]> {
  let summary = "determinants of square matrices (ONNX Det)";
  let description = [{
    `input` is `[*, M, M]`; the result `[*]` holds each matrix's determinant (LU with
    partial pivoting).

    ```mlir
    %d = kiln.det %x : (tensor<2x3x3xf32>) -> tensor<2xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_FloatTensor:$result);
}

def Kiln_Col2ImOp : Kiln_Op<"col2im", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable"]>]> {
  let summary = "sums sliding blocks back into an image (ONNX Col2Im)";
  let description = [{
    The inverse of im2col: `input` is `[N, C * prod(block_shape), L]` where L counts
    the block positions of a padded `image_shape` under `strides` and `dilations`;
    each column is added back at its position. Result `[N, C, image_shape...]`.
    `pads` has 2k entries (`[begin..., end...]`).

    ```mlir
    %y = kiln.col2im %x {image_shape = array<i64: 5, 5>, block_shape = array<i64: 1, 5>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x5x5xf32>) -> tensor<1x1x5x5xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$image_shape,
                       DenseI64ArrayAttr:$block_shape, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations, DenseI64ArrayAttr:$pads);
  let results = (outs Kiln_Tensor:$result);
}

#endif // KILN_SPECIAL_OPS_TD
