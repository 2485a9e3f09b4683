#!/usr/bin/env python3
"""Writes ONNX models that exercise the runtime's control-flow steps, with inputs
and the outputs numpy computes for them.

    make_control_flow_models.py OUT_DIR

Per model NAME: OUT_DIR/NAME.onnx and, per data set S, OUT_DIR/NAME/S/in_<input>.npy
and OUT_DIR/NAME/S/want_K.npy (output K).

    while_loop  a Loop whose condition the body computes (read back each
                iteration), with a scan output gathered as it goes; data sets
                that run several iterations, one, and none (trip count 0)
    swap_loop   a Loop with a constant condition whose body swaps its two
                carried values (a result that is another parameter) and stacks
                their sum in place
    long_loop   a Loop of 3000 iterations that never reads back (a constant
                condition), its slices stacked in place
    scan_axes   a Scan over axis 1 of its input, backwards, stacking its outputs
                along axis 1 in reverse and along axis 0 forwards (slices that
                are copies, not views)
    bad_if      an If whose condition has a dim of its own: given two elements, an
                error at run time
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper


def save_model(out, name, graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))


def save_set(out, name, s, inputs, wants):
    folder = os.path.join(out, name, str(s))
    os.makedirs(folder, exist_ok=True)
    for k, v in inputs.items():
        np.save(os.path.join(folder, f"in_{k}.npy"), v)
    for k, v in enumerate(wants):
        np.save(os.path.join(folder, f"want_{k}.npy"), v)


def while_loop(out):
    # s <- s * 1.5 + x while sum(s) < limit, at most m times; each step's s stacked.
    body = helper.make_graph(
        [
            helper.make_node("Mul", ["s_in", "k"], ["scaled"]),
            helper.make_node("Add", ["scaled", "x"], ["s_out"]),
            helper.make_node("ReduceSum", ["s_out"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "limit"], ["cond_out"]),
            helper.make_node("Identity", ["s_out"], ["slice"]),
        ],
        "body",
        [helper.make_tensor_value_info("i", T.INT64, []),
         helper.make_tensor_value_info("cond_in", T.BOOL, []),
         helper.make_tensor_value_info("s_in", T.FLOAT, ["n"])],
        [helper.make_tensor_value_info("cond_out", T.BOOL, []),
         helper.make_tensor_value_info("s_out", T.FLOAT, ["n"]),
         helper.make_tensor_value_info("slice", T.FLOAT, ["n"])],
        [numpy_helper.from_array(np.array(1.5, np.float32), "k")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "go", "s0"], ["s_final", "steps"], body=body)],
        "while_loop",
        [helper.make_tensor_value_info("m", T.INT64, []),
         helper.make_tensor_value_info("go", T.BOOL, []),
         helper.make_tensor_value_info("s0", T.FLOAT, ["n"]),
         helper.make_tensor_value_info("x", T.FLOAT, ["n"]),
         helper.make_tensor_value_info("limit", T.FLOAT, [])],
        [helper.make_tensor_value_info("s_final", T.FLOAT, ["n"]),
         helper.make_tensor_value_info("steps", T.FLOAT, [None, "n"])])
    save_model(out, "while_loop", graph)
    cases = [(20, 40.0, 5), (20, -1.0, 3), (0, 40.0, 4)]
    for s, (m, limit, n) in enumerate(cases):
        s0 = np.linspace(-1, 1, n).astype(np.float32)
        x = np.arange(1, n + 1, dtype=np.float32) / n
        cur, stacked, cond = s0.copy(), [], True
        i = 0
        while i < m and cond:
            cur = (cur * np.float32(1.5) + x).astype(np.float32)
            stacked.append(cur.copy())
            cond = bool(cur.sum(dtype=np.float32) < np.float32(limit))
            i += 1
        steps = np.stack(stacked) if stacked else np.zeros((0, n), np.float32)
        save_set(out, "while_loop", s,
                 {"m": np.array(m, np.int64), "go": np.array(True), "s0": s0, "x": x,
                  "limit": np.array(limit, np.float32)},
                 [cur, steps])


def swap_loop(out):
    # The body yields (cond_in, b_in, total, total): b moves to a, the sum to b,
    # and the sum is stacked.
    body = helper.make_graph(
        [helper.make_node("Add", ["a_in", "b_in"], ["total"]),
         helper.make_node("Identity", ["total"], ["total_slice"])],
        "body",
        [helper.make_tensor_value_info("i", T.INT64, []),
         helper.make_tensor_value_info("cond_in", T.BOOL, []),
         helper.make_tensor_value_info("a_in", T.FLOAT, [2, 3]),
         helper.make_tensor_value_info("b_in", T.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("cond_in", T.BOOL, []),
         helper.make_tensor_value_info("b_in", T.FLOAT, [2, 3]),
         helper.make_tensor_value_info("total", T.FLOAT, [2, 3]),
         helper.make_tensor_value_info("total_slice", T.FLOAT, [2, 3])],
        [])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "go", "a", "b"], ["a_final", "b_final", "sums"],
                          body=body)],
        "swap_loop",
        [helper.make_tensor_value_info("m", T.INT64, []),
         helper.make_tensor_value_info("go", T.BOOL, []),
         helper.make_tensor_value_info("a", T.FLOAT, [2, 3]),
         helper.make_tensor_value_info("b", T.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("a_final", T.FLOAT, [2, 3]),
         helper.make_tensor_value_info("b_final", T.FLOAT, [2, 3]),
         helper.make_tensor_value_info("sums", T.FLOAT, [None, 2, 3])])
    save_model(out, "swap_loop", graph)
    for s, m in enumerate([4, 1]):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        b = np.ones((2, 3), np.float32) * 0.5
        sums = []
        for _ in range(m):
            total = a + b
            sums.append(total)
            a, b = b, total
        save_set(out, "swap_loop", s,
                 {"m": np.array(m, np.int64), "go": np.array(True),
                  "a": np.arange(6, dtype=np.float32).reshape(2, 3),
                  "b": np.ones((2, 3), np.float32) * 0.5},
                 [a, b, np.stack(sums)])


def long_loop(out):
    # s <- s * 0.5 + x, 3000 times with a constant condition: no read-back at
    # all, so the CUDA backend settles its uploads every 1024 iterations.
    body = helper.make_graph(
        [helper.make_node("Mul", ["s_in", "half"], ["halved"]),
         helper.make_node("Add", ["halved", "x"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["slice"])],
        "body",
        [helper.make_tensor_value_info("i", T.INT64, []),
         helper.make_tensor_value_info("cond_in", T.BOOL, []),
         helper.make_tensor_value_info("s_in", T.FLOAT, [3])],
        [helper.make_tensor_value_info("cond_in", T.BOOL, []),
         helper.make_tensor_value_info("s_out", T.FLOAT, [3]),
         helper.make_tensor_value_info("slice", T.FLOAT, [3])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "go", "s0"], ["s_final", "steps"], body=body)],
        "long_loop",
        [helper.make_tensor_value_info("m", T.INT64, []),
         helper.make_tensor_value_info("go", T.BOOL, []),
         helper.make_tensor_value_info("s0", T.FLOAT, [3]),
         helper.make_tensor_value_info("x", T.FLOAT, [3])],
        [helper.make_tensor_value_info("s_final", T.FLOAT, [3]),
         helper.make_tensor_value_info("steps", T.FLOAT, [None, 3])])
    save_model(out, "long_loop", graph)
    m = 3000
    s0 = np.array([4.0, -1.0, 0.5], np.float32)
    x = np.array([1.0, 2.0, -3.0], np.float32)
    cur, stacked = s0.copy(), []
    for _ in range(m):
        cur = (cur * np.float32(0.5) + x).astype(np.float32)
        stacked.append(cur.copy())
    save_set(out, "long_loop", 0,
             {"m": np.array(m, np.int64), "go": np.array(True), "s0": s0, "x": x},
             [cur, np.stack(stacked)])


def scan_axes(out):
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "xt"], ["acc_out"]),
         helper.make_node("Mul", ["acc_out", "xt"], ["prod"])],
        "body",
        [helper.make_tensor_value_info("acc_in", T.FLOAT, ["b", 3]),
         helper.make_tensor_value_info("xt", T.FLOAT, ["b", 3])],
        [helper.make_tensor_value_info("acc_out", T.FLOAT, ["b", 3]),
         helper.make_tensor_value_info("acc_out_copy", T.FLOAT, ["b", 3]),
         helper.make_tensor_value_info("prod", T.FLOAT, ["b", 3])],
        [])
    body.node.append(helper.make_node("Identity", ["acc_out"], ["acc_out_copy"]))
    graph = helper.make_graph(
        [helper.make_node("Scan", ["acc0", "x"], ["acc", "history", "prods"], body=body,
                          num_scan_inputs=1, scan_input_axes=[1],
                          scan_input_directions=[1], scan_output_axes=[1, 0],
                          scan_output_directions=[1, 0])],
        "scan_axes",
        [helper.make_tensor_value_info("acc0", T.FLOAT, ["b", 3]),
         helper.make_tensor_value_info("x", T.FLOAT, ["b", "t", 3])],
        [helper.make_tensor_value_info("acc", T.FLOAT, ["b", 3]),
         helper.make_tensor_value_info("history", T.FLOAT, ["b", "t", 3]),
         helper.make_tensor_value_info("prods", T.FLOAT, ["t", "b", 3])])
    save_model(out, "scan_axes", graph)
    for s, (b, t) in enumerate([(2, 4), (3, 1)]):
        acc0 = np.linspace(0, 1, b * 3).astype(np.float32).reshape(b, 3)
        x = np.linspace(-2, 2, b * t * 3).astype(np.float32).reshape(b, t, 3)
        acc = acc0.copy()
        history = np.zeros((b, t, 3), np.float32)
        prods = np.zeros((t, b, 3), np.float32)
        for i in range(t):
            at = t - 1 - i  # scanned backwards
            acc = acc + x[:, at, :]
            history[:, t - 1 - i, :] = acc  # stacked in reverse along axis 1
            prods[i] = acc * x[:, at, :]    # stacked forwards along axis 0
        save_set(out, "scan_axes", s, {"acc0": acc0, "x": x}, [acc, history, prods])


def bad_if(out):
    then_g = helper.make_graph([helper.make_node("Abs", ["x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", T.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", T.FLOAT, [3])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
        "bad_if",
        [helper.make_tensor_value_info("c", T.BOOL, ["n"]),
         helper.make_tensor_value_info("x", T.FLOAT, [3])],
        [helper.make_tensor_value_info("y", T.FLOAT, [3])])
    save_model(out, "bad_if", graph)
    save_set(out, "bad_if", 0, {"c": np.array([True, False]),
                                "x": np.array([1, -2, 3], np.float32)}, [])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    while_loop(out)
    swap_loop(out)
    long_loop(out)
    scan_axes(out)
    bad_if(out)


if __name__ == "__main__":
    main()
