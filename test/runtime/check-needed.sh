#!/usr/bin/env bash
# The runtime must never depend on LLVM or MLIR: a server that embeds it loads
# artifacts without the compiler. Fails when a NEEDED entry names either.
set -euo pipefail
lib=${1:?usage: check-needed.sh LIBRARY}
needed=$(readelf -d "$lib" | grep NEEDED || true)
echo "$needed"
if echo "$needed" | grep -qiE 'llvm|mlir'; then
  echo "error: $lib depends on LLVM or MLIR" >&2
  exit 1
fi
echo "ok: $lib has no LLVM or MLIR dependency"
