"""kiln behind PyTorch's own interface: `torch.compile(model, backend="kiln")`.

    import torch
    compiled = torch.compile(model, backend="kiln", dynamic=True)
    y = compiled(x)                       # every batch and sequence length: one graph

The backend is registered through the `torch_dynamo_backends` entry point, so
`backend="kiln"` works without importing kiln first. Per graph Dynamo hands
over, it:

- freezes the module's parameters and buffers into constants (their version
  counters are checked on each call: a weight changed in place recompiles);
- replaces Dynamo's size arguments (SymInt placeholders) by the sizes of the
  tensors they came from, and gives every symbolic dim a `torch.export.Dim` of
  the symbol's name and range, so one kiln model serves every size Dynamo's
  guards let through;
- exports the graph to ONNX (`torch.onnx.export(..., dynamo=True)`) and
  compiles it in-process with libkiln_jit (disk cache, variants specialized for
  new shapes in the background);
- returns a callable that passes torch tensors to kiln and kiln's outputs back
  through DLPack, without copies (CPU tensors run in host emulation, CUDA tensors
  on their device).

A graph kiln cannot take (an op the exporter or kiln refuses, an input it
mutates, a non-tensor output) runs eagerly, with one warning line naming the
graph and the reason; `options={"strict": True}` raises instead. See
docs/torch.md for the options, what maps to what and the statistics
(`kiln.torch.stats()`).
"""
from __future__ import annotations

import collections
import contextlib
import copy
import dataclasses
import io
import itertools
import re
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from . import KilnError
from . import compile as _jit_compile
from . import jit_stats

__all__ = ["backend", "explain", "export", "stats", "reset_stats", "Explanation",
           "KilnGraphFallback"]


class KilnGraphFallback(UserWarning):
    """Warned when a graph runs eagerly because kiln cannot take it."""


# What every graph lowered in this process added up to (kiln.torch.stats()).
_STATS: Dict[str, float] = {}
_labels = itertools.count()


def reset_stats() -> None:
    """Zeroes the counts (and numbers graphs from torch_graph_0 again)."""
    global _labels
    _labels = itertools.count()
    _STATS.clear()
    _STATS.update(graphs=0, compiled=0, fallbacks=0, recompiles_for_weights=0, calls=0,
                  export_s=0.0, trace_s=0.0, onnx_s=0.0, compile_s=0.0)


reset_stats()


def stats(wait: bool = False) -> Dict[str, Any]:
    """Counts of this process: `graphs` (Dynamo graphs handed to kiln), `compiled`
    (lowered and compiled by kiln), `fallbacks` (run eagerly), `calls`,
    `recompiles_for_weights` (a frozen weight or module scalar changed), the
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

_OPTION_NAMES = ("strict", "cache_dir", "backend", "precision")
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
        cache_dir = options.get("cache_dir")
        return _Options(strict=bool(options.get("strict", False)),
                        cache_dir=None if cache_dir is None else str(cache_dir), backend=backend,
                        precision=precision)


# ---------------------------------------------------------------------------
# Lowering one Dynamo graph


class _Unsupported(Exception):
    """A graph kiln does not take, with the one-line reason."""


@dataclasses.dataclass
class _Input:
    """Where each kiln input comes from in the Dynamo graph's arguments."""
    name: str
    index: int


@dataclasses.dataclass
class _Lowered:
    onnx: bytes
    inputs: List[_Input]
    device: torch.device
    trace_s: float  # torch.export and its functionalization
    onnx_s: float  # torch.onnx's translation to ONNX and the serialized bytes


@dataclasses.dataclass
class _Placeholder:
    """What Dynamo says of one graph argument, read when the backend is called
    (Dynamo drops the node's "grapharg" once the frame is compiled)."""
    source: str  # "L['x']", "L['self']._modules['fc']._parameters['weight']", ...
    as_tensor: bool  # a Python number Dynamo passes as a 0-d tensor
    fake: Any  # the FakeTensor or SymInt Dynamo traced with


def _describe(gm: torch.fx.GraphModule) -> List[_Placeholder]:
    out = []
    for node in gm.graph.find_nodes(op="placeholder"):
        grapharg = node.meta.get("grapharg")
        source = getattr(grapharg, "source", None)
        out.append(_Placeholder(source.name if source is not None and hasattr(source, "name") else "",
                                bool(getattr(grapharg, "pass_arg_as_tensor", False)),
                                node.meta.get("example_value")))
    return out


