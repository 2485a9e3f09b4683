#!/usr/bin/env python3
"""Writes ONNX models whose sizes the data decides, with inputs and numpy's
outputs (the layout run_numpy_cases.py reads).

    make_data_size_models.py OUT_DIR

    nonzero_chain  the positive entries of x picked by NonZero, then scaled,
                   shifted and summed with their positions: the ops after
                   NonZero have a dim only its result decides, which the step
                   binds at run time so they run as generated kernels;
                   data sets with 3 of 6 positive, all 9, and none of 4
    nonzero_2d     NonZero of a [n, 70] float input (NaN counts, -0.0 does
                   not): 21000 elements cut into 1024 chunks on the device, a
                   sparse set, all zero, all non-zero, and 1 row
    nonzero_int    NonZero of an int32 [2, 3, 4] input (a static size: one chunk)
    topk_k         TopK of a [n, 10] input along the last axis with k an input
                   (k = 3, 0 and 10); both outputs
    counts_concat  the positive positions of x and of y (two NonZero counts,
                   each read from the device) stacked by Concat: the counts
                   must be equal, a fact over read sizes that a check step
                   tests where both are bound (sets with 2 and 0 of each)
    compress_rows  Compress of a [5, 3] input by a 4-element condition along
                   axis 0 (some rows, none, all four)
    compress_guard Compress of an [n, 3] input by an [m] condition without an
                   axis: m <= 3n is a guard every call checks
    unique_sorted  Unique of an [n] float input, all four outputs, sorted
                   (-0.0 and 0.0 are one value; an empty input)
    unique_first   the same in first-occurrence order (sorted=0), of int64
    unique_rows    Unique of [n, 3] rows (axis 0, sorted: rows differing first
                   in the middle or last column, repeats, -0.0 against 0.0)
    nms            NonMaxSuppression of [2, n, 4] boxes (40, with equal scores
                   and overlapping clusters) and [2, 3, n] scores, a score
                   threshold, at most 5 per class; the same boxes as centers
                   (nms_center, no threshold, at most 100)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

# The same layout as the control-flow models (run_numpy_cases.py reads both).
from make_control_flow_models import save_model, save_set


def nonzero_chain(out):
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["positive"]),
        helper.make_node("NonZero", ["positive"], ["where"]),          # [1, k]
        helper.make_node("Squeeze", ["where", "axis0"], ["idx"]),     # [k]
        helper.make_node("Gather", ["x", "idx"], ["picked"], axis=0),  # [k]
        helper.make_node("Mul", ["picked", "scale"], ["scaled"]),
        helper.make_node("Cast", ["idx"], ["pos"], to=T.FLOAT),
        helper.make_node("Add", ["scaled", "pos"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "nonzero_chain",
        [helper.make_tensor_value_info("x", T.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["k"])],
        [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
         numpy_helper.from_array(np.array(1.5, np.float32), "scale"),
         numpy_helper.from_array(np.array([0], np.int64), "axis0")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "nonzero_chain.onnx"))
    sets = [np.array([1.0, -2.0, 3.0, -4.0, 5.0, -6.0], np.float32),
            np.arange(1, 10, dtype=np.float32),
            -np.ones(4, np.float32)]
    for s, x in enumerate(sets):
        idx = np.nonzero(x > 0)[0]
        y = (x[idx] * np.float32(1.5) + idx.astype(np.float32)).astype(np.float32)
        folder = os.path.join(out, "nonzero_chain", str(s))
        os.makedirs(folder, exist_ok=True)
        np.save(os.path.join(folder, "in_x.npy"), x)
        np.save(os.path.join(folder, "want_0.npy"), y)


def save(out, name, nodes, inputs, outputs, sets, initializers=()):
    """The model NAME.onnx and its data sets NAME/S/in_*.npy, want_*.npy;
    `sets` is a list of (inputs dict, outputs list)."""
    save_model(out, name, helper.make_graph(nodes, name, inputs, outputs, list(initializers)))
    for s, (ins, wants) in enumerate(sets):
        save_set(out, name, s, ins, wants)


def nonzero_2d(out):
    rng = np.random.default_rng(7)
    sparse = rng.standard_normal((300, 70)).astype(np.float32)
    sparse[sparse < 1.0] = 0
    sparse[5, 3] = np.nan
    sparse[7, 9] = -0.0
    dense = np.ones((300, 70), np.float32)
    sets = [sparse, np.zeros((300, 70), np.float32), dense, sparse[:1]]
    save(out, "nonzero_2d", [helper.make_node("NonZero", ["x"], ["where"])],
         [helper.make_tensor_value_info("x", T.FLOAT, ["n", 70])],
         [helper.make_tensor_value_info("where", T.INT64, [2, "k"])],
         [({"x": x}, [np.array(np.nonzero(x), np.int64)]) for x in sets])


def nonzero_int(out):
    x = np.array([[[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, -4, 5]],
                  [[0, 0, 0, 0], [6, 0, 7, 0], [0, 8, 0, 0]]], np.int32)
    save(out, "nonzero_int", [helper.make_node("NonZero", ["x"], ["where"])],
         [helper.make_tensor_value_info("x", T.INT32, [2, 3, 4])],
         [helper.make_tensor_value_info("where", T.INT64, [3, "k"])],
         [({"x": x}, [np.array(np.nonzero(x), np.int64)])])


def topk_k(out):
    rng = np.random.default_rng(3)
    x = rng.permutation(60).reshape(6, 10).astype(np.float32)
    sets = []
    for k in (3, 0, 10):
        idx = np.argsort(-x, axis=1, kind="stable")[:, :k]
        sets.append(({"x": x, "k": np.array([k], np.int64)},
                     [np.take_along_axis(x, idx, 1), idx.astype(np.int64)]))
    save(out, "topk_k", [helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=-1)],
         [helper.make_tensor_value_info("x", T.FLOAT, ["n", 10]),
          helper.make_tensor_value_info("k", T.INT64, [1])],
         [helper.make_tensor_value_info("values", T.FLOAT, ["n", "k"]),
          helper.make_tensor_value_info("indices", T.INT64, ["n", "k"])], sets)


def range_int(out):
    """Range whose operands are inputs (torchvision's anchor grid: arange of a
    width cast to int32), times 3: counts up, down, empty (limit before
    start) and a step that does not divide the span."""
    cases = [(0, 7, 1), (10, 1, -3), (5, 2, 1), (-4, 9, 5)]
    sets = [({"start": np.array(a, np.int32), "limit": np.array(b, np.int32),
              "delta": np.array(d, np.int32)}, [np.arange(a, b, d, dtype=np.int32) * 3])
            for a, b, d in cases]
    save(out, "range_int",
         [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
          helper.make_node("Constant", [], ["three"],
                           value=numpy_helper.from_array(np.array(3, np.int32))),
          helper.make_node("Mul", ["r", "three"], ["y"])],
         [helper.make_tensor_value_info(n, T.INT32, []) for n in ("start", "limit", "delta")],
         [helper.make_tensor_value_info("y", T.INT32, ["n"])], sets)


def range_float(out):
    """A float Range: the count is ceil((limit - start) / delta) in double, as
    the reference (and ONNX) computes it, including a span that is a whole
    number of steps."""
    cases = [(0.0, 1.0, 0.25), (1.5, -1.0, -0.5), (0.0, 0.3, 0.1)]
    sets = []
    for a, b, d in cases:
        n = max(int(np.ceil((np.float64(np.float32(b)) - np.float64(np.float32(a)))
                            / np.float64(np.float32(d)))), 0)
        want = (np.float64(np.float32(a)) + np.arange(n) * np.float64(np.float32(d)))
        sets.append(({"start": np.array(a, np.float32), "limit": np.array(b, np.float32),
                      "delta": np.array(d, np.float32)}, [want.astype(np.float32)]))
    save(out, "range_float", [helper.make_node("Range", ["start", "limit", "delta"], ["y"])],
         [helper.make_tensor_value_info(n, T.FLOAT, []) for n in ("start", "limit", "delta")],
         [helper.make_tensor_value_info("y", T.FLOAT, ["n"])], sets)


def counts_concat(out):
    sets = [(np.array([1, -1, 2, 0], np.float32), np.array([0, 3, 0, 4], np.float32)),
            (-np.ones(4, np.float32), np.zeros(4, np.float32))]
    save(out, "counts_concat",
         [helper.make_node("Greater", ["x", "zero"], ["xp"]),
          helper.make_node("Greater", ["y", "zero"], ["yp"]),
          helper.make_node("NonZero", ["xp"], ["xi"]),
          helper.make_node("NonZero", ["yp"], ["yi"]),
          helper.make_node("Concat", ["xi", "yi"], ["both"], axis=0)],
         [helper.make_tensor_value_info("x", T.FLOAT, ["n"]),
          helper.make_tensor_value_info("y", T.FLOAT, ["n"])],
         [helper.make_tensor_value_info("both", T.INT64, [2, "k"])],
         [({"x": x, "y": y}, [np.concatenate([np.array(np.nonzero(x > 0)),
                                               np.array(np.nonzero(y > 0))]).astype(np.int64)])
          for x, y in sets],
         [numpy_helper.from_array(np.array(0.0, np.float32), "zero")])


def compress_rows(out):
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    sets = []
    for c in ([True, False, True, False], [False] * 4, [True] * 4):
        cond = np.array(c)
        sets.append(({"x": x, "c": cond}, [np.compress(cond, x, axis=0)]))
    save(out, "compress_rows", [helper.make_node("Compress", ["x", "c"], ["y"], axis=0)],
         [helper.make_tensor_value_info("x", T.FLOAT, [5, 3]),
          helper.make_tensor_value_info("c", T.BOOL, [4])],
         [helper.make_tensor_value_info("y", T.FLOAT, ["k", 3])], sets)


def compress_guard(out):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    sets = []
    for c in ([True, False, True, True, False], [False] * 12, [True] * 12):
        cond = np.array(c)
        sets.append(({"x": x, "c": cond}, [np.compress(cond, x)]))
    save(out, "compress_guard", [helper.make_node("Compress", ["x", "c"], ["y"])],
         [helper.make_tensor_value_info("x", T.FLOAT, ["n", 3]),
          helper.make_tensor_value_info("c", T.BOOL, ["m"])],
         [helper.make_tensor_value_info("y", T.FLOAT, ["k"])], sets)


def unique_outputs(x, sorted_):
    """values, indices, inverse, counts as ONNX Unique (no axis) defines them."""
    flat = x.reshape(-1)
    values, indices, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                                 return_counts=True)
    if not sorted_:
        order = np.argsort(indices, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values, indices, counts = values[order], indices[order], counts[order]
        inverse = rank[inverse]
    return [values.astype(x.dtype), indices.astype(np.int64), inverse.reshape(-1).astype(np.int64),
            counts.astype(np.int64)]


def unique_model(out, name, dtype, elem, sorted_, sets):
    save(out, name,
         [helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"],
                           sorted=int(sorted_))],
         [helper.make_tensor_value_info("x", elem, ["n"])],
         [helper.make_tensor_value_info("y", elem, ["u"]),
          helper.make_tensor_value_info("indices", T.INT64, ["u"]),
          helper.make_tensor_value_info("inverse", T.INT64, ["n"]),
          helper.make_tensor_value_info("counts", T.INT64, ["u"])],
         [({"x": x}, unique_outputs(x, sorted_)) for x in sets])


def unique_sorted(out):
    unique_model(out, "unique_sorted", np.float32, T.FLOAT, True,
                 [np.array([2, 1, 1, 3, 4, 3, -0.0, 0.0], np.float32),
                  np.arange(5, dtype=np.float32)[::-1].copy(),
                  np.zeros(0, np.float32)])


def unique_first(out):
    unique_model(out, "unique_first", np.int64, T.INT64, False,
                 [np.array([7, 3, 7, 7, -1, 3, 9], np.int64), np.array([5], np.int64)])


def unique_rows(out):
    x = np.array([[1, 2, 3], [1, 2, 2], [0, 5, 1], [1, 2, 3], [1, 0, 9], [0, 5, 1],
                  [-0.0, 5, 1]], np.float32)
    values, indices, inverse, counts = np.unique(x, axis=0, return_index=True,
                                                 return_inverse=True, return_counts=True)
    want = [values, indices.astype(np.int64), inverse.reshape(-1).astype(np.int64),
            counts.astype(np.int64)]
    save(out, "unique_rows",
         [helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], axis=0)],
         [helper.make_tensor_value_info("x", T.FLOAT, ["n", 3])],
         [helper.make_tensor_value_info("y", T.FLOAT, ["u", 3]),
          helper.make_tensor_value_info("indices", T.INT64, ["u"]),
          helper.make_tensor_value_info("inverse", T.INT64, ["n"]),
          helper.make_tensor_value_info("counts", T.INT64, ["u"])],
         [({"x": x}, want)])


def nms_reference(boxes, scores, max_out, iou_threshold, score_threshold, center):
    """ONNX NonMaxSuppression in numpy/python, as its reference implementation."""
    def corners(b):
        if center:
            xc, yc, w, h = (float(v) for v in b)
            return yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
        a, bb, c, d = (float(v) for v in b)
        return min(a, c), min(bb, d), max(a, c), max(bb, d)

    def iou(p, q):
        h = max(0.0, min(p[2], q[2]) - max(p[0], q[0]))
        w = max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
        inter = h * w
        union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter
        return 0.0 if union <= 0 else inter / union

    selected = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c].astype(np.float64)
            candidates = [i for i in range(len(s))
                          if score_threshold is None or s[i] > score_threshold]
            candidates.sort(key=lambda i: -s[i])  # stable: ties by index
            kept = []
            for i in candidates:
                if len(kept) >= max_out:
                    break
                if all(iou(corners(boxes[b, i]), corners(boxes[b, k])) <= iou_threshold
                       for k in kept):
                    kept.append(i)
                    selected.append([b, c, i])
    return np.array(selected, np.int64).reshape(-1, 3)


def nms(out, name, center, max_out, score_threshold):
    rng = np.random.default_rng(11)
    n = 40
    centers = rng.uniform(0, 10, (2, 8, 2)).repeat(5, axis=1)  # 8 clusters of 5
    sizes = rng.uniform(1, 3, (2, n, 2))
    jitter = rng.uniform(-0.5, 0.5, (2, n, 2))
    if center:
        boxes = np.concatenate([centers + jitter, sizes], axis=2)
    else:
        lo = centers + jitter - sizes / 2
        boxes = np.concatenate([lo, lo + sizes], axis=2)
        boxes[:, ::7] = boxes[:, ::7][:, :, [2, 3, 0, 1]]  # corners in either order
    boxes = boxes.astype(np.float32)
    scores = rng.uniform(0, 1, (2, 3, n)).astype(np.float32)
    scores[:, :, 5:9] = 0.5  # equal scores: box order decides
    inputs = ["boxes", "scores", "max", "iou"] + (["threshold"] if score_threshold is not None else [])
    initializers = [numpy_helper.from_array(np.array([max_out], np.int64), "max"),
                    numpy_helper.from_array(np.array([0.4], np.float32), "iou")]
    if score_threshold is not None:
        initializers.append(
            numpy_helper.from_array(np.array([score_threshold], np.float32), "threshold"))
    want = nms_reference(boxes, scores, max_out, np.float64(np.float32(0.4)),
                         None if score_threshold is None
                         else np.float64(np.float32(score_threshold)), center)
    save(out, name,
         [helper.make_node("NonMaxSuppression", inputs, ["selected"],
                           center_point_box=int(center))],
         [helper.make_tensor_value_info("boxes", T.FLOAT, [2, "n", 4]),
          helper.make_tensor_value_info("scores", T.FLOAT, [2, 3, "n"])],
         [helper.make_tensor_value_info("selected", T.INT64, ["k", 3])],
         [({"boxes": boxes, "scores": scores}, [want])], initializers)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    nonzero_chain(out)
    nonzero_2d(out)
    nonzero_int(out)
    topk_k(out)
    range_int(out)
    range_float(out)
    counts_concat(out)
    compress_rows(out)
    compress_guard(out)
    unique_sorted(out)
    unique_first(out)
    unique_rows(out)
    nms(out, "nms", False, 5, 0.3)
    nms(out, "nms_center", True, 100, None)


if __name__ == "__main__":
    main()
