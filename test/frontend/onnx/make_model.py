#!/usr/bin/env python3
"""Writes small ONNX models for the importer's lit tests.

    make_model.py NAME OUT.onnx

Each model is built with onnx.helper, the way exporters lay graphs out, so the
repository carries no binary models. `encoder` reproduces the chains torch's
exporter emits for a transformer encoder with dynamic batch and sequence
(Shape -> Gather -> Unsqueeze -> Concat -> Reshape around attention), since a torch
install is too heavy for this project's machines.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def model(nodes, inputs, outputs, initializers=(), opset=OPSET, check=True):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=opset, producer_name="kiln-tests")
    if check:
        onnx.checker.check_model(m)
    return m


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def mlp():
    rng = np.random.default_rng(0)
    return model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("Add", ["h", "b1"], ["hb"]),
            helper.make_node("Relu", ["hb"], ["a"]),
            helper.make_node("Gemm", ["a", "w2", "b2"], ["y"], transB=1),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [
            const("w1", rng.standard_normal((16, 32), dtype=np.float32)),
            const("b1", rng.standard_normal((32,), dtype=np.float32)),
            const("w2", rng.standard_normal((4, 32), dtype=np.float32)),
            const("b2", rng.standard_normal((4,), dtype=np.float32)),
        ],
    )


def encoder():
    """One encoder layer: LayerNorm, 4-head self-attention, residual, GELU MLP."""
    rng = np.random.default_rng(1)
    d, heads, hd = 32, 4, 8
    n = []

    def shape_chain(src, prefix, tail):
        # torch: x.view(x.size(0), x.size(1), *tail)
        n.append(helper.make_node("Shape", [src], [prefix + "_shape"]))
        for i in (0, 1):
            n.append(helper.make_node("Gather", [prefix + "_shape", f"idx{i}"], [f"{prefix}_d{i}"], axis=0))
            n.append(helper.make_node("Unsqueeze", [f"{prefix}_d{i}", "axes0"], [f"{prefix}_u{i}"]))
        n.append(helper.make_node("Concat", [f"{prefix}_u0", f"{prefix}_u1", tail], [prefix + "_target"], axis=0))
        return prefix + "_target"

    n.append(helper.make_node("LayerNormalization", ["x", "ln_g", "ln_b"], ["h"], axis=-1, epsilon=1e-5))
    for name in ("q", "k", "v"):
        n.append(helper.make_node("MatMul", ["h", "w_" + name], [name + "_lin"]))
        t = shape_chain("x", name, "heads_tail")
        n.append(helper.make_node("Reshape", [name + "_lin", t], [name + "_split"]))
        n.append(helper.make_node("Transpose", [name + "_split"], [name + "_t"], perm=[0, 2, 1, 3]))
    n.append(helper.make_node("Transpose", ["k_t"], ["k_tt"], perm=[0, 1, 3, 2]))
    n.append(helper.make_node("MatMul", ["q_t", "k_tt"], ["scores"]))
    n.append(helper.make_node("Div", ["scores", "sqrt_hd"], ["scaled"]))
    n.append(helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1))
    n.append(helper.make_node("MatMul", ["probs", "v_t"], ["ctx"]))
    n.append(helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]))
    t = shape_chain("x", "merge", "model_tail")
    n.append(helper.make_node("Reshape", ["ctx_t", t], ["merged"]))
    n.append(helper.make_node("MatMul", ["merged", "w_o"], ["attn"]))
    n.append(helper.make_node("Add", ["x", "attn"], ["res1"]))
    n.append(helper.make_node("MatMul", ["res1", "w_up"], ["up"]))
    n.append(helper.make_node("Div", ["up", "sqrt2"], ["up_s"]))
    n.append(helper.make_node("Erf", ["up_s"], ["erf"]))
    n.append(helper.make_node("Add", ["erf", "one"], ["erf1"]))
    n.append(helper.make_node("Mul", ["up", "erf1"], ["g0"]))
    n.append(helper.make_node("Mul", ["g0", "half"], ["gelu"]))
    n.append(helper.make_node("MatMul", ["gelu", "w_down"], ["down"]))
    n.append(helper.make_node("Add", ["res1", "down"], ["y"]))
    f = lambda *s: rng.standard_normal(s, dtype=np.float32) * 0.1
    inits = [
        const("ln_g", np.ones(d, np.float32)), const("ln_b", np.zeros(d, np.float32)),
        const("w_q", f(d, d)), const("w_k", f(d, d)), const("w_v", f(d, d)), const("w_o", f(d, d)),
        const("w_up", f(d, 4 * d)), const("w_down", f(4 * d, d)),
        const("idx0", np.array(0, np.int64)), const("idx1", np.array(1, np.int64)),
        const("axes0", np.array([0], np.int64)),
        const("heads_tail", np.array([heads, hd], np.int64)),
        const("model_tail", np.array([d], np.int64)),
        const("sqrt_hd", np.array(np.sqrt(hd), np.float32)),
        const("sqrt2", np.array(np.sqrt(2.0), np.float32)),
        const("one", np.array(1.0, np.float32)), const("half", np.array(0.5, np.float32)),
    ]
    return model(
        n,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", d])],
        inits,
    )


def reshape_zero():
    """Reshape's 0 copies the input dim: [b, s, 8] -> [b, s, 2, 4] via [0, 0, 2, 4]."""
    return model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "s", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [const("shape", np.array([0, 0, 2, 4], np.int64))],
        check=False,
    )


