#!/usr/bin/env bash
# Installs the kiln Python package (python/, nanobind + scikit-build-core) into a
# virtual environment from an existing build, in seconds:
#   scripts/install-python-package.sh BUILD_DIR VENV_DIR
# Plain `pip install ./python` builds kiln itself from source (minutes: the
# compiler); this installs the build's runtime and JIT into a temporary prefix
# and has the wheel bundle those libraries instead (the root CMakeLists.txt's
# KILN_PYTHON_PREFIX), so the tests and the serving venvs do not build kiln
# twice. The venv comes from /usr/bin/python3 (Debian's: the libpython servers
# such as Triton's Python backend match) with pinned packages. The installed
# package holds its own copy of the libraries: nothing links the build folder.
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

prefix=$(mktemp -d "${TMPDIR:-/tmp}/kiln-prefix-XXXXXX")
trap 'rm -rf "$prefix"' EXIT
for component in kiln_runtime kiln_jit kiln_tools; do
  cmake --install "$build" --prefix "$prefix" --component "$component" >/dev/null
done
# An earlier version of this script installed a prefix into the venv, which
# the module linked by absolute path; the package no longer needs it.
rm -rf "$(cd "$venv" && pwd)/kiln-prefix"
# --no-build-isolation: the pinned build requirements are already in the venv.
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --force-reinstall --no-deps \
  --config-settings "cmake.define.KILN_PYTHON_PREFIX=$prefix" "$src/python"
"$venv/bin/python" -c "import kiln; print('kiln', kiln.runtime_version(), 'jit' if kiln.has_jit else 'no jit')"
