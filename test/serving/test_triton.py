"""Triton Inference Server serving kiln models through libtriton_kiln.

Needs the serving venv (scripts/install-serving-deps.sh) and, in the
environment, KILN_BIN (the build's bin/, for kiln-compile) and
KILN_TRITON_BACKEND (the built libtriton_kiln.so). The server binds 127.0.0.1
only, on free ports; every loop is bounded; the server is stopped by its
process id."""
import concurrent.futures
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "serving"))
from triton_harness import TritonServer, add_model  # noqa: E402

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")


def tensor(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    bin_dir, backend = os.environ.get("KILN_BIN"), os.environ.get("KILN_TRITON_BACKEND")
    if not bin_dir or not backend:
        pytest.skip("KILN_BIN and KILN_TRITON_BACKEND are not set")
    root = str(tmp_path_factory.mktemp("triton"))

    def compiled(source):
        return lambda folder: subprocess.run(
            [os.path.join(bin_dir, "kiln-compile"), source, "-o", os.path.join(folder, "model.kiln"),
             "--arch", "none", "--cache-dir", os.path.join(root, "kernel-cache")], check=True)

    # Minimal configs: inputs, outputs and the batch dim come from the model.
    for name in ("encoder", "mha_encoder"):
        add_model(root, name, compiled(os.path.join(MODELS, f"{name}.onnx")))
    # An output whose size depends on the data (NonZero), without a batch dim.
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(root, "nonzero.onnx"))
    add_model(root, "nonzero", compiled(os.path.join(root, "nonzero.onnx")), config='backend: "kiln"\n')
    # Tensors that are only their batch dim (rank 1): completed as [1] to
    # clients, reshaped to [] for the model.
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch"])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(root, "vector.onnx"))
    add_model(root, "vector", compiled(os.path.join(root, "vector.onnx")))
    # Rows that read each other: x - mean(x over the batch dim). Its leading
    # dims are one symbol, but joining requests would change every answer.
    graph = helper.make_graph([helper.make_node("ReduceMean", ["x"], ["m"], axes=[0], keepdims=1),
                               helper.make_node("Sub", ["x", "m"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(root, "centered.onnx"))
    add_model(root, "centered", compiled(os.path.join(root, "centered.onnx")))
    with TritonServer(root, backend) as s:
        yield {"http": s.http, "grpc": s.grpc}


def infer_http(url, model, x):
    client = httpclient.InferenceServerClient(url)
    i = httpclient.InferInput("x", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    return client.infer(model, [i]).as_numpy("y")


def test_config_is_completed_from_the_model(server):
    config = httpclient.InferenceServerClient(server["http"]).get_model_config("encoder")
    assert config["max_batch_size"] == 8
    assert [(t["name"], t["data_type"], t["dims"]) for t in config["input"]] == [("x", "TYPE_FP32", [-1, 16])]
    assert [(t["name"], t["data_type"], t["dims"]) for t in config["output"]] == [("y", "TYPE_FP32", [-1, 8])]


def test_http_and_grpc_match_torch(server):
    x = tensor(os.path.join(MODELS, "encoder", "input_0.pb"))
    y = tensor(os.path.join(MODELS, "encoder", "output_0.pb"))
    np.testing.assert_allclose(infer_http(server["http"], "encoder", x), y, atol=1e-4, rtol=0)
    client = grpcclient.InferenceServerClient(server["grpc"])
    i = grpcclient.InferInput("x", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    np.testing.assert_allclose(client.infer("encoder", [i]).as_numpy("y"), y, atol=1e-4, rtol=0)


def test_concurrent_clients_with_dynamic_batching(server):
    """16 clients x 100 requests of mixed batch and sequence sizes: no error, and
    every answer equal to the serial one."""
    rng = np.random.default_rng(11)
    inputs = [rng.standard_normal((b, s, 16), dtype=np.float32) for b in (1, 2) for s in (3, 5, 7)]
    serial = [infer_http(server["http"], "encoder", x) for x in inputs]

    def client(k):
        c = httpclient.InferenceServerClient(server["http"])
        mismatches = 0
        for n in range(100):
            j = (k * 7 + n) % len(inputs)
            i = httpclient.InferInput("x", list(inputs[j].shape), "FP32")
            i.set_data_from_numpy(inputs[j])
            if not np.array_equal(c.infer("encoder", [i]).as_numpy("y"), serial[j]):
                mismatches += 1
        return mismatches

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(client, range(16), timeout=600))
    assert results == [0] * 16
    stats = httpclient.InferenceServerClient(server["http"]).get_inference_statistics("encoder")
    (model,) = stats["model_stats"]
    assert int(model["inference_count"]) >= 1600
    # The dynamic batcher gave the backend several requests at once, and they
    # ran as fewer executions than requests (concatenated along the batch dim).
    assert int(model["execution_count"]) < 1600 + len(inputs)


def test_bad_requests_get_the_guard_message_and_the_server_keeps_serving(server):
    # torch's nn.TransformerEncoderLayer exported by the TorchScript exporter
    # bakes its example's sequence length (5) into a reshape: 7 passes Triton's
    # checks (the dim is -1) and kiln's guard refuses it.
    bad = np.zeros((2, 7, 32), np.float32)
    with pytest.raises(Exception, match=r"guard '.*' does not hold .*Reshape"):
        infer_http(server["http"], "mha_encoder", bad)
    x = tensor(os.path.join(MODELS, "mha_encoder", "input_0.pb"))
    y = tensor(os.path.join(MODELS, "mha_encoder", "output_0.pb"))
    np.testing.assert_allclose(infer_http(server["http"], "mha_encoder", x), y, atol=1e-4, rtol=0)


def test_good_and_bad_requests_mixed_under_dynamic_batching(server):
    """8 clients send a random mix (fixed seed) of good requests and ones
    kiln's guard refuses (sequence 7 where the export baked 5) to a batched
    model: the dynamic batcher joins bad ones with each other, never with good
    ones of another shape, and every bad request gets the guard message while
    every good one gets its own answer; the server keeps serving."""
    x = tensor(os.path.join(MODELS, "mha_encoder", "input_0.pb"))
    y = tensor(os.path.join(MODELS, "mha_encoder", "output_0.pb"))
    bad = np.zeros((x.shape[0], 7, x.shape[2]), np.float32)

    def client(k):
        rng = np.random.default_rng(100 + k)
        c = httpclient.InferenceServerClient(server["http"])
        outcomes = {"good": 0, "refused": 0, "wrong": 0}
        for _ in range(40):
            send_bad = rng.random() < 0.4
            data = bad if send_bad else x
            i = httpclient.InferInput("x", list(data.shape), "FP32")
            i.set_data_from_numpy(data)
            try:
                got = c.infer("mha_encoder", [i]).as_numpy("y")
            except Exception as e:  # tritonclient's InferenceServerException
                refused = send_bad and "does not hold" in str(e)
                outcomes["refused" if refused else "wrong"] += 1
                continue
            ok = not send_bad and np.allclose(got, y, atol=1e-4, rtol=0)
            outcomes["good" if ok else "wrong"] += 1
        return outcomes

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(client, range(8), timeout=600))
    assert all(r["wrong"] == 0 for r in results), results
    assert sum(r["refused"] for r in results) > 0 and sum(r["good"] for r in results) > 0
    np.testing.assert_allclose(infer_http(server["http"], "mha_encoder", x), y, atol=1e-4, rtol=0)


def test_outputs_sized_by_the_data(server):
    x = np.array([[1, -1, 0, 2], [0, 3, -4, 5], [6, 0, 0, -7]], np.float32)
    client = httpclient.InferenceServerClient(server["http"])
    assert client.get_model_config("nonzero")["max_batch_size"] == 0
    i = httpclient.InferInput("x", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    got = client.infer("nonzero", [i]).as_numpy("y")
    np.testing.assert_array_equal(got, np.array(np.nonzero(np.maximum(x, 0))))


def test_a_batched_vector_is_completed_so_that_it_serves(server):
    """A model whose tensors are only the batch dim: the server starts with it
    and serves it (its completed config had no dims and was refused)."""
    client = httpclient.InferenceServerClient(server["http"])
    config = client.get_model_config("vector")
    assert config["max_batch_size"] == 8
    assert [(t["name"], t["dims"], t.get("reshape", {}).get("shape", None)) for t in config["input"]] == [("x", [1], [])]
    x = np.array([[1.5], [-2.0], [3.25]], np.float32)
    i = httpclient.InferInput("x", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    np.testing.assert_array_equal(client.infer("vector", [i]).as_numpy("y"), 2 * x)


def test_rows_that_read_each_other_are_never_batched(server):
    """A model whose rows mix (x - mean over the batch) keeps max_batch_size 0,
    so concurrent requests under the dynamic batcher each get the answer they
    get alone (joined, nearly every answer differed)."""
    client = httpclient.InferenceServerClient(server["http"])
    config = client.get_model_config("centered")
    assert config.get("max_batch_size", 0) == 0
    assert [t["dims"] for t in config["input"]] == [["-1", "4"]] or \
        [t["dims"] for t in config["input"]] == [[-1, 4]]
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((2, 4), dtype=np.float32) for _ in range(8)]
    alone = [x - x.mean(axis=0, keepdims=True) for x in inputs]

    def request(k):
        c = httpclient.InferenceServerClient(server["http"])
        wrong = 0
        for n in range(30):
            j = (k + n) % len(inputs)
            i = httpclient.InferInput("x", list(inputs[j].shape), "FP32")
            i.set_data_from_numpy(inputs[j])
            if not np.allclose(c.infer("centered", [i]).as_numpy("y"), alone[j], atol=1e-5):
                wrong += 1
        return wrong

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert list(pool.map(request, range(8), timeout=300)) == [0] * 8
