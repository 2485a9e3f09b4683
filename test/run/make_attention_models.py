#!/usr/bin/env python3
"""Writes ONNX models of scaled dot-product attention as exporters spell it
(matmul, scale, mask, softmax, matmul), with inputs and numpy's outputs (the
layout run_numpy_cases.py reads). kiln-fuse-attention makes each one kernel.

    make_attention_models.py OUT_DIR

    attn_padding  q, k, v [b, 3, s, 64] and an additive padding mask
                  [b, 1, 1, s] (0 or -inf), the scale a Div by sqrt(64) on the
                  scores, k transposed by a Transpose: s = 150 and 37 (several
                  tiles of queries and keys, a partial last tile), keys masked
                  at the end of some rows, and a batch whose every key is masked
                  (softmax of all -inf: NaN, as the unfused graph)
    attn_causal   q, k [1, 4, 70, 32], v [1, 4, 70, 16] (values narrower than
                  keys), a Mul by 1/sqrt(32) with the constant on the left, a
                  constant causal mask [70, 70] (-inf above the diagonal)
    attn_wide     feature dims of 256 (the widest the kernel takes: its tiles
                  shrink to 8 rows), no mask, the scale a Div
    attn_f16      attn_padding in float16 (inputs, mask and output), s = 45
    attn_torch    torch.onnx.export's (dynamo) form of scaled_dot_product_attention:
                  q [3, 4, 70, 16] and k^T each scaled by the scale's root, k^T
                  as Reshape [12, 70, 16], Transpose, Reshape [3, 4, 16, 70],
                  a boolean mask [3, 1, 70, 70] (causal, the first keys padding,
                  nothing seen in batch 2) made additive by a Where, and the
                  weights guarded by Where(IsNaN(p), 0, p): the rows that see
                  no key are 0, not NaN
    attn_gqa      grouped-query heads as transformers' repeat_kv writes them
                  (Unsqueeze, Expand, Reshape): q [b, 8, sq, 16], k, v
                  [b, 2, sk, 16], an additive mask [b, 1, sq, sk]. The kernel
                  reads each key/value head once for its 4 query heads; at
                  decode sizes it splits the keys across blocks. Sets: one
                  row against 700 keys (split); two sequences against 1100
                  keys, the first 450 of one masked (whole pieces see no key)
                  and every key of the other masked (NaN); 3 rows against 40
                  keys (one piece); 20 rows against 300 keys (three tiles of
                  rows, the last partial, each split). (Head 16: the data
                  sets travel to the GPU machine, tools/gpu-check.sh.)
    attn_prefill_bf16
                  a prompt's attention in bfloat16 (inputs cast from float32,
                  the output cast back), grouped heads (8 on 2, head 64) and
                  a causal mask, one sequence left-padded: tiles of rows
                  on tensor cores where a block is whole warps, whole and
                  partial tiles of rows and keys
"""
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from make_control_flow_models import save_model, save_set


def attention(q, k, v, mask, scale):
    """numpy in float64: softmax(q k^T * scale + mask) v, NaN where every key is masked."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = np.einsum("...id,...jd->...ij", q, k) * scale
    if mask is not None:
        s = s + mask.astype(np.float64)
    with np.errstate(invalid="ignore"):
        m = np.max(s, axis=-1, keepdims=True)
        m = np.where(np.isinf(m), 0.0, m)
        e = np.exp(s - m)
        p = e / np.sum(e, axis=-1, keepdims=True)
    return np.einsum("...ij,...jd->...id", p, v)


def chain(dtype, scale_node, mask):
    """The exported chain: Transpose k, MatMul, the scale, [Add mask], Softmax, MatMul."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["scores"]), scale_node]
    last = "scaled"
    if mask:
        nodes.append(helper.make_node("Add", ["scaled", "mask"], ["masked"]))
        last = "masked"
    nodes += [helper.make_node("Softmax", [last], ["probs"], axis=-1),
              helper.make_node("MatMul", ["probs", "v"], ["y"])]
    return nodes


