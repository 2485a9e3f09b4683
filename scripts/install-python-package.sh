#!/usr/bin/env bash
# Installs the kiln Python package (python/, nanobind + scikit-build-core) into a
# virtual environment, against kiln's runtime and JIT installed from a build:
#   scripts/install-python-package.sh BUILD_DIR VENV_DIR
# The venv comes from /usr/bin/python3 (Debian's: the libpython servers such as
# Triton's Python backend match) with pinned packages; kiln is installed into
# VENV_DIR/kiln-prefix (components kiln_runtime and kiln_jit; one per venv, so
# two venvs install at once), which the package's native module links by
# absolute path: keep it where it is.
set -euo pipefail
build=$(cd "${1:?usage: install-python-package.sh BUILD_DIR VENV_DIR}" && pwd)
venv=${2:?usage: install-python-package.sh BUILD_DIR VENV_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)

PYTHON_PACKAGES=(
  "nanobind==3.1.0"
  "scikit-build-core==1.1.2"
  "pytest==9.2.0"
  "numpy==2.2.6"
  "onnx==1.22.0"
)
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${PYTHON_PACKAGES[@]}"

prefix=$(cd "$venv" && pwd)/kiln-prefix
rm -rf "$prefix"
for component in kiln_runtime kiln_jit; do
  cmake --install "$build" --prefix "$prefix" --component "$component" >/dev/null
done
# --no-build-isolation: the pinned build requirements are already in the venv.
CMAKE_PREFIX_PATH=$prefix "$venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --force-reinstall --no-deps "$src/python"
"$venv/bin/python" -c "import kiln; print('kiln', kiln.runtime_version(), 'jit' if kiln.has_jit else 'no jit')"
