"""kiln behind PyTorch's own interface: `torch.compile(model, backend="kiln")`.

    import torch
    compiled = torch.compile(model, backend="kiln", dynamic=True)
    y = compiled(x)                       # every batch and sequence length: one graph

The backend is registered through the `torch_dynamo_backends` entry point, so
`backend="kiln"` works without importing kiln first. Per graph Dynamo hands
over, it:

- freezes the module's parameters and buffers into constants, keeping a model
  per set of frozen tensors (Dynamo reuses a graph for every module of the
  same shapes) and compiling again when they are rewritten;
- replaces Dynamo's size arguments (SymInt placeholders) by the sizes of the
  tensors they came from and exports each symbolic dim as `Dim.DYNAMIC`, so
  one kiln model serves every size Dynamo's guards let through;
- exports the graph through torch.export and torch.onnx and compiles it
  in-process with libkiln_jit (disk cache, variants specialized for new shapes
  in the background), at the graph's first call;
- returns a callable that passes torch tensors to kiln and kiln's outputs back
  through DLPack, without copies (CPU tensors run in host emulation, CUDA tensors
  on their device).

A graph whose symbolic sizes torch.export cannot trace (AlexNet's adaptive
pool) is traced and compiled at each call's sizes instead, with one
`KilnStaticSizes` warning (up to 8 sizes, then eagerly). A graph kiln cannot
take (an op the exporter or kiln refuses, an input or
buffer it writes, an output that views an input, a non-tensor output) runs
eagerly, with one warning line naming the graph and the reason, and so do calls
that need gradients; `options={"strict": True}` raises instead. Also here:
`explain` (Dynamo's graph breaks and kiln's per graph), `export` (a module ahead
of time to a .kiln or .so) and `stats`. docs/torch.md says what maps to what.
"""
from ._backend import KilnGraphFallback, KilnStaticSizes, backend, reset_stats, stats
from ._explain import Explanation, GraphExplanation, explain
from ._export import export

__all__ = ["backend", "explain", "export", "stats", "reset_stats", "Explanation",
           "GraphExplanation", "KilnGraphFallback", "KilnStaticSizes"]
