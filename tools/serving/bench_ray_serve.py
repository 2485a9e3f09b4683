"""Latency and throughput of a kiln model behind the Ray Serve example, against
the same model called directly from Python in this process.

    tools/serving/in_private_netns.sh build/ray-venv/bin/python \\
        tools/serving/bench_ray_serve.py MODEL.kiln INPUT.pb [--replicas N] [--clients N]

Starts examples/ray_serve/serve_kiln.py on a free loopback port (stopped by its
process id at the end), sends the ONNX TensorProto INPUT as the model's first
input: one client serially, then N concurrent clients. Prints p50/p99 and
requests per second for each, and the direct kiln call's p50 as the baseline."""
import argparse
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import onnx
from onnx import numpy_helper

import kiln

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "ray_serve", "serve_kiln.py")


def percentiles(seconds):
    us = np.asarray(seconds) * 1e6
    return f"p50 {np.percentile(us, 50):.0f} us, p99 {np.percentile(us, 99):.0f} us"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("input")
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=300, help="per phase")
    args = parser.parse_args()

    model = kiln.load(args.model, backend="host")
    name = model.inputs[0].name
    x = numpy_helper.to_array(onnx.load_tensor(args.input))
    for _ in range(10):
        model.run({name: x})
    direct = []
    for _ in range(args.requests):
        start = time.perf_counter()
        model.run({name: x})
        direct.append(time.perf_counter() - start)
    print(f"direct kiln call (Python): {percentiles(direct)}")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    stem = os.path.splitext(os.path.basename(args.model))[0]
    url = f"http://127.0.0.1:{port}/{stem}"
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    process = subprocess.Popen([sys.executable, EXAMPLE, args.model, "--port", str(port), "--backend", "host",
                                "--replicas", str(args.replicas), "--num-cpus", "0.5", "--object-store-mb", "128"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        deadline = time.monotonic() + 180
        while "serve_kiln: serving" not in process.stdout.readline():
            if process.poll() is not None or time.monotonic() > deadline:
                sys.exit("serve_kiln.py did not start")
        body = json.dumps({"inputs": {name: {"shape": list(x.shape), "dtype": str(x.dtype),
                                             "data": x.ravel().tolist()}}}).encode()

        def one():
            start = time.perf_counter()
            request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as r:
                r.read()
            return time.perf_counter() - start

        for _ in range(20):
            one()
        serial = [one() for _ in range(args.requests)]
        print(f"Ray Serve HTTP, one client: {percentiles(serial)}")
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
            timings = list(pool.map(lambda _: one(), range(args.requests)))
        elapsed = time.perf_counter() - start
        print(f"Ray Serve HTTP, {args.clients} clients, {args.replicas} replica(s): {percentiles(timings)}, "
              f"{args.requests / elapsed:.0f} requests/s")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


if __name__ == "__main__":
    main()
