"""Issue #17's quantized dtypes on the SoCs that have them, end to end with the real quantizer:
``config(target_platform, quantized_dtype, quantized_method)`` -> ``build`` -> ``export_blob`` ->
a fresh Toolkit ``load_blob`` -> ``inference`` equals the build's own simulator bit for bit; the
blob, ``eval_perf`` and ``eval_memory`` report the dtype; the exported QDQ ONNX runs in ONNX
Runtime close to the simulator; a SoC without the dtype is refused naming the SoCs that have it.

The blob / export / cost tests of tests/cpp (test_quant_dtypes_blob.cc, test_qdq_export_dtypes.cc,
test_perf_dtypes.cc) use hand-made plans; this file checks the same paths on plans the quantizer
made, whose w4a16 groups carry non-zero weights under multipliers above 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pytest

from conftest import ort_outputs, require_ort
from test_quant_dtypes import _cnn

import npuc
from npuc.quantize import cosine_similarity

#: (SoC, quantized_dtype, quantized_method): each dtype on a SoC whose profile lists it.
CASES: List[Tuple[str, str, str]] = [
    ("rk3588", "w8a8", "channel"),
    ("rk3562", "w8a16", "channel"),
    ("rv1106", "w16a16i", "channel"),
    ("rv1103", "w16a16i_dfp", "layer"),
    ("rk3576", "w4a16", "group32"),
]


@pytest.fixture(scope="module")
def cnn(tmp_path_factory) -> Tuple[Path, List[List[np.ndarray]], np.ndarray]:
    folder = tmp_path_factory.mktemp("cnn")
    rng = np.random.default_rng(3)
    samples = [[rng.standard_normal((1, 3, 32, 32)).astype(np.float32)] for _ in range(6)]
    return _cnn(folder / "cnn.onnx"), samples, samples[2][0]


@pytest.fixture(scope="module")
def built(cnn, tmp_path_factory) -> Dict[str, dict]:
    """Per case: the build's output, the blob's output after a fresh load, the reports."""
    model, samples, x = cnn
    out: Dict[str, dict] = {}
    for soc, dtype, method in CASES:
        folder = tmp_path_factory.mktemp(dtype)
        with npuc.Toolkit() as tk:
            tk.config(target_platform=soc, quantized_dtype=dtype, quantized_method=method)
            tk.load_onnx(model=str(model))
            tk.build(do_quantization=True, dataset=samples)
            y = tk.inference(inputs=[x])[0]
            perf = tk.eval_perf(is_print=False)
            memory = tk.eval_memory(is_print=False)
            tk.export_blob(str(folder / "m.npub"))
            tk.export_onnx(str(folder / "m_qdq.onnx"))
        with npuc.Toolkit() as tk:
            tk.load_blob(str(folder / "m.npub"))
            tk.init_runtime()
            y_blob = tk.inference(inputs=[x])[0]
        out[dtype] = dict(soc=soc, y=y, y_blob=y_blob, perf=perf, memory=memory, qdq=folder / "m_qdq.onnx")
    return out


@pytest.mark.parametrize("soc,dtype,method", CASES)
def test_the_blob_reloads_bit_identical(built, soc: str, dtype: str, method: str) -> None:
    b = built[dtype]
    assert np.array_equal(b["y"], b["y_blob"]), f"{dtype} on {soc}: blob output differs from the build's"


def test_eval_perf_follows_the_dtype(built) -> None:
    """A16 dtypes run at the 16-bit MAC rate of their SoC and move 2-byte activations."""
    rows = {d: b["perf"].summary for d, b in built.items()}
    for dtype, s in rows.items():
        print(f"{dtype:12} {built[dtype]['soc']:7} {s['total_time_us']:9.1f} us  {s['ddr_bytes_per_frame']:>9} B DDR")
    assert "int8" in str(built["w8a8"]["perf"].summary.get("dtype", "int8"))
    for dtype in ("w8a16", "w16a16i", "w4a16"):
        assert "int16" in str(rows[dtype].get("dtype", "")), (dtype, rows[dtype])


def test_eval_memory_weight_bytes_follow_the_weight_bits(built) -> None:
    """Same weights, three weight widths (each SoC pads channels by its own int16 alignment row, so
    only the order is asserted: 2-byte > 1-byte > half-byte plus group multipliers)."""
    w = {d: b["memory"]["weight_bytes"] for d, b in built.items()}
    print(w)
    assert w["w16a16i"] > w["w8a16"] > w["w4a16"]


@pytest.mark.parametrize("dtype", ["w8a16", "w16a16i", "w4a16"])
def test_qdq_export_of_a_real_plan_runs_in_onnx_runtime(built, cnn, dtype: str) -> None:
    """The opset-21 QDQ file (int16 Q/DQ, blocked int4 weights) against the simulator. Not bit-exact
    by construction (ONNX Runtime dequantizes and computes in float, the simulator requantizes
    integers once per layer; docs/quantization.md "QDQ export of the dtypes"): the output agrees to
    the measured cosine."""
    require_ort()
    _, _, x = cnn
    ort = ort_outputs(built[dtype]["qdq"], {"x": x})[0]
    cos = cosine_similarity(built[dtype]["y"], ort)
    err = float(np.max(np.abs(built[dtype]["y"] - ort)))
    print(f"{dtype}: ORT vs simulator cosine {cos:.7f}, max abs {err:.2e}")
    assert cos >= 0.9999


def test_a_dtype_the_soc_lacks_is_refused_naming_the_socs_that_have_it() -> None:
    with npuc.Toolkit() as tk:
        with pytest.raises(npuc.ConfigError, match=r"w4a16 is not available on rk3588 \(available on: rk3576\)"):
            tk.config(target_platform="rk3588", quantized_dtype="w4a16", quantized_method="group128")
        with pytest.raises(npuc.ConfigError, match=r"w8a16 is not available on rv1106 \(available on: rk3562\)"):
            tk.config(target_platform="rv1103", quantized_dtype="w8a16")
