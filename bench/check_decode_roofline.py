#!/usr/bin/env python3
"""Compares the roofline of one decode step of a decoder (kiln-compile
--report, compiled with --bind batch=B,seq=1,past=P,total=P+1, or
batch=B,seq=1,total=P+1,cache_capacity=C for --kv-cache-in-place) with the
bandwidth bound of that step: the bytes a decode step must read and write,
over the H200's 4.8 TB/s.

    check_decode_roofline.py MODEL.onnx REPORT.json --batch B --past P
                             [--json OUT.json] [--max-ratio R]

What a step must move, read from the model (any decoder exported with its
cache as past_key_values.N.key|value inputs):
- every weight once (every initializer), except a table read only by Gather
  (the token embedding), of which only the rows of the step's tokens count;
- the cache: each past_key_values input's past rows read once, and the new
  row of each present written once;
- the logits written once.
The activations between layers (a few rows of `hidden`) are left out: under
0.01% at batch 1.

What kiln's plan costs is the report's roofline: each step's predicted time
(its bytes at 4.3 TB/s, flops at the unit's peak, plus the model's 2 us per
launch) summed over every step, so launches count: the step-by-step figure,
as without CUDA graphs. The figures printed: the bound, the prediction, their
ratio, and where the prediction goes (launches, kernel bytes, library bytes,
the kernels moving the most). Exits 1 when the report was compiled for
other sizes (its batch, past and seq symbols, where the model has them), when
--max-ratio is given and the ratio is over it, when the plan has host steps
(a decode step must not leave the device), or when a step has no prediction
(the sum would leave it out).
"""
import argparse
import collections
import json
import sys

import onnx
from onnx import helper

PEAK_BYTES_PER_US = 4.8e6  # 4.8 TB/s, the H200's HBM3e


def element_bytes(data_type):
    return helper.tensor_dtype_to_np_dtype(data_type).itemsize


def must_move(model, batch, past, seq):
    """Bytes a decode step must move: (weights, cache, logits)."""
    graph = model.graph
    read_whole = set()  # read by something other than a Gather's table
    gathered = set()
    for node in graph.node:
        for i, name in enumerate(node.input):
            (gathered if node.op_type == "Gather" and i == 0 else read_whole).add(name)
    weights = 0
    for init in graph.initializer:
        count = 1
        for d in init.dims:
            count *= d
        size = count * element_bytes(init.data_type)
        if init.name in gathered and init.name not in read_whole and init.dims:
            size = size // init.dims[0] * batch * seq  # the rows the tokens pick
        weights += size
    cache = 0
    for value in graph.input:
        if not value.name.startswith("past_key_values."):
            continue
        t = value.type.tensor_type
        dims = [d.dim_value for d in t.shape.dim]
        kv_heads, head = dims[1], dims[3]
        cache += batch * kv_heads * (past + seq) * head * element_bytes(t.elem_type)
    logits = 0
    for value in graph.output:
        if value.name == "logits":
            t = value.type.tensor_type
            logits = batch * seq * t.shape.dim[2].dim_value * element_bytes(t.elem_type)
    return weights, cache, logits


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("report")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--past", type=int, required=True)
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--max-ratio", type=float)
    a = p.parse_args()
    if a.batch < 1 or a.past < 0:
        p.error("--batch must be at least 1 and --past at least 0")
    model = onnx.load(a.model, load_external_data=False)
    weights, cache, logits = must_move(model, a.batch, a.past, 1)
    minimum = weights + cache + logits
    bound_us = minimum / PEAK_BYTES_PER_US
    report = json.load(open(a.report))
    roofline = report["roofline"]
    # The report's sizes must be this step's: its symbols as --bind set them.
    bound = report["memory_plan"]["symbols"]
    # (A model compiled with --kv-cache-in-place has no past symbol: the mask's
    # length, total, is the past and the new token.)
    for symbol, want in (("batch", a.batch), ("past", a.past), ("seq", 1), ("total", a.past + 1)):
        if symbol in bound and bound[symbol] != want:
            print(f"the report was compiled with {symbol}={bound[symbol]}, not {want} (--bind)")
            return 1
    steps = roofline["steps"]
    kinds = collections.Counter(s["kind"] for s in steps)
    launches = kinds["kernel"] + kinds["library"]
    # The roofline's per-launch term, on every step it predicts (docs/performance.md).
    launch_us = 2.0 * sum(1 for s in steps if s.get("predicted_us") is not None)
    predicted = roofline["predicted_us"]
    by_kernel = collections.defaultdict(lambda: [0, 0])
    for s in steps:
        if s["kind"] == "kernel":
            entry = by_kernel[s.get("schedule", "") + " " + s["name"]]
            entry[0] += 1
            entry[1] += s.get("bytes", 0)
    heaviest = sorted(by_kernel.items(), key=lambda kv: -kv[1][1])[:5]
    ratio = predicted / bound_us
    print(f"decode step at batch {a.batch}, past {a.past}: must move {minimum / 1e6:.1f} MB "
          f"(weights {weights / 1e6:.1f}, cache {cache / 1e6:.2f}, logits {logits / 1e6:.2f}): "
          f"{bound_us:.1f} us at 4.8 TB/s")
    print(f"kiln's plan: {kinds['kernel']} kernels, {kinds['library']} library calls, "
          f"{kinds['host']} host steps; kernels move {roofline['kernel_bytes'] / 1e6:.1f} MB, "
          f"library calls {roofline['library_bytes'] / 1e6:.1f} MB")
    print(f"predicted {predicted:.1f} us step by step ({launch_us:.0f} us of it launches, "
          f"{predicted - launch_us:.1f} us of work): {ratio:.2f}x the bound; "
          f"{(predicted - launch_us) / bound_us:.2f}x without launch costs")
    for name, (count, moved) in heaviest:
        print(f"  {name.strip()}: {count} steps, {moved / 1e6:.2f} MB")
    figures = {"batch": a.batch, "past": a.past, "must_move_bytes": minimum, "weight_bytes": weights,
               "cache_bytes": cache, "logit_bytes": logits, "bound_us": bound_us,
               "predicted_us": predicted, "launches": launches, "launch_us": launch_us,
               "host_steps": kinds["host"], "kernel_bytes": roofline["kernel_bytes"],
               "library_bytes": roofline["library_bytes"], "ratio": ratio}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)
    if kinds["host"]:
        print(f"the decode step has {kinds['host']} host steps")
        return 1
    if roofline["unpredicted_steps"]:
        print(f"{roofline['unpredicted_steps']} steps have no prediction: the ratio leaves them out")
        return 1
    if a.max_ratio is not None and ratio > a.max_ratio:
        print(f"the prediction is {ratio:.2f} times the bound (at most {a.max_ratio})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
