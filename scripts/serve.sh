#!/usr/bin/env bash
# make serve MODEL=path PORT=N: serves one kiln model from Triton Inference
# Server in the foreground, HTTP on 127.0.0.1:N, gRPC on N+1, metrics on N+2.
# Installs the pinned server (scripts/install-serving-deps.sh), builds the
# backend, and lays out a model repository in build/serve named by the model
# file's stem, with a minimal config.pbtxt (`backend: "kiln"`, dynamic
# batching); Triton completes the rest from the model.
set -euo pipefail
model=${1:?usage: serve.sh MODEL PORT}
port=${2:-8000}
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
case "$model" in
  *.kiln|*.so|*.onnx) ;;
  *) echo "serve: $model must be a .kiln, .so or .onnx model" >&2; exit 1 ;;
esac
test -f "$model" || { echo "serve: no such model: $model" >&2; exit 1; }
server=$("$src/scripts/install-serving-deps.sh" "$build/serving-venv" | tail -1)
cmake --build "$build" --target triton_kiln >/dev/null
name=$(basename "$model"); stem=${name%.*}; ext=${name##*.}
repo=$build/serve/models
rm -rf "$repo/$stem" && mkdir -p "$repo/$stem/1" "$build/serve/backends/kiln"
cp "$model" "$repo/$stem/1/model.$ext"
printf 'backend: "kiln"\ndynamic_batching {}\n' > "$repo/$stem/config.pbtxt"
ln -sf "$build/lib/libtriton_kiln.so" "$build/serve/backends/kiln/libtriton_kiln.so"
echo "serve: $stem on http://127.0.0.1:$port (gRPC $((port + 1)), metrics $((port + 2)))"
exec "$server" --model-repository="$repo" --backend-directory="$build/serve/backends" \
  --http-address=127.0.0.1 --http-port="$port" --grpc-address=127.0.0.1 \
  --grpc-port=$((port + 1)) --metrics-address=127.0.0.1 --metrics-port=$((port + 2))
