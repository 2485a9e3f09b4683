"""The JIT's cache and model reading under attack (issue 32): external data
resolved beside the model and keyed by its contents, nothing of the model
written into the cache, entries bound to their keys, links and foreign
folders, models that are not files, a cache folder that cannot be written and
one that fills up. Each case is one that broke before."""

import os
import shutil
import stat
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln

pytestmark = pytest.mark.skipif(not kiln.has_jit, reason="the package was built without libkiln_jit")

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")


def write_linear_model(folder, weights, bias, external):
    """y = x @ weights + bias over x [batch, 4]; with `external`, both constants
    live in the file weights.bin beside the model. Returns the model's path."""
    os.makedirs(folder, exist_ok=True)
    w = numpy_helper.from_array(weights.astype(np.float32), "w")
    b = numpy_helper.from_array(bias.astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        initializer=[w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(folder, "linear.onnx")
    if external:
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="weights.bin", size_threshold=0)
    else:
        onnx.save_model(model, path)
    return path


def random_weights(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)


X = np.arange(8, dtype=np.float32).reshape(2, 4) / 7.0


def test_external_data_resolves_beside_the_model_and_keys_the_cache(tmp_path):
    cache = str(tmp_path / "cache")
    weights, bias = random_weights(1)
    path = write_linear_model(str(tmp_path / "model"), weights, bias, external=True)
    assert os.path.exists(str(tmp_path / "model" / "weights.bin"))
    # A weights file planted in the cache folder under the model's location.
    os.makedirs(cache)
    other_w, other_b = random_weights(2)
    write_linear_model(cache, other_w, other_b, external=True)
    os.remove(os.path.join(cache, "linear.onnx"))

    model = kiln.compile(path, backend="host", cache_dir=cache)
    np.testing.assert_allclose(model(x=X)["y"], X @ weights + bias, rtol=1e-5, atol=1e-5)

    # New weights beside the same model bytes: another model, not a cache hit.
    new_w, new_b = random_weights(3)
    write_linear_model(str(tmp_path / "model"), new_w, new_b, external=True)
    again = kiln.compile(path, backend="host", cache_dir=cache)
    np.testing.assert_allclose(again(x=X)["y"], X @ new_w + new_b, rtol=1e-5, atol=1e-5)

    # Bytes come from no folder: their external data cannot be found, and
    # the error says so instead of looking in the current or cache folder.
    with open(path, "rb") as f:
        data = f.read()
    with pytest.raises(kiln.KilnError, match=r"external data files \('weights.bin'\).*from its file"):
        kiln.compile(data, backend="host", cache_dir=cache, name="linear.onnx")


def test_nothing_of_the_model_is_written_into_the_cache(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    # The names the JIT once wrote the model's bytes under, as links to a file
    # the process may write: a compile must never write through them.
    for n in range(1, 9):
        os.symlink(victim, cache / f"compile-{os.getpid()}-{n}.onnx")
    model = kiln.compile(os.path.join(MODELS, "mlp.onnx"), backend="host", cache_dir=str(cache))
    assert model.inputs[0].name == "x"
    assert victim.read_text() == "untouched"
    leftovers = [n for n in os.listdir(cache) if n.endswith(".onnx") and not os.path.islink(cache / n)]
    assert leftovers == []


def run_python(code, env=None):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=600, env=env)


def test_entries_are_bound_to_their_keys(tmp_path):
    """Two models' entries swapped (or one copied over the other) are refused
    as another key's, and each model still computes its own answer."""
    cache = str(tmp_path / "cache")
    w1, b1 = random_weights(4)
    w2, b2 = random_weights(5)
    one = write_linear_model(str(tmp_path / "one"), w1, b1, external=False)
    two = write_linear_model(str(tmp_path / "two"), w2, b2, external=False)
    compile_both = f"""
        import kiln, numpy as np
        x = np.arange(8, dtype=np.float32).reshape(2, 4) / 7.0
        for path in ({one!r}, {two!r}):
            y = kiln.compile(path, backend="host", cache_dir={cache!r})(x=x)["y"]
            print(path, " ".join(repr(float(v)) for v in y.ravel()))
    """
    first = run_python(compile_both)
    assert first.returncode == 0, first.stderr
    entries = sorted(n for n in os.listdir(cache) if n.startswith("model-") and n.endswith(".kiln"))
    assert len(entries) == 2
    a, b = (os.path.join(cache, n) for n in entries)
    os.rename(a, a + ".swap")
    os.rename(b, a)
    os.rename(a + ".swap", b)
    second = run_python(compile_both)
    assert second.returncode == 0, second.stderr
    assert "was written for" in second.stderr
    for line, (w, bias) in zip(second.stdout.splitlines(), ((w1, b1), (w2, b2))):
        values = np.array([float(v) for v in line.split()[1:]], np.float32).reshape(2, 3)
        np.testing.assert_allclose(values, X @ w + bias, rtol=1e-5, atol=1e-5)
    # A link where an entry belongs is not followed.
    for name in entries:
        os.remove(os.path.join(cache, name))
    os.symlink(b + ".nowhere", a)
    third = run_python(compile_both)
    assert third.returncode == 0, third.stderr


def test_models_that_are_not_files_are_refused(tmp_path):
    fifo = str(tmp_path / "model.onnx")
    os.mkfifo(fifo)
    with pytest.raises(kiln.KilnError, match="not a regular file"):
        kiln.compile(fifo, backend="host", cache_dir=str(tmp_path / "cache"))
    with pytest.raises(kiln.KilnError, match="not a regular file"):
        kiln.compile("/dev/zero", backend="host", cache_dir=str(tmp_path / "cache"), name="zero.onnx")
    with pytest.raises(kiln.KilnError, match="is a folder, not a model file"):
        kiln.compile(str(tmp_path), backend="host", cache_dir=str(tmp_path / "cache"))
    with pytest.raises(kiln.KilnError, match="NUL byte"):
        kiln.compile(os.path.join(MODELS, "mlp.onnx") + "\0.txt", backend="host")
    with pytest.raises(kiln.KilnError, match="NUL byte"):
        kiln.load(str(tmp_path / "a\0b.kiln"))


def test_messages_with_bytes_that_are_not_utf8_arrive(tmp_path):
    """A corrupt model whose op name is bytes that are not UTF-8: the message
    reaches Python with them escaped, not as an empty KilnError."""
    graph = helper.make_graph([helper.make_node("Nope", ["x"], ["y"], name="bad")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    # Same length, so the protobuf's framing stays whole.
    data = model.SerializeToString().replace(b"Nope", b"N\xff\xfe\x80")
    with pytest.raises(kiln.KilnError) as error:
        kiln.compile(data, backend="host", cache_dir=str(tmp_path / "cache"), name="random.onnx")
    message = str(error.value)
    assert "random.onnx" in message and "N\\xff\\xfe\\x80" in message, message


def test_a_cache_folder_the_jit_may_not_write_costs_reuse_only(tmp_path):
    """Read-only for this user, or (as root, whom modes do not stop) another
    user's: compiles work, with one warning, and nothing is written there."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(cache, 65534, 65534)
        why = "belongs to another user"
    else:
        cache.chmod(0o555)
        why = "is not writable"
    code = f"""
        import kiln, numpy as np
        x = np.arange(8, dtype=np.float32).reshape(2, 4) / 7.0
        model = kiln.compile({os.path.join(MODELS, "encoder.onnx")!r}, backend="host", cache_dir={str(cache)!r})
        for batch, seq in ((1, 3), (2, 5), (2, 7)):
            y = model(x=np.ones((batch, seq, 16), np.float32))["y"]
            assert y.shape == (batch, seq, 8), y.shape
        print("ok")
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert why in result.stderr
    assert os.listdir(cache) == []


def test_a_cache_folder_inside_a_folder_others_may_write_is_not_used(tmp_path):
    """A folder above the cache that others may write (without the sticky bit)
    would let them rename the cache folder away and put theirs in its place:
    compiles work, with one warning, and nothing is read or written there. With
    the sticky bit (as /tmp has) it is used."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    cache = shared / "cache"
    code = f"""
        import kiln, numpy as np
        model = kiln.compile({os.path.join(MODELS, "encoder.onnx")!r}, backend="host", cache_dir={str(cache)!r})
        y = model(x=np.ones((2, 5, 16), np.float32))["y"]
        assert y.shape == (2, 5, 8), y.shape
        print("ok")
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert f"is inside {shared}, which other users may write" in result.stderr
    assert not cache.exists() or os.listdir(cache) == []
    shared.chmod(0o1777)
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert "other users may write" not in result.stderr
    assert any(name.startswith("model-") for name in os.listdir(cache))


def test_a_full_cache_folder_is_warnings_never_an_exit(tmp_path):
    """The cache on a small file system filled up after the first compile: the
    specializations new shapes ask for cannot be written, and the process goes
    on serving with the generic kernels and exits 0 (it used to exit from a
    background worker with LLVM's 'IO failure on output stream')."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a private small file system")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    code = f"""
        import os, time, kiln, numpy as np
        cache = {str(cache)!r}
        model = kiln.compile({os.path.join(MODELS, "encoder.onnx")!r}, backend="host", cache_dir=cache)
        model(x=np.ones((1, 3, 16), np.float32))
        try:
            with open(os.path.join(cache, "filler"), "wb") as f:
                while True:
                    f.write(b"\\0" * (1 << 20))
        except OSError:
            pass
        # A little room again: files can be made, and writes fail part way
        # (where an unchecked stream error ended the process).
        filler = os.path.join(cache, "filler")
        os.truncate(filler, os.path.getsize(filler) - (64 << 10))
        for batch, seq in ((2, 5), (3, 7), (4, 9), (5, 11)):
            y = model(x=np.ones((batch, seq, 16), np.float32))["y"]
            assert y.shape == (batch, seq, 8), y.shape
            time.sleep(0.5)
        print("ok")
    """
    script = tmp_path / "fill.py"
    script.write_text(textwrap.dedent(code))
    try:
        result = subprocess.run(
            ["unshare", "-m", "sh", "-c",
             f"mount -t tmpfs -o size=48m,mode=0700 tmpfs '{cache}' && exec '{sys.executable}' '{script}'"],
            capture_output=True, text=True, timeout=600)
    except OSError as e:
        pytest.skip(f"unshare: {e}")
    if "mount" in result.stderr and result.returncode != 0 and "ok" not in result.stdout:
        pytest.skip(f"no private file system here: {result.stderr.strip()[:200]}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert "IO failure" not in result.stderr
