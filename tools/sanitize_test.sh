#!/usr/bin/env bash
# ASan + UBSan run of npuc's tests: builds the C++ tests and the Python extension sanitized, then
# runs a subset chosen to finish within CI's 15 minutes (loading, shape inference, passes, the
# executor and the Python robustness tests - the code that sees untrusted models).
#
#   tools/sanitize_test.sh            # build in build-asan/, run the subset, print the time taken
#
# Environment: ASAN_BUILD (build folder, default build-asan), JOBS (default nproc),
#              PYTHON (default /usr/bin/python3), GTEST_FILTER / PYTEST_FILES to change the subset.
#
# Recipe for the sanitized extension in an unsanitized CPython: the ASan runtime must be the first
# library in the process, so it is LD_PRELOADed (libasan of the compiler that built the extension;
# libubsan comes in as the extension's own dependency), and leak detection is off because CPython
# keeps its arenas and interned objects alive until exit on purpose, which LeakSanitizer reports.
# The sanitized _npuc lands in $ASAN_BUILD/pkg/npuc next to links to python/npuc/*.py, so it never
# replaces the regular build's module in python/npuc.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${ASAN_BUILD:-$REPO/build-asan}"
JOBS="${JOBS:-$(nproc)}"
PYTHON="${PYTHON:-/usr/bin/python3}"
PKG="$BUILD/pkg"
# Suites whose code parses, rewrites or runs user models.
GTEST_FILTER="${GTEST_FILTER:-Frontend*:Graph*:Tensor*:Executor*:MemoryPlanner*:Pass*}"
# (test_resource_limits.py measures peak RSS, which ASan's shadow memory and quarantine distort.)
PYTEST_FILES="${PYTEST_FILES:-tests/python/test_bad_inputs.py tests/python/test_thread_safety.py tests/python/test_toolkit.py}"

start=$(date +%s)

if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPUC_SANITIZE=ON \
    -DPython3_EXECUTABLE="$PYTHON" -DNPUC_PYTHON_OUT="$PKG/npuc"
fi
ninja -C "$BUILD" -j "$JOBS"
built=$(date +%s)

mkdir -p "$PKG/npuc"
for f in "$REPO"/python/npuc/*.py; do ln -sf "$f" "$PKG/npuc/"; done

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0

echo "== C++ tests ($GTEST_FILTER)"
# Leaks are reported for the C++ tests: there is no interpreter keeping things alive on purpose.
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" "$BUILD/npuc_tests" --gtest_filter="$GTEST_FILTER" --gtest_brief=1 \
  || status=1

echo "== Python tests with the sanitized extension ($PYTEST_FILES)"
libasan="$("${CXX:-c++}" -print-file-name=libasan.so)"
cd "$REPO"
# shellcheck disable=SC2086  # PYTEST_FILES is a list
LD_PRELOAD="$libasan" ASAN_OPTIONS="detect_leaks=0" PYTHONPATH="$PKG" \
  "$PYTHON" -m pytest -q -p no:cacheprovider $PYTEST_FILES || status=1

end=$(date +%s)
echo "sanitizer run: build $((built - start)) s, tests $((end - built)) s, total $((end - start)) s (status $status)"
exit "$status"
