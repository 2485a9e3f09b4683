#!/usr/bin/env bash
# Installs everything kiln needs on a fresh Debian 12 machine of the project's kind.
# Idempotent: a second run checks and returns quickly. Used by `make demo`, `make test`
# and .ci/run, so nothing the build needs is ever installed by hand.
set -euo pipefail

APT_PACKAGES=(
  # Compiler half: LLVM/MLIR 22 (static component libraries, mlir-tblgen, FileCheck, not).
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools lld-22
  # ONNX frontend: the protobuf classes of the ONNX IR.
  libonnx-dev libprotobuf-dev protobuf-compiler
  # Runtime: Abseil (shared: Debian's static Abseil is not PIC) and the artifact schema.
  libabsl-dev flatbuffers-compiler libflatbuffers-dev
  # The artifact checksum: XXH3, header-only (XXH_INLINE_ALL), so nothing more to ship.
  libxxhash-dev
  # Build and test tooling.
  cmake ninja-build ccache googletest libgtest-dev libgmock-dev binutils
  # kiln-compile --graph FILE.svg draws plans through Graphviz's dot.
  graphviz
  # The Ray Serve test's private network namespace (unshare, ip link set lo up).
  util-linux iproute2
)

# Python packages the test suites use, pinned so every machine runs the same tests.
PIP_PACKAGES=(
  "numpy==2.2.6"
  "onnx==1.22.0"
  # cuobjdump and the nvdisasm it runs, for tools/sass-lint.py: the SASS of
  # every generated kernel is linted without a GPU (the CUDA toolkit here ships
  # ptxas but neither of them).
  "nvidia-cuda-cuobjdump==13.5.37"
  "nvidia-cuda-nvdisasm==13.5.37"
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PYTHON=${PYTHON:-python3}
need_pip=()
for spec in "${PIP_PACKAGES[@]}"; do
  name=${spec%%==*}; want=${spec##*==}
  have=$("$PYTHON" -m pip show "$name" 2>/dev/null | sed -n "s/^Version: //p" || true)
  [ "$have" = "$want" ] || need_pip+=("$spec")
done
if [ ${#need_pip[@]} -gt 0 ]; then
  echo "install-deps: pip installing ${need_pip[*]}"
  "$PYTHON" -m pip install -q --disable-pip-version-check "${need_pip[@]}"
fi

if [ ! -d /usr/local/cuda ]; then
  echo "install-deps: CUDA 13 toolkit not found at /usr/local/cuda (NVRTC, cuBLAS, cuDNN are required)" >&2
  exit 1
fi
echo "install-deps: all dependencies present"
