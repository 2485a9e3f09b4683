"""run_numpy_cases.py DIR NAME --fake-cuda "CMD": runs DIR/NAME.kiln (compiled
from DIR/NAME.onnx, as make_control_flow_models.py and make_data_size_models.py
write them, or from kiln's own DIR/NAME.mlir) on every data set DIR/NAME/S/ (inputs in_<name>.npy) on the float64
reference (the model), in host emulation and on the CUDA backend over the
fake driver, and compares each output with numpy's (want_K.npy) within 1e-5
(float32 arithmetic in the same order; the reference computes in float64; --atol
sets another bound for narrower types, --rtol adds one relative to numpy's
value), NaN where numpy has NaN. The
CUDA profile must have no host step except those --host-steps names.
--backends picks some of the three, --artifact another artifact of the model
(compiled another way). Prints "OK NAME set S" per data set; exits 1 at the
first mismatch."""
import argparse
import glob
import os
import shlex
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("name")
    p.add_argument("--fake-cuda", required=True)
    p.add_argument("--host-steps", default="",
                   help="comma-separated step names allowed to run on the host on CUDA")
    p.add_argument("--backends", default="reference,host,cuda")
    p.add_argument("--artifact", help="the artifact to run (default DIR/NAME.kiln)")
    p.add_argument("--atol", type=float, default=1e-5,
                   help="the largest absolute difference from numpy (float16 outputs need more)")
    p.add_argument("--rtol", type=float, default=0.0,
                   help="plus this times numpy's magnitude (outputs of any size, like tan's)")
    p.add_argument("--differing", type=float, default=1.0,
                   help="the largest fraction of elements that may differ from numpy at all: "
                        "for outputs of a narrow type whose numpy value is the exact result "
                        "rounded once, where a kernel computing in fp32 rounds differently only "
                        "near ties, and an error of some bits before the rounding shows as many")
    a = p.parse_args()
    sets = sorted(glob.glob(os.path.join(a.dir, a.name, "*")))
    artifact = a.artifact or os.path.join(a.dir, a.name + ".kiln")
    backends = a.backends.split(",")
    # The model the reference runs: NAME.onnx, or kiln's own NAME.mlir.
    reference = os.path.join(a.dir, a.name + ".onnx")
    if not os.path.exists(reference):
        reference = os.path.join(a.dir, a.name + ".mlir")
    for folder in sets:
        inputs = []
        for path in sorted(glob.glob(os.path.join(folder, "in_*.npy"))):
            inputs += ["--input", f"{os.path.basename(path)[3:-4]}={path}"]
        wants = [np.load(w) for w in sorted(glob.glob(os.path.join(folder, "want_*.npy")))]
        runs = {
            "reference": ["kiln-run", reference, "--backend", "reference"],
            "host": ["kiln-run", artifact, "--backend", "host"],
            "cuda": shlex.split(a.fake_cuda) + ["kiln-run", artifact, "--backend", "cuda",
                                                "--profile", "--trace",
                                                os.path.join(folder, "trace.json")],
        }
        for backend, command in runs.items():
            if backend not in backends:
                continue
            out = os.path.join(folder, "out-" + backend)
            r = subprocess.run(command + inputs + ["--output-dir", out], capture_output=True,
                               text=True, timeout=300)
            if r.returncode != 0:
                print(f"{backend}: exit {r.returncode}: {r.stderr.strip()}")
                return 1
            if backend == "cuda":
                allowed = set(filter(None, a.host_steps.split(",")))
                host_steps = [l for l in r.stdout.splitlines()
                              if " host " in l and l.split()[0] not in allowed]
                if host_steps:
                    print("cuda: steps ran on the host:\n" + "\n".join(host_steps))
                    return 1
            for k, want in enumerate(wants):
                got = numpy_helper.to_array(onnx.load_tensor(os.path.join(out, f"output_{k}.pb")))
                if got.dtype != want.dtype or got.shape != want.shape:
                    print(f"{a.name} set {os.path.basename(folder)} {backend} output {k}: "
                          f"{got.dtype}{list(got.shape)}, numpy {want.dtype}{list(want.shape)}")
                    return 1
                got64, want64 = got.astype(np.float64), want.astype(np.float64)
                if not np.array_equal(np.isnan(got64), np.isnan(want64)):
                    print(f"{a.name} set {os.path.basename(folder)} {backend} output {k}: "
                          f"NaN at {int(np.sum(np.isnan(got64)))} places, numpy at "
                          f"{int(np.sum(np.isnan(want64)))}")
                    return 1
                finite = ~np.isnan(want64)
                excess = np.abs(got64[finite] - want64[finite]) - a.rtol * np.abs(want64[finite])
                if float(np.max(excess, initial=0)) > a.atol:
                    worst = int(np.argmax(excess))
                    print(f"{a.name} set {os.path.basename(folder)} {backend} output {k}: "
                          f"{got64[finite][worst]!r} where numpy has {want64[finite][worst]!r}")
                    return 1
                differing = float(np.mean(got64[finite] != want64[finite])) if finite.any() else 0.0
                if differing > a.differing:
                    print(f"{a.name} set {os.path.basename(folder)} {backend} output {k}: "
                          f"{differing:.2%} of the elements differ from numpy's, more than "
                          f"{a.differing:.2%}")
                    return 1
        print(f"OK {a.name} set {os.path.basename(folder)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
