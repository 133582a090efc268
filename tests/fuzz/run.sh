#!/usr/bin/env bash
# Builds every libFuzzer target of npuc and runs each for SECONDS (default 60), and the Python
# targets (tests/fuzz/fuzz_*.py on the pyfuzz engine) alike.
#
#   tests/fuzz/run.sh [SECONDS]
#
# Environment:
#   FUZZ_BUILD   build folder (default: build-fuzz in the repository); holds the sanitized core,
#                the target binaries, the growing corpora (corpus/<target>) and any crash
#                artifacts (artifacts/<target>/)
#   FUZZ_JOBS    parallel compile jobs (default: nproc)
#   FUZZ_ONLY    run only the targets of these names, comma-separated (e.g. fuzz_onnx_import)
#   FUZZ_PARALLEL  non-empty: run the selected targets at the same time (logs in $FUZZ_BUILD/logs/)
#   FUZZ_SEED    the Python targets' mutation seed (default 0; runs are deterministic given the corpus)
#   PYTHON       interpreter with the onnx package, for seed generation and the Python targets
#                (default /usr/bin/python3)
#   PYTHONPATH   must reach a built npuc package for fuzz_blob_load's seeds (blobs are compiled by
#                npuc) and for the Python targets (default: the checkout's python/ folder)
#
# Targets: fuzz_onnx_import (ONNX bytes -> import -> passes -> export), fuzz_blob_load (.npub bytes,
# as is or re-sealed -> verify -> FP32 executor or INT8 simulator -> one run), fuzz_dataset_list
# (dataset.txt text and .npy bytes -> the calibration-input parsers), fuzz_darknet_import (a .cfg
# text and .weights bytes -> the Darknet frontend and the shared import tail), fuzz_caffe_import
# (prototxt + caffemodel bytes -> Caffe import -> passes), fuzz_tflite_import (.tflite bytes -> the
# flatbuffers verifier -> the TFLite frontend and the shared import tail); Python: fuzz_yaml_config
# (YAML text -> `npuc convert -i`, or hybrid_quantization_step2's config), fuzz_cli_args (an argv,
# one argument per line -> `npuc ...` in-process). The sanitized core is only built when a C++
# target is selected: the Python targets use the regular build's module (PYTHONPATH).
#
# The core is compiled with clang, ASan + UBSan (NPUC_SANITIZE) and libFuzzer's coverage
# instrumentation (-fsanitize=fuzzer-no-link) so the fuzzer sees edges inside npuc, not only in
# the harness. Each target (tests/fuzz/fuzz_*.cc, deliberately not globbed by CMake) is linked
# against that libnpuc_core.a with -fsanitize=fuzzer.
#
# Exit status: 0 when no target found anything, 1 otherwise. A crash input lands in
# $FUZZ_BUILD/artifacts/<target>/; reproduce it with `$FUZZ_BUILD/<target> <file>` and turn it into
# a regression test (tests/python/test_bad_inputs.py or tests/bad_inputs/make_corpus.py).
set -euo pipefail

SECONDS_PER_TARGET="${1:-60}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${FUZZ_BUILD:-$REPO/build-fuzz}"
JOBS="${FUZZ_JOBS:-$(nproc)}"
PYTHON="${PYTHON:-/usr/bin/python3}"

# Per-input limits. An input that takes longer than TIMEOUT seconds is a hang; an allocation
# larger than MALLOC_LIMIT_MB means a declared size was trusted before it was checked (the
# importer's tensor cap is far above this, but no sane fuzz input of <= MAX_LEN bytes needs it).
TIMEOUT=10
RSS_LIMIT_MB=3072
# Python targets: growth over the interpreter with npuc and its fixtures loaded (pyfuzz.py).
PY_RSS_LIMIT_MB=2048
MALLOC_LIMIT_MB=1024
MAX_LEN=$((512 * 1024))  # fits the small shared models whole, so their mutations stay meaningful

configure_core() {
  if [[ ! -f "$BUILD/build.ninja" ]]; then
    CC=clang CXX=clang++ cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DNPUC_SANITIZE=ON -DNPUC_BUILD_PYTHON=OFF -DNPUC_BUILD_TESTS=OFF \
      -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
  fi
  ninja -C "$BUILD" -j "$JOBS" npuc_core
}

# Links tests/fuzz/<name>.cc against the sanitized core.
build_target() {
  local name="$1"
  local src="$REPO/tests/fuzz/$name.cc"
  local out="$BUILD/$name"
  if [[ -x "$out" && "$out" -nt "$src" && "$out" -nt "$BUILD/libnpuc_core.a" ]]; then return; fi
  echo "== linking $name"
  clang++ -std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -DONNX_NAMESPACE=onnx -DONNX_ML=1 -I"$REPO/cpp" -I"$REPO" -I"$BUILD/generated" \
    "$src" "$BUILD/libnpuc_core.a" \
    -lonnx_proto -lprotobuf -ldnnl -lyaml-cpp -lxxhash -lfmt -lpthread -o "$out"  # as npuc_core in CMakeLists.txt
}

