#!/usr/bin/env python3
"""Exports the small torch models kiln's tests run, with inputs and torch's outputs.

    python3 test/models/export_torch_models.py [OUT_DIR [NAME...]]   (default: test/models, all)

Writes, per model NAME (mlp, cnn, encoder, mha_encoder):
    NAME.onnx                  exported with torch.onnx.export (TorchScript exporter,
                               dynamic batch, and sequence for the encoder)
    NAME.dynamo.onnx           the same model through the torch.export-based exporter,
                               the default of current torch releases
    NAME/input_K.pb            the inputs (ONNX TensorProto), seeded
    NAME/output_K.pb           torch's outputs for them, in float32

The outputs are committed, so tests need neither torch nor this script; rerun it
(after scripts/install-model-export-deps.sh)
only to change the models. Weights are seeded, so a rerun of all models reproduces
the files up to exporter version differences (naming models re-exports just those,
with the weights a run of them alone draws).
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
torch.manual_seed(20261129)


from torch_models import MODELS, randomize_norms  # noqa: E402


def save_tensors(folder, prefix, arrays, names):
    os.makedirs(folder, exist_ok=True)
    for k, (a, name) in enumerate(zip(arrays, names)):
        t = numpy_helper.from_array(np.ascontiguousarray(a), name)
        with open(os.path.join(folder, f"{prefix}_{k}.pb"), "wb") as f:
            f.write(t.SerializeToString())


def export(name, out_dir):
    cls, shape, dynamic = MODELS[name]
    model = cls().eval()
    randomize_norms(model)
    x = torch.randn(*shape)
    with torch.no_grad():
        y = model(x)
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": dynamic, "y": {0: "batch"} if len(dynamic) == 1
                                    else {0: "batch", 1: "seq"}},
                      opset_version=17, dynamo=False)
    dynamo_path = os.path.join(out_dir, name + ".dynamo.onnx")
    dims = {i: torch.export.Dim(s, min=1, max=4096) for i, s in dynamic.items()}
    program = torch.onnx.export(model, (x,), dynamic_shapes=({**dims},),
                                input_names=["x"], output_names=["y"], dynamo=True,
                                external_data=False)
    program.save(dynamo_path, external_data=False)
    onnx.checker.check_model(onnx.load(path))
    onnx.checker.check_model(onnx.load(dynamo_path))
    save_tensors(os.path.join(out_dir, name), "input", [x.numpy()], ["x"])
    save_tensors(os.path.join(out_dir, name), "output", [y.numpy()], ["y"])
    print(f"{name}: {os.path.getsize(path)} bytes, dynamo {os.path.getsize(dynamo_path)} bytes")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name in (sys.argv[2:] or MODELS):
        export(name, out_dir)


if __name__ == "__main__":
    main()
