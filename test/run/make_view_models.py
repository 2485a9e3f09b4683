#!/usr/bin/env python3
"""Writes a model whose reshapes have nothing to fuse into them (between
matmuls, and one a model output), with inputs and numpy's outputs for
run_numpy_cases.py: kiln makes each a View step, its input's bytes under new
dims, and the memory plan keeps those bytes live for as long as the view is
read.

    make_view_models.py OUT_DIR

    views  x, z [batch, 8, 16]; a = x @ w1; r = reshape(a, [-1, 16]) (a
           view read by the last matmul, after b, c and d were computed:
           their bytes must not be a's); b = z @ w3; c = tanh(b); d = c @ w4;
           e = reshape(d, [-1, 16]); y = r @ w2 + e; flat = reshape(y,
           [-1, 128]) (a view that is an output beside its input). Data
           sets at batch 1 and 3.
    views_runtime  the same two matmul chains reshaped to a shape the model
           takes as an input ([4 batch, 32]) and added: reshapes whose shape
           is read at run time, their results their inputs' bytes.
"""
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from make_control_flow_models import save_model, save_set


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(5)
    w = {k: (rng.standard_normal((16, 16)) * 0.25).astype(np.float32)
         for k in ("w1", "w2", "w3", "w4")}
    shapes = {"rows": np.array([-1, 16], np.int64), "flat_shape": np.array([-1, 128], np.int64)}
    x = helper.make_tensor_value_info("x", T.FLOAT, ["batch", 8, 16])
    z = helper.make_tensor_value_info("z", T.FLOAT, ["batch", 8, 16])
    y = helper.make_tensor_value_info("y", T.FLOAT, ["rows", 16])
    flat = helper.make_tensor_value_info("flat", T.FLOAT, ["batch", 128])
    def chains(shape):
        """a = x @ w1 and d = tanh(z @ w3) @ w4, each reshaped by `shape`
        (to r and e): r is read after b, c and d exist."""
        return [
            helper.make_node("MatMul", ["x", "w1"], ["a"]),
            helper.make_node("Reshape", ["a", shape], ["r"]),
            helper.make_node("MatMul", ["z", "w3"], ["b"]),
            helper.make_node("Tanh", ["b"], ["c"]),
            helper.make_node("MatMul", ["c", "w4"], ["d"]),
            helper.make_node("Reshape", ["d", shape], ["e"]),
        ]

    nodes = chains("rows") + [
        helper.make_node("MatMul", ["r", "w2"], ["f"]),
        helper.make_node("Add", ["f", "e"], ["y"]),
        helper.make_node("Reshape", ["y", "flat_shape"], ["flat"]),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in {**w, **shapes}.items()]
    save_model(out, "views", helper.make_graph(nodes, "views", [x, z], [y, flat], inits))
    # The same with a shape the model takes as an input: a Reshape host step
    # (its shape read back) whose result is its input's bytes on every
    # backend, kept live the same way.
    shape_in = helper.make_tensor_value_info("shape", T.INT64, [2])
    runtime_nodes = chains("shape") + [helper.make_node("Add", ["r", "e"], ["y"])]
    save_model(out, "views_runtime", helper.make_graph(
        runtime_nodes, "views_runtime", [x, z, shape_in],
        [helper.make_tensor_value_info("y", T.FLOAT, ["rows", "cols"])],
        [numpy_helper.from_array(v, k) for k, v in w.items()]))
    w64 = {k: v.astype(np.float64) for k, v in w.items()}
    for s, batch in enumerate((1, 3)):
        data = rng.standard_normal((batch, 8, 16)).astype(np.float32)
        other = rng.standard_normal((batch, 8, 16)).astype(np.float32)
        a = data.astype(np.float64) @ w64["w1"]
        d = np.tanh(other.astype(np.float64) @ w64["w3"]) @ w64["w4"]
        want_y = a.reshape(-1, 16) @ w64["w2"] + d.reshape(-1, 16)
        save_set(out, "views", s, {"x": data, "z": other},
                 [want_y.astype(np.float32), want_y.reshape(-1, 128).astype(np.float32)])
        shape = np.array([batch * 4, 32], np.int64)
        save_set(out, "views_runtime", s, {"x": data, "z": other, "shape": shape},
                 [(a.reshape(shape) + d.reshape(shape)).astype(np.float32)])


if __name__ == "__main__":
    main()
