"""Writes OUT/qkv.onnx: self-attention as HuggingFace-style code exports it,
Q, K and V as three Linear layers (MatMul + Add) of one input, heads split by
Reshape + Transpose, scores scaled, softmax, values, heads merged, an output
Linear; dynamic batch and sequence. And OUT/x.npy, an input [2, 5, 16]."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(3)
hidden, heads = 16, 2
head = hidden // heads
inits = []


def weight(name, shape):
    inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name))
    return name


def shape_const(name, values):
    inits.append(numpy_helper.from_array(np.array(values, np.int64), name))
    return name


nodes = []
split = shape_const("split_shape", [0, 0, heads, head])
for p in ("q", "k", "v"):
    nodes += [helper.make_node("MatMul", ["x", weight(f"w{p}", (hidden, hidden))], [f"{p}m"]),
              helper.make_node("Add", [f"{p}m", weight(f"b{p}", (hidden,))], [f"{p}a"]),
              helper.make_node("Reshape", [f"{p}a", split], [f"{p}r"]),
              helper.make_node("Transpose", [f"{p}r"], [f"{p}h"], perm=[0, 2, 1, 3])]
inits.append(numpy_helper.from_array(np.array(1 / np.sqrt(head), np.float32), "scale"))
nodes += [helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
          helper.make_node("MatMul", ["qh", "kt"], ["scores"]),
          helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
          helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1),
          helper.make_node("MatMul", ["probs", "vh"], ["ctx"]),
          helper.make_node("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
          helper.make_node("Reshape", ["ctxt", shape_const("merge_shape", [0, 0, hidden])], ["merged"]),
          helper.make_node("MatMul", ["merged", weight("wo", (hidden, hidden))], ["om"]),
          helper.make_node("Add", ["om", weight("bo", (hidden,))], ["y"])]
graph = helper.make_graph(nodes, "qkv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), f"{out}/qkv.onnx")
np.save(f"{out}/x.npy", rng.standard_normal((2, 5, hidden)).astype(np.float32))
