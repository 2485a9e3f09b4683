#!/usr/bin/env python3
"""What kiln-compile --weights costs in accuracy: compiles a model as it is
and with --weights int8|int4 at some group sizes, runs each once in host
emulation on the same inputs, and compares every output with the float
artifact's.

    check_weight_quantization.py MODEL.onnx --inputs DIR [--modes M,...]
                                 [--kiln-bin DIR] [--work DIR] [--bind S=V,...]

DIR holds one data set as NAME.pb (TensorProto) or NAME.npy per input
(make_llama_decoder.py --step-inputs writes one). A mode is int8 or int4
with its group size, as int4/128; the default is int8/128,int4/128,int4/32.
Per mode and output it prints the error relative to the float output's RMS
(rms(quantized - float) / rms(float)), the largest absolute error, and, for
an output of three dims or more (logits [batch, positions, vocabulary]),
how many rows keep their argmax (the greedy token). What it does not
measure: a trained model's accuracy (weights with outliers quantize worse
than random ones), or anything but one call's outputs.
"""
import argparse
import glob
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    if path.endswith(".npy"):
        return np.load(path)
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t).astype(np.float64) if t.data_type == onnx.TensorProto.BFLOAT16 \
        else numpy_helper.to_array(t)


def run(kiln_bin, model, artifact, flags, inputs, out_dir, bind):
    compile_cmd = [os.path.join(kiln_bin, "kiln-compile"), model, "-o", artifact, "--arch", "none"]
    compile_cmd += flags + (["--bind", bind] if bind else [])
    subprocess.run(compile_cmd, check=True)
    os.makedirs(out_dir, exist_ok=True)
    cmd = [os.path.join(kiln_bin, "kiln-run"), artifact, "--backend", "host", "--output-dir", out_dir]
    for path in inputs:
        cmd += ["--input", f"{os.path.splitext(os.path.basename(path))[0]}={path}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return [load(p) for p in sorted(glob.glob(os.path.join(out_dir, "output_*.pb")),
                                    key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--inputs", required=True)
    p.add_argument("--modes", default="int8/128,int4/128,int4/32")
    p.add_argument("--kiln-bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin"))
    p.add_argument("--work", default="quantization-work")
    p.add_argument("--bind", default="")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    inputs = sorted(glob.glob(os.path.join(a.inputs, "*.pb")) + glob.glob(os.path.join(a.inputs, "*.npy")))
    names = [o.name for o in onnx.load(a.model, load_external_data=False).graph.output]
    base = run(a.kiln_bin, a.model, os.path.join(a.work, "float.kiln"), [], inputs,
               os.path.join(a.work, "float"), a.bind)
    print(f"{os.path.basename(a.model)}: each output against the float artifact's")
    for mode in a.modes.split(","):
        kind, group = mode.split("/")
        outs = run(a.kiln_bin, a.model, os.path.join(a.work, f"{kind}_{group}.kiln"),
                   ["--weights", kind, "--group-size", group], inputs,
                   os.path.join(a.work, f"{kind}_{group}"), a.bind)
        for name, want, got in zip(names, base, outs):
            want, got = want.astype(np.float64), got.astype(np.float64)
            rms = np.sqrt(np.mean(want ** 2)) or 1.0
            line = (f"  {mode:9s} {name}: relative RMS error {np.sqrt(np.mean((got - want) ** 2)) / rms:.2e}, "
                    f"largest {np.max(np.abs(got - want)):.2e}")
            if want.ndim >= 3:
                rows = want.reshape(-1, want.shape[-1])
                kept = int(np.sum(rows.argmax(-1) == got.reshape(rows.shape).argmax(-1)))
                line += f", argmax kept in {kept}/{rows.shape[0]} rows"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
