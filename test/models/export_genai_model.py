#!/usr/bin/env python3
"""Builds a tiny llama with onnxruntime-genai's model builder, as many users
make LLM ONNX, with the tokens onnxruntime-genai itself generates from it.

    export_genai_model.py OUT_DIR

Needs torch, transformers, onnx and onnxruntime-genai
(scripts/install-model-export-deps.sh); the tests read the committed files and
need none of them. It reads OUT_DIR/ids.npy and mask.npy, the two prompts of
export_decoder_models.py (7 tokens; 4 left-padded with pad id 0), and writes:

    OUT_DIR/genai_llama.onnx
                    the builder's model.onnx (precision fp32, execution
                    provider cpu), its external data embedded: one file
    OUT_DIR/genai_llama_greedy.npy
                    onnxruntime-genai's greedy search (og.Generator on the
                    builder's output directory, 8 new tokens) from those
                    prompts: int64 [2, 8], the new tokens only; checked equal
                    to transformers' generate(do_sample=False) of the model

The model is export_decoder_models.py's llama (configs()["llama"]: vocab 96,
hidden 32, 2 layers, 4 query heads on 2 KV heads; its seed search and weight
scaling, greedy choices 1e-3 apart) but for head_dim 16 instead of 8: the
builder gives fp32 cpu GroupQueryAttention, and onnxruntime's CPU kernel
refuses head size 8 ("head_size shall be a multiple of 16"). So its weights
are not llama.onnx's and its tokens not llama_greedy.npy's (the script checks
that the same procedure at head_dim 8 still gives llama_greedy.npy). The
builder has no tokenizer to copy from the tiny checkpoint; a word-level one
over the 96 ids ("<pad>" 0, "<s>" 1, "</s>" 2, "t3".."t95") is written there.

The graph (opsets: "" 22, com.microsoft 1):

    in   input_ids int64 [batch_size, sequence_length]
         attention_mask int64 [batch_size, total_sequence_length]
         past_key_values.{0,1}.{key,value} float32
             [batch_size, 2, past_sequence_length, kv_cache_dim]
    out  logits float32 [batch_size, sequence_length, 96]
         present.{0,1}.{key,value} float32
             [batch_size, 2, total_sequence_length, kv_cache_dim]

(inputs in the order 0.key, 1.key, 0.value, 1.value; the head size is the
symbol kv_cache_dim, 16 in the weights). No position_ids: attention_mask
gives GroupQueryAttention seqlens_k = ReduceSum(mask) - 1 and
total_sequence_length = its width, and the attention rotates q and k itself
(do_rotary 1, cos_cache/sin_cache [64, 8] initializers). 33 nodes: MatMul 11
(q, k and v one packed MatMul), com.microsoft SkipSimplifiedLayerNormalization
4, Mul 4, Sigmoid 2, com.microsoft GroupQueryAttention 2, Gather 2, Cast 2,
Constant 2, SimplifiedLayerNormalization 1 (onnxruntime's, in the default
domain, so onnx.checker refuses the model), ReduceSum 1, Shape 1, Sub 1.

genai_config.json: model.type llama, pad_token_id 0, bos_token_id 1,
eos_token_id 2, context_length 64, vocab_size 96; model.decoder: head_size 16,
hidden_size 32, num_attention_heads 4, num_key_value_heads 2,
num_hidden_layers 2, inputs {input_ids, attention_mask, past_key_names
"past_key_values.%d.key", past_value_names "past_key_values.%d.value"},
outputs {logits, present_key_names "present.%d.key", present_value_names
"present.%d.value"}; search.past_present_share_buffer true (genai passes one
[batch, 2, max_length, 16] buffer, max_length that of the search, as past and
present), search.max_length 64.

Padding: GroupQueryAttention takes sequence b to be the first seqlens_k[b] + 1
positions, so the model wants RIGHT padding. genai takes no mask (it finds
padding by pad_token_id) and moves no tokens: fed ids.npy as it is
(left-padded) it gives [40, 15, 64, 37, 29, 15, 36, 53] for the second
prompt, transformers [90, 15, 94, 16, 29, 37, 29, 37]. So genai gets each
row's tokens first and the pads after (right_padded): the same prompts, and
the same tokens as transformers. A runner without genai does the same: the
first call with right-padded ids and mask and 0-row pasts (or zeroed
max-length buffers), the next token from logits at column sum(mask) - 1 of
each row; then each call one token, the mask one column of 1s longer (the
pads stay 0 inside it), the presents as the next pasts.

KEEP_GENAI_DIR=DIR also copies the builder's output directory (model.onnx,
model.onnx.data, genai_config.json, tokenizer files) to DIR.
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
import torch
import transformers

import onnxruntime_genai as og
from onnxruntime_genai.models import builder  # noqa: F401 (puts builder's modules on the path)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_decoder_models import NEW_TOKENS, VOCAB, configs, greedy  # noqa: E402

# onnxruntime's GroupQueryAttention, which the builder uses for fp32 on cpu,
# takes only head sizes that are multiples of 16; llama.onnx's is 8.
HEAD_DIM = 16


def tiny_llama(ids, mask, head_dim=None):
    """The llama of export_decoder_models.py (head_dim None: 8) and its
    greedy tokens: the first seed, counting from 0, whose greedy choices are
    1e-3 apart, weights scaled by 4."""
    cls, config = configs()["llama"]
    if head_dim is not None:
        config.head_dim = head_dim
    for seed in range(100):
        torch.manual_seed(seed)
        model = cls(config).eval()
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(4.0)
        try:
            return model, seed, greedy(model, ids, mask)
        except AssertionError:
            continue
    raise SystemExit("llama: no seed gave greedy choices 1e-3 apart")


def save_tokenizer(path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"t{i}": i for i in range(3, VOCAB)})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>",
                                         bos_token="<s>", eos_token="</s>").save_pretrained(path)


def build(model, hf_dir, onnx_dir, cache_dir):
    model.save_pretrained(hf_dir)
    save_tokenizer(hf_dir)
    options = builder.parse_extra_options(None, hf_dir, onnx_dir, "fp32", "cpu", cache_dir,
                                          ["hf_token=false"])
    builder.create_model(None, hf_dir, onnx_dir, "fp32", "cpu", cache_dir, **options)


def right_padded(ids, mask, pad):
    """The rows of a left-padded batch with their tokens moved to the front
    and the pads to the back, as onnxruntime-genai wants them."""
    out = np.full_like(ids, pad)
    for row, (tokens, keep) in enumerate(zip(ids, mask)):
        kept = tokens[keep == 1]
        assert (kept != pad).all(), "a prompt token is the pad id"
        out[row, :len(kept)] = kept
    return out


def genai_greedy(onnx_dir, ids, mask, pad):
    model = og.Model(onnx_dir)
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=ids.shape[1] + NEW_TOKENS,
                              batch_size=ids.shape[0])
    generator = og.Generator(model, params)
    generator.append_tokens(right_padded(ids, mask, pad))
    while not generator.is_done():
        generator.generate_next_token()
    rows = [np.asarray(generator.get_sequence(i))[ids.shape[1]:] for i in range(ids.shape[0])]
    assert all(len(r) == NEW_TOKENS for r in rows), f"a row stopped early: {rows}"
    return np.stack(rows).astype(np.int64)


def one_file(src, dst):
    # load_external_data pulls model.onnx.data in; saving without
    # save_as_external_data embeds it. (No onnx.checker: the builder puts
    # onnxruntime's SimplifiedLayerNormalization in the default domain, which
    # the checker does not know.)
    model = onnx.load(src, load_external_data=True)
    onnx.save(model, dst, save_as_external_data=False)


def main():
    out = sys.argv[1]
    ids, mask = np.load(os.path.join(out, "ids.npy")), np.load(os.path.join(out, "mask.npy"))
    # The same procedure with head_dim 8 must still give llama.onnx's tokens.
    ref_path = os.path.join(out, "llama_greedy.npy")
    if os.path.exists(ref_path):
        _, _, same = tiny_llama(ids, mask)
        if not np.array_equal(same, np.load(ref_path)):
            raise SystemExit(f"transformers now gives {same.tolist()}, not llama_greedy.npy")
    model, seed, hf_tokens = tiny_llama(ids, mask, HEAD_DIM)
    tmp = tempfile.mkdtemp()
    try:
        hf_dir, onnx_dir = os.path.join(tmp, "hf"), os.path.join(tmp, "onnx")
        build(model, hf_dir, onnx_dir, os.path.join(tmp, "cache"))
        print("builder wrote", sorted(os.listdir(onnx_dir)))
        one_file(os.path.join(onnx_dir, "model.onnx"), os.path.join(out, "genai_llama.onnx"))
        with open(os.path.join(onnx_dir, "genai_config.json")) as f:
            pad = json.load(f)["model"]["pad_token_id"]
        tokens = genai_greedy(onnx_dir, ids, mask, pad)
        if os.environ.get("KEEP_GENAI_DIR"):
            shutil.copytree(onnx_dir, os.environ["KEEP_GENAI_DIR"], dirs_exist_ok=True)
    finally:
        shutil.rmtree(tmp)
    print("llama head_dim", HEAD_DIM, "seed", seed, "transformers", hf_tokens.tolist(),
          "onnxruntime-genai", tokens.tolist())
    if not np.array_equal(tokens, hf_tokens):
        raise SystemExit("onnxruntime-genai's tokens are not transformers'")
    np.save(os.path.join(out, "genai_llama_greedy.npy"), tokens)


if __name__ == "__main__":
    print("torch", torch.__version__, "transformers", transformers.__version__,
          "onnxruntime-genai", og.__version__)
    main()
