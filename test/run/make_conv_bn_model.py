"""Writes OUT/convbn.onnx (Conv -> BatchNormalization -> Relu -> Conv (no bias)
-> BatchNormalization, inference mode, as an exporter that does not fold batch
norms leaves them; dynamic batch) and OUT/x.npy, an input of batch 2."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(1)


def tensor(name, shape, positive=False):
    values = rng.random(shape) + 0.5 if positive else rng.standard_normal(shape)
    return numpy_helper.from_array(values.astype(np.float32), name)


inits = [tensor("w1", (4, 3, 3, 3)), tensor("b1", (4,)), tensor("s1", (4,)), tensor("t1", (4,)),
         tensor("m1", (4,)), tensor("v1", (4,), positive=True),
         tensor("w2", (6, 4, 1, 1)), tensor("s2", (6,)), tensor("t2", (6,)), tensor("m2", (6,)),
         tensor("v2", (6,), positive=True)]
nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c1", "s1", "t1", "m1", "v1"], ["n1"], epsilon=1e-3),
         helper.make_node("Relu", ["n1"], ["r1"]),
         helper.make_node("Conv", ["r1", "w2"], ["c2"]),
         helper.make_node("BatchNormalization", ["c2", "s2", "t2", "m2", "v2"], ["y"])]
graph = helper.make_graph(nodes, "convbn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), f"{out}/convbn.onnx")
np.save(f"{out}/x.npy", rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
