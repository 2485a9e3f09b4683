"""torch.compile(model, backend="kiln") and kiln.torch.explain (issue 33), in
host emulation: the backend is found through its entry point, models match
eager, a model of many shapes is one Dynamo graph and one kiln compile, graph
breaks and fallbacks are reported. Runs in the torch venv
(scripts/install-torch-deps.sh); elsewhere it is skipped."""
import importlib.metadata
import math
import os
import tempfile
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import kiln  # noqa: E402
import kiln.torch as kt  # noqa: E402

# Calls without a cache_dir of their own (torch.compile's modes take no
# options) use $KILN_CACHE_DIR/jit: never the user's ~/.cache.
os.environ.setdefault("KILN_CACHE_DIR", tempfile.mkdtemp(prefix="kiln-torch-test-"))

CPU_TOLERANCE = 1e-4  # relative to the largest |eager output|: fp32 sums in another order


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    kt.reset_stats()
    yield
    torch._dynamo.reset()


@pytest.fixture
def options(tmp_path):
    """A cache folder of the test's own, so that kiln's compile counts are its."""
    return {"cache_dir": str(tmp_path / "jit")}


def assert_close(got, want, what=""):
    got, want = got.detach().float(), want.detach().float()
    assert got.shape == want.shape, what
    scale = max(want.abs().max().item(), 1e-30)
    err = (got - want).abs().max().item()
    assert err <= CPU_TOLERANCE * scale, f"{what}: max error {err} against max |eager| {scale}"


class Encoder(torch.nn.Module):
    """A BERT-style encoder over token ids with a padding mask: embeddings,
    attention masked where the mask is 0, erf GELU, LayerNorm."""

    def __init__(self, vocab=64, d=32, heads=4, layers=2, positions=64):
        super().__init__()
        self.heads = heads
        self.tokens = torch.nn.Embedding(vocab, d)
        self.positions = torch.nn.Embedding(positions, d)
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(d, 3 * d) for _ in range(layers))
        self.out = torch.nn.ModuleList(torch.nn.Linear(d, d) for _ in range(layers))
        self.up = torch.nn.ModuleList(torch.nn.Linear(d, 4 * d) for _ in range(layers))
        self.down = torch.nn.ModuleList(torch.nn.Linear(4 * d, d) for _ in range(layers))
        self.norm1 = torch.nn.ModuleList(torch.nn.LayerNorm(d) for _ in range(layers))
        self.norm2 = torch.nn.ModuleList(torch.nn.LayerNorm(d) for _ in range(layers))

    def forward(self, ids, mask):
        b, s = ids.shape
        x = self.tokens(ids) + self.positions(torch.arange(s, device=ids.device))
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -1e9
        for qkv, out, up, down, n1, n2 in zip(self.qkv, self.out, self.up, self.down, self.norm1,
                                              self.norm2):
            q, k, v = qkv(x).view(b, s, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias
            attended = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1)
            x = n1(x + out(attended))
            x = n2(x + down(torch.nn.functional.gelu(up(x))))
        return x


