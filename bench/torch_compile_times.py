"""Compile time of torch.compile's "kiln" backend beside Inductor's, same models,
same process, same machine (docs/torch.md).

    build/torch-venv/bin/python bench/torch_compile_times.py [--models resnet18,...]

Per model and backend: the first call (Dynamo's trace, the backend's compile and
one run) and the second call at another shape (dynamic=True: no Dynamo
recompile for either; kiln serves it with its generic kernels and specializes
in the background), each wall time in seconds, with a fresh kiln cache and
Inductor's cache disabled, so both compile from nothing. What this does not
measure: the speed of the compiled code. On a CPU, kiln runs its CUDA kernels in
host emulation (a correctness tool, not a CPU backend) while Inductor emits
vectorized C++, so run times here say nothing about either on a GPU.
"""
import argparse
import math
import os
import sys
import tempfile
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python"))


def models():
    import torchvision
    from test_torch import Encoder, encoder_inputs

    g = torch.Generator().manual_seed(0)
    return {
        "resnet18": (lambda: torchvision.models.resnet18().eval(),
                     lambda b: (torch.randn(b, 3, 112, 112),)),
        "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small().eval(),
                               lambda b: (torch.randn(b, 3, 112, 112),)),
        "encoder": (lambda: Encoder().eval(), lambda b: encoder_inputs(b, 8 * b, g)),
    }


def timed(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="resnet18,mobilenet_v3_small,encoder")
    args = parser.parse_args()
    import torch._inductor.config as inductor_config

    inductor_config.fx_graph_cache = False
    inductor_config.autotune_local_cache = False
    table = models()
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs")
    print(f"{'model':20} {'backend':9} {'first call s':>12} {'new shape s':>12}")
    for name in args.models.split(","):
        make, inputs = table[name]
        for backend in ("kiln", "inductor"):
            torch._dynamo.reset()
            torch.manual_seed(0)
            model = make()
            options = {"cache_dir": tempfile.mkdtemp(prefix="kiln-bench-")} if backend == "kiln" else None
            compiled = torch.compile(model, backend=backend, dynamic=True, options=options)
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                first = timed(compiled, *inputs(2))
                second = timed(compiled, *inputs(3))
            print(f"{name:20} {backend:9} {first:12.2f} {second:12.2f}", flush=True)


if __name__ == "__main__":
    main()