def _is_module_state(info: _Placeholder) -> bool:
    """A parameter or buffer of a module: frozen into a constant. (A Parameter
    passed as a function's argument is an input like any tensor.)"""
    return "._parameters[" in info.source or "._buffers[" in info.source


def _is_module_scalar(info: _Placeholder) -> bool:
    """A module's float or int attribute (BatchNorm's eps, a scale) that Dynamo
    passes as a 0-d tensor so that a new value is no recompile: frozen into a
    constant as well (a call with another value compiles again)."""
    return info.as_tensor and (info.source.startswith("L['self']") or "._modules[" in info.source)


def _input_name(node: torch.fx.Node, info: _Placeholder, taken: set) -> str:
    """The user's argument name where Dynamo's source gives it (L['x'] -> x)."""
    match = re.fullmatch(r"L\['([A-Za-z_][A-Za-z0-9_]*)'\]", info.source)
    base = match.group(1) if match else re.sub(r"\W", "_", node.name).strip("_") or "input"
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def _storage_of(tensor: Any) -> Any:
    """A key for a (fake) tensor's storage: equal for views of one tensor."""
    from torch.multiprocessing.reductions import StorageWeakRef

    try:
        return StorageWeakRef(tensor.untyped_storage())
    except Exception:  # a tensor without storage (a subclass): no alias found
        return object()


def _symbol_of(size: Any) -> Any:
    """The sympy symbol of a SymInt that is a plain symbol, else None."""
    if isinstance(size, torch.SymInt):
        expr = size.node.expr
        if getattr(expr, "is_Symbol", False):
            return expr
    return None


