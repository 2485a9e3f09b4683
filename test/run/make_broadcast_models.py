#!/usr/bin/env python3
"""Writes pointwise models whose inputs broadcast, with inputs and numpy's
outputs for run_numpy_cases.py: the vector path of pointwise kernels
(codegen/CudaEmitter.cpp emitPointwise) takes them when the result's
innermost dim is a multiple of the vector width.

    make_broadcast_models.py OUT_DIR

    bcast_bias     tanh((x [b, 6, 64] + bias [64]) * m [b, 6, 1]): a bias read
                   as vectors at its own offset, m one scalar per vector
    bcast_where    where(mask [b, 1, 16] (bool: 16 lanes), x [b, 4, 16], -x):
                   a mask broadcast along an outer dim
    bcast_f16      f16(f32(x [b, 3, 32] f16) * scale [32] f32): 8 lanes (the
                   narrowest buffer), two 4-float vectors of the scale
    bcast_channel  x [b, 8, 5, 12] + bias [8, 1, 1] (NCHW per-channel): the
                   bias one scalar per vector
    bcast_odd      x [b, 3, 6] + bias [6]: 6 is not a multiple of 4, no
                   vector path (the scalar loop, same numbers)
    bcast_expand   expand(x [b, 4, 1], [b, 4, 32]) * 2: vector stores of
                   scalars, no vector load
Data sets at b = 1 and b = 3 (odd element counts leave a scalar tail).
"""
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from make_control_flow_models import save_model, save_set


def info(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(17)
    models = {}

    bias = rng.standard_normal(64).astype(np.float32)
    models["bcast_bias"] = (
        [helper.make_node("Add", ["x", "bias"], ["s"]), helper.make_node("Mul", ["s", "m"], ["t"]),
         helper.make_node("Tanh", ["t"], ["y"])],
        [info("x", T.FLOAT, ["b", 6, 64]), info("m", T.FLOAT, ["b", 6, 1])],
        [info("y", T.FLOAT, ["b", 6, 64])], [numpy_helper.from_array(bias, "bias")],
        lambda b: {"x": rng.standard_normal((b, 6, 64)).astype(np.float32),
                   "m": rng.standard_normal((b, 6, 1)).astype(np.float32)},
        lambda i: np.tanh((i["x"].astype(np.float64) + bias) * i["m"]))

    models["bcast_where"] = (
        [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Where", ["mask", "x", "n"], ["y"])],
        [info("mask", T.BOOL, ["b", 1, 16]), info("x", T.FLOAT, ["b", 4, 16])],
        [info("y", T.FLOAT, ["b", 4, 16])], [],
        lambda b: {"mask": rng.random((b, 1, 16)) < 0.5,
                   "x": rng.standard_normal((b, 4, 16)).astype(np.float32)},
        lambda i: np.where(i["mask"], i["x"], -i["x"]))

    scale = rng.standard_normal(32).astype(np.float32)
    models["bcast_f16"] = (
        [helper.make_node("Cast", ["x"], ["xf"], to=T.FLOAT), helper.make_node("Mul", ["xf", "scale"], ["p"]),
         helper.make_node("Cast", ["p"], ["y"], to=T.FLOAT16)],
        [info("x", T.FLOAT16, ["b", 3, 32])], [info("y", T.FLOAT16, ["b", 3, 32])],
        [numpy_helper.from_array(scale, "scale")],
        lambda b: {"x": rng.standard_normal((b, 3, 32)).astype(np.float16)},
        lambda i: (i["x"].astype(np.float32) * scale).astype(np.float16))

    channel = rng.standard_normal((8, 1, 1)).astype(np.float32)
    models["bcast_channel"] = (
        [helper.make_node("Add", ["x", "cbias"], ["y"])],
        [info("x", T.FLOAT, ["b", 8, 5, 12])], [info("y", T.FLOAT, ["b", 8, 5, 12])],
        [numpy_helper.from_array(channel, "cbias")],
        lambda b: {"x": rng.standard_normal((b, 8, 5, 12)).astype(np.float32)},
        lambda i: i["x"].astype(np.float64) + channel)

    odd = rng.standard_normal(6).astype(np.float32)
    models["bcast_odd"] = (
        [helper.make_node("Add", ["x", "obias"], ["y"])],
        [info("x", T.FLOAT, ["b", 3, 6])], [info("y", T.FLOAT, ["b", 3, 6])],
        [numpy_helper.from_array(odd, "obias")],
        lambda b: {"x": rng.standard_normal((b, 3, 6)).astype(np.float32)},
        lambda i: i["x"].astype(np.float64) + odd)

    models["bcast_expand"] = (
        [helper.make_node("Shape", ["x"], ["sx"]),
         helper.make_node("Concat", ["sx2", "wide"], ["target"], axis=0),
         helper.make_node("Slice", ["sx", "zero", "two"], ["sx2"]),
         helper.make_node("Expand", ["x", "target"], ["e"]), helper.make_node("Mul", ["e", "two_f"], ["y"])],
        [info("x", T.FLOAT, ["b", 4, 1])], [info("y", T.FLOAT, ["b", 4, 32])],
        [numpy_helper.from_array(np.array([32], np.int64), "wide"),
         numpy_helper.from_array(np.array([0], np.int64), "zero"),
         numpy_helper.from_array(np.array([2], np.int64), "two"),
         numpy_helper.from_array(np.array(2.0, np.float32), "two_f")],
        lambda b: {"x": rng.standard_normal((b, 4, 1)).astype(np.float32)},
        lambda i: np.broadcast_to(i["x"], (i["x"].shape[0], 4, 32)).astype(np.float64) * 2)

    for name, (nodes, inputs, outputs, inits, make, want) in models.items():
        # Nodes in dependency order for the checker (bcast_expand lists a
        # slice after its reader).
        ordered, known = [], {i.name for i in inputs} | {t.name for t in inits}
        while nodes:
            ready = [n for n in nodes if all(x in known for x in n.input)]
            ordered += ready
            known |= {o for n in ready for o in n.output}
            nodes = [n for n in nodes if n not in ready]
        save_model(out, name, helper.make_graph(ordered, name, inputs, outputs, inits))
        dtype = np.float16 if outputs[0].type.tensor_type.elem_type == T.FLOAT16 else np.float32
        for s, b in enumerate((1, 3)):
            data = make(b)
            save_set(out, name, s, data, [want(data).astype(dtype)])


if __name__ == "__main__":
    main()
