#!/usr/bin/env python3
"""Writes one layer's decode attention as transformers' eager Llama attention
exports it (repeat_kv's Unsqueeze/Expand/Reshape on the cached keys and
values, scores scaled, an additive mask, softmax in float32, the weighted
values), for timing kiln's attention kernel alone on a device
(tools/gpu-check.sh): grouped-query heads read once a group, and at decode
sizes the keys split across blocks (docs/architecture.md, "Split keys").

    make_decode_attention.py OUT.onnx [--heads 32 --kv-heads 4 --head 64]
                             [--dtype bf16|fp16|fp32]
                             [--inputs DIR --batch B (--past P | --prompt N) [--seed S]]

The model takes q [b, heads, sq, head], k and v [b, kv_heads, sk, head] and
mask [b, 1, sq, sk]; it returns y [b, heads, sq, head]. With --inputs, DIR
gets q.pb, k.pb, v.pb and mask.pb for one decode step (sq = 1, sk = past +
1, the mask all zeros), want.pb (numpy's result from the stored inputs in
float64, rounded to the model's type) and bytes.txt: the bytes the step
must move (its keys and values read once, the queries read and the output
written), the measure of its bandwidth bound. With --prompt N instead, the
inputs are a prompt's attention (time to the first token's): sq = sk = N
under a causal mask, whose kernel multiplies on tensor cores (fp16/bf16),
and flops.txt has its multiply-adds (2 (head + head) per query row and key,
every key counted: the kernel visits the masked ones too). The defaults
are TinyLlama's heads.
"""
import argparse
import os

import numpy as np
from onnx import TensorProto as T
from onnx import helper, numpy_helper, save

from make_llama_decoder import DTYPES, tensor


def model(heads, kv_heads, head, dtype):
    onnx_type = DTYPES[dtype][0]
    groups = heads // kv_heads
    nodes = []
    for n in "kv":
        nodes += [helper.make_node("Unsqueeze", [n, "at_group"], [n + "_one"]),
                  helper.make_node("Expand", [n + "_one", "groups"], [n + "_wide"]),
                  helper.make_node("Reshape", [n + "_wide", "merged"], [n + "_rep"])]
    nodes += [
        helper.make_node("Transpose", ["k_rep"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Add", ["scaled", "mask"], ["masked"]),
        helper.make_node("Cast", ["masked"], ["wide"], to=T.FLOAT),
        helper.make_node("Softmax", ["wide"], ["probs_wide"], axis=-1),
        helper.make_node("Cast", ["probs_wide"], ["probs"], to=onnx_type),
        helper.make_node("MatMul", ["probs", "v_rep"], ["y"]),
    ]
    scale = tensor("scale", np.array(1.0 / np.sqrt(head), np.float32), dtype)
    graph = helper.make_graph(
        nodes, "decode_attention",
        [helper.make_tensor_value_info("q", onnx_type, ["b", heads, "sq", head]),
         helper.make_tensor_value_info("k", onnx_type, ["b", kv_heads, "sk", head]),
         helper.make_tensor_value_info("v", onnx_type, ["b", kv_heads, "sk", head]),
         helper.make_tensor_value_info("mask", onnx_type, ["b", 1, "sq", "sk"])],
        [helper.make_tensor_value_info("y", onnx_type, ["b", heads, "sq", head])],
        [numpy_helper.from_array(np.array([2], np.int64), "at_group"),
         numpy_helper.from_array(np.array([1, 1, groups, 1, 1], np.int64), "groups"),
         numpy_helper.from_array(np.array([0, heads, -1, head], np.int64), "merged"), scale])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--head", type=int, default=64)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--inputs")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--past", type=int, default=512)
    p.add_argument("--prompt", type=int, help="a prompt of this many tokens instead of a decode step")
    p.add_argument("--seed", type=int, default=5)
    a = p.parse_args()
    if a.heads % a.kv_heads:
        p.error("--kv-heads must divide --heads")
    element = DTYPES[a.dtype][1]
    save(model(a.heads, a.kv_heads, a.head, a.dtype), a.out)
    if not a.inputs:
        return
    os.makedirs(a.inputs, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    sq, sk = (a.prompt, a.prompt) if a.prompt else (1, a.past + 1)
    mask = np.zeros((a.batch, 1, sq, sk))
    if a.prompt:
        mask[...] = np.triu(np.full((sq, sk), -np.inf), k=1)
    values = {"q": rng.standard_normal((a.batch, a.heads, sq, a.head)),
              "k": rng.standard_normal((a.batch, a.kv_heads, sk, a.head)),
              "v": rng.standard_normal((a.batch, a.kv_heads, sk, a.head)),
              "mask": mask}
    stored = {}
    for name, x in values.items():
        t = tensor(name, x.astype(np.float32), a.dtype)
        with open(os.path.join(a.inputs, name + ".pb"), "wb") as f:
            f.write(t.SerializeToString())
        stored[name] = numpy_helper.to_array(t).astype(np.float64)  # what the model reads
    groups = a.heads // a.kv_heads
    s = np.einsum("bhid,bhjd->bhij", stored["q"], np.repeat(stored["k"], groups, axis=1))
    s = s / np.sqrt(a.head) + stored["mask"]
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    y = np.einsum("bhij,bhjd->bhid", w, np.repeat(stored["v"], groups, axis=1))
    with open(os.path.join(a.inputs, "want.pb"), "wb") as f:
        f.write(tensor("y", y.astype(np.float32), a.dtype).SerializeToString())
    cache = 2 * a.batch * a.kv_heads * sk * a.head * element
    rows = 2 * a.batch * a.heads * sq * a.head * element
    with open(os.path.join(a.inputs, "bytes.txt"), "w") as f:
        f.write(f"{cache + rows}\n")
    with open(os.path.join(a.inputs, "flops.txt"), "w") as f:
        f.write(f"{2 * (a.head + a.head) * a.batch * a.heads * sq * sk}\n")


if __name__ == "__main__":
    main()
