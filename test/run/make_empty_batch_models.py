"""Models whose batch may be 0 (issue 32: an empty batch on CUDA): a batched
MatMul of two inputs, one whose outer batch dim broadcasts against the other's,
and the inputs of an empty batch for each, written to the folder given."""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]


def matmul_model(name, a_dims, b_dims, y_dims):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])], name,
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_dims),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, b_dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_dims)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(out, name + ".onnx"))


# [n, 4, 3] @ [n, 3, 5]: n is cuBLASLt's strided batch.
matmul_model("bmm", ["n", 4, 3], ["n", 3, 5], ["n", 4, 5])
# [n, m, 4, 3] @ [m, 3, 5]: m is the strided batch, n a loop of calls around it.
matmul_model("bmm_outer", ["n", "m", 4, 3], ["m", 3, 5], ["n", "m", 4, 5])
np.save(os.path.join(out, "bmm_a.npy"), np.zeros((0, 4, 3), np.float32))
np.save(os.path.join(out, "bmm_b.npy"), np.zeros((0, 3, 5), np.float32))
np.save(os.path.join(out, "outer_a.npy"), np.zeros((0, 2, 4, 3), np.float32))
np.save(os.path.join(out, "outer_b.npy"), np.ones((2, 3, 5), np.float32))
np.save(os.path.join(out, "encoder_x.npy"), np.zeros((0, 5, 16), np.float32))
