#!/usr/bin/env python3
"""Writes kiln.sample_tokens models (kiln's own MLIR: the op has no ONNX
form) with inputs and numpy's tokens by the op's rule (ReductionOps.td), in
the layout run_numpy_cases.py reads.

    make_sample_tokens_models.py OUT_DIR

    sample_small  logits [4, 3, 40] f32, one data set per way of choosing:
                  greedy (ties to the first index, -0 and +0 too, a NaN row
                  -1, -inf logits), top_k alone (ties at the k-th all stay), top_p
                  alone, both with a row that is all -inf and one with +inf
                  (-1 each), top_k 1 with a temperature (the argmax)
    sample_wide   logits [2, 1, 1000] f16 (256 threads' chunks of 4 tokens,
                  the loads narrow), top_k and top_p together
    sample_dynamic  logits [b, s, 40], no data sets (calls with s = 0)

Each draw (uniform) is the middle of its token's share of the candidates'
weight, and each top_p is away from every running share, so that float32
rounding cannot move a choice: the script checks both margins.
"""
import os
import sys

import numpy as np

from make_control_flow_models import save_set

MARGIN = 1e-4


def rule(x, temperature, top_k, top_p, u=None):
    """The op's choice from one row in float64 (and with u None, the
    candidates and their running shares for choosing u)."""
    x = x.astype(np.float64)
    if np.isnan(x).any():
        return -1, None
    argmax = int(np.argmax(x))
    if temperature <= 0 or top_k == 1 or top_p <= 0:
        return argmax, None
    mx = x[argmax]
    if not np.isfinite(mx):
        return -1, None
    order = np.sort(x)[::-1]
    threshold = order[top_k - 1] if 0 < top_k < len(x) else -np.inf
    weight = lambda l: np.exp((l - mx) / temperature)
    if top_p < 1:
        kept = order[order >= threshold]
        shares = np.cumsum(weight(kept)) / weight(kept).sum()
        assert np.min(np.abs(shares - top_p)) > MARGIN, "top_p too close to a share"
        threshold = kept[np.argmax(shares >= top_p)]
    candidates = np.nonzero(x >= threshold)[0]
    running = np.cumsum(weight(x[candidates]))
    shares = running / running[-1]
    if u is None:
        return candidates, shares
    pick = int(np.argmax(shares > u))
    lo = shares[pick - 1] if pick else 0.0
    assert min(u - lo, shares[pick] - u) > MARGIN, "a draw too close to a boundary"
    return int(candidates[pick]), None


def draws(logits, positions, temperature, top_k, top_p, rng):
    """A draw per row in the middle of a random candidate's share, and the
    tokens."""
    uniform, tokens = [], []
    for b, p in enumerate(positions):
        row = logits[b, p].astype(np.float64)
        candidates, shares = rule(row, temperature, top_k, top_p)
        u = 0.5
        if shares is not None:
            j = int(rng.integers(len(candidates)))
            u = ((shares[j - 1] if j else 0.0) + shares[j]) / 2
        uniform.append(u)
        tokens.append(rule(row, temperature, top_k, top_p, u)[0] if shares is not None
                      else candidates)
    return np.array(uniform, np.float32), np.array(tokens, np.int64)


def write_model(out, name, shape, element):
    """The op alone; `shape` may name symbols (b, s) for dynamic dims."""
    b, s, v = shape
    if isinstance(b, str):
        logits = f"tensor<?x?x{v}x{element}, #kiln.dims<[{b}, {s}, {v}]>>"
        row = f"tensor<?x{{}}, #kiln.dims<[{b}]>>"
    else:
        logits = f"tensor<{b}x{s}x{v}x{element}>"
        row = f"tensor<{b}x{{}}>"
    i64, f32 = row.format("i64"), row.format("f32")
    text = f"""func.func @main(%logits: {logits} {{kiln.name = "logits"}}, %positions: {i64} {{kiln.name = "positions"}}, %uniform: {f32} {{kiln.name = "uniform"}}, %temperature: tensor<f32> {{kiln.name = "temperature"}}, %top_k: tensor<i64> {{kiln.name = "top_k"}}, %top_p: tensor<f32> {{kiln.name = "top_p"}}) -> ({i64} {{kiln.name = "tokens"}}) {{
  %t = kiln.sample_tokens %logits, %positions, %uniform, %temperature, %top_k, %top_p : ({logits}, {i64}, {f32}, tensor<f32>, tensor<i64>, tensor<f32>) -> {i64}
  return %t : {i64}
}}
"""
    with open(os.path.join(out, name + ".mlir"), "w") as f:
        f.write(text)


def save(out, name, n, logits, positions, temperature, top_k, top_p, rng, stored=None):
    uniform, tokens = draws(logits, positions, temperature, top_k, top_p, rng)
    save_set(out, name, n, {
        "logits": logits if stored is None else stored, "positions": positions,
        "uniform": uniform, "temperature": np.array(temperature, np.float32),
        "top_k": np.array(top_k, np.int64), "top_p": np.array(top_p, np.float32)}, [tokens])


def small(out, rng):
    shape = (4, 3, 40)
    write_model(out, "sample_small", shape, "f32")
    positions = np.array([2, 0, 1, 2], np.int64)

    def logits():
        return (rng.standard_normal(shape) * 2).astype(np.float32)

    x = logits()
    x[0, 2, [7, 19]] = 9.0          # equal maxima: the first
    x[1, 0, 3] = np.nan             # a NaN: -1
    x[2, 1, :20] = -np.inf          # masked logits
    x[3, 2] = -np.abs(x[3, 2]) - 1
    x[3, 2, [3, 5]] = [-0.0, 0.0]   # -0 and +0 are equal: the first
    save(out, "sample_small", 0, x, positions, 0.0, 0, 1.0, rng)
    x = logits()
    x[0, 2] = np.minimum(x[0, 2], 3.0)
    x[0, 2, [1, 2, 3]] = 5.0
    x[0, 2, [4, 9, 30]] = 3.5       # ties at the 4th place all stay (k = 4: 6 candidates)
    save(out, "sample_small", 1, x, positions, 0.7, 4, 1.0, rng)
    save(out, "sample_small", 2, logits(), positions, 1.3, 0, 0.6, rng)
    x = logits()
    x[1, 0] = -np.inf               # nothing to choose from: -1
    x[3, 2, 5] = np.inf             # an infinite logit: -1
    save(out, "sample_small", 3, x, positions, 1.0, 6, 0.55, rng)
    save(out, "sample_small", 4, logits(), positions, 0.8, 1, 0.9, rng)


def wide(out, rng):
    shape = (2, 1, 1000)
    write_model(out, "sample_wide", shape, "f16")
    # f16 storage: numpy decides on the values the kernel loads.
    x = (rng.standard_normal(shape) * 3).astype(np.float16)
    save(out, "sample_wide", 0, x.astype(np.float32), np.zeros(2, np.int64), 0.9, 50, 0.8, rng,
         stored=x)


def dynamic(out):
    """[b, s, 40] for calls of any shape (no data sets: the test makes its
    own, S = 0 among them)."""
    write_model(out, "sample_dynamic", ("b", "s", 40), "f32")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(23)
    small(out, rng)
    wide(out, rng)
    dynamic(out)


if __name__ == "__main__":
    main()
