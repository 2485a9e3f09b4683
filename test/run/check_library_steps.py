"""Library steps on the CUDA backend (MatMul in cuBLASLt, Conv and Pool in
cuDNN): which run in the library, and whether they compute what the float64
reference does.

    check_library_steps.py OUT_DIR [--run-only]

Writes one ONNX model per case (the shapes, transposes, broadcasts, biases,
groups, dilations, pads, pool modes and dtypes the libraries' mappings
distinguish), compiles each for sm_90 with kiln-compile, runs it with kiln-run
--profile (on the fake driver and its library doubles in CI: run under
%fake-cuda) and with --backend reference, and prints per case
`NAME: KIND max abs diff D (tolerance T), K kernels` with KIND the profile's kind of the
case's library step (`cublasLt`, `cudnn`, `kernel` when a generated kernel computes it,
`host` for what kiln keeps on the host, `host:cudnn-refused` for what the library refused,
`cublasLt:tanh-gelu` for an erf-GELU-fused matmul cuDNN refused) and K the generated kernels the case ran, and a last line `N cases OK` when every output is within its
dtype's tolerance: fp32 1e-4, fp64 1e-9, fp16 and bf16 (fp32 accumulation,
rounded once) 1e-2 relative to the output's largest magnitude.

With --run-only the cases OUT_DIR already holds (models compiled, inputs and
reference outputs written by an earlier run) are only run on the CUDA backend
and compared: what tools/gpu-check.sh does on a machine without kiln-compile."""
import os
import re
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, load_tensor, numpy_helper, save

OUT = sys.argv[1]
RUN_ONLY = "--run-only" in sys.argv[2:]
rng = np.random.default_rng(17)

ONNX_TYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
              "bfloat16": TensorProto.BFLOAT16}
TOLERANCE = {"float32": 1e-4, "float64": 1e-9, "float16": 1e-2, "bfloat16": 1e-2}


def matmul_case(a_shape, b_shape, dtype="float32"):
    return [helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a_shape, "b": b_shape}, dtype


def conv_case(x_shape, w_shape, dtype="float32", bias=True, relu=False, op="Conv", **attrs):
    names = ["x", "w", "b"] if bias else ["x", "w"]
    nodes = [helper.make_node(op, names, ["c" if relu else "y"], **attrs)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    shapes = {"x": x_shape, "w": w_shape}
    if bias:  # one per output channel: w's dim 0 for Conv, dim 1 times the groups for ConvTranspose
        shapes["b"] = [w_shape[0] if op == "Conv" else w_shape[1] * attrs.get("group", 1)]
    return nodes, shapes, dtype


def pool_case(op, x_shape, dtype="float32", **attrs):
    return [helper.make_node(op, ["x"], ["y"], **attrs)], {"x": x_shape}, dtype


def gemm_case(a_shape, b_shape, c_shape, relu=False, **attrs):
    nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["g" if relu else "y"], **attrs)]
    if relu:
        nodes.append(helper.make_node("Relu", ["g"], ["y"]))
    return nodes, {"a": a_shape, "b": b_shape, "c": c_shape}, "float32"


def constant(name, value, dtype):
    return helper.make_node("Constant", [], [name],
                            value=helper.make_tensor(name, ONNX_TYPES[dtype], [], [float(value)]))


