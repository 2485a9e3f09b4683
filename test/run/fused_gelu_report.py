"""fused-gelu.test's reading of kiln-compile --report files (fp32, tf32, bf16
builds of one model): per report its kernel launches (the roofline's kernel
steps), how many compute an erf (a GELU kernel), and each matmul's activation
in step order; then the roofline's kernel bytes of the tf32 build against the
fp32 one."""
import json
import sys

reports = {}
for path in sys.argv[1:]:
    r = json.load(open(path))
    reports[r["precision"]] = r
    erf_kernels = {k["name"] for k in r["kernels"] if "kiln.erf" in k["ops"]}
    launches = [s["name"] for s in r["roofline"]["steps"] if s["kind"] == "kernel"]
    erf = sum(1 for name in launches if name in erf_kernels)
    activations = [c.get("activation", "?") for c in r["library_calls"] if c["op"] == "kiln.matmul"]
    print(f"{r['precision']}: {len(launches)} kernel launches, {erf} with erf; "
          f"matmul activations {','.join(activations)}")
fp32, tf32 = reports["fp32"]["roofline"]["kernel_bytes"], reports["tf32"]["roofline"]["kernel_bytes"]
erf_kernels = {k["name"] for k in reports["fp32"]["kernels"] if "kiln.erf" in k["ops"]}
gelu = sum(s["bytes"] for s in reports["fp32"]["roofline"]["steps"]
           if s["kind"] == "kernel" and s["name"] in erf_kernels)
if tf32 == fp32 - gelu:
    print(f"tf32 kernel bytes = fp32 kernel bytes - {gelu} (the GELU kernels')")
else:
    print(f"tf32 kernel bytes {tf32}, fp32 {fp32}, the fp32 GELU kernels {gelu}")
