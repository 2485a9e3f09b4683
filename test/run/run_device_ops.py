"""run_device_ops.py DIR SET --fake-cuda "CMD": runs DIR/ops.kiln (from
make_device_ops_model.py's DIR/device_ops.onnx) on the input set SET (small,
large, or bad: small with a ScatterElements index out of range) in host
emulation and on the CUDA backend over the fake driver, and the ONNX model on
the float64 reference; every output must match the reference within 1e-5, and
the CUDA profile must have no host step. With SET bad, prints each backend's
error as "BACKEND: MESSAGE" and exits 1 when every backend refused the call."""
import argparse
import os
import shlex
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

NAMES = ["x", "mask", "seq", "seq_idx", "seq_upd", "cache", "slots", "rows", "pick", "grid", "scores"]
OUTPUTS = 13


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("set")
    p.add_argument("--fake-cuda", required=True)
    a = p.parse_args()
    folder = os.path.join(a.dir, "small" if a.set == "bad" else a.set)
    inputs = []
    for name in NAMES:
        path = os.path.join(folder, name + ".npy")
        if a.set == "bad" and name == "seq_idx":
            path = os.path.join(a.dir, "bad_index.npy")
        inputs += ["--input", f"{name}={path}"]
    runs = {
        "reference": ["kiln-run", os.path.join(a.dir, "device_ops.onnx"), "--backend", "reference"],
        "host": ["kiln-run", os.path.join(a.dir, "ops.kiln"), "--backend", "host"],
        "cuda": shlex.split(a.fake_cuda) + ["kiln-run", os.path.join(a.dir, "ops.kiln"), "--backend",
                                            "cuda", "--profile", "--trace",
                                            os.path.join(a.dir, "trace.json")],
    }
    outputs = {}
    refused = 0
    for backend, command in runs.items():
        out = os.path.join(a.dir, f"{a.set}-{backend}")
        r = subprocess.run(command + inputs + ["--output-dir", out], capture_output=True, text=True,
                           timeout=300)
        if a.set == "bad":
            message = (r.stderr.strip().splitlines() or ["(no error)"])[-1]
            print(f"{backend}: {message}", file=sys.stderr)
            refused += r.returncode != 0
            continue
        if r.returncode != 0:
            print(f"{backend}: exit {r.returncode}: {r.stderr.strip()}")
            return 1
        if backend == "cuda":
            host_steps = [l for l in r.stdout.splitlines() if " host " in l]
            if host_steps:
                print("cuda: steps ran on the host:\n" + "\n".join(host_steps))
                return 1
        outputs[backend] = [numpy_helper.to_array(onnx.load_tensor(os.path.join(out, f"output_{i}.pb")))
                            for i in range(OUTPUTS)]
    if a.set == "bad":
        return 1 if refused == len(runs) else 0
    worst = 0.0
    for backend in ("host", "cuda"):
        for i, (got, want) in enumerate(zip(outputs[backend], outputs["reference"])):
            if got.dtype != want.dtype or got.shape != want.shape:
                print(f"{backend} output {i}: {got.dtype}{list(got.shape)} vs {want.dtype}{list(want.shape)}")
                return 1
            if not np.array_equal(np.isnan(got), np.isnan(want)):
                print(f"{backend} output {i}: NaN where the reference has none, or the other way")
                return 1
            diff = float(np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64)), initial=0))
            if diff > 1e-5:
                print(f"{backend} output {i}: off by {diff:.3g} (atol 1e-5)")
                return 1
            worst = max(worst, diff)
    print(f"OK {a.set}: host and cuda match the reference (max abs diff {worst:.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
