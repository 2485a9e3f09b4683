#!/usr/bin/env bash
# libkiln_runtime exports the C API and nothing else (runtime/src/exports.map):
# no C++ symbol, no Abseil or reference-kernel symbol can clash with an
# application's own copies. Fails listing any defined dynamic symbol not kiln_*.
set -euo pipefail
lib=${1:?usage: check-exports.sh LIBRARY}
others=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^kiln_' || true)
count=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -c '^kiln_' || true)
if [ -n "$others" ]; then
  echo "error: $lib exports symbols outside the C API:" >&2
  echo "$others" | head -20 >&2
  exit 1
fi
echo "ok: $lib exports $count kiln_* symbols and nothing else"
