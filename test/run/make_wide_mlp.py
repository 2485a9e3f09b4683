"""Writes OUT/wide_mlp.onnx: x [batch, 128] -> MatMul 128x256 + bias -> Gelu
(erf) -> MatMul 256x64 -> Softmax, random weights (128 KiB and 64 KiB in fp32,
so the precision modes write them as resource blobs), and OUT/x.npy [4, 128]."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(7)
w1 = (rng.standard_normal((128, 256)) / np.sqrt(128)).astype(np.float32)
b1 = (rng.standard_normal(256) * 0.1).astype(np.float32)
w2 = (rng.standard_normal((256, 64)) / np.sqrt(256)).astype(np.float32)
nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
         helper.make_node("Add", ["h", "b1"], ["hb"]),
         helper.make_node("Gelu", ["hb"], ["g"]),
         helper.make_node("MatMul", ["g", "w2"], ["logits"]),
         helper.make_node("Softmax", ["logits"], ["y"], axis=-1)]
graph = helper.make_graph(
    nodes, "wide_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 128])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64])],
    [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
     numpy_helper.from_array(w2, "w2")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
onnx.save(model, f"{out}/wide_mlp.onnx")
np.save(f"{out}/x.npy", rng.standard_normal((4, 128)).astype(np.float32))
