#!/usr/bin/env python3
"""Lints the SASS of kiln's generated kernels, without a GPU.

    sass-lint.py [--json OUT] [--tools DIR] [--max-violations N] CUBIN_DIR...

Each CUBIN_DIR holds sm_90 cubins and a manifest naming their kernels: either
`kiln-conformance --nvrtc --cubin-dir DIR` (kernels.json) or `kiln-compile
--dump-cubins DIR --report DIR/report.json` (the report's "kernels"). The SASS
comes from cuobjdump, which runs nvdisasm (the nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm wheels that scripts/install-deps.sh pins; --tools or
$KILN_CUDA_BINARY_TOOLS names another folder holding both). Rules (issue 16), for every kernel:

  local      no local memory: LOCAL and STACK are 0 and no LDL/STL.
  occupancy  at the runtime's 256-thread blocks, the registers and shared
             memory ptxas gave the kernel leave room for at least 50% of an
             SM's 2048 threads (sm_90: 64K registers, 228 KiB shared, 1 KiB of
             it reserved per block).
  divide     pointwise, row and reduction kernels run no integer-divide
             sequence (I2F.*.RP, the reciprocal estimate every integer divide
             by a run-time value starts with) and call no routine that does,
             inside any loop. Divides in the prologue (computing fast-division
             constants) are fine.

A kernel's manifest can say why a finding is expected (EXEMPTIONS: a model
that divides integers, a Det matrix too large for registers, Resize's and
GridSample's taps in double); those are counted and printed apart, not as
violations.
  vector     a pointwise or row kernel with a vector path (vector_width > 0) stores
             with STG.E.128 and, when the path loads inputs as vectors
             (vector_loads > 0; inputs broadcast along the innermost dim are a
             scalar per vector), loads with LDG.E.128.

Exit status 1 when any kernel breaks a rule, 2 when the tools or inputs are
missing. --json writes per kernel: registers, shared bytes, occupancy, SASS
instruction count, instructions inside loops, instructions per element, and
its violations. --roofline REPORT (kiln-compile --report of the same cubins,
--bind for the sizes) adds issue time as a third bound of each kernel step's
predicted time (docs/performance.md).
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys

THREADS_PER_BLOCK = 256  # the runtime's kBlockThreads (runtime/src/cuda/CudaExecutor.cpp)
SM90 = dict(threads=2048, blocks=32, registers=65536, shared=233472, reserved_shared=1024,
            register_unit=256)
LINTED_FOR_DIVIDES = ("pointwise", "row", "reduction")

INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
FUNCTION = re.compile(r"^\s*Function : (\S+)")
# A variant's entry point is its kernel's name tagged "_v<position>_<value>"
# per symbol it was built for (kiln/artifact/EntryName.h); manifests name kernels.
VARIANT_TAG = re.compile(r"(?:_v[0-9]+_[0-9]+)+$")
RESOURCE_FUNCTION = re.compile(r"^\s*Function (\S+):")
RESOURCE_FIELD = re.compile(r"(\w+(?:\[\d+\])?):(\d+)")
TARGET = re.compile(r"\b0x([0-9a-f]+)\b")


def find_tools(explicit):
    candidates = [explicit, os.environ.get("KILN_CUDA_BINARY_TOOLS")]
    try:
        import nvidia  # the wheels install under site-packages/nvidia/cu13/bin

        for base in nvidia.__path__:
            candidates.append(os.path.join(base, "cu13", "bin"))
    except ImportError:
        pass
    candidates.append("/usr/local/cuda/bin")
    for c in candidates:
        if c and os.access(os.path.join(c, "cuobjdump"), os.X_OK):
            return os.path.join(c, "cuobjdump")
    return None


def run(tool, *args):
    # cuobjdump -sass runs the nvdisasm beside it.
    env = dict(os.environ, NVDISASM_PATH=os.path.dirname(tool))
    p = subprocess.run([tool, *args], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{os.path.basename(tool)} {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def parse_sass(text):
    """{function: [(address, predicate, opcode, operands)]} from cuobjdump -sass."""
    functions, current = {}, None
    for line in text.splitlines():
        m = FUNCTION.match(line)
        if m:
            current = functions.setdefault(m.group(1), [])
            continue
        m = INSTR.search(line)
        if m and current is not None:
            body = m.group(2)
            pred = ""
            if body.startswith("@"):
                pred, _, body = body.partition(" ")
            opcode, _, operands = body.strip().partition(" ")
            current.append((int(m.group(1), 16), pred, opcode, operands))
    return functions


def parse_resources(text):
    out, current = {}, None
    for line in text.splitlines():
        m = RESOURCE_FUNCTION.match(line)
        if m:
            current = m.group(1)
            continue
        if current and "REG:" in line:
            out[current] = {k: int(v) for k, v in RESOURCE_FIELD.findall(line)}
            current = None
    return out


def loop_addresses(code):
    """Addresses of the instructions on a cycle of the function's control flow
    (strongly connected components of its instruction graph, Tarjan's
    algorithm), plus the routines those instructions call."""
    if not code:
        return set()
    index_of = {addr: i for i, (addr, _, _, _) in enumerate(code)}
    # Successors per instruction: fall through unless an unpredicated jump or
    # exit; a branch or call adds its target.
    succ = [[] for _ in code]
    calls = []
    for i, (addr, pred, op, operands) in enumerate(code):
        base = op.split(".")[0]
        # A jump is unconditional when neither a predicate guards it nor its
        # operands name a condition before the target (BRA !P1, 0x..;
        # BRA.DIV UR4, 0x..).
        jump_only = re.fullmatch(r"(`\()?0x[0-9a-f]+\)?", operands.strip()) is not None
        ends = not pred and (base in ("EXIT", "RET", "KILL") or
                             (base in ("BRA", "JMP") and jump_only) or base in ("BRX", "JMX"))
        if base in ("BRA", "JMP", "CALL"):
            m = TARGET.search(operands)
            if m and int(m.group(1), 16) in index_of:
                t = index_of[int(m.group(1), 16)]
                if base == "CALL":
                    calls.append((i, t))
                else:
                    succ[i].append(t)
        if not ends and i + 1 < len(code):
            succ[i].append(i + 1)
    # Callees are not successors of the call (it returns to the next
    # instruction); a callee's body runs from its entry to its first RET.
    # Iterative Tarjan over instructions.
    n = len(code)
    index, low, on_stack, stack, sccs = [None] * n, [0] * n, [False] * n, [], []
    counter = 0
    for root in range(n):
        if index[root] is not None:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            recurse = False
            for j in range(k, len(succ[v])):
                w = succ[v][j]
                if index[w] is None:
                    work.append((v, j + 1))
                    work.append((w, 0))
                    recurse = True
                    break
                if on_stack[w]:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in succ[v]:
                    sccs.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    in_loop = {i for comp in sccs for i in comp}
    # Routines called from inside a loop run inside it too.
    for caller, entry in calls:
        if caller in in_loop:
            j = entry
            while j < n:
                in_loop.add(j)
                if code[j][2].split(".")[0] == "RET":
                    break
                j += 1
    return {code[i][0] for i in in_loop}


def innermost_loops(code):
    """The innermost natural loops, as lists of their instructions: each
    backward branch (target at or before it) spans [target, branch];
    innermost spans hold no other span."""
    spans = set()
    for addr, _, op, operands in code:
        if op.split(".")[0] in ("BRA", "JMP"):
            m = TARGET.search(operands)
            if m and int(m.group(1), 16) <= addr:
                spans.add((int(m.group(1), 16), addr))
    inner = [a for a in spans
             if not any(b != a and a[0] <= b[0] and b[1] <= a[1] for b in spans)]
    return [[c for c in code if lo <= c[0] <= hi] for lo, hi in sorted(inner)]


def store_bytes(op):
    for suffix, size in ((".128", 16), (".64", 8), (".U16", 2), (".S16", 2), (".U8", 1), (".S8", 1)):
        if suffix in op:
            return size
    return 4


def instructions_per_element(info, code):
    """SASS instructions a pointwise kernel issues per result element: its
    innermost loop that stores the most (the grid-stride loop, which ptxas
    may unroll; the vector loop), divided by the elements its stores write a
    trip. One trip of an inner loop (a pool's window, a resize's taps)
    counts once, so this is a lower bound there. A kernel that streams its
    largest input (stream_bytes_a_trip: matmul_nbits' packed weights, the
    bytes a trip of its loop reads): its shortest innermost loop that loads
    from global memory, divided by them (a step's elements are that input's
    bytes then; the shortest loop is the one-row pass, so a lower bound for
    more rows). None for other
    schedules: a row kernel's warp and block paths, its shuffles' divergence
    fallbacks and its per-row work do not reduce to one count."""
    stream = info.get("stream_bytes_a_trip", 0)
    if stream:
        # (A loop with tensor-core instructions is matmul_nbits' pass for
        # many rows, not the one-row pass.)
        trips = [len(loop) for loop in innermost_loops(code)
                 if any(op.startswith("LDG") for _, _, op, _ in loop)
                 and not any(op.startswith("HMMA") for _, _, op, _ in loop)]
        return min(trips) / stream if trips else None
    if info.get("schedule") != "pointwise" or not info.get("result_bytes"):
        return None
    best = None
    for loop in innermost_loops(code):
        stored = sum(store_bytes(op) for _, _, op, _ in loop if op.startswith("STG"))
        elements = stored / info["result_bytes"]
        if elements and (best is None or elements > best[0]):
            best = (elements, len(loop))
    return best and best[1] / best[0]


def occupancy(regs, shared):
    warps = THREADS_PER_BLOCK // 32
    unit = SM90["register_unit"]
    per_warp = -(-max(regs, 1) * 32 // unit) * unit
    by_regs = SM90["registers"] // (per_warp * warps)
    by_shared = (SM90["shared"] // (shared + SM90["reserved_shared"])) if shared else SM90["blocks"]
    by_threads = SM90["threads"] // THREADS_PER_BLOCK
    blocks = min(by_regs, by_shared, by_threads, SM90["blocks"])
    return blocks * THREADS_PER_BLOCK / SM90["threads"]


# What a kernel's manifest may say that makes a rule's finding expected, and
# why; such findings are counted and printed apart, not as violations.
EXEMPTIONS = {
    "divide": ("divides_data", "the model divides integers: the divide is the op"),
    "local": ("per_thread_matrix", "Det over more than 4x4 keeps its matrix per thread"),
    "occupancy": ("double_taps", "Resize's and GridSample's taps in double, as the reference computes them"),
}


def lint_kernel(info, code, res):
    problems = []
    loop = loop_addresses(code)
    if res.get("LOCAL", 0) or res.get("STACK", 0):
        problems.append(f"local: LOCAL {res.get('LOCAL', 0)} STACK {res.get('STACK', 0)} bytes")
    local_ops = [hex(a) for a, _, op, _ in code if op.startswith(("LDL", "STL"))]
    if local_ops:
        problems.append(f"local: LDL/STL at {', '.join(local_ops[:3])}")
    occ = occupancy(res.get("REG", 0), res.get("SHARED", 0))
    if occ < 0.5:
        problems.append(f"occupancy: {occ:.0%} at {THREADS_PER_BLOCK} threads "
                        f"({res.get('REG', 0)} registers, {res.get('SHARED', 0)} shared bytes)")
    schedule = info.get("schedule", "")
    if schedule in LINTED_FOR_DIVIDES:
        divides = [hex(a) for a, _, op, _ in code
                   if a in loop and op.startswith("I2F") and ".RP" in op]
        if divides:
            problems.append(f"divide: integer-divide sequence inside a loop at {', '.join(divides[:3])}")
    if schedule in ("pointwise", "row") and info.get("vector_width", 0) > 0:
        ops = [op for _, _, op, _ in code]
        if not any(op.startswith("STG") and ".128" in op for op in ops):
            problems.append("vector: no 128-bit store (STG.E.128) on the vector path")
        loads = info.get("vector_loads", 1 if any(op.startswith("LDG") for op in ops) else 0)
        if loads > 0 and not any(op.startswith("LDG") and ".128" in op for op in ops):
            problems.append("vector: no 128-bit load (LDG.E.128) on the vector path")
    exempt = [p for p in problems
              if p.split(":")[0] in EXEMPTIONS and info.get(EXEMPTIONS[p.split(":")[0]][0])]
    problems = [p for p in problems if p not in exempt]
    stats = {"exempt": exempt, "registers": res.get("REG", 0), "shared": res.get("SHARED", 0),
             "occupancy": round(occ, 3), "instructions": len(code),
             "loop_instructions": sum(1 for a, _, _, _ in code if a in loop),
             "tensor_core_instructions": sum(1 for _, _, op, _ in code if op.startswith("HMMA")),
             "instructions_per_element": instructions_per_element(info, code)}
    return problems, stats


# Thread-instructions an H200 issues per microsecond: 132 SMs x 4 schedulers
# x 32 lanes x 1.98 GHz.
ISSUE_PER_US = 132 * 4 * 32 * 1.98e3
LAUNCH_US = 2.0  # kiln/artifact/DeviceModel.h's kLaunchUs


def roofline_with_issue(report_path, results):
    """Adds, per kernel step of the report's roofline, its SASS instructions
    per element, the time issuing them over its elements takes (issue_us) and
    the prediction with issue as a third bound; prints one line per step and
    the model's totals (before: bytes and flops only)."""
    with open(report_path) as f:
        roofline = json.load(f)["roofline"]
    before = after = 0.0
    for step in roofline["steps"]:
        us = step.get("predicted_us")
        if us is None:
            continue
        before += us
        stats = results.get(step.get("kernel", ""))
        ipe = stats and stats.get("instructions_per_element")
        if ipe and step.get("elements"):
            issue = ipe * step["elements"] / ISSUE_PER_US
            step["sass_instructions_per_element"] = round(ipe, 2)
            step["issue_us"] = round(issue, 3)
            if LAUNCH_US + issue > us:
                step["bound"] = "issue"
                us = LAUNCH_US + issue
            step["predicted_us"] = us
            print(f"roofline: {step['name']} ({step.get('schedule')}): {ipe:.1f} instructions "
                  f"per element, {step['elements']} elements: issue {issue:.2f} us, "
                  f"predicted {us:.2f} us ({step['bound']} bound)")
        after += us
    roofline["predicted_us"] = after
    results["_roofline"] = roofline
    print(f"roofline: predicted {before:.1f} us from bytes and flops, {after:.1f} us with "
          f"issue time")


