#!/usr/bin/env python3
"""Writes ONNX models whose kernels read only part of an input, for the
roofline's traffic (roofline-traffic.test).

    make_traffic_models.py OUT_DIR

    embedding  a token embedding: Gather of rows of a [50000, 64] float table
               by ids [batch, seq], then a Relu (one pointwise kernel reading
               batch * seq rows of the table, not the table)
    window     a Slice of x [batch, 4096] to its columns 100 to 164, then a
               Tanh (the kernel reads 64 columns of each row)
"""
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from make_control_flow_models import save_model


def main(out):
    os.makedirs(out, exist_ok=True)
    table = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((50000, 64)).astype(np.float32), "table")
    save_model(out, "embedding", helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0),
         helper.make_node("Relu", ["rows"], ["y"])], "embedding",
        [helper.make_tensor_value_info("ids", T.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", 64])], [table]))
    consts = [numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in (("starts", [100]), ("ends", [164]), ("axes", [1]))]
    save_model(out, "window", helper.make_graph(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["w"]),
         helper.make_node("Tanh", ["w"], ["y"])], "window",
        [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 4096])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["batch", 64])], consts))


if __name__ == "__main__":
    main(sys.argv[1])
