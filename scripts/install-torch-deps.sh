#!/usr/bin/env bash
# PyTorch for the tests of kiln's torch entry points (torch.compile's "kiln"
# backend, kiln.torch.explain, kiln.export), in a virtual environment of its own:
#   scripts/install-torch-deps.sh VENV_DIR
# torch from PyPI pulls about 4 GB of CUDA wheels (about a minute here once
# pip's cache is warm); a venv that already has the pinned versions is reused as
# it is, so only the first run pays. torch.onnx's exporter needs onnxscript;
# torchvision 0.29.2 is the newest on PyPI (it asks for torch >= 2.14), for
# its model zoo only (its compiled ops are not used). The kiln package itself
# goes in afterwards (scripts/install-python-package.sh BUILD_DIR VENV_DIR).
set -euo pipefail
venv=${1:?usage: install-torch-deps.sh VENV_DIR}
TORCH_PACKAGES=(
  "torch==2.15.0"
  "torchvision==0.29.2"
  "onnxscript==0.7.2"
  "onnx==1.22.0"
  "numpy==2.2.6"
  "pytest==9.2.0"
)
source "$(dirname "$0")/pinned-venv.sh"
pinned_venv "$venv" "${TORCH_PACKAGES[@]}"
"$venv/bin/python" -c "import torch, torchvision, onnxscript" ||
  { echo "install-torch-deps: torch, torchvision or onnxscript does not import in $venv" >&2; exit 1; }