def manifest_of(directory):
    for name in ("kernels.json", "report.json"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            with open(path) as f:
                return {k["name"]: k for k in json.load(f)["kernels"]}
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--tools", help="folder with cuobjdump")
    ap.add_argument("--json", help="write per-kernel figures and violations here")
    ap.add_argument("--max-violations", type=int, default=20, help="print at most N of them")
    ap.add_argument("--roofline", metavar="REPORT",
                    help="a kiln-compile --report of the same cubins (--bind for the sizes): "
                         "adds each kernel step's issue time from its SASS to the roofline "
                         "and prints the steps")
    args = ap.parse_args()
    cuobjdump = find_tools(args.tools)
    if not cuobjdump:
        print("sass-lint: cuobjdump not found (pip install nvidia-cuda-cuobjdump, or --tools DIR)",
              file=sys.stderr)
        return 2
    results, violations, checked = {}, [], 0
    for d in args.dirs:
        manifest = manifest_of(d)
        if manifest is None:
            print(f"sass-lint: {d}: no kernels.json or report.json", file=sys.stderr)
            return 2
        cubins = sorted(glob.glob(os.path.join(d, "*.sm_90.cubin")))
        if not cubins:
            print(f"sass-lint: {d}: no *.sm_90.cubin", file=sys.stderr)
            return 2
        seen = set()
        for cubin in cubins:
            try:
                sass = parse_sass(run(cuobjdump, "-sass", cubin))
                res = parse_resources(run(cuobjdump, "-res-usage", cubin))
            except RuntimeError as e:
                print(f"sass-lint: {cubin}: {e}", file=sys.stderr)
                return 2
            for entry, code in sass.items():
                name = VARIANT_TAG.sub("", entry)
                if name not in manifest:
                    continue
                seen.add(name)
                problems, stats = lint_kernel(manifest[name], code, res.get(entry, {}))
                checked += 1
                stats["schedule"] = manifest[name].get("schedule", "")
                stats["violations"] = problems
                results[name] = stats
                violations += [f"{name} ({stats['schedule']}): {p}" for p in problems]
        missing = sorted(set(manifest) - seen)
        if missing:
            print(f"sass-lint: {d}: {len(missing)} kernels of the manifest have no SASS "
                  f"(first: {missing[0]})", file=sys.stderr)
            return 2
    if args.roofline:
        roofline_with_issue(args.roofline, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    for v in violations[:args.max_violations]:
        print("sass-lint: " + v)
    if len(violations) > args.max_violations:
        print(f"sass-lint: ... and {len(violations) - args.max_violations} more")
    by_rule = {}
    for v in violations:
        rule = v.split("): ", 1)[1].split(":")[0]
        by_rule[rule] = by_rule.get(rule, 0) + 1
    exempt = {}
    for stats in results.values():
        for p in stats.get("exempt", []):
            rule = p.split(":")[0]
            exempt[rule] = exempt.get(rule, 0) + 1
    for rule, n in sorted(exempt.items()):
        print(f"sass-lint: {n} kernels exempt from {rule} ({EXEMPTIONS[rule][0]}: {EXEMPTIONS[rule][1]})")
    print(f"sass-lint: {checked} kernels checked, {len(violations)} violations"
          + ("".join(f", {r} {n}" for r, n in sorted(by_rule.items())) if by_rule else ""))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
