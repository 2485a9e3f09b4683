"""Models where the float64 reference and the generated kernels once disagreed
(issue 32): a linear Resize beside an infinity, and a LayerNorm of a row of
+-1e20 with eps 0. Writes the models and their inputs (.npy) to the folder given."""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]


def save(name, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
              os.path.join(out, name + ".onnx"))


# [1, 1, 2, 2] -> [1, 1, 2, 4], linear, asymmetric: H untouched, W doubled;
# output (0, 0) sits on input (0, 0) beside an inf at (0, 1).
save("resize_inf",
     [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear",
                       coordinate_transformation_mode="asymmetric")],
     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 4])],
     [numpy_helper.from_array(np.array([1, 1, 1, 2], np.float32), "scales")])
np.save(os.path.join(out, "resize_x.npy"), np.array([[[[0.0, np.inf], [1.0, 2.0]]]], np.float32))

save("layernorm_huge",
     [helper.make_node("LayerNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=0.0)],
     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
     [numpy_helper.from_array(np.ones(4, np.float32), "scale")])
np.save(os.path.join(out, "layernorm_x.npy"),
        np.array([[1e20, -1e20, 1e20, -1e20], [1.0, 2.0, 3.0, 4.0]], np.float32))
