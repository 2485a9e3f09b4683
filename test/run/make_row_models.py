#!/usr/bin/env python3
"""Writes row models (softmax, log_softmax, layer norm) with inputs and numpy's
outputs for run_numpy_cases.py, at row lengths around the row kernel's paths
(codegen/CudaEmitter.cpp emitRow): a warp per row up to 32 (256 when the
length is known), rows of a known length that are whole 128-bit vectors in
128-bit vectors (32 to 256 threads a row, 16 values a thread at most: up to
4096 floats), rows kept in registers between passes up to 2048 (1024 in
double), rows read again by every pass beyond.

    make_row_models.py OUT_DIR

    rows_softmax_L  x [4, 7, L] for L = 20, 40, 256, 300, 768, 1500, 2102 and
                    4096 (a model each: a row's length is static), softmax
                    over the last axis, with a row of -inf and a row of large
                    values
    rows_masked     softmax((x + mask) * f) for x [2, 3, 8, 256], a mask
                    [2, 1, 1, 256] (read along the row) and a factor
                    [2, 3, 8, 1] (one per row): the inputs of the vector path
    rows_half       x [4, 7, 768] float16 softmax (8 halves a vector)
    rows_logsoftmax x [6, 300]: log_softmax
    rows_layernorm  x [3, 5, 768] + residual, LayerNormalization with scale
                    and bias (BERT's width)
    rows_double     x [5, 1000] float64 softmax (the double cache limit)
"""
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from make_control_flow_models import save_model, save_set


def softmax(x, axis=-1):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isinf(m), 0.0, m)
        e = np.exp(x - m)
        return e / np.sum(e, axis=axis, keepdims=True)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(11)
    for length in (20, 40, 256, 300, 768, 1500, 2102, 4096):
        name = f"rows_softmax_{length}"
        x = helper.make_tensor_value_info("x", T.FLOAT, [4, 7, length])
        y = helper.make_tensor_value_info("y", T.FLOAT, [4, 7, length])
        save_model(out, name, helper.make_graph(
            [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], name, [x], [y]))
        data = rng.standard_normal((4, 7, length)).astype(np.float32) * 3
        data[0, 0, :] = -np.inf
        data[1, 2, :] = 80.0 + rng.standard_normal(length).astype(np.float32)
        save_set(out, name, 0, {"x": data}, [softmax(data).astype(np.float32)])

    x = helper.make_tensor_value_info("x", T.FLOAT, [6, 300])
    y = helper.make_tensor_value_info("y", T.FLOAT, [6, 300])
    save_model(out, "rows_logsoftmax", helper.make_graph(
        [helper.make_node("LogSoftmax", ["x"], ["y"], axis=1)], "rows_logsoftmax", [x], [y]))
    data = rng.standard_normal((6, 300)).astype(np.float32) * 4
    save_set(out, "rows_logsoftmax", 0, {"x": data},
             [np.log(softmax(data)).astype(np.float32)])

    width = 768
    x = helper.make_tensor_value_info("x", T.FLOAT, [3, 5, width])
    r = helper.make_tensor_value_info("r", T.FLOAT, [3, 5, width])
    y = helper.make_tensor_value_info("y", T.FLOAT, [3, 5, width])
    gamma = rng.standard_normal(width).astype(np.float32)
    beta = rng.standard_normal(width).astype(np.float32)
    save_model(out, "rows_layernorm", helper.make_graph(
        [helper.make_node("Add", ["x", "r"], ["s"]),
         helper.make_node("LayerNormalization", ["s", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-5)],
        "rows_layernorm", [x, r], [y],
        [numpy_helper.from_array(gamma, "gamma"), numpy_helper.from_array(beta, "beta")]))
    a = rng.standard_normal((3, 5, width)).astype(np.float32)
    b = rng.standard_normal((3, 5, width)).astype(np.float32) + 2
    s64 = a.astype(np.float64) + b.astype(np.float64)
    mean = s64.mean(axis=-1, keepdims=True)
    var = ((s64 - mean) ** 2).mean(axis=-1, keepdims=True)
    want = (s64 - mean) / np.sqrt(var + 1e-5) * gamma + beta
    save_set(out, "rows_layernorm", 0, {"x": a, "r": b}, [want.astype(np.float32)])

    shape = [2, 3, 8, 256]
    save_model(out, "rows_masked", helper.make_graph(
        [helper.make_node("Add", ["x", "mask"], ["s"]),
         helper.make_node("Mul", ["s", "f"], ["m"]),
         helper.make_node("Softmax", ["m"], ["y"], axis=-1)], "rows_masked",
        [helper.make_tensor_value_info("x", T.FLOAT, shape),
         helper.make_tensor_value_info("mask", T.FLOAT, [2, 1, 1, 256]),
         helper.make_tensor_value_info("f", T.FLOAT, [2, 3, 8, 1])],
        [helper.make_tensor_value_info("y", T.FLOAT, shape)]))
    data = rng.standard_normal(shape).astype(np.float32)
    mask = np.where(rng.random((2, 1, 1, 256)) < 0.3, -1e4, 0).astype(np.float32)
    f = rng.uniform(0.5, 2, (2, 3, 8, 1)).astype(np.float32)
    m = (data + mask) * f
    save_set(out, "rows_masked", 0, {"x": data, "mask": mask, "f": f},
             [softmax(m).astype(np.float32)])

    x = helper.make_tensor_value_info("x", T.FLOAT16, [4, 7, 768])
    y = helper.make_tensor_value_info("y", T.FLOAT16, [4, 7, 768])
    save_model(out, "rows_half", helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "rows_half", [x], [y]))
    data = (rng.standard_normal((4, 7, 768)) * 3).astype(np.float16)
    save_set(out, "rows_half", 0, {"x": data}, [softmax(data).astype(np.float16)])

    x = helper.make_tensor_value_info("x", T.DOUBLE, [5, 1000])
    y = helper.make_tensor_value_info("y", T.DOUBLE, [5, 1000])
    save_model(out, "rows_double", helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "rows_double", [x], [y]))
    data = rng.standard_normal((5, 1000)) * 5
    save_set(out, "rows_double", 0, {"x": data}, [softmax(data)])


if __name__ == "__main__":
    main()
