#!/usr/bin/env python3
"""Exports torchvision's dense-prediction and detection models, narrowed, with
onnxruntime's outputs, for test/run/vision-models.test.

    python3 test/models/export_vision_models.py [OUT_DIR [NAME...]]   (default: test/models/vision)

Needs torch, torchvision and onnxruntime (scripts/install-model-export-deps.sh);
with the test venvs of a build: PYTHONPATH=build/ort-venv/lib/python3.11/site-packages
build/torch-venv/bin/python test/models/export_vision_models.py

Each model is torchvision's own architecture, built through torchvision's own
constructors, with every width divided (MobileNetV3 at width_mult 0.25, FPN and
box head at 32 and 64 channels, Swin at embed_dim 24 with one block per stage):
the graph torch exports is the full model's, node for node in kind and wiring,
only the channel counts differ, so the committed files stay under a megabyte
each. Weights are seeded; BatchNorm statistics come from a few seeded images in
training mode, so activations stay in range and detectors' scores spread.

Writes, per NAME (data sets in test/run/run_numpy_cases.py's layout):
    NAME.onnx            exported with dynamic batch (segmentation, swin) and
                         dynamic image height and width (all but swin)
    NAME/a/in_image.npy  the seeded input
    NAME/a/want_K.npy    onnxruntime's outputs for it (what the test compares with)
    NAME/b/...           the same for an input of another size (and batch), which
                         the dynamic dims must take without a recompile
"""
import os
import sys
from functools import partial

import numpy as np
import onnx
import torch
from torch import nn

import torchvision
from torchvision.models import mobilenetv3, swin_transformer
from torchvision.models.detection import faster_rcnn, ssdlite
from torchvision.models.detection.backbone_utils import _mobilenet_extractor
from torchvision.models.segmentation import deeplabv3, lraspp
from torchvision.ops import misc as misc_nn_ops

WIDTH = 0.25
SEED = 20261205


def _backbone(**kw):
    return mobilenetv3.mobilenet_v3_large(weights=None, width_mult=WIDTH, **kw)


def make_deeplabv3():
    model = deeplabv3._deeplabv3_mobilenetv3(_backbone(dilated=True), num_classes=5, aux=False)
    # DeepLabHead fixes 256 channels; the same layers at 32.
    head = model.classifier
    in_channels = head[0].convs[0][0].in_channels
    model.classifier = nn.Sequential(
        deeplabv3.ASPP(in_channels, [12, 24, 36], out_channels=32),
        nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 5, 1))
    return model


def make_lraspp():
    return lraspp._lraspp_mobilenetv3(_backbone(dilated=True), num_classes=5)


def make_ssdlite():
    # torchvision's ssdlite320_mobilenet_v3_large passes its kwargs to the
    # backbone, so width_mult narrows it; the heads follow the backbone's widths.
    return ssdlite.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=7, width_mult=WIDTH,
        score_thresh=0.152, detections_per_img=100, topk_candidates=60)


def make_fasterrcnn():
    # fasterrcnn_mobilenet_v3_large_320_fpn's construction with the widths narrowed:
    # the same backbone extractor, anchors and RPN/ROI settings.
    backbone = _mobilenet_extractor(_backbone(norm_layer=nn.BatchNorm2d), True, 3)
    fpn = backbone.fpn
    # The extractor fixes 256 FPN channels; rebuild the FPN at 32 with the same blocks.
    in_list = [blk[0].in_channels for blk in fpn.inner_blocks]
    backbone.fpn = torchvision.ops.FeaturePyramidNetwork(
        in_list, 32, extra_blocks=torchvision.ops.feature_pyramid_network.LastLevelMaxPool())
    backbone.out_channels = 32
    anchor_sizes = ((32, 64, 128, 256, 512,),) * 3
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    box_head = faster_rcnn.TwoMLPHead(32 * 7 * 7, 64)
    box_predictor = faster_rcnn.FastRCNNPredictor(64, 7)
    return faster_rcnn.FasterRCNN(
        backbone, None, rpn_anchor_generator=faster_rcnn.AnchorGenerator(anchor_sizes, aspect_ratios),
        box_head=box_head, box_predictor=box_predictor,
        min_size=320, max_size=640, rpn_pre_nms_top_n_test=150, rpn_post_nms_top_n_test=150,
        rpn_score_thresh=0.05, box_score_thresh=0.165, box_detections_per_img=100)


