"""kiln: run models compiled by kiln from Python, and compile them in-process.

    import kiln, numpy as np
    model = kiln.load("encoder.kiln")              # or a model .so from kiln-compile
    model = kiln.compile("encoder.onnx")           # in-process, through libkiln_jit
    outputs = model(x=np.zeros((2, 5, 16), np.float32))   # {"y": numpy array}

Inputs are numpy arrays or anything that speaks DLPack (torch tensors are read
without a copy); outputs are numpy arrays. On the CUDA backend, inputs in
device memory (torch CUDA tensors, or model.to_device(array)) run without
copies through the host and give outputs in device memory (DLPack objects:
torch.from_dlpack takes them as they are; model.to_host copies one to numpy). Errors raise
kiln.KilnError with kiln's one-line message. The GIL is released while a model
runs, so threads run models concurrently.
"""
import numbers
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _kiln
from ._kiln import KilnError, TensorInfo

__all__ = ["KilnError", "Model", "TensorInfo", "compile", "explain", "export", "has_jit", "jit_stats",
           "load",
           "runtime_version"]

has_jit: bool = _kiln.has_jit


def runtime_version() -> str:
    """The version of the libkiln_runtime this package runs on."""
    return _kiln.runtime_version()


class Model:
    """A compiled model: call it with keyword arrays, get a dict of outputs."""

    def __init__(self, native: "_kiln.Model"):
        self._native = native

    @property
    def inputs(self) -> List[TensorInfo]:
        """Name, dtype and dims (ints, or symbol names such as "batch") per input."""
        return self._native.inputs

    @property
    def outputs(self) -> List[TensorInfo]:
        return self._native.outputs

    @property
    def backend(self) -> str:
        """"cuda" or "host" (host emulation of the generated kernels)."""
        return self._native.backend

    @property
    def device(self) -> Optional[int]:
        """The CUDA device ordinal it runs on (load's `device`); None in host emulation."""
        return self._native.device

    @property
    def backend_description(self) -> str:
        return self._native.backend_description

    def run(self, inputs: Dict[str, Any], dlpack: bool = False) -> Dict[str, Any]:
        """Runs on `inputs` (input name to array); returns output name to numpy array,
        or with `dlpack=True` to an object with `__dlpack__` (for torch.from_dlpack
        and other frameworks, without a copy). Inputs in CUDA device memory give
        outputs in device memory (DLPack objects) whatever `dlpack` says."""
        return self._native.run(dict(inputs), dlpack)

    def to_device(self, array: Any) -> Any:
        """A copy of a host array in the model's device memory (CUDA backend), as
        a DLPack object; the memory is freed with its last reference."""
        return self._native.to_device(array)

    def to_host(self, array: Any) -> Any:
        """A numpy copy of an array in the model's device memory (or of a host array)."""
        return self._native.to_host(array)

    def generate(self, input_ids: Any, attention_mask: Any = None, max_new_tokens: int = 16,
                 stop_tokens: Sequence[int] = (), temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int = 0,
                 on_tokens: Optional[Callable[[int, List[int]], Any]] = None) -> Any:
        """Generates up to `max_new_tokens` token ids after each prompt of `input_ids`
        (int64 [batch, length]; `attention_mask` the same shape, 0 for left padding)
        with a decoder exported with its KV cache (past_key_values.N.key|value in,
        present.N.key|value out): greedy, or sampled at `temperature` among the
        `top_k` / `top_p` likeliest from `seed`. A sequence ends at a stop token and
        is padded with the first one. `on_tokens(step, tokens)` sees each step's
        tokens; returning True ends generation. Returns int64 [batch, max_new_tokens]."""
        import numpy as np

        def integers(x: Any, what: str) -> Any:
            x = np.asarray(x)
            if not np.issubdtype(x.dtype, np.integer):
                raise TypeError(f"{what} must hold integers, not {x.dtype}")
            return np.ascontiguousarray(x, dtype=np.int64)

        ids = integers(input_ids, "input_ids")
        mask = None if attention_mask is None else integers(attention_mask, "attention_mask")
        return self._native.generate(ids, mask, int(max_new_tokens), [int(t) for t in stop_tokens],
                                     float(temperature), int(top_k), float(top_p), int(seed), on_tokens)

    def __call__(self, **inputs: Any) -> Dict[str, Any]:
        return self.run(inputs)

    def __repr__(self) -> str:
        where = f", device={self.device}" if self.device is not None else ""
        return f"kiln.Model(inputs={self.inputs}, outputs={self.outputs}, backend={self.backend!r}{where})"


Device = Union[int, str, Any]


def _ordinal(device: Device) -> int:
    """The CUDA device ordinal of `device`: an int, "cuda" or "cuda:N", or a
    torch.device of type cuda ("cuda" without an index is device 0, not
    torch's current device)."""
    if isinstance(device, bool):
        raise KilnError(f"device {device!r} is not a CUDA device ordinal")
    if isinstance(device, numbers.Integral):  # int, numpy integers
        if device < 0:
            raise KilnError(f"device {device} is not a CUDA device ordinal")
        return int(device)
    kind, index = getattr(device, "type", None), getattr(device, "index", None)
    if kind is None and isinstance(device, str):
        kind, _, number = device.partition(":")
        if number and not (number.isascii() and number.isdigit()):
            raise KilnError(f"device {device!r} is not 'cuda' or 'cuda:N'")
        index = int(number) if number else None
    if kind != "cuda":
        raise KilnError(f"device {device!r} is not a CUDA device (an ordinal, 'cuda:N' or a torch.device)")
    return 0 if index is None else int(index)


