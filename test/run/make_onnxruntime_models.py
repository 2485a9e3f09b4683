#!/usr/bin/env python3
"""Writes models of onnxruntime's own ops, as onnxruntime-genai's model builder
writes them for decoder LLMs, with inputs and onnxruntime's CPU outputs (the
layout run_numpy_cases.py reads). Needs onnxruntime
(scripts/install-onnxruntime-deps.sh).

    make_onnxruntime_models.py OUT_DIR

    rms_norms        SimplifiedLayerNormalization (default domain) then
                     SkipSimplifiedLayerNormalization with a bias, its output
                     and the residual sum (batch and sequence symbolic)
    rms_norms_fp16   the same in float16
    nbits4           MatMulNBits, 4 bits, blocks of 32 over K = 80 (the last
                     block padded), packed uint8 zero points, a bias
    nbits8           MatMulNBits, 8 bits, blocks of 16, the default zero point
    nbits4_float_zp  MatMulNBits, 4 bits, float zero points
    rotary_ids       com.microsoft RotaryEmbedding over (batch, seq, heads *
                     head), heads from the caches' width, position ids per token
    rotary_start     the same with one start position, interleaved, rotating
                     the first 8 of 16 dims of each of 4 heads
    gqa_rotary       GroupQueryAttention as genai writes it for a GQA decoder
                     (4 query heads on 2 KV heads of 16, RoPE inside): a first
                     prompt of two sequences (one right-padded), a decode step
                     appending to pasts of different lengths in a buffer as
                     long as the longest (present one row longer), and one in a
                     buffer of the maximum length (present as long as it)
    gqa_packed_window
                     packed QKV, one KV head, softcap, a local window of 3 and
                     smooth softmax: a prompt and a decode step
    nbits_g_idx, nbits_bad_zero_points, gqa_bias
                     what is refused (no data sets)
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from make_control_flow_models import save_set  # noqa: E402

rng = np.random.default_rng(41)
MS = "com.microsoft"


def value(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


def save(out, name, nodes, inputs, outputs, initializers, sets):
    model = helper.make_model(
        helper.make_graph(nodes, name, inputs, outputs, initializers),
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    onnx.save(model, os.path.join(out, name + ".onnx"))
    if not sets:
        return
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for s, feeds in enumerate(sets):
        save_set(out, name, s, feeds, session.run(None, feeds))


def rms_norms(out, name, elem, dtype):
    hidden = 64
    nodes = [helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["normed"],
                              axis=-1, epsilon=1e-6, stash_type=1),
             helper.make_node("SkipSimplifiedLayerNormalization",
                              ["normed", "residual", "gamma", "bias"],
                              ["y", "", "", "sum"], domain=MS, epsilon=1e-6)]
    weights = [numpy_helper.from_array((1 + 0.1 * rng.standard_normal(hidden)).astype(dtype), n)
               for n in ("scale", "gamma")]
    weights.append(numpy_helper.from_array((0.1 * rng.standard_normal(hidden)).astype(dtype), "bias"))
    dims = ["b", "s", hidden]
    sets = [{"x": rng.standard_normal((b, s, hidden)).astype(dtype),
             "residual": rng.standard_normal((b, s, hidden)).astype(dtype)}
            for b, s in ((1, 1), (2, 5))]
    save(out, name, nodes, [value("x", elem, dims), value("residual", elem, dims)],
         [value("normed", elem, dims), value("y", elem, dims), value("sum", elem, dims)],
         weights, sets)


def quantize(weight, bits, block, zero_points):
    """Blocks of `block` along K, per-block scale (and zero point), values
    packed low bits first, as MatMulNBits reads them."""
    n, k = weight.shape
    blocks = (k + block - 1) // block
    padded = np.zeros((n, blocks * block), np.float32)
    padded[:, :k] = weight
    grouped = padded.reshape(n, blocks, block)
    top = (1 << bits) - 1
    if zero_points:
        low, high = grouped.min(axis=2), grouped.max(axis=2)
        scale = np.maximum(high - low, 1e-6) / top
        zero = np.clip(np.round(-low / scale), 0, top).astype(np.uint8)
    else:
        scale = np.maximum(np.abs(grouped).max(axis=2), 1e-6) / (1 << (bits - 1))
        zero = np.full((n, blocks), 1 << (bits - 1), np.uint8)
    q = np.clip(np.round(grouped / scale[:, :, None]) + zero[:, :, None], 0, top).astype(np.uint8)
    per_byte = 8 // bits

    def pack(values):  # [..., m] -> [..., ceil(m / per_byte)], low bits first
        m = values.shape[-1]
        padded_values = np.zeros(values.shape[:-1] + (-(-m // per_byte) * per_byte,), np.uint8)
        padded_values[..., :m] = values
        grouped_values = padded_values.reshape(values.shape[:-1] + (-1, per_byte)).astype(np.uint16)
        return sum(grouped_values[..., j] << (bits * j) for j in range(per_byte)).astype(np.uint8)

    return pack(q), scale.astype(np.float32), zero, pack(zero)


def nbits(out, name, bits, block, k, n, zero_points=None, bias=True):
    packed, scale, zero, packed_zero = quantize(
        rng.standard_normal((n, k)).astype(np.float32), bits, block, zero_points is not None)
    inputs = ["a", "B", "scales"]
    weights = [numpy_helper.from_array(packed, "B"), numpy_helper.from_array(scale, "scales")]
    if zero_points == "packed":
        inputs.append("zp")
        weights.append(numpy_helper.from_array(packed_zero, "zp"))
    elif zero_points == "float":
        inputs.append("zp")
        weights.append(numpy_helper.from_array(zero.astype(np.float32), "zp"))
    if bias:
        inputs += [""] * (5 - len(inputs)) + ["bias"]
        weights.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "bias"))
    node = helper.make_node("MatMulNBits", inputs, ["y"], domain=MS, K=k, N=n, bits=bits,
                            block_size=block, accuracy_level=0)
    sets = [{"a": rng.standard_normal((b, s, k)).astype(np.float32)} for b, s in ((1, 1), (2, 3))]
    save(out, name, [node], [value("a", T.FLOAT, ["b", "s", k])],
         [value("y", T.FLOAT, ["b", "s", n])], weights, sets)


def rotary_caches(positions, half):
    inv_freq = 1.0 / (10000 ** (np.arange(half, dtype=np.float32) / half))
    angles = np.arange(positions, dtype=np.float32)[:, None] * inv_freq[None, :]
    return (numpy_helper.from_array(np.cos(angles).astype(np.float32), "cos"),
            numpy_helper.from_array(np.sin(angles).astype(np.float32), "sin"))


def rotary_ids(out):
    cos, sin = rotary_caches(32, 8)  # heads of 16, from the caches' width
    node = helper.make_node("RotaryEmbedding", ["x", "ids", "cos", "sin"], ["y"], domain=MS)
    sets = [{"x": rng.standard_normal((b, s, 64)).astype(np.float32),
             "ids": rng.integers(0, 32, (b, s)).astype(np.int64)} for b, s in ((1, 1), (2, 6))]
    save(out, "rotary_ids", [node],
         [value("x", T.FLOAT, ["b", "s", 64]), value("ids", T.INT64, ["b", "s"])],
         [value("y", T.FLOAT, ["b", "s", 64])], [cos, sin], sets)


def rotary_start(out):
    cos, sin = rotary_caches(32, 4)  # rotating 8 of each head's 16 dims
    node = helper.make_node("RotaryEmbedding", ["x", "start", "cos", "sin"], ["y"], domain=MS,
                            interleaved=1, num_heads=4, rotary_embedding_dim=8)
    sets = [{"x": rng.standard_normal((b, s, 64)).astype(np.float32),
             "start": np.array([p], np.int64)} for b, s, p in ((1, 1, 17), (2, 5, 3))]
    save(out, "rotary_start", [node],
         [value("x", T.FLOAT, ["b", "s", 64]), value("start", T.INT64, [1])],
         [value("y", T.FLOAT, ["b", "s", 64])], [cos, sin], sets)


def gqa(out, name, heads, kv_heads, head, attrs, sets, packed=False, rotary=True):
    f32 = T.FLOAT
    width = (heads + 2 * kv_heads) * head if packed else heads * head
    inputs = [value("q", f32, ["b", "s", width])]
    names = ["q", "", ""]
    if not packed:
        inputs += [value("k", f32, ["b", "s", kv_heads * head]),
                   value("v", f32, ["b", "s", kv_heads * head])]
        names = ["q", "k", "v"]
    inputs += [value("past_k", f32, ["b", kv_heads, "p", head]),
               value("past_v", f32, ["b", kv_heads, "p", head]),
               value("seqlens_k", T.INT32, ["b"]), value("total", T.INT32, [])]
    names += ["past_k", "past_v", "seqlens_k", "total"]
    weights = []
    if rotary:
        names += ["cos", "sin"]
        weights += list(rotary_caches(64, head // 2))
    node = helper.make_node("GroupQueryAttention", names, ["y", "present_k", "present_v"],
                            domain=MS, num_heads=heads, kv_num_heads=kv_heads,
                            do_rotary=int(rotary), **attrs)
    save(out, name, [node], inputs,
         [value("y", f32, ["b", "s", heads * head]),
          value("present_k", f32, ["b", kv_heads, "t", head]),
          value("present_v", f32, ["b", kv_heads, "t", head])], weights, sets)


def gqa_feeds(heads, kv_heads, head, batch, tokens, past, lengths, total, packed=False):
    width = (heads + 2 * kv_heads) * head if packed else heads * head
    feeds = {"q": rng.standard_normal((batch, tokens, width)).astype(np.float32)}
    if not packed:
        for name in ("k", "v"):
            feeds[name] = rng.standard_normal((batch, tokens, kv_heads * head)).astype(np.float32)
    for name in ("past_k", "past_v"):
        feeds[name] = rng.standard_normal((batch, kv_heads, past, head)).astype(np.float32)
    feeds["seqlens_k"] = np.array([t - 1 for t in lengths], np.int32)
    feeds["total"] = np.array(total, np.int32)
    return feeds


if __name__ == "__main__":
    out = sys.argv[1]
    rms_norms(out, "rms_norms", T.FLOAT, np.float32)
    rms_norms(out, "rms_norms_fp16", T.FLOAT16, np.float16)
    nbits(out, "nbits4", 4, 32, 80, 24, zero_points="packed")
    nbits(out, "nbits8", 8, 16, 64, 24, bias=False)
    nbits(out, "nbits4_float_zp", 4, 16, 48, 8, zero_points="float")
    rotary_ids(out)
    rotary_start(out)
    gqa(out, "gqa_rotary", 4, 2, 16, {},
        [gqa_feeds(4, 2, 16, 2, 5, 0, (5, 3), 5),   # prompt, the second padded to 5
         gqa_feeds(4, 2, 16, 2, 1, 5, (6, 4), 6),   # decode: pasts of 5 and 3 in 5 rows
         gqa_feeds(4, 2, 16, 2, 1, 8, (6, 3), 6)])  # decode in a buffer of 8
    gqa(out, "gqa_packed_window", 4, 1, 16,
        {"softcap": 5.0, "local_window_size": 3, "smooth_softmax": 1},
        [gqa_feeds(4, 1, 16, 1, 6, 0, (6,), 6, packed=True),
         gqa_feeds(4, 1, 16, 2, 1, 7, (8, 8), 8, packed=True)], packed=True, rotary=False)
    save(out, "gqa_bias", [helper.make_node(
        "GroupQueryAttention", ["q", "k", "v", "", "", "sl", "t", "", "", "", "bias"], ["y"],
        domain=MS, num_heads=1, kv_num_heads=1)],
        [value("q", T.FLOAT, [1, 1, 16]), value("k", T.FLOAT, [1, 1, 16]),
         value("v", T.FLOAT, [1, 1, 16]), value("sl", T.INT32, [1]), value("t", T.INT32, []),
         value("bias", T.FLOAT, [1, 1, 1, 1])], [value("y", T.FLOAT, [1, 1, 16])], [], [])
    short_zp = helper.make_node("MatMulNBits", ["a", "B", "scales", "zp"], ["y"], domain=MS,
                                K=32, N=4, bits=4, block_size=32)
    save(out, "nbits_bad_zero_points", [short_zp], [value("a", T.FLOAT, [1, 32])],
         [value("y", T.FLOAT, [1, 4])],
         [numpy_helper.from_array(np.zeros((4, 1, 16), np.uint8), "B"),
          numpy_helper.from_array(np.ones((4, 1), np.float32), "scales"),
          numpy_helper.from_array(np.zeros(3, np.uint8), "zp")], [])
    g_idx = helper.make_node("MatMulNBits", ["a", "B", "scales", "", "g"], ["y"], domain=MS,
                             K=32, N=4, bits=4, block_size=32)
    save(out, "nbits_g_idx", [g_idx],
         [value("a", T.FLOAT, [1, 32]), value("B", T.UINT8, [4, 1, 16]),
          value("scales", T.FLOAT, [4, 1]), value("g", T.INT32, [32])],
         [value("y", T.FLOAT, [1, 4])], [], [])
