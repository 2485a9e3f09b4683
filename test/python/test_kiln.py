"""The kiln Python package (python/) on the torch models, as a user runs it.

Needs the package installed (scripts/install-python-package.sh) and KILN_BIN set
to the build's bin/ (kiln-compile makes the artifacts kiln.load reads). Outputs
are compared with torch's, committed beside the models, within 1e-4."""
import os
import subprocess
import sys
import threading

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import kiln

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
BIN = os.environ.get("KILN_BIN", "")


def tensor(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


def torch_case(name):
    return tensor(os.path.join(MODELS, name, "input_0.pb")), tensor(os.path.join(MODELS, name, "output_0.pb"))


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("artifacts")
    if not BIN:
        pytest.skip("KILN_BIN (the build's bin/ folder) is not set")
    paths = {}
    for name in ("mlp", "cnn", "encoder"):
        out = str(folder / f"{name}.kiln")
        subprocess.run([os.path.join(BIN, "kiln-compile"), os.path.join(MODELS, f"{name}.onnx"), "-o", out,
                        "--arch", "none", "--cache-dir", str(folder / "cache")], check=True)
        paths[name] = out
    return paths


@pytest.fixture(scope="module")
def jit_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("jit-cache"))


@pytest.mark.parametrize("name", ["mlp", "cnn", "encoder"])
def test_loaded_models_match_torch(artifacts, name):
    model = kiln.load(artifacts[name], backend="host")
    x, y = torch_case(name)
    out = model(x=x)
    assert set(out) == {"y"}
    assert out["y"].dtype == np.float32 and out["y"].shape == y.shape
    np.testing.assert_allclose(out["y"], y, atol=1e-4, rtol=0)


def test_detector_sizes_bound_per_call_in_one_model(tmp_path):
    """torchvision's SSDlite (test/models/vision): one loaded model, two images
    in turn. Image b has no detection, so its batched NMS takes the If's empty
    branch, where image a's call bound the NMS count inside the other branch:
    the sizes steps bind (top level and branches) are per call, never left
    over from the call before."""
    if not BIN:
        pytest.skip("KILN_BIN (the build's bin/ folder) is not set")
    out = str(tmp_path / "ssdlite.kiln")
    subprocess.run([os.path.join(BIN, "kiln-compile"), os.path.join(MODELS, "vision", "ssdlite.onnx"),
                    "-o", out, "--arch", "none", "--cache-dir", str(tmp_path / "cache")], check=True)
    model = kiln.load(out, backend="host")
    cases = {}
    for name in ("a", "b"):
        folder = os.path.join(MODELS, "vision", "ssdlite", name)
        cases[name] = (np.load(os.path.join(folder, "in_image.npy")),
                       [np.load(os.path.join(folder, f"want_{k}.npy")) for k in range(3)])
    for name in ("a", "b", "a", "b"):
        image, wants = cases[name]
        got = model(image=image)
        for k, (output, want) in enumerate(zip(got.values(), wants)):
            assert output.shape == want.shape, (name, k)
            np.testing.assert_allclose(output, want, atol=5e-4, rtol=1e-5)


def test_metadata_spells_symbolic_dims(artifacts):
    model = kiln.load(artifacts["encoder"], backend="host")
    (x,) = model.inputs
    assert (x.name, x.dtype, x.dims) == ("x", "float32", ["batch", "seq", 16])
    (y,) = model.outputs
    assert (y.name, y.dims) == ("y", ["batch", "seq", 8])
    assert model.backend == "host"
    assert "host emulation" in model.backend_description


@pytest.mark.skipif(not kiln.has_jit, reason="the package was built without libkiln_jit")
def test_compile_from_path_and_bytes(jit_cache):
    x, y = torch_case("encoder")
    path = os.path.join(MODELS, "encoder.onnx")
    from_path = kiln.compile(path, backend="host", cache_dir=jit_cache)
    np.testing.assert_allclose(from_path(x=x)["y"], y, atol=1e-4, rtol=0)
    with open(path, "rb") as f:
        from_bytes = kiln.compile(f.read(), backend="host", cache_dir=jit_cache, name="encoder.onnx")
    np.testing.assert_allclose(from_bytes(x=x)["y"], y, atol=1e-4, rtol=0)


@pytest.mark.skipif(not kiln.has_jit, reason="the package was built without libkiln_jit")
def test_compile_quantized(jit_cache, tmp_path):
    """weights= and precision="fp8" with calibrate= are kiln-compile's --weights
    and --precision fp8 --calibrate through the JIT: not fp32's numbers, and
    near them (the encoder's outputs are of magnitude about 1.7; bounds as
    test/unit/JitTest.cpp's, which measured 0.11 and 0.095)."""
    x, y = torch_case("encoder")
    path = os.path.join(MODELS, "encoder.onnx")
    rng = np.random.default_rng(3)
    for s in range(3):
        os.makedirs(tmp_path / f"test_data_set_{s}")
        np.save(tmp_path / f"test_data_set_{s}" / "input_0.npy",
                rng.standard_normal((2, 8, 16)).astype(np.float32))
    int4 = kiln.compile(path, backend="host", cache_dir=jit_cache, weights="int4", group_size=16)
    fp8 = kiln.compile(path, backend="host", cache_dir=jit_cache, precision="fp8",
                       calibrate=tmp_path)
    for model, bound in ((int4, 0.3), (fp8, 0.15)):
        err = np.abs(model(x=x)["y"] - y).max()
        assert 1e-5 < err <= bound, err
    with pytest.raises(kiln.KilnError, match="precision 'fp8' needs options->calibration_dir"):
        kiln.compile(path, backend="host", cache_dir=jit_cache, precision="fp8")
    with pytest.raises(kiln.KilnError, match="weights 'int3' is not one of float, int8, int4"):
        kiln.compile(path, backend="host", cache_dir=jit_cache, weights="int3")


