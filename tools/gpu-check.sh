#!/usr/bin/env bash
# The one script a session lent the GPU machine runs (see DEVELOPERS.md and
# docs/gpu-check.md). The device has CUDA 13, PyTorch and onnxruntime but no MLIR,
# so it runs only what the runtime alone can: everything it needs is prepared here
# first, in gpu-bundle/ (git-ignored, under the device tool's 64 MiB carry limit).
#
#   tools/gpu-check.sh prepare [BUILD]   on this machine: compile models with cubins
#                                        for sm_90, export the conformance cases,
#                                        build the examples, copy the runtime and the
#                                        Abseil libraries it loads
#   tools/gpu-check.sh run               on the device machine (run tool, carry
#                                        ["gpu-bundle"]): conformance on CUDA, the
#                                        examples, benchmarks against torch and
#                                        onnxruntime; results under $OUT/gpu-results
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$root/gpu-bundle
sm=${KILN_GPU_SM:-90}

# numpy_models MAKER DIR BUILD [FLAG...]: writes MAKER's models with their
# data sets (run_numpy_cases.py's layout) to DIR and compiles each for sm_$sm.
numpy_models() {
  local maker=$1 dir=$2 build=$3
  shift 3
  python3 "$root/test/run/$maker" "$dir"
  for onnx_model in "$dir"/*.onnx; do
    "$build/bin/kiln-compile" "$onnx_model" -o "${onnx_model%.onnx}.kiln" \
      --arch "sm_$sm" --cache-dir "$build/kernel-cache" "$@"
  done
}

# run_numpy_models DIR OUT_FILE [ATOL_FOR_MODEL...]: each of DIR's models on
# the CUDA backend against numpy (atol per model as NAME=ATOL, else 1e-5).
run_numpy_models() {
  local dir=$1 results=$2
  shift 2
  for onnx_model in "$dir"/*.onnx; do
    local name spec atol=1e-5
    name=$(basename "$onnx_model" .onnx)
    for spec in "$@"; do [ "${spec%%=*}" = "$name" ] && atol=${spec#*=}; done
    PATH="$bundle/bin:$PATH" python3 "$root/test/run/run_numpy_cases.py" "$dir" "$name" \
      --fake-cuda "" --backends cuda --atol "$atol" | tee -a "$results" || true
  done
}

# time_attention NAME "MAKER FLAGS" bytes|flops RUNS: bench/make_decode_attention.py's
# inputs for NAME written on the device, the attention model's time on them
# (kiln-run --bench RUNS --profile), what the case must move or compute, the
# roofline's prediction (models/attention-NAME.json) and the output against
# numpy's (one bf16 ulp), all in OUT/attention-NAME.txt.
time_attention() {
  local name=$1 flags=$2 measure=$3 runs=$4
  local dir="$out/attention-$name-in" txt="$out/attention-$name.txt"
  # shellcheck disable=SC2086
  python3 "$root/bench/make_decode_attention.py" "$out/attention.onnx" --inputs "$dir" $flags \
    > /dev/null 2>&1 || true
  "$bundle/bin/kiln-run" "$bundle/models/attention.kiln" --input "q=$dir/q.pb" --input "k=$dir/k.pb" \
    --input "v=$dir/v.pb" --input "mask=$dir/mask.pb" --output-dir "$out/attention-$name-out" \
    --bench "$runs" --warmup 10 --profile > "$txt" 2>&1 || true
  printf '%s: %s\n' "$measure" "$(cat "$dir/$measure.txt")" >> "$txt"
  python3 -c "import json, sys; [print(f\"{s['name']:40} predicted {s.get('predicted_us') or 0:9.2f} us, {s.get('bytes') or 0} bytes, {s.get('flops') or 0} flops\") for s in json.load(open(sys.argv[1]))['roofline']['steps'] if s['kind'] == 'kernel']" \
    "$bundle/models/attention-$name.json" >> "$txt" 2>&1 || true
  python3 "$root/test/run/compare_outputs.py" "$out/attention-$name-out/output_0.pb" "$dir/want.pb" \
    --atol 0.008 >> "$txt" 2>&1 || true
}

# decoder_inputs: kiln-run's --input flags for the decode step's inputs.
decoder_inputs() {
  local f
  for f in "$bundle/models/decoder-in"/*.pb; do
    printf -- '--input %s=%s ' "$(basename "$f" .pb)" "$f"
  done
}

prepare() {
  local build
  build=$(cd "${1:-$root/build}" && pwd)
  rm -rf "$bundle" && mkdir -p "$bundle"/{lib,bin,models,cases}
  local node
  node=$(python3 -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend/test/data/node'))")

  echo "== runtime and the shared libraries it loads (CUDA's come from the device)"
  cp -L "$build/lib/libkiln_runtime.so" "$bundle/lib/"
  ldd "$build/lib/libkiln_runtime.so" "$build/bin/kiln-runtime-tests" | awk '/libabsl_/ {print $3}' |
    sort -u | xargs -r cp -L -t "$bundle/lib/"
  cp "$build/bin/kiln-check-artifacts" "$build/bin/kiln-run" "$build/bin/kiln-bench-load" "$build/bin/kiln-generate" \
     "$build/bin/kiln-runtime-tests" "$bundle/bin/"
  cp "$build/test/encoder.kiln" "$bundle/models/encoder-tests.kiln"
  # Test inputs of the torch models for kiln-run.
  for m in mlp cnn encoder; do
    mkdir -p "$bundle/models/$m-data" && cp "$root/test/models/$m/"*.pb "$bundle/models/$m-data/"
  done

  echo "== the torch models, compiled for sm_$sm (cubin and PTX) with host code as well"
  for m in mlp cnn encoder; do
    "$build/bin/kiln-compile" "$root/test/models/$m.onnx" -o "$bundle/models/$m.so" \
      --arch "sm_$sm" --cache-dir "$build/kernel-cache" --report "$bundle/models/$m.json"
  done

  echo "== control flow: torch's data-dependent if, dynamic for loop and LSTM (docs/runtime.md)"
  for m in data_if dynamic_loop lstm; do
    mkdir -p "$bundle/models/$m-data" && cp "$root/test/models/$m/"*.pb "$bundle/models/$m-data/"
    "$build/bin/kiln-compile" "$root/test/models/$m.onnx" -o "$bundle/models/$m.kiln" \
      --arch "sm_$sm" --cache-dir "$build/kernel-cache"
  done

  echo "== sizes the data decides, computed on the device (docs/runtime.md, Sizes the data decides)"
  numpy_models make_data_size_models.py "$bundle/data-size" "$build"

  echo "== attention as one kernel (kiln-fuse-attention): padding and causal masks, d = 256, fp16"
  numpy_models make_attention_models.py "$bundle/attention" "$build" --no-host
  # Not the bf16 prompt's data sets (1.3 MB, past the carry limit): the
  # tensor-core path runs on the device in the 512-token prompt below,
  # against numpy; its partial tiles are checked on the fake driver.
  rm -rf "$bundle/attention/attn_prefill_bf16" "$bundle/attention/attn_prefill_bf16".*

  echo "== row kernels around their paths (vector rows, a warp per row, rows kept in registers up to 2048, re-read beyond)"
  numpy_models make_row_models.py "$bundle/rows" "$build" --no-host

  echo "== broadcast vector paths, tiled transposes, warp-per-output and split column reductions, views"
  numpy_models make_broadcast_models.py "$bundle/broadcast" "$build" --no-host
  numpy_models make_transpose_models.py "$bundle/transpose" "$build" --no-host
  numpy_models make_reduce_models.py "$bundle/reduce" "$build" --no-host
  numpy_models make_view_models.py "$bundle/views" "$build" --no-host

  echo "== a BERT-base encoder layer (fp16 weights: the carry limit) at batch 8, seq 128, with its roofline"
  python3 "$root/bench/make_bert_encoder.py" "$bundle/models/bert.onnx" --layers 1
  "$build/bin/kiln-compile" "$bundle/models/bert.onnx" -o "$bundle/models/bert.kiln" --arch "sm_$sm" \
    --no-host --precision fp16 --bind batch=8,seq=128 --report "$bundle/models/bert.json" \
    --cache-dir "$build/kernel-cache"
  rm "$bundle/models/bert.onnx"

  echo "== int8 and FP8 Q/DQ models (make_qdq_models.py, onnxruntime's quantize_static): int8 and FP8"
  echo "   cuBLASLt matmuls and int8 cuDNN convolutions"
  "$root/scripts/install-onnxruntime-deps.sh" "$build/ort-venv" > /dev/null
  mkdir -p "$bundle/qdq"
  "$build/ort-venv/bin/python" "$root/test/run/make_qdq_models.py" "$bundle/qdq" "$root/test/models/encoder.onnx"
  # ResNet-18's 11 MB of int8 weights do not fit the carry limit beside the
  # rest (the CNN has the same convolutions, smaller); the layouts the fake
  # cuBLASLt refuses are its own test.
  rm -rf "$bundle/qdq"/*-float.onnx "$bundle/qdq"/resnet18_qdq* "$bundle/qdq"/int8_*
  for onnx_model in "$bundle/qdq"/*.onnx; do
    "$build/bin/kiln-compile" "$onnx_model" -o "${onnx_model%.onnx}.kiln" --arch "sm_$sm" \
      --cache-dir "$build/kernel-cache" --no-host
  done

  echo "== int4 weights (kiln.matmul_nbits): a 4096 x 4096 bf16 weight at --weights int4, blocks of 128,"
  echo "   one row (a decode step's GEMV) and 16 rows, with its roofline"
  python3 -c "import numpy as np, onnx, sys; from onnx import helper, numpy_helper, TensorProto as T; w = (np.random.default_rng(9).standard_normal((4096, 4096)) * 0.02).astype(np.float32); g = helper.make_graph([helper.make_node('MatMul', ['x', 'w'], ['y'])], 'gemv', [helper.make_tensor_value_info('x', T.FLOAT, ['m', 4096])], [helper.make_tensor_value_info('y', T.FLOAT, ['m', 4096])], [numpy_helper.from_array(w, 'w')]); onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 21)]), sys.argv[1])" \
    "$bundle/models/gemv.onnx"
  # One artifact for both row counts (9 MB of the carry); the roofline of each from a compile bound to it.
  "$build/bin/kiln-compile" "$bundle/models/gemv.onnx" -o "$bundle/models/gemv.kiln" --arch "sm_$sm" \
    --no-host --weights int4 --precision bf16 --cache-dir "$build/kernel-cache"
  for rows in 1 16; do
    "$build/bin/kiln-compile" "$bundle/models/gemv.onnx" -o "$bundle/models/gemv-bound.kiln" --arch none \
      --no-host --weights int4 --precision bf16 --bind "m=$rows" --report "$bundle/models/gemv-$rows.json" \
      --cache-dir "$build/kernel-cache"
  done
  rm "$bundle/models/gemv.onnx" "$bundle/models/gemv-bound.kiln"

  echo "== decode attention alone (bench/make_decode_attention.py: TinyLlama's 32 query heads on 4 KV"
  echo "   heads, bf16, one query row) at past 512 and 2048, with its roofline"
  # Its inputs are written on the device (the bundle's carry limit).
  python3 "$root/bench/make_decode_attention.py" "$bundle/models/attention.onnx"
  for past in 512 2048; do
    "$build/bin/kiln-compile" "$bundle/models/attention.onnx" -o "$bundle/models/attention-bound.kiln" \
      --arch none --no-host --bind "b=1,sq=1,sk=$((past + 1))" \
      --report "$bundle/models/attention-$past.json" --cache-dir "$build/kernel-cache"
  done
  # And a prompt's (tensor cores): 512 tokens, causal.
  "$build/bin/kiln-compile" "$bundle/models/attention.onnx" -o "$bundle/models/attention-bound.kiln" \
    --arch none --no-host --bind "b=1,sq=512,sk=512" \
    --report "$bundle/models/attention-prompt-512.json" --cache-dir "$build/kernel-cache"
  "$build/bin/kiln-compile" "$bundle/models/attention.onnx" -o "$bundle/models/attention.kiln" \
    --arch "sm_$sm" --no-host --cache-dir "$build/kernel-cache"
  rm "$bundle/models/attention.onnx" "$bundle/models/attention-bound.kiln"

  echo "== a bf16 Llama-family decode step (bench/make_llama_decoder.py, tiny config), with float64 reference outputs"
  python3 "$root/bench/make_llama_decoder.py" "$bundle/models/decoder.onnx" --config tiny \
    --step-inputs "$bundle/models/decoder-in" --batch 2 --past 37
  "$build/bin/kiln-compile" "$bundle/models/decoder.onnx" -o "$bundle/models/decoder.kiln" --arch "sm_$sm" \
    --no-host --cache-dir "$build/kernel-cache"
  # The same decoder for kiln-generate, as exported and in place (one CUDA
  # graph per decode step), with a left-padded batch of two prompts.
  "$build/bin/kiln-compile" "$bundle/models/decoder.onnx" -o "$bundle/models/decoder-in-place.kiln" \
    --arch "sm_$sm" --no-host --kv-cache-in-place --cache-dir "$build/kernel-cache"
  # And in place with the token chosen inside (only the tokens come back).
  "$build/bin/kiln-compile" "$bundle/models/decoder.onnx" -o "$bundle/models/decoder-sampled.kiln" \
    --arch "sm_$sm" --no-host --kv-cache-in-place --sample-on-device --cache-dir "$build/kernel-cache"
  # Its weights for the torch side of the decode benchmark (tools/gpu/decode_bench.py).
  python3 "$root/tools/gpu/decode_bench.py" weights "$bundle/models/decoder.onnx" \
    "$bundle/models/decoder-weights.npz"
  python3 -c "import numpy as np, sys; r = np.random.default_rng(3); m = np.ones((2, 16), np.int64); m[1, :5] = 0; np.save(sys.argv[1], r.integers(0, 256, (2, 16)).astype(np.int64)); np.save(sys.argv[2], m)" \
    "$bundle/models/generate-ids.npy" "$bundle/models/generate-mask.npy"
  # shellcheck disable=SC2046
  "$build/bin/kiln-run" "$bundle/models/decoder.onnx" --backend reference $(decoder_inputs) \
    --output-dir "$bundle/models/decoder-ref" > /dev/null
  rm "$bundle/models/decoder.onnx"

  echo "== precision modes: the torch models in tf32, fp16 and bf16 (docs/precision.md)"
  for m in mlp cnn encoder; do
    for p in tf32 fp16 bf16; do
      "$build/bin/kiln-compile" "$root/test/models/$m.onnx" -o "$bundle/models/$m-$p.kiln" \
        --arch "sm_$sm" --no-host --precision "$p" --cache-dir "$build/kernel-cache"
    done
  done

  echo "== fp8: the encoder's weight matmuls on FP8 tensor cores, scales calibrated on random sets"
  python3 -c "import numpy as np, os; [(os.makedirs('$bundle/models/fp8-calib/test_data_set_%d' % s, exist_ok=True), np.save('$bundle/models/fp8-calib/test_data_set_%d/input_0.npy' % s, np.random.default_rng(s).standard_normal((2, 8, 16)).astype(np.float32))) for s in range(4)]"
  "$build/bin/kiln-compile" "$root/test/models/encoder.onnx" -o "$bundle/models/encoder-fp8.kiln" \
    --arch "sm_$sm" --no-host --precision fp8 --calibrate "$bundle/models/fp8-calib" \
    --cache-dir "$build/kernel-cache"

  echo "== shape-bucket variants: the encoder with cubins specialized for (2, 5) and (2, 8)"
  "$build/bin/kiln-compile" "$root/test/models/encoder.onnx" -o "$bundle/models/encoder-buckets.kiln" \
    --arch "sm_$sm" --buckets "batch=2;seq=5,8" --cache-dir "$build/kernel-cache"
  python3 -c "import numpy as np; np.save('$bundle/models/encoder-x8.npy', np.random.default_rng(3).standard_normal((2, 8, 16), dtype=np.float32))"
  "$build/bin/kiln-run" "$root/test/models/encoder.onnx" --backend reference \
    --input "x=$bundle/models/encoder-x8.npy" --output-dir "$bundle/models/encoder-x8-ref"

  echo "== the examples, linked like an application against the bundle's runtime"
  cc -std=c99 -O2 "$root/examples/c/run_encoder.c" -I"$root/runtime/include" -I"$build/runtime/include" \
    -L"$bundle/models" -l:encoder.so -L"$bundle/lib" -lkiln_runtime -o "$bundle/bin/run_encoder"
  c++ -std=c++17 -O2 "$root/examples/cpp/run_model.cpp" -I"$root/runtime/include" -I"$build/runtime/include" \
    -L"$bundle/lib" -lkiln_runtime -o "$bundle/bin/run_model"
  python3 - "$root/test/models/encoder" "$bundle/models" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
src, out = sys.argv[1:]
x = numpy_helper.to_array(onnx.load_tensor(f"{src}/input_0.pb")).astype(np.float32)
y = numpy_helper.to_array(onnx.load_tensor(f"{src}/output_0.pb")).astype(np.float32)
x.tofile(f"{out}/encoder-x.f32"); y.tofile(f"{out}/encoder-y.f32")
PY

  echo "== library-step cases for cuBLASLt and cuDNN (compiled, inputs and float64 reference outputs; checked here on the fake stack)"
  PATH="$build/bin:$PATH" LD_LIBRARY_PATH="$build/test/fake-cuda" KILN_FAKE_CUDA_KERNELS="$build/kernel-cache" \
    KILN_CACHE_DIR="$build/kernel-cache" python3 "$root/test/run/check_library_steps.py" "$bundle/library-steps" | tail -1
  # The device run writes its own outputs and traces; the fake stack's stay here.
  rm -rf "$bundle"/library-steps/*/cuda "$bundle"/library-steps/*/trace.json

  echo "== every ONNX node test that passes in host emulation, as artifacts with sm_$sm cubins"
  for mode in static dynamic; do
    "$build/bin/kiln-conformance" --quiet --backend host --mode "$mode" \
      --cache-dir "$build/kernel-cache" --export "$bundle/cases/$mode" --export-sm "$sm" \
      --expected "$root/test/onnx/host-expected-$mode.txt" "$node" | tail -1
  done
  # xz, not gzip: the cases share most of their cubins and weights, which only
  # a large window finds (58 MiB as .tar.gz, 14 MiB as .tar.xz; the carry limit
  # is 64 MiB). The library-step cases go in too (the large conv's integer
  # data compresses), and the generated test models' folders (75 MB
  # uncompressed in all was over the limit). Python's tarfile unpacks it on
  # the device (no xz tool needed).
  local packed="cases library-steps attention data-size rows transpose qdq"
  # shellcheck disable=SC2086 # the folder names are words
  tar -C "$bundle" -cf - $packed | xz -T2 -6 > "$bundle/cases.tar.xz" &&
    (cd "$bundle" && rm -rf $packed)
  du -sh "$bundle"
  local bytes
  bytes=$(du -sb "$bundle" | cut -f1)
  if [ "$bytes" -gt $((64 * 1024 * 1024)) ]; then
    echo "gpu-check: the bundle is $bytes bytes, over the device tool's 64 MiB carry limit" >&2
    exit 1
  fi
}

run() {
  [ -d "$bundle" ] || { echo "gpu-check: no gpu-bundle/ (run 'prepare' first and carry it)" >&2; exit 1; }
  local out=${OUT:-$root/gpu-results}/gpu-results
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$bundle/lib:$bundle/models:${LD_LIBRARY_PATH:-}"
  export KILN_RUNTIME_LIB="$bundle/lib/libkiln_runtime.so"
  {
    date -u +"%Y-%m-%dT%H:%MZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  } | tee "$out/machine.txt"
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
    "$bundle/cases.tar.xz" "$bundle"

  echo "== conformance on CUDA (exported node tests; expected: the host-emulation pass list)"
  for mode in static dynamic; do
    "$bundle/bin/kiln-check-artifacts" "$bundle/cases/$mode" --backend cuda --quiet \
      --expected "$root/test/onnx/host-expected-$mode.txt" > "$out/conformance-cuda-$mode.txt" || true
    tail -1 "$out/conformance-cuda-$mode.txt"
  done

  echo "== examples"
  (cd "$bundle/models" && ../bin/run_encoder encoder-x.f32 2 5 "$out/c-y.f32" &&
   ../bin/run_model encoder.so "encoder-x.f32:2x5x16" "$out/cpp-y") | tee "$out/examples.txt"
  python3 - "$bundle/models/encoder-y.f32" "$out" <<'PY' | tee -a "$out/examples.txt"
import sys, numpy as np
want = np.fromfile(sys.argv[1], dtype=np.float32)
for name in ("c-y.f32", "cpp-y0.f32"):
    got = np.fromfile(f"{sys.argv[2]}/{name}", dtype=np.float32)
    print(f"{name}: max abs diff to torch {float(np.abs(got - want).max()):.3g}")
PY

  echo "== kiln-run on the device: each torch model's outputs, latency and per-kernel profile"
  for m in mlp cnn encoder; do
    "$bundle/bin/kiln-run" "$bundle/models/$m.so" --input "x=$bundle/models/$m-data/input_0.pb" \
      --output-dir "$out/$m-out" --print --bench 200 --warmup 20 --profile \
      --trace "$out/$m-trace.json" > "$out/kiln-run-$m.txt" 2>&1 || true
    head -3 "$out/kiln-run-$m.txt"
    grep -E "^(MatMul|Conv|Pool) " "$out/kiln-run-$m.txt" || true   # cublasLt, or host and why (line 1)
  done

  echo "== CUDA graphs: latency with graphs (the default; the runs above) and without, and the"
  echo "   replayed outputs against torch (docs/runtime.md, CUDA graphs)"
  for m in mlp cnn encoder; do
    KILN_CUDA_GRAPHS=0 "$bundle/bin/kiln-run" "$bundle/models/$m.so" --input "x=$bundle/models/$m-data/input_0.pb" \
      --bench 200 --warmup 20 > "$out/kiln-run-$m-nographs.txt" 2>&1 || true
    "$bundle/bin/kiln-run" "$bundle/models/$m.so" --input "x=$bundle/models/$m-data/input_0.pb" \
      --output-dir "$out/$m-graphs-out" --bench 200 --warmup 20 > "$out/kiln-run-$m-graphs.txt" 2>&1 || true
    { printf '%s graphs: ' "$m"; grep latency "$out/kiln-run-$m-graphs.txt" || echo; printf '%s no graphs: ' "$m"; grep latency "$out/kiln-run-$m-nographs.txt" || echo;
      printf '%s replayed output: ' "$m"; python3 "$root/test/run/compare_outputs.py" "$out/$m-graphs-out/output_0.pb" \
        "$bundle/models/$m-data/output_0.pb" --atol 1e-4 2>&1; } | tee -a "$out/graphs.txt" || true
  done

  echo "== control flow on the device: both data sets of each model against torch, and the profile"
  for m in data_if dynamic_loop lstm; do
    for s in 0 1; do
      "$bundle/bin/kiln-run" "$bundle/models/$m.kiln" --input "x=$bundle/models/$m-data/input_${s}_0.pb" \
        --output-dir "$out/$m-$s-out" --bench 100 --warmup 10 --profile \
        --trace "$out/$m-$s-trace.json" > "$out/kiln-run-$m-$s.txt" 2>&1 || true
      for got in "$out/$m-$s-out"/output_*.pb; do
        k=$(basename "$got" .pb); k=${k#output_}
        python3 "$root/test/run/compare_outputs.py" "$got" "$bundle/models/$m-data/output_${s}_$k.pb" \
          --atol 1e-4 | sed "s/^/$m set $s output $k: /" | tee -a "$out/control-flow.txt" || true
      done
    done
  done

  echo "== NonZero, Compress, Unique, NonMaxSuppression and TopK on the device: 256-thread blocks"
  echo "   (block-wide prefix sums and the NMS loop as a GPU runs them), no host step, against numpy"
  run_numpy_models "$bundle/data-size" "$out/data-size.txt"

  echo "== attention kernels on the device (256-thread blocks, shared-memory tiles), against numpy"
  # fp16 storage: 2e-3, as test/run/attention-kernels.test says why.
  run_numpy_models "$bundle/attention" "$out/attention.txt" attn_f16=2e-3

  echo "== row kernels on the device (256-thread blocks: vector rows of 32-256 threads, the register path), against numpy"
  # rows_half: half storage, within 1e-3 as test/run/row-kernels.test says why.
  run_numpy_models "$bundle/rows" "$out/rows.txt" rows_half=1e-3

  echo "== broadcast vectors, tiled transposes, reductions (warps of real shuffles), views, against numpy"
  run_numpy_models "$bundle/broadcast" "$out/broadcast.txt" bcast_f16=1e-3
  run_numpy_models "$bundle/transpose" "$out/transpose.txt"
  run_numpy_models "$bundle/reduce" "$out/reduce.txt" red_pool=1e-4 red_sum=1e-4 red_long=1e-4 red_dyn=1e-4 red_column=1e-4 red_columns=1e-4
  run_numpy_models "$bundle/views" "$out/views.txt"

  echo "== int8 Q/DQ on the device: cuBLASLt's int8 matmuls and cuDNN's int8 convolutions (a refusal"
  echo "   is a host step, which fails the case), against onnxruntime within one output step"
  local steps=() step
  for step in "$bundle/qdq"/*.step; do steps+=("$(basename "$step" .step)=$(cat "$step")"); done
  # The FP8 models (encoder_fp8, mlp_fp8_channel: FP8 cuBLASLt calls) within
  # one e4m3 step at their outputs' magnitude (under 2): Hopper's FP8 sums
  # are not IEEE fp32 ones, and a value next to an e4m3 rounding moves a
  # step when the next QuantizeLinear rounds it the other way.
  run_numpy_models "$bundle/qdq" "$out/qdq.txt" "${steps[@]}" matmul_integer=0 qlinear_matmul=1 conv_integer=0 \
    encoder_fp8=0.25 mlp_fp8_channel=0.25

  echo "== the BERT layer: measured step times and achieved GB/s, TFLOP/s beside the roofline's predictions"
  # Its inputs are made here (3 MiB the carry limit need not hold).
  python3 -c "import numpy as np; r = np.random.default_rng(5); np.save('$bundle/models/bert-x.npy', r.standard_normal((8, 128, 768), dtype=np.float32)); m = np.zeros((8, 1, 1, 128), np.float32); m[1, ..., 100:] = -1e4; np.save('$bundle/models/bert-mask.npy', m)"
  "$bundle/bin/kiln-run" "$bundle/models/bert.kiln" --input "x=$bundle/models/bert-x.npy" \
    --input "mask=$bundle/models/bert-mask.npy" --bench 100 --warmup 10 --profile \
    --trace "$out/bert-trace.json" > "$out/bert-profile.txt" 2>&1 || true
  python3 -c "import json, sys; [print(f\"{s['name']:40} {s.get('bound', ''):8} predicted {s.get('predicted_us') or 0:9.2f} us\") for s in json.load(open(sys.argv[1]))['roofline']['steps'] if s['kind'] != 'shape']" \
    "$bundle/models/bert.json" >> "$out/bert-profile.txt" 2>&1 || true
  cat "$out/bert-profile.txt"

  echo "== the int4 GEMV (kiln.matmul_nbits, 4096 x 4096, blocks of 128): measured time against reading"
  echo "   its 8.4 MB of packed weights once at the device's bandwidth, beside the roofline's prediction"
  for rows in 1 16; do
    python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(4).standard_normal((int(sys.argv[2]), 4096)).astype(np.float32))" \
      "$bundle/models/gemv-x-$rows.npy" "$rows"
    "$bundle/bin/kiln-run" "$bundle/models/gemv.kiln" --input "x=$bundle/models/gemv-x-$rows.npy" \
      --bench 200 --warmup 20 --profile > "$out/gemv-$rows.txt" 2>&1 || true
    python3 -c "import json, sys; [print(f\"{s['name']:40} {s.get('bound', ''):8} predicted {s.get('predicted_us') or 0:9.2f} us, {s.get('bytes') or 0} bytes\") for s in json.load(open(sys.argv[1]))['roofline']['steps'] if s['kind'] != 'shape']" \
      "$bundle/models/gemv-$rows.json" >> "$out/gemv-$rows.txt" 2>&1 || true
    echo "-- $rows row(s)" && cat "$out/gemv-$rows.txt"
  done

  echo "== decode attention alone: the kernel's time against moving its cache once at the device's"
  echo "   bandwidth (bytes.txt), beside the roofline's prediction; its output against numpy's"
  for past in 512 2048; do
    time_attention "$past" "--past $past" bytes 200
    echo "-- past $past" && cat "$out/attention-$past.txt"
  done

  echo "== a prompt's attention alone (512 tokens, causal, the same model; tensor cores): kiln's kernel"
  echo "   beside torch's scaled_dot_product_attention on the same inputs, with the mask and is_causal"
  time_attention prompt-512 "--prompt 512" flops 100
  for how in "" --causal; do
    timeout 120 python3 "$root/tools/gpu/attention_bench.py" "$out/attention-prompt-512-in" $how \
      >> "$out/attention-prompt-512.txt" 2>&1 || true
  done
  cat "$out/attention-prompt-512.txt"

  echo "== the bf16 decode step on the device (rms_norm row kernels, attention through repeat_kv, residuals"
  echo "   as cuBLASLt's C): logits and presents within one bf16 ulp of the float64 reference, and its latency"
  # shellcheck disable=SC2046
  "$bundle/bin/kiln-run" "$bundle/models/decoder.kiln" $(decoder_inputs) --output-dir "$out/decoder-out" \
    --bench 100 --warmup 10 --profile > "$out/decoder.txt" 2>&1 || true
  for k in 0 1 2 3 4; do
    printf 'output %s: ' "$k" >> "$out/decoder.txt"
    python3 "$root/test/run/compare_outputs.py" "$out/decoder-out/output_$k.pb" \
      "$bundle/models/decoder-ref/output_$k.pb" --atol 0.016 >> "$out/decoder.txt" 2>&1 || true
  done
  cat "$out/decoder.txt"

  echo "== kiln-generate on the device: 128 tokens of the tiny decoder as exported (each step its own"
  echo "   launches, the cache through the host), in place (the cache on the device, one CUDA graph"
  echo "   replayed per decode step) and in place choosing the token on the device (the tokens back,"
  echo "   not the logits): per-step latency, and the forms' tokens compared"
  for form in decoder decoder-in-place decoder-sampled; do
    "$bundle/bin/kiln-generate" "$bundle/models/$form.kiln" --backend cuda \
      --input-ids "$bundle/models/generate-ids.npy" --attention-mask "$bundle/models/generate-mask.npy" \
      --max-new-tokens 128 --output "$out/$form-tokens.npy" --bench > "$out/$form-generate.txt" 2>&1 || true
    echo "-- $form" && cat "$out/$form-generate.txt"
  done
  python3 -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); print('tokens:', 'the same' if (a == b).all() else 'DIFFERENT')" \
    "$out/decoder-tokens.npy" "$out/decoder-in-place-tokens.npy" || true
  python3 -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); print('tokens chosen on the device:', 'the same' if (a == b).all() else 'DIFFERENT')" \
    "$out/decoder-tokens.npy" "$out/decoder-sampled-tokens.npy" || true

  echo "== the same decoder and prompts in torch (bf16, static cache): eager and"
  echo "   torch.compile(mode=reduce-overhead), timed as kiln-generate --bench times itself"
  timeout 300 python3 "$root/tools/gpu/decode_bench.py" run --weights "$bundle/models/decoder-weights.npz" \
    --ids "$bundle/models/generate-ids.npy" --mask "$bundle/models/generate-mask.npy" \
    --max-new-tokens 128 --kiln-tokens "decoder-in-place=$out/decoder-in-place-tokens.npy" \
    --json "$out/decode-bench.json" 2>&1 | tee "$out/decode-bench.md" || true

  echo "== the runtime's CUDA tests: 8 threads on one model, device buffers (a misaligned input, an"
  echo "   allocation the device refuses), graph captures in one thread beside model loads and copies"
  echo "   in another (1,000 iterations: the legacy-stream rule)"
  KILN_TEST_ENCODER="$bundle/models/encoder-tests.kiln" timeout 300 "$bundle/bin/kiln-runtime-tests" \
    --gtest_filter='Threads.*:DeviceBuffers.*' > "$out/runtime-tests.txt" 2>&1 || true
  grep -E "^\[ +(OK|FAILED|SKIPPED) +\]" "$out/runtime-tests.txt" || tail -5 "$out/runtime-tests.txt"

  echo "== matmuls in the real cuBLASLt (pointers 16-byte aligned in the partial-broadcast cases, the"
  echo "   heuristic told so; a long K's split-K workspace), convs and pools in the real cuDNN, against float64"
  PATH="$bundle/bin:$PATH" python3 "$root/test/run/check_library_steps.py" "$bundle/library-steps" --run-only \
    | tee "$out/library-steps.txt" || true
  "$bundle/bin/kiln-bench-load" --mb 436 | tee "$out/load.txt" || true

  echo "== precision modes on the device: each against torch within the mode's tolerance"
  for m in mlp cnn encoder; do
    for p in tf32 fp16 bf16; do
      tol=5e-3; [ "$p" = bf16 ] && tol=4e-2
      "$bundle/bin/kiln-run" "$bundle/models/$m-$p.kiln" --input "x=$bundle/models/$m-data/input_0.pb" \
        --output-dir "$out/$m-$p-out" --bench 200 --warmup 20 > "$out/kiln-run-$m-$p.txt" 2>&1 || true
      printf '%s %s: ' "$m" "$p" | tee -a "$out/precision.txt"
      python3 "$root/test/run/compare_outputs.py" "$out/$m-$p-out/output_0.pb" "$bundle/models/$m-data/output_0.pb" \
        --atol "$tol" --rtol "$tol" 2>&1 | tee -a "$out/precision.txt" || true
    done
  done

  # The real cuBLASLt's FP8 rules (TN, 16-byte rows and pointers, a bf16
  # bias with a bf16 result) are what the fake's come from: a refusal shows
  # as MatMul steps on the host in the profile. The bounds are fp8.test's.
  "$bundle/bin/kiln-run" "$bundle/models/encoder-fp8.kiln" --input "x=$bundle/models/encoder-data/input_0.pb" \
    --output-dir "$out/encoder-fp8-out" --profile > "$out/fp8.txt" 2>&1 || true
  python3 "$root/test/run/compare_outputs.py" "$out/encoder-fp8-out/output_0.pb" \
    "$bundle/models/encoder-data/output_0.pb" --atol 0.15 --rms 0.05 2>&1 | tee -a "$out/fp8.txt" || true

  echo "== variants on the device: the specialized cubins against torch and the reference"
  "$bundle/bin/kiln-run" "$bundle/models/encoder-buckets.kiln" --input "x=$bundle/models/encoder-data/input_0.pb" \
    --output-dir "$out/variant-s5" --profile --trace "$out/variant-s5.json" > "$out/variants.txt" 2>&1 || true
  "$bundle/bin/kiln-run" "$bundle/models/encoder-buckets.kiln" --input "x=$bundle/models/encoder-x8.npy" \
    --output-dir "$out/variant-s8" --profile --trace "$out/variant-s8.json" >> "$out/variants.txt" 2>&1 || true
  grep "variant:" "$out/variants.txt" || true
  python3 - "$root" "$bundle" "$out" <<'PY' | tee -a "$out/variants.txt"
import sys, numpy as np, onnx
from onnx import numpy_helper
root, bundle, out = sys.argv[1:]
def load(p):
    return numpy_helper.to_array(onnx.load_tensor(p))
for got, want in ((f"{out}/variant-s5/output_0.pb", f"{root}/test/models/encoder/output_0.pb"),
                  (f"{out}/variant-s8/output_0.pb", f"{bundle}/models/encoder-x8-ref/output_0.pb")):
    try:
        print(f"{got}: max abs diff {float(np.abs(load(got) - load(want)).max()):.3g}")
    except Exception as e:
        print(f"{got}: {e}")
PY

  echo "== benchmarks: kiln against torch eager, torch.compile and onnxruntime"
  python3 "$root/tools/gpu/bench.py" --models "$bundle/models" --backend auto \
    --json "$out/bench.json" | tee "$out/bench.md"
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  run) run ;;
  *) echo "usage: tools/gpu-check.sh prepare [BUILD] | run" >&2; exit 2 ;;
esac
