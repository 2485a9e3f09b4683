#!/usr/bin/env python3
"""Exports tiny random-weight decoders from transformers with their KV cache,
as users export them, with the tokens transformers generates for them.

    export_decoder_models.py OUT_DIR

Needs torch, transformers and onnxscript (scripts/install-model-export-deps.sh);
the tests read the committed files and need neither. For each of llama (4
query heads on 2 KV heads), mistral (a sliding window of 4, narrower than the
prompts), gpt2 (learned positions, fused QKV) and phi (partial rotary, parallel
attention and MLP):

    OUT_DIR/<name>.onnx   torch.onnx.export (dynamo) of one forward step:
                          input_ids, attention_mask, position_ids,
                          past_key_values.N.key|value [batch, kv heads, past,
                          head] in; logits, present.N.key|value out (the
                          transformers DynamicCache, concat along the sequence)
    OUT_DIR/ids.npy, mask.npy
                          two prompts of 7 and 4 tokens, the second left-padded
    OUT_DIR/<name>_greedy.npy
                          transformers' generate(do_sample=False,
                          max_new_tokens=8) from them: int64 [2, 8]

Weights are drawn with a fixed seed and scaled so that the best logit of each
step leads the next by more than 1e-3 (checked): float32 rounding in another
order cannot change a greedy choice.
"""
import os
import sys

import numpy as np
import onnx
import torch
import transformers
from transformers import (DynamicCache, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                          LlamaForCausalLM, MistralConfig, MistralForCausalLM, PhiConfig,
                          PhiForCausalLM)

VOCAB, NEW_TOKENS = 96, 8


def configs():
    common = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=64, pad_token_id=0,
                  bos_token_id=1, eos_token_id=2)
    return {
        "llama": (LlamaForCausalLM, LlamaConfig(num_key_value_heads=2, **common)),
        "mistral": (MistralForCausalLM,
                    MistralConfig(num_key_value_heads=2, sliding_window=4, **common)),
        "gpt2": (GPT2LMHeadModel,
                 GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2)),
        "phi": (PhiForCausalLM, PhiConfig(partial_rotary_factor=0.5, **common)),
    }


class OneStep(torch.nn.Module):
    """One forward call with the cache as flat tensors in and out."""

    def __init__(self, model, layers):
        super().__init__()
        self.model, self.layers = model, layers

    def forward(self, input_ids, attention_mask, position_ids, *past):
        cache = DynamicCache()
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         position_ids=position_ids, past_key_values=cache, use_cache=True)
        presents = []
        for layer in out.past_key_values.layers:
            presents += [layer.keys, layer.values]
        return (out.logits, *presents)


def kv_shape(config):
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head = config.hidden_size // config.num_attention_heads
    return heads, head


def export(name, model, config, out):
    layers = config.num_hidden_layers
    heads, head = kv_shape(config)
    batch, seq, past = 2, 3, 5
    args = (torch.randint(3, VOCAB, (batch, seq)), torch.ones(batch, past + seq, dtype=torch.int64),
            torch.arange(past, past + seq).repeat(batch, 1))
    pasts = tuple(torch.randn(batch, heads, past, head) for _ in range(2 * layers))
    names = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    presents = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    b, s, p, t = (torch.export.Dim(n, max=64) for n in ("batch", "seq", "past", "total"))
    # (The pasts are one varargs parameter: one tuple of their shapes.)
    shapes = ({0: b, 1: s}, {0: b, 1: t}, {0: b, 1: s}, tuple({0: b, 2: p} for _ in pasts))
    program = torch.onnx.export(OneStep(model, layers), args + pasts, dynamo=True,
                                input_names=["input_ids", "attention_mask", "position_ids"] + names,
                                output_names=["logits"] + presents, dynamic_shapes=shapes,
                                external_data=False)
    path = os.path.join(out, f"{name}.onnx")
    program.save(path)
    # The exporter's per-node metadata (stack traces, FX names) is four
    # fifths of the file; the graph and weights are what the tests read.
    model = onnx.load(path)
    for node in model.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    del model.graph.value_info[:]
    del model.metadata_props[:]
    onnx.checker.check_model(model)
    onnx.save(model, path)


def greedy(model, ids, mask):
    # No stop token: every sequence runs NEW_TOKENS steps, and no logits
    # processor changes what argmax sees (output_logits are the raw logits).
    model.generation_config.eos_token_id = None
    with torch.no_grad():
        got = model.generate(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                             max_new_tokens=NEW_TOKENS, do_sample=False, output_logits=True,
                             return_dict_in_generate=True)
    # Each step's best logit leads the next by more than 1e-3.
    for logits in got.logits:
        top = torch.topk(logits, 2, dim=-1).values
        assert float((top[:, 0] - top[:, 1]).min()) > 1e-3, "a greedy choice is too close"
    return got.sequences[:, ids.shape[1]:].numpy().astype(np.int64)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    ids = rng.integers(3, VOCAB, (2, 7)).astype(np.int64)
    mask = np.ones((2, 7), np.int64)
    mask[1, :3] = 0
    ids[1, :3] = 0  # the pad token
    np.save(os.path.join(out, "ids.npy"), ids)
    np.save(os.path.join(out, "mask.npy"), mask)
    for name, (cls, config) in configs().items():
        for seed in range(100):
            torch.manual_seed(seed)
            model = cls(config).eval()
            with torch.no_grad():
                for p in model.parameters():
                    p.mul_(4.0)  # logits spread out: greedy choices far apart
            try:
                tokens = greedy(model, ids, mask)
                break
            except AssertionError:
                continue
        else:
            raise SystemExit(f"{name}: no seed gave greedy choices 1e-3 apart")
        np.save(os.path.join(out, f"{name}_greedy.npy"), tokens)
        export(name, model, config, out)
        print(name, "seed", seed, tokens.tolist())


if __name__ == "__main__":
    print("torch", torch.__version__, "transformers", transformers.__version__)
    main()
