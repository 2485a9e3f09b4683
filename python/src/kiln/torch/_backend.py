"""The Dynamo backend: a kiln model behind each graph's calling convention, its
options and the process's counts (kiln.torch.stats)."""
from __future__ import annotations

import collections
import dataclasses
import itertools
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from .. import KilnError
from .. import compile as _jit_compile
from .. import jit_stats
from ._lowering import (_first_line, _Input, _describe, _is_module_scalar, _is_module_state,
                        _lower, _Unsupported)


class KilnGraphFallback(UserWarning):
    """Warned when a graph runs eagerly because kiln cannot take it."""


class KilnStaticSizes(UserWarning):
    """Warned when a graph's model holds only for its call's sizes: torch.export
    could not trace its symbolic sizes, so each new size compiles again."""


# What every graph lowered in this process added up to (kiln.torch.stats()).
_STATS: Dict[str, float] = {}
_labels = itertools.count()


def reset_stats() -> None:
    """Zeroes the counts (and numbers graphs from torch_graph_0 again)."""
    global _labels
    _labels = itertools.count()
    _STATS.clear()
    _STATS.update(graphs=0, compiled=0, fallbacks=0, recompiles_for_weights=0,
                  compiles_for_sizes=0, calls=0, export_s=0.0, trace_s=0.0, onnx_s=0.0,
                  compile_s=0.0)


reset_stats()


def stats(wait: bool = False) -> Dict[str, Any]:
    """Counts of this process: `graphs` (Dynamo graphs handed to kiln), `compiled`
    (lowered and compiled by kiln), `fallbacks` (run eagerly), `calls`,
    `recompiles_for_weights` (a frozen weight or module scalar changed),
    `compiles_for_sizes` (a graph torch.export traced only at its call's
    sizes, compiled again for a new size), the
    seconds spent exporting to ONNX (`export_s`: `trace_s` in torch.export,
    `onnx_s` in torch.onnx's translation) and compiling (`compile_s`),
    and under `jit` the JIT's own statistics (kiln.jit_stats: compiles, cache
    hits, variants specialized in the background; `wait=True` lets those
    finish first)."""
    out: Dict[str, Any] = dict(_STATS)
    out["jit"] = jit_stats(wait)
    return out


# ---------------------------------------------------------------------------
# Options

_OPTION_NAMES = ("strict", "cache_dir", "backend", "precision", "weights", "group_size")
# torch.compile's modes. kiln's CUDA runs already replay a CUDA graph per shape
# (what reduce-overhead asks for), and it has no tuning search to widen (what
# max-autotune asks for): every mode compiles the same model.
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclasses.dataclass(frozen=True)
class _Options:
    strict: bool = False
    cache_dir: Optional[str] = None
    backend: str = "auto"  # auto: the inputs' device decides (CPU: host emulation)
    precision: str = ""  # kiln-compile --precision ("": fp32)
    weights: str = ""  # kiln-compile --weights ("": float; int8, int4: the frozen weights)
    group_size: int = 0  # kiln-compile --group-size (0: 128)

    @staticmethod
    def parse(mode: Optional[str], options: Optional[Dict[str, Any]]) -> "_Options":
        if mode not in _MODES:
            raise KilnError(f"kiln backend: mode {mode!r} is not one of "
                            f"{', '.join(m for m in _MODES if m)}")
        options = dict(options or {})
        unknown = sorted(set(options) - set(_OPTION_NAMES))
        if unknown:
            raise KilnError(f"kiln backend: unknown option {unknown[0]!r} "
                            f"(options: {', '.join(_OPTION_NAMES)})")
        backend = options.get("backend", "auto")
        if backend not in ("auto", "host", "cuda"):
            raise KilnError(f"kiln backend: option backend={backend!r} is not auto, host or cuda")
        precision = options.get("precision") or ""
        if precision not in ("", "fp32", "tf32", "fp16", "bf16"):
            raise KilnError(f"kiln backend: option precision={precision!r} is not fp32, tf32, "
                            "fp16 or bf16")
        weights = options.get("weights") or ""
        if weights not in ("", "float", "int8", "int4"):
            raise KilnError(f"kiln backend: option weights={weights!r} is not float, int8 or int4")
        group_size = options.get("group_size") or 0
        if not isinstance(group_size, int) or (group_size and (
                group_size < 16 or group_size > 65536 or group_size & (group_size - 1))):
            raise KilnError(f"kiln backend: option group_size={group_size!r} is not a power of 2 "
                            "from 16 to 65536")
        cache_dir = options.get("cache_dir")
        return _Options(strict=bool(options.get("strict", False)),
                        cache_dir=None if cache_dir is None else str(cache_dir), backend=backend,
                        precision=precision, weights=weights, group_size=group_size)


@dataclasses.dataclass
class _Compiled:
    """One kiln model of a graph, for one set of frozen weights."""
    model: Any
    inputs: List[_Input]
    output_names: List[str]
    # The frozen tensors it was compiled from, weakly: a key whose tensors
    # were freed (and whose id and address a new tensor reuses) is no match.
    weights: List[Any] = dataclasses.field(default_factory=list)


