# npuc — the two commands a new machine needs:
#   make demo   build everything, then run the main job on a bundled example
#   make test   build everything, then run every test (C++ unit, Python, ONNX conformance)
# Both install missing Debian packages first (tools/install_deps.sh; idempotent).

PYTHON ?= /usr/bin/python3
BUILD  ?= build
JOBS   ?= $(shell nproc)
export PYTHONPATH := $(CURDIR)/python$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: all deps test-deps bench-deps build demo test test-models test-cpp test-python test-conformance bench clean

all: build

deps:
	@tools/install_deps.sh build

test-deps:
	@tools/install_deps.sh test

bench-deps:
	@tools/install_deps.sh bench

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$(PYTHON)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) -j $(JOBS)

demo: build
	$(PYTHON) -m npuc demo --out npuc-demo

test: test-deps build test-models test-cpp test-python test-conformance

# `make test` installs every test dependency, so a test that would skip for a missing one fails
# instead (NPUC_STRICT_DEPS, read by tests/cpp/onnx_test_util.h and tests/python/conftest.py).
test-cpp test-python: export NPUC_STRICT_DEPS := 1

# Models the tests read that are exported, not committed: torchvision resnet50 (random weights).
test-models:
	cd bench && $(PYTHON) export_torchvision.py resnet50 >/dev/null

test-cpp:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-python:
	$(PYTHON) -m pytest -q -rs tests/python

test-conformance:
	$(PYTHON) tests/conformance/run_conformance.py

# Each benchmark prints ratios against a peer (or a published figure) measured in the same run.
bench: bench-deps build
	cd bench && $(PYTHON) host_fp32.py
	cd bench && $(PYTHON) passes.py
	cd bench && $(PYTHON) perf_calibration.py
	cd bench && $(PYTHON) quant_accuracy.py
	cd bench && $(PYTHON) quant_digits.py
	cd bench && $(PYTHON) quant_real.py --skip-digits
	cd bench && $(PYTHON) quant_real.py --skip-digits --dtypes
	cd bench && $(PYTHON) quant_accuracy.py --dtypes
	cd bench && $(PYTHON) qdq_import.py
	cd bench && $(PYTHON) memory_plan.py
	cd bench && $(PYTHON) memory_order.py
	cd bench && OMP_NUM_THREADS=1 $(PYTHON) sim_speed.py
	cd bench && $(PYTHON) load_time.py

clean:
	rm -rf $(BUILD)

# ASan + UBSan build of the C++ tests and the Python extension (in build-asan/), running the subset
# of tests that sees untrusted models; prints the time taken. See tools/sanitize_test.sh.
.PHONY: test-sanitize
test-sanitize: test-deps
	tools/sanitize_test.sh