def encoder_inputs(batch, seq, generator):
    ids = torch.randint(0, 64, (batch, seq), generator=generator)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[0, seq // 2:] = 0  # the first sequence is padded
    return ids, mask


def test_backend_is_registered_by_entry_point():
    names = [e.name for e in importlib.metadata.entry_points(group="torch_dynamo_backends")]
    assert "kiln" in names
    assert "kiln" in torch._dynamo.list_backends(exclude_tags=())


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
def test_torchvision_model_matches_eager(name, options):
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    compiled = torch.compile(model, backend="kiln", dynamic=True, options=options)
    with torch.no_grad():
        for batch, size in [(2, 64), (3, 80)]:
            x = torch.randn(batch, 3, size, size)
            assert_close(compiled(x), model(x), f"{name} {batch}x3x{size}x{size}")
    stats = kt.stats()
    assert stats["graphs"] == 1 and stats["compiled"] == 1 and stats["fallbacks"] == 0, stats
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def test_encoder_over_many_shapes_is_one_graph_and_one_compile(options):
    torch.manual_seed(1)
    model = Encoder().eval()
    compiled = torch.compile(model, backend="kiln", dynamic=True, options=options)
    generator = torch.Generator().manual_seed(2)
    before = kiln.jit_stats(wait=True)
    shapes = [(2, 5), (3, 7), (4, 9), (2, 16), (5, 3), (3, 12), (6, 8), (4, 20)]
    # Dynamo keeps no counter of recompiles; error_on_recompile makes one an
    # error (without dynamic=True the second shape would be one).
    with torch.no_grad(), torch._dynamo.config.patch(error_on_recompile=True):
        for batch, seq in shapes:
            ids, mask = encoder_inputs(batch, seq, generator)
            assert_close(compiled(ids, mask), model(ids, mask), f"encoder {batch}x{seq}")
    counters = torch._dynamo.utils.counters
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
    after = kiln.jit_stats(wait=True)
    stats = kt.stats()
    assert stats["compiled"] == 1 and stats["calls"] == len(shapes), stats
    # One model compiled; every other compile is a variant for a new shape,
    # built in the background while the generic kernels served the call.
    assert after["misses"] - before["misses"] >= 1
    variants = after["specializations"] - before["specializations"]
    assert variants >= 1, (before, after)
    assert after["compiles"] - before["compiles"] == 1 + variants + \
        (after["failed"] - before["failed"]), (before, after)


def test_precision_option_compiles_bf16(options):
    """options={"precision": "bf16"}: kiln-compile --precision bf16 through the
    JIT (weights and activations stored in bf16, fp32 accumulation). Its
    tolerance is docs/precision.md's for bf16 (4e-2 of the largest output):
    bf16 keeps 8 significant bits."""
    torch.manual_seed(8)
    model = Encoder().eval()
    compiled = torch.compile(model, backend="kiln", dynamic=True,
                             options=dict(options, precision="bf16"))
    ids, mask = encoder_inputs(3, 10, torch.Generator().manual_seed(9))
    with torch.no_grad():
        got, want = compiled(ids, mask), model(ids, mask)
    assert got.dtype == torch.float32  # inputs and outputs keep their types
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    assert err <= 4e-2 * scale, (err, scale)
    assert err > 1e-6 * scale, "bf16 gave fp32's numbers: the option did not reach kiln"


def test_weights_option_quantizes_the_frozen_weights(options):
    """options={"weights": "int4", "group_size": 32}: kiln-compile --weights
    int4 on the graph's frozen weights through the JIT. Round to nearest in
    groups of 32 (a step of a fifteenth of a group's range): within 0.1 of
    the largest output here, and not fp32's numbers."""
    torch.manual_seed(8)
    model = Encoder().eval()
    compiled = torch.compile(model, backend="kiln", dynamic=True,
                             options=dict(options, weights="int4", group_size=32))
    ids, mask = encoder_inputs(3, 10, torch.Generator().manual_seed(9))
    with torch.no_grad():
        got, want = compiled(ids, mask), model(ids, mask)
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    assert err <= 0.1 * scale, (err, scale)
    assert err > 1e-4 * scale, "int4 weights gave fp32's numbers: the option did not reach kiln"


class BranchOnItem(torch.nn.Module):
    """A Python branch on a tensor's value: Dynamo breaks the graph at .item()."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = self.a(x).relu()
        if y.sum().item() > 0:
            y = y * 2
        return self.b(y)


def test_graph_break_gives_two_kiln_graphs_and_explain_says_so(options):
    torch.manual_seed(3)
    model = BranchOnItem().eval()
    x = torch.randn(3, 8)
    with torch.no_grad():
        explanation = kt.explain(model, x, options=options)
    assert explanation.graph_count == 2, str(explanation)
    assert len(explanation.break_reasons) == 1 and "item" in explanation.break_reasons[0]
    assert all(g.compiled for g in explanation.graphs), str(explanation)
    assert all("0 graph breaks" in g.kiln for g in explanation.graphs), str(explanation)
    text = str(explanation)
    assert text.startswith("Dynamo: 2 graphs, 1 graph break"), text
    assert "torch_graph_0.onnx: " in text and "generated kernels" in text, text

    kt.reset_stats()
    compiled = torch.compile(model, backend="kiln", dynamic=True, options=options)
    with torch.no_grad():
        assert_close(compiled(x), model(x), "BranchOnItem")
    assert kt.stats()["compiled"] == 2


def test_outputs_are_kiln_buffers_without_a_copy():
    """kiln hands its output buffer to torch through DLPack: the tensor torch
    makes is that memory (the same address numpy sees through the same object)."""
    model = kiln.compile(_onnx_of(torch.nn.Linear(4, 3).eval(), torch.randn(2, 4)),
                         backend="host", name="linear.onnx")
    x = torch.randn(2, 4)
    out = model.run({model.inputs[0].name: x}, dlpack=True)[model.outputs[0].name]
    tensor = torch.from_dlpack(out)
    assert tensor.data_ptr() == np.from_dlpack(out).ctypes.data


def _onnx_of(module, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(module, (x,), dynamo=True, verbose=False, external_data=False)
    return program.model_proto.SerializeToString()


class Spectrum(torch.nn.Module):
    """torch.fft: exported as ONNX DFT, which kiln compiles only along a
    static dim (the transform is a constant)."""

    def forward(self, x):
        return torch.fft.rfft(x).abs() + 1


def test_graph_kiln_refuses_runs_eagerly_with_one_warning_or_raises_when_strict(options):
    x = torch.randn(2, 16)
    compiled = torch.compile(Spectrum(), backend="kiln", dynamic=True, options=options)
    with pytest.warns(kt.KilnGraphFallback) as caught:
        got = compiled(x)
    assert_close(got, Spectrum()(x), "Spectrum (eager)")
    messages = [str(w.message) for w in caught if issubclass(w.category, kt.KilnGraphFallback)]
    assert len(messages) == 1 and "\n" not in messages[0], messages
    assert messages[0].startswith("kiln: torch_graph_0 runs eagerly: "), messages
    assert "DFT" in messages[0], messages
    assert kt.stats()["fallbacks"] == 1
    compiled(x)  # no second warning: the graph stays eager
    assert kt.stats()["fallbacks"] == 1

    torch._dynamo.reset()
    strict = torch.compile(Spectrum(), backend="kiln", dynamic=True,
                           options=dict(options, strict=True))
    with pytest.raises(kiln.KilnError, match=r"^kiln: torch_graph_\d+: .*DFT"):
        strict(x)


class AdaptivePool(torch.nn.Module):
    """A conv, an adaptive average pool to 3x3 (AlexNet's is 6x6), a Linear."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=2)
        self.pool = torch.nn.AdaptiveAvgPool2d((3, 3))
        self.fc = torch.nn.Linear(36, 5)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))


