#!/usr/bin/env python3
"""Writes a random-weight Llama-family decoder as transformers' eager
LlamaForCausalLM exports one with its KV cache, for the decode benchmark
(check_decode_roofline.py) and the GPU machine's comparison with torch.

    make_llama_decoder.py OUT.onnx [--config tinyllama|llama-7b|tiny]
                          [--layers N] [--dtype bf16|fp16|fp32] [--seed S]
                          [--step-inputs DIR [--batch B] [--past P]]

The interface is the exporters': input_ids, attention_mask [batch, total],
position_ids and past_key_values.N.key|value [batch, kv_heads, past, head]
in; logits and present.N.key|value (Concat of past and new on dim 2) out.
Per layer, as the eager code does it:
- RMSNorm upcast to float32 (Pow, ReduceMean, Add eps, Sqrt, Reciprocal),
  cast back, times its weight;
- Q, K and V projections (MatMul by [in, out] weights), heads split by
  Reshape + Transpose, RoPE from cos/sin of position_ids times inv_freq
  (rotate_half by Slice/Neg/Concat);
- repeat_kv for grouped-query heads (Unsqueeze, Expand, Reshape);
- scores times 1/sqrt(head), plus the additive mask sliced to the keys'
  length (the mask is [batch, 1, seq, total]: causal from cache_position =
  past + arange(seq), past read from the first cache's shape, and padding
  from attention_mask), softmax in float32;
- the output projection and residual, RMSNorm, SwiGLU (silu(gate) * up) and
  the down projection and residual.
Then the final RMSNorm and the LM head. Weights are N(0, 0.02), the norms'
1 + N(0, 0.02) (not ones, which the compiler would fold away), drawn per
tensor from --seed; models over 1 GiB keep them in OUT.onnx.data (ONNX
external data).

Configs are the published shapes: TinyLlama-1.1B (22 layers, hidden 2048, 32
query heads on 4 KV heads, FFN 5632, vocabulary 32000: 2.2 GB in bf16) and
Llama-2-7B (32 layers of hidden 4096, 32 heads, FFN 11008; cut with
--layers); `tiny` is for tests.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

CONFIGS = {
    "tinyllama": dict(hidden=2048, layers=22, heads=32, kv_heads=4, ffn=5632, vocab=32000),
    "llama-7b": dict(hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000),
    "tiny": dict(hidden=64, layers=2, heads=4, kv_heads=2, ffn=160, vocab=256),
}
DTYPES = {"fp32": (T.FLOAT, 4), "fp16": (T.FLOAT16, 2), "bf16": (T.BFLOAT16, 2)}
# The additive mask's "minus infinity": the type's lowest finite value, as
# transformers uses torch.finfo(dtype).min.
MASK_MIN = {"fp32": np.finfo(np.float32).min, "fp16": np.finfo(np.float16).min,
            "bf16": -3.3895313892515355e38}


def tensor(name, array, dtype):
    """`array` (float) stored as `dtype`; bf16 rounds to nearest even."""
    onnx_type, _ = DTYPES[dtype]
    if dtype == "fp32":
        return numpy_helper.from_array(np.asarray(array, np.float32), name)
    if dtype == "fp16":
        return numpy_helper.from_array(np.asarray(array, np.float16), name)
    bits = np.ascontiguousarray(array, np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return helper.make_tensor(name, onnx_type, array.shape, rounded.tobytes(), raw=True)


def build(config, dtype, seed):
    hidden, heads, kv, ffn, vocab = (config[k] for k in ("hidden", "heads", "kv_heads", "ffn", "vocab"))
    head = hidden // heads
    onnx_type, _ = DTYPES[dtype]
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def node(op, inputs, output, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def const(name, value, np_type=np.int64):
        inits.append(numpy_helper.from_array(np.array(value, np_type), name))
        return name

    def weight(name, shape):
        inits.append(tensor(name, rng.standard_normal(shape, np.float32) * 0.02, dtype))
        return name

    def norm_weight(name, n):  # near 1, as trained norms are; not ones, which fold away
        inits.append(tensor(name, 1 + 0.02 * rng.standard_normal(n, np.float32), dtype))
        return name

    def cast(x, to, out):
        return node("Cast", [x], out, to=to) if dtype != "fp32" else x

    def rms_norm(x, name):
        xf = cast(x, T.FLOAT, name + ".f32")
        sq = node("Pow", [xf, "two"], name + ".sq")
        var = node("ReduceMean", [sq, "axis_last"], name + ".var", keepdims=1)
        root = node("Sqrt", [node("Add", [var, "eps"], name + ".var_eps")], name + ".root")
        normed = node("Mul", [xf, node("Reciprocal", [root], name + ".rsqrt")], name + ".normed")
        return node("Mul", [norm_weight(name + ".weight", hidden), cast(normed, onnx_type, name + ".cast")], name)

    def heads_of(x, n, name):
        split = node("Reshape", [x, const(name + ".shape", [0, 0, n, head])], name + ".split")
        return node("Transpose", [split], name, perm=[0, 2, 1, 3])

    def rope(x, name):
        lo = node("Slice", [x, "zero_v", "half_v", "three_v"], name + ".lo")
        hi = node("Slice", [x, "half_v", "head_v", "three_v"], name + ".hi")
        rotated = node("Concat", [node("Neg", [hi], name + ".neg"), lo], name + ".rot", axis=-1)
        return node("Add", [node("Mul", [x, "cos"], name + ".c"),
                            node("Mul", [rotated, "sin"], name + ".s")], name)

    def repeat_kv(x, name):
        if kv == heads:
            return x
        shape = node("Shape", [x], name + ".shape")
        batch = node("Slice", [shape, "zero_v", "one_v"], name + ".batch")
        length = node("Slice", [shape, "two_v", "three_v"], name + ".length")
        wide = node("Expand", [node("Unsqueeze", [x, "two_v"], name + ".5d"),
                               node("Concat", [batch, const(name + ".kv", [kv]),
                                               const(name + ".rep", [heads // kv]), length, "head_v"],
                                    name + ".wide_shape", axis=0)], name + ".wide")
        flat = node("Concat", [batch, const(name + ".heads", [heads]), length, "head_v"],
                    name + ".flat_shape", axis=0)
        return node("Reshape", [wide, flat], name)

    for name, value in (("zero_v", [0]), ("one_v", [1]), ("two_v", [2]), ("three_v", [3]),
                        ("half_v", [head // 2]), ("head_v", [head]), ("axis_last", [-1]),
                        ("merge_shape", [0, 0, hidden]), ("zero", 0), ("one", 1), ("two_i", 2)):
        const(name, value)
    const("two", 2.0, np.float32)
    const("eps", 1e-5, np.float32)
    inits.append(tensor("scale", np.array(1 / np.sqrt(head), np.float32), dtype))
    inits.append(tensor("mask_zero", np.array(0, np.float32), dtype))
    inits.append(tensor("mask_min", np.array(MASK_MIN[dtype], np.float32), dtype))
    const("inv_freq", 1.0 / (10000.0 ** (np.arange(0, head, 2) / head)), np.float32)

    # Rotary cos/sin [batch, 1, seq, head] from position_ids.
    pos = node("Cast", ["position_ids"], "pos_f", to=T.FLOAT)
    freqs = node("Mul", [node("Unsqueeze", [pos, "axis_last"], "pos_col"), "inv_freq"], "freqs")
    emb = node("Concat", [freqs, freqs], "emb", axis=-1)
    for f in ("cos", "sin"):
        node("Unsqueeze", [cast(node(f.capitalize(), [emb], f + ".f32"), onnx_type, f + ".t"), "one_v"], f)

    # The additive mask [batch, 1, seq, total].
    past = node("Gather", [node("Shape", ["past_key_values.0.key"], "cache_shape"), "two_i"], "past", axis=0)
    seq = node("Gather", [node("Shape", ["input_ids"], "ids_shape"), "one"], "seq", axis=0)
    total = node("Gather", [node("Shape", ["attention_mask"], "mask_shape"), "one"], "total", axis=0)
    cache_position = node("Range", [past, node("Add", [past, seq], "past_seq"), "one"], "cache_position")
    key_position = node("Range", ["zero", total, "one"], "key_position")
    causal = node("LessOrEqual", [key_position, node("Unsqueeze", [cache_position, "axis_last"], "query_col")],
                  "causal")
    padding = node("Unsqueeze", [node("Equal", ["attention_mask", "one"], "kept"), "one_v"], "kept3")
    allowed = node("And", [causal, node("Unsqueeze", [padding, "one_v"], "kept4")], "allowed")
    node("Where", [allowed, "mask_zero", "mask_min"], "mask")

    inputs = [helper.make_tensor_value_info("input_ids", T.INT64, ["batch", "seq"]),
              helper.make_tensor_value_info("attention_mask", T.INT64, ["batch", "total"]),
              helper.make_tensor_value_info("position_ids", T.INT64, ["batch", "seq"])]
    outputs = [helper.make_tensor_value_info("logits", onnx_type, ["batch", "seq", vocab])]
    x = node("Gather", [weight("embed", (vocab, hidden)), "input_ids"], "embedded")
    for i in range(config["layers"]):
        p = f"l{i}."
        h = rms_norm(x, p + "input_norm")
        q = rope(heads_of(node("MatMul", [h, weight(p + "q", (hidden, heads * head))], p + "q.mm"),
                          heads, p + "q.heads"), p + "q.rope")
        new = {"key": rope(heads_of(node("MatMul", [h, weight(p + "k", (hidden, kv * head))], p + "k.mm"),
                                    kv, p + "k.heads"), p + "k.rope"),
               "value": heads_of(node("MatMul", [h, weight(p + "v", (hidden, kv * head))], p + "v.mm"),
                                 kv, p + "v.heads")}
        present = {}
        for kind in ("key", "value"):
            past_name, present_name = f"past_key_values.{i}.{kind}", f"present.{i}.{kind}"
            inputs.append(helper.make_tensor_value_info(past_name, onnx_type, ["batch", kv, "past", head]))
            outputs.append(helper.make_tensor_value_info(present_name, onnx_type, ["batch", kv, "total", head]))
            present[kind] = node("Concat", [past_name, new[kind]], present_name, axis=2)
        keys = repeat_kv(present["key"], p + "keys")
        values = repeat_kv(present["value"], p + "values")
        scores = node("Mul", [node("MatMul", [q, node("Transpose", [keys], p + "keys_t", perm=[0, 1, 3, 2])],
                                   p + "qk"), "scale"], p + "scores")
        key_length = node("Slice", [node("Shape", [keys], p + "keys_shape"), "two_v", "three_v"], p + "key_len")
        sliced = node("Slice", ["mask", "zero_v", key_length, "three_v"], p + "mask")
        probs = node("Softmax", [cast(node("Add", [scores, sliced], p + "masked"), T.FLOAT, p + "masked.f32")],
                     p + "probs.f32", axis=-1)
        context = node("MatMul", [cast(probs, onnx_type, p + "probs"), values], p + "context")
        merged = node("Reshape", [node("Transpose", [context], p + "context_t", perm=[0, 2, 1, 3]), "merge_shape"],
                      p + "merged")
        x = node("Add", [x, node("MatMul", [merged, weight(p + "o", (heads * head, hidden))], p + "o.mm")],
                 p + "attn_out")
        h = rms_norm(x, p + "post_norm")
        gate = node("MatMul", [h, weight(p + "gate", (hidden, ffn))], p + "gate.mm")
        silu = node("Mul", [gate, node("Sigmoid", [gate], p + "gate.sig")], p + "silu")
        act = node("Mul", [silu, node("MatMul", [h, weight(p + "up", (hidden, ffn))], p + "up.mm")], p + "act")
        x = node("Add", [x, node("MatMul", [act, weight(p + "down", (ffn, hidden))], p + "down.mm")], p + "out")
    final = rms_norm(x, "final_norm")
    nodes.append(helper.make_node("MatMul", [final, weight("lm_head", (hidden, vocab))], ["logits"],
                                  name="lm_head.mm"))
    graph = helper.make_graph(nodes, "llama_decoder", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def write_step_inputs(model, config, dtype, directory, batch, past, seed):
    """One decode step's inputs as NAME.pb: random tokens and caches; every
    sequence but the first left-padded by one more position than the one
    before (at most half its past), with position ids as transformers
    computes them from the mask."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed + 1)
    mask = np.ones((batch, past + 1), np.int64)
    for b in range(1, batch):
        mask[b, :min(b, past // 2)] = 0
    values = {"input_ids": rng.integers(0, config["vocab"], (batch, 1)).astype(np.int64),
              "attention_mask": mask,
              "position_ids": (mask.sum(axis=1, keepdims=True) - 1).astype(np.int64)}
    head = config["hidden"] // config["heads"]
    for name in (v.name for v in model.graph.input):
        if name.startswith("past_key_values."):
            values[name] = rng.standard_normal((batch, config["kv_heads"], past, head), np.float32)
    for name, value in values.items():
        t = numpy_helper.from_array(value, name) if value.dtype == np.int64 else tensor(name, value, dtype)
        with open(os.path.join(directory, name + ".pb"), "wb") as f:
            f.write(t.SerializeToString())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--config", choices=sorted(CONFIGS), default="tinyllama")
    p.add_argument("--layers", type=int, help="keep this many layers (default: the config's)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--step-inputs", metavar="DIR",
                   help="also write one decode step's inputs to DIR as NAME.pb (--batch, --past)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--past", type=int, default=16)
    a = p.parse_args()
    if a.batch < 1 or a.past < 0:
        p.error("--batch must be at least 1 and --past at least 0")
    config = dict(CONFIGS[a.config])
    if a.layers is not None:
        if a.layers < 1:
            p.error("--layers must be at least 1")
        config["layers"] = a.layers
    model = build(config, a.dtype, a.seed)
    weight_bytes = sum(len(t.raw_data) for t in model.graph.initializer)
    if weight_bytes > 1 << 30:
        location = os.path.basename(a.out) + ".data"
        if os.path.exists(a.out + ".data"):
            os.remove(a.out + ".data")
        onnx.save_model(model, a.out, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=location, size_threshold=1024)
    else:
        onnx.checker.check_model(model)
        onnx.save_model(model, a.out)
    if a.step_inputs:
        write_step_inputs(model, config, a.dtype, a.step_inputs, a.batch, a.past, a.seed)


if __name__ == "__main__":
    main()
