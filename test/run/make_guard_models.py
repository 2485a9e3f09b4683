#!/usr/bin/env python3
"""Writes the models and inputs of guards.test into the folder argv[1]: graphs
whose symbolic shapes rest on facts kiln cannot prove at compile time (a dim
broadcast against a static size, matmul contraction dims, concat's other dims, a
slice end inside its dim), each with inputs that keep the fact and inputs that
break it."""
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
    onnx.save(model(nodes, inputs, outputs, initializers), os.path.join(out, name + ".onnx"))


def npy(name, array):
    np.save(os.path.join(out, name + ".npy"), array)


def f32(name, dims):
    return helper.make_tensor_value_info(name, T.FLOAT, dims)


save("broadcast", [helper.make_node("Add", ["x", "c"], ["y"])], [f32("x", ["n"])], [f32("y", [4])],
     [numpy_helper.from_array(np.array([10, 20, 30, 40], np.float32), "c")])
npy("x4", np.array([1, 2, 3, 4], np.float32))
npy("x1", np.array([1], np.float32))
npy("x3", np.array([1, 2, 3], np.float32))

save("matmul", [helper.make_node("MatMul", ["a", "b"], ["y"])], [f32("a", [2, "k"]), f32("b", ["j", 3])],
     [f32("y", [2, 3])])
npy("a2x2", np.ones((2, 2), np.float32))
npy("b2x3", np.ones((2, 3), np.float32))
npy("b3x3", np.ones((3, 3), np.float32))

save("concat", [helper.make_node("Concat", ["p", "q"], ["y"], axis=0)], [f32("p", [1, "a"]), f32("q", [1, "b"])],
     [f32("y", [2, "a"])])
npy("p1x3", np.ones((1, 3), np.float32))
npy("q1x3", np.ones((1, 3), np.float32))
npy("q1x4", np.ones((1, 4), np.float32))

starts, ends, axes = (numpy_helper.from_array(np.array([v], np.int64), n)
                      for n, v in (("starts", 0), ("ends", 3), ("axes", 0)))
save("slice", [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"])], [f32("x", ["seq", 2])],
     [f32("y", [3, 2])], [starts, ends, axes])
npy("s5x2", np.arange(10, dtype=np.float32).reshape(5, 2))
npy("s2x2", np.arange(4, dtype=np.float32).reshape(2, 2))

# The torch TransformerEncoderLayer at a sequence length other than its export's.
rng = np.random.default_rng(7)
npy("mha_seq7", rng.standard_normal((2, 7, 32), dtype=np.float32))