def unnamed_dims():
    return model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        check=False,
    )


def bad_dim_param():
    return model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch size", "2mod"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        check=False,
    )


# --- bad input: each should be refused with one clear error -----------------------


def unsupported_op():
    return model(
        [helper.make_node("RandomNormalLike", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )


def unknown_op():
    return model(
        [helper.make_node("Frobnicate", ["x"], ["y"], name="frob")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        check=False,
    )


def old_opset():
    return model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        opset=[helper.make_opsetid("", 5)],
        check=False,
    )


def old_opset_unchanged():
    # Not has not changed since opset 1, so an opset-5 model of it imports.
    return model(
        [helper.make_node("Not", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.BOOL, [2])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [2])],
        opset=[helper.make_opsetid("", 5)],
        check=False,
    )


def future_opset():
    return model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        opset=[helper.make_opsetid("", 30)],
        check=False,
    )


def einsum_attention():
    # Attention scores as exporters write them with einsum, batch and seq dynamic.
    return model(
        [helper.make_node("Einsum", ["q", "k"], ["s"], equation="bhqd,bhkd->bhqk")],
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, ["batch", 2, "seq", 4]),
         helper.make_tensor_value_info("k", TensorProto.FLOAT, ["batch", 2, "seq", 4])],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch", 2, "seq", "seq"])],
    )


def einsum_bad():
    return model(
        [helper.make_node("Einsum", ["a"], ["b"], equation="ij,jk->ik")],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])],
        check=False,
    )


def affine_grid():
    return model(
        [helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=1)],
        [helper.make_tensor_value_info("theta", TensorProto.FLOAT, ["n", 2, 3])],
        [helper.make_tensor_value_info("grid", TensorProto.FLOAT, ["n", 4, 5, 2])],
        [const("size", np.array([2, 3, 4, 5], np.int64))],
        opset=[helper.make_opsetid("", 20)],
    )


def maxunpool_small_output():
    return model(
        [helper.make_node("MaxUnpool", ["x", "i", "shape"], ["y"], kernel_shape=[2, 2],
                          strides=[2, 2])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3, 3])],
        [const("shape", np.array([1, 1, 3, 3], np.int64))],
    )


def duplicate_name():
    return model(
        [helper.make_node("Relu", ["x"], ["y"], name="first"),
         helper.make_node("Neg", ["x"], ["y"], name="second")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        check=False,
    )


def dangling_input():
    return model(
        [helper.make_node("Add", ["x", "nowhere"], ["y"], name="adder")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        check=False,
    )


def cycle():
    return model(
        [helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
         helper.make_node("Relu", ["a"], ["b"], name="n2")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])],
        check=False,
    )


def wrong_attr_type():
    node = helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1.5)
    return model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        check=False,
    )


def negative_dim():
    return model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-3, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        check=False,
    )


def bad_initializer():
    # Claims 10^12 elements but carries one value: must be refused, not allocated.
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1000000, 1000000])
    t.float_data.append(1.0)
    return model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [t],
        check=False,
    )


