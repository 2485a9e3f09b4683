#!/usr/bin/env python3
"""Exports the torch models with control flow that kiln's tests run.

    python3 test/models/export_control_flow_models.py [OUT_DIR]   (default: test/models)

Each model is exported by torch.onnx.export's TorchScript exporter (dynamo=False)
from a scripted module, which is how data-dependent Python control flow reaches
ONNX, with the sequence length dynamic:

    data_if.onnx       `if x.sum() > 0:` on the data: an ONNX If
    dynamic_loop.onnx  `for t in range(x.size(0)):` carrying a state: an ONNX Loop
                       whose trip count is the input's first dim
    lstm.onnx          nn.LSTM over [seq, batch, input] (an ONNX LSTM; kiln makes
                       it a scan over the sequence when its length is dynamic)

and per model NAME/input_K.pb and NAME/output_K.pb for two data sets of different
lengths (set 0 and set 1 prefix the files: input_0_K.pb), torch's outputs in
float32. The files are committed, so tests need neither torch nor this script;
rerun it after scripts/install-model-export-deps.sh only to change the models.
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

torch.manual_seed(20261201)


class DataIf(torch.nn.Module):
    """A branch on a value computed from the data (not a shape)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        if bool(y.sum() > 0):
            out = torch.tanh(y) * 2.0 + 1.0
        else:
            out = torch.relu(y) - 1.0
        return out


class DynamicLoop(torch.nn.Module):
    """An Elman-style recurrence written as a Python loop over the sequence."""

    def __init__(self):
        super().__init__()
        self.w_in = torch.nn.Parameter(torch.randn(6, 12) * 0.3)
        self.w_h = torch.nn.Parameter(torch.randn(12, 12) * 0.3)
        self.bias = torch.nn.Parameter(torch.randn(12) * 0.1)

    def forward(self, x):
        # x: [seq, batch, 6]
        h = torch.zeros(x.size(1), 12)
        for t in range(x.size(0)):
            h = torch.tanh(x[t] @ self.w_in + h @ self.w_h + self.bias)
        return h


class Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(input_size=5, hidden_size=7)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


# name: (module, scripted?, input shapes of the two data sets, output names,
#        dynamic axes of x)
MODELS = {
    "data_if": (DataIf, True, [(3, 8), (5, 8)], ["y"], {0: "batch"}),
    "dynamic_loop": (DynamicLoop, True, [(4, 2, 6), (7, 2, 6)], ["h"], {0: "seq", 1: "batch"}),
    "lstm": (Lstm, False, [(6, 3, 5), (9, 3, 5)], ["y", "h", "c"], {0: "seq", 1: "batch"}),
}


def save(folder, name, array):
    t = numpy_helper.from_array(np.ascontiguousarray(array), name)
    with open(folder, "wb") as f:
        f.write(t.SerializeToString())


def export(name, out_dir):
    cls, scripted, shapes, outputs, dynamic = MODELS[name]
    model = cls().eval()
    inputs = [torch.randn(*shape) for shape in shapes]
    if name == "data_if":
        # One set takes each branch.
        inputs[0] = inputs[0].abs() * 3.0
        inputs[1] = -inputs[1].abs() * 3.0
    module = torch.jit.script(model) if scripted else model
    path = os.path.join(out_dir, name + ".onnx")
    dynamic_axes = {"x": dynamic}
    for o in outputs:
        dynamic_axes[o] = {}
    torch.onnx.export(module, (inputs[0],), path, input_names=["x"], output_names=outputs,
                      dynamic_axes=dynamic_axes, opset_version=17, dynamo=False)
    onnx.checker.check_model(onnx.load(path))
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    for s, x in enumerate(inputs):
        with torch.no_grad():
            ys = model(x)
        if not isinstance(ys, tuple):
            ys = (ys,)
        save(os.path.join(folder, f"input_{s}_0.pb"), "x", x.numpy())
        for k, (y, o) in enumerate(zip(ys, outputs)):
            save(os.path.join(folder, f"output_{s}_{k}.pb"), o, y.numpy())
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print(f"{name}: {os.path.getsize(path)} bytes, ops {ops}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name in MODELS:
        export(name, out_dir)


if __name__ == "__main__":
    main()
