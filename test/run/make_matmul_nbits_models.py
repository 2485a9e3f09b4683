#!/usr/bin/env python3
"""Writes weight-only quantized models as users make them, with
onnxruntime's own quantization tool (MatMulNBitsQuantizer over
DefaultWeightOnlyQuantConfig: round to nearest, per-block scales), with
inputs and onnxruntime's CPU outputs (the layout run_numpy_cases.py reads).
Needs onnxruntime (scripts/install-onnxruntime-deps.sh).

    make_matmul_nbits_models.py OUT_DIR
    make_matmul_nbits_models.py OUT_DIR --gemv PATH

    mlp_b{4,8}_g{32,128}_{sym,asym}
                  a float MLP, x [b, s, 320] -> MatMul [320, 96] -> Relu ->
                  MatMul [96, 40], its two weights quantized to 4 or 8 bits
                  in blocks of 32 or 128 (K = 320 leaves the last block of
                  128 half padding), symmetric (no zero points: the default
                  2^(bits-1)) or asymmetric (packed uint8 zero points); data
                  sets of 1 row (a decode step), 10 rows (passes of several
                  rows, and of one for the rest) and 3 rows
    split_k       one MatMul [16384, 16], 4 bits, blocks of 128: few columns
                  and long ones, so that several warps share a column
    odd_trip      one MatMul [4010, 16], 4 bits, blocks of 128: with bf16
                  rows four chunks a trip, the last trip holding chunks and
                  codes past K
    nbits2        2 bits (the quantizer's 2-bit path), blocks of 64
    prompt_g32, prompt_g128
                  prompts (17 and 40 rows): x [b, s, 256] -> MatMul [256, 64]
                  -> Relu -> MatMul [64, 40] at 4 bits, blocks of 32 with zero
                  points, and MatMul [256, 48] in blocks of 128 without: with
                  16-bit rows, tensor cores (tiles of 16 columns and rows, the
                  last ones partial)
    odd_n         one MatMul [128, 7], 4 bits, blocks of 32: an odd number
                  of columns, so that the last thread's second column lies
                  past N (it reads the first's bytes again, stores nothing)
    siblings      Q, K and V projections of one input: x [b, s, 256] -> MatMul
                  [256, 64], [256, 32] and [256, 32], three outputs, 4 bits in
                  blocks of 32 with zero points: one kernel after
                  --kiln-merge-sibling-matmuls (the three MatMulNBits side by
                  side); data sets of 1 row, 3 rows and a prompt of 17
    swiglu        a gated MLP: x [b, s, 256] -> gate and up MatMuls [256, 64]
                  (up with a bias Add) -> silu(gate) * up (Sigmoid and two
                  Muls) -> down MatMul
                  [64, 256], 4 bits in blocks of 32 with zero points: the
                  gate and up products become one gated product
                  (kiln.matmul_nbits {glu}); data sets of 1 row, 3 rows and
                  prompts of 17 and 2 x 20 (tensor cores with 16-bit rows)
    odd_k4, odd_k2
                  K = 100, blocks of 16, 4 and 2 bits: chunks of 8 and 4
                  bytes (a column's bytes are no multiple of 16), and the
                  last chunk holds codes past K, whose input values the
                  kernel must not read

--gemv writes only PATH: one MatMul [2048, 2048] at 4 bits in blocks of 128
with zero points, TinyLlama's hidden size (no data sets: its roofline is
what the test reads).

Every model is checked against onnxruntime at accuracy_level 0 (fp32
arithmetic on the dequantized weights, as kiln's kernel computes).
"""
import copy
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper, numpy_helper
from onnxruntime.quantization import QuantFormat
from onnxruntime.quantization.matmul_nbits_quantizer import (DefaultWeightOnlyQuantConfig,
                                                             MatMulNBitsQuantizer)

sys.path.insert(0, os.path.dirname(__file__))
from make_control_flow_models import save_set  # noqa: E402

rng = np.random.default_rng(36)


