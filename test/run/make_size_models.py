#!/usr/bin/env python3
"""Writes the models of size-limits.test into the folder argv[1]: ops whose
result size comes from constants, symbol values or input data, at sizes that
overflow 64 bits or exceed the size limit."""
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


def i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def info(name, dtype, dims):
    return helper.make_tensor_value_info(name, dtype, dims)


one = helper.make_tensor("v", T.FLOAT, [1], [1.0])
# Static sizes: errors at compile time.
save("fill_wraps", [helper.make_node("ConstantOfShape", ["s"], ["y"], value=one)], [],
     [info("y", T.FLOAT, None)], [i64("s", [1 << 31, 1 << 31])])
save("tile_wraps", [helper.make_node("Tile", ["x", "r"], ["y"])], [info("x", T.FLOAT, [3, 4])],
     [info("y", T.FLOAT, None)], [i64("r", [1 << 40, 1 << 40])])
# A large splat is filled at run time, not stored: the artifact stays small.
save("fill_large", [helper.make_node("ConstantOfShape", ["s"], ["y"], value=one)], [],
     [info("y", T.FLOAT, None)], [i64("s", [1 << 22])])
# Symbolic sizes: errors at run time, once n is bound.
save("tile_symbolic", [helper.make_node("Tile", ["x", "r"], ["y"])], [info("x", T.FLOAT, ["n", 4])],
     [info("y", T.FLOAT, None)], [i64("r", [1 << 40, 1])])
save("expand_symbolic", [helper.make_node("Expand", ["x", "s"], ["y"])], [info("x", T.FLOAT, ["n", 1])],
     [info("y", T.FLOAT, None)], [i64("s", [1, 1 << 61])])
# Sizes from data: host steps check them before allocating.
save("expand_data", [helper.make_node("Expand", ["x", "s"], ["y"])],
     [info("x", T.FLOAT, [1, 1]), info("s", T.INT64, [2])], [info("y", T.FLOAT, None)])
save("pad_overflow", [helper.make_node("Pad", ["x", "p"], ["y"])], [info("x", T.FLOAT, [3, 4])],
     [info("y", T.FLOAT, None)], [i64("p", [0, 1 << 62, 0, 1 << 62])])
save("range_huge", [helper.make_node("Range", ["a", "b", "c"], ["y"])], [], [info("y", T.INT64, None)],
     [i64("a", -(1 << 62)), i64("b", 1 << 62), i64("c", 1)])

np.save(os.path.join(out, "x_3x1.npy"), np.ones((3, 1), np.float32))
np.save(os.path.join(out, "x_3x4.npy"), np.ones((3, 4), np.float32))
np.save(os.path.join(out, "x_1x1.npy"), np.ones((1, 1), np.float32))
np.save(os.path.join(out, "s_huge.npy"), np.array([1 << 40, 1 << 40], np.int64))
np.save(os.path.join(out, "s_negative.npy"), np.array([-1, -5], np.int64))
np.save(os.path.join(out, "s_small.npy"), np.array([2, 3], np.int64))
