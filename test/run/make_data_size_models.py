#!/usr/bin/env python3
"""Writes ONNX models whose sizes the data decides, with inputs and numpy's
outputs (the layout run_numpy_cases.py reads).

    make_data_size_models.py OUT_DIR

    nonzero_chain  the positive entries of x picked by NonZero, then scaled,
                   shifted and summed with their positions: the ops after
                   NonZero have a dim only its result decides, which the step
                   binds at run time so they run as generated kernels;
                   data sets with 3 of 6 positive, all 9, and none of 4
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper


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


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    nonzero_chain(out)


if __name__ == "__main__":
    main()
