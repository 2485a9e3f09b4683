#!/usr/bin/env python3
"""Generates docs/onnx-coverage.md from kiln-conformance's JSON results.

    NODE=<onnx wheel>/backend/test/data/node
    for backend in import reference host; do for mode in static dynamic; do
      build/bin/kiln-conformance --backend $backend --mode $mode \
          --json build/onnx-$backend-$mode.json $NODE
    done; done
    python3 tools/gen-onnx-coverage.py build/onnx-{import,reference,host}-{static,dynamic}.json \
        > docs/onnx-coverage.md

(the argument order is import, reference, host, each static then dynamic; the
brace expansion above gives exactly that). `make test`
writes all four files. The document is never edited by hand: rerun this after
changing the importer or the reference kernels.
"""
import collections
import json
import re
import sys


def load(path):
    with open(path) as f:
        return {case["name"]: case for case in json.load(f)}


def reason_key(reason):
    """A failure reason without file paths, values and names, for grouping."""
    text = reason.split("error: ", 1)[-1]
    text = re.sub(r"node (producing )?'[^']*' ", "node ", text)
    text = re.sub(r"\(see current operation:.*", "", text)
    # kiln op names are kept: set aside first, so their quotes cannot pair
    # with a following quoted name.
    ops = re.findall(r"'kiln\.[^']*'", text)
    text = re.sub(r"'kiln\.[^']*'", "@OP@", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\d+(\.\d+)?(e-?\d+)?", "N", text)
    for op in ops:
        text = text.replace("@OP@", op, 1)
    return text.strip()


def reasons_table(w, results):
    w("| cases | reason | example |")
    w("| ---: | --- | --- |")
    reasons = collections.Counter()
    example = {}
    for name, case in sorted(results.items()):
        if case["status"] == "pass":
            continue
        key = ("out of scope: " if case["status"] == "skip" else "") + reason_key(case["reason"])
        reasons[key] += 1
        example.setdefault(key, name)
    for key, n in reasons.most_common():
        w(f"| {n} | {key.replace('|', '/')} | {example[key]} |")


# Why a case that passes in static mode fails in dynamic mode, by its reason
# (a regex over reason_key's text): what about a symbolic dim stops it.
GAP_EXPLANATIONS = [
    (r"max_output_boxes_per_class must hold exactly one value|values must hold \[off_value",
     "a one-element input made symbolic: its length decides what the op computes, so it "
     "must be static (exporters never make it dynamic)"),
    (r"reshape target whose length|starts of unknown length|of static length|"
     r"repeats must have one entry per input dim",
     "the length of a shape operand is the result's rank: kiln's tensors are ranked, so "
     "it must be known when compiling (TensorRT's shape tensors likewise need build-time "
     "lengths)"),
    (r"indices must have a static last dim",
     "the index tuple's length decides the result's rank"),
    (r"DFT.*last dim must be",
     "the last dim (1: real, 2: complex) decides what the transform computes"),
    (r"keep_aspect_ratio_policy on a dynamic dim",
     "the one scale for all axes depends on the dims per call; the Resize step takes "
     "compile-time scales"),
    (r"SAME padding with a dynamic kernel size",
     "the filter is a graph input, so its spatial dims (the kernel size) became symbols: "
     "SAME's pads are computed from the kernel size when compiling (a model's weights are "
     "constants)"),
    (r"SAME padding with stride|output_shape on dynamic|output_shape with dynamic",
     "an explicit output shape with symbolic input dims: the pads are the difference, "
     "not computed at run time yet"),
    (r"num_groups must divide a static channel count",
     "groups split the channel dim at compile time"),
]


def explain_gap(key):
    for pattern, why in GAP_EXPLANATIONS:
        if re.search(pattern, key):
            return why
    return "not yet explained"


def gap_table(w, static, dynamic):
    """The cases passing in static mode and failing in dynamic mode, by op and reason."""
    w("| op | cases | reason | why a symbolic dim stops it | example |")
    w("| --- | ---: | --- | --- | --- |")
    groups = collections.Counter()
    example = {}
    for name, case in sorted(dynamic.items()):
        if case["status"] == "pass" or static.get(name, {}).get("status") != "pass":
            continue
        key = reason_key(case["reason"])
        op = re.search(r"\(([A-Za-z]+)\)", key)
        op = op.group(1) if op else ", ".join(sorted(set(case["ops"])))
        groups[(op, key)] += 1
        example.setdefault((op, key), name)
    for (op, key), n in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])):
        w(f"| {op} | {n} | {key.replace('|', '/')} | {explain_gap(key)} | {example[(op, key)]} |")


