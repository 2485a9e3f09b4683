#!/usr/bin/env python3
"""Writes trailing reductions with inputs and numpy's outputs for
run_numpy_cases.py, around the reduction kernel's paths
(codegen/CudaEmitter.cpp emitReduction): a warp per output up to 256
reduced elements of a known count, a block per output beyond (or when the
count is known only at run time); and column reductions, in 2-D tiles of
32 outputs whose warps split the rows.

    make_reduce_models.py OUT_DIR

    red_pool   ReduceMean over [2, 3] of x [n, 16, 7, 7], keepdims (a global
               average pool: 49 elements an output)
    red_sum    ReduceSum over the last axis of x [n, 5, 100]
    red_max    ReduceMax over the last axis of x [n, 9, 33] int32
    red_long   ReduceSum over the last axis of x [n, 3, 1000] (a block each)
    red_dyn    ReduceSum over the last axis of x [3, n] (a count known only
               at run time: a block each)
    red_column ReduceSum over axis 0 of x [8192, 8], keepdims (a column
               reduction to 8 results, split into 512 chunks of 16 rows by
               kiln-split-reductions)
    red_columns ReduceMax over [0, 1] of x [64, 128, n, 2] (several leading
               axes; n is a symbol, so this one is not split)
Data sets at n = 1 and n = 5 (more outputs than one block's eight warps).
"""
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from make_control_flow_models import save_model, save_set

MODELS = {
    "red_pool": ("ReduceMean", ["n", 16, 7, 7], [2, 3], 1, T.FLOAT),
    "red_sum": ("ReduceSum", ["n", 5, 100], [2], 0, T.FLOAT),
    "red_max": ("ReduceMax", ["n", 9, 33], [2], 0, T.INT32),
    "red_long": ("ReduceSum", ["n", 3, 1000], [2], 0, T.FLOAT),
    "red_dyn": ("ReduceSum", [3, "n"], [1], 0, T.FLOAT),
    "red_column": ("ReduceSum", [8192, 8], [0], 1, T.FLOAT),
    "red_columns": ("ReduceMax", [64, 128, "n", 2], [0, 1], 0, T.FLOAT),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(29)
    for name, (op, shape, axes, keep, elem) in MODELS.items():
        result = [1 if d in axes else s for d, s in enumerate(shape)] if keep else \
            [s for d, s in enumerate(shape) if d not in axes]
        # Opset 17: ReduceSum takes its axes as an input, the others as an
        # attribute.
        if op == "ReduceSum":
            node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=keep)
            inits = [numpy_helper.from_array(np.array(axes, np.int64), "axes")]
        else:
            node = helper.make_node(op, ["x"], ["y"], keepdims=keep, axes=axes)
            inits = []
        save_model(out, name, helper.make_graph(
            [node], name, [helper.make_tensor_value_info("x", elem, shape)],
            [helper.make_tensor_value_info("y", elem, result)], inits))
        for s, n in enumerate((1, 5)):
            dims = [n if d == "n" else d for d in shape]
            if elem == T.INT32:
                x = rng.integers(-1000, 1000, dims).astype(np.int32)
            else:
                x = rng.standard_normal(dims).astype(np.float32)
            f = {"ReduceMean": np.mean, "ReduceSum": np.sum, "ReduceMax": np.max}[op]
            want = f(x.astype(np.float64) if elem == T.FLOAT else x, axis=tuple(axes), keepdims=bool(keep))
            save_set(out, name, s, {"x": x}, [want.astype(np.float32 if elem == T.FLOAT else np.int32)])


if __name__ == "__main__":
    main()
