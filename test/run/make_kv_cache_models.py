#!/usr/bin/env python3
"""Writes KV-cache models (ONNX's TensorScatter-24), with inputs and the ONNX
reference implementation's outputs (the layout run_numpy_cases.py reads).

    make_kv_cache_models.py OUT_DIR

    kv_write_linear   a decode step writing each sequence's new key rows into
                      a [batch, heads, max_seq, head] cache at its own write
                      index (batches of 2 at different lengths), then the
                      cache scaled (the attention after it, in small); and
                      a step with no new rows
    kv_write_circular the same in circular mode: a write that runs past the
                      end wraps to the start (a sliding-window cache)
    kv_write_prefill  a prefill without write_indices: 3 rows at position 0
                      of a [batch, max_seq, dim] cache along axis 1
    kv_write_heads    past, update and write_indices whose heads and batch are
                      separate symbols: guards check they agree on each call
    kv_decode_linear, kv_decode_circular
                      a decode step of ONNX's own cache form: each
                      sequence's new key and value rows written into
                      [batch, kv_heads, m, head] caches at its write index
                      (TensorScatter), then Attention-24 of 4 query heads on
                      2 KV heads over the caches' first write + new rows
                      (circular: all of them, the window); new rows 1 or 3;
                      presents are outputs: what --kv-cache-in-place writes
                      in place
    tensor_scatter_bad_mode, tensor_scatter_batch_axis, tensor_scatter_float_indices,
    tensor_scatter_narrow_update, tensor_scatter_long_update
                      what is refused (no data sets)
"""
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper

from make_shape_operand_models import f32, save

rng = np.random.default_rng(23)


def scatter_then_scale(out, name, mode, sets, cache_dims, update_dims, axis, indices=True):
    inputs = [f32("past", cache_dims), f32("update", update_dims)]
    names = ["past", "update"]
    if indices:
        inputs.append(helper.make_tensor_value_info("write", T.INT64, ["b"]))
        names.append("write")
    nodes = [helper.make_node("TensorScatter", names, ["present"], mode=mode, axis=axis),
             helper.make_node("Mul", ["present", "half"], ["y"])]
    save(out, name, nodes, inputs, [f32("y", cache_dims)],
         [helper.make_tensor("half", T.FLOAT, [], [0.5])], sets, opset=24)


def attention_decode(out, name, mode, sets):
    """TensorScatter's K and V writes and the attention that reads them."""
    cache = ["b", 2, "m", 8]
    inputs = [f32("q", ["b", 4, "s", 8]), f32("k", ["b", 2, "s", 8]), f32("v", ["b", 2, "s", 8]),
              f32("past_key", cache), f32("past_value", cache),
              helper.make_tensor_value_info("write", T.INT64, ["b"])]
    nodes = [helper.make_node("TensorScatter", ["past_key", "k", "write"], ["present_key"], mode=mode),
             helper.make_node("TensorScatter", ["past_value", "v", "write"], ["present_value"],
                              mode=mode),
             helper.make_node("Shape", ["past_key"], ["m"], start=2, end=3)]
    if mode == "circular":
        # The window: every row (the ring is full).
        nodes.append(helper.make_node("Expand", ["m", "write_shape"], ["valid"]))
        nodes.insert(0, helper.make_node("Shape", ["write"], ["write_shape"]))
    else:
        nodes.append(helper.make_node("Add", ["write", "new_rows"], ["valid"]))
        nodes.insert(0, helper.make_node("Shape", ["k"], ["new_rows"], start=2, end=3))
    # The rows each sequence has, as a boolean mask [b, 1, 1, m] (what
    # nonpad_kv_seqlen says; onnx's reference evaluator cannot broadcast that
    # input over a batch without a mask).
    nodes += [helper.make_node("Squeeze", ["m"], ["m0"]),
              helper.make_node("Range", ["zero", "m0", "one"], ["rows"]),
              helper.make_node("Unsqueeze", ["valid", "axis1"], ["valid2"]),
              helper.make_node("Less", ["rows", "valid2"], ["keep"]),
              helper.make_node("Unsqueeze", ["keep", "axes12"], ["mask"]),
              helper.make_node("Attention", ["q", "present_key", "present_value", "mask"], ["y"])]
    save(out, name, nodes, inputs,
         [f32("y", ["b", 4, "s", 8]), f32("present_key", cache), f32("present_value", cache)],
         [helper.make_tensor("one", T.INT64, [], [1]), helper.make_tensor("zero", T.INT64, [], [0]),
          helper.make_tensor("axis1", T.INT64, [1], [1]),
          helper.make_tensor("axes12", T.INT64, [2], [1, 2])], sets, opset=24)


