#!/usr/bin/env bash
# What test/models/export_torch_models.py, export_decoder_models.py,
# export_vision_models.py and
# export_genai_model.py need to re-export the committed torch and
# onnxruntime-genai models. Tests do not need it (the exported files are
# committed); run it only to change those models. torch from PyPI pulls several
# GB of CUDA wheels. onnxruntime-genai 0.18.0 needs onnxruntime >= 1.31; both are
# pinned so that its model builder writes the same graph.
set -euo pipefail
python3 -m pip install --quiet torch==2.15.0 torchvision==0.29.2 onnxscript==0.7.2 transformers==5.25.0 \
  onnxruntime-genai==0.18.0 onnxruntime==1.32.0
