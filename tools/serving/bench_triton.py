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
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import onnx
import pytriton
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from onnx import numpy_helper


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


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
    server = os.path.join(os.path.dirname(pytriton.__file__), "tritonserver", "bin", "tritonserver")
    x = numpy_helper.to_array(onnx.load_tensor(a.input))
    with tempfile.TemporaryDirectory() as root:
        repo = os.path.join(root, "models", "m", "1")
        os.makedirs(repo)
        os.makedirs(os.path.join(root, "backends", "kiln"))
        os.symlink(os.path.join(a.build, "lib", "libtriton_kiln.so"),
                   os.path.join(root, "backends", "kiln", "libtriton_kiln.so"))
        artifact = os.path.join(repo, "model.kiln")
        subprocess.run([os.path.join(a.build, "bin", "kiln-compile"), a.model, "-o", artifact, "--arch", "none"],
                       check=True)
        with open(os.path.join(root, "models", "m", "config.pbtxt"), "w") as f:
            f.write('backend: "kiln"\ndynamic_batching {}\n')
        np.save(os.path.join(root, "x.npy"), x)
        direct = subprocess.run([os.path.join(a.build, "bin", "kiln-run"), artifact, "--backend", "host",
                                 "--input", "x=" + os.path.join(root, "x.npy"), "--bench", str(a.requests),
                                 "--warmup", "20"], check=True, capture_output=True, text=True).stdout
        http_port, grpc_port, metrics_port = free_ports(3)
        proc = subprocess.Popen([server, f"--model-repository={root}/models", f"--backend-directory={root}/backends",
                                 "--http-address=127.0.0.1", f"--http-port={http_port}", "--grpc-address=127.0.0.1",
                                 f"--grpc-port={grpc_port}", "--metrics-address=127.0.0.1",
                                 f"--metrics-port={metrics_port}", "--exit-timeout-secs=5"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{http_port}/v2/health/ready", timeout=2)
                    break
                except OSError:
                    time.sleep(0.25)
            http = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}")
            grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")

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
                c = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}")
                return [one(c, httpclient) for _ in range(a.requests // 4)]

            t0 = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(a.clients) as pool:
                lats = [v for l in pool.map(worker, range(a.clients)) for v in l]
            elapsed = time.perf_counter() - t0
            http.close()
            grpc.close()
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
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
