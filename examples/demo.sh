#!/usr/bin/env bash
# `make demo`: the most of kiln that works end to end today. It runs the graph
# pipeline (symbolic shape inference, folding of run-time shape computations,
# canonicalization) over a transformer encoder block whose batch and sequence are
# dynamic, and prints the result: every dim of every value is static or symbolic.
set -euo pipefail
build=${1:-build}
model=examples/encoder_block.mlir
echo "== kiln demo: graph pipeline over $model"
echo "   (kiln-opt $model --kiln-graph-pipeline)"
echo
out=$("$build/bin/kiln-opt" "$model" --kiln-graph-pipeline)
echo "$out"
echo
total=$(grep -o 'tensor<[^>]*>' <<<"$out" | grep -c '?' || true)
unknown=$( (grep -oE 'tensor<[0-9x?]*\?[0-9x?]*[a-z]+[0-9]*>' <<<"$out" || true) | wc -l)
echo "== $((total - unknown)) of $total dynamic tensor types carry symbolic dims; $unknown are unknown ('?')"
