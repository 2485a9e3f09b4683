"""Which torchvision models the torch.compile "kiln" backend takes, and what the
ONNX route costs (docs/torch.md, "Coverage").

    build/torch-venv/bin/python bench/torch_coverage.py [--size 64] [--models a,b]

Per model (random weights, eval mode, batch 2, SIZE x SIZE images, dynamic=True,
host emulation): the Dynamo graphs, how many kiln compiled and how many ran
eagerly (with the first fallback's reason), the seconds spent in torch.export
(`trace_s`) and in torch.onnx's translation (`onnx_s`: what a direct FX
importer would save) against kiln's compile (`compile_s`), and the
largest difference to eager relative to the largest eager output. What this
does not measure: speed (host emulation), or models whose inputs are not one
image batch.
"""
import argparse
import tempfile
import time
import warnings

import torch
import torchvision

import kiln.torch as kt

DEFAULT = ("resnet18,resnet50,mobilenet_v2,mobilenet_v3_small,efficientnet_b0,regnet_x_400mf,"
           "shufflenet_v2_x0_5,squeezenet1_0,densenet121,googlenet,mnasnet0_5,convnext_tiny,"
           "vit_b_16,alexnet,vgg11")
# swin_t at its fixed 224x224 takes over 10 minutes of host emulation here;
# docs/torch.md gives a two-stage Swin at 32x32 instead.


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=DEFAULT)
    parser.add_argument("--size", type=int, default=64)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"{args.size}x{args.size} images")
    print(f"{'model':20} {'graphs':>6} {'kiln':>5} {'eager':>5} {'trace s':>8} {'onnx s':>7} "
          f"{'compile s':>9} {'max rel err':>11}  first fallback")
    for name in args.models.split(","):
        torch._dynamo.reset()
        kt.reset_stats()
        torch.manual_seed(0)
        size = 224 if name in ("vit_b_16", "swin_t") else args.size  # fixed-size patch models
        try:
            model = getattr(torchvision.models, name)(weights=None).eval()
        except Exception as e:  # a model this torchvision lacks
            print(f"{name:20} not built: {e}")
            continue
        # Heads torchvision initializes to zero (ViT's) would make every
        # output 0 and the comparison empty.
        for module in model.modules():
            if isinstance(module, torch.nn.Linear) and not module.weight.any():
                torch.nn.init.normal_(module.weight, std=0.02)
        x = torch.randn(2, 3, size, size)
        reasons = []
        compiled = torch.compile(model, backend="kiln", dynamic=True,
                                 options={"cache_dir": tempfile.mkdtemp(prefix="kiln-cov-")})
        start = time.perf_counter()
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", kt.KilnGraphFallback)
            try:
                got = compiled(x)
                want = model(x)
                got = got.logits if hasattr(got, "logits") else got
                want = want.logits if hasattr(want, "logits") else want
                err = ((got - want).abs().max() / want.abs().max()).item()
            except Exception as e:
                err = float("nan")
                reasons.append(f"error: {str(e).splitlines()[0][:120]}")
        reasons += [str(w.message) for w in caught if issubclass(w.category, kt.KilnGraphFallback)]
        s = kt.stats()
        print(f"{name:20} {s['graphs']:>6} {s['compiled']:>5} {s['fallbacks']:>5} "
              f"{s['trace_s']:>8.1f} {s['onnx_s']:>7.1f} {s['compile_s']:>9.1f} {err:>11.1e}  "
              f"{reasons[0][:160] if reasons else ''}  ({time.perf_counter() - start:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main()
