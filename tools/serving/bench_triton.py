#!/usr/bin/env python3
"""Server overhead, measured: one model through Triton (libtriton_kiln) against
a direct C API call (kiln-run --bench) in the same script, on this machine.

    bench_triton.py BUILD_DIR MODEL.onnx INPUT.pb [--requests N] [--clients C]

Run it with the serving venv's python (scripts/install-serving-deps.sh). Prints
p50/p99 latency of sequential requests over HTTP and gRPC, throughput with C
concurrent HTTP clients, and kiln-run --bench's figures for the same input.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from triton_harness import TritonServer, add_model  # noqa: E402


def percentiles(samples):
    s = sorted(samples)
    return s[len(s) // 2], s[min(len(s) - 1, int(0.99 * len(s)))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("model")
    p.add_argument("input")
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--clients", type=int, default=16)
    a = p.parse_args()
    x = numpy_helper.to_array(onnx.load_tensor(a.input))
    with tempfile.TemporaryDirectory() as root:
        artifact = os.path.join(root, "models", "m", "1", "model.kiln")
        add_model(root, "m", lambda folder: subprocess.run(
            [os.path.join(a.build, "bin", "kiln-compile"), a.model, "-o", artifact, "--arch", "none"], check=True))
        np.save(os.path.join(root, "x.npy"), x)
        direct = subprocess.run([os.path.join(a.build, "bin", "kiln-run"), artifact, "--backend", "host",
                                 "--input", "x=" + os.path.join(root, "x.npy"), "--bench", str(a.requests),
                                 "--warmup", "20"], check=True, capture_output=True, text=True).stdout
        with TritonServer(root, os.path.join(a.build, "lib", "libtriton_kiln.so")) as server:
            http = httpclient.InferenceServerClient(server.http)
            grpc = grpcclient.InferenceServerClient(server.grpc)

            def one(client, module):
                i = module.InferInput("x", list(x.shape), "FP32")
                i.set_data_from_numpy(x)
                t = time.perf_counter()
                client.infer("m", [i])
                return (time.perf_counter() - t) * 1e6

            for _ in range(20):
                one(http, httpclient)
            http_lat = [one(http, httpclient) for _ in range(a.requests)]
            grpc_lat = [one(grpc, grpcclient) for _ in range(a.requests)]

            def worker(_):
                c = httpclient.InferenceServerClient(server.http)
                return [one(c, httpclient) for _ in range(a.requests // 4)]

            t0 = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(a.clients) as pool:
                lats = [v for l in pool.map(worker, range(a.clients)) for v in l]
            elapsed = time.perf_counter() - t0
            http.close()
            grpc.close()
    m = re.search(r"latency ms over .*?median ([0-9.]+) p90 [0-9.]+ p99 ([0-9.]+)", direct)
    print(f"model {os.path.basename(a.model)}, input {list(x.shape)}, host emulation, {os.cpu_count()} cores")
    if not m:
        print("direct C API (kiln-run --bench):", direct.strip())
    else:
        print(f"direct C API (kiln-run --bench): p50 {float(m.group(1)) * 1000:.0f} us, "
              f"p99 {float(m.group(2)) * 1000:.0f} us")
    for name, lat in (("Triton HTTP", http_lat), ("Triton gRPC", grpc_lat)):
        p50, p99 = percentiles(lat)
        print(f"{name}, one client: p50 {p50:.0f} us, p99 {p99:.0f} us")
    p50, p99 = percentiles(lats)
    print(f"Triton HTTP, {a.clients} clients: {len(lats) / elapsed:.0f} requests/s, p50 {p50:.0f} us, p99 {p99:.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
