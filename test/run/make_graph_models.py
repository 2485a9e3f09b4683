#!/usr/bin/env python3
"""Writes models for CUDA graph tests (test/run/cuda-graphs.test), with inputs
and numpy's outputs for run_numpy_cases.py.

    make_graph_models.py OUT_DIR

    graph_fallback  a = x [2, k] @ y [k, 3], tanh, then @ w [3, 4]. At k = 3
                    the matmuls run in cuBLASLt and the three steps are one
                    graph; at k = 0 the first matmul (a result of zeros) runs
                    on the host, inside the stretch, which then runs step by
                    step. Data sets: 0 at k = 3, 1 at k = 0.
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
    rng = np.random.default_rng(9)
    w = (rng.standard_normal((3, 4)) * 0.3).astype(np.float32)
    x = helper.make_tensor_value_info("x", T.FLOAT, [2, "k"])
    y = helper.make_tensor_value_info("y", T.FLOAT, ["k", 3])
    out_info = helper.make_tensor_value_info("out", T.FLOAT, [2, 4])
    save_model(out, "graph_fallback", helper.make_graph(
        [helper.make_node("MatMul", ["x", "y"], ["a"]),
         helper.make_node("Tanh", ["a"], ["t"]),
         helper.make_node("MatMul", ["t", "w"], ["out"])],
        "graph_fallback", [x, y], [out_info], [numpy_helper.from_array(w, "w")]))
    for s, k in enumerate((3, 0)):
        a = rng.standard_normal((2, k)).astype(np.float32)
        b = rng.standard_normal((k, 3)).astype(np.float32)
        want = np.tanh(a.astype(np.float64) @ b.astype(np.float64)) @ w.astype(np.float64)
        save_set(out, "graph_fallback", s, {"x": a, "y": b}, [want.astype(np.float32)])


if __name__ == "__main__":
    main()
