"""The Ray Serve example (examples/ray_serve/serve_kiln.py) serving kiln models.

Runs inside a private network namespace with loopback only and a private PID
namespace (tools/serving/in_private_netns.sh; ctest `serving.ray`), in the venv
of scripts/install-ray-serve-deps.sh. Needs KILN_BIN (the build's bin/, for
kiln-compile). The example is started as users start it, on a free loopback
port; every request loop is bounded in count and time; the example is stopped
by its process id (and whatever Ray left ends with the PID namespace)."""
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import kiln

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "ray_serve", "serve_kiln.py")
READY_TIMEOUT_S = 180


def tensor(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_private_network():
    """Only loopback: the example cannot be reached from, nor reach, outside."""
    return [name for _, name in socket.if_nameindex()] == ["lo"]


def post(url, body, timeout=60):
    """(status, JSON answer, replica id) of one request."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, json.loads(r.read()), r.headers.get("X-Kiln-Replica")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers.get("X-Kiln-Replica")


def request_for(x):
    return {"inputs": {"x": {"shape": list(x.shape), "dtype": str(x.dtype), "data": x.ravel().tolist()}}}


def output_of(answer, name="y"):
    y = answer["outputs"][name]
    return np.asarray(y["data"], dtype=y["dtype"]).reshape(y["shape"])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    bin_dir = os.environ.get("KILN_BIN")
    if not bin_dir:
        pytest.skip("KILN_BIN is not set")
    if not in_private_network():
        pytest.skip("run through tools/serving/in_private_netns.sh (Ray must stay on loopback)")
    root = tmp_path_factory.mktemp("ray")
    encoder = str(root / "encoder.kiln")
    subprocess.run([os.path.join(bin_dir, "kiln-compile"), os.path.join(MODELS, "encoder.onnx"), "-o", encoder,
                    "--arch", "none", "--cache-dir", str(root / "kernel-cache")], check=True)
    port = free_port()
    log_path = root / "serve.log"
    env = dict(os.environ, RAY_AUTH_MODE="disabled", KILN_CACHE_DIR=str(root / "cache"),
               RAY_USAGE_STATS_ENABLED="0")
    # Two applications: a compiled .kiln and an .onnx that each replica compiles
    # through libkiln_jit. Autoscaling from one replica to two, reacting at once.
    command = [sys.executable, EXAMPLE, encoder, os.path.join(MODELS, "mha_encoder.onnx"), "--port", str(port),
               "--ray-cpus", "2", "--num-cpus", "0.5", "--min-replicas", "1", "--max-replicas", "2",
               "--target-ongoing-requests", "1", "--upscale-delay-s", "0", "--object-store-mb", "128"]
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while "serve_kiln: serving" not in log_path.read_text():
            if process.poll() is not None:
                pytest.fail("serve_kiln.py exited: " + log_path.read_text()[-3000:])
            if time.monotonic() > deadline:
                pytest.fail(f"serve_kiln.py was not serving within {READY_TIMEOUT_S} s: "
                            + log_path.read_text()[-3000:])
            time.sleep(0.25)
        yield {"base": f"http://127.0.0.1:{port}", "encoder": encoder, "process": process, "log": log_path}
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def test_metadata_has_the_symbolic_dims(served):
    with urllib.request.urlopen(served["base"] + "/encoder", timeout=30) as r:
        meta = json.loads(r.read())
    assert meta["name"] == "encoder"
    assert meta["inputs"] == [{"name": "x", "dtype": "float32", "dims": ["batch", "seq", 16]}]
    assert meta["outputs"] == [{"name": "y", "dtype": "float32", "dims": ["batch", "seq", 8]}]


def test_answers_match_torch(served):
    for name in ("encoder", "mha_encoder"):
        x = tensor(os.path.join(MODELS, name, "input_0.pb"))
        y = tensor(os.path.join(MODELS, name, "output_0.pb"))
        status, answer, _ = post(f"{served['base']}/{name}", request_for(x))
        assert status == 200, answer
        np.testing.assert_allclose(output_of(answer), y, atol=1e-4, rtol=0)


def test_concurrent_clients_scale_out_and_match_serial_answers(served):
    """8 clients x 40 requests of mixed shapes: no error, every answer equal to
    the same model run in this process, and the autoscaler adds the second
    replica, which answers too."""
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((b, s, 16), dtype=np.float32) for b in (1, 2) for s in (3, 5, 7)]
    local = kiln.load(served["encoder"], backend="host")
    serial = [local(x=x)["y"] for x in inputs]
    url = served["base"] + "/encoder"

    def client(k):
        mismatches, replicas = 0, set()
        for n in range(40):
            j = (k * 5 + n) % len(inputs)
            status, answer, replica = post(url, request_for(inputs[j]))
            replicas.add(replica)
            if status != 200 or not np.array_equal(output_of(answer), serial[j]):
                mismatches += 1
        return mismatches, replicas

    replicas_seen = set()
    deadline = time.monotonic() + 120
    # Load until the second replica has answered (bounded in time and rounds).
    for _ in range(6):
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(client, range(8), timeout=300))
        assert [m for m, _ in results] == [0] * 8
        for _, r in results:
            replicas_seen |= r
        if len(replicas_seen) >= 2 or time.monotonic() > deadline:
            break
    assert len(replicas_seen) == 2, f"one replica answered everything: {replicas_seen}"


def test_bad_requests_get_kiln_messages_and_the_server_keeps_serving(served):
    base = served["base"]
    # kiln's run-time checks, one line each, as HTTP 400.
    status, answer, _ = post(base + "/encoder", request_for(np.zeros((1, 5, 3), np.float32)))
    assert status == 400 and answer["error"] == "input 'x' dim 2 is 3 but the model expects 16"
    status, answer, _ = post(base + "/encoder", {"inputs": {"nope": {"shape": [1], "data": [0]}}})
    assert status == 400 and answer["error"] == "the model has no input 'nope' (its inputs: x)"
    status, answer, _ = post(base + "/encoder", {"inputs": {"x": {"shape": [1, 5, 16], "data": [1, 2]}}})
    assert status == 400 and "2 values for shape [1, 5, 16]" in answer["error"]
    # The TorchScript export of nn.TransformerEncoderLayer baked seq=5 into a
    # reshape: kiln's guard refuses seq 7 with the guard's message.
    status, answer, _ = post(base + "/mha_encoder", request_for(np.zeros((2, 7, 32), np.float32)))
    assert status == 400 and "does not hold" in answer["error"] and "Reshape" in answer["error"], answer
    # ... and both applications keep serving.
    for name in ("encoder", "mha_encoder"):
        x = tensor(os.path.join(MODELS, name, "input_0.pb"))
        status, answer, _ = post(f"{base}/{name}", request_for(x))
        assert status == 200
        np.testing.assert_allclose(output_of(answer), tensor(os.path.join(MODELS, name, "output_0.pb")),
                                   atol=1e-4, rtol=0)


def test_stops_on_sigterm(served):
    process = served["process"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0, served["log"].read_text()[-3000:]
