#!/usr/bin/env python3
"""Writes the models and inputs of data-semantics.test into the folder argv[1]:
the cases where generated kernels and the reference once disagreed (an index out
of range, a gather on an empty axis, integer division by zero, arg_max over an
empty axis, a slice step of INT64_MIN, softmax over infinities)."""
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


def npy(name, array):
    np.save(os.path.join(out, name + ".npy"), array)


table = numpy_helper.from_array(np.arange(15, dtype=np.float32).reshape(5, 3), "table")
save("gather", [helper.make_node("Gather", ["table", "i"], ["y"], axis=0)],
     [helper.make_tensor_value_info("i", T.INT64, ["n"])], [helper.make_tensor_value_info("y", T.FLOAT, ["n", 3])],
     [table])
npy("i_ok", np.array([0, 4, -1], np.int64))
npy("i_high", np.array([0, 5], np.int64))
npy("i_low", np.array([-6], np.int64))
save("gather_data", [helper.make_node("Gather", ["d", "i"], ["y"], axis=0)],
     [helper.make_tensor_value_info("d", T.FLOAT, ["k", 3]), helper.make_tensor_value_info("i", T.INT64, ["n"])],
     [helper.make_tensor_value_info("y", T.FLOAT, ["n", 3])])
npy("d_empty", np.zeros((0, 3), np.float32))
npy("i_zero", np.array([0], np.int64))
save("divide", [helper.make_node("Div", ["a", "b"], ["y"]), ],
     [helper.make_tensor_value_info("a", T.INT64, ["n"]), helper.make_tensor_value_info("b", T.INT64, ["n"])],
     [helper.make_tensor_value_info("y", T.INT64, ["n"])])
npy("a", np.array([7, -7, 9], np.int64))
npy("b_ok", np.array([2, 2, -4], np.int64))
npy("b_zero", np.array([2, 0, 1], np.int64))
save("argmax", [helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)],
     [helper.make_tensor_value_info("x", T.FLOAT, ["n", "m"])], [helper.make_tensor_value_info("y", T.INT64, ["n"])])
npy("x_empty_axis", np.zeros((2, 0), np.float32))
save("slice_min_step", [helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])],
     [helper.make_tensor_value_info("x", T.FLOAT, [5])], [helper.make_tensor_value_info("y", T.FLOAT, None)],
     [numpy_helper.from_array(np.array([-1], np.int64), "s"), numpy_helper.from_array(np.array([-10], np.int64), "e"),
      numpy_helper.from_array(np.array([0], np.int64), "a"),
      numpy_helper.from_array(np.array([np.iinfo(np.int64).min], np.int64), "st")])
npy("x5", np.arange(5, dtype=np.float32))
save("softmax", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
     [helper.make_tensor_value_info("x", T.FLOAT, [3, 2])], [helper.make_tensor_value_info("y", T.FLOAT, [3, 2])])
npy("x_inf", np.array([[np.inf, -np.inf], [-np.inf, -np.inf], [1.0, np.inf]], np.float32))
# An SSD's anchors: a grid whose dims are data (Expand to a shape read at run
# time), flattened and given a trailing 1; the two reshapes once folded to the
# grid itself, its types being equal.
save("reshape_unknown", [helper.make_node("Expand", ["x", "shape"], ["grid"]),
                         helper.make_node("Reshape", ["grid", "flat"], ["f"]),
                         helper.make_node("Unsqueeze", ["f", "last"], ["y"])],
     [helper.make_tensor_value_info("x", T.FLOAT, [1, "k"]), helper.make_tensor_value_info("shape", T.INT64, [2])],
     [helper.make_tensor_value_info("y", T.FLOAT, None)],
     [numpy_helper.from_array(np.array([-1], np.int64), "flat"),
      numpy_helper.from_array(np.array([-1], np.int64), "last")])
npy("x14", np.arange(4, dtype=np.float32).reshape(1, 4))
npy("shape34", np.array([3, 4], np.int64))