def shape_mismatch():
    return model(
        [helper.make_node("Add", ["x", "z"], ["y"], name="add")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        check=False,
    )


def range_vector():
    """Range on 1-D operands: ONNX wants scalars; kiln's shape function refuses."""
    return model(
        [helper.make_node("Range", ["a", "b", "c"], ["y"], name="range")],
        [helper.make_tensor_value_info(n, TensorProto.INT64, [1]) for n in "abc"],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
        check=False,
    )


def control_flow():
    """If on a flag, a Loop summing a counter, a Scan of running sums."""
    f32 = TensorProto.FLOAT
    then_g = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["t"])], "then", [],
        [helper.make_tensor_value_info("t", f32, ["n"])])
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["x", "one"], ["e"])], "else", [],
        [helper.make_tensor_value_info("e", f32, ["n"])])
    loop_body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "one"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["each"])],
        "loop_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", f32, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", f32, []),
         helper.make_tensor_value_info("each", f32, [])])
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "row"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y_row"])],
        "scan_body",
        [helper.make_tensor_value_info("s_in", f32, [2]),
         helper.make_tensor_value_info("row", f32, [2])],
        [helper.make_tensor_value_info("s_out", f32, [2]),
         helper.make_tensor_value_info("y_row", f32, [2])])
    return model(
        [helper.make_node("If", ["flag"], ["branch"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Loop", ["trips", "", "zero"], ["total", "steps"], body=loop_body),
         helper.make_node("Scan", ["init", "rows"], ["final", "sums"], body=scan_body,
                          num_scan_inputs=1)],
        [helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", f32, ["n"]),
         helper.make_tensor_value_info("trips", TensorProto.INT64, []),
         helper.make_tensor_value_info("init", f32, [2]),
         helper.make_tensor_value_info("rows", f32, ["t", 2])],
        [helper.make_tensor_value_info(v, f32, None) for v in ("branch", "total", "steps", "final", "sums")],
        [const("one", np.array(1.0, np.float32)), const("zero", np.array(0.0, np.float32))],
        check=False,
    )


def lstm_dynamic():
    """An LSTM over a sequence of symbolic length with sequence_lens."""
    rng = np.random.default_rng(1)
    f32 = TensorProto.FLOAT
    return model(
        [helper.make_node("LSTM", ["x", "w", "r", "", "lens"], ["y", "y_h"], hidden_size=4)],
        [helper.make_tensor_value_info("x", f32, ["seq", "batch", 3]),
         helper.make_tensor_value_info("lens", TensorProto.INT32, ["batch"])],
        [helper.make_tensor_value_info("y", f32, ["seq", 1, "batch", 4]),
         helper.make_tensor_value_info("y_h", f32, [1, "batch", 4])],
        [const("w", rng.standard_normal((1, 16, 3)).astype(np.float32)),
         const("r", rng.standard_normal((1, 16, 4)).astype(np.float32))],
    )


def attention_symbolic_heads():
    """Grouped-query Attention over 4-D inputs whose head counts are symbols."""
    f32 = TensorProto.FLOAT
    return model(
        [helper.make_node("Attention", ["q", "k", "v"], ["o"])],
        [helper.make_tensor_value_info("q", f32, ["b", "hq", "s", 8]),
         helper.make_tensor_value_info("k", f32, ["b", "hkv", "t", 8]),
         helper.make_tensor_value_info("v", f32, ["b", "hkv", "t", 8])],
        [helper.make_tensor_value_info("o", f32, ["b", "hq", "s", 8])],
        opset=[helper.make_opsetid("", 23)],
    )


MODELS = {f.__name__: f for f in [lstm_dynamic, attention_symbolic_heads,
    mlp, encoder, reshape_zero, unnamed_dims, bad_dim_param, unsupported_op, unknown_op,
    old_opset, old_opset_unchanged, future_opset, einsum_attention, einsum_bad, affine_grid, maxunpool_small_output, duplicate_name, dangling_input, cycle, wrong_attr_type, negative_dim,
    bad_initializer, shape_mismatch, range_vector, control_flow,
]}

if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    if name == "truncated":  # the first half of a valid model
        data = MODELS["mlp"]().SerializeToString()
        open(out, "wb").write(data[: len(data) // 2])
    elif name == "garbage":
        open(out, "wb").write(bytes(range(256)) * 4)
    else:
        onnx.save(MODELS[name](), out)
