"""Recurrent layers (LSTM, GRU, RNN) on real-shaped models, against ONNX Runtime.

Two PyTorch models, exported with torch.onnx.export (opset 14):
  * a CRNN text recognizer: conv backbone on a 1x3x32x100 image, height collapsed to 1, two
    bidirectional LSTM layers (hidden 64) over the 25 columns, Linear to 37 classes, log-softmax
    in CTC form (T x N x C);
  * a GRU sequence model: a [1, 50, 40] float feature sequence (no embedding), two GRU layers
    (hidden 64, batch_first), Linear to 10 classes at every step.
Each runs in FP32 on npuc's CPU kernels (the LSTM/GRU host kernel) and in the unrolled form
unroll_recurrent builds for rk3588, both compared with ONNX Runtime; then INT8 through the Toolkit
(cosine vs FP32, NPU/CPU split), with the simulator's reference and fast paths compared bit for bit.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import ort_outputs as _run_ort

import npuc
from npuc._npuc import partition
from npuc.quantize import cosine_similarity, quantize

torch = pytest.importorskip("torch")
nn = torch.nn

SOC = "rk3588"
NUM_CALIBRATION_SAMPLES = 8

# FP32 tolerance. Measured vs ONNX Runtime: CRNN log-probabilities max abs 2.6e-5 (CPU kernel) and
# 2.4e-5 (unrolled) on values down to ~-40, max rel 1.9e-5 both; GRU logits max abs 2.4e-6 (CPU
# kernel) and 1.7e-6 (unrolled). rtol 1e-4 / atol 1e-5 leave ~5x margin for another CPU's
# summation order without hiding a wrong gate (which errs by >1e-2).
FP32_ATOL = 1e-5
FP32_RTOL = 1e-4
# INT8 floor. Measured: CRNN probability cosine 0.9956, GRU logit cosine 0.9993 (printed). An
# unrolled recurrence requantizes its state at every step, so error compounds along the sequence;
# 0.99 is the CNN floor of test_quantize.py and leaves about twice the CRNN's measured loss.
MIN_INT8_COSINE = 0.99


# ---------------------------------------------------------------------- models


class Crnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()

        def block(cin: int, cout: int, pool) -> list:
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(pool)]

        self.cnn = nn.Sequential(*block(3, 32, 2), *block(32, 64, 2), *block(64, 128, (2, 1)),
                                 nn.Conv2d(128, 128, (4, 1)), nn.ReLU())  # 32x100 -> 1x25
        self.rnn = nn.LSTM(128, 64, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(128, 37)

    def forward(self, x):
        f = self.cnn(x).squeeze(2).permute(2, 0, 1)  # [T=25, N, C]
        y, _ = self.rnn(f)
        return torch.log_softmax(self.fc(y), -1)


class GruNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(40, 64, num_layers=2, batch_first=True)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y)


def _realistic(module: nn.Module, rnn_gain: float, fc_gain: float) -> None:
    """PyTorch's init leaves an untrained recurrent layer's gates near 0.5 and the logits near 0;
    trained ones saturate some gates and separate the classes. Scaling the weights does both, so
    INT8 sees the ranges a real model has."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.startswith("rnn.weight"):
                p.mul_(rnn_gain)
            elif name.startswith("fc.weight"):
                p.mul_(fc_gain)


def _export(module: nn.Module, x: np.ndarray, path: Path) -> Path:
    torch.onnx.export(module, torch.from_numpy(x), str(path), opset_version=14, input_names=["x"],
                      output_names=["y"])
    return path


@pytest.fixture(scope="module")
def crnn(tmp_path_factory):
    torch.manual_seed(0)
    module = Crnn()
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (1, 3, 32, 100)).astype(np.float32)
    # BatchNorm statistics of this input, as training leaves them: unit-scale conv features.
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = 1.0
    with torch.no_grad():
        module.cnn(torch.from_numpy(x))
    module.eval()
    _realistic(module, rnn_gain=4.0, fc_gain=20.0)
    return _export(module, x, tmp_path_factory.mktemp("crnn") / "crnn.onnx"), x


@pytest.fixture(scope="module")
def gru(tmp_path_factory):
    torch.manual_seed(1)
    module = GruNet().eval()
    _realistic(module, rnn_gain=3.0, fc_gain=6.0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 50, 40)).astype(np.float32)
    return _export(module, x, tmp_path_factory.mktemp("gru") / "gru.onnx"), x


# ---------------------------------------------------------------------- checks


def _errors(got: np.ndarray, want: np.ndarray) -> tuple:
    diff = np.abs(got.astype(np.float64) - want)
    return float(diff.max()), float((diff / np.maximum(np.abs(want), 1e-3)).max())


def _check_fp32(path: Path, x: np.ndarray, op: str) -> np.ndarray:
    ort = _run_ort(path, {"x": x})[0]
    model = npuc.Model.load(str(path))
    assert Counter(n["op_type"] for n in model.nodes)[op] == 2
    cpu = npuc.Runtime(model).run([x])[0]
    unrolled_model, _ = npuc.optimize(model, soc=SOC, dtype="fp16")
    assert op not in {n["op_type"] for n in unrolled_model.nodes}, "unroll_recurrent left a recurrent op"
    unrolled = npuc.Runtime(unrolled_model).run([x])[0]
    for label, got in (("CPU kernel", cpu), ("unrolled", unrolled)):
        abs_err, rel_err = _errors(got, ort)
        print(f"\n{path.stem} {label} vs ONNX Runtime: max abs {abs_err:.3g}, max rel {rel_err:.3g}")
        assert got.shape == ort.shape
        np.testing.assert_allclose(got, ort, rtol=FP32_RTOL, atol=FP32_ATOL)
    return cpu


