#!/usr/bin/env python3
"""The torch side of tools/gpu-check.sh's attention timings: the inputs
bench/make_decode_attention.py wrote (q, k, v, mask as ONNX tensors) through
torch.nn.functional.scaled_dot_product_attention on the device, in their
dtype, the key/value heads shared by their query heads (enable_gqa), timed
with CUDA events as kiln-run --bench times kiln's kernel beside it.

    attention_bench.py DIR [--runs N] [--causal]

--causal passes is_causal=True instead of the mask (the same mask for a
prompt: torch then takes its flash kernel, which skips the masked tiles).
Prints one line: the mean time of a call in microseconds, and the kernel
torch picked where the profiler names it.
"""
import argparse
import os

import numpy as np
from onnx import numpy_helper, load_tensor


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir")
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--causal", action="store_true")
    a = p.parse_args()
    import torch
    import torch.nn.functional as F

    def tensor(name):
        t = load_tensor(os.path.join(a.dir, name + ".pb"))
        x = numpy_helper.to_array(t)
        # bfloat16 arrives as ml_dtypes or uint16 bits, whichever onnx gives.
        if x.dtype.name == "bfloat16" or t.data_type == 16:
            bits = np.ascontiguousarray(x).view(np.uint16).astype(np.int32) << 16
            return torch.from_numpy(bits.view(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(x))

    q, k, v, mask = (tensor(n).cuda() for n in ("q", "k", "v", "mask"))
    groups = q.shape[1] // k.shape[1]

    def call():
        if a.causal:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=groups > 1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=groups > 1)

    for _ in range(20):
        call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(a.runs):
        call()
    end.record()
    torch.cuda.synchronize()
    mean_us = 1000.0 * start.elapsed_time(end) / a.runs
    kernel = "?"
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        kernel = names[0] if names else "?"
    except Exception as e:  # the profiler is a nicety here
        kernel = f"? ({e})"
    print(f"torch sdpa{' (is_causal)' if a.causal else ''}: {mean_us:.2f} us a call; kernel {kernel}")


if __name__ == "__main__":
    main()
