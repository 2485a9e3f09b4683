#!/usr/bin/env bash
# `make demo`: kiln end to end on the bundled example, a 2-layer transformer encoder
# exported from torch with dynamic batch and sequence (test/models/encoder.onnx).
# It compiles the model to a shared object, runs it on the GPU when there is one
# and otherwise in host emulation, prints the outputs against torch's, and
# measures latency.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
cd "$(dirname "$0")/.."
out=$build/demo
model=test/models/encoder.onnx
mkdir -p "$out"

echo "== kiln-compile $model -o $out/encoder.so --report $out/report.json"
"$build/bin/kiln-compile" "$model" -o "$out/encoder.so" --report "$out/report.json" \
  --bind batch=2,seq=5
python3 - "$out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["memory_plan"]
print(f"   {len(r['kernels'])} generated kernels (cubins for sm_{', sm_'.join(map(str, r['cubin_archs']))}),"
      f" {len(r['library_calls'])} library calls, {r['weights']['count']} weights")
for k in r["kernels"]:
    print(f"     {k['name']:34} {k['schedule']:9} fuses {', '.join(k['ops'])}")
print(f"   memory plan at batch=2, seq=5: arena {m['arena_bytes']} bytes"
      f" instead of {m['sum_of_buffers_bytes']} for separate buffers")
print("   compile stages (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in r["stage_ms"].items()))
PY
echo
echo "== kiln-run $out/encoder.so (outputs, then latency)"
"$build/bin/kiln-run" "$out/encoder.so" --input x=test/models/encoder/input_0.pb \
  --output-dir "$out/outputs" --print --bench 200 --warmup 10
python3 test/run/compare_outputs.py "$out/outputs/output_0.pb" test/models/encoder/output_0.pb \
  --atol 1e-4 | sed 's/^/   against torch: /'
