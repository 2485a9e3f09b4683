"""Writes OUT/device_ops.onnx: the ops that ran as graph breaks on CUDA until
they got generated kernels (Resize, CumSum, ScatterElements, ScatterND,
GatherND, GridSample, TopK), over dynamic dims, with their indices as run-time inputs; and two
input sets (OUT/small/*.npy, OUT/large/*.npy) of different sizes, plus
OUT/bad_index.npy, a ScatterElements index past its axis."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(5)
inits = [
    numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up2"),
    numpy_helper.from_array(np.array([3, 2], np.int64), "small_hw"),
    numpy_helper.from_array(np.array(1, np.int64), "axis1"),
    numpy_helper.from_array(np.array([], np.float32), "no_roi"),
    numpy_helper.from_array(np.array([3], np.int64), "three"),
]
nodes = [
    # Bilinear 2x upsampling (torch's align_corners=False), cubic with
    # antialiasing down to 3x2 (scales from the run's sizes), nearest 2x up:
    # image x [n, c, h, w].
    helper.make_node("Resize", ["x", "no_roi", "up2"], ["bilinear"], mode="linear",
                     coordinate_transformation_mode="half_pixel"),
    helper.make_node("Resize", ["x", "no_roi", "", "small_hw"], ["cubic"], mode="cubic",
                     antialias=1, axes=[2, 3], coordinate_transformation_mode="half_pixel",
                     exclude_outside=1),
    helper.make_node("Resize", ["x", "no_roi", "up2"], ["nearest"], mode="nearest",
                     coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    # Position ids as HF models build them: cumsum of a mask along the sequence.
    helper.make_node("CumSum", ["mask", "axis1"], ["positions"]),
    helper.make_node("CumSum", ["seq", "axis1"], ["rcumsum"], exclusive=1, reverse=1),
    # scores [b, s] gain updates at data-driven positions; a cache [b, t, d]
    # gets rows written at (batch, slot) tuples; rows picked back by tuples.
    helper.make_node("ScatterElements", ["seq", "seq_idx", "seq_upd"], ["scattered"], axis=1,
                     reduction="add"),
    helper.make_node("ScatterND", ["cache", "slots", "rows"], ["cache_out"]),
    helper.make_node("GatherND", ["cache", "pick"], ["picked"], batch_dims=1),
    # A spatial transformer's sampling: bilinear, reflection at the borders.
    helper.make_node("GridSample", ["x", "grid"], ["sampled"], mode="linear",
                     padding_mode="reflection"),
    # The 3 best of each row of scores with ties and a NaN (the largest, as
    # the reference orders them); the 3 smallest along the batch.
    helper.make_node("TopK", ["scores", "three"], ["top", "top_at"], axis=1),
    helper.make_node("TopK", ["scores", "three"], ["low", "low_at"], axis=0, largest=0),
]
f32, i64 = TensorProto.FLOAT, TensorProto.INT64
inputs = [
    helper.make_tensor_value_info("x", f32, ["n", 3, "h", "w"]),
    helper.make_tensor_value_info("mask", i64, ["b", "s"]),
    helper.make_tensor_value_info("seq", f32, ["b", "s"]),
    helper.make_tensor_value_info("seq_idx", i64, ["b", "u"]),
    helper.make_tensor_value_info("seq_upd", f32, ["b", "u"]),
    helper.make_tensor_value_info("cache", f32, ["b", "t", 4]),
    helper.make_tensor_value_info("slots", i64, ["k", 2]),
    helper.make_tensor_value_info("rows", f32, ["k", 4]),
    helper.make_tensor_value_info("pick", i64, ["b", "p", 1]),
    helper.make_tensor_value_info("grid", f32, ["n", "gh", "gw", 2]),
    helper.make_tensor_value_info("scores", f32, ["r", "c"]),
]
outputs = [helper.make_tensor_value_info(name, t, None)
           for name, t in [("bilinear", f32), ("cubic", f32), ("nearest", f32), ("positions", i64),
                           ("rcumsum", f32), ("scattered", f32), ("cache_out", f32), ("picked", f32),
                           ("sampled", f32), ("top", f32), ("top_at", i64), ("low", f32),
                           ("low_at", i64)]]
graph = helper.make_graph(nodes, "device_ops", inputs, outputs, inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])

onnx.save(model, os.path.join(out, "device_ops.onnx"))


def scores(rows, cols):
    """Few distinct values (ties) and one NaN."""
    values = rng.integers(0, 4, (rows, cols)).astype(np.float32)
    values[rows // 2, cols // 2] = np.nan
    return values


def write_set(folder, n, h, w, b, s, u, t, k, p, gh, gw):
    os.makedirs(folder, exist_ok=True)
    slots = np.stack([rng.integers(0, b, k), rng.permutation(t)[:k]], axis=1)
    data = {
        "x": rng.standard_normal((n, 3, h, w)).astype(np.float32),
        "mask": (rng.random((b, s)) > 0.3).astype(np.int64),
        "seq": rng.standard_normal((b, s)).astype(np.float32),
        # Negative indices count from the end; repeats add up.
        "seq_idx": rng.integers(-s, s, (b, u)).astype(np.int64),
        "seq_upd": rng.standard_normal((b, u)).astype(np.float32),
        "cache": rng.standard_normal((b, t, 4)).astype(np.float32),
        "slots": slots.astype(np.int64),
        "rows": rng.standard_normal((k, 4)).astype(np.float32),
        "pick": rng.integers(-t, t, (b, p, 1)).astype(np.int64),
        # Some points off the image, where the reflection applies.
        "grid": rng.uniform(-1.3, 1.3, (n, gh, gw, 2)).astype(np.float32),
        "scores": scores(gh + 3, gw + 4),
    }
    for name, value in data.items():
        np.save(os.path.join(folder, name + ".npy"), value)


write_set(os.path.join(out, "small"), n=1, h=4, w=6, b=2, s=5, u=3, t=6, k=3, p=2, gh=3, gw=2)
write_set(os.path.join(out, "large"), n=2, h=9, w=7, b=3, s=33, u=40, t=17, k=9, p=5, gh=5, gw=8)
np.save(os.path.join(out, "bad_index.npy"), np.array([[0, 5, 1], [1, 2, 3]], np.int64))
