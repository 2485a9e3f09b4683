"""kiln.export: a module compiled ahead of time into what kiln-compile writes
(.kiln or .so), through torch.onnx with the Dims' names."""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import tempfile
import warnings
from typing import Any, Dict, Optional, Tuple

import torch

from .. import KilnError
from ._backend import _LOCK
from ._lowering import _first_line


def _kiln_compile_path() -> str:
    """kiln-compile: the wheel's own (kiln/bin/), else $KILN_BIN's, else PATH's."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # kiln/
    here = os.path.join(package, "bin", "kiln-compile")
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
