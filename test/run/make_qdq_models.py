#!/usr/bin/env python3
"""Writes Q/DQ models as users make them, with onnxruntime's static
quantization tool (quantize_static, QDQ format, MinMax calibration on seeded
data), with inputs and onnxruntime's CPU outputs on the quantized model,
its graph optimizations off (the layout run_numpy_cases.py reads), and each model's output quantization step
(NAME.step: the scale of the QuantizeLinear in front of the output). Needs
onnxruntime (scripts/install-onnxruntime-deps.sh).

    make_qdq_models.py OUT_DIR ENCODER_ONNX

    encoder_qdq   the test encoder (test/models/encoder.onnx: two layers,
                  hidden 32, FFN 64, four heads, erf GELU), quantize_static's
                  defaults: int8 activations with zero points, symmetric
                  int8 weights, one scale a tensor
    mlp_u8_channel
                  x [b, s, 64] -> MatMul [64, 48] + bias -> Relu -> MatMul
                  [48, 24] + bias: uint8 activations and asymmetric uint8
                  weights with a scale and zero point a column (per_channel)
    mlp_odd_k     the same with K = 30 and N = 18: no multiples of 4, which
                  cuBLASLt's int8 matmul needs, so kiln pads them
    cnn_qdq       the test CNN (test/models/cnn.onnx, beside ENCODER_ONNX: an
                  RGB conv to 8 channels, a conv to 16, a Gemm to 10 classes),
                  quantize_static's defaults
    cnn_qlinear   the same CNN in onnxruntime's QOperator format, its convs only
                  (QLinearConv between QuantizeLinear and DequantizeLinear, the
                  Gemm float); no .step: its output is float
    resnet18_qdq  ResNet-18 (torchvision's layers: a 7x7 stem, four stages of
                  two basic blocks, 64 to 512 channels, 1x1 downsampling,
                  global average pooling, a Gemm to 1000 classes with transB)
                  with random weights (batch norms folded into the convs'
                  biases) on 64x64 images, quantize_static's defaults
    encoder_fp8   the test encoder quantized to float8 e4m3fn (quantize_static
                  with QFLOAT8E4M3FN activations and weights, its Distribution
                  calibration, MatMuls only: its FP8 path fails on the other
                  ops' tensors), one scale a tensor, zero points 0
    mlp_fp8_channel
                  the MLP (K 64, 48, 24) in float8 e4m3fn with a weight scale
                  a column (per_channel)
    matmul_integer
                  MatMulInteger: uint8 x [b, s, 32] with a zero point times a
                  constant int8 [32, 16] with a zero point a column: int32
    qlinear_matmul
                  QLinearMatMul: uint8 x [b, s, 32] times a constant int8
                  [32, 16] with a scale a column, into uint8
    int8_tn, int8_nn, int8_odd_k
                  kiln MLIR: one kiln.matmul of int8 operands into int32,
                  x [m, K] times a weight argument, in cuBLASLt's one layout
                  (the weight stored [N, K], transpose_rhs), in another (the
                  weight [K, N]) and with K = 6: what the fake cuBLASLt
                  must take, and refuse as cuBLASLt does
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

sys.path.insert(0, os.path.dirname(__file__))
from make_control_flow_models import save_set  # noqa: E402
from resnet_model import resnet18  # noqa: E402

rng = np.random.default_rng(2036)


class Reader(CalibrationDataReader):
    def __init__(self, batches):
        self.batches = iter(batches)

    def get_next(self):
        return next(self.batches, None)


def mlp(k, hidden, n):
    w0 = (rng.standard_normal((k, hidden)) / np.sqrt(k)).astype(np.float32)
    w1 = (rng.standard_normal((hidden, n)) / np.sqrt(hidden)).astype(np.float32)
    b0 = (0.1 * rng.standard_normal(hidden)).astype(np.float32)
    b1 = (0.1 * rng.standard_normal(n)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h0"]),
             helper.make_node("Add", ["h0", "b0"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]),
             helper.make_node("MatMul", ["h2", "w1"], ["h3"]),
             helper.make_node("Add", ["h3", "b1"], ["y"])]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", T.FLOAT, ["b", "s", k])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["b", "s", n])],
        [numpy_helper.from_array(v, name) for v, name in ((w0, "w0"), (w1, "w1"), (b0, "b0"),
                                                          (b1, "b1"))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def quantize(out, name, model, calibration, **options):
    source = os.path.join(out, name + "-float.onnx")
    onnx.save(model, source)
    target = os.path.join(out, name + ".onnx")
    options.setdefault("quant_format", QuantFormat.QDQ)
    quantize_static(source, target, Reader([{"x": x} for x in calibration]), **options)
    return onnx.load(target)


def save(out, name, model, shapes, k):
    # onnxruntime with its graph optimizations off computes the model as ONNX
    # defines it. Its default session fuses Q/DQ groups into its own integer
    # kernels (QLinearMatMul, QGemm, ...), whose requantization rounds
    # otherwise: on encoder_qdq's data those outputs move up to 4 steps from
    # the unfused session's (and from kiln's float64 reference).
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    for s, (b, seq) in enumerate(shapes):
        feeds = {"x": rng.standard_normal((b, seq, k)).astype(np.float32)}
        save_set(out, name, s, feeds, session.run(None, feeds))
    write_step(out, name, model)


def save_images(out, name, model, shapes, step=True, rng=rng):
    """save()'s data sets for an image model: x of each of `shapes`."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    for s, shape in enumerate(shapes):
        feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
        save_set(out, name, s, feeds, session.run(None, feeds))
    if step:
        write_step(out, name, model)