def _lower(gm: torch.fx.GraphModule, described: List[_Placeholder],
           example_inputs: Sequence[Any]) -> _Lowered:
    """The graph as ONNX bytes over its tensor inputs, with its weights frozen."""
    graph = gm.graph
    placeholders = list(graph.find_nodes(op="placeholder"))
    if not len(placeholders) == len(described) == len(example_inputs):
        raise _Unsupported(f"{len(placeholders)} placeholders for {len(example_inputs)} inputs")
    # A copy: the original stays as Dynamo gave it, for the eager fallback.
    module = torch.fx.GraphModule(gm, copy.deepcopy(graph))
    new_graph = module.graph
    new_placeholders = list(new_graph.find_nodes(op="placeholder"))
    last = new_placeholders[-1] if new_placeholders else None

    inputs: List[_Input] = []
    sources: Dict[str, str] = {}  # frozen buffer -> where Dynamo found it
    examples: List[torch.Tensor] = []
    shapes: List[Any] = []
    taken: set = set()
    sizes: Dict[Any, Tuple[torch.fx.Node, int]] = {}  # symbol -> (tensor placeholder, dim)
    devices = set()
    # Tensor inputs first: size placeholders are rewritten to read them.
    for index, (node, info, example) in enumerate(zip(new_placeholders, described, example_inputs)):
        if not isinstance(example, torch.Tensor):
            continue
        if _is_module_state(info) or _is_module_scalar(info):
            continue
        fake = info.fake if info.fake is not None else example
        name = _input_name(node, info, taken)
        inputs.append(_Input(name, index))
        examples.append(example.detach())
        devices.add(example.device)
        spec = {}
        for d, size in enumerate(fake.shape):
            symbol = _symbol_of(size)
            if symbol is not None:
                # Dim.DYNAMIC, not a Dim of Dynamo's symbol and range: the export
                # finds the equalities and bounds the graph itself implies (a
                # stem's minimum image size), and fails, rather than silently
                # specializing, where the graph needs one size.
                spec[d] = torch.export.Dim.DYNAMIC
                sizes.setdefault(symbol, (node, d))
            elif isinstance(size, torch.SymInt) and not size.node.expr.is_number:
                raise _Unsupported(f"input '{name}' dim {d} is the expression {size}, not a size "
                                   "symbol of its own")
        shapes.append(spec or None)
    for index, (node, info, example) in enumerate(zip(new_placeholders, described, example_inputs)):
        if isinstance(example, torch.Tensor) and _is_module_state(info):
            attribute = f"_kiln_frozen_{index}"
            module.register_buffer(attribute, example.detach(), persistent=False)
            sources[attribute] = info.source or node.name
            devices.add(example.device)
            with new_graph.inserting_after(last):
                constant = new_graph.get_attr(attribute)
            node.replace_all_uses_with(constant)
            new_graph.erase_node(node)
        elif isinstance(example, torch.Tensor) and _is_module_scalar(info):
            # The Python number itself, where Dynamo's graph passes it on
            # (batch_norm's eps): a 0-d tensor there would be read with .item()
            # while exporting, a value the export cannot know.
            value = example.item()
            for user in list(node.users):
                if user.op == "call_method" and user.target == "item":
                    for reader in list(user.users):
                        reader.args = torch.fx.node.map_aggregate(
                            reader.args, lambda a: value if a is user else a)
                        reader.kwargs = torch.fx.node.map_aggregate(
                            reader.kwargs, lambda a: value if a is user else a)
                    new_graph.erase_node(user)
                    continue
                user.args = torch.fx.node.map_aggregate(user.args, lambda a: value if a is node else a)
                user.kwargs = torch.fx.node.map_aggregate(user.kwargs,
                                                          lambda a: value if a is node else a)
            new_graph.erase_node(node)
        elif isinstance(example, torch.Tensor):
            continue
        elif isinstance(example, (torch.SymInt, int)) and not node.users:
            # A size or stride Dynamo passes that nothing reads (a sliced
            # input's stride): kiln's inputs are contiguous anyway.
            new_graph.erase_node(node)
        elif isinstance(example, (torch.SymInt, int)):
            symbol = _symbol_of(info.fake if info.fake is not None else example)
            if symbol is None or symbol not in sizes:
                raise _Unsupported(f"argument '{info.source or node.name}' is an integer "
                                   "that is not a size of a tensor input")
            tensor, d = sizes[symbol]
            with new_graph.inserting_after(last):
                size = new_graph.call_function(torch.ops.aten.sym_size.int, (tensor, d))
            node.replace_all_uses_with(size)
            new_graph.erase_node(node)
        else:
            raise _Unsupported(f"argument '{info.source or node.name}' is a "
                               f"{type(example).__name__}, not a tensor")
    if len(devices) > 1:
        raise _Unsupported(f"tensors on {len(devices)} devices ({', '.join(map(str, devices))})")
    if not inputs:
        raise _Unsupported("the graph has no tensor inputs")
    output = next(iter(new_graph.find_nodes(op="output")))
    results = output.args[0] if isinstance(output.args[0], (tuple, list)) else (output.args[0],)
    input_storages = {}
    for spec in inputs:
        fake = described[spec.index].fake
        if isinstance(fake, torch.Tensor):
            input_storages[_storage_of(fake)] = spec.name
    for k, result in enumerate(results):
        value = result.meta.get("example_value") if isinstance(result, torch.fx.Node) else result
        if not isinstance(value, torch.Tensor):
            raise _Unsupported(f"output {k} is a {type(value).__name__}, not a tensor")
        aliased = input_storages.get(_storage_of(value))
        if aliased is not None:
            # kiln returns new buffers: a view would lose its tie to the input.
            raise _Unsupported(f"output {k} is a view of input '{aliased}', which kiln would "
                               "return as a copy")
    new_graph.lint()
    module.recompile()

    start = time.perf_counter()
    # The exporters' own chatter (warnings, a failing graph printed whole) is
    # not the user's: a failure is one line in the fallback warning.
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            program = torch.export.export(module, tuple(examples), dynamic_shapes=tuple(shapes),
                                          strict=False)
            # Functional: torch.export's training IR keeps in-place ops (a
            # training-mode BatchNorm's running statistics) that only the
            # functional program lists as mutations.
            program = program.run_decompositions({})
    except Exception as e:  # torch.export's errors are many kinds; one line of it
        raise _Unsupported(f"torch.export: {_first_line(e)}") from e
    traced = time.perf_counter()
    # The ONNX exporter names values after the program's nodes ("linear",
    # "mul"): an input named like one would be defined twice.
    node_names = {n.name for n in program.graph.nodes if n.op != "placeholder"}
    for spec in inputs:
        while spec.name in node_names:
            spec.name += "_input"
    signature = program.graph_signature
    mutated = list(signature.buffers_to_mutate.values()) + \
        list(signature.user_inputs_to_mutate.values())
    if mutated:
        what = sources.get(mutated[0], mutated[0])
        raise _Unsupported(f"it writes to its input or buffer {what} in place (kiln would not)")
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            exported = torch.onnx.export(program, tuple(examples), dynamo=True, verbose=False,
                                         input_names=[i.name for i in inputs],
                                         external_data=False, optimize=True)
    except Exception as e:
        raise _Unsupported(f"torch.onnx.export: {_first_line(e)}") from e
    onnx = exported.model_proto.SerializeToString()
    done = time.perf_counter()
    return _Lowered(onnx, inputs, devices.pop(), traced - start, done - traced)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    return line if len(line) <= 300 else line[:297] + "..."