def _check_int8(path: Path, x: np.ndarray, fp32: np.ndarray, probabilities: bool) -> None:
    rng = np.random.default_rng(7)
    scale = float(np.std(x))
    samples = [x] + [(x + 0.3 * scale * rng.standard_normal(x.shape)).astype(np.float32)
                     for _ in range(NUM_CALIBRATION_SAMPLES - 1)]
    with npuc.Toolkit(verbose=False) as tk:
        tk.config(target_platform=SOC)
        tk.load_onnx(model=str(path))
        assert tk.build(do_quantization=True, dataset=samples) == 0
        int8 = tk.inference(inputs=[x])[0]
        report = tk.partition_report
        nodes = tk.model.nodes
    cpu = Counter(n["op_type"] for n in report["cpu_nodes"])
    ops = Counter(n["op_type"] for n in nodes)
    print(f"{path.stem} on {SOC}: {len(nodes) - sum(cpu.values())} of {len(nodes)} nodes on the NPU "
          f"(CPU: {dict(cpu) or 'none'}), NPU MAC share {report['npu_mac_share']:.4f}, "
          f"{report['handovers']} hand-over(s); unrolled ops {dict(ops.most_common(6))}")
    assert not {"LSTM", "GRU", "RNN"} & set(ops)
    assert report["npu_mac_share"] > 0.99
    ref, got = (np.exp(fp32), np.exp(int8)) if probabilities else (fp32, int8)
    cos = cosine_similarity(ref, got)
    agree = float(np.mean(np.argmax(fp32, -1) == np.argmax(int8, -1)))
    print(f"{path.stem} INT8 cosine vs FP32: {cos:.5f}" + (" (probabilities)" if probabilities else "") +
          f"; per-step argmax agreement {agree:.3f}")
    assert cos >= MIN_INT8_COSINE


def _check_simulator_paths(path: Path, x: np.ndarray, unroll: bool) -> None:
    model = npuc.Model.load(str(path))
    if unroll:
        model, _ = npuc.optimize(model, soc=SOC, dtype="int8")
    samples = [x, (x * 0.5).astype(np.float32)]
    fast = quantize(model, samples)
    ref = quantize(model, samples, reference=True)
    np.testing.assert_array_equal(fast.run([x])[0], ref.run([x])[0])


def test_crnn_fp32_matches_onnx_runtime(crnn) -> None:
    _check_fp32(*crnn, op="LSTM")


def test_crnn_int8_on_rk3588(crnn) -> None:
    path, x = crnn
    fp32 = npuc.Runtime(npuc.Model.load(str(path))).run([x])[0]
    _check_int8(path, x, fp32, probabilities=True)


def test_gru_fp32_matches_onnx_runtime(gru) -> None:
    _check_fp32(*gru, op="GRU")


def test_gru_int8_on_rk3588(gru) -> None:
    path, x = gru
    fp32 = npuc.Runtime(npuc.Model.load(str(path))).run([x])[0]
    _check_int8(path, x, fp32, probabilities=False)


@pytest.mark.parametrize("unroll", [True, False], ids=["unrolled", "recurrent_op_fp16"])
def test_int8_simulator_reference_and_fast_paths_agree_bitwise(gru, unroll: bool) -> None:
    """Unrolled, the pieces take their own INT8 rules; left whole, the GRU is a Float-class op (FP16)."""
    _check_simulator_paths(*gru, unroll=unroll)


def test_a_sequence_beyond_the_unroll_bound_stays_on_the_cpu_with_its_reason(tmp_path: Path) -> None:
    torch.manual_seed(2)
    module = GruNet().eval()
    x = np.random.default_rng(2).standard_normal((1, 80, 40)).astype(np.float32)
    path = _export(module, x, tmp_path / "long_gru.onnx")
    model = npuc.Model.load(str(path))
    optimized, report = npuc.optimize(model, soc=SOC, dtype="int8")
    assert Counter(n["op_type"] for n in optimized.nodes)["GRU"] == 2
    reasons = [f["reason"] for f in report["match_failures"] if f["pass"] == "unroll_recurrent"]
    assert any("sequence length 80 is outside [1, 64]" in r for r in reasons), reasons
    placed = partition(optimized, SOC, {})
    details = [n["detail"] for n in placed["cpu_nodes"] if n["op_type"] == "GRU"]
    assert len(details) == 2 and all("the NPU has no recurrent op" in d for d in details)
    # The GRUs' MACs are counted (on the CPU); only the Linear head's 1.4% is on the NPU.
    assert placed["npu_mac_share"] < 0.05
    ort = _run_ort(path, {"x": x})[0]
    np.testing.assert_allclose(npuc.Runtime(optimized).run([x])[0], ort, rtol=FP32_RTOL, atol=FP32_ATOL)
