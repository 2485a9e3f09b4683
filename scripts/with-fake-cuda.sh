#!/usr/bin/env bash
# scripts/with-fake-cuda.sh COMMAND [ARG...]: runs COMMAND over kiln's fake CUDA
# stack instead of a GPU: the fake driver (libcuda.so.1, whose device memory is
# host memory and whose launches call each kernel's host-emulation launcher) and
# the cuBLASLt and cuDNN doubles beside it (libcublasLt.so.13, libcudnn.so.9),
# all built under BUILD/test/fake-cuda. For example:
#
#   scripts/with-fake-cuda.sh build/bin/kiln-run model.kiln --backend cuda --profile --input x=x.npy
#
# Artifacts must have been compiled with kernels in the cache the driver reads
# (KILN_FAKE_CUDA_KERNELS; default BUILD/kernel-cache, where kiln-compile puts
# them when KILN_CACHE_DIR points there, as the tests do). KILN_BUILD picks the
# build folder (default build/ beside this script's repository).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/with-fake-cuda.sh COMMAND [ARG...]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KILN_BUILD:-$root/build}
fake=$build/test/fake-cuda
for lib in libcuda.so.1 libcublasLt.so.13 libcudnn.so.9; do
  [ -e "$fake/$lib" ] || {
    echo "with-fake-cuda: $fake/$lib is missing (build the project first: cmake --build $build)" >&2
    exit 1
  }
done
export LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KILN_FAKE_CUDA_KERNELS=${KILN_FAKE_CUDA_KERNELS:-$build/kernel-cache}
exec "$@"