# ---------------------------------------------------------------------------
# The compiled graph


@dataclasses.dataclass
class _Compiled:
    """One kiln model of a graph, for one set of frozen weights."""
    model: Any
    inputs: List[_Input]
    output_names: List[str]
    onnx: Optional[bytes]  # kept only for explain
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
                                 precision=self._options.precision or None)
        except KilnError as e:
            raise _Unsupported(str(e)) from e
        _STATS["compile_s"] += time.perf_counter() - start
        _STATS["trace_s"] += lowered.trace_s
        _STATS["onnx_s"] += lowered.onnx_s
        _STATS["export_s"] += lowered.trace_s + lowered.onnx_s
        self.backend_name = backend
        if self._keep_onnx:
            self.onnx = lowered.onnx
        return _Compiled(model, lowered.inputs, [o.name for o in model.outputs],
                         lowered.onnx if self._keep_onnx else None)

    def _fall_back(self, reason: str) -> None:
        if self._options.strict:
            raise KilnError(f"kiln: {self._label}: {reason}")
        _STATS["fallbacks"] += 1
        self._eager = True
        self._models.clear()
        self.fallback_reason = reason
        warnings.warn(f"kiln: {self._label} runs eagerly: {reason}", KilnGraphFallback, stacklevel=4)

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
        key = (identity, state)
        compiled = self._models.get(key)
        # Without the lock: a call of a compiled graph never waits for another
        # graph's compile (a dict read is atomic under the GIL).
        if compiled is not None and all(
                ref() is args[index] for ref, index in zip(compiled.weights, self._frozen_indices)):
            return compiled
        with _LOCK:  # one thread lowers a graph; the others then find its model
            compiled = self._models.get(key)
            if compiled is not None and all(
                    ref() is args[index]
                    for ref, index in zip(compiled.weights, self._frozen_indices)):
                return compiled
            if self._eager:
                return None
            # The same tensors holding other values (written in place, or
            # another .data) is a change; other tensors (another layer of the
            # same shapes) just another model.
            if any(k[0] == identity for k in self._models):
                self._weight_changes += 1
                _STATS["recompiles_for_weights"] += 1
                if self._weight_changes > _MAX_WEIGHT_CHANGES:
                    self._fall_back(f"its weights changed between calls {self._weight_changes} "
                                    "times (kiln freezes weights into the model it compiles)")
                    return None
                for stale in [k for k in self._models if k[0] == identity]:
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
            self._ever_compiled = True
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


# ---------------------------------------------------------------------------
# explain


@dataclasses.dataclass
class GraphExplanation:
    """One Dynamo graph as kiln took it."""
    name: str  # torch_graph_N, as warnings and kiln's messages name it
    ops: int  # the FX graph's call nodes
    compiled: bool  # False: it runs eagerly
    fallback_reason: Optional[str]
    kiln: str  # kiln-compile --explain's lines for it (empty when not compiled)