def _backend_for(backend: str, ordinal: int) -> str:
    """"auto" on a device other than the first is "cuda": a device asked for by
    number runs there or fails, rather than falling back to host emulation."""
    return "cuda" if backend == "auto" and ordinal != 0 else backend


def load(path: Union[str, os.PathLike], backend: str = "auto", device: Device = 0) -> Model:
    """Loads a .kiln artifact or a model .so from kiln-compile. backend: auto, cuda or host;
    device: the CUDA device it runs on (an ordinal, "cuda:N" or a torch.device; another
    than the first makes "auto" mean "cuda")."""
    ordinal = _ordinal(device)
    return Model(_kiln.load(os.fspath(path), _backend_for(backend, ordinal), ordinal))


def _modes(precision: Optional[str], weights: Optional[str], group_size: Optional[int],
           calibrate: Union[str, os.PathLike, None]):
    """compile's and explain's kiln-compile modes as the binding takes them."""
    return dict(precision=precision or "", weights=weights or "",
                group_size=int(group_size or 0),
                calibrate="" if calibrate is None else os.fspath(calibrate))


def compile(model: Union[str, os.PathLike, bytes], backend: str = "auto",
            cache_dir: Union[str, os.PathLike, None] = None, name: Union[str, None] = None,
            device: Device = 0, precision: Optional[str] = None, weights: Optional[str] = None,
            group_size: Optional[int] = None,
            calibrate: Union[str, os.PathLike, None] = None) -> Model:
    """Compiles an ONNX (.onnx) or kiln (.mlir) model in-process through libkiln_jit.

    `model` is a path or the model's bytes (`name`, ending in .onnx or .mlir, says
    which and names it in messages). Compiled models and the variants compiled
    for new shapes are cached in `cache_dir` (default $KILN_CACHE_DIR/jit or
    ~/.cache/kiln/jit), shared by processes. `device` as load's. `precision`
    is kiln-compile's --precision (fp32, the default; tf32, fp16, bf16, or fp8
    with `calibrate`, its --calibrate: a folder of data sets the activations'
    scales come from); `weights` its --weights (float, the default; int8,
    int4: matmul weights quantized, docs/precision.md) with `group_size` its
    --group-size (128 by default)."""
    if not has_jit:
        raise KilnError("this kiln package was built against a kiln install without libkiln_jit")
    folder = "" if cache_dir is None else os.fspath(cache_dir)
    ordinal = _ordinal(device)
    backend = _backend_for(backend, ordinal)
    modes = _modes(precision, weights, group_size, calibrate)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return Model(_kiln.compile(bytes(model), backend, folder, name or "model.onnx", ordinal,
                                   **modes))
    path = os.fspath(model)
    return Model(_kiln.compile(path, backend, folder, name or os.path.basename(path), ordinal,
                               **modes))


def explain(model: Union[str, os.PathLike, bytes], backend: str = "auto",
            name: Union[str, None] = None, device: Device = 0,
            precision: Optional[str] = None,
            cache_dir: Union[str, os.PathLike, None] = None, weights: Optional[str] = None,
            group_size: Optional[int] = None,
            calibrate: Union[str, os.PathLike, None] = None) -> str:
    """What `kiln-compile --explain` prints for an ONNX or kiln model (a path or
    its bytes, `name` as compile's): graph breaks, size reads, quantized ops left
    in float and guards, one line each, then their counts, compiled at
    `precision`, `weights`, `group_size` and `calibrate` as compile's (its
    kernels built in `cache_dir`'s JIT folder,
    as compile's). Compiles the model for this; the model is not cached. A
    path is read as bytes: a model with external data files is refused (run
    kiln-compile --explain on it)."""
    if not has_jit:
        raise KilnError("this kiln package was built against a kiln install without libkiln_jit")
    ordinal = _ordinal(device)
    if not isinstance(model, (bytes, bytearray, memoryview)):
        path = os.fspath(model)
        with open(path, "rb") as f:
            data = f.read()
        name = name or os.path.basename(path)
    else:
        data = bytes(model)
    folder = "" if cache_dir is None else os.fspath(cache_dir)
    return _kiln.explain(data, _backend_for(backend, ordinal), folder, name or "model.onnx",
                         ordinal, **_modes(precision, weights, group_size, calibrate))


def jit_stats(wait: bool = False) -> Dict[str, Any]:
    """What kiln.compile's JITs (one per cache folder, backend and device) did in
    this process, summed: `compiles` (models and variants compiled) and their
    `compile_ms`, `memory_hits` and `disk_hits` (found compiled), `misses`,
    `specializations` (variants for new shapes compiled in the background and
    installed), `dropped`, `failed`, `evictions`, `damaged`. `wait=True` first
    lets queued specializations finish."""
    if not has_jit:
        raise KilnError("this kiln package was built against a kiln install without libkiln_jit")
    return _kiln.jit_stats(bool(wait))


def export(module: Any, args: Any, kwargs: Optional[Dict[str, Any]] = None, **options: Any) -> str:
    """A PyTorch module compiled ahead of time to a .kiln or .so (kiln.torch.export:
    path=, dynamic_shapes=, buckets=, precision=, arch=, cache_dir=). Needs torch."""
    from .torch import export as export_module

    return export_module(module, args, kwargs, **options)
