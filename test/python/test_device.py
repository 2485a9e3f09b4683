"""Device memory in and out of the kiln package (CUDA backend, DLPack).

Runs where the CUDA backend loads: on a GPU, or on the fake CUDA driver
(test/runtime/fake_cuda; ctest `python.package` runs this file once more with
it on LD_LIBRARY_PATH and KILN_FAKE_CUDA_KERNELS naming the kernel cache the
artifacts are compiled into). Elsewhere it skips."""
import gc
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
BIN = os.environ.get("KILN_BIN", "")


def tensor(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    if not BIN:
        pytest.skip("KILN_BIN (the build's bin/ folder) is not set")
    folder = tmp_path_factory.mktemp("device")
    # The fake driver runs kernels through the host launchers in its kernel
    # cache: compile into that cache.
    cache = os.environ.get("KILN_FAKE_CUDA_KERNELS") or str(folder / "cache")
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(folder / "nonzero.onnx"))
    paths = {}
    for name, source in (("encoder", os.path.join(MODELS, "encoder.onnx")), ("nonzero", str(folder / "nonzero.onnx"))):
        paths[name] = str(folder / f"{name}.kiln")
        subprocess.run([os.path.join(BIN, "kiln-compile"), source, "-o", paths[name], "--cache-dir", cache],
                       check=True)
    try:
        loaded = {name: kiln.load(path, backend="cuda") for name, path in paths.items()}
    except kiln.KilnError as error:
        if os.environ.get("KILN_FAKE_CUDA_KERNELS"):
            raise
        pytest.skip(f"no CUDA execution here: {error}")
    loaded["host"] = kiln.load(paths["encoder"], backend="host")
    loaded["paths"] = paths
    return loaded


