#!/usr/bin/env python3
"""Writes ONNX models whose shape operands are computed from shapes (or are
run-time scalars), with inputs and the ONNX reference implementation's outputs
(onnx.reference, independent of kiln; the layout run_numpy_cases.py reads).

    make_shape_operand_models.py OUT_DIR

    upsample_to_input  a stride-2 conv's features resized (linear,
                       pytorch_half_pixel) back to the input's H and W, the
                       sizes Concat(Shape(features)[0:2], Shape(x)[2:4]), as a
                       segmentation head (DeepLabV3, LR-ASPP) exports
    upsample_gathered  the same through Resize-18's axes, the sizes gathered
                       one by one (Shape, Gather, Unsqueeze, Concat), nearest
    dropout_zero_train Dropout with ratio 0 in training mode (the identity, an
                       all-true mask), as Swin's exported Dropout(p=0) reads
    trilu_k_input      Trilu (lower) with k a run-time int64 scalar input
    trilu_k_shape      Trilu (upper) with k = Shape(x)[1] - 4, computed from a
                       shape (a sliding window from the past length)
    unet_crop          a U-Net skip: the input pooled, upsampled back (even
                       sizes), the skip cropped to it around its center (Slice
                       bounds from Shape arithmetic), added and concatenated
    pad_to_multiple    H and W padded to a multiple of 8: pads (8 - h mod 8) mod 8
    detect_postprocess an SSD-style post-processing: scores over a threshold
                       (NonZero), the best min(count, 12) (TopK), NMS, and the
                       first 8 detections (a Slice past a count only the data
                       decides keeps what there is)
    resize_data_sizes  a Resize whose sizes are a graph input (data): read on the
                       device, then a kernel
    conv_integer_same  ConvInteger (uint8, a zero point) with auto_pad SAME_UPPER at
                       strides 1 and 2 on dynamic H and W: the pads surround the
                       input with its zero point
    split_count        Split-18 into 3 of NonZero's count (a dim only the data
                       decides): the pieces' bounds are read on the device
    channel_shuffle    ShuffleNet's channel shuffle as torch exports it with a
                       dynamic image: the view's sizes are (h - 1) // 2 + 1 of
                       the input's h (an integer Div, which truncates), then a
                       transpose, a flatten and an even Split of the channels
    same_stride_pads   SAME padding with stride 2 (and 3) on dynamic H and W (a
                       TensorFlow export's auto_pad): Conv, MaxPool and an
                       AveragePool without the padding in its count, and a
                       stride-3 conv with a 2-wide window (pads max(0, ...)),
                       SAME_UPPER and SAME_LOWER, and a stride-2 ConvTranspose
                       (its SAME pads do not depend on the size); expected outputs from the
                       graph with each set's pads written out
    resize_policy, trilu_two_k
                       what stays refused (no data sets)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from make_control_flow_models import save_set


def f32(name, dims):
    return helper.make_tensor_value_info(name, T.FLOAT, dims)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def save(out, name, nodes, inputs, outputs, initializers, sets, opset=18):
    model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, initializers),
                              opset_imports=[helper.make_opsetid("", opset)])
    if sets:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))
    reference = ReferenceEvaluator(model)
    for s, feeds in enumerate(sets):
        save_set(out, name, s, feeds, reference.run(None, feeds))


rng = np.random.default_rng(11)
images = [rng.standard_normal(shape, dtype=np.float32)
          for shape in ((1, 3, 8, 8), (2, 3, 10, 6), (1, 3, 7, 9))]
conv = [const("w", rng.standard_normal((4, 3, 3, 3), dtype=np.float32)),
        const("b", rng.standard_normal((4,), dtype=np.float32))]
features = [helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["f"])]


def upsample_to_input(out):
    nodes = features + [
        helper.make_node("Shape", ["f"], ["fshape"]),
        helper.make_node("Slice", ["fshape", "zero", "two"], ["nc"]),
        helper.make_node("Shape", ["x"], ["xshape"]),
        helper.make_node("Slice", ["xshape", "two", "four"], ["hw"]),
        helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
        helper.make_node("Resize", ["f", "", "", "sizes"], ["y"], mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel"),
    ]
    save(out, "upsample_to_input", nodes, [f32("x", ["n", 3, "h", "w"])], [f32("y", ["n", 4, "h", "w"])],
         conv + [const("zero", np.array([0], np.int64)), const("two", np.array([2], np.int64)),
                 const("four", np.array([4], np.int64))],
         [{"x": x} for x in images])


def upsample_gathered(out):
    nodes = features + [helper.make_node("Shape", ["x"], ["xshape"])]
    for axis in (2, 3):
        nodes += [helper.make_node("Gather", ["xshape", f"at{axis}"], [f"d{axis}"], axis=0),
                  helper.make_node("Unsqueeze", [f"d{axis}", "axes0"], [f"u{axis}"])]
    nodes += [helper.make_node("Concat", ["u2", "u3"], ["sizes"], axis=0),
              helper.make_node("Resize", ["f", "", "", "sizes"], ["y"], mode="nearest", axes=[2, 3])]
    save(out, "upsample_gathered", nodes, [f32("x", ["n", 3, "h", "w"])], [f32("y", ["n", 4, "h", "w"])],
         conv + [const("at2", np.array(2, np.int64)), const("at3", np.array(3, np.int64)),
                 const("axes0", np.array([0], np.int64))],
         [{"x": x} for x in images])


def dropout_zero_train(out):
    nodes = [helper.make_node("Dropout", ["x", "ratio", "training"], ["d", "mask"], seed=5),
             helper.make_node("Cast", ["mask"], ["m"], to=T.FLOAT),
             helper.make_node("Add", ["d", "m"], ["y"])]
    save(out, "dropout_zero_train", nodes, [f32("x", ["n", 5])], [f32("y", ["n", 5])],
         [const("ratio", np.array(0.0, np.float32)), const("training", np.array(True))],
         [{"x": rng.standard_normal((n, 5), dtype=np.float32)} for n in (1, 4)])


def trilu_k_input(out):
    nodes = [helper.make_node("Trilu", ["x", "k"], ["y"], upper=0)]
    save(out, "trilu_k_input", nodes,
         [f32("x", ["n", "s", "t"]), helper.make_tensor_value_info("k", T.INT64, [])], [f32("y", ["n", "s", "t"])], [],
         [{"x": rng.standard_normal((2, 5, 6), dtype=np.float32), "k": np.array(k, np.int64)}
          for k in (-2, 0, 3, 9)])


def trilu_k_shape(out):
    nodes = [helper.make_node("Shape", ["x"], ["xshape"]),
             helper.make_node("Gather", ["xshape", "one"], ["s"], axis=0),
             helper.make_node("Sub", ["s", "four"], ["k"]),
             helper.make_node("Trilu", ["x", "k"], ["y"], upper=1)]
    save(out, "trilu_k_shape", nodes, [f32("x", ["n", "s", "s"])], [f32("y", ["n", "s", "s"])],
         [const("one", np.array(1, np.int64)), const("four", np.array(4, np.int64))],
         [{"x": rng.standard_normal((1, s, s), dtype=np.float32)} for s in (3, 6, 9)])


def unet_crop(out):
    # A U-Net skip: the input pooled and upsampled back (even sizes), the
    # skip cropped to it around its center, then added and concatenated.
    nodes = [helper.make_node("MaxPool", ["x"], ["down"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Resize", ["down", "", "scales"], ["up"], mode="nearest"),
             helper.make_node("Shape", ["x"], ["xshape"]),
             helper.make_node("Shape", ["up"], ["upshape"]),
             helper.make_node("Slice", ["xshape", "two", "four"], ["xhw"]),
             helper.make_node("Slice", ["upshape", "two", "four"], ["uphw"]),
             helper.make_node("Sub", ["xhw", "uphw"], ["margin"]),
             helper.make_node("Div", ["margin", "twos"], ["starts"]),
             helper.make_node("Add", ["starts", "uphw"], ["ends"]),
             helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["crop"]),
             helper.make_node("Add", ["up", "crop"], ["sum"]),
             helper.make_node("Concat", ["sum", "crop"], ["y"], axis=1)]
    save(out, "unet_crop", nodes, [f32("x", ["n", 2, "h", "w"])], [f32("y", ["n", 4, "hh", "ww"])],
         [const("scales", np.array([1, 1, 2, 2], np.float32)), const("two", np.array([2], np.int64)),
          const("four", np.array([4], np.int64)), const("twos", np.array([2, 2], np.int64)),
          const("axes", np.array([2, 3], np.int64))],
         [{"x": rng.standard_normal(shape, dtype=np.float32)} for shape in ((1, 2, 8, 8), (2, 2, 9, 7))])


def resize_data_sizes(out):
    # Sizes that are data (a graph input, as a detector's transform computes
    # them from the image): read on the device, the resize a kernel sized by
    # them (linear, align_corners), then a Relu.
    nodes = [helper.make_node("Resize", ["x", "", "", "sizes"], ["r"], mode="linear",
                              coordinate_transformation_mode="align_corners"),
             helper.make_node("Relu", ["r"], ["y"])]
    sets = [{"x": images[i], "sizes": np.array(sizes, np.int64)}
            for i, sizes in ((0, (1, 3, 5, 11)), (1, (2, 3, 10, 6)), (2, (1, 2, 1, 9)))]
    save(out, "resize_data_sizes", nodes,
         [f32("x", ["n", 3, "h", "w"]), helper.make_tensor_value_info("sizes", T.INT64, [4])],
         [f32("y", ["a", "b", "c", "d"])], [], sets)


def pad_to_multiple(out):
    # H and W padded up to a multiple of 8 (a backbone with stride 8 needs
    # it): pads (8 - h mod 8) mod 8 at the end, then a Sigmoid.
    nodes = [helper.make_node("Shape", ["x"], ["xshape"]),
             helper.make_node("Slice", ["xshape", "two", "four"], ["hw"]),
             helper.make_node("Mod", ["hw", "eights"], ["rest"]),
             helper.make_node("Sub", ["eights", "rest"], ["short"]),
             helper.make_node("Mod", ["short", "eights"], ["ends"]),
             helper.make_node("Concat", ["zeros6", "ends"], ["pads"], axis=0),
             helper.make_node("Pad", ["x", "pads"], ["p"]),
             helper.make_node("Sigmoid", ["p"], ["y"])]
    save(out, "pad_to_multiple", nodes, [f32("x", ["n", 3, "h", "w"])], [f32("y", ["n", 3, "hp", "wp"])],
         [const("two", np.array([2], np.int64)), const("four", np.array([4], np.int64)),
          const("eights", np.array([8, 8], np.int64)), const("zeros6", np.zeros(6, np.int64))],
         [{"x": x} for x in images] + [{"x": rng.standard_normal((1, 3, 16, 8), dtype=np.float32)}])


def detect_postprocess(out):
    # An SSD-style head's post-processing: scores over a threshold (NonZero),
    # the best k = min(count, 12) of them (TopK with k from a shape), their
    # boxes through NonMaxSuppression, and the first 8 detections kept
    # (Slice to 8 of a count only the data decides: fewer when fewer remain).
    nodes = [
        helper.make_node("Greater", ["scores", "thr"], ["over"]),
        helper.make_node("NonZero", ["over"], ["nz"]),
        helper.make_node("Squeeze", ["nz", "axis0"], ["idx"]),
        helper.make_node("Gather", ["scores", "idx"], ["ks"], axis=0),
        helper.make_node("Gather", ["boxes", "idx"], ["kb"], axis=0),
        helper.make_node("Shape", ["ks"], ["count"]),
        helper.make_node("Min", ["count", "cap"], ["k"]),
        helper.make_node("TopK", ["ks", "k"], ["ts", "ti"], axis=0),
        helper.make_node("Gather", ["kb", "ti"], ["tb"], axis=0),
        helper.make_node("Unsqueeze", ["tb", "axis0"], ["nb"]),
        helper.make_node("Unsqueeze", ["ts", "axes01"], ["ns"]),
        helper.make_node("NonMaxSuppression", ["nb", "ns", "most", "iou"], ["selected"]),
        helper.make_node("Gather", ["selected", "two"], ["picked"], axis=1),
        helper.make_node("Gather", ["ts", "picked"], ["ps"], axis=0),
        helper.make_node("Gather", ["tb", "picked"], ["pb"], axis=0),
        helper.make_node("Slice", ["ps", "zero", "eight"], ["det_scores"]),
        helper.make_node("Slice", ["pb", "zero", "eight"], ["det_boxes"]),
    ]
    sets = []
    for n, survivors in ((40, 30), (30, 5), (6, 1)):
        scores = np.concatenate([rng.uniform(0.35, 1.0, survivors), rng.uniform(0.0, 0.25, n - survivors)])
        corner = rng.uniform(0, 10, (n, 2))
        boxes = np.concatenate([corner, corner + rng.uniform(0.5, 4, (n, 2))], 1)
        order = rng.permutation(n)
        sets.append({"scores": scores[order].astype(np.float32), "boxes": boxes[order].astype(np.float32)})
    save(out, "detect_postprocess", nodes,
         [f32("scores", ["n"]), f32("boxes", ["n", 4])], [f32("det_scores", ["d"]), f32("det_boxes", ["d", 4])],
         [const("thr", np.array(0.3, np.float32)), const("axis0", np.array([0], np.int64)),
          const("axes01", np.array([0, 1], np.int64)), const("cap", np.array([12], np.int64)),
          const("most", np.array([100], np.int64)), const("iou", np.array([0.45], np.float32)),
          const("two", np.array(2, np.int64)), const("zero", np.array([0], np.int64)),
          const("eight", np.array([8], np.int64))],
         sets, opset=17)


def conv_integer_same(out):
    u8 = lambda name: helper.make_tensor_value_info(name, T.UINT8, ["n", 1, "h", "w"])
    wq = const("wq", rng.integers(0, 255, (2, 1, 3, 3), dtype=np.uint8))
    zp = const("zp", np.array(3, np.uint8))

    def model(h, w):
        def pads(stride):
            if h is None:
                return {"auto_pad": "SAME_UPPER"}
            (t, b), (l, r) = same_pads(h, stride, 3, True), same_pads(w, stride, 3, True)
            return {"pads": [t, l, b, r]}
        nodes = [helper.make_node("ConvInteger", ["x", "wq", "zp"], ["y"], **pads(1)),
                 helper.make_node("ConvInteger", ["x", "wq", "zp"], ["z"], strides=[2, 2],
                                  **pads(2))]
        outputs = [helper.make_tensor_value_info(name, T.INT32, ["n", 2, name + "h", name + "w"])
                   for name in ("y", "z")]
        return helper.make_model(helper.make_graph(nodes, "conv_integer_same", [u8("x")], outputs,
                                                   [wq, zp]),
                                 opset_imports=[helper.make_opsetid("", 18)])
    dynamic = model(None, None)
    onnx.checker.check_model(dynamic)
    onnx.save(dynamic, os.path.join(out, "conv_integer_same.onnx"))
    for i, (h, w) in enumerate(((5, 5), (6, 7))):
        feeds = {"x": rng.integers(0, 255, (1, 1, h, w), dtype=np.uint8)}
        save_set(out, "conv_integer_same", i, feeds,
                 ReferenceEvaluator(model(h, w)).run(None, feeds))


def split_count(out):
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]),
             helper.make_node("Split", ["nz"], ["a", "b", "c"], axis=1, num_outputs=3)]
    outs = [helper.make_tensor_value_info(name, T.INT64, [1, name + "n"]) for name in "abc"]
    save(out, "split_count", nodes, [f32("x", ["k"])], outs, [],
         [{"x": np.array(v, np.float32)}
          for v in ([1, 0, 2, 3, 0, 4, 5], [0, 1, 1, 0], [0, 0], [1, 1, 1, 1, 1, 1])])


def channel_shuffle(out):
    # c = conv(x) is [n, 8, (h - 1) // 2 + 1, ...]; torch computes those sizes
    # from x's own, (h - 1) // 2 + 1, with Sub, Div and Add on int64.
    w8 = const("w8", rng.standard_normal((8, 3, 3, 3), dtype=np.float32))
    i64 = lambda name, v: const(name, np.array(v, np.int64))
    nodes = [helper.make_node("Conv", ["x", "w8"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Slice", ["xs", "zero", "one"], ["n"]),
             helper.make_node("Slice", ["xs", "two", "four"], ["hw"]),
             helper.make_node("Sub", ["hw", "one"], ["hw1"]),
             helper.make_node("Div", ["hw1", "two"], ["half"]),
             helper.make_node("Add", ["half", "one"], ["chw"]),
             helper.make_node("Concat", ["n", "groups", "chw"], ["grouped"], axis=0),
             helper.make_node("Reshape", ["c", "grouped"], ["g"]),
             helper.make_node("Transpose", ["g"], ["t"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Concat", ["n", "eight", "chw"], ["flat"], axis=0),
             helper.make_node("Reshape", ["t", "flat"], ["shuffled"]),
             helper.make_node("Split", ["shuffled"], ["a", "b"], axis=1, num_outputs=2),
             helper.make_node("Relu", ["b"], ["rb"])]
    save(out, "channel_shuffle", nodes, [f32("x", ["n", 3, "h", "w"])],
         [f32("a", ["n", 4, "p", "q"]), f32("rb", ["n", 4, "p", "q"])],
         [w8, i64("zero", [0]), i64("one", [1]), i64("two", [2]), i64("four", [4]),
          i64("groups", [2, 4]), i64("eight", [8])],
         [{"x": rng.standard_normal(shape, dtype=np.float32)}
          for shape in ((1, 3, 8, 8), (2, 3, 7, 9), (1, 3, 1, 5), (1, 3, 2, 3))])


def same_pads(size, stride, window, upper):
    # ONNX's spec and shape inference (and TensorFlow): a total of
    # max(0, (ceil(size / stride) - 1) * stride + window - size), the odd one
    # at the end for SAME_UPPER, at the start for SAME_LOWER.
    total = max(0, (-(-size // stride) - 1) * stride + window - size)
    return (total // 2, total - total // 2) if upper else (total - total // 2, total // 2)


def same_stride_pads(out):
    # onnx.reference's Conv computes SAME pads from the wrong dims of its
    # input (N and C, op_conv.py; numpy then refuses the negative ones some
    # sizes give), so the expected outputs come from the same graph with the pads
    # written out, computed here by numbers for each set's sizes (kiln
    # computes them as symbolic expressions; the node tests' data checks the
    # reading of the spec both share).
    w2 = const("w2", rng.standard_normal((2, 3, 2, 2), dtype=np.float32))
    wt = const("wt", rng.standard_normal((3, 2, 3, 3), dtype=np.float32))

    def graph(h, w):
        def pads(stride, window, upper, *sizes):
            if sizes[0] is None:
                return {"auto_pad": "SAME_UPPER" if upper else "SAME_LOWER"}
            (t, b), (l, r) = (same_pads(size, stride, window, upper) for size in sizes)
            return {"pads": [t, l, b, r]}
        c = (None, None) if h is None else (-(-h // 2), -(-w // 2))
        m = (None, None) if h is None else (-(-c[0] // 2), -(-c[1] // 2))
        return [helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=[2, 2],
                                 **pads(2, 3, True, h, w)),
                helper.make_node("MaxPool", ["c"], ["m"], kernel_shape=[3, 3], strides=[2, 2],
                                 **pads(2, 3, False, *c)),
                helper.make_node("AveragePool", ["m"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                 **pads(2, 3, True, *m)),
                helper.make_node("Conv", ["x", "w2"], ["z"], strides=[3, 3],
                                 **pads(3, 2, False, h, w)),
                # SAME for a transposed conv: s * h of the full output, whose
                # pads (output_padding + window - s) do not depend on h.
                helper.make_node("ConvTranspose", ["x", "wt"], ["t"], strides=[2, 2],
                                 **({"auto_pad": "SAME_UPPER"} if h is None
                                    else {"pads": [0, 0, 1, 1]}))]

    def model(nodes):
        return helper.make_model(
            helper.make_graph(nodes, "same_stride_pads", [f32("x", ["n", 3, "h", "w"])],
                              [f32("y", ["n", 4, "a", "b"]), f32("z", ["n", 2, "c", "d"]),
                               f32("t", ["n", 2, "e", "f"])],
                              conv + [w2, wt]),
            opset_imports=[helper.make_opsetid("", 18)])
    dynamic = model(graph(None, None))
    onnx.checker.check_model(dynamic)
    onnx.save(dynamic, os.path.join(out, "same_stride_pads.onnx"))
    # Sizes of every parity and residue mod 3, so each pad formula's cases run.
    for i, (h, w) in enumerate(((8, 8), (7, 9), (10, 6), (5, 11), (13, 4), (1, 1))):
        feeds = {"x": rng.standard_normal((1 + i % 2, 3, h, w), dtype=np.float32)}
        save_set(out, "same_stride_pads", i, feeds,
                 ReferenceEvaluator(model(graph(h, w))).run(None, feeds))


def refused(out):
    # What stays refused, each with its one line: an aspect-ratio policy over
    # sizes known only at run time, and a Trilu k of two values.
    x = [f32("x", ["n", 3, "h", "w"])]
    save(out, "resize_policy", [helper.make_node("Shape", ["x"], ["hw"], start=2),
                                helper.make_node("Resize", ["x", "", "", "hw"], ["y"], axes=[2, 3],
                                                 keep_aspect_ratio_policy="not_larger")],
         x, [f32("y", None)], [], [])
    # SAME padding on a dynamic dim with ceil_mode: the pads pad the input,
    # where ceil_mode's last partial window would count padding as input.
    save(out, "same_ceil_mode", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3],
                                                  strides=[2, 2], auto_pad="SAME_UPPER", ceil_mode=1)],
         x, [f32("y", None)], [], [])
    # Before opset 18 an even split must divide the dim, which no guard can
    # check for a count only the data decides.
    save(out, "split_count_13", [helper.make_node("NonZero", ["x"], ["nz"]),
                                 helper.make_node("Split", ["nz"], ["a", "b"], axis=1)],
         [f32("x", ["k"])], [helper.make_tensor_value_info(v, T.INT64, None) for v in "ab"], [], [],
         opset=13)
    # An AveragePool without padding in its count, SAME with stride 2 on h,
    # beside a dim only the data decides (w padded by a run-time amount): its
    # count is a pool of ones shaped like the input, which needs every dim.
    save(out, "same_avg_unnamed",
         [helper.make_node("Concat", ["zeros7", "p"], ["pads"], axis=0),
          helper.make_node("Pad", ["x", "pads"], ["padded"]),
          helper.make_node("AveragePool", ["padded"], ["y"], kernel_shape=[3, 1], strides=[2, 1],
                           auto_pad="SAME_UPPER")],
         [f32("x", ["n", 3, "h", "w"]), helper.make_tensor_value_info("p", T.INT64, [1])],
         [f32("y", None)], [const("zeros7", np.zeros(7, np.int64))], [])
    save(out, "trilu_two_k", [helper.make_node("Trilu", ["m", "k"], ["y"])],
         [f32("m", [3, 3]), helper.make_tensor_value_info("k", T.INT64, [2])], [f32("y", [3, 3])], [], [])
    # GatherElements whose data has a dim only NonZero's count decides:
    # indices wider than it are refused when the step runs (no guard can say
    # so before the call), never read out of bounds.
    save(out, "gather_after_nonzero",
         [helper.make_node("NonZero", ["x"], ["nz"]),
          helper.make_node("Cast", ["nz"], ["positions"], to=T.FLOAT),
          helper.make_node("GatherElements", ["positions", "i"], ["y"], axis=0)],
         [f32("x", ["k"]), helper.make_tensor_value_info("i", T.INT64, [1, "m"])],
         [f32("y", None)], [], [])


if __name__ == "__main__":
    folder = sys.argv[1]
    for make in (upsample_to_input, upsample_gathered, dropout_zero_train, trilu_k_input, trilu_k_shape,
                 unet_crop, pad_to_multiple, resize_data_sizes, detect_postprocess, same_stride_pads,
                 channel_shuffle, conv_integer_same, split_count, refused):
        make(folder)
