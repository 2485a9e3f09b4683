#!/usr/bin/env python3
"""Compares a matmul_nbits kernel's predicted time with reading its packed
weights once, from tools/sass-lint.py --json of its cubins with --roofline
(kiln-compile --report of a model of one MatMulNBits, compiled for one row).

    check_nbits_roofline.py LINT.json

The bound: the packed weight bytes (the step's "elements": a matmul_nbits
step streams its weights, a byte an element) at the roofline model's 4.3 TB/s
from memory. The kernel: the step's prediction less the model's 2 us a
launch (a decode step replays its launches as one CUDA graph), which is the
largest of its bytes (weights, scales, zero points, the row and the result)
from memory, its L2 traffic (the row read again by every block) and the
issue time of its SASS (sass-lint's instructions per weight byte of the
one-row loop). Prints both and their ratio; exits 1 without a matmul_nbits
step. What it does not measure: a GPU's achieved bandwidth, the latency of
too few bytes in flight, or the launch itself.
"""
import json
import sys

BYTES_PER_US = 4.3e6  # kiln/artifact/DeviceModel.h's kBandwidthBytesPerUs
LAUNCH_US = 2.0       # kiln/artifact/DeviceModel.h's kLaunchUs


def main():
    roofline = json.load(open(sys.argv[1]))["_roofline"]
    steps = [s for s in roofline["steps"] if s.get("sass_instructions_per_element") is not None
             and s.get("schedule") == "reduction"]
    if not steps:
        print("check_nbits_roofline: no matmul_nbits step with issue time", file=sys.stderr)
        return 1
    for s in steps:
        once = s["elements"] / BYTES_PER_US
        kernel = s["predicted_us"] - LAUNCH_US
        print(f"{s['name']}: packed weights once: {once:.3f} us; kernel (bound {s['bound']}): "
              f"{kernel:.3f} us, {kernel / once:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