def float_model(layers):
    """x [b, s, K] through MatMuls of the given [K, N] weights, Relu between."""
    nodes, inits, current = [], [], "x"
    for i, (k, n) in enumerate(layers):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32), f"w{i}"))
        out = "y" if i == len(layers) - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [out + ("" if out == "y" else "_mm")]))
        if out != "y":
            nodes.append(helper.make_node("Relu", [out + "_mm"], [out]))
        current = out
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", T.FLOAT, ["b", "s", layers[0][0]])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["b", "s", layers[-1][1]])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def sibling_model(k, widths):
    """x [b, s, K] times weights [K, N] for each N of `widths`, an output each:
    the projections of one input (Q, K and V)."""
    inits, nodes, outputs = [], [], []
    for i, n in enumerate(widths):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", ["x", f"w{i}"], [f"y{i}"]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", T.FLOAT, ["b", "s", n]))
    graph = helper.make_graph(nodes, "siblings",
                              [helper.make_tensor_value_info("x", T.FLOAT, ["b", "s", k])],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def swiglu_model(k, inner):
    """x [b, s, K] -> silu(x Wg) * (x Wu + bu) -> times Wd [inner, K]: a gated
    MLP (the up projection's bias goes into its product, and the gated one's
    epilogue adds it)."""
    inits = [numpy_helper.from_array(
        (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32), name)
        for name, shape in (("wg", (k, inner)), ("wu", (k, inner)), ("wd", (inner, k)))]
    inits.append(numpy_helper.from_array(rng.standard_normal(inner).astype(np.float32), "bu"))
    nodes = [helper.make_node("MatMul", ["x", "wg"], ["g"]),
             helper.make_node("MatMul", ["x", "wu"], ["u_mm"]),
             helper.make_node("Add", ["u_mm", "bu"], ["u"]),
             helper.make_node("Sigmoid", ["g"], ["sg"]),
             helper.make_node("Mul", ["g", "sg"], ["silu"]),
             helper.make_node("Mul", ["silu", "u"], ["h"]),
             helper.make_node("MatMul", ["h", "wd"], ["y"])]
    graph = helper.make_graph(nodes, "swiglu",
                              [helper.make_tensor_value_info("x", T.FLOAT, ["b", "s", k])],
                              [helper.make_tensor_value_info("y", T.FLOAT, ["b", "s", k])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def quantized(model, bits, block, symmetric):
    config = DefaultWeightOnlyQuantConfig(block_size=block, is_symmetric=symmetric, bits=bits,
                                          accuracy_level=0, quant_format=QuantFormat.QOperator)
    quantizer = MatMulNBitsQuantizer(copy.deepcopy(model), algo_config=config)
    quantizer.process()
    result = quantizer.model.model
    ops = [n.op_type for n in result.graph.node]
    assert ops.count("MatMulNBits") == ops.count("MatMul") + ops.count("MatMulNBits") and \
        "MatMul" not in ops, f"the quantizer left {ops}"
    return result


def save(out, name, model, row_shapes):
    onnx.save(model, os.path.join(out, name + ".onnx"))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    k = model.graph.input[0].type.tensor_type.shape.dim[2].dim_value
    for s, (b, seq) in enumerate(row_shapes):
        feeds = {"x": rng.standard_normal((b, seq, k)).astype(np.float32)}
        save_set(out, name, s, feeds, session.run(None, feeds))


def main():
    out = sys.argv[1]
    if len(sys.argv) == 4 and sys.argv[2] == "--gemv":
        onnx.save(quantized(float_model([(2048, 2048)]), 4, 128, False), sys.argv[3])
        return
    mlp = float_model([(320, 96), (96, 40)])
    for bits in (4, 8):
        for block in (32, 128):
            for symmetric in (True, False):
                name = f"mlp_b{bits}_g{block}_{'sym' if symmetric else 'asym'}"
                save(out, name, quantized(mlp, bits, block, symmetric), [(1, 1), (2, 5), (3, 1)])
    save(out, "split_k", quantized(float_model([(16384, 16)]), 4, 128, False), [(1, 1), (1, 5)])
    save(out, "odd_trip", quantized(float_model([(4010, 16)]), 4, 128, False), [(1, 1), (2, 3)])
    save(out, "nbits2", quantized(float_model([(256, 48)]), 2, 64, False), [(1, 1), (2, 3)])
    save(out, "prompt_g32", quantized(float_model([(256, 64), (64, 40)]), 4, 32, False),
         [(2, 20), (1, 17)])
    save(out, "prompt_g128", quantized(float_model([(256, 48)]), 4, 128, True), [(2, 20), (1, 17)])
    save(out, "odd_n", quantized(float_model([(128, 7)]), 4, 32, False), [(1, 1), (2, 3)])
    save(out, "odd_k4", quantized(float_model([(100, 24)]), 4, 16, False), [(1, 1), (2, 3)])
    save(out, "odd_k2", quantized(float_model([(100, 24)]), 2, 16, True), [(1, 1), (2, 3)])
    save(out, "siblings", quantized(sibling_model(256, [64, 32, 32]), 4, 32, False),
         [(1, 1), (1, 3), (1, 17)])
    save(out, "swiglu", quantized(swiglu_model(256, 64), 4, 32, False),
         [(1, 1), (1, 3), (1, 17), (2, 20)])


if __name__ == "__main__":
    main()
