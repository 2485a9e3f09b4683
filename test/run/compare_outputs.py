#!/usr/bin/env python3
"""Compares tensor files (TensorProto .pb or numpy .npy):
compare_outputs.py GOT WANT --atol A --rtol R [--rms E].

Prints the largest absolute difference; exits 1 when a value is off by more than
atol + rtol * |want|, when the root mean square difference exceeds E (given), or
when dtypes or shapes differ."""
import argparse
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    return np.load(path) if path.endswith(".npy") else numpy_helper.to_array(onnx.load_tensor(path))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("got")
    p.add_argument("want")
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--rtol", type=float, default=0.0)
    p.add_argument("--rms", type=float, default=None,
                   help="the largest root mean square difference (a bound on typical error)")
    a = p.parse_args()
    got, want = load(a.got), load(a.want)
    if got.dtype != want.dtype or got.shape != want.shape:
        print(f"MISMATCH {got.dtype}{list(got.shape)} vs {want.dtype}{list(want.shape)}")
        return 1
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    worst = float(diff.max()) if diff.size else 0.0
    ok = bool(np.all(diff <= a.atol + a.rtol * np.abs(want.astype(np.float64))))
    rms = float(np.sqrt(np.mean(diff ** 2))) if diff.size else 0.0
    if a.rms is not None and rms > a.rms:
        ok = False
    print(f"{'OK' if ok else 'MISMATCH'} max abs diff {worst:.3g}" +
          (f", rms {rms:.3g}" if a.rms is not None else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
