"""A run that cannot fit is refused before it allocates (issue #15 defect 8): the outputs and
activations a run needs are compared with the caller's cap (``max_run_bytes`` / the
``NPUC_MAX_RUN_BYTES`` environment variable) and with the memory the machine has available, and a
ResourceError names the largest tensors, the total and the limit. ``npuc run`` exits 1 with one
line, never 2 with numpy's MemoryError.

The models declare outputs of 13.41 GiB (a Resize scaling a 4x4 input up 15000 times); every test
is cheap because nothing of that size is ever allocated (measured as peak RSS in a fresh
interpreter, as tests/python/test_resource_limits.py does)."""

from __future__ import annotations

import math
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc
from conftest import REPO_ROOT

MIB = 1 << 20
GIB = 1 << 30
SCALE = 15000  # 4x4 -> 60000x60000
SIDE = 4 * SCALE
OUTPUT_BYTES = SIDE * SIDE * 4  # 14.4e9 bytes = 13.41 GiB, under the 16 GiB tensor limit
OUTPUT_TEXT = r"output 'y' float32\[1,1,60000,60000\] 13\.41 GiB"
PACKAGE_PARENT = str(Path(os.path.abspath(npuc.__file__)).parent.parent)


def _resize_model(outputs: int = 1) -> onnx.ModelProto:
    """x[1,1,4,4] -> `outputs` x Resize(nearest, x15000) -> y (, y1, y2, ...) of 13.41 GiB each."""
    scales = numpy_helper.from_array(np.array([1, 1, SCALE, SCALE], np.float32), "scales")
    roi = numpy_helper.from_array(np.zeros(0, np.float32), "roi")
    names = ["y"] + [f"y{i}" for i in range(1, outputs)]
    nodes = [helper.make_node("Resize", ["x", "roi", "scales"], [n], name=f"up_{n}", mode="nearest") for n in names]
    graph = helper.make_graph(
        nodes, "upscale", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 1, SIDE, SIDE]) for n in names],
        initializer=[scales, roi])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(autouse=True)
def bounded_address_space() -> Iterator[None]:
    """Should a refusal ever regress, the 13.41 GiB buffers fail to allocate (MemoryError) instead
    of being filled until the OOM killer picks a process on a shared machine: the address space
    may grow by 2 GiB during each test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as f:
        vm_kib = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
    limit = vm_kib * 1024 + 2 * GIB
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.fixture
def huge_output_model() -> npuc.Model:
    return npuc.Model.from_bytes(_resize_model().SerializeToString())


@pytest.fixture
def no_env_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NPUC_MAX_RUN_BYTES", raising=False)


X = np.ones((1, 1, 4, 4), np.float32)


def test_runtime_refuses_a_run_over_the_cap(huge_output_model: npuc.Model, no_env_cap: None) -> None:
    runtime = npuc.Runtime(huge_output_model)
    start = time.monotonic()
    with pytest.raises(npuc.ResourceError) as info:
        runtime.run([X], max_run_bytes="1G")
    assert time.monotonic() - start < 1.0
    message = str(info.value)
    assert re.match(r"a run of this model needs 13\.41 GiB \(\d+ bytes\): " + OUTPUT_TEXT, message), message
    assert message.endswith("that exceeds the run memory cap of 1.00 GiB (1073741824 bytes), set by "
                            "max_run_bytes or NPUC_MAX_RUN_BYTES")
    # The same cap as an int; and the runtime still works for a run that fits.
    with pytest.raises(npuc.ResourceError, match=OUTPUT_TEXT):
        runtime.run([X], max_run_bytes=1 << 30)


def test_cap_from_the_environment(huge_output_model: npuc.Model, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPUC_MAX_RUN_BYTES", "512M")
    with pytest.raises(npuc.ResourceError, match=r"run memory cap of 512\.00 MiB \(536870912 bytes"):
        npuc.Runtime(huge_output_model).run([X])
    # An explicit argument wins over the variable.
    with pytest.raises(npuc.ResourceError, match=r"run memory cap of 2\.00 GiB"):
        npuc.Runtime(huge_output_model).run([X], max_run_bytes="2G")


@pytest.mark.parametrize("value", ["abc", "0", "-5", "8X", "1.5G", "", 0, -1, True, 2.0, 1 << 70])
def test_bad_caps_are_config_errors(value: object, huge_output_model: npuc.Model, no_env_cap: None) -> None:
    runtime = npuc.Runtime(huge_output_model)
    with pytest.raises(npuc.ConfigError, match=r"max_run_bytes=.* is not a positive number of bytes"):
        runtime.run([X], max_run_bytes=value)


def test_bad_cap_in_the_environment_is_a_config_error(huge_output_model: npuc.Model,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPUC_MAX_RUN_BYTES", "lots")
    with pytest.raises(npuc.ConfigError, match=r"NPUC_MAX_RUN_BYTES='lots' is not a positive number of bytes"):
        npuc.Runtime(huge_output_model).run([X])


@pytest.mark.parametrize("value, expected", [(4096, 4096), ("4096", 4096), ("8k", 8 << 10), ("3M", 3 << 20),
                                             ("8G", 8 << 30), ("1T", 1 << 40), (np.int64(123), 123), (None, 0)])
def test_cap_spellings(value: object, expected: int, no_env_cap: None) -> None:
    assert npuc._npuc.max_run_bytes(value) == expected


def test_small_runs_pass_under_a_cap(conv_relu_path: Path, no_env_cap: None) -> None:
    runtime = npuc.Runtime(npuc.Model.load(str(conv_relu_path)))
    x = np.ones((1, 3, 8, 8), np.float32)
    (y,) = runtime.run([x], max_run_bytes="1M")
    (again,) = runtime.run([x], max_run_bytes="1M")  # the second run reuses the pooled arena
    np.testing.assert_array_equal(y, again)


def _mem_available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    pytest.skip("no /proc/meminfo MemAvailable on this system")


def test_run_over_the_available_memory_is_refused(no_env_cap: None) -> None:
    """No cap: enough 13.41 GiB outputs to need twice what this machine has available now."""
    outputs = math.ceil(2 * _mem_available() / OUTPUT_BYTES) + 1
    model = npuc.Model.from_bytes(_resize_model(outputs).SerializeToString())
    with pytest.raises(npuc.ResourceError, match=r"a run of this model allocates .* bytes\): output 'y.*' float32"
                       r"\[1,1,60000,60000\] 13\.41 GiB.* this machine has available now"):
        npuc.Runtime(model).run([X])


# Builds the 13.41 GiB model, runs it under a 1 GiB cap, prints the growth of the peak RSS in bytes.
MEASURE = r"""
import sys
import numpy as np, npuc
sys.path.insert(0, sys.argv[1])
from test_run_memory import _resize_model
def peak():  # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) * 1024
model = npuc.Model.from_bytes(_resize_model().SerializeToString())
runtime = npuc.Runtime(model)
base = peak()
for run in (runtime.run, npuc._npuc.fp16_model(model).run):
    try:
        run([np.ones((1, 1, 4, 4), np.float32)], max_run_bytes="1G")
        raise SystemExit("not refused")
    except npuc.ResourceError:
        pass