def test_adaptive_pool_compiles_for_each_size_with_one_warning(options):
    """torch.onnx translates an adaptive pool over symbolic sizes for the
    example's sizes only (the ONNX it writes reads out of range at 19x19,
    in onnxruntime as in kiln): such a graph is exported and compiled at each
    call's sizes, with one warning, and matches eager at every size."""
    torch.manual_seed(5)
    model = AdaptivePool().eval()
    compiled = torch.compile(model, backend="kiln", dynamic=True, options=options)
    with torch.no_grad(), pytest.warns(kt.KilnStaticSizes) as caught:
        for size in (15, 19, 15, 27):
            x = torch.randn(2, 3, size, size)
            assert_close(compiled(x), model(x), f"AdaptivePool at {size}x{size}")
    messages = [str(w.message) for w in caught if issubclass(w.category, kt.KilnStaticSizes)]
    assert len(messages) == 1 and "adaptive_avg_pool2d to (3, 3)" in messages[0], messages
    counts = kt.stats()
    assert (counts["compiled"], counts["compiles_for_sizes"], counts["fallbacks"]) == (1, 2, 0)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def test_gradients_needed_run_eagerly_and_flow(options):
    """kiln runs forward only: with grad enabled and weights requiring it, the
    graph runs eagerly (one warning) so that backward reaches every weight."""
    torch.manual_seed(6)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
    compiled = torch.compile(model, backend="kiln", dynamic=True, options=options)
    with pytest.warns(kt.KilnGraphFallback, match="gradients are needed"):
        compiled(torch.randn(3, 4)).sum().backward()
    assert model[0].weight.grad is not None
    with torch.no_grad():
        x = torch.randn(3, 4)
        assert_close(compiled(x), model(x), "under no_grad")
    assert kt.stats()["compiled"] == 1