def write_step(out, name, model):
    """NAME.step: the scale of the QuantizeLinear in front of the output."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    output = model.graph.output[0].name
    dq = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == output)
    with open(os.path.join(out, name + ".step"), "w") as f:
        f.write(repr(float(inits[dq.input[1]])))


def int8_layouts(out):
    dims = lambda k: f"tensor<?x{k}xi8, #kiln.dims<[m, {k}]>>"
    result = "tensor<?x4xi32, #kiln.dims<[m, 4]>>"
    for name, k, weight, flags in (("int8_tn", 8, "4x8", " {transpose_rhs = true}"),
                                   ("int8_nn", 8, "8x4", ""),
                                   ("int8_odd_k", 6, "4x6", " {transpose_rhs = true}")):
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(f"func.func @main(%x: {dims(k)}, %w: tensor<{weight}xi8>) -> {result} {{\n"
                    f"  %y = kiln.matmul %x, %w{flags} : ({dims(k)}, tensor<{weight}xi8>) -> {result}\n"
                    f"  return %y : {result}\n}}\n")
        x = rng.integers(-128, 128, (5, k)).astype(np.int8)
        w = rng.integers(-128, 128, tuple(int(d) for d in weight.split("x"))).astype(np.int8)
        wide = w.astype(np.int32)
        save_set(out, name, 0, {"arg0": x, "arg1": w},
                 [x.astype(np.int32) @ (wide.T if flags else wide)])




def integer_ops(out):
    x = helper.make_tensor_value_info("x", T.UINT8, ["b", "s", 32])
    w = numpy_helper.from_array(rng.integers(-128, 128, (32, 16)).astype(np.int8), "w")
    xz = numpy_helper.from_array(np.array(131, np.uint8), "xz")
    wz = numpy_helper.from_array(rng.integers(-3, 4, 16).astype(np.int8), "wz")
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["x", "w", "xz", "wz"], ["y"])], "mmi", [x],
        [helper.make_tensor_value_info("y", T.INT32, ["b", "s", 16])], [w, xz, wz])
    models = {"matmul_integer": helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])}
    scales = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
              numpy_helper.from_array((0.01 + 0.01 * rng.random(16)).astype(np.float32), "ws"),
              numpy_helper.from_array(np.zeros(16, np.int8), "wz0"),
              numpy_helper.from_array(np.array(0.5, np.float32), "ys"),
              numpy_helper.from_array(np.array(120, np.uint8), "yz")]
    graph = helper.make_graph(
        [helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz0", "ys", "yz"], ["y"])],
        "qlmm", [x], [helper.make_tensor_value_info("y", T.UINT8, ["b", "s", 16])],
        [w, xz] + scales)
    models["qlinear_matmul"] = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    for name, model in models.items():
        onnx.save(model, os.path.join(out, name + ".onnx"))
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        for s, (b, seq) in enumerate([(1, 1), (2, 5)]):
            feeds = {"x": rng.integers(0, 256, (b, seq, 32)).astype(np.uint8)}
            save_set(out, name, s, feeds, session.run(None, feeds))
    # ConvInteger: uint8 images with a zero point, int8 filters, dynamic H, W.
    x = helper.make_tensor_value_info("x", T.UINT8, ["b", 8, "h", "w"])
    w = numpy_helper.from_array(rng.integers(-128, 128, (8, 8, 3, 3)).astype(np.int8), "w")
    graph = helper.make_graph(
        [helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"], pads=[1, 1, 1, 1])], "convi",
        [x], [helper.make_tensor_value_info("y", T.INT32, ["b", 8, "h", "w"])], [w, xz])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.save(model, os.path.join(out, "conv_integer.onnx"))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for s, (b, h, w) in enumerate([(1, 6, 6), (2, 5, 9)]):
        feeds = {"x": rng.integers(0, 256, (b, 8, h, w)).astype(np.uint8)}
        save_set(out, "conv_integer", s, feeds, session.run(None, feeds))


def float8_models(out, encoder):
    """encoder_fp8 and mlp_fp8_channel, from a generator of their own (the
    other models' data must not move)."""
    from onnxruntime.quantization import CalibrationMethod

    fp8_rng = np.random.default_rng(8)
    options = dict(activation_type=QuantType.QFLOAT8E4M3FN, weight_type=QuantType.QFLOAT8E4M3FN,
                   calibrate_method=CalibrationMethod.Distribution, op_types_to_quantize=["MatMul"])
    calibration = [fp8_rng.standard_normal((2, 8, 16)).astype(np.float32) for _ in range(4)]
    models = [("encoder_fp8", quantize(out, "encoder_fp8", encoder, calibration, **options), 16)]
    calibration = [fp8_rng.standard_normal((2, 3, 64)).astype(np.float32) for _ in range(4)]
    models.append(("mlp_fp8_channel", quantize(out, "mlp_fp8_channel", mlp(64, 48, 24), calibration,
                                               per_channel=True, **options), 64))
    for name, model, k in models:
        options_ = ort.SessionOptions()
        options_.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(model.SerializeToString(), options_,
                                       providers=["CPUExecutionProvider"])
        for s, (b, seq) in enumerate([(2, 8), (1, 5)]):
            feeds = {"x": fp8_rng.standard_normal((b, seq, k)).astype(np.float32)}
            save_set(out, name, s, feeds, session.run(None, feeds))


def main():
    out, encoder = sys.argv[1], sys.argv[2]
    model = onnx.load(encoder)
    calibration = [rng.standard_normal((2, 8, 16)).astype(np.float32) for _ in range(4)]
    save(out, "encoder_qdq", quantize(out, "encoder_qdq", model, calibration), [(2, 8), (1, 5)], 16)

    calibration = [rng.standard_normal((2, 3, 64)).astype(np.float32) for _ in range(4)]
    save(out, "mlp_u8_channel",
         quantize(out, "mlp_u8_channel", mlp(64, 48, 24), calibration, per_channel=True,
                  activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8,
                  extra_options={"WeightSymmetric": False}),
         [(1, 1), (2, 5)], 64)
    calibration = [rng.standard_normal((2, 3, 30)).astype(np.float32) for _ in range(4)]
    save(out, "mlp_odd_k", quantize(out, "mlp_odd_k", mlp(30, 18, 24), calibration),
         [(2, 3)], 30)
    integer_ops(out)
    int8_layouts(out)
    cnn = onnx.load(os.path.join(os.path.dirname(encoder), "cnn.onnx"))
    calibration = [rng.standard_normal((2, 3, 16, 16)).astype(np.float32) for _ in range(4)]
    save_images(out, "cnn_qdq", quantize(out, "cnn_qdq", cnn, calibration),
                [(1, 3, 16, 16), (3, 3, 16, 16)])
    calibration = [rng.standard_normal((2, 3, 16, 16)).astype(np.float32) for _ in range(4)]
    save_images(out, "cnn_qlinear",
                quantize(out, "cnn_qlinear", cnn, calibration, quant_format=QuantFormat.QOperator,
                         op_types_to_quantize=["Conv"]),
                [(1, 3, 16, 16), (3, 3, 16, 16)], step=False)
    resnet_rng = np.random.default_rng(18)
    calibration = [resnet_rng.standard_normal((2, 3, 64, 64)).astype(np.float32) for _ in range(2)]
    save_images(out, "resnet18_qdq", quantize(out, "resnet18_qdq", resnet18(resnet_rng), calibration),
                [(1, 3, 64, 64), (2, 3, 64, 64)], rng=resnet_rng)
    float8_models(out, onnx.load(encoder))


if __name__ == "__main__":
    main()
