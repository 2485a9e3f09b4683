#!/usr/bin/env bash
# Installs what the Ray Serve example (examples/ray_serve) needs into a virtual
# environment: the kiln Python package built against BUILD_DIR
# (install-python-package.sh) and the pinned Ray Serve of
# examples/ray_serve/requirements.txt.
#   scripts/install-ray-serve-deps.sh BUILD_DIR VENV_DIR
# Idempotent.
set -euo pipefail
build=${1:?usage: install-ray-serve-deps.sh BUILD_DIR VENV_DIR}
venv=${2:?usage: install-ray-serve-deps.sh BUILD_DIR VENV_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
"$src/scripts/install-python-package.sh" "$build" "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$src/examples/ray_serve/requirements.txt"
"$venv/bin/python" -c "import ray; print('ray', ray.__version__)"
