#!/usr/bin/env bash
# The runtime must never depend on LLVM or MLIR: a server that embeds it loads
# artifacts without the compiler. Nor on libcuda: the driver is opened with dlopen,
# so the runtime loads on machines without a GPU. Fails when a NEEDED entry names
# any of them.
set -euo pipefail
lib=${1:?usage: check-needed.sh LIBRARY}
needed=$(readelf -d "$lib" | grep NEEDED || true)
echo "$needed"
if echo "$needed" | grep -qiE 'llvm|mlir|libcuda\.'; then
  echo "error: $lib depends on LLVM, MLIR or the CUDA driver" >&2
  exit 1
fi
echo "ok: $lib has no LLVM, MLIR or CUDA driver dependency"
