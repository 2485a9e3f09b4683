#!/usr/bin/env bash
# Cold compile time and peak memory of kiln beside IREE, on the same models and
# machine, in one run (issue 30). Nothing here fails on a time: it prints a
# table of seconds, peak RSS and the kiln/IREE ratios.
#
#   bench/compile-vs-iree.sh [BUILD_DIR] [VENV_DIR]
#
# BUILD_DIR defaults to build/, VENV_DIR to build/bench-venv (made by
# scripts/install-bench-deps.sh when missing). KILN_BENCH_MODELS picks models
# (default "resnet50 bert-small bert-base"), KILN_BENCH_REPEAT runs each
# compile N times and keeps the fastest (default 1).
#
# Both compile from the ONNX file with dynamic batch (and sequence) dims for
# one GPU architecture, sm_80: kiln with `--arch sm_80 --no-host` (what a GPU
# deployment ships: cubins, PTX, plan and weights), IREE with iree-import-onnx
# then iree-compile for its CUDA target (both steps timed, their peaks the
# larger). sm_80 because IREE 3.13 refuses `--iree-cuda-target=sm_90` (and
# sm_80) with "missing GPU target in #hal.executable.target" and knows no
# Hopper product name; it takes `a100`, which is sm_80. kiln's default
# compile (sm_80 and sm_90, the host-emulation library too) is the last
# columns. kiln starts from an empty kernel cache each time,
# so no compile is a cache hit. Peak RSS is the maximum resident set of the
# process (GNU time's %M), against the model's weights in bytes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
venv=${2:-$build/bench-venv}
models=${KILN_BENCH_MODELS:-resnet50 bert-small bert-base}
repeat=${KILN_BENCH_REPEAT:-1}
compile=$build/bin/kiln-compile
[ -x "$compile" ] || { echo "compile-vs-iree: $compile is missing (build first)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "compile-vs-iree: needs GNU time at /usr/bin/time" >&2; exit 1; }
[ -x "$venv/bin/iree-compile" ] || "$root/scripts/install-bench-deps.sh" "$venv"
python=$venv/bin/python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs a command under GNU time `repeat` times; prints "SECONDS PEAK_KB" of the
# fastest run. Each run starts with no kernel cache (kiln's caches live under
# $work/cache-*), so every one is cold. A failing command stops the benchmark,
# naming it.
measure() {
  local best_s="" best_kb="" out
  for _ in $(seq "$repeat"); do
    rm -rf "$work"/cache-*
    if ! /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/log" 2>&1; then
      echo "compile-vs-iree: failed: $*" >&2
      tail -5 "$work/log" >&2
      exit 1
    fi
    read -r s kb <"$work/time"
    if [ -z "$best_s" ] || awk "BEGIN{exit !($s < $best_s)}"; then best_s=$s best_kb=$kb; fi
  done
  echo "$best_s $best_kb"
}

make_model() { # NAME OUT
  case $1 in
    resnet50) "$python" "$root/bench/make_resnet50.py" "$2" ;;
    bert-small) "$python" "$root/bench/make_bert_encoder.py" "$2" --layers 4 --hidden 512 --heads 8 --ff 2048 ;;
    bert-base) "$python" "$root/bench/make_bert_encoder.py" "$2" ;;
    *) echo "compile-vs-iree: unknown model '$1'" >&2; exit 1 ;;
  esac
}

echo "| model | weights MB | kiln s | IREE s | kiln/IREE | kiln peak MB | kiln peak / weights | IREE peak MB | kiln default s | kiln default peak MB |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for m in $models; do
  onnx=$work/$m.onnx
  make_model "$m" "$onnx"
  weights=$("$python" -c "
import onnx, numpy as np
from onnx import numpy_helper
m = onnx.load('$onnx')
print(sum(numpy_helper.to_array(t).nbytes for t in m.graph.initializer))")
  read -r ks kkb < <(measure env KILN_CACHE_DIR="$work/cache-gpu" \
    "$compile" "$onnx" -o "$work/$m.kiln" --arch sm_80 --no-host)
  read -r ds dkb < <(measure env KILN_CACHE_DIR="$work/cache-default" \
    "$compile" "$onnx" -o "$work/$m.default.kiln")
  read -r is ikb < <(measure "$venv/bin/iree-import-onnx" "$onnx" -o "$work/$m.mlir")
  read -r cs ckb < <(measure "$venv/bin/iree-compile" "$work/$m.mlir" -o "$work/$m.vmfb" \
    --iree-hal-target-device=cuda --iree-cuda-target=a100)
  awk -v m="$m" -v w="$weights" -v ks="$ks" -v kkb="$kkb" -v is="$is" -v ikb="$ikb" \
      -v cs="$cs" -v ckb="$ckb" -v ds="$ds" -v dkb="$dkb" 'BEGIN {
    iree = is + cs; ipk = (ikb > ckb ? ikb : ckb)
    printf "| %s | %.0f | %.2f | %.2f | %.2fx | %.0f | %.2fx | %.0f | %.2f | %.0f |\n",
      m, w / 1e6, ks, iree, ks / iree, kkb / 1024, kkb * 1024 / w, ipk / 1024, ds, dkb / 1024 }'
  rm -f "$work/$m".*
done
