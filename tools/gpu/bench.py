#!/usr/bin/env python3
"""Latency of kiln's compiled models against torch (eager and torch.compile) and
onnxruntime, measured in one process so the ratios are like for like.

    bench.py --models DIR [--backend auto|cuda|host] [--runs N] [--json FILE]

DIR holds mlp.so, cnn.so and encoder.so from kiln-compile (tools/gpu-check.sh
builds them). Baselines that are not installed (torch, onnxruntime) are skipped
and reported as such. Prints a Markdown table; --json keeps the numbers."""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
import kiln_runtime  # noqa: E402

# (model, input shape) per case: small and larger batches.
CASES = [("mlp", (1, 16)), ("mlp", (256, 16)), ("cnn", (1, 3, 16, 16)), ("cnn", (64, 3, 16, 16)),
         ("encoder", (1, 16, 16)), ("encoder", (32, 128, 16))]


def timed(fn, runs, warmup, sync=lambda: None, budget_s=10.0):
    """Latency statistics of `fn` over `runs` runs (fewer, but at least 3, when
    they would take more than `budget_s`: the device's time is scarce)."""
    start = time.perf_counter()
    fn()
    sync()
    first = time.perf_counter() - start
    runs = max(3, min(runs, int(budget_s / max(first, 1e-6))))
    for _ in range(min(warmup, runs)):
        fn()
    sync()
    ms = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        sync()
        ms.append(1000.0 * (time.perf_counter() - start))
    ms.sort()
    return {"runs": runs, "median_ms": statistics.median(ms), "p90_ms": ms[int(0.9 * (len(ms) - 1))],
            "min_ms": ms[0], "mean_ms": statistics.fmean(ms)}


def torch_baselines(name, x, runs, warmup, results):
    try:
        import torch
        import torch_models
    except ImportError as e:
        results["torch"] = f"skipped: {e}"
        return
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch_models.MODELS[name][0]().eval().to(device)
    xt = torch.from_numpy(x).to(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with torch.no_grad():
        # Host input to host output, as kiln's host-buffer API is measured.
        results["torch_eager"] = timed(lambda: model(torch.from_numpy(x).to(device)).cpu(),
                                       runs, warmup, sync)
        try:
            start = time.perf_counter()
            compiled = torch.compile(model)
            compiled(xt)
            sync()
            results["torch_compile_s"] = time.perf_counter() - start
            results["torch_compile"] = timed(
                lambda: compiled(torch.from_numpy(x).to(device)).cpu(), runs, warmup, sync)
        except Exception as e:  # torch.compile needs a working toolchain
            results["torch_compile"] = f"failed: {type(e).__name__}: {e}"[:200]


def ort_baseline(name, models_dir, x, runs, warmup, results):
    onnx_path = os.path.join(ROOT, "test", "models", name + ".onnx")
    try:
        import onnxruntime as ort
    except ImportError as e:
        results["onnxruntime"] = f"skipped: {e}"
        return
    providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider")
                 if p in ort.get_available_providers()]
    session = ort.InferenceSession(onnx_path, providers=providers)
    results["onnxruntime_provider"] = session.get_providers()[0]
    results["onnxruntime"] = timed(lambda: session.run(None, {"x": x}), runs, warmup)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", required=True)
    p.add_argument("--backend", default="auto")
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--json")
    p.add_argument("--no-baselines", action="store_true")
    a = p.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for name, shape in CASES:
        x = rng.standard_normal(shape, dtype=np.float32)
        model = kiln_runtime.Model(os.path.join(a.models, name + ".so"), a.backend)
        r = {"model": name, "shape": list(shape), "backend": model.backend}
        r["kiln"] = timed(lambda: model.run([x]), a.runs, a.warmup)
        r["arena_bytes"], r["unplanned_bytes"] = model.memory([x])
        table = model.profile([x], runs=max(1, min(a.runs, r["kiln"]["runs"], 10)))
        r["top_steps"] = sorted(([k, v[0], v[1], v[2]] for k, v in table.items()),
                                key=lambda s: -s[3])[:5]
        if not a.no_baselines:
            torch_baselines(name, x, a.runs, a.warmup, r)
            ort_baseline(name, a.models, x, a.runs, a.warmup, r)
        rows.append(r)
        print(f"{name} {list(shape)}: kiln median {r['kiln']['median_ms']:.3f} ms", file=sys.stderr)

    def cell(r, key):
        v = r.get(key)
        if isinstance(v, dict):
            return f"{v['median_ms']:.3f} ({v['median_ms'] / r['kiln']['median_ms']:.2f}x)"
        return "n/a"
    print("| model | input | kiln ms (backend) | torch eager ms (÷ kiln) | torch.compile ms (÷ kiln) "
          "| onnxruntime ms (÷ kiln) | arena / unplanned bytes |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['shape']} | {r['kiln']['median_ms']:.3f} ({r['backend'].split(' (')[0]}) "
              f"| {cell(r, 'torch_eager')} | {cell(r, 'torch_compile')} | {cell(r, 'onnxruntime')} "
              f"| {r['arena_bytes']} / {r['unplanned_bytes']} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