def gelu_case(approximate, dtype="float32", k=8, product="matmul"):
    """A transformer FFN's first half: x @ w + b, then GELU written out as
    exporters write it (the tanh form as HuggingFace's NewGELU, the exact form
    with Erf). cuBLASLt's GELU_BIAS epilogue takes the tanh form; the erf form
    is a cuDNN graph (matmul, bias add and GELU_FWD) where the precision mode
    allows it, and in fp32 a generated kernel after the matmul."""
    def const(name, value):
        return constant(name, value, dtype)
    # The product: x @ w + b with a 2-D weight (its batch folds into M), a
    # batched weight ("batched": equal batches in cuDNN's graph), or Gemm's
    # transB ("gemm-transb": the weight read column-major through strides).
    shapes = {"a": [2, 3, k], "w": [k, 16], "b": [16]}
    if product == "gemm-transb":
        nodes = [helper.make_node("Gemm", ["a", "w", "b"], ["x"], transB=1)]
        shapes = {"a": [6, k], "w": [16, k], "b": [16]}
    else:
        nodes = [helper.make_node("MatMul", ["a", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["x"])]
        if product == "batched":
            shapes["w"] = [2, k, 16]
    nodes += [const("half", 0.5), const("one", 1.0), helper.make_node("Mul", ["x", "half"], ["hx"])]
    if approximate == "tanh":
        nodes += [const("three", 3.0), const("k", 0.044715), const("c", np.sqrt(2 / np.pi)),
                  helper.make_node("Pow", ["x", "three"], ["cube"]),
                  helper.make_node("Mul", ["k", "cube"], ["kc"]),
                  helper.make_node("Add", ["x", "kc"], ["s"]),
                  helper.make_node("Mul", ["c", "s"], ["inner"]),
                  helper.make_node("Tanh", ["inner"], ["t"])]
    else:
        nodes += [const("r", np.sqrt(0.5)), helper.make_node("Mul", ["x", "r"], ["xr"]),
                  helper.make_node("Erf", ["xr"], ["t"])]
    nodes += [helper.make_node("Add", ["one", "t"], ["p"]), helper.make_node("Mul", ["hx", "p"], ["y"])]
    return nodes, shapes, dtype


def silu_case(dtype, residual=False, k=8):
    """x @ w (plus a residual z), then SiLU x * sigmoid(x): cuDNN's SWISH_FWD."""
    nodes = [helper.make_node("MatMul", ["a", "w"], ["m" if residual else "x"])]
    shapes = {"a": [2, 3, k], "w": [k, 16]}
    if residual:
        nodes.append(helper.make_node("Add", ["m", "z"], ["x"]))
        shapes["z"] = [2, 3, 16]
    nodes += [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    return nodes, shapes, dtype


def residual_case(dtype):
    """A transformer's residual, z + x @ w: the matmul takes z as C with beta
    1, no add kernel."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["z", "m"], ["y"])]
    return nodes, {"x": [2, 3, 8], "w": [8, 16], "z": [2, 3, 16]}, dtype


def conv_pool_conv_case():
    """fp16 conv -> ReLU -> max pool -> conv, channels multiples of 8: both
    convs and the pool run NHWC in cuDNN with no transpose between them (the
    kernels: x, w1 and w2 to NHWC, the result back)."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2"], ["y"])]
    return nodes, {"x": [2, 8, 6, 6], "w1": [16, 8, 3, 3], "b1": [16], "w2": [8, 16, 1, 1]}, "float16"