def test_device_inputs_give_device_outputs_equal_to_host_emulation(models):
    model = models["encoder"]
    assert model.backend == "cuda"
    x = tensor(os.path.join(MODELS, "encoder", "input_0.pb"))
    x_device = model.to_device(x)
    assert x_device.__dlpack_device__() == (2, 0)  # kDLCUDA, device 0
    out = model.run({"x": x_device})
    y_device = out["y"]
    assert y_device.__dlpack_device__() == (2, 0)
    y = model.to_host(y_device)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (2, 5, 8)
    # Matmuls run in cuBLASLt on the device (its double on the fake driver,
    # which sums in another order than the host's reference kernel): equal
    # within fp32 rounding, not bit for bit.
    np.testing.assert_allclose(y, models["host"](x=x)["y"], atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(y, tensor(os.path.join(MODELS, "encoder", "output_0.pb")), atol=1e-4, rtol=0)
    # Host inputs on the CUDA backend still give numpy arrays.
    np.testing.assert_array_equal(model(x=x)["y"], y)  # the same kernels and library calls


def test_a_model_on_another_device_takes_and_gives_arrays_there(models):
    # ctest runs this file on a fake driver of two devices
    # (KILN_FAKE_CUDA_DEVICES=2); a machine of one GPU skips it.
    path = models["paths"]["encoder"]
    try:
        model = kiln.load(path, backend="cuda", device=1)
    except kiln.KilnError as error:
        pytest.skip(f"no second CUDA device here: {error}")
    assert model.device == 1 and models["encoder"].device == 0
    assert "device 1" in model.backend_description and "device=1" in repr(model)
    x = tensor(os.path.join(MODELS, "encoder", "input_0.pb"))
    x_device = model.to_device(x)
    assert x_device.__dlpack_device__() == (2, 1)  # kDLCUDA, device 1
    y_device = model.run({"x": x_device})["y"]
    assert y_device.__dlpack_device__() == (2, 1)
    np.testing.assert_allclose(model.to_host(y_device), models["host"](x=x)["y"], atol=1e-5, rtol=1e-5)
    # An array on the other device is refused, naming both, not read.
    with pytest.raises(kiln.KilnError, match=r"input 'x' is on cuda:0 and the model runs on cuda:1 \(load it with device=0\)"):
        model.run({"x": models["encoder"].to_device(x)})
    # The device as torch users spell it.
    assert kiln.load(path, backend="cuda", device="cuda:1").device == 1

    class TorchLikeDevice:
        type, index = "cuda", 1
    assert kiln.load(path, backend="cuda", device=TorchLikeDevice()).device == 1


def test_a_device_that_is_not_a_cuda_ordinal_is_refused(models):
    path = models["paths"]["encoder"]
    for device, message in ((-1, "not a CUDA device ordinal"), ("cpu", "not a CUDA device"),
                            ("cuda:x", "is not 'cuda' or 'cuda:N'"), (True, "not a CUDA device ordinal")):
        with pytest.raises(kiln.KilnError, match=message):
            kiln.load(path, backend="cuda", device=device)
    # A device the driver lacks: the driver's word, naming the ordinal, and
    # under "auto" too (a device asked for by number never falls back).
    for backend in ("cuda", "auto"):
        with pytest.raises(kiln.KilnError, match="1000"):
            kiln.load(path, backend=backend, device=1000)
    assert kiln.load(path, backend="cuda", device=np.int64(0)).device == 0


def test_device_outputs_sized_by_the_data(models):
    model = models["nonzero"]
    x = np.array([[1, -1, 0, 2], [0, 3, -4, 5], [6, 0, 0, -7]], np.float32)
    got = model.to_host(model.run({"x": model.to_device(x)})["y"])
    np.testing.assert_array_equal(got, np.array(np.nonzero(np.maximum(x, 0))))


def test_device_outputs_keep_their_model_alive(models):
    # The last reference to a model goes while its device output lives: the
    # output keeps the model, and so its device memory, until it goes too.
    x = tensor(os.path.join(MODELS, "encoder", "input_0.pb"))
    fresh = kiln.load(models["paths"]["encoder"], backend="cuda")
    y = fresh.run({"x": fresh.to_device(x)})["y"]
    del fresh
    gc.collect()
    np.testing.assert_allclose(models["encoder"].to_host(y), models["host"](x=x)["y"], atol=1e-5, rtol=1e-5)


def test_device_errors_are_one_line(models):
    model, host = models["encoder"], models["host"]
    x = tensor(os.path.join(MODELS, "encoder", "input_0.pb"))
    x_device = model.to_device(x)
    with pytest.raises(kiln.KilnError, match=r"input 'x' is on the CUDA device but the model runs in host emulation"):
        host.run({"x": x_device})
    with pytest.raises(kiln.KilnError, match="to_device but the model runs in host emulation"):
        host.to_device(x)
    with pytest.raises(kiln.KilnError, match="on the CUDA device already"):
        model.to_device(x_device)
    with pytest.raises(kiln.KilnError, match=r"input 'x' dim 2 is 3 but the model expects 16"):
        model.run({"x": model.to_device(np.zeros((2, 5, 3), np.float32))})


def test_cuda_graphs_replay_new_inputs_and_recapture_new_shapes(models, tmp_path):
    # The encoder's steps (matmuls in cuBLASLt, attention, norms) are one
    # segment: the first call at a shape runs step by step, the second is
    # captured into a CUDA graph and launched, later calls replay it. Each
    # call's inputs are new, so a replay reading anything stale (an input
    # staged elsewhere, a captured argument) gives wrong numbers.
    log = tmp_path / "graphs.log"
    os.environ["KILN_FAKE_CUDA_GRAPH_LOG"] = str(log)
    try:
        # Loaded afresh: no context of it has run yet.
        model, host = kiln.load(models["paths"]["encoder"], backend="cuda"), models["host"]
        rng = np.random.default_rng(3)
        for shape in ((2, 5, 16), (1, 3, 16), (2, 5, 16)):
            for _ in range(4):
                x = rng.standard_normal(shape).astype(np.float32)
                np.testing.assert_allclose(model(x=x)["y"], host(x=x)["y"], atol=1e-5, rtol=1e-5)
        graphs = log.read_text().split("\n") if log.exists() else []
        # Device inputs in buffers of their own: another signature (unless a
        # buffer comes back at a freed one's address), its own graph.
        for _ in range(3):
            x = rng.standard_normal((2, 5, 16)).astype(np.float32)
            y = model.to_host(model.run({"x": model.to_device(x)})["y"])
            np.testing.assert_allclose(y, host(x=x)["y"], atol=1e-5, rtol=1e-5)
    finally:
        del os.environ["KILN_FAKE_CUDA_GRAPH_LOG"]
    if os.environ.get("KILN_FAKE_CUDA_KERNELS"):
        # Per shape: call 1 step by step, call 2 captured and launched, 3 and
        # 4 replayed; the first shape's graph is kept for its third round.
        kinds = [line.split()[0] for line in graphs if line]
        assert kinds.count("capture") == 2 and kinds.count("replay") == 3 + 3 + 4, graphs


def test_cuda_graphs_off(models, tmp_path):
    log = tmp_path / "graphs.log"
    os.environ["KILN_CUDA_GRAPHS"] = "0"
    os.environ["KILN_FAKE_CUDA_GRAPH_LOG"] = str(log)
    try:
        model = kiln.load(models["paths"]["encoder"], backend="cuda")
        x = tensor(os.path.join(MODELS, "encoder", "input_0.pb"))
        for _ in range(3):
            np.testing.assert_allclose(model(x=x)["y"], models["host"](x=x)["y"], atol=1e-5, rtol=1e-5)
    finally:
        del os.environ["KILN_CUDA_GRAPHS"], os.environ["KILN_FAKE_CUDA_GRAPH_LOG"]
    assert not log.exists()