def test_one_graph_over_layers_of_the_same_shapes_runs_each_layers_weights(options):
    """Dynamo gives identical layers one graph and passes each layer's weights
    as arguments: each set gets its own frozen model, none runs another's."""
    torch.manual_seed(7)
    layers = [torch.nn.Linear(8, 8).eval() for _ in range(6)]
    compiled = [torch.compile(layer, backend="kiln", dynamic=True, options=options)
                for layer in layers]
    x = torch.randn(2, 8)
    with torch.no_grad():
        for k, (layer, fn) in enumerate(zip(layers, compiled)):
            assert_close(fn(x), layer(x), f"layer {k}")
        # New tensors, twice: the first is freed, and a new one may take its
        # id and address; the model keyed by it must not be found again.
        for round in range(2):
            layers[1].weight = torch.nn.Parameter(torch.randn(8, 8))
            assert_close(compiled[1](x), layers[1](x), f"layer 1 with new weight {round}")
    stats = kt.stats()
    assert stats["fallbacks"] == 0, stats  # six layers are six models, not five changes


def test_batchnorm_in_training_mode_runs_eagerly(options):
    """Training-mode BatchNorm writes its running statistics: kiln would not."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).train()
    compiled = torch.compile(model, backend="kiln", dynamic=True, options=options)
    x = torch.randn(8, 4)
    with torch.no_grad(), pytest.warns(kt.KilnGraphFallback,
                      match=r"writes to its input or buffer .*\['1'\]\._buffers\['\w+'\] in place"):
        compiled(x)
    assert kt.stats()["fallbacks"] == 1
    # Eagerly, so the statistics moved as they should.
    assert model[1].num_batches_tracked.item() == 1
    assert model[1].running_mean.abs().sum().item() > 0


def test_weight_written_in_place_compiles_again(options):
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh()).eval()
    compiled = torch.compile(model, backend="kiln", dynamic=True, options=options)
    x = torch.randn(3, 8)
    with torch.no_grad():
        assert_close(compiled(x), model(x), "before")
        model[0].weight.mul_(2)
        assert_close(compiled(x), model(x), "after the weight changed")
    assert kt.stats()["recompiles_for_weights"] == 1


def test_bad_options_are_one_line_errors():
    x = torch.randn(2, 4)
    for options, message in [({"precison": "bf16"}, "unknown option 'precison'"),
                             ({"backend": "tpu"}, "backend='tpu' is not auto, host or cuda"),
                             ({"precision": "fp8"}, "precision='fp8' is not fp32, tf32"),
                             ({"weights": "int3"}, "weights='int3' is not float, int8 or int4"),
                             ({"group_size": 48}, "group_size=48 is not a power of 2")]:
        torch._dynamo.reset()
        compiled = torch.compile(torch.nn.Linear(4, 4), backend="kiln", options=options)
        with pytest.raises(Exception, match=message):
            compiled(x)
    # torch.compile's modes: every one compiles the same kiln model
    # (docs/torch.md); a mode torch does not have is named.
    torch._dynamo.reset()
    linear = torch.nn.Linear(4, 4).eval()
    with torch.no_grad():
        assert_close(torch.compile(linear, backend="kiln", mode="reduce-overhead")(x), linear(x))
        torch._dynamo.reset()  # and torch.compile's name, which it passes on
        assert_close(torch.compile(linear, backend="kiln", name="head")(x), linear(x))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="mode 'fastest' is not one of default, reduce-overhead"):
        torch.compile(linear, backend="kiln", mode="fastest")(x)


class FloatEncoder(torch.nn.Module):
    """The shape of examples/c/run_encoder.c's model: x f32[batch, seq, 16] in."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)
        self.out = torch.nn.Linear(16, 8)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attended = (q @ k.transpose(-1, -2) / 4.0).softmax(-1) @ v
        return self.out(torch.nn.functional.gelu(attended + x))


