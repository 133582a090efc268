#!/usr/bin/env bash
# Installs the Debian packages npuc builds and tests with, only those missing (idempotent).
# Usage: tools/install_deps.sh [build|test|bench|fuzz]
#   build < test < bench: each includes the ones before it; fuzz = build + what tests/fuzz/run.sh
#   needs (clang and its libFuzzer/sanitizer runtimes, which the base image lacks).
set -euo pipefail
level=${1:-build}

build_pkgs=(cmake ninja-build g++ make pkg-config python3 python3-dev python3-venv python3-numpy
  python3-onnx python3-pybind11 pybind11-dev libprotobuf-dev protobuf-compiler libonnx-dev
  libdnnl-dev ocl-icd-opencl-dev libgtest-dev libyaml-cpp-dev libxxhash-dev libfmt-dev python3-yaml python3-pil python3-matplotlib python3-tqdm
  python3-setuptools python3-wheel python3-pip
  ccache  # a second build of the same sources (pip install after make build) reuses the objects
  libflatbuffers-dev flatbuffers-compiler)  # the TFLite frontend: flatc compiles its schema subset at build time
# The tests also run PyTorch (load_pytorch, the resnet50 export) and ONNX Runtime from npm (node);
# RKNN-Toolkit2's example scripts (tests/rknn_examples) import cv2 and scipy.
# The Caffe frontend's tests write caffemodels with the protobuf module protoc generates (python3-protobuf);
# the Darknet frontend's tests compare with Debian's libdarknet (darknet).
# The TFLite frontend's tests compare with Arm NN's TfLiteParser on its CpuRef backend (python3-pyarmnn,
# libarmnn-cpuref-backend22) and rewrite .tflite files with flatbuffers.Builder (python3-flatbuffers).
test_pkgs=(python3-pytest libonnx-testdata python3-torch python3-torchvision python3-opencv python3-scipy darknet nodejs npm
           ca-certificates python3-protobuf python3-pyarmnn libarmnn-cpuref-backend22 python3-flatbuffers)
bench_pkgs=(python3-sklearn python3-scipy fonts-dejavu-core)
fuzz_pkgs=(clang libclang-rt-14-dev)

want=("${build_pkgs[@]}")
[[ $level == test || $level == bench ]] && want+=("${test_pkgs[@]}")
[[ $level == bench ]] && want+=("${bench_pkgs[@]}")
[[ $level == fuzz ]] && want+=("${fuzz_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from outside Debian's packages on some images: a working `npm` is enough.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/nodejs/}"); missing=("${missing[@]/npm/}")
fi
missing=($(printf '%s\n' "${missing[@]}" | sed '/^$/d'))

if [[ ${#missing[@]} -gt 0 ]]; then
  echo "npuc: installing missing Debian packages: ${missing[*]}"
  SUDO=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "npuc: run as root or install: ${missing[*]}" >&2; exit 1; }
    SUDO=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# From npm, into bench/node_modules (bench/package.json pins the versions): ONNX Runtime
# (onnxruntime-node), the peer the QDQ export tests and the benchmarks run models in, and MediaPipe's
# trained TFLite models (@mediapipe/face_detection, selfie_segmentation, hands), the TFLite frontend's
# test models. The test level needs them: a failure here stops `make test`.
install_npm_packages() {
  local bench_dir missing
  bench_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bench"
  # Each pinned dependency is checked (present at the pinned version): an older checkout's
  # node_modules may hold onnxruntime-node but not the models added later.
  missing=$(cd "$bench_dir" && node -e '
    const fs = require("fs");
    for (const [name, want] of Object.entries(require("./package.json").dependencies)) {
      let have = null;
      try { have = JSON.parse(fs.readFileSync(`node_modules/${name}/package.json`)).version; } catch (e) {}
      if (have !== want) console.log(name);
    }') || { echo "npuc: cannot read bench/package.json with node" >&2; exit 1; }
  missing=$(echo $missing)
  [[ -z $missing ]] && return 0
  echo "npuc: installing $missing into bench/ (npm)"
  (cd "$bench_dir" && npm install --ignore-scripts --no-audit --no-fund >/dev/null) || {
    echo "npuc: 'npm install' of $missing failed in bench/ (is the npm registry reachable?)" >&2
    exit 1
  }
}
[[ $level == test || $level == bench ]] && install_npm_packages
exit 0
