#!/usr/bin/env python3
"""Reads a kiln-compile --report of make_bert_encoder.py's model (compiled with
--bind batch=B,seq=S) and compares the bytes kiln's own kernels move per layer
(the roofline's kernel steps) with the least a fused layer's kernels must move.

    check_bert_roofline.py REPORT.json --layers L --tokens T --hidden H --ff F [--max-ratio 1.5]

The minimum per layer, float32 (docs/performance.md): the matmuls are library
calls with their bias adds as epilogues, and every activation between them is
touched once: attention reads q, k and v and writes the context (4 T H), each
residual add + LayerNorm reads the matmul's result and the residual and writes
its result (3 T H, twice), the erf GELU reads and writes the first feed-forward
matmul's result (2 T F); 4 bytes each. Where that matmul applies the GELU
itself (`activation` gelu_erf in the report's library calls: --precision
tf32, fp16, bf16) the GELU's term goes; fp16 and bf16 values are 2 bytes.
The padding mask, the norms' weights and a narrow mode's casts of the input
and output count in kiln's bytes, not in the minimum (under 1% here).

Prints the figures and "OK" when the ratio is at most --max-ratio and attention
is one step per layer; exits 1 otherwise."""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("report")
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--tokens", type=int, required=True)
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--ff", type=int, required=True)
    p.add_argument("--max-ratio", type=float, default=1.5)
    a = p.parse_args()
    report = json.load(open(a.report))
    roofline = report["roofline"]
    width = 2 if report.get("precision") in ("fp16", "bf16") else 4
    gelu_fused = any(c.get("activation") == "gelu_erf" for c in report.get("library_calls", []))
    kernels = [s for s in roofline["steps"] if s["kind"] == "kernel"]
    attention = [s for s in kernels if s.get("schedule") == "attention"]
    per_layer = sum(s["bytes"] for s in kernels) / a.layers
    t, h, f = a.tokens, a.hidden, a.ff
    minimum = width * (4 * t * h + 2 * 3 * t * h + (0 if gelu_fused else 2 * t * f))
    ratio = per_layer / minimum
    print(f"kernel bytes per layer {per_layer:.0f}, fused minimum {minimum}, ratio {ratio:.3f}; "
          f"{len(kernels) // a.layers} kernel steps and {len(attention) // a.layers} attention "
          f"steps per layer; the GELU {'in the matmul' if gelu_fused else 'a kernel'}; "
          f"predicted {roofline['predicted_us'] / a.layers:.1f} us per layer")
    if len(attention) != a.layers:
        print(f"attention is {len(attention)} steps for {a.layers} layers")
        return 1
    if ratio > a.max_ratio:
        print(f"kernel bytes are {ratio:.3f} times the minimum (at most {a.max_ratio})")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