@dataclasses.dataclass
class Explanation:
    """kiln.torch.explain's answer: Dynamo's graphs and graph breaks, and per
    graph what kiln made of it. str() gives the report."""
    graphs: List[GraphExplanation]
    break_reasons: List[str]  # Dynamo's, "reason (file:line)"

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    def __str__(self) -> str:
        lines = [f"Dynamo: {len(self.graphs)} graph{'s' if len(self.graphs) != 1 else ''}, "
                 f"{len(self.break_reasons)} graph break{'s' if len(self.break_reasons) != 1 else ''}"]
        lines += [f"  graph break: {reason}" for reason in self.break_reasons]
        for graph in self.graphs:
            if graph.compiled:
                lines.append(f"{graph.name} ({graph.ops} ops): kiln")
                lines += ["  " + line for line in graph.kiln.splitlines()]
            else:
                lines.append(f"{graph.name} ({graph.ops} ops): eager: {graph.fallback_reason}")
        return "\n".join(lines)


def explain(model: Callable[..., Any], *args: Any, options: Optional[Dict[str, Any]] = None,
            dynamic: Optional[bool] = True, **kwargs: Any) -> Explanation:
    """Runs `model(*args, **kwargs)` once under torch.compile with the kiln backend
    and says what happened: Dynamo's graphs and the reasons for its graph breaks,
    and per graph kiln's own graph breaks, size reads and guards (what
    `kiln-compile --explain` prints), or why the graph runs eagerly. Like
    torch._dynamo.explain, it resets Dynamo's caches first."""
    from torch._dynamo.backends.debugging import ExplainWithBackend

    from . import explain as kiln_explain

    parsed = _Options.parse(None, options)
    graphs: List[_KilnGraph] = []

    def recording(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        graph = _KilnGraph(gm, parsed, _next_label(), keep_onnx=True)
        _STATS["graphs"] += 1
        graphs.append(graph)
        return graph

    torch._dynamo.reset()
    explaining = ExplainWithBackend(recording)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KilnGraphFallback)
        torch.compile(model, backend=explaining, dynamic=dynamic)(*args, **kwargs)
    torch._dynamo.reset()
    dynamo = explaining.output()
    out = []
    for graph, gm in zip(graphs, dynamo.graphs):
        ops = sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
        text = ""
        compiled = graph.fallback_reason is None and graph.onnx is not None
        reason = graph.fallback_reason
        if compiled:
            text = kiln_explain(graph.onnx, backend=graph.backend_name,
                                name=f"{graph._label}.onnx", precision=parsed.precision or None,
                                cache_dir=parsed.cache_dir)
        elif reason is None:
            reason = _GRAD_REASON if graph._warned_grad else "it was not called"
        out.append(GraphExplanation(graph._label, ops, compiled, reason, text))
    reasons = []
    for reason in dynamo.break_reasons:
        where = ""
        if reason.user_stack:
            frame = reason.user_stack[-1]
            where = f" ({frame.filename}:{frame.lineno})"
        reasons.append(f"{reason.reason.strip().splitlines()[0]}{where}")
    return Explanation(out, reasons)


# ---------------------------------------------------------------------------
# export: a module ahead of time, to what kiln-compile writes


def _kiln_compile_path() -> str:
    """kiln-compile: the wheel's own (kiln/bin/), else $KILN_BIN's, else PATH's."""
    import os
    import shutil

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kiln-compile")
    candidates = [here]
    if os.environ.get("KILN_BIN"):
        candidates.append(os.path.join(os.environ["KILN_BIN"], "kiln-compile"))
    on_path = shutil.which("kiln-compile")
    if on_path:
        candidates.append(on_path)
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise KilnError("kiln.export needs kiln-compile: this kiln package has none in kiln/bin/, "
                    "and neither $KILN_BIN nor PATH has one")


def _buckets_flag(buckets: Any) -> str:
    """--buckets' spelling of `buckets`: a string as kiln-compile takes it, or
    {"batch": [1, 8], "seq": range(128, 513, 64)}."""
    if isinstance(buckets, str):
        return buckets
    if isinstance(buckets, dict):
        parts = []
        for name, values in buckets.items():
            values = list(values)
            if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                raise KilnError(f"kiln.export: buckets[{name!r}] must be a non-empty list of ints")
            parts.append(f"{name}={','.join(str(v) for v in values)}")
        return ";".join(parts)
    raise KilnError(f"kiln.export: buckets must be a string or a dict of lists, not "
                    f"{type(buckets).__name__}")


