"""Calibration speed-ups must not change a bit (issue #19): every algorithm's range pinned to the
values main's serial calibrator computed (29ecd65), and the parallel sample path against a forced
single-thread calibrator down to the quantization plan's bytes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import shared_models_dir

import npuc
from npuc._npuc import Calibrator
from npuc.errors import ConfigError

# Range of the input `x` over the four samples of pinned_samples(), as float.hex, computed by main
# at 29ecd65 (before the parallel calibrator, vectorized histograms and faster searches). A graph
# input's statistics are its samples' values, so the pins do not depend on any kernel.
PINNED = {
    "normal": ("-0x1.9b99ba0000000p+7", "0x1.76463e0000000p+7"),
    "percentile": ("-0x1.87e1b00000000p+5", "0x1.15f0d80000000p+6"),
    "kl_divergence": ("-0x1.0880000000000p+7", "0x1.0880000000000p+7"),
    "mmse": ("-0x1.5101e40000000p+7", "0x1.30500a0000000p+7"),
}


def cls_model() -> npuc.Model:
    folder = shared_models_dir()
    path = folder / "ppocr_cls.onnx" if folder else Path("missing")
    if not path.exists():
        pytest.skip("shared model ppocr_cls.onnx not found (set NPUC_SHARED_MODELS)")
    return npuc.Model.load(str(path))


def relu_model(tmp_path: Path) -> npuc.Model:
    """x (1x3x48x192) -> Relu: two observed tensors, so the searches take no time."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 48, 192])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 48, 192])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return npuc.Model.load(str(path))


def pinned_samples() -> list:
    """Heavy-tailed (Student t, 3 degrees of freedom) samples of growing scale; one ReLU'd, one with
    a block of outliers."""
    rng = np.random.default_rng(20261128)
    samples = []
    for s in range(4):
        x = (rng.standard_t(3, size=(1, 3, 48, 192)) * (0.5 + s)).astype(np.float32)
        if s == 1:
            x = np.maximum(x, 0)
        if s == 2:
            x[0, 0, :4] = 40.0
        samples.append([x])
    return samples


@pytest.mark.parametrize("threads", [1, 2])
def test_ranges_equal_mains_serial_calibrator(threads: int, tmp_path: Path) -> None:
    calibrator = Calibrator(relu_model(tmp_path), threads=threads)
    calibrator.add_samples(pinned_samples())
    for algorithm, (lo, hi) in PINNED.items():
        got = calibrator.ranges(algorithm)["x"]
        assert (float(got[0]).hex(), float(got[1]).hex()) == (lo, hi), algorithm


def test_parallel_samples_give_the_single_thread_plan_bytes() -> None:
    model = cls_model()
    rng = np.random.default_rng(3)
    samples = [[rng.standard_normal((1, 3, 48, 192)).astype(np.float32)] for _ in range(3)]
    serial = Calibrator(model, threads=1)
    for sample in samples:
        serial.add_sample(sample)
    parallel = Calibrator(model, threads=2)
    parallel.add_samples(samples[:1])  # batches of any size, in order
    parallel.add_samples(samples[1:])
    assert parallel.num_samples == serial.num_samples == 3
    # The plan holds every activation's scale and zero point and every weight integer. normal reads
    # the exact extremes, percentile every bin count: all the statistics the workers gather (the
    # KL / MMSE searches read the same histograms; their results are pinned above).
    for algorithm in ("normal", "percentile"):
        assert bytes(parallel.quantize(algorithm).plan_bytes) == bytes(serial.quantize(algorithm).plan_bytes), algorithm


def test_timings_and_threads_are_reported_and_checked(tmp_path: Path) -> None:
    model = relu_model(tmp_path)
    calibrator = Calibrator(model, threads=2)
    assert calibrator.threads == 2
    calibrator.add_samples(pinned_samples()[:2])
    calibrator.quantize("mmse")
    t = calibrator.timings
    assert set(t) == {"inputs", "collect", "forward", "statistics", "search", "plan", "simulator"}
    assert t["collect"] > 0 and t["forward"] > 0 and t["search"] > 0
    with pytest.raises(ConfigError, match="threads"):
        Calibrator(model, threads=-1)
