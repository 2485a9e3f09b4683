#!/usr/bin/env python3
"""What running a Q/DQ model as int8 library calls is worth, by kiln's
roofline model: builds ResNet-18 (test/run/make_qdq_models.py's, random
weights) at an image size, quantizes it with onnxruntime's quantize_static,
compiles the float model (fp32 and --precision bf16) and the quantized one
with --report, and prints each one's predicted time and bytes at a batch
size, as ratios against fp32 in the same run.

    check_qdq_roofline.py [--size 224] [--batch 8] [--kiln-bin DIR] [--work DIR]

Needs onnxruntime (the venv scripts/install-onnxruntime-deps.sh makes).
What it does not measure: a GPU. The roofline's int8 peak (1979 TOPS on an
H200) and its library calls' bytes are the model's (docs/performance.md);
cuDNN's int8 kernels, the transposes around its NHWC layout and every
launch's cost are left to tools/gpu-check.sh on a device.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "run"))
import make_qdq_models as models  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--kiln-bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "..", "build", "bin"))
    p.add_argument("--work", default="/tmp/kiln-qdq-roofline")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model = models.resnet18(models.rng)
    for value in list(model.graph.input[0].type.tensor_type.shape.dim)[2:]:
        value.dim_value = a.size
    calibration = [models.rng.standard_normal((1, 3, a.size, a.size)).astype(np.float32)]
    quantized = models.quantize(a.work, "resnet18", model, calibration)
    del quantized
    runs = [("fp32", "resnet18-float.onnx", []), ("bf16", "resnet18-float.onnx", ["--precision", "bf16"]),
            ("int8 Q/DQ", "resnet18.onnx", [])]
    base = None
    print(f"ResNet-18 {a.size}x{a.size}, batch {a.batch}, roofline on an H200 (a model, not a measurement)")
    print(f"{'mode':<10} {'predicted us':>13} {'ratio':>7} {'library MB':>11} {'kernel MB':>10} {'library calls':>14}")
    for name, source, flags in runs:
        report = os.path.join(a.work, name.split()[0] + ".json")
        subprocess.run([os.path.join(a.kiln_bin, "kiln-compile"), os.path.join(a.work, source), "-o",
                        os.path.join(a.work, name.split()[0] + ".kiln"), "--arch", "none", "--report",
                        report, "--bind", f"n={a.batch}"] + flags, check=True,
                       stdout=subprocess.DEVNULL)
        r = json.load(open(report))
        roof = r["roofline"]
        us = roof["predicted_us"]
        base = base or us
        calls = len(r["library_calls"])
        print(f"{name:<10} {us:>13.1f} {us / base:>7.2f} {roof['library_bytes'] / 1e6:>11.1f} "
              f"{roof['kernel_bytes'] / 1e6:>10.1f} {calls:>14}")


if __name__ == "__main__":
    main()
