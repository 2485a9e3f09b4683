"""kiln.torch.explain: Dynamo's graphs and graph breaks, and per graph what kiln
made of it (kiln-compile --explain's lines, or why it runs eagerly)."""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from ._backend import (_GRAD_REASON, _STATS, KilnGraphFallback, _KilnGraph, _next_label,
                       _Options)


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

    from .. import explain as kiln_explain

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
                                cache_dir=parsed.cache_dir, weights=parsed.weights or None,
                                group_size=parsed.group_size or None)
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