def test_dlpack_and_non_contiguous_inputs(artifacts):
    model = kiln.load(artifacts["encoder"], backend="host")
    x, y = torch_case("encoder")

    class DlpackOnly:
        """An array that offers nothing but the DLPack protocol (as torch tensors do)."""

        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    np.testing.assert_allclose(model(x=DlpackOnly(x))["y"], y, atol=1e-4, rtol=0)
    # Outputs as DLPack on request: numpy (or torch) takes them without a copy.
    out = model.run({"x": x}, dlpack=True)["y"]
    assert hasattr(out, "__dlpack__") and not isinstance(out, np.ndarray)
    np.testing.assert_allclose(np.from_dlpack(out), y, atol=1e-4, rtol=0)
    wide = np.zeros((2, 5, 32), np.float32)
    wide[:, :, ::2] = x
    strided = wide[:, :, ::2]
    assert not strided.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(model(x=strided)["y"], y, atol=1e-4, rtol=0)


def test_errors_carry_kilns_message(artifacts):
    model = kiln.load(artifacts["encoder"], backend="host")
    x, _ = torch_case("encoder")
    with pytest.raises(kiln.KilnError, match=r"input 'x' dim 2 is 3 but the model expects 16"):
        model(x=np.zeros((2, 5, 3), np.float32))
    with pytest.raises(kiln.KilnError, match=r"input 'x' is f64\[2, 5, 16\] but the model expects f32\[batch, seq, 16\]"):
        model(x=x.astype(np.float64))
    with pytest.raises(kiln.KilnError, match="missing input 'x'"):
        model()
    # An unknown name is reported before the input it leaves missing.
    with pytest.raises(kiln.KilnError, match=r"the model has no input 'z' \(its inputs: x\)"):
        model(z=x)
    with pytest.raises(kiln.KilnError, match="the model has no input 'z'"):
        model(x=x, z=x)
    with pytest.raises(kiln.KilnError, match="cannot open"):
        kiln.load("/nonexistent/model.kiln")
    with pytest.raises(kiln.KilnError, match="backend 'tpu' is not auto, cuda or host"):
        kiln.load(artifacts["encoder"], backend="tpu")
    if kiln.has_jit:
        with pytest.raises(kiln.KilnError, match="garbage.onnx"):
            kiln.compile(b"not a model", backend="host", name="garbage.onnx")


def test_threads_run_at_once_and_agree(artifacts):
    """Runs release the GIL: four Python threads share one model, each result
    equals the serial one."""
    model = kiln.load(artifacts["encoder"], backend="host")
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((b, s, 16), dtype=np.float32) for b, s in ((1, 3), (2, 5), (2, 7), (1, 9))]
    serial = [model(x=x)["y"] for x in inputs]
    failures = []

    def worker(k):
        for _ in range(20):
            for i, x in enumerate(inputs):
                if not np.array_equal(model(x=x)["y"], serial[i]):
                    failures.append((k, i))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not failures


def test_generate_matches_numpy_greedy_and_streams(tmp_path):
    """Model.generate (kiln_generate) on test/run's tiny decoder with its KV
    cache: the greedy tokens numpy's float64 generation makes, for two prompts
    (one left-padded); a stop token; on_tokens sees each step and can end it."""
    if not BIN:
        pytest.skip("KILN_BIN (the build's bin/ folder) is not set")
    maker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "run", "make_decoder_models.py")
    subprocess.run([sys.executable, maker, str(tmp_path)], check=True)
    artifact = str(tmp_path / "decoder.kiln")
    subprocess.run([os.path.join(BIN, "kiln-compile"), str(tmp_path / "decoder.onnx"), "-o", artifact,
                    "--arch", "none", "--cache-dir", str(tmp_path / "cache")], check=True)
    model = kiln.load(artifact, backend="host")
    ids, mask = np.load(tmp_path / "ids.npy"), np.load(tmp_path / "mask.npy")
    tokens = model.generate(ids, attention_mask=mask, max_new_tokens=8)
    assert tokens.dtype == np.int64 and tokens.shape == (2, 8)
    np.testing.assert_array_equal(tokens, np.load(tmp_path / "greedy.npy"))
    stop = int((tmp_path / "stop.txt").read_text())
    stopped = model.generate(ids, attention_mask=mask, max_new_tokens=8, stop_tokens=[stop])
    np.testing.assert_array_equal(stopped, np.load(tmp_path / "stopped.npy"))
    seen = []
    early = model.generate(ids, attention_mask=mask, max_new_tokens=8,
                           on_tokens=lambda step, t: seen.append(list(t)) or step == 2)
    assert seen == [list(tokens[:, n]) for n in range(3)]
    np.testing.assert_array_equal(early[:, :3], tokens[:, :3])
    with pytest.raises(ValueError, match="attention_mask must have input_ids' shape"):
        model.generate(ids, attention_mask=mask[:, :2])
    with pytest.raises(TypeError, match="input_ids must hold integers"):
        model.generate(ids.astype(np.float32))
    assert model.generate(ids, attention_mask=mask, max_new_tokens=0).shape == (2, 0)

    def fails(step, t):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        model.generate(ids, attention_mask=mask, on_tokens=fails)