def test_export_writes_a_so_the_c_example_runs_at_two_shapes(tmp_path):
    import os
    import subprocess
    from pathlib import Path

    from torch.export import Dim

    torch.manual_seed(5)
    model = FloatEncoder().eval()
    batch, seq = Dim("batch"), Dim("seq", max=32)
    so = kiln.export(model, (torch.randn(2, 5, 16),), path=tmp_path / "encoder.so",
                     dynamic_shapes={"x": {0: batch, 1: seq}}, arch="none",
                     cache_dir=tmp_path / "kernels")
    assert so == str(tmp_path / "encoder.so")
    loaded = kiln.load(so, backend="host")
    assert loaded.inputs[0].dims == ["batch", "seq", 16], loaded.inputs
    # Dim("seq", max=32) is kiln's range: past it, kiln's guard says so.
    with pytest.raises(kiln.KilnError, match="seq"):
        loaded(x=np.zeros((2, 33, 16), np.float32))

    source = Path(__file__).resolve().parents[2]
    library = Path(kiln.__file__).parent / "lib"
    program = tmp_path / "run_encoder"
    subprocess.run(["cc", "-std=c99", str(source / "examples/c/run_encoder.c"),
                    f"-I{source / 'runtime/include'}", so, f"-L{library}", "-lkiln_runtime",
                    f"-Wl,-rpath,{library}", f"-Wl,-rpath,{tmp_path}", "-o", str(program)],
                   check=True)
    for b, s in [(2, 5), (3, 9)]:
        x = torch.randn(b, s, 16)
        x.numpy().tofile(tmp_path / "x.f32")
        run = subprocess.run([str(program), str(tmp_path / "x.f32"), str(b), str(s),
                              str(tmp_path / "y.f32")], capture_output=True, text=True,
                             env=dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "kernels")))
        assert run.returncode == 0, run.stderr
        got = torch.from_numpy(np.fromfile(tmp_path / "y.f32", dtype=np.float32))
        with torch.no_grad():
            assert_close(got.reshape(b, s, 8), model(x), f"run_encoder {b}x{s}")


def test_export_errors_are_one_line(tmp_path):
    with pytest.raises(kiln.KilnError, match=r"must end in \.kiln or \.so"):
        kiln.export(FloatEncoder(), (torch.randn(2, 5, 16),), path=tmp_path / "m.onnx")
    # kiln builds a DFT's transform as a constant: not along a dynamic dim.
    with pytest.raises(kiln.KilnError, match=r"^kiln.export: .*DFT.*dynamic dim"):
        kiln.export(Spectrum(), (torch.randn(2, 16),), path=tmp_path / "m.kiln", arch="none",
                    dynamic_shapes={"x": {1: torch.export.Dim("n")}})


SECOND_PROCESS = r"""
import sys, torch, kiln
sys.path.insert(0, sys.argv[2])
from test_torch import Encoder, encoder_inputs
torch.manual_seed(1)
model = Encoder().eval()
compiled = torch.compile(model, backend="kiln", dynamic=True, options={"cache_dir": sys.argv[1]})
generator = torch.Generator().manual_seed(2)
with torch.no_grad():
    for batch, seq in [(2, 5), (3, 7)]:
        compiled(*encoder_inputs(batch, seq, generator))
stats = kiln.jit_stats(wait=True)
print(stats["compiles"], stats["disk_hits"])
"""


def test_a_second_process_compiles_nothing(tmp_path):
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    counts = []
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", SECOND_PROCESS, str(tmp_path / "jit"), here],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        counts.append([int(v) for v in run.stdout.split()[-2:]])
    (first_compiles, _), (second_compiles, second_hits) = counts
    assert first_compiles >= 1 and second_compiles == 0 and second_hits >= 1, counts


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch has no CUDA device here")
def test_cuda_tensors_run_on_their_device_and_stay_there(options):
    """On a GPU: CUDA tensors in, kiln's CUDA backend on their device, outputs
    in device memory (DLPack, no copy through the host), matching eager with
    TF32 off on both sides (kiln's fp32 is IEEE)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(10)
    model = Encoder().eval().cuda()
    compiled = torch.compile(model, backend="kiln", dynamic=True, options=options)
    generator = torch.Generator().manual_seed(11)
    with torch.no_grad():
        for batch, seq in [(2, 5), (3, 9)]:
            ids, mask = (t.cuda() for t in encoder_inputs(batch, seq, generator))
            got = compiled(ids, mask)
            assert got.is_cuda and got.device == ids.device
            assert_close(got, model(ids, mask), f"encoder on CUDA {batch}x{seq}")
    assert kt.stats()["compiled"] == 1 and kt.stats()["fallbacks"] == 0
