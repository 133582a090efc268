"""Toolkit.load_pytorch: an nn.Module and a TorchScript .pt, through torch.onnx, match torch's outputs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import npuc
from conftest import rel_error

torch = pytest.importorskip("torch")


class SmallNet(torch.nn.Module):
    """Conv + BN + ReLU + pool + linear: the shapes of a tiny classifier, with a BN to fold."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)
        with torch.no_grad():  # non-trivial BN statistics, so folding it is really exercised
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
        self.eval()

    def forward(self, x: "torch.Tensor") -> "torch.Tensor":
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean(dim=(2, 3)))


class TwoInputs(torch.nn.Module):
    def forward(self, a: "torch.Tensor", b: "torch.Tensor") -> "torch.Tensor":
        return torch.sigmoid(a) * b + a


def reference(module: "torch.nn.Module", *xs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return module(*[torch.from_numpy(x) for x in xs]).numpy()


def image() -> np.ndarray:
    return np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)


def test_module_matches_torch() -> None:
    net, x = SmallNet(), image()
    with npuc.Toolkit() as tk:
        assert tk.load_pytorch(net, input_size_list=[[1, 3, 16, 16]]) == 0
        assert [d["name"] for d in tk.model.inputs] == ["input0"]
        assert list(tk.model.inputs[0]["shape"]) == [1, 3, 16, 16]
        got = tk.inference(inputs=[x])[0]
    assert got.shape == (1, 5)
    assert rel_error(got, reference(net, x)) < 1e-4


def test_traced_pt_file_matches_torch_and_builds(tmp_path: Path) -> None:
    net, x = SmallNet(), image()
    path = tmp_path / "net.pt"
    torch.jit.trace(net, torch.from_numpy(x)).save(str(path))
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        assert tk.load_pytorch(str(path), [[1, 3, 16, 16]], inputs=["image"], outputs=["logits"]) == 0
        assert [d["name"] for d in tk.model.inputs] == ["image"]
        assert [d["name"] for d in tk.model.outputs] == ["logits"]
        float_out = tk.inference(inputs=[x])[0]
        tk.build(do_quantization=False)  # the optimizer and the fp16 simulator take the export too
        fp16_out = tk.inference(inputs=[x])[0]
    want = reference(net, x)
    assert rel_error(float_out, want) < 1e-4
    assert rel_error(fp16_out, want) < 2e-2


def test_two_inputs_in_order() -> None:
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal((2, 6)).astype(np.float32) for _ in range(2))
    with npuc.Toolkit() as tk:
        tk.load_pytorch(TwoInputs(), [[2, 6], [2, 6]], inputs=["a", "b"])
        got = tk.inference(inputs=[a, b])[0]
    assert rel_error(got, reference(TwoInputs(), a, b)) < 1e-5


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    tk = npuc.Toolkit()
    with pytest.raises(npuc.ModelLoadError, match="absent.pt"):
        tk.load_pytorch(str(tmp_path / "absent.pt"), [[1, 3, 16, 16]])
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a zip archive" * 10)
    with pytest.raises(npuc.ModelLoadError, match="TorchScript"):
        tk.load_pytorch(str(junk), [[1, 3, 16, 16]])
    with pytest.raises(npuc.ConfigError, match="input_size_list"):
        tk.load_pytorch(SmallNet(), [])
    with pytest.raises(npuc.ConfigError, match="positive"):
        tk.load_pytorch(SmallNet(), [[1, 3, 0, 16]])
    with pytest.raises(npuc.ConfigError, match="2 name"):
        tk.load_pytorch(SmallNet(), [[1, 3, 16, 16]], inputs=["a", "b"])
    with pytest.raises(npuc.ConfigError, match="nn.Module"):
        tk.load_pytorch(42, [[1, 3, 16, 16]])
    with pytest.raises(npuc.ModelLoadError, match="torch.onnx.export failed"):
        tk.load_pytorch(SmallNet(), [[1, 4, 16, 16]])  # 4 channels into a 3-channel conv


def test_missing_torch_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    with pytest.raises(npuc.ConfigError, match="python3-torch"):
        npuc.Toolkit().load_pytorch("model.pt", [[1, 3, 16, 16]])