# Seeds: generated valid and broken models plus the small real models (tests/fuzz/make_seeds.py).
make_seeds() {
  local name="$1" dir="$2"
  mkdir -p "$dir"
  case "$name" in
    fuzz_onnx_import) "$PYTHON" "$REPO/tests/fuzz/make_seeds.py" onnx "$dir" ;;
    # Blob seeds are compiled by npuc itself: the regular build's module must be importable
    # (PYTHONPATH, or python/npuc of a checkout that was built).
    fuzz_blob_load) PYTHONPATH="${PYTHONPATH:-$REPO/python}" "$PYTHON" "$REPO/tests/fuzz/make_seeds.py" blob "$dir" ;;
    fuzz_dataset_list) "$PYTHON" "$REPO/tests/fuzz/make_seeds.py" dataset "$dir" ;;
    # The darknet seeds import the test helpers (tests/python), which import npuc.
    fuzz_darknet_import) PYTHONPATH="${PYTHONPATH:-$REPO/python}" "$PYTHON" "$REPO/tests/fuzz/make_seeds.py" darknet "$dir" ;;
    # The Caffe test nets (tests/python/caffe_nets.py: needs PyTorch and protoc).
    fuzz_caffe_import) "$PYTHON" "$REPO/tests/fuzz/make_seeds.py" caffe "$dir" ;;
    # MediaPipe's models from bench/node_modules and small models written by tests/python/tflite_reference.py.
    fuzz_tflite_import) "$PYTHON" "$REPO/tests/fuzz/make_seeds.py" tflite "$dir" ;;
    *) echo "no seed generator for $name (starting from an empty corpus)" ;;
  esac
}

run_target() {
  local name="$1"
  local corpus="$BUILD/corpus/$name" seeds="$BUILD/seeds/$name" artifacts="$BUILD/artifacts/$name/"
  mkdir -p "$corpus" "$artifacts"
  if [[ -f "$REPO/tests/fuzz/$name.py" ]]; then
    # pyfuzz takes libFuzzer's flags and prints the same stats; its seeds are built into the target.
    echo "== running $name for ${SECONDS_PER_TARGET}s (corpus $corpus)"
    PYTHONPATH="${PYTHONPATH:-$REPO/python}" "$PYTHON" "$REPO/tests/fuzz/$name.py" "$corpus" \
      -max_total_time="$SECONDS_PER_TARGET" -timeout="$TIMEOUT" -rss_limit_mb="$PY_RSS_LIMIT_MB" \
      -seed="${FUZZ_SEED:-0}" -artifact_prefix="$artifacts" -print_final_stats=1
    return
  fi
  make_seeds "$name" "$seeds"
  echo "== running $name for ${SECONDS_PER_TARGET}s (corpus $corpus)"
  # detect_leaks=0: protobuf and oneDNN keep process-lifetime caches that LeakSanitizer reports.
  ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=0" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$BUILD/$name" "$corpus" "$seeds" -max_total_time="$SECONDS_PER_TARGET" -timeout="$TIMEOUT" \
    -rss_limit_mb="$RSS_LIMIT_MB" -malloc_limit_mb="$MALLOC_LIMIT_MB" -max_len="$MAX_LEN" \
    -artifact_prefix="$artifacts" -print_final_stats=1
}

main() {
  "$REPO/tools/install_deps.sh" fuzz  # clang + libFuzzer runtime, only those missing
  local names=() cc_names=()
  for src in "$REPO"/tests/fuzz/fuzz_*.cc "$REPO"/tests/fuzz/fuzz_*.py; do
    local name
    name="$(basename "$src")"
    name="${name%.*}"
    if [[ -n "${FUZZ_ONLY:-}" && ",$FUZZ_ONLY," != *",$name,"* ]]; then continue; fi
    names+=("$name")
    if [[ "$src" == *.cc ]]; then cc_names+=("$name"); fi
  done
  if ((${#names[@]} == 0)); then
    echo "no fuzz target matches FUZZ_ONLY=${FUZZ_ONLY:-}" >&2
    return 1
  fi
  if ((${#cc_names[@]} > 0)); then
    configure_core
    for name in "${cc_names[@]}"; do build_target "$name"; done
  fi
  local failed=0
  if [[ -n "${FUZZ_PARALLEL:-}" ]]; then
    # All targets at once (one core each), each logging to $BUILD/logs/<target>.log.
    mkdir -p "$BUILD/logs"
    local pids=()
    for name in "${names[@]}"; do
      run_target "$name" >"$BUILD/logs/$name.log" 2>&1 &
      pids+=($!)
    done
    for i in "${!names[@]}"; do
      if ! wait "${pids[$i]}"; then
        echo "!! ${names[$i]} found a problem; inputs in $BUILD/artifacts/${names[$i]}/" >&2
        failed=1
      fi
      grep -E '^stat::(number_of_executed_units|coverage_points|corpus_size|finds):|^Done [0-9]+ runs' \
        "$BUILD/logs/${names[$i]}.log" | sed "s/^/${names[$i]}: /"
    done
  else
    for name in "${names[@]}"; do
      if ! run_target "$name"; then
        echo "!! $name found a problem; inputs in $BUILD/artifacts/$name/" >&2
        failed=1
      fi
    done
  fi
  return "$failed"
}

main