def make_swin():
    return swin_transformer.SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[1, 1, 2, 1], num_heads=[1, 2, 2, 4],
        window_size=[7, 7], stochastic_depth_prob=0.2, num_classes=10)


class UNet(nn.Module):
    """A U-Net whose skip connections crop the encoder's map to the decoder's
    (the original paper's valid-convolution form), as torch code writes it."""

    def __init__(self, c=8):
        super().__init__()
        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3), nn.BatchNorm2d(o), nn.ReLU(),
                                 nn.Conv2d(o, o, 3), nn.BatchNorm2d(o), nn.ReLU())
        self.down1, self.down2, self.mid = block(3, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.dec2 = block(4 * c, 2 * c)
        self.up1 = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.dec1 = block(2 * c, c)
        self.head = nn.Conv2d(c, 2, 1)

    @staticmethod
    def crop(skip, like):
        h, w = like.shape[-2:]
        top = (skip.shape[-2] - h) // 2
        left = (skip.shape[-1] - w) // 2
        return skip[..., top:top + h, left:left + w]

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(nn.functional.max_pool2d(d1, 2))
        m = self.mid(nn.functional.max_pool2d(d2, 2))
        u2 = self.up2(m)
        u2 = self.dec2(torch.cat([self.crop(d2, u2), u2], 1))
        u1 = self.up1(u2)
        u1 = self.dec1(torch.cat([self.crop(d1, u1), u1], 1))
        return self.head(u1)


def coarsen_weights(model):
    """Rounds every weight to 33 levels of a power-of-two scale, so the float32
    bytes are mostly zero bits and git's compression keeps the files small. The
    graphs and the arithmetic kiln does on them are unchanged."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                scale = 2.0 ** torch.ceil(torch.log2(p.abs().max()))
                p.copy_(torch.round(p / scale * 16) / 16 * scale)


def calibrate(model, kind, images):
    """BatchNorm statistics from seeded images, in training mode (no gradients)."""
    with torch.no_grad():
        for bn in model.modules():
            if isinstance(bn, nn.BatchNorm2d):
                bn.reset_running_stats()
                bn.momentum = None  # a plain average over the calibration batches
        if kind == "detector":
            model.backbone.train()
            batch, _ = model.transform(images)
            model.backbone(batch.tensors)
        else:
            model.train()
            for img in images:
                model(img.unsqueeze(0).expand(2, -1, -1, -1))
    model.eval()


# name: (constructor, kind, input shape, another input shape, dynamic axes of the input)
MODELS = {
    "deeplabv3": (make_deeplabv3, "segmenter", (2, 3, 64, 96), (1, 3, 72, 56),
                  {0: "batch", 2: "height", 3: "width"}),
    "lraspp": (make_lraspp, "segmenter", (2, 3, 64, 96), (1, 3, 72, 56),
               {0: "batch", 2: "height", 3: "width"}),
    "ssdlite": (make_ssdlite, "detector", (3, 240, 320), (3, 200, 160), {1: "height", 2: "width"}),
    "fasterrcnn": (make_fasterrcnn, "detector", (3, 240, 320), (3, 200, 160),
                   {1: "height", 2: "width"}),
    # Swin's windows need H and W fixed by the exporter (torchvision computes
    # its attention mask in Python from them), so only the batch is dynamic.
    "swin": (make_swin, "classifier", (2, 3, 112, 112), (3, 3, 112, 112), {0: "batch"}),
    "unet": (lambda: UNet(), "segmenter", (1, 3, 92, 108), (2, 3, 101, 77),
             {0: "batch", 2: "height", 3: "width"}),
}


def seeded_image(shape, gen):
    """A smooth image with edges, so detectors see structure, not white noise."""
    c, h, w = shape[-3:]
    yy, xx = torch.meshgrid(torch.linspace(0, 1, h), torch.linspace(0, 1, w), indexing="ij")
    img = torch.zeros(c, h, w)
    for _ in range(6):
        cy, cx, r = torch.rand(3, generator=gen)
        color = torch.rand(c, 1, 1, generator=gen)
        img += color * (((yy - cy) ** 2 + (xx - cx) ** 2) < (0.2 * r + 0.05) ** 2).float()
    img += 0.05 * torch.randn(c, h, w, generator=gen)
    # Quantized as an 8-bit image is (k/256, exact in float32), which also compresses.
    return (img.clamp(0, 1) * 255).round() / 256


def save_case(folder, sess, x, output_names):
    """One data set in run_numpy_cases.py's layout: in_image.npy, want_K.npy."""
    os.makedirs(folder, exist_ok=True)
    np.save(os.path.join(folder, "in_image.npy"), x)
    outputs = sess.run(None, {"image": x})
    for k, o in enumerate(outputs):
        np.save(os.path.join(folder, f"want_{k}.npy"), o)
    return outputs


def export(name, out_dir, ort):
    make, kind, shape, other_shape, dynamic = MODELS[name]
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model = make()
    coarsen_weights(model)
    images = [seeded_image(shape, gen) for _ in range(4)]
    calibrate(model, "detector" if kind == "detector" else "other", images)
    if kind == "detector":
        x = seeded_image(shape, gen)
        args = ([x],)
    else:
        x = torch.stack([seeded_image(shape, gen) for _ in range(shape[0])]) if len(shape) == 4 \
            else seeded_image(shape, gen)
        args = (x,)
    with torch.no_grad():
        y = model(*args)
    if kind == "detector":
        output_names = list(y[0])  # the exporter keeps the dict's order
        outputs = [y[0][n] for n in output_names]
    elif isinstance(y, dict):
        outputs, output_names = [y["out"]], ["out"]
    else:
        outputs, output_names = [y], ["out"]
    path = os.path.join(out_dir, name + ".onnx")
    out_axes = {"boxes": {0: "detections"}, "scores": {0: "detections"},
                "labels": {0: "detections"}}
    if kind != "detector":
        out_axes = {"out": {0: "batch"}}
        if kind == "segmenter":
            out_axes["out"].update({2: "out_height", 3: "out_width"})
    # The TorchScript exporter: torch.export cannot trace the detectors'
    # data-dependent NMS, and users of these models export them this way.
    torch.onnx.export(model, args, path, input_names=["image"], output_names=output_names,
                      dynamic_axes={"image": dynamic, **out_axes}, opset_version=17,
                      dynamo=False)
    onnx.checker.check_model(path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    folder = os.path.join(out_dir, name)
    ort_out = save_case(os.path.join(folder, "a"), sess, x.numpy(), output_names)
    other = seeded_image(other_shape, gen)
    if kind != "detector":
        other = torch.stack([other] + [seeded_image(other_shape, gen)
                                       for _ in range(other_shape[0] - 1)])
    other_out = save_case(os.path.join(folder, "b"), sess, other.numpy(), output_names)
    summary = ", ".join(f"{n} {list(o.shape)}" for n, o in zip(output_names, ort_out))
    summary += "; other size: " + ", ".join(f"{list(o.shape)}" for o in other_out)
    agree = all(o.shape == t.shape and np.allclose(o, t.numpy(), atol=1e-3, rtol=1e-3)
                for o, t in zip(ort_out, outputs))
    print(f"{name}: {os.path.getsize(path) // 1024} KiB; onnxruntime {summary}; "
          f"torch agrees: {agree}")


def main():
    import onnxruntime as ort
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "vision")
    names = sys.argv[2:] or list(MODELS)
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        export(name, out_dir, ort)


if __name__ == "__main__":
    main()
