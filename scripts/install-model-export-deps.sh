#!/usr/bin/env bash
# What test/models/export_torch_models.py and export_decoder_models.py need to
# re-export the committed torch models. Tests do not need it (the exported files
# are committed); run it only to change those models. torch from PyPI pulls several GB of CUDA wheels.
set -euo pipefail
python3 -m pip install --quiet torch==2.15.0 onnxscript==0.7.2 transformers==5.25.0
