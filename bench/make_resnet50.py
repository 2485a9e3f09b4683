#!/usr/bin/env python3
"""Writes ResNet-50 (v1.5, as torchvision builds it) with random weights: a 7x7
stride-2 stem, 3x3 max pool, bottleneck stages of 3, 4, 6 and 3 blocks (1x1,
3x3 with the stage's stride, 1x1 to four times the width; a 1x1 projection
where the shape changes), each conv followed by BatchNormalization as an eval
export keeps it, ReLU after each add, global average pool, Flatten and the
1000-class Gemm. Input [batch, 3, 224, 224], batch dynamic. 25.6M weights,
about 100 MB.

    make_resnet50.py OUT.onnx
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    a = p.parse_args()
    rng = np.random.default_rng(7)
    inits, nodes = [], []
    count = [0]

    def fresh(prefix):
        count[0] += 1
        return f"{prefix}{count[0]}"

    def init(name, array):
        inits.append(numpy_helper.from_array(array, name))
        return name

    def conv_bn(x, c_in, c_out, k, stride, relu):
        name = fresh("conv")
        # He initialization keeps activations in range through 50 layers.
        w = rng.standard_normal((c_out, c_in, k, k)) * np.sqrt(2.0 / (c_in * k * k))
        y = name + "_out"
        nodes.append(helper.make_node(
            "Conv", [x, init(name + "_w", w.astype(np.float32))], [y], kernel_shape=[k, k],
            strides=[stride, stride], pads=[k // 2] * 4))
        bn = name + "_bn"
        nodes.append(helper.make_node(
            "BatchNormalization",
            [y, init(bn + "_scale", (1 + 0.1 * rng.standard_normal(c_out)).astype(np.float32)),
             init(bn + "_bias", (0.1 * rng.standard_normal(c_out)).astype(np.float32)),
             init(bn + "_mean", (0.1 * rng.standard_normal(c_out)).astype(np.float32)),
             init(bn + "_var", rng.uniform(0.5, 1.5, c_out).astype(np.float32))],
            [bn], epsilon=1e-5))
        if not relu:
            return bn
        nodes.append(helper.make_node("Relu", [bn], [bn + "_relu"]))
        return bn + "_relu"

    x = conv_bn("input", 3, 64, 7, 2, True)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    x, c_in = "pool", 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for b in range(blocks):
            s = stride if b == 0 else 1
            y = conv_bn(x, c_in, width, 1, 1, True)
            y = conv_bn(y, width, width, 3, s, True)
            y = conv_bn(y, width, width * 4, 1, 1, False)
            shortcut = x if (s == 1 and c_in == width * 4) else conv_bn(x, c_in, width * 4, 1, s, False)
            added = fresh("add")
            nodes.append(helper.make_node("Add", [y, shortcut], [added]))
            nodes.append(helper.make_node("Relu", [added], [added + "_relu"]))
            x, c_in = added + "_relu", width * 4
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    fc_w = (rng.standard_normal((1000, 2048)) * 0.02).astype(np.float32)
    nodes.append(helper.make_node("Gemm", ["flat", init("fc_w", fc_w),
                                           init("fc_b", np.zeros(1000, np.float32))],
                                  ["logits"], transB=1))
    graph = helper.make_graph(
        nodes, "resnet50",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, a.out)


if __name__ == "__main__":
    main()
