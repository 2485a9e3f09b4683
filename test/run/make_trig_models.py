#!/usr/bin/env python3
"""Writes trig.onnx (y_sin, y_cos, y_tan of a float32 x) and data sets under
trig/ for run_numpy_cases.py: ordinary arguments and ones near multiples of
pi/2; large ones (1e5 to the largest float, where the reduction by pi/2 needs
2/pi's bits far past the binary point: kiln_device.h's kiln_reduce_half_pi);
zeros, denormals, infinities and NaN. numpy's values: the float64 functions
of the float32 arguments, rounded once to float32.

    make_trig_models.py DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def main():
    out = sys.argv[1]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])
    outputs = [helper.make_tensor_value_info(f"y_{f}", TensorProto.FLOAT, ["n"])
               for f in ("sin", "cos", "tan")]
    nodes = [helper.make_node(op, ["x"], [f"y_{op.lower()}"]) for op in ("Sin", "Cos", "Tan")]
    graph = helper.make_graph(nodes, "trig", [x], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(out, "trig.onnx"))
    rng = np.random.default_rng(7)
    half_pi = np.pi / 2
    sets = {
        "0_ordinary": np.concatenate([
            np.linspace(-10, 10, 401),
            # The floats nearest multiples of pi/2, and their neighbours.
            np.array([k * half_pi for k in range(-40, 41)]),
            np.nextafter(np.array([k * half_pi for k in range(1, 41)], np.float32), np.float32(0)),
        ]),
        "1_large": np.concatenate([
            rng.choice([-1.0, 1.0], 2000) * 10.0 ** rng.uniform(5, 38.5, 2000),
            2.0 ** np.arange(17, 128),
            np.array([105615.0, 105616.0, 8388607.5, 8388608.0, 8388609.0, 3.4028235e38, -3.4028235e38]),
        ]),
        "2_special": np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, 1e-30, -1e-10, np.inf, -np.inf, np.nan]),
    }
    for name, values in sets.items():
        folder = os.path.join(out, "trig", name)
        os.makedirs(folder, exist_ok=True)
        x32 = values.astype(np.float32)
        np.save(os.path.join(folder, "in_x.npy"), x32)
        with np.errstate(invalid="ignore"):
            for k, f in enumerate((np.sin, np.cos, np.tan)):
                np.save(os.path.join(folder, f"want_{k}.npy"), f(x32.astype(np.float64)).astype(np.float32))


if __name__ == "__main__":
    main()
