#!/usr/bin/env bash
# Installs what bench/compile-vs-iree.sh compares kiln against into a virtual
# environment:
#   scripts/install-bench-deps.sh VENV_DIR
# IREE's compiler from PyPI (iree-compile and iree-import-onnx, the CUDA
# target included) and onnx/numpy for the model generators. Only the benchmark
# needs it; no test does. Idempotent.
set -euo pipefail
venv=${1:?usage: install-bench-deps.sh VENV_DIR}
BENCH_PACKAGES=(
  "iree-base-compiler[onnx]==3.13.0"
  "onnx==1.22.0"
  "numpy==2.2.6"
)
source "$(dirname "$0")/pinned-venv.sh"
pinned_venv "$venv" "${BENCH_PACKAGES[@]}"
for tool in iree-compile iree-import-onnx; do
  test -x "$venv/bin/$tool" || { echo "install-bench-deps: no $tool in $venv/bin" >&2; exit 1; }
done
