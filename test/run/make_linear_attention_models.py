#!/usr/bin/env python3
"""Writes the blocks of linear-attention and state-space language models (ONNX
1.22's LinearAttention and CausalConvWithState, and the preview FlexAttention),
with inputs and the ONNX reference implementation's outputs (the layout
run_numpy_cases.py reads).

    make_linear_attention_models.py OUT_DIR

    deltanet_block   a Gated DeltaNet token mixer as exported: a short causal
                     conv with its carried state over the packed q/k/v
                     channels, SiLU, then the gated delta rule with per-head
                     decay and beta and grouped query heads (4 query heads on
                     2 KV heads), both states in and out; batch and sequence
                     symbolic. Sets: a decode step at batch 1 and 3, and a
                     prefill of 6 tokens from a non-zero state.
    deltanet_decode  the same block with the sequence fixed to one token (the
                     shape a decode graph exports with): no loop
    flex_causal_gqa  FlexAttention with a causal score_mod and a soft cap,
                     8 query heads on 2 KV heads, batch and both lengths
                     symbolic. Sets at two lengths.
    linear_attention_no_decay, linear_attention_int, flex_bad_mod,
    flex_prob_mod_shape, flex_preview_v2, flex_no_import, ms_sparse_attention
    causal_conv_symbolic_k
                     what is refused (no data sets; the last at run time)
"""
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper

from make_shape_operand_models import const, f32, save

rng = np.random.default_rng(29)

HQ, HKV, DK, DV, KERNEL = 4, 2, 8, 8, 4
CHANNELS = HQ * DK + HKV * DK + HKV * DV


def deltanet(out, name, seq):
    """conv(x) -> split q/k/v -> LinearAttention(gated_delta)."""
    nodes = [
        helper.make_node("CausalConvWithState", ["x", "conv_w", "conv_b", "conv_state"],
                         ["mixed", "conv_state_out"], activation="silu"),
        helper.make_node("Transpose", ["mixed"], ["packed"], perm=[0, 2, 1]),
        helper.make_node("Split", ["packed", "split"], ["q", "k", "v"], axis=2),
        helper.make_node("LinearAttention", ["q", "k", "v", "state", "decay", "beta"],
                         ["y", "state_out"], q_num_heads=HQ, kv_num_heads=HKV,
                         update_rule="gated_delta"),
    ]
    inputs = [f32("x", ["b", CHANNELS, seq]), f32("conv_state", ["b", CHANNELS, KERNEL - 1]),
              f32("state", ["b", HKV, DK, DV]), f32("decay", ["b", seq, HKV]),
              f32("beta", ["b", seq, HKV])]
    outputs = [f32("y", ["b", seq, HQ * DV]), f32("conv_state_out", ["b", CHANNELS, KERNEL - 1]),
               f32("state_out", ["b", HKV, DK, DV])]
    weights = [const("conv_w", rng.standard_normal((CHANNELS, 1, KERNEL)).astype(np.float32) * 0.5),
               const("conv_b", rng.standard_normal(CHANNELS).astype(np.float32) * 0.1),
               const("split", np.array([HQ * DK, HKV * DK, HKV * DV], np.int64))]

    def feeds(batch, tokens, state_scale):
        return {"x": rng.standard_normal((batch, CHANNELS, tokens), dtype=np.float32),
                "conv_state": rng.standard_normal((batch, CHANNELS, KERNEL - 1), dtype=np.float32),
                "state": state_scale * rng.standard_normal((batch, HKV, DK, DV), dtype=np.float32),
                # log-space decay (negative), and an update rate in (0, 1)
                "decay": -np.abs(rng.standard_normal((batch, tokens, HKV), dtype=np.float32)),
                "beta": rng.uniform(0.1, 0.9, (batch, tokens, HKV)).astype(np.float32)}
    sets = [feeds(1, 1, 0.5), feeds(3, 1, 0.5)]
    if seq != 1:
        sets.append(feeds(2, 6, 0.5))
    save(out, name, nodes, inputs, outputs, weights, sets, opset=27)


def flex_causal_gqa(out):
    causal = helper.make_graph(
        [helper.make_node("Shape", ["s"], ["shape"]),
         helper.make_node("Gather", ["shape", "two"], ["rows"], axis=0),
         helper.make_node("Gather", ["shape", "three"], ["cols"], axis=0),
         helper.make_node("Range", ["zero", "rows", "one"], ["r"]),
         helper.make_node("Range", ["zero", "cols", "one"], ["c"]),
         helper.make_node("Unsqueeze", ["r", "last"], ["r2"]),
         helper.make_node("LessOrEqual", ["c", "r2"], ["keep"]),
         helper.make_node("Div", ["s", "cap"], ["d"]),
         helper.make_node("Tanh", ["d"], ["t"]),
         helper.make_node("Mul", ["t", "cap"], ["capped"]),
         helper.make_node("Where", ["keep", "capped", "ninf"], ["s_out"])],
        "causal_soft_cap", [f32("s", ["B", "H", "L", "S"])], [f32("s_out", ["B", "H", "L", "S"])],
        [const("two", np.array(2, np.int64)), const("three", np.array(3, np.int64)),
         const("zero", np.array(0, np.int64)), const("one", np.array(1, np.int64)),
         const("last", np.array([1], np.int64)), const("cap", np.array(5.0, np.float32)),
         const("ninf", np.array(-np.inf, np.float32))])
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview",
                            score_mod=causal)
    graph = helper.make_graph([node], "flex_causal_gqa",
                              [f32("q", ["b", 8, "l", 16]), f32("k", ["b", 2, "l", 16]),
                               f32("v", ["b", 2, "l", 16])],
                              [f32("y", ["b", 8, "l", 16])])
    sets = [{"q": rng.standard_normal((b, 8, n, 16), dtype=np.float32),
             "k": rng.standard_normal((b, 2, n, 16), dtype=np.float32),
             "v": rng.standard_normal((b, 2, n, 16), dtype=np.float32)} for b, n in ((1, 5), (2, 9))]
    save_with_domains(out, graph, sets)


