#!/usr/bin/env bash
# Installs onnxruntime into a virtual environment, for the tests that check
# kiln against it (onnxruntime's own contrib ops, which no other reference
# implements):
#   scripts/install-onnxruntime-deps.sh VENV_DIR
# CPU wheel from PyPI, pinned (about 30 MB). Idempotent: a venv that has the
# pinned versions is reused as it is.
set -euo pipefail
venv=${1:?usage: install-onnxruntime-deps.sh VENV_DIR}
ORT_PACKAGES=(
  "onnxruntime==1.32.0"
  "onnx==1.22.0"
  "numpy==2.2.6"
)
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
have=$("$venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null || true)
for spec in "${ORT_PACKAGES[@]}"; do
  if ! grep -qx "$spec" <<<"$have"; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${ORT_PACKAGES[@]}"
    break
  fi
done
"$venv/bin/python" -c "import onnxruntime" || { echo "install-onnxruntime-deps: onnxruntime does not import in $venv" >&2; exit 1; }
