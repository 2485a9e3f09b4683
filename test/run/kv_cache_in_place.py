#!/usr/bin/env python3
"""Helpers of kv-cache-in-place.test.

    kv_cache_in_place.py pad IN_DIR OUT_DIR --capacity C
        One decode step's inputs (make_llama_decoder.py --step-inputs) for a
        model compiled with --kv-cache-in-place: each past_key_values.N.* of
        [batch, heads, past, head] becomes a cache of C rows holding it, its
        other rows NaN (a kernel that read them would show it); the other
        inputs are copied.

    kv_cache_in_place.py check PRESENT PAST WANT --atol A
        An in-place present ([batch, heads, C, head]) against the step's past
        input (PAST, [.., past, ..]) and the reference's present (WANT,
        [.., past + new, ..]): the past rows exactly as they were, the new
        rows within A of the reference's, and every row after them still NaN
        (the step wrote its new rows and nothing else of the cache).

    kv_cache_in_place.py writes SHORT_1 SHORT_2 LONG_1 LONG_2 --mask-bytes-per-position M
                                 --new-row-bytes N [--prompts S L]
        The device bytes of one decode step, from KILN_FAKE_CUDA_WRITE_LOG
        files of generations of one token (the prefill) and of two (the
        prefill and one decode step), at a prompt of S tokens and of L
        (default 16 and 512): each step's kernel writes and copies, and
        whether the step at L writes at most M bytes more a position of
        context than at S, give or take N, the bytes of one step's new rows
        (--new-row-bytes N).

    kv_cache_in_place.py launch-writes LOG...
        The bytes the launches of one call changed in device memory
        (KILN_FAKE_CUDA_WRITE_LOG's "write" lines), per log.
"""
import argparse
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


def pad(a):
    os.makedirs(a.out_dir, exist_ok=True)
    for name in sorted(os.listdir(a.in_dir)):
        src, dst = os.path.join(a.in_dir, name), os.path.join(a.out_dir, name)
        if not name.startswith("past_key_values."):
            shutil.copy(src, dst)
            continue
        past = load(src)
        b, h, p, d = past.shape
        cache = np.full((b, h, a.capacity, d), np.nan, dtype=np.float32).astype(past.dtype)
        cache[:, :, :p] = past
        tensor = numpy_helper.from_array(cache, onnx.load_tensor(src).name)
        with open(dst, "wb") as f:
            f.write(tensor.SerializeToString())
    return 0


def check(a):
    got, past, want = load(a.present), load(a.past), load(a.want)
    p, total = past.shape[2], want.shape[2]
    same = np.array_equal(got[:, :, :p].view(np.uint16 if got.dtype.itemsize == 2 else np.uint32),
                          past.view(np.uint16 if past.dtype.itemsize == 2 else np.uint32))
    diff = np.abs(got[:, :, p:total].astype(np.float64) - want[:, :, p:total].astype(np.float64))
    close = bool(np.all(diff <= a.atol))
    untouched = bool(np.all(np.isnan(got[:, :, total:].astype(np.float32))))
    ok = same and close and untouched
    print(f"{'OK' if ok else 'MISMATCH'} past rows kept: {same}, new rows max abs diff "
          f"{float(diff.max()) if diff.size else 0.0:.3g}, rows after them untouched: {untouched}")
    return 0 if ok else 1


def totals(path):
    kernels = copies = 0
    for line in open(path):
        words = line.split()
        if words[0] == "write":
            kernels += int(words[2])
        elif words[0] == "copy":
            copies += int(words[2])
    return kernels, copies


def step_bytes(one, two):
    k1, c1 = totals(one)
    k2, c2 = totals(two)
    return k2 - k1, c2 - c1


def writes(a):
    steps = {}
    short, long = a.prompts
    for past, one, two in ((short, a.short_1, a.short_2), (long, a.long_1, a.long_2)):
        kernels, copies = step_bytes(one, two)
        steps[past] = kernels + copies
        print(f"past {past}: kernels changed {kernels} bytes, copies to the device {copies} bytes")
    growth = steps[long] - steps[short]
    bound = a.mask_bytes_per_position * (long - short) + a.new_row_bytes
    print(f"growth from past {short} to {long}: {growth} bytes, {growth / (long - short):.1f} a position; "
          f"within the mask's {a.mask_bytes_per_position:g} a position and one step's new rows "
          f"({a.new_row_bytes} bytes): {'yes' if growth <= bound else 'no'}")
    return 0


def launch_writes(a):
    for path in a.logs:
        print(f"{os.path.basename(path)}: launches changed {totals(path)[0]} bytes")
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    q = sub.add_parser("pad")
    q.add_argument("in_dir")
    q.add_argument("out_dir")
    q.add_argument("--capacity", type=int, required=True)
    q = sub.add_parser("check")
    q.add_argument("present")
    q.add_argument("past")
    q.add_argument("want")
    q.add_argument("--atol", type=float, required=True)
    q = sub.add_parser("writes")
    for name in ("short_1", "short_2", "long_1", "long_2"):
        q.add_argument(name)
    q.add_argument("--mask-bytes-per-position", type=float, required=True)
    # (The fake driver counts changed bytes: a value that happens to equal
    # what its buffer held is not counted, so two steps differ by a few bytes
    # beyond what they write.)
    q.add_argument("--new-row-bytes", type=int, required=True)
    q.add_argument("--prompts", type=int, nargs=2, default=(16, 512), metavar=("SHORT", "LONG"))
    q = sub.add_parser("launch-writes")
    q.add_argument("logs", nargs="+")
    a = p.parse_args()
    return {"pad": pad, "check": check, "writes": writes, "launch-writes": launch_writes}[a.command](a)


if __name__ == "__main__":
    sys.exit(main())
