"""One Dynamo graph as ONNX bytes for kiln: its weights frozen into constants,
its size arguments read from its tensors, through torch.export and torch.onnx
(docs/torch.md, "What happens to a graph")."""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import re
import time
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch


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
    # Why the model holds only for its call's sizes (torch.export refused the
    # graph's symbolic sizes), or None: it holds for every size kiln's
    # guards accept.
    static_reason: Optional[str] = None


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
    def export(dynamic_shapes):
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            # Tensors of their own: torch.export marks the ones it is given
            # dynamic (_dynamo_dynamic_indices), which a static export of the
            # same tensors would then follow.
            program = torch.export.export(module, tuple(e.detach() for e in examples),
                                          dynamic_shapes=dynamic_shapes, strict=False)
            # Functional: torch.export's training IR keeps in-place ops (a
            # training-mode BatchNorm's running statistics) that only the
            # functional program lists as mutations.
            return program.run_decompositions({})

    static_reason = None
    try:
        program = export(tuple(shapes))
        static_reason = _sized_for_example(program)
    except Exception as e:  # torch.export's errors are many kinds; one line of it
        if not any(shapes):
            raise _Unsupported(f"torch.export: {_first_line(e)}") from e
        static_reason = f"torch.export: {_first_line(e)}"
    if static_reason is not None:
        # A graph whose symbolic sizes torch.export cannot solve (AlexNet's
        # adaptive pool), or that the ONNX exporter translates for the
        # example's sizes only, is traced again at this call's sizes: a model
        # for those alone, which the caller keys by the inputs' shapes.
        try:
            program = export(None)
        except Exception as again:
            raise _Unsupported(f"torch.export: {_first_line(again)}") from again
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
    return _Lowered(onnx, inputs, devices.pop(), traced - start, done - traced, static_reason)


# Adaptive pools: torch.onnx translates one whose output is not a single
# element per channel into gathers over windows whose number and length it
# takes from the example's sizes, with no check: at another size the ONNX
# model reads out of range (onnxruntime fails on it as kiln does) or averages
# the wrong windows.
_ADAPTIVE_POOLS = {
    "aten.adaptive_avg_pool1d.default", "aten.adaptive_avg_pool2d.default",
    "aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool3d.default",
    "aten._adaptive_avg_pool3d.default", "aten.adaptive_max_pool1d.default",
    "aten.adaptive_max_pool2d.default", "aten.adaptive_max_pool3d.default",
}


def _sized_for_example(program: Any) -> Optional[str]:
    """Why `program`, exported with symbolic sizes, would be translated to
    ONNX for its example's sizes only, or None: an adaptive pool to more than
    one element per channel over symbolic spatial sizes."""
    for node in program.graph.nodes:
        if node.op != "call_function" or str(node.target) not in _ADAPTIVE_POOLS:
            continue
        sizes = node.args[1] if len(node.args) > 1 else ()
        value = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
        spatial = tuple(value.shape[-len(sizes):]) if value is not None and sizes else ()
        symbolic = any(isinstance(d, torch.SymInt) and not d.node.expr.is_number for d in spatial)
        if symbolic and any(int(s) != 1 for s in sizes):
            return (f"torch.onnx translates {node.target.__name__.split('.')[0]} to "
                    f"{tuple(int(s) for s in sizes)} for the example's sizes only")
    return None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    return line if len(line) <= 300 else line[:297] + "..."
