"""The attention-helper op family (issue #22) on a real-shaped model: a ViT block exported by
PyTorch (LayerNorm -> q/k/v projections -> torch.einsum scores -> torch.triu causal mask ->
softmax -> torch.einsum with v -> projection -> GELU MLP), so the ONNX file holds two Einsum nodes
and a Trilu on a constant, as a real export does.

Checked:

* FP32: npuc's optimized model (lower_einsum turns both Einsums into MatMuls; the constant Trilu
  folds) against ONNX Runtime: max abs error <= ``FP32_ATOL`` (measured 3.0e-7 abs, 8.5e-5 rel
  on outputs of magnitude ~4; the float32 sums only reassociate).
* INT8: Toolkit build on rk3588 with 8 calibration samples; cosine to the FP32 output
  >= ``INT8_MIN_COSINE`` (measured 0.9971-0.9972 on two inputs: eight int8 MatMul/Gemm layers,
  two of them activation x activation (scores, context), softmax and LayerNorm in FP16; the floor
  allows about twice the measured loss). The simulator's reference
  and fast paths give the same bits on the un-lowered model (Einsum kept, running in FP16).
* The rk3588 partition: every MatMul/Gemm on the NPU (100% of MACs); the one CPU node is the
  mask's Where, which the rk3588 profile does not list (not this family's op).
* A Trilu on run-time scores (onnx.helper) becomes a Mul by a 0/1 mask on the NPU and still
  matches ORT.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

from conftest import ort_outputs as run_ort

import npuc
from npuc.quantize import cosine_similarity, quantize



torch = pytest.importorskip("torch")

#: Max |npuc FP32 - ORT| on the ViT block output (measured 3.0e-7; outputs are of magnitude ~4).
FP32_ATOL = 2e-6
#: INT8 simulator vs FP32 cosine floor (measured 0.9971; 1 - cosine about doubled).
INT8_MIN_COSINE = 0.995
SEQ, DIM, HEADS, MLP = 50, 64, 4, 128


class VitBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dh = DIM // HEADS
        self.ln1, self.ln2 = torch.nn.LayerNorm(DIM), torch.nn.LayerNorm(DIM)
        self.q, self.k, self.v = (torch.nn.Linear(DIM, DIM) for _ in range(3))
        self.proj = torch.nn.Linear(DIM, DIM)
        self.fc1, self.fc2, self.act = torch.nn.Linear(DIM, MLP), torch.nn.Linear(MLP, DIM), torch.nn.GELU()

    def forward(self, x: "torch.Tensor") -> "torch.Tensor":
        b, t, d = x.shape
        y = self.ln1(x)
        q, k, v = (p(y).reshape(b, t, HEADS, self.dh).transpose(1, 2) for p in (self.q, self.k, self.v))
        att = torch.einsum("bhqd,bhkd->bhqk", q, k) * (self.dh**-0.5)
        mask = torch.triu(torch.ones(t, t, device=x.device), diagonal=1).bool()
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        o = torch.einsum("bhqk,bhkd->bhqd", att, v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(o)
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


@pytest.fixture(scope="module")
def vit_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import onnx

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("vit") / "vit_block.onnx"
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        torch.onnx.export(VitBlock().eval(), torch.randn(1, SEQ, DIM), str(path), opset_version=17,
                          input_names=["x"], output_names=["y"])
    ops = [n.op_type for n in onnx.load(str(path)).graph.node]
    assert ops.count("Einsum") == 2 and ops.count("Trilu") == 1, ops
    return path


def _inputs(n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, SEQ, DIM)).astype(np.float32) for _ in range(n)]


def test_vit_block_fp32_matches_onnxruntime(vit_path: Path) -> None:
    model, _ = npuc.optimize(npuc.Model.load(str(vit_path)))
    hist = model.op_histogram
    assert "Einsum" not in hist and "Trilu" not in hist, hist
    assert hist.get("MatMul", 0) == 2, hist
    rt = npuc.Runtime(model)
    worst_abs = worst_rel = 0.0
    for x in _inputs(3, 1):
        ours = rt.run([x])[0]
        (ref,) = run_ort(vit_path, {"x": x})
        err = np.abs(ours - ref)
        worst_abs = max(worst_abs, float(err.max()))
        worst_rel = max(worst_rel, float((err / np.maximum(np.abs(ref), 1e-3)).max()))
    print(f"ViT block FP32 vs ORT: max abs {worst_abs:.3g}, max rel {worst_rel:.3g}")
    assert worst_abs <= FP32_ATOL


def test_vit_block_int8_cosine_and_rk3588_split(vit_path: Path) -> None:
    calib, tests = _inputs(8, 2), _inputs(2, 3)
    with npuc.Toolkit() as tk, contextlib.redirect_stdout(io.StringIO()):
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(vit_path))
        tk.build(do_quantization=True, dataset=calib)
        report = tk.partition_report
        outs = [tk.inference(inputs=[x])[0] for x in tests]
    cosines = [cosine_similarity(run_ort(vit_path, {"x": x})[0], o) for x, o in zip(tests, outs)]
    cpu = [(n["node"], n["detail"]) for n in report["cpu_nodes"]]
    print(f"ViT block INT8 cosine vs FP32: {', '.join(f'{c:.5f}' for c in cosines)}")
    print(report["text"].splitlines()[0], f"| MACs on NPU {report['npu_mac_share']:.1%}")
    assert min(cosines) >= INT8_MIN_COSINE
    assert report["npu_mac_share"] == 1.0, report["text"]
    assert [n for n, _ in cpu] == ["/Where"], report["text"]


def test_simulator_paths_agree_on_the_einsum_model(vit_path: Path) -> None:
    # lower_einsum disabled: the Einsums stay (FP16 in the INT8 model) and both paths run them.
    model, _ = npuc.optimize(npuc.Model.load(str(vit_path)), disable_passes=["lower_einsum"])
    assert model.op_histogram.get("Einsum") == 2
    calib = [[x] for x in _inputs(4, 4)]
    fast, ref = quantize(model, calib), quantize(model, calib, reference=True)
    for (x,) in calib[:2]:
        np.testing.assert_array_equal(fast.run([x])[0], ref.run([x])[0])


def test_runtime_trilu_becomes_an_npu_mask_mul(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["q", "k"], ["s"]),
         helper.make_node("Trilu", ["s", "kk"], ["y"], upper=0)],
        "tri", [helper.make_tensor_value_info("q", TensorProto.FLOAT, [2, 16, 8]),
                helper.make_tensor_value_info("k", TensorProto.FLOAT, [2, 8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16, 16])],
        [helper.make_tensor("kk", TensorProto.INT64, [], [1])])
    path = tmp_path / "tri.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    model, _ = npuc.optimize(npuc.Model.load(str(path)))
    assert "Trilu" not in model.op_histogram and model.op_histogram.get("Mul") == 1
    assert npuc._npuc.partition(model, "rk3588", {})["cpu_nodes"] == []
    rng = np.random.default_rng(5)
    feeds = {"q": rng.standard_normal((2, 16, 8)).astype(np.float32),
             "k": rng.standard_normal((2, 8, 16)).astype(np.float32)}
    ours = npuc.Runtime(model).run([feeds["q"], feeds["k"]])[0]
    ref = run_ort(path, feeds)[0]
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)
