#!/usr/bin/env bash
# Builds and runs examples/ the way an application would: kiln installed into a
# prefix (runtime and tools) which is then moved, the torch encoder compiled to a
# .so by the moved kiln-compile, a C program linking that .so (strict C99 with cc,
# and through examples/CMakeLists.txt with find_package(kiln CONFIG)) and a C++
# program loading it at run time. Their outputs must match torch's
# (test/models/encoder) within 1e-4.
#   run-examples.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$(cd "${1:?usage: run-examples.sh BUILD_DIR WORK_DIR}" && pwd)
work=${2:?usage: run-examples.sh BUILD_DIR WORK_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)

# Installed the way a user installs kiln, then moved: nothing may depend on the
# prefix it was installed to.
for component in kiln_runtime kiln_tools; do
  cmake --install "$build" --prefix "$work/installed" --component "$component" >/dev/null
done
mv "$work/installed" "$work/prefix"
prefix=$work/prefix
"$prefix/bin/kiln-compile" --version
"$prefix/bin/kiln-compile" "$src/test/models/encoder.onnx" -o "$work/encoder.so" --arch none \
  --cache-dir "$work/kernel-cache"

"$python" - "$src/test/models/encoder" "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
src, work = sys.argv[1:]
x = numpy_helper.to_array(onnx.load_tensor(f"{src}/input_0.pb")).astype(np.float32)
x.tofile(f"{work}/x.f32")
open(f"{work}/x.dims", "w").write(" ".join(map(str, x.shape)) + "\n")
PY
read -r batch seq feat < "$work/x.dims"

# The C API in strict C99 with every warning an error, straight from the header.
cc -std=c99 -Wall -Wextra -pedantic -Werror "$src/examples/c/run_encoder.c" -I"$prefix/include" \
  "$work/encoder.so" -L"$prefix/lib" -lkiln_runtime -Wl,-rpath,"$prefix/lib" -Wl,-rpath,"$work" \
  -o "$work/run_encoder_cc"
# And as a CMake project: find_package(kiln CONFIG REQUIRED) -> kiln::runtime.
cmake -S "$src/examples" -B "$work/examples-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DKILN_MODEL_SO="$work/encoder.so" >/dev/null
cmake --build "$work/examples-build" >/dev/null
cp "$work/examples-build/run_encoder" "$work/run_encoder"
cp "$work/examples-build/run_model" "$work/run_model"

# The installed kiln-run runs the .so with the runtime alone.
"$prefix/bin/kiln-run" "$work/encoder.so" --input "x=$src/test/models/encoder/input_0.pb" --print

echo "== C: run_encoder (links encoder.so; built by cc -std=c99 and by CMake)"
"$work/run_encoder_cc" "$work/x.f32" "$batch" "$seq" "$work/cc-y.f32"
"$work/run_encoder" "$work/x.f32" "$batch" "$seq" "$work/c-y.f32"
echo "== C++: run_model (loads encoder.so at run time)"
"$work/run_model" "$work/encoder.so" "$work/x.f32:${batch}x${seq}x${feat}" "$work/cpp-y"

"$python" - "$src/test/models/encoder" "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
src, work = sys.argv[1:]
want = numpy_helper.to_array(onnx.load_tensor(f"{src}/output_0.pb")).astype(np.float64)
for name in ("cc-y.f32", "c-y.f32", "cpp-y0.f32"):
    got = np.fromfile(f"{work}/{name}", dtype=np.float32).astype(np.float64)
    if got.size != want.size:
        sys.exit(f"{name}: {got.size} values, torch has {want.size}")
    diff = float(np.abs(got - want.ravel()).max())
    print(f"{name}: max abs diff to torch {diff:.3g}")
    if diff > 1e-4:
        sys.exit(f"{name} differs from torch by {diff}")
print("examples OK")
PY