# Why each static failure in scope fails, where its one-line error does not
# say it all (test name prefixes per row; the table lists the ones still
# failing). Keep a row until its cases pass.
FAILURE_NOTES = [
    ("test_dft_inverse", "a tolerance artifact, not a wrong answer: the expected output's near-zero "
     "entries are float32 rounding noise (1.9e-7 where the exact value is 0); kiln computes them "
     "in float64 (3e-15), outside the case's atol of 1e-7"),
    ("test_cast_e8m0", "float8e8m0 (a power-of-two scale type) has no element type in kiln yet"),
    (("test_basic_deform_conv", "test_deform_conv"),
     "DeformConv (offset-sampled convolution) is not lowered yet"),
    ("test_affine_grid_", "the *_expanded forms only: their function body squeezes all unit dims "
     "of a tensor whose dims are computed (AffineGrid itself passes)"),
    ("test_maxpool_with_argmax", "MaxPool's second output (the argmax indices) is not produced"),
    ("test_stft", "STFT is not lowered yet (DFT is, with a static length)"),
    ("test_melweightmatrix", "MelWeightMatrix is not lowered yet"),
    ("test_tfidfvectorizer", "TfIdfVectorizer (n-gram counting over int sequences) is not lowered"),
    ("test_ai_onnx_ml_", "ai.onnx.ml (classical ML: tree ensembles, binarizer, feature extractor) "
     "is not implemented; the string label encoders are out of scope"),
    ("test_scan_sum", "Scan-8 (a batch dim and sequence_lens; Scan-9 and later pass)"),
]


def notes_table(w, ref_static):
    failing = sorted(n for n, c in ref_static.items()
                     if c.get("status") == "fail")
    w("| cases | why | examples |")
    w("| ---: | --- | --- |")
    for prefix, why in FAILURE_NOTES:
        cases = [n for n in failing if n.startswith(prefix)]  # str or tuple
        if cases:
            w(f"| {len(cases)} | {why} | {', '.join(cases[:2])} |")


