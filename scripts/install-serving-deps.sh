#!/usr/bin/env bash
# Installs what serving kiln models needs into a virtual environment:
#   scripts/install-serving-deps.sh VENV_DIR
# Triton Inference Server from PyPI (nvidia-pytriton ships the server binary,
# its libraries and the Python backend; the `tritonserver` package there is a
# placeholder), Triton's Python clients, and what the serving tests use. The
# venv comes from /usr/bin/python3: Triton's Python backend stub wants the
# libpython it matches. Idempotent.
set -euo pipefail
venv=${1:?usage: install-serving-deps.sh VENV_DIR}
SERVING_PACKAGES=(
  "nvidia-pytriton==0.7.0"
  "tritonclient[http,grpc]==2.73.0"
  "onnx==1.22.0"
  "pytest==9.2.0"
)
source "$(dirname "$0")/pinned-venv.sh"
pinned_venv "$venv" "${SERVING_PACKAGES[@]}"
server=$("$venv/bin/python" -c "import os, pytriton; print(os.path.join(os.path.dirname(pytriton.__file__), 'tritonserver', 'bin', 'tritonserver'))")
test -x "$server" || { echo "install-serving-deps: no tritonserver at $server" >&2; exit 1; }
echo "$server"