def save_with_domains(out, graph, sets, preview=1):
    import os

    import onnx
    from onnx.reference import ReferenceEvaluator

    from make_control_flow_models import save_set
    imports = [helper.make_opsetid("", 26)]
    if preview:
        imports.append(helper.make_opsetid("ai.onnx.preview", preview))
    model = helper.make_model(graph, opset_imports=imports)
    onnx.save(model, os.path.join(out, graph.name + ".onnx"))
    if not sets:
        return
    reference = ReferenceEvaluator(model)
    for s, feeds in enumerate(sets):
        save_set(out, graph.name, s, feeds, reference.run(None, feeds))


if __name__ == "__main__":
    out = sys.argv[1]
    deltanet(out, "deltanet_block", "t")
    deltanet(out, "deltanet_decode", 1)
    flex_causal_gqa(out)
    qkv = [f32("q", [1, 2, 8]), f32("k", [1, 2, 8]), f32("v", [1, 2, 8])]
    save(out, "linear_attention_no_decay",
         [helper.make_node("LinearAttention", ["q", "k", "v"], ["y"], q_num_heads=1,
                           kv_num_heads=1, update_rule="gated")],
         qkv, [f32("y", [1, 2, 8])], [], [], opset=27)
    bad_mod = helper.make_graph([helper.make_node("Identity", ["a"], ["a2"]),
                                 helper.make_node("Identity", ["b"], ["b2"])], "two_in",
                                [f32("a", None), f32("b", None)], [f32("a2", None)])
    save_with_domains(out, helper.make_graph(
        [helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview",
                          score_mod=bad_mod)], "flex_bad_mod",
        [f32("q", [1, 1, 2, 4]), f32("k", [1, 1, 2, 4]), f32("v", [1, 1, 2, 4])],
        [f32("y", [1, 1, 2, 4])]), [])
    qkv4 = [f32(n, [1, 1, 2, 4]) for n in "qkv"]
    plain = [helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview")]
    save_with_domains(out, helper.make_graph(plain, "flex_preview_v2", qkv4, [f32("y", [1, 1, 2, 4])]),
                      [], preview=2)
    save_with_domains(out, helper.make_graph(plain, "flex_no_import", qkv4, [f32("y", [1, 1, 2, 4])]),
                      [], preview=0)
    sparse = helper.make_graph(
        [helper.make_node("SparseAttention", ["q", "k", "v"], ["y"], domain="com.microsoft")],
        "ms_sparse_attention", qkv4, [f32("y", [1, 1, 2, 4])])
    model = helper.make_model(sparse, opset_imports=[helper.make_opsetid("", 26),
                                                     helper.make_opsetid("com.microsoft", 1)])
    import os
    import onnx
    onnx.save(model, os.path.join(out, "ms_sparse_attention.onnx"))
    save(out, "linear_attention_int",
         [helper.make_node("LinearAttention", ["q", "k", "v"], ["y", "s"], q_num_heads=1,
                           kv_num_heads=1, update_rule="linear")],
         [helper.make_tensor_value_info(n, T.INT32, [1, 1, 4]) for n in "qkv"],
         [helper.make_tensor_value_info("y", T.INT32, None),
          helper.make_tensor_value_info("s", T.INT32, None)], [], [], opset=27)
    reduce_rows = helper.make_graph(
        [helper.make_node("ReduceSum", ["p", "axis"], ["o"], keepdims=1)], "reduce_rows",
        [f32("p", None)], [f32("o", None)], [const("axis", np.array([2], np.int64))])
    save_with_domains(out, helper.make_graph(
        [helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview",
                          prob_mod=reduce_rows)], "flex_prob_mod_shape",
        [f32(n, [1, 2, 3, 4]) for n in "qkv"], [f32("y", None)]), [])
    save(out, "causal_conv_symbolic_k",
         [helper.make_node("CausalConvWithState", ["x", "w"], ["y", "state"])],
         [f32("x", ["b", "c", "l"]), f32("w", ["c", 1, "k"])], [f32("y", None), f32("state", None)],
         [], [], opset=27)