def padding(out, name="attn_padding", dtype=np.float32, lengths=(150, 37)):
    onnx_type = T.FLOAT if dtype == np.float32 else T.FLOAT16
    d = 64
    nodes = chain(dtype, helper.make_node("Div", ["scores", "root_d"], ["scaled"]), True)
    qkv = [helper.make_tensor_value_info(n, onnx_type, ["b", 3, "s", d]) for n in "qkv"]
    graph = helper.make_graph(
        nodes, name, qkv + [helper.make_tensor_value_info("mask", onnx_type, ["b", 1, 1, "s"])],
        [helper.make_tensor_value_info("y", onnx_type, ["b", 3, "s", d])],
        [numpy_helper.from_array(np.array(np.sqrt(d), dtype), "root_d")])
    save_model(out, name, graph)
    rng = np.random.default_rng(7)
    for n, s in enumerate(lengths):
        b = 3
        q, k, v = (rng.standard_normal((b, 3, s, d)).astype(dtype) for _ in range(3))
        mask = np.zeros((b, 1, 1, s), dtype)
        mask[0, :, :, s - s // 3:] = -np.inf  # the last third of the keys padding
        mask[1, :, :, :] = -np.inf            # nothing to attend to: NaN rows
        scale = 1.0 / float(np.array(np.sqrt(d), dtype))
        want = attention(q, k, v, mask, scale).astype(dtype)
        save_set(out, name, n, {"q": q, "k": k, "v": v, "mask": mask}, [want])


def causal(out):
    s, d, dv = 70, 32, 16
    scale = np.float32(1.0 / np.sqrt(d))
    nodes = chain(np.float32, helper.make_node("Mul", ["inv_root_d", "scores"], ["scaled"]), True)
    mask = np.triu(np.full((s, s), -np.inf, np.float32), k=1)
    graph = helper.make_graph(
        nodes, "attn_causal",
        [helper.make_tensor_value_info("q", T.FLOAT, [1, 4, s, d]),
         helper.make_tensor_value_info("k", T.FLOAT, [1, 4, s, d]),
         helper.make_tensor_value_info("v", T.FLOAT, [1, 4, s, dv])],
        [helper.make_tensor_value_info("y", T.FLOAT, [1, 4, s, dv])],
        [numpy_helper.from_array(np.array(scale), "inv_root_d"),
         numpy_helper.from_array(mask, "mask")])
    save_model(out, "attn_causal", graph)
    rng = np.random.default_rng(11)
    q, k = (rng.standard_normal((1, 4, s, d)).astype(np.float32) for _ in range(2))
    v = rng.standard_normal((1, 4, s, dv)).astype(np.float32)
    save_set(out, "attn_causal", 0, {"q": q, "k": k, "v": v},
             [attention(q, k, v, mask, float(scale)).astype(np.float32)])


def wide(out):
    s, d = 20, 256
    nodes = chain(np.float32, helper.make_node("Div", ["scores", "root_d"], ["scaled"]), False)
    qkv = [helper.make_tensor_value_info(n, T.FLOAT, [2, 2, s, d]) for n in "qkv"]
    graph = helper.make_graph(
        nodes, "attn_wide", qkv, [helper.make_tensor_value_info("y", T.FLOAT, [2, 2, s, d])],
        [numpy_helper.from_array(np.array(16.0, np.float32), "root_d")])
    save_model(out, "attn_wide", graph)
    rng = np.random.default_rng(13)
    q, k, v = (rng.standard_normal((2, 2, s, d)).astype(np.float32) for _ in range(3))
    save_set(out, "attn_wide", 0, {"q": q, "k": k, "v": v},
             [attention(q, k, v, None, 1 / 16).astype(np.float32)])


def torch_sdpa(out):
    b, h, s, d = 3, 4, 70, 16
    root = np.float32(np.sqrt(1.0 / np.sqrt(d)))
    nodes = [
        helper.make_node("Reshape", ["k", "merged"], ["k_merged"]),
        helper.make_node("Transpose", ["k_merged"], ["kt_merged"], perm=[0, 2, 1]),
        helper.make_node("Reshape", ["kt_merged", "split"], ["kt"]),
        helper.make_node("Mul", ["q", "root"], ["q_scaled"]),
        helper.make_node("Mul", ["kt", "root"], ["kt_scaled"]),
        helper.make_node("Where", ["seen", "zero", "ninf"], ["mask"]),
        helper.make_node("MatMul", ["q_scaled", "kt_scaled"], ["scores"]),
        helper.make_node("Add", ["scores", "mask"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        helper.make_node("IsNaN", ["probs"], ["nan"]),
        helper.make_node("Where", ["nan", "zero", "probs"], ["weights"]),
        helper.make_node("MatMul", ["weights", "v"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "attn_torch",
        [helper.make_tensor_value_info(n, T.FLOAT, [b, h, s, d]) for n in "qkv"] +
        [helper.make_tensor_value_info("seen", T.BOOL, [b, 1, s, s])],
        [helper.make_tensor_value_info("y", T.FLOAT, [b, h, s, d])],
        [numpy_helper.from_array(np.array([b * h, s, d], np.int64), "merged"),
         numpy_helper.from_array(np.array([b, h, d, s], np.int64), "split"),
         numpy_helper.from_array(np.array(root), "root"),
         numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
         numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf")])
    save_model(out, "attn_torch", graph)
    rng = np.random.default_rng(17)
    q, k, v = (rng.standard_normal((b, h, s, d)).astype(np.float32) for _ in range(3))
    seen = np.broadcast_to(np.tril(np.ones((s, s), bool)), (b, 1, s, s)).copy()
    seen[1, :, :, :5] = False  # left padding: rows 0..4 see no key
    seen[2] = False            # a sequence that sees nothing at all
    want = attention(q, k, v, np.where(seen, 0.0, -np.inf), float(root) * float(root))
    want = np.where(np.isnan(want), 0.0, want).astype(np.float32)
    assert (want[1, :, :5] == 0).all() and (want[2] == 0).all()
    save_set(out, "attn_torch", 0, {"q": q, "k": k, "v": v, "seen": seen}, [want])


def grouped_chain(q, k, v, mask, y):
    """transformers' repeat_kv (Unsqueeze, Expand, Reshape) on k and v, then
    the chain, the scale a Div by root_d: the nodes from q, k, v, mask to y."""
    nodes = []
    for n, x in (("k", k), ("v", v)):
        nodes += [
            helper.make_node("Unsqueeze", [x, "at_group"], [n + "_one"]),
            helper.make_node("Expand", [n + "_one", "groups"], [n + "_wide"]),
            helper.make_node("Reshape", [n + "_wide", "merged"], [n + "_rep"]),
        ]
    return nodes + [
        helper.make_node("Transpose", ["k_rep"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", [q, "kt"], ["scores"]),
        helper.make_node("Div", ["scores", "root_d"], ["scaled"]),
        helper.make_node("Add", ["scaled", mask], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v_rep"], [y]),
    ]


def grouped_graph(name, nodes, heads, kv_heads, d, sq, sk, root_d):
    """The graph of grouped_chain's nodes: float32 q [b, heads, sq, d], k and
    v [b, kv_heads, sk, d] and an additive mask [b, 1, sq, sk] in, y out;
    repeat_kv's constants and root_d (an initializer) beside them."""
    return helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("q", T.FLOAT, ["b", heads, sq, d]),
         helper.make_tensor_value_info("k", T.FLOAT, ["b", kv_heads, sk, d]),
         helper.make_tensor_value_info("v", T.FLOAT, ["b", kv_heads, sk, d]),
         helper.make_tensor_value_info("mask", T.FLOAT, ["b", 1, sq, sk])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["b", heads, sq, d])],
        [numpy_helper.from_array(np.array([2], np.int64), "at_group"),
         numpy_helper.from_array(np.array([1, 1, heads // kv_heads, 1, 1], np.int64), "groups"),
         numpy_helper.from_array(np.array([0, heads, -1, d], np.int64), "merged"), root_d])


def gqa(out):
    heads, kv_heads, d = 8, 2, 16
    groups = heads // kv_heads
    graph = grouped_graph("attn_gqa", grouped_chain("q", "k", "v", "mask", "y"), heads, kv_heads,
                          d, "sq", "sk", numpy_helper.from_array(np.array(8.0, np.float32), "root_d"))
    save_model(out, "attn_gqa", graph)
    rng = np.random.default_rng(19)
    for n, (b, sq, sk) in enumerate([(1, 1, 700), (2, 1, 1100), (2, 3, 40), (1, 20, 300)]):
        q = rng.standard_normal((b, heads, sq, d)).astype(np.float32)
        k, v = (rng.standard_normal((b, kv_heads, sk, d)).astype(np.float32) for _ in range(2))
        mask = np.zeros((b, 1, sq, sk), np.float32)
        if n == 1:
            mask[0, :, :, :450] = -np.inf  # left padding across whole pieces
            mask[1] = -np.inf              # nothing to attend to: NaN rows
        want = attention(q, np.repeat(k, groups, axis=1), np.repeat(v, groups, axis=1), mask,
                         1 / 8).astype(np.float32)
        save_set(out, "attn_gqa", n, {"q": q, "k": k, "v": v, "mask": mask}, [want])


def bf16_round(x):
    """x rounded to bfloat16 (to nearest, ties to even), as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


def prefill_bf16(out):
    heads, kv_heads, d = 8, 2, 64
    groups = heads // kv_heads
    nodes = [helper.make_node("Cast", [n], [n + "_h"], to=T.BFLOAT16) for n in "qkv"]
    nodes.append(helper.make_node("Cast", ["mask"], ["mask_h"], to=T.BFLOAT16))
    nodes += grouped_chain("q_h", "k_h", "v_h", "mask_h", "y_h")
    nodes.append(helper.make_node("Cast", ["y_h"], ["y"], to=T.FLOAT))
    graph = grouped_graph("attn_prefill_bf16", nodes, heads, kv_heads, d, "s", "s",
                          helper.make_tensor("root_d", T.BFLOAT16, [], [8.0]))
    save_model(out, "attn_prefill_bf16", graph)
    rng = np.random.default_rng(23)
    # (b, s): 4 query heads' rows of 100 positions, 12 whole tiles of 32
    # rows and one of 16 (tensor cores, rows padded), keys 3 tiles and 4;
    # 45 positions: 5 tiles and one of 20 rows, keys 32 and 13.
    for n, (b, s) in enumerate([(2, 100), (1, 45)]):
        q = bf16_round(rng.standard_normal((b, heads, s, d)))
        k, v = (bf16_round(rng.standard_normal((b, kv_heads, s, d))) for _ in range(2))
        mask = np.broadcast_to(np.triu(np.full((s, s), -np.inf, np.float32), k=1),
                               (b, 1, s, s)).copy()
        if b == 2:
            mask[1, :, :, :7] = -np.inf  # left padding: rows 0..6 see no key (NaN)
        want = attention(q, np.repeat(k, groups, axis=1), np.repeat(v, groups, axis=1), mask,
                         1 / 8)
        save_set(out, "attn_prefill_bf16", n, {"q": q, "k": k, "v": v, "mask": mask},
                 [bf16_round(want)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    padding(out)
    causal(out)
    wide(out)
    padding(out, "attn_f16", np.float16, (45,))
    torch_sdpa(out)
    gqa(out)
    prefill_bf16(out)


if __name__ == "__main__":
    main()
