#!/usr/bin/env bash
# The compiler never links libkiln_runtime: the two halves share the artifact
# library, and a compiler that embedded the runtime could not be checked against
# an independent one. Fails when BINARY's NEEDED entries name libkiln_runtime.
set -euo pipefail
bin=${1:?usage: check-no-runtime.sh BINARY}
needed=$(readelf -d "$bin" | grep NEEDED || true)
if echo "$needed" | grep -q 'libkiln_runtime'; then
  echo "error: $bin links libkiln_runtime" >&2
  exit 1
fi
echo "ok: $bin does not link libkiln_runtime"