def conv_residual_case():
    """A ResNet block's tail: relu(conv(x) + b + z), one fused cuDNN call."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "z"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    return nodes, {"x": [2, 3, 6, 6], "w": [4, 3, 3, 3], "b": [4], "z": [2, 4, 6, 6]}, "float32"


CASES = {
    "batched": matmul_case([2, 3, 4], [2, 4, 5]),
    "b-broadcast": matmul_case([2, 3, 4], [4, 5]),
    "a-broadcast": matmul_case([3, 4], [2, 4, 5]),
    "batch-ones": matmul_case([2, 1, 3, 4], [1, 1, 4, 5]),
    "partial-broadcast": matmul_case([2, 1, 3, 4], [1, 3, 4, 5]),
    "vector-a": matmul_case([4], [2, 4, 5]),
    "vector-b": matmul_case([2, 3, 4], [4]),
    "gemm-transposes": gemm_case([4, 3], [5, 4], [5], transA=1, transB=1, alpha=0.5),
    "gemm-matrix-bias": gemm_case([3, 4], [4, 5], [3, 5]),
    "gemm-bias-relu": gemm_case([3, 4], [4, 5], [5], relu=True),
    "matmul-bias-gelu-tanh": gelu_case("tanh"),
    "matmul-bias-gelu-erf": gelu_case("none"),
    "matmul-bias-gelu-erf-bf16": gelu_case("none", "bfloat16"),
    "matmul-bias-gelu-erf-fp16": gelu_case("none", "float16"),
    "matmul-bias-gelu-erf-tf32": gelu_case("none"),
    "matmul-silu-bf16": silu_case("bfloat16"),
    "batched-gelu-erf-bf16": gelu_case("none", "bfloat16", product="batched"),
    "gemm-transb-gelu-erf-fp16": gelu_case("none", "float16", product="gemm-transb"),
    "matmul-residual-silu-fp16": silu_case("float16", residual=True),
    # K = 6: 12-byte bf16 rows, which cuDNN's tensor-core engines refuse
    # (16-byte rows): an erf GELU runs as cuBLASLt's tanh GELU instead (the
    # two differ by at most 4.8e-4, under a bf16 product's rounding), a SiLU
    # (no cuBLASLt epilogue) on the host; the profile says which.
    "matmul-gelu-erf-refused-bf16": gelu_case("none", "bfloat16", k=6),
    "matmul-silu-refused-bf16": silu_case("bfloat16", k=6),
    "matmul-residual": residual_case("float32"),
    "matmul-residual-bf16": residual_case("bfloat16"),
    "fp16": matmul_case([2, 3, 8], [8, 5], "float16"),
    "bf16": matmul_case([2, 3, 8], [8, 5], "bfloat16"),
    "fp64": matmul_case([2, 3, 4], [2, 4, 5], "float64"),
    "conv2d": conv_case([2, 4, 9, 8], [6, 2, 3, 3], group=2, strides=[2, 1], dilations=[1, 2], pads=[1, 2, 1, 2]),
    "conv-relu": conv_case([1, 3, 6, 6], [4, 3, 3, 3], relu=True, pads=[1, 1, 1, 1]),
    "conv-residual-relu": conv_residual_case(),
    "conv-depthwise": conv_case([1, 4, 7, 7], [4, 1, 3, 3], bias=False, group=4, pads=[1, 1, 1, 1]),
    "conv1d": conv_case([2, 3, 10], [5, 3, 3], strides=[2], pads=[1, 1]),
    "conv3d": conv_case([1, 2, 4, 5, 6], [3, 2, 2, 3, 3], pads=[0, 1, 1, 0, 1, 1]),
    "conv-asymmetric-pads": conv_case([1, 2, 5, 5], [3, 2, 3, 3], pads=[0, 1, 1, 2]),
    "conv-fp16": conv_case([1, 4, 6, 6], [4, 4, 3, 3], "float16", pads=[1, 1, 1, 1]),
    # Channels multiples of 8 in fp16: NHWC activations and a KRSC filter
    # (three transpose kernels here: x and w, inputs of the model, and y).
    "conv-nhwc-fp16": conv_case([2, 8, 6, 5], [16, 8, 3, 3], "float16", relu=True, pads=[1, 1, 1, 1]),
    "conv-pool-conv-nhwc-fp16": conv_pool_conv_case(),
    "conv-fp64": conv_case([1, 2, 5, 5], [3, 2, 3, 3], "float64"),
    "convtranspose": conv_case([1, 4, 3, 3], [4, 3, 3, 3], op="ConvTranspose", group=2, strides=[2, 2],
                               pads=[1, 1, 1, 1], output_padding=[1, 1]),
    "convtranspose1d": conv_case([2, 3, 5], [3, 2, 4], op="ConvTranspose", bias=False, strides=[3], dilations=[2]),
    "convtranspose-asymmetric-pads": conv_case([1, 2, 3, 3], [2, 2, 3, 3], op="ConvTranspose", pads=[0, 1, 1, 0]),
    "maxpool": pool_case("MaxPool", [2, 3, 7, 7], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "avgpool-include-pad": pool_case("AveragePool", [1, 2, 6, 6], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                     count_include_pad=1),
    "avgpool-exclude-pad": pool_case("AveragePool", [1, 2, 6, 6], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "maxpool1d": pool_case("MaxPool", [2, 3, 9], kernel_shape=[2], strides=[2]),
    "maxpool-ceil": pool_case("MaxPool", [1, 2, 6, 6], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "maxpool-dilations": pool_case("MaxPool", [1, 2, 8, 8], kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 1, 0]),
    "avgpool-asymmetric-pads": pool_case("AveragePool", [1, 2, 7, 7], kernel_shape=[2, 2], pads=[0, 1, 1, 0],
                                         count_include_pad=1),
    "lppool": pool_case("LpPool", [1, 2, 5, 5], kernel_shape=[2, 2], p=3),
    "matmul-partial-broadcast-3d": matmul_case([3, 1, 2, 3, 4], [1, 2, 1, 4, 5]),
    # A long K: cuBLASLt's double then picks a split-K algorithm that needs
    # workspace, which the context must size from the heuristic's answer.
    "matmul-long-k": matmul_case([4, 512], [512, 8]),
    # A conv whose fastest algorithm (in cuDNN's double: an index per filter
    # tap per output position) needs 72 x 512 x 512 x 4 = 75.5 MB of
    # workspace, more than the 32 MiB a context starts from: the context
    # grows to it rather than taking the slower algorithm.
    "conv-large-workspace": conv_case([1, 8, 512, 512], [8, 8, 3, 3], bias=False, pads=[1, 1, 1, 1]),
}


def run(*command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed: {result.stdout}{result.stderr}")
    return result.stdout


def write_input(path, array):
    """A TensorProto file (bfloat16 through onnx's helper: numpy has no bf16)."""
    if array.dtype == np.float32 and path.endswith("-bf16.pb"):
        tensor = helper.make_tensor("x", TensorProto.BFLOAT16, array.shape, array.ravel().tolist())
    else:
        tensor = numpy_helper.from_array(array)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


# Cases compiled with flags of their own, and their tolerance where it is not
# their dtype's: TF32 operands (10-bit mantissas) over K = 8 are off by up to
# ~2e-3 of the output's scale, hence fp16's relative 1e-2.
FLAGS = {"matmul-bias-gelu-erf-tf32": ["--precision", "tf32"]}
RELATIVE = {"matmul-bias-gelu-erf-tf32"}

# Cases whose inputs are small integers: the results are exact sums, and the
# data (8 MiB of input, as much of output for the large conv) compresses, which
# keeps tools/gpu-check.sh's bundle under the GPU machine's carry limit.
INTEGRAL = {"conv-large-workspace"}

ok = 0
for name, (nodes, shapes, dtype) in CASES.items():
    folder = os.path.join(OUT, name)
    artifact = os.path.join(folder, "model.kiln")
    model_path = os.path.join(folder, "model.onnx")
    args = []
    for n, s in shapes.items():
        path = os.path.join(folder, f"{n}-bf16.pb" if dtype == "bfloat16" else f"{n}.pb")
        args += ["--input", f"{n}={path}"]
        if not RUN_ONLY:
            os.makedirs(folder, exist_ok=True)
            values = (rng.integers(-2, 3, s) if name in INTEGRAL else rng.standard_normal(s)).astype(np.float32)
            write_input(path, values if dtype == "bfloat16" else values.astype(dtype))
    if not RUN_ONLY:
        inputs = [helper.make_tensor_value_info(n, ONNX_TYPES[dtype], s) for n, s in shapes.items()]
        graph = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("y", ONNX_TYPES[dtype], None)])
        save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model_path)
        run("kiln-compile", model_path, "-o", artifact, "--arch", "sm_90", *FLAGS.get(name, []))
        run("kiln-run", model_path, *args, "--backend", "reference", "--output-dir",
            os.path.join(folder, "reference"))
    profile = run("kiln-run", artifact, *args, "--backend", "cuda", "--output-dir", os.path.join(folder, "cuda"),
                  "--profile", "--trace", os.path.join(folder, "trace.json"))
    match = re.search(r"^(?:MatMul|Conv|ConvTranspose|Pool)\s+(\S+)", profile, re.M)
    # No library step: a generated kernel computed it (pools cuDNN cannot express).
    kind = match.group(1) if match else ("kernel" if re.search(r"^kiln_\w+\s+kernel", profile, re.M) else "none")
    got = numpy_helper.to_array(load_tensor(os.path.join(folder, "cuda", "output_0.pb"))).astype(np.float64)
    want = numpy_helper.to_array(load_tensor(os.path.join(folder, "reference", "output_0.pb"))).astype(np.float64)
    if got.shape != want.shape:
        sys.exit(f"{name}: shape {got.shape}, the reference's {want.shape}")
    diff = float(np.max(np.abs(got - want))) if got.size else 0.0
    relative = dtype in ("float16", "bfloat16") or name in RELATIVE
    tolerance = (1e-2 if name in RELATIVE else TOLERANCE[dtype]) * (
        max(1.0, float(np.max(np.abs(want)))) if relative else 1)
    kernels = len(re.findall(r"^kiln_\w+\s+kernel", profile, re.M))
    print(f"{name}: {kind} max abs diff {diff:.3g} (tolerance {tolerance:.3g}), {kernels} kernels")
    if diff <= tolerance:
        ok += 1
print(f"{ok} cases OK" if ok == len(CASES) else f"{len(CASES) - ok} of {len(CASES)} cases out of tolerance")
