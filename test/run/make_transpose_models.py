#!/usr/bin/env python3
"""Writes transposes that move the innermost dim, with inputs and numpy's
outputs for run_numpy_cases.py: they run through 32x32 shared-memory tiles
of the input dim that becomes the result's innermost against the input's
innermost, every other dim a batch of tiles, in 128-bit vectors when both
dims are known multiples of the width (codegen/CudaEmitter.cpp
emitTiledTranspose).

    make_transpose_models.py OUT_DIR

    tr_nhwc      x [n, 40, 5, 33] -> [0, 2, 3, 1] (NCHW to NHWC)
    tr_nchw      x [n, 5, 33, 40] -> [0, 3, 1, 2] (NHWC to NCHW)
    tr_heads     x [n, 37, 4, 16] -> [0, 2, 3, 1] (a head split with K
                 transposed: [B, S, H, D] -> [B, H, D, S])
    tr_2d        x [n, 70] -> [1, 0]
    tr_rotate    x [3, n, 34] -> [2, 0, 1] (the batch dims in another order)
    tr_f16       x [n, 9, 64] f16 -> [2, 0, 1]
    tr_vec_nhwc  x [n, 64, 8, 48] -> [0, 2, 3, 1]: both tiled dims whole
                 128-bit vectors (4 floats), so tiles move in vectors; 48
                 leaves a partial tile
    tr_vec_heads x [n, 128, 12, 64] -> [0, 2, 3, 1]: BERT's K transposed
    tr_vec_f16   x [n, 40, 24] f16 -> [0, 2, 1]: vectors of 8 halves, both
                 dims leaving partial tiles
Data sets at n = 1 and n = 3.
"""
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper

from make_control_flow_models import save_model, save_set

MODELS = {
    "tr_nhwc": (["n", 40, 5, 33], [0, 2, 3, 1], T.FLOAT),
    "tr_nchw": (["n", 5, 33, 40], [0, 3, 1, 2], T.FLOAT),
    "tr_heads": (["n", 37, 4, 16], [0, 2, 3, 1], T.FLOAT),
    "tr_2d": (["n", 70], [1, 0], T.FLOAT),
    "tr_rotate": ([3, "n", 34], [2, 0, 1], T.FLOAT),
    "tr_f16": (["n", 9, 64], [2, 0, 1], T.FLOAT16),
    "tr_vec_nhwc": (["n", 64, 8, 48], [0, 2, 3, 1], T.FLOAT),
    "tr_vec_heads": (["n", 128, 12, 64], [0, 2, 3, 1], T.FLOAT),
    "tr_vec_f16": (["n", 40, 24], [0, 2, 1], T.FLOAT16),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(23)
    for name, (shape, perm, elem) in MODELS.items():
        result = [shape[p] for p in perm]
        save_model(out, name, helper.make_graph(
            [helper.make_node("Transpose", ["x"], ["y"], perm=perm)], name,
            [helper.make_tensor_value_info("x", elem, shape)],
            [helper.make_tensor_value_info("y", elem, result)]))
        dtype = np.float16 if elem == T.FLOAT16 else np.float32
        for s, n in enumerate((1, 3)):
            x = rng.standard_normal([n if d == "n" else d for d in shape]).astype(dtype)
            save_set(out, name, s, {"x": x}, [np.ascontiguousarray(np.transpose(x, perm))])


if __name__ == "__main__":
    main()