_GRAD_REASON = ("gradients are needed (kiln runs forward only: call it under torch.no_grad() "
                "or torch.inference_mode())")
# Lowering and compiling, and the counts: one thread at a time (the exporters
# swap process-wide state, stdout and warning filters, while they run).
_LOCK = threading.RLock()
# A graph whose weights change between calls this often stops freezing them
# and runs eagerly: each change would be a new export and compile (and a model
# the JIT keeps).
_MAX_WEIGHT_CHANGES = 4
# Models kept per graph, one per set of frozen weights (the first compiled is
# the first dropped): a module compiled once and applied to several layers of
# the same shapes (Dynamo gives them one graph).
_MODELS_PER_GRAPH = 8
# A graph torch.export traces only at its call's sizes compiles a model per
# size; past this many sizes it runs eagerly (Dynamo's own recompile_limit).
_MAX_SIZES = 8


class _KilnGraph:
    """What the backend returns for one Dynamo graph: kiln's model behind the
    graph's calling convention (the same arguments, a tuple of tensors).

    The graph is lowered and compiled at its first call, not inside the
    backend: torch.export traces the graph again, which must not happen while
    Dynamo is still building the frame's guards. A graph kiln cannot take runs
    eagerly from then on (or raises, when strict).

    Frozen weights are arguments too (Dynamo reuses the graph for any module
    of the same shapes), so each call keys its model by the frozen arguments'
    identity, storage and version: other weights, or the same written in
    place, compile another model rather than run stale values."""

    def __init__(self, gm: torch.fx.GraphModule, options: _Options, label: str,
                 keep_onnx: bool = False):
        self._gm = gm
        self._described = _describe(gm)
        self._options = options
        self._label = label
        self._keep_onnx = keep_onnx
        self._models: "collections.OrderedDict[Any, _Compiled]" = collections.OrderedDict()
        self._frozen_indices: Optional[List[int]] = None
        self._scalar_indices: List[int] = []
        self._weight_changes = 0
        # Set when torch.export could trace the graph only at its call's
        # sizes: models are then keyed by the inputs' shapes too.
        self._static_reason: Optional[str] = None
        self._sizes_compiled: set = set()
        self._ever_compiled = False
        self._eager = False
        self._warned_grad = False
        self.fallback_reason: Optional[str] = None  # why it runs eagerly
        self.backend_name: Optional[str] = None  # "host" or "cuda" once compiled
        self.onnx: Optional[bytes] = None  # the last model's ONNX, when keep_onnx

    def _identity(self, args: Sequence[Any]) -> Any:
        """Which tensors are frozen: one layer's weights, not another's."""
        return tuple(id(args[index]) for index in self._frozen_indices)

    def _state(self, args: Sequence[Any]) -> Any:
        """What those tensors hold now: where their data is, their versions
        (inference tensors have none), and the module scalars."""
        tensors = []
        for index in self._frozen_indices:
            t = args[index]
            tensors.append((t.data_ptr(), None if t.is_inference() else t._version))
        return tuple(tensors), tuple(args[index].item() for index in self._scalar_indices)

    def _sizes(self, args: Sequence[Any]) -> Any:
        """The tensor arguments' shapes, where models hold for one size only."""
        if self._static_reason is None:
            return None
        return tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor))

    def _build(self, args: Sequence[Any]) -> _Compiled:
        lowered = _lower(self._gm, self._described, args)
        device = lowered.device
        backend = self._options.backend
        if backend == "auto":
            backend = "cuda" if device.type == "cuda" else "host"
        if device.type not in ("cpu", "cuda"):
            raise _Unsupported(f"tensors on {device}, not the CPU or a CUDA device")
        if backend == "host" and device.type == "cuda":
            raise _Unsupported("backend='host' with tensors on a CUDA device")
        if backend == "cuda" and device.type == "cpu":
            raise _Unsupported("backend='cuda' with tensors on the CPU")
        start = time.perf_counter()
        try:
            model = _jit_compile(lowered.onnx, backend=backend, cache_dir=self._options.cache_dir,
                                 name=f"{self._label}.onnx",
                                 device=(device.index or 0) if device.type == "cuda" else 0,
                                 precision=self._options.precision or None,
                                 weights=self._options.weights or None,
                                 group_size=self._options.group_size or None)
        except KilnError as e:
            raise _Unsupported(str(e)) from e
        _STATS["compile_s"] += time.perf_counter() - start
        _STATS["trace_s"] += lowered.trace_s
        _STATS["onnx_s"] += lowered.onnx_s
        _STATS["export_s"] += lowered.trace_s + lowered.onnx_s
        self.backend_name = backend
        if self._keep_onnx:
            self.onnx = lowered.onnx
        if lowered.static_reason is not None and self._static_reason is None:
            self._static_reason = lowered.static_reason
            warnings.warn(f"kiln: {self._label} is compiled for its call's sizes only, and again "
                          f"for each new size: {lowered.static_reason}", KilnStaticSizes,
                          stacklevel=5)
        return _Compiled(model, lowered.inputs, [o.name for o in model.outputs])

    def _fall_back(self, reason: str) -> None:
        if self._options.strict:
            raise KilnError(f"kiln: {self._label}: {reason}")
        _STATS["fallbacks"] += 1
        self._eager = True
        self._models.clear()
        self.fallback_reason = reason
        warnings.warn(f"kiln: {self._label} runs eagerly: {reason}", KilnGraphFallback, stacklevel=4)

    def _found(self, key: Any, args: Sequence[Any]) -> Optional[_Compiled]:
        """The model kept for `key`, if its frozen tensors are these very ones."""
        compiled = self._models.get(key)
        if compiled is not None and all(
                ref() is args[index] for ref, index in zip(compiled.weights, self._frozen_indices)):
            return compiled
        return None

    def _model_for(self, args: Sequence[Any]) -> Optional[_Compiled]:
        """The model for these frozen arguments, compiled if new; None when the
        graph falls back to eager."""
        if self._frozen_indices is None:
            self._frozen_indices = [
                i for i, (info, a) in enumerate(zip(self._described, args))
                if isinstance(a, torch.Tensor) and _is_module_state(info)]
            self._scalar_indices = [
                i for i, (info, a) in enumerate(zip(self._described, args))
                if isinstance(a, torch.Tensor) and _is_module_scalar(info)]
        identity, state = self._identity(args), self._state(args)
        key = (identity, state, self._sizes(args))
        # Without the lock: a call of a compiled graph never waits for another
        # graph's compile (a dict read is atomic under the GIL).
        if (compiled := self._found(key, args)) is not None:
            return compiled
        with _LOCK:  # one thread lowers a graph; the others then find its model
            if (compiled := self._found(key, args)) is not None:
                return compiled
            if self._eager:
                return None
            # The same tensors holding other values (written in place, or
            # another .data) is a change; other tensors (another layer of the
            # same shapes) just another model, and so is another size where
            # models hold for one.
            sizes = self._sizes(args)
            if sizes is not None and sizes not in self._sizes_compiled:
                if len(self._sizes_compiled) >= _MAX_SIZES:
                    self._fall_back(f"it needed a model for more than {_MAX_SIZES} sizes "
                                    f"({self._static_reason})")
                    return None
            if any(k[0] == identity and k[1] != state for k in self._models):
                self._weight_changes += 1
                _STATS["recompiles_for_weights"] += 1
                if self._weight_changes > _MAX_WEIGHT_CHANGES:
                    self._fall_back(f"its weights changed between calls {self._weight_changes} "
                                    "times (kiln freezes weights into the model it compiles)")
                    return None
                for stale in [k for k in self._models if k[0] == identity and k[1] != state]:
                    del self._models[stale]
            try:
                compiled = self._build(args)
            except Exception as e:  # _Unsupported, or a failure of torch's or kiln's own
                self._fall_back(str(e) if isinstance(e, _Unsupported)
                                else f"{type(e).__name__}: {_first_line(e)}")
                return None
            compiled.weights = [weakref.ref(args[index]) for index in self._frozen_indices]
            if not self._models and not self._ever_compiled:
                _STATS["compiled"] += 1
            elif sizes is not None or self._static_reason is not None:
                _STATS["compiles_for_sizes"] += 1
            self._ever_compiled = True
            # The first build may be what found the model holds for one size.
            key = (identity, state, self._sizes(args))
            if key[2] is not None:
                self._sizes_compiled.add(key[2])
            self._models[key] = compiled
            while len(self._models) > _MODELS_PER_GRAPH:
                self._models.popitem(last=False)
            return compiled

    def __call__(self, *args: Any) -> Any:
        if self._eager:
            return self._gm.forward(*args)
        if torch.is_grad_enabled() and any(
                isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            # kiln runs forward only: gradients must flow, so this call is eager.
            if not self._warned_grad:
                self._warned_grad = True
                warnings.warn(f"kiln: {self._label} runs eagerly while {_GRAD_REASON}",
                              KilnGraphFallback, stacklevel=3)
            return self._gm.forward(*args)
        compiled = self._model_for(args)
        if compiled is None:
            return self._gm.forward(*args)
        _STATS["calls"] += 1
        feeds = {}
        for spec in compiled.inputs:
            tensor = args[spec.index]
            feeds[spec.name] = tensor if tensor.is_contiguous() else tensor.contiguous()
        outputs = compiled.model.run(feeds, dlpack=True)
        return tuple(torch.from_dlpack(outputs[name]) for name in compiled.output_names)


def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], mode: Optional[str] = None,
            options: Optional[Dict[str, Any]] = None,
            name: Optional[str] = None) -> Callable[..., Any]:
    """The Dynamo backend (`torch.compile(model, backend="kiln")`). `name`
    (torch.compile's) is accepted and unused: graphs are named torch_graph_N."""
    parsed = _Options.parse(mode, options)
    with _LOCK:
        _STATS["graphs"] += 1
        return _KilnGraph(gm, parsed, _next_label())


def _next_label() -> str:
    """torch_graph_N: N counts the graphs of this process (messages name them)."""
    return f"torch_graph_{next(_labels)}"