def main(paths, onnx_version):
    imp_s, imp_d, ref_s, ref_d, host_s, host_d = (load(p) for p in paths)
    total = len(imp_s)
    out = []
    w = out.append
    w("# ONNX coverage")
    w("")
    w("Generated by `tools/gen-onnx-coverage.py` from `kiln-conformance` runs over the")
    w(f"ONNX backend node tests of onnx {onnx_version} ({total} cases); do not edit by hand.")
    w("")
    w("- **import**: kiln imports the model, it verifies, the graph pipeline runs, and")
    w("  every static dim of the results matches the case's expected outputs.")
    w("- **reference**: the reference interpreter runs the imported, optimized model on")
    w("  every data set of the case and matches the expected outputs under the ONNX")
    w("  runner's tolerances (rtol 1e-3, atol 1e-7, or the case's data.json).")
    w("- **host**: like reference, but kiln's fusion and CUDA C codegen generate the")
    w("  kernels and host emulation runs them (library ops: the reference kernels); a")
    w("  case with ops codegen does not handle yet fails with that reason.")
    w("- **dynamic** mode imports every input dim as a symbol (`--mode dynamic`).")
    w("")
    w("Cases that use sequence, optional, string or map types, training or random-number")
    w("ops are out of scope (skipped) and count in the totals. Inputs an op needs as")
    w("compile-time values (Reduce axes, Split sizes, Resize scales given as graph")
    w("inputs) are bound to the data set being run.")
    w("")
    w("| backend, mode | pass | fail | out of scope | of all cases | of cases in scope |")
    w("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, res in (("import, static", imp_s), ("import, dynamic", imp_d),
                      ("reference, static", ref_s), ("reference, dynamic", ref_d),
                      ("host, static", host_s), ("host, dynamic", host_d)):
        c = collections.Counter(case["status"] for case in res.values())
        w(f"| {name} | {c['pass']} | {c['fail']} | {c['skip']} | "
          f"{100.0 * c['pass'] / total:.1f}% | {100.0 * c['pass'] / max(total - c['skip'], 1):.1f}% |")
    w("")
    w("## By op")
    w("")
    w("Cases that use the op, and how many of them pass (a case counts for every op it")
    w("uses).")
    w("")
    w("| op | cases | import static | import dynamic | reference static | reference dynamic "
      "| host static | host dynamic |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    per_op = collections.defaultdict(lambda: [0] * 7)
    for name, case in imp_s.items():
        for op in case["ops"]:
            entry = per_op[op]
            entry[0] += 1
            for i, res in enumerate((imp_s, imp_d, ref_s, ref_d, host_s, host_d)):
                entry[i + 1] += res.get(name, {}).get("status") == "pass"
    for op in sorted(per_op):
        w("| " + op + " | " + " | ".join(str(v) for v in per_op[op]) + " |")
    w("")
    w("## Why cases do not import (static mode)")
    w("")
    reasons_table(w, imp_s)
    w("")
    w("## Why imported cases fail on the reference backend (static mode)")
    w("")
    reasons_table(w, {n: c for n, c in ref_s.items()
                      if imp_s.get(n, {}).get("status") == "pass"})
    w("")
    w("## The static failures in scope, case by case (reference)")
    w("")
    w("What each remaining static failure outside the out-of-scope kinds is, where the")
    w("reason tables above do not say it all.")
    w("")
    notes_table(w, ref_s)
    w("")
    w("## Why cases fail in dynamic mode but pass in static mode (reference)")
    w("")
    reasons_table(w, {n: c for n, c in ref_d.items()
                      if ref_s.get(n, {}).get("status") == "pass"})
    w("")
    w("## The static/dynamic gap on the host backend, by op")
    w("")
    w("Every case that passes in static mode and fails in dynamic mode (where every input")
    w("dim, including the length of an input that decides a rank, becomes a symbol), with")
    w("what stops it. Most are dims that fix a result's rank or an op's form, which")
    w("exporters never make dynamic; the dims they do (batch, sequence, head counts, image")
    w("sizes) are handled, SAME padding with a stride above 1 included (its pads are")
    w("dims that pad the input), except explicit output shapes over symbolic input dims")
    w("(the conv-transpose and unpool rows); the conv-transpose SAME case fails only")
    w("because its filter is a graph input whose kernel size became a symbol.")
    w("")
    gap_table(w, host_s, host_d)
    w("")
    w("## Why cases that pass on the reference backend fail on the host backend (static)")
    w("")
    reasons_table(w, {n: c for n, c in host_s.items()
                      if ref_s.get(n, {}).get("status") == "pass"})
    print("\n".join(out))


if __name__ == "__main__":
    import onnx

    if len(sys.argv) != 7:
        sys.exit("usage: gen-onnx-coverage.py IMPORT_STATIC IMPORT_DYNAMIC "
                 "REFERENCE_STATIC REFERENCE_DYNAMIC HOST_STATIC HOST_DYNAMIC")
    main(sys.argv[1:], onnx.__version__)