print(peak() - base)
"""


def test_refusal_allocates_nothing() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")]))
    env.pop("NPUC_MAX_RUN_BYTES", None)
    # The child inherits the address-space limit of bounded_address_space.
    out = subprocess.run([sys.executable, "-c", MEASURE, str(Path(__file__).parent)], env=env, check=True,
                         capture_output=True, text=True, timeout=120)
    assert int(out.stdout.strip().splitlines()[-1]) < 32 * MIB, out.stdout


def test_simulator_refuses_a_run_over_the_cap(huge_output_model: npuc.Model, no_env_cap: None) -> None:
    simulator = npuc._npuc.fp16_model(huge_output_model)
    with pytest.raises(npuc.ResourceError, match=OUTPUT_TEXT + r".*run memory cap of 1\.00 GiB"):
        simulator.run([X], max_run_bytes="1G")


def test_toolkit_inference_takes_the_cap_from_init_runtime(tmp_path: Path, no_env_cap: None) -> None:
    path = tmp_path / "upscale.onnx"
    onnx.save(_resize_model(), str(path))
    with npuc.Toolkit() as tk:
        tk.load_onnx(model=str(path))
        with pytest.raises(npuc.ConfigError, match=r"max_run_bytes='many' is not a positive number of bytes"):
            tk.init_runtime(max_run_bytes="many")
        assert tk.init_runtime(max_run_bytes="1G") == 0
        with pytest.raises(npuc.ResourceError, match=OUTPUT_TEXT + r".*run memory cap of 1\.00 GiB"):
            tk.inference(inputs=[X])


def _cli(*args: str, env_cap: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")]))
    env.pop("NPUC_MAX_RUN_BYTES", None)
    if env_cap:
        env["NPUC_MAX_RUN_BYTES"] = env_cap
    return subprocess.run([sys.executable, "-m", "npuc", *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("how", ["flag", "env"])
def test_npuc_run_exits_1_with_one_line(tmp_path: Path, how: str) -> None:
    path = tmp_path / "upscale.onnx"
    onnx.save(_resize_model(), str(path))
    np.save(tmp_path / "x.npy", X)
    args = ["run", str(path), "--input", str(tmp_path / "x.npy")]
    r = _cli(*args, "--max-run-bytes", "1G") if how == "flag" else _cli(*args, env_cap="1G")
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("npuc: error: a run of this model needs 13.41 GiB"), lines[0]
    assert "run memory cap of 1.00 GiB" in lines[0]


def test_loaded_blob_program_runtime_checks_the_cap(conv_relu_path: Path, tmp_path: Path, no_env_cap: None) -> None:
    """A loaded blob runs on the program runtime (its planned arena): the same cap applies there."""
    blob = tmp_path / "conv.npub"
    x = np.ones((1, 3, 8, 8), np.float32)
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(conv_relu_path))
        tk.build(do_quantization=False)
        assert tk.export_blob(blob) == 0
    with npuc.Toolkit() as tk:
        assert tk.load_blob(blob) == 0
        assert tk._simulator().runtime == "program"  # noqa: SLF001 (which runtime is under test)
        assert tk.init_runtime(max_run_bytes=64) == 0
        with pytest.raises(npuc.ResourceError, match=r"needs .* bytes\): graph input/output buffers .*run "
                           r"memory cap of 64 bytes, set by"):
            tk.inference(inputs=[x])
        assert tk.init_runtime(max_run_bytes="1M") == 0
        (y,) = tk.inference(inputs=[x])
    assert y.shape == (1, 4, 8, 8)