def _dim_ranges(dynamic_shapes: Any) -> Dict[str, Tuple[int, int]]:
    """Each named torch.export.Dim with a finite maximum: kiln-compile's
    --dynamic NAME=MIN..MAX (a call outside it fails with kiln's guard)."""
    ranges: Dict[str, Tuple[int, int]] = {}

    def visit(spec: Any) -> None:
        if isinstance(spec, dict):
            for value in spec.values():
                visit(value)
        elif isinstance(spec, (list, tuple)):
            for value in spec:
                visit(value)
        elif hasattr(spec, "__name__") and hasattr(spec, "max") and hasattr(spec, "min") and \
                str(spec.__name__).isidentifier():  # a derived Dim (2*seq) has no range of its own
            high = spec.max
            if isinstance(high, int) and high < 2 ** 62:
                ranges[spec.__name__] = (max(int(spec.min), 0), int(high))

    visit(dynamic_shapes)
    return ranges


def export(module: torch.nn.Module, args: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]] = None,
           *, path: Any, dynamic_shapes: Any = None, buckets: Any = None,
           precision: Optional[str] = None, arch: Optional[str] = None,
           cache_dir: Optional[str] = None) -> str:
    """Compiles `module` ahead of time into what kiln-compile writes: `path`
    ending in .kiln (an artifact: kiln.load, kiln-run, Triton) or .so (a shared
    object an application links, needing only libkiln_runtime).

    The module goes through torch.export (with `dynamic_shapes`, whose
    `torch.export.Dim`s name kiln's symbols: Dim("batch") is the symbol batch in
    kiln's messages, guards and --buckets) and torch.onnx to kiln-compile.
    `buckets` ("batch=1,8;seq=128..512/64", or {"batch": [1, 8]}) adds
    variants compiled for those sizes; `precision` is kiln-compile's
    (fp32, tf32, fp16, bf16); `arch` its --arch (default sm_80,sm_90);
    `cache_dir` the kernel cache. A Dim with a finite max becomes
    --dynamic NAME=MIN..MAX. Returns the path written; raises kiln.KilnError
    with the first error's line."""
    import os
    import subprocess
    import tempfile

    path = os.fspath(path)
    if not isinstance(args, tuple):
        args = (args,)
    if not (path.endswith(".kiln") or path.endswith(".so")):
        raise KilnError(f"kiln.export: path '{path}' must end in .kiln or .so")
    compiler = _kiln_compile_path()
    try:
        with _LOCK, warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            program = torch.onnx.export(module, args, kwargs=kwargs, dynamo=True,
                                        verbose=False, dynamic_shapes=dynamic_shapes,
                                        external_data=False, optimize=True)
    except Exception as e:
        raise KilnError(f"kiln.export: torch.onnx.export: {_first_line(e)}") from None
    exported = getattr(program, "exported_program", None)
    if exported is not None:
        signature = exported.graph_signature
        mutated = list(signature.buffers_to_mutate.values()) + \
            list(signature.user_inputs_to_mutate.values())
        if mutated:
            raise KilnError(f"kiln.export: the module writes to its input or buffer "
                            f"'{mutated[0]}' in place, which a kiln model would not")
    stem = os.path.splitext(os.path.basename(path))[0] or "model"
    with tempfile.TemporaryDirectory(prefix="kiln-export-") as folder:
        model = os.path.join(folder, f"{stem}.onnx")
        # Weights past protobuf's 2 GB go to a data file beside the model,
        # where kiln-compile reads them.
        program.save(model)
        command = [compiler, model, "-o", path]
        if buckets is not None:
            command += ["--buckets", _buckets_flag(buckets)]
        for name, (low, high) in sorted(_dim_ranges(dynamic_shapes).items()):
            command += ["--dynamic", f"{name}={low}..{high}"]
        if precision is not None:
            command += ["--precision", str(precision)]
        if arch is not None:
            command += ["--arch", str(arch)]
        if cache_dir is not None:
            command += ["--cache-dir", os.fspath(cache_dir)]
        done = subprocess.run(command, capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        first = next((line for line in lines if "error" in line), lines[0] if lines else
                     f"kiln-compile exited with {done.returncode}")
        raise KilnError(f"kiln.export: {first.replace(model, stem + '.onnx')}")
    return path
