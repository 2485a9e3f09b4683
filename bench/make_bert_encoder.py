#!/usr/bin/env python3
"""Writes a BERT-style encoder as HuggingFace's BertModel exports it, with
random weights: per layer Q, K and V as three Linear layers, heads split by
Reshape + Transpose, scores divided by sqrt(d), an additive padding mask
[batch, 1, 1, seq], softmax, heads merged, the output Linear, a residual add
and LayerNormalization, then Linear, the erf GELU, Linear, residual add and
LayerNormalization. Dynamic batch and sequence.

    make_bert_encoder.py OUT.onnx [--layers 12] [--hidden 768] [--heads 12] [--ff 3072]

BERT-base is the default (85M weights, 340 MB); tests write one layer of it.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ff", type=int, default=3072)
    a = p.parse_args()
    rng = np.random.default_rng(5)
    hidden, heads, ff = a.hidden, a.heads, a.ff
    head = hidden // heads
    inits, nodes = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(array, name))
        return name

    def weight(name, shape):
        return init(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    def linear(x, name, n_in, n_out):
        nodes.append(helper.make_node("MatMul", [x, weight(f"{name}.w", (n_in, n_out))], [f"{name}.mm"]))
        nodes.append(helper.make_node("Add", [f"{name}.mm", weight(f"{name}.b", (n_out,))], [name]))
        return name

    def layer_norm(x, name):
        nodes.append(helper.make_node(
            "LayerNormalization",
            [x, init(f"{name}.g", np.ones(hidden, np.float32)), init(f"{name}.b", np.zeros(hidden, np.float32))],
            [name], axis=-1, epsilon=1e-12))
        return name

    split = init("split_shape", np.array([0, 0, heads, head], np.int64))
    merge = init("merge_shape", np.array([0, 0, hidden], np.int64))
    root_d = init("root_d", np.array(np.sqrt(head), np.float32))
    half = init("half", np.array(0.5, np.float32))
    one = init("one", np.array(1.0, np.float32))
    root_2 = init("root_2", np.array(np.sqrt(2.0), np.float32))
    x = "x"
    for l in range(a.layers):
        n = f"l{l}"
        for part in ("q", "k", "v"):
            linear(x, f"{n}.{part}", hidden, hidden)
            nodes += [helper.make_node("Reshape", [f"{n}.{part}", split], [f"{n}.{part}r"]),
                      helper.make_node("Transpose", [f"{n}.{part}r"], [f"{n}.{part}h"], perm=[0, 2, 1, 3])]
        nodes += [helper.make_node("Transpose", [f"{n}.kh"], [f"{n}.kt"], perm=[0, 1, 3, 2]),
                  helper.make_node("MatMul", [f"{n}.qh", f"{n}.kt"], [f"{n}.scores"]),
                  helper.make_node("Div", [f"{n}.scores", root_d], [f"{n}.scaled"]),
                  helper.make_node("Add", [f"{n}.scaled", "mask"], [f"{n}.masked"]),
                  helper.make_node("Softmax", [f"{n}.masked"], [f"{n}.probs"], axis=-1),
                  helper.make_node("MatMul", [f"{n}.probs", f"{n}.vh"], [f"{n}.ctx"]),
                  helper.make_node("Transpose", [f"{n}.ctx"], [f"{n}.ctxt"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", [f"{n}.ctxt", merge], [f"{n}.merged"])]
        out = linear(f"{n}.merged", f"{n}.o", hidden, hidden)
        nodes.append(helper.make_node("Add", [out, x], [f"{n}.res1"]))
        h = layer_norm(f"{n}.res1", f"{n}.ln1")
        up = linear(h, f"{n}.ff1", hidden, ff)
        nodes += [helper.make_node("Div", [up, root_2], [f"{n}.gd"]),
                  helper.make_node("Erf", [f"{n}.gd"], [f"{n}.ge"]),
                  helper.make_node("Add", [f"{n}.ge", one], [f"{n}.g1"]),
                  helper.make_node("Mul", [up, f"{n}.g1"], [f"{n}.gm"]),
                  helper.make_node("Mul", [f"{n}.gm", half], [f"{n}.gelu"])]
        down = linear(f"{n}.gelu", f"{n}.ff2", ff, hidden)
        nodes.append(helper.make_node("Add", [down, h], [f"{n}.res2"]))
        x = layer_norm(f"{n}.res2", f"{n}.ln2")
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    graph = helper.make_graph(
        nodes, "bert_encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", 1, 1, "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", hidden])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), a.out)


if __name__ == "__main__":
    main()
