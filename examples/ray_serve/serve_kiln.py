"""Serve a kiln model on Ray Serve: replicas, autoscaling, HTTP + JSON.

Locally (starts a one-node Ray, serves until Ctrl-C or SIGTERM):

    python serve_kiln.py path/to/mlp.kiln [more models...] --port 8000
    curl -s 127.0.0.1:8000/mlp                       # inputs, outputs, dims
    curl -s 127.0.0.1:8000/mlp -d '{"inputs": {"x": {"shape": [1, 4], "data": [1, 2, 3, 4]}}}'

Each model (.kiln or .so from kiln-compile; .onnx or .mlir, compiled when its
replicas start) is its own Serve application at /<file stem>.

On a Ray cluster (`ray start --head` on one node, `ray start --address=...`
on the others), deploy with the application builder and a config file
(`serve_config.yaml` beside this script):

    serve deploy serve_config.yaml

Requests are JSON: {"inputs": {NAME: {"shape": [...], "dtype": "float32",
"data": [flat values, row-major]}}} (dtype defaults to the model's). Answers
are {"outputs": {NAME: {"shape", "dtype", "data"}}}, or HTTP 400 with
{"error": kiln's one-line message} for a request kiln refuses (a wrong name,
dtype or shape, a guard that does not hold); the replica keeps serving.

Each replica loads the model once (an .onnx is compiled through libkiln_jit,
whose disk cache the replicas of a node share) and runs requests on threads:
kiln releases the GIL and keeps one execution context per concurrent call,
so `max_ongoing_requests` calls of a replica run at once."""
import argparse
import asyncio
import os
import signal
import sys
import threading
from typing import Any, Dict

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

import kiln

# kiln dtype names are numpy's; bool travels as JSON true/false.
_NUMPY_DTYPES = {"float32", "float64", "float16", "int8", "int16", "int32", "int64",
                 "uint8", "uint16", "uint32", "uint64", "bool"}


def load_model(path: str, backend: str) -> "kiln.Model":
    """An .onnx or .mlir model is compiled in-process; .kiln and .so load as built."""
    if path.endswith((".onnx", ".mlir")):
        return kiln.compile(path, backend=backend)
    return kiln.load(path, backend=backend)


class BadRequest(ValueError):
    """A request that does not describe the model's inputs (answered with 400)."""


def decode_inputs(model: "kiln.Model", body: Any) -> Dict[str, np.ndarray]:
    if not isinstance(body, dict) or not isinstance(body.get("inputs"), dict):
        raise BadRequest('the request must be a JSON object {"inputs": {name: {"shape", "data"}}}')
    declared = {info.name: info for info in model.inputs}
    arrays = {}
    for name, tensor in body["inputs"].items():
        if not isinstance(tensor, dict) or "shape" not in tensor or "data" not in tensor:
            raise BadRequest(f"input '{name}' needs \"shape\" and \"data\"")
        info = declared.get(name)
        dtype = tensor.get("dtype") or (info.dtype if info is not None else "float32")
        if dtype not in _NUMPY_DTYPES:
            raise BadRequest(f"input '{name}' has dtype '{dtype}', which this server does not take over JSON")
        try:
            shape = [int(d) for d in tensor["shape"]]
            data = np.asarray(tensor["data"], dtype=dtype)
        except (TypeError, ValueError) as error:
            raise BadRequest(f"input '{name}': {error}") from None
        if any(d < 0 for d in shape) or data.size != int(np.prod(shape, dtype=np.int64)):
            raise BadRequest(f"input '{name}' has {data.size} values for shape {shape}")
        # Unknown names and wrong dtypes are left to kiln, whose message names them.
        arrays[name] = data.reshape(shape)
    return arrays


def encode_outputs(outputs: Dict[str, np.ndarray]) -> Dict[str, Any]:
    return {"outputs": {name: {"shape": list(array.shape), "dtype": str(array.dtype),
                               "data": array.ravel().tolist()} for name, array in outputs.items()}}


