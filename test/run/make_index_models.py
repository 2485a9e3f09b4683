#!/usr/bin/env python3
"""Writes models for the 32-bit index test (test/run/index32.test), with inputs
and numpy's outputs for run_numpy_cases.py.

    make_index_models.py OUT_DIR

    idx_heads      a BERT head split x [8, 128, 768] -> [8, 12, 128, 64], times 2:
                   constant sizes that fit, so 32-bit indices
    idx_heads_dyn  the same with a symbolic batch: 64-bit indices, and 32-bit
                   in a shape-bucket variant that fixes the batch (set 0 has
                   batch 8, set 1 batch 3)
    idx_i64        x + y on int64 data [4, 6]: 64-bit (the data is)
    idx_concat     concat of a slice of x [3, 10] and a pad of y [3, 2] along
                   axis 1, then a transpose: the ops that move elements by
                   position, in 32 bits
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
    rng = np.random.default_rng(31)
    for name, batch in (("idx_heads", 8), ("idx_heads_dyn", "b")):
        save_model(out, name, helper.make_graph(
            [helper.make_node("Reshape", ["x", "s"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
             helper.make_node("Mul", ["t", "two"], ["y"])], name,
            [helper.make_tensor_value_info("x", T.FLOAT, [batch, 128, 768])],
            [helper.make_tensor_value_info("y", T.FLOAT, [batch, 12, 128, 64])],
            [numpy_helper.from_array(np.array([-1, 128, 12, 64], np.int64), "s"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two")]))
        for number, n in enumerate((8, 3) if name == "idx_heads_dyn" else (8,)):
            x = rng.standard_normal((n, 128, 768)).astype(np.float32)
            save_set(out, name, number, {"x": x},
                     [x.reshape(n, 128, 12, 64).transpose(0, 2, 1, 3) * 2])

    save_model(out, "idx_i64", helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"])], "idx_i64",
        [helper.make_tensor_value_info("x", T.INT64, [4, 6]),
         helper.make_tensor_value_info("y", T.INT64, [4, 6])],
        [helper.make_tensor_value_info("z", T.INT64, [4, 6])]))
    a = rng.integers(-2**40, 2**40, (4, 6)).astype(np.int64)
    b = rng.integers(-2**40, 2**40, (4, 6)).astype(np.int64)
    save_set(out, "idx_i64", 0, {"x": a, "y": b}, [a + b])

    save_model(out, "idx_concat", helper.make_graph(
        [helper.make_node("Slice", ["x", "st", "en", "ax"], ["s"]),
         helper.make_node("Pad", ["y", "pads"], ["p"]),
         helper.make_node("Concat", ["s", "p"], ["c"], axis=1),
         helper.make_node("Transpose", ["c"], ["z"], perm=[1, 0])], "idx_concat",
        [helper.make_tensor_value_info("x", T.FLOAT, [3, 10]),
         helper.make_tensor_value_info("y", T.FLOAT, [3, 2])],
        [helper.make_tensor_value_info("z", T.FLOAT, [11, 3])],
        [numpy_helper.from_array(np.array([2], np.int64), "st"),
         numpy_helper.from_array(np.array([9], np.int64), "en"),
         numpy_helper.from_array(np.array([1], np.int64), "ax"),
         numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")]))
    x = rng.standard_normal((3, 10)).astype(np.float32)
    y = rng.standard_normal((3, 2)).astype(np.float32)
    want = np.concatenate([x[:, 2:9], np.pad(y, ((0, 0), (1, 1)))], axis=1).T
    save_set(out, "idx_concat", 0, {"x": x, "y": y}, [np.ascontiguousarray(want)])


if __name__ == "__main__":
    main()
