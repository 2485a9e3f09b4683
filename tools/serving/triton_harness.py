"""Running Triton Inference Server with kiln's backend, for tests and
benchmarks: a model repository laid out in a folder, the server started on
free loopback ports, waited for, and stopped by its process id.

Used by test/serving/test_triton.py and tools/serving/bench_triton.py (with the
serving venv's python: scripts/install-serving-deps.sh)."""
import os
import signal
import socket
import subprocess
import time
import urllib.request

import pytriton

SERVER = os.path.join(os.path.dirname(pytriton.__file__), "tritonserver", "bin", "tritonserver")


def free_ports(n):
    """n distinct ports free on 127.0.0.1 (bound, then released)."""
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def add_model(root, name, artifact_or_compile, config='backend: "kiln"\ndynamic_batching {}\n'):
    """Creates root/models/NAME/1; `artifact_or_compile(path)` writes the model
    file there (its extension picks how the backend loads it)."""
    folder = os.path.join(root, "models", name, "1")
    os.makedirs(folder, exist_ok=True)
    artifact_or_compile(folder)
    with open(os.path.join(root, "models", name, "config.pbtxt"), "w") as f:
        f.write(config)


class TritonServer:
    """`with TritonServer(root, backend_library) as s:` serves root/models;
    s.http and s.grpc are "127.0.0.1:PORT"."""

    def __init__(self, root, backend_library, ready_timeout=60):
        self.root, self.ready_timeout = root, ready_timeout
        backends = os.path.join(root, "backends", "kiln")
        os.makedirs(backends, exist_ok=True)
        link = os.path.join(backends, "libtriton_kiln.so")
        if not os.path.exists(link):
            os.symlink(backend_library, link)

    def __enter__(self):
        http_port, grpc_port, metrics_port = free_ports(3)
        self.http, self.grpc = f"127.0.0.1:{http_port}", f"127.0.0.1:{grpc_port}"
        self.log_path = os.path.join(self.root, "server.log")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [SERVER, f"--model-repository={self.root}/models", f"--backend-directory={self.root}/backends",
             "--http-address=127.0.0.1", f"--http-port={http_port}", "--grpc-address=127.0.0.1",
             f"--grpc-port={grpc_port}", "--metrics-address=127.0.0.1", f"--metrics-port={metrics_port}",
             "--exit-timeout-secs=5"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + self.ready_timeout
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError("tritonserver exited: " + open(self.log_path).read()[-3000:])
                try:
                    with urllib.request.urlopen(f"http://{self.http}/v2/health/ready", timeout=2) as r:
                        if r.status == 200:
                            return self
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"tritonserver was not ready within {self.ready_timeout} s")
                time.sleep(0.25)
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        # The server and anything it started: its own session, by its id.
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.log.close()
        return False