@serve.deployment(
    # Defaults for one node; `build_app` and serve_config.yaml override them.
    autoscaling_config={"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 2},
    max_ongoing_requests=4,
    ray_actor_options={"num_cpus": 1},
)
class KilnModel:
    def __init__(self, model_path: str, backend: str = "auto"):
        self.model = load_model(model_path, backend)
        self.name = os.path.splitext(os.path.basename(model_path))[0]

    def metadata(self) -> Dict[str, Any]:
        describe = lambda infos: [{"name": i.name, "dtype": i.dtype, "dims": list(i.dims)} for i in infos]
        return {"name": self.name, "backend": self.model.backend,
                "inputs": describe(self.model.inputs), "outputs": describe(self.model.outputs)}

    def replica_header(self) -> Dict[str, str]:
        # Which replica answered: clients and tests see the load spread.
        return {"X-Kiln-Replica": serve.get_replica_context().replica_id.unique_id}

    def infer(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        return self.model.run(inputs)

    async def __call__(self, request: Request):
        if request.method == "GET":
            return JSONResponse(self.metadata(), headers=self.replica_header())
        try:
            body = await request.json()
        except ValueError as error:
            return JSONResponse({"error": f"the request is not JSON: {error}"}, status_code=400,
                                headers=self.replica_header())
        try:
            inputs = decode_inputs(self.model, body)
            # kiln releases the GIL: the run goes to a thread so the replica's
            # event loop keeps taking requests while it computes.
            outputs = await asyncio.to_thread(self.infer, inputs)
        except (BadRequest, kiln.KilnError) as error:
            return JSONResponse({"error": str(error)}, status_code=400, headers=self.replica_header())
        return JSONResponse(encode_outputs(outputs), headers=self.replica_header())


def build_app(args: Dict[str, Any]):
    """Application builder for `serve run serve_kiln:build_app model=...` and
    serve_config.yaml. Keys: model (path, required, readable on every node),
    backend (auto|cuda|host), replicas (fixed count) or min_replicas,
    max_replicas, target_ongoing_requests, upscale_delay_s, downscale_delay_s
    (autoscaling), num_cpus, num_gpus and max_ongoing_requests per replica."""
    if "model" not in args:
        raise ValueError("build_app needs model=PATH")
    options: Dict[str, Any] = {"max_ongoing_requests": int(args.get("max_ongoing_requests", 4)),
                               "ray_actor_options": {"num_cpus": float(args.get("num_cpus", 1)),
                                                     "num_gpus": float(args.get("num_gpus", 0))}}
    if "replicas" in args:
        options["num_replicas"] = int(args["replicas"])
        options["autoscaling_config"] = None
    else:
        options["autoscaling_config"] = {
            "min_replicas": int(args.get("min_replicas", 1)),
            "max_replicas": int(args.get("max_replicas", 2)),
            "target_ongoing_requests": float(args.get("target_ongoing_requests", 2)),
        }
        for delay in ("upscale_delay_s", "downscale_delay_s"):
            if delay in args:
                options["autoscaling_config"][delay] = float(args[delay])
    return KilnModel.options(**options).bind(os.path.abspath(args["model"]), args.get("backend", "auto"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", metavar="MODEL",
                        help=".kiln, .so (kiln-compile) or .onnx/.mlir (compiled at start), served at /<file stem>")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--backend", default="auto", choices=["auto", "cuda", "host"])
    parser.add_argument("--replicas", type=int, help="a fixed replica count (default: autoscaling)")
    parser.add_argument("--min-replicas", type=int, default=1)
    parser.add_argument("--max-replicas", type=int, default=2)
    parser.add_argument("--target-ongoing-requests", type=float, default=2)
    parser.add_argument("--upscale-delay-s", type=float, help="autoscaling: how long load must stay high (Ray's default 30)")
    parser.add_argument("--downscale-delay-s", type=float, help="autoscaling: how long load must stay low (Ray's default 600)")
    parser.add_argument("--max-ongoing-requests", type=int, default=4)
    parser.add_argument("--num-cpus", type=float, default=1, help="CPUs per replica")
    parser.add_argument("--ray-cpus", type=int, help="CPUs of the local Ray (default: all)")
    parser.add_argument("--object-store-mb", type=int, default=256,
                        help="the local Ray's object store (requests are small JSON)")
    args = parser.parse_args()
    stems = [os.path.splitext(os.path.basename(path))[0] for path in args.models]
    for path in args.models:
        if not os.path.isfile(path):
            print(f"serve_kiln: no model at {path}", file=sys.stderr)
            return 2
    if len(set(stems)) != len(stems):
        print(f"serve_kiln: two models share a file stem ({', '.join(stems)}); each is served at /<stem>",
              file=sys.stderr)
        return 2

    import ray
    ray.init(num_cpus=args.ray_cpus, object_store_memory=args.object_store_mb << 20,
             include_dashboard=False, _node_ip_address=args.host if args.host.startswith("127.") else None)
    app_args: Dict[str, Any] = {
        "backend": args.backend, "num_cpus": args.num_cpus,
        "max_ongoing_requests": args.max_ongoing_requests, "min_replicas": args.min_replicas,
        "max_replicas": args.max_replicas, "target_ongoing_requests": args.target_ongoing_requests}
    if args.replicas is not None:
        app_args["replicas"] = args.replicas
    for delay in ("upscale_delay_s", "downscale_delay_s"):
        if getattr(args, delay) is not None:
            app_args[delay] = getattr(args, delay)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        serve.start(http_options={"host": args.host, "port": args.port})
        for path, stem in zip(args.models, stems):
            serve.run(build_app(dict(app_args, model=path)), name=stem, route_prefix=f"/{stem}", blocking=False)
        routes = " ".join(f"http://{args.host}:{args.port}/{stem}" for stem in stems)
        print(f"serve_kiln: serving {routes}", flush=True)
        stop.wait()
    finally:
        serve.shutdown()
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