def attention_decode_sets(capacity, writes):
    """(write indices, new rows) per set."""
    return [{"q": rng.standard_normal((2, 4, new, 8), dtype=np.float32),
             "k": rng.standard_normal((2, 2, new, 8), dtype=np.float32),
             "v": rng.standard_normal((2, 2, new, 8), dtype=np.float32),
             "past_key": rng.standard_normal((2, 2, capacity, 8), dtype=np.float32),
             "past_value": rng.standard_normal((2, 2, capacity, 8), dtype=np.float32),
             "write": np.array(w, np.int64)} for w, new in writes]


def decode_sets(max_seq, new):
    sets = []
    for write in ((0, 5), (7, 2), (max_seq - new, 0)):
        sets.append({"past": rng.standard_normal((2, 3, max_seq, 4), dtype=np.float32),
                     "update": rng.standard_normal((2, 3, new, 4), dtype=np.float32),
                     "write": np.array(write, np.int64)})
    return sets


if __name__ == "__main__":
    out = sys.argv[1]
    dims = (["b", 3, "m", 4], ["b", 3, "l", 4])
    linear = decode_sets(8, 1)
    # A step with no new rows leaves the cache as it is.
    linear.append(dict(linear[0], update=np.zeros((2, 3, 0, 4), np.float32)))
    scatter_then_scale(out, "kv_write_linear", "linear", linear, *dims, axis=2)
    circular = decode_sets(8, 3)
    circular[1]["write"] = np.array([7, 6], np.int64)  # rows 7, 0, 1 and 6, 7, 0
    scatter_then_scale(out, "kv_write_circular", "circular", circular, *dims, axis=2)
    scatter_then_scale(out, "kv_write_prefill", "linear",
                       [{"past": rng.standard_normal((2, 6, 5), dtype=np.float32),
                         "update": rng.standard_normal((2, 3, 5), dtype=np.float32)}],
                       ["b", "m", 5], ["b", "l", 5], axis=1, indices=False)
    attention_decode(out, "kv_decode_linear", "linear",
                     attention_decode_sets(16, [((0, 9), 1), ((15, 3), 1), ((13, 0), 3)]))
    # The ring wraps: 17 and 35 are rows 1 and 3; three rows from 15 are 15,
    # 0 and 1, from -1 too, and from -2^63 + 3 (a multiple of 16 plus 3)
    # rows 3 to 5.
    attention_decode(out, "kv_decode_circular", "circular",
                     attention_decode_sets(16, [((5, 17), 1), ((35, 15), 3),
                                                ((-1, -2**63 + 3), 3)]))
    heads = [f32("past", ["b", "h", "m", 4]), f32("update", ["c", "g", "l", 4]),
             helper.make_tensor_value_info("write", T.INT64, ["w"])]
    save(out, "kv_write_heads", [helper.make_node("TensorScatter", ["past", "update", "write"], ["y"])],
         heads, [f32("y", ["b", "h", "m", 4])], [], [], opset=24)
    x = [f32("past", [2, 4, 3]), f32("update", [2, 1, 3])]
    save(out, "tensor_scatter_narrow_update", [helper.make_node("TensorScatter", ["past", "u2"], ["y"], axis=1)],
         [x[0], f32("u2", [2, 1, 2])], [f32("y", [2, 4, 3])], [], [], opset=24)
    save(out, "tensor_scatter_bad_mode", [helper.make_node("TensorScatter", ["past", "update"], ["y"], mode="ring")],
         x, [f32("y", [2, 4, 3])], [], [], opset=24)
    save(out, "tensor_scatter_batch_axis", [helper.make_node("TensorScatter", ["past", "update"], ["y"], axis=0)],
         x, [f32("y", [2, 4, 3])], [], [], opset=24)
    save(out, "tensor_scatter_float_indices", [helper.make_node("TensorScatter", ["past", "update", "w"], ["y"], axis=1)],
         x + [f32("w", [2])], [f32("y", [2, 4, 3])], [], [], opset=24)
    save(out, "tensor_scatter_long_update", [helper.make_node("TensorScatter", ["past", "u6"], ["y"], axis=1)],
         [x[0], f32("u6", [2, 6, 3])], [f32("y", [2, 4, 3])], [], [], opset=24)
