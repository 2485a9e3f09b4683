#!/usr/bin/env python3
"""ResNet-18's graph as onnx.helper writes it (torchvision's layers, random
weights): the float model make_qdq_models.py quantizes (int8) and fp8.test
runs under --precision fp8. Needs onnx and numpy only.

    resnet_model.py OUT.onnx SEED    the model, its weights drawn from SEED
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper


def resnet18(rng):
    """ResNet-18's graph, NCHW, its batch norms folded into conv biases, its
    weights drawn from `rng` (a generator of its own: its data must not move
    when another model draws more numbers)."""
    nodes, inits = [], []

    def conv(x, cin, cout, k, stride, name, relu):
        w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        b = (0.05 * rng.standard_normal(cout)).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, name + ".w"), numpy_helper.from_array(b, name + ".b")])
        nodes.append(helper.make_node("Conv", [x, name + ".w", name + ".b"], [name], kernel_shape=[k, k],
                                      strides=[stride, stride], pads=[k // 2] * 4))
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [name + ".relu"]))
        return name + ".relu"

    x = conv("x", 3, 64, 7, 2, "stem", True)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    x, cin = "pool", 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            name = f"layer{stage + 1}.{block}"
            h = conv(x, cin, cout, 3, stride, name + ".conv1", True)
            h = conv(h, cout, cout, 3, 1, name + ".conv2", False)
            skip = conv(x, cin, cout, 1, stride, name + ".down", False) if stride != 1 or cin != cout else x
            nodes.append(helper.make_node("Add", [h, skip], [name + ".add"]))
            nodes.append(helper.make_node("Relu", [name + ".add"], [name + ".out"]))
            x, cin = name + ".out", cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    fc = (rng.standard_normal((1000, 512)) / np.sqrt(512)).astype(np.float32)
    inits.extend([numpy_helper.from_array(fc, "fc.w"),
                  numpy_helper.from_array((0.01 * rng.standard_normal(1000)).astype(np.float32), "fc.b")])
    nodes.append(helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["y"], transB=1))
    graph = helper.make_graph(
        nodes, "resnet18", [helper.make_tensor_value_info("x", T.FLOAT, ["n", 3, 64, 64])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["n", 1000])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


if __name__ == "__main__":
    onnx.save(resnet18(np.random.default_rng(int(sys.argv[2]))), sys.argv[1])
