#!/usr/bin/env bash
# Installs onnxruntime into a virtual environment, for the tests that check
# kiln against it (onnxruntime's own contrib ops, which no other reference
# implements):
#   scripts/install-onnxruntime-deps.sh VENV_DIR
# CPU wheel from PyPI, pinned (about 30 MB), and onnx-ir, which onnxruntime's
# weight-only quantizer (MatMulNBitsQuantizer) imports. Idempotent: a venv that has the
# pinned versions is reused as it is.
set -euo pipefail
venv=${1:?usage: install-onnxruntime-deps.sh VENV_DIR}
ORT_PACKAGES=(
  "onnxruntime==1.32.0"
  "onnx==1.22.0"
  "numpy==2.2.6"
  "onnx-ir==1.1.0"
)
source "$(dirname "$0")/pinned-venv.sh"
pinned_venv "$venv" "${ORT_PACKAGES[@]}"
"$venv/bin/python" -c "import onnxruntime" || { echo "install-onnxruntime-deps: onnxruntime does not import in $venv" >&2; exit 1; }
