#!/usr/bin/env bash
# Builds and runs examples/ the way an application would: libkiln_runtime and its
# headers installed into a prefix, the torch encoder compiled to a .so with
# kiln-compile, a C program linking that .so and a C++ program loading it at run
# time, both compiled with plain cc/c++ against the installed headers. Their
# outputs must match torch's (test/models/encoder) within 1e-4.
#   run-examples.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$(cd "${1:?usage: run-examples.sh BUILD_DIR WORK_DIR}" && pwd)
work=${2:?usage: run-examples.sh BUILD_DIR WORK_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)

cmake --install "$build" --prefix "$work/prefix" --component kiln_runtime >/dev/null
"$build/bin/kiln-compile" "$src/test/models/encoder.onnx" -o "$work/encoder.so" --arch none \
  --cache-dir "$build/kernel-cache"

"$python" - "$src/test/models/encoder" "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
src, work = sys.argv[1:]
x = numpy_helper.to_array(onnx.load_tensor(f"{src}/input_0.pb")).astype(np.float32)
x.tofile(f"{work}/x.f32")
open(f"{work}/x.dims", "w").write(" ".join(map(str, x.shape)) + "\n")
PY
read -r batch seq feat < "$work/x.dims"

prefix=$work/prefix
cc -std=c11 -Wall -Werror "$src/examples/c/run_encoder.c" -I"$prefix/include" \
  "$work/encoder.so" -L"$prefix/lib" -lkiln_runtime -Wl,-rpath,"$prefix/lib" -Wl,-rpath,"$work" \
  -o "$work/run_encoder"
c++ -std=c++17 -Wall -Werror "$src/examples/cpp/run_model.cpp" -I"$prefix/include" \
  -L"$prefix/lib" -lkiln_runtime -Wl,-rpath,"$prefix/lib" -o "$work/run_model"

echo "== C: run_encoder (links encoder.so)"
"$work/run_encoder" "$work/x.f32" "$batch" "$seq" "$work/c-y.f32"
echo "== C++: run_model (loads encoder.so at run time)"
"$work/run_model" "$work/encoder.so" "$work/x.f32:${batch}x${seq}x${feat}" "$work/cpp-y"

"$python" - "$src/test/models/encoder" "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
src, work = sys.argv[1:]
want = numpy_helper.to_array(onnx.load_tensor(f"{src}/output_0.pb")).astype(np.float64)
for name in ("c-y.f32", "cpp-y0.f32"):
    got = np.fromfile(f"{work}/{name}", dtype=np.float32).astype(np.float64)
    if got.size != want.size:
        sys.exit(f"{name}: {got.size} values, torch has {want.size}")
    diff = float(np.abs(got - want.ravel()).max())
    print(f"{name}: max abs diff to torch {diff:.3g}")
    if diff > 1e-4:
        sys.exit(f"{name} differs from torch by {diff}")
print("examples OK")
PY
