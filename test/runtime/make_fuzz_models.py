#!/usr/bin/env python3
"""Writes the seed models of the runtime fuzzers into the folder argv[1].

size_*.onnx take their sizes (shapes, repeats, pads, starts, range bounds) as
int64 graph inputs, so the run-time-size fuzzer can feed them any values; the
others are small compiled-model shapes (pointwise, reductions, gathers, library
steps, control flow, a size a step binds) for the artifact fuzzer to edit.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

# The graph-building helper the importer's tests share (test/frontend/onnx).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "frontend", "onnx"))
from make_model import model  # noqa: E402

out = sys.argv[1]


def save(name, nodes, inputs, outputs, initializers=()):
    # Unchecked: some of these models are invalid on purpose.
    onnx.save(model(nodes, inputs, outputs, initializers, check=False), os.path.join(out, name + ".onnx"))


def f32(name, dims):
    return helper.make_tensor_value_info(name, T.FLOAT, dims)


def i64(name, dims):
    return helper.make_tensor_value_info(name, T.INT64, dims)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


any_out = [f32("y", None)]
save("size_expand", [helper.make_node("Expand", ["x", "s"], ["y"])], [f32("x", ["n", 1]), i64("s", [2])], any_out)
save("size_tile", [helper.make_node("Tile", ["x", "r"], ["y"])], [f32("x", [2, 3]), i64("r", [2])], any_out)
save("size_pad", [helper.make_node("Pad", ["x", "p"], ["y"])], [f32("x", ["n", 3]), i64("p", [4])], any_out)
save("size_reshape", [helper.make_node("Reshape", ["x", "s"], ["y"])], [f32("x", [2, 6]), i64("s", [3])], any_out)
save("size_slice", [helper.make_node("Slice", ["x", "b", "e", "a", "st"], ["y"])],
     [f32("x", ["n", 5]), i64("b", [2]), i64("e", [2]), i64("st", [2])], any_out, [const("a", np.array([0, 1], np.int64))])
save("size_range", [helper.make_node("Range", ["a", "b", "c"], ["y"])], [i64("a", []), i64("b", []), i64("c", [])],
     [i64("y", None)])
save("size_fill", [helper.make_node("ConstantOfShape", ["s"], ["y"], value=helper.make_tensor("v", T.FLOAT, [1], [2.0]))],
     [i64("s", [3])], any_out)
# Sizes read back from the device (ReadSizes steps): a TopK's k, and the most
# boxes NonMaxSuppression keeps per class.
save("size_topk", [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1)], [f32("x", ["n", 6]), i64("k", [1])],
     [f32("v", None), i64("i", None)])
save("size_nms", [helper.make_node("NonMaxSuppression", ["b", "s", "m", "iou"], ["y"])],
     [f32("b", [1, "n", 4]), f32("s", [1, 2, "n"]), i64("m", [1])], [i64("y", None)],
     [const("iou", np.array([0.5], np.float32))])

rng = np.random.default_rng(0)
save("edit_pointwise", [helper.make_node("Mul", ["x", "w"], ["m"]), helper.make_node("Sigmoid", ["m"], ["y"])],
     [f32("x", ["n", 4])], [f32("y", ["n", 4])], [const("w", rng.standard_normal((4,), dtype=np.float32))])
save("edit_library", [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
                      helper.make_node("ReduceSum", ["r", "axes"], ["y"], keepdims=1)],
     [f32("x", ["n", 8])], [f32("y", ["n", 1])],
     [const("w", rng.standard_normal((8, 6), dtype=np.float32)), const("axes", np.array([1], np.int64))])
save("edit_gather", [helper.make_node("Gather", ["w", "i"], ["g"], axis=0), helper.make_node("Softmax", ["g"], ["y"], axis=-1),
                     helper.make_node("TopK", ["g", "k"], ["tv", "ti"], axis=-1)],
     [i64("i", ["n"])], [f32("y", ["n", 5]), i64("ti", ["n", 2])],
     [const("w", rng.standard_normal((7, 5), dtype=np.float32)), const("k", np.array([2], np.int64))])
save("edit_conv", [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                   helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
     [f32("x", ["n", 2, 6, 6])], [f32("y", ["n", 3, 3, 3])],
     [const("w", rng.standard_normal((3, 2, 3, 3), dtype=np.float32)), const("b", rng.standard_normal((3,), dtype=np.float32))])

# Control steps (If, Loop, Scan: bodies, parameters, results) and a step that
# binds a symbol (NonZero's count) for the kernels after it.
then_g = helper.make_graph([helper.make_node("Abs", ["x"], ["ta"])], "then", [], [f32("ta", ["n", 4])])
else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["ea"])], "else", [], [f32("ea", ["n", 4])])
loop_g = helper.make_graph(
    [helper.make_node("Mul", ["acc_in", "x"], ["acc_out"]), helper.make_node("Identity", ["acc_out"], ["slice"])],
    "loop", [i64("it", []), helper.make_tensor_value_info("c_in", T.BOOL, []), f32("acc_in", ["n", 4])],
    [helper.make_tensor_value_info("c_in", T.BOOL, []), f32("acc_out", ["n", 4]), f32("slice", ["n", 4])])
scan_g = helper.make_graph(
    [helper.make_node("Add", ["s_in", "row"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["each"])],
    "scan", [f32("s_in", [4]), f32("row", [4])], [f32("s_out", [4]), f32("each", [4])])
save("edit_control",
     [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
      helper.make_node("Greater", ["total", "zero"], ["cond"]),
      helper.make_node("If", ["cond"], ["branch"], then_branch=then_g, else_branch=else_g),
      helper.make_node("Loop", ["trips", "yes", "x"], ["looped", "steps"], body=loop_g),
      helper.make_node("Scan", ["s0", "x"], ["summed", "sums"], body=scan_g, num_scan_inputs=1),
      helper.make_node("Greater", ["x", "zero"], ["positive"]),
      helper.make_node("NonZero", ["positive"], ["where"]),
      helper.make_node("Mul", ["where", "two"], ["doubled"])],
     [f32("x", ["n", 4])],
     [f32("branch", ["n", 4]), f32("looped", ["n", 4]), f32("steps", [3, "n", 4]), f32("summed", [4]),
      f32("sums", ["n", 4]), i64("doubled", [2, "k"])],
     [const("zero", np.array(0.0, np.float32)), const("trips", np.array(3, np.int64)),
      const("yes", np.array(True)), const("s0", np.zeros(4, np.float32)), const("two", np.array(2, np.int64))])

# Unique (rows) and NonZero on the device: compaction and selection kernels,
# counts read back.
save("edit_unique", [helper.make_node("Unique", ["x"], ["u", "i", "inv", "c"], axis=0),
                     helper.make_node("NonZero", ["x"], ["nz"])],
     [f32("x", ["n", 3])], [f32("u", None), i64("i", None), i64("inv", None), i64("c", None), i64("nz", None)])

# Tensor-file seeds: .npy of several dtypes and ranks, and TensorProtos.
np.save(os.path.join(out, "seed_f32.npy"), rng.standard_normal((2, 3), dtype=np.float32))
np.save(os.path.join(out, "seed_i64.npy"), np.arange(5, dtype=np.int64))
np.save(os.path.join(out, "seed_bool.npy"), np.array([[True, False]]))
np.save(os.path.join(out, "seed_scalar.npy"), np.float64(3.5))
for name, array in [("seed_f32.pb", rng.standard_normal((3, 2), dtype=np.float32)),
                    ("seed_i32.pb", np.arange(6, dtype=np.int32).reshape(2, 3)),
                    ("seed_f16.pb", np.ones((4,), np.float16))]:
    with open(os.path.join(out, name), "wb") as f:
        f.write(numpy_helper.from_array(array, "t").SerializeToString())
