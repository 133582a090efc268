"""The Caffe frontend (load_caffe) against PyTorch on the same weights.

No Caffe runtime is packaged: caffe_nets.py writes each net's prototxt and caffemodel and computes
it in PyTorch (pooling with Caffe's own rules). Figures printed with -s: ops, CPU fallbacks on
rk3588, max abs error of npuc FP32 vs the reference, INT8 cosine vs FP32.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import npuc
from caffe_nets import CaffeNet, caffe_pb2, deconv_reshape_net, mobilenet_like
from npuc.errors import ModelLoadError
from npuc.quantize import cosine_similarity

MAX_ABS_ERR = 1e-4
MIN_INT8_COSINE = 0.99


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("caffe_pb2")


def _fp32(proto: Path, model: Path, feeds: dict) -> list:
    m = npuc.Model.load_caffe(str(proto), str(model))
    return m, npuc.Runtime(m).run([feeds[i["name"]] for i in m.inputs])


def _compare(net: CaffeNet, tmp_path: Path, scratch: Path, seed: int = 0):
    proto, model = net.write(tmp_path, net.name, scratch)
    rng = np.random.default_rng(seed)
    feeds = {k: rng.standard_normal(v).astype(np.float32) for k, v in net.inputs.items()}
    want = net.reference(feeds)
    m, got = _fp32(proto, model, feeds)
    assert [o["name"] for o in m.outputs] == list(want), (m.outputs, list(want))
    err = 0.0
    for g, (name, w) in zip(got, want.items()):
        assert g.shape == w.shape, (name, g.shape, w.shape)
        err = max(err, float(np.max(np.abs(g - w))))
    return m, proto, model, feeds, err


@pytest.mark.parametrize("form", ["layer", "input_shape", "input_dim"])
def test_mobilenet_like_matches_pytorch(form: str, tmp_path: Path, scratch: Path) -> None:
    m, *_, err = _compare(mobilenet_like(input_form=form), tmp_path, scratch)
    ops = [n["op_type"] for n in m.nodes]
    print(f"\nmobilenet_like ({form}): {len(ops)} ops, max abs err vs PyTorch {err:.2e}")
    assert err < MAX_ABS_ERR
    # Each BatchNorm + Scale pair became one op; the Muls are the lone Scale, PROD and coeff 0.5.
    assert ops.count("BatchNormalization") == 4 and ops.count("Mul") == 3
    assert "Dropout" not in ops and "Identity" not in ops


def test_deconv_permute_reshape_flatten_match_pytorch(tmp_path: Path, scratch: Path) -> None:
    m, *_, err = _compare(deconv_reshape_net(), tmp_path, scratch)
    print(f"\ndeconv_reshape: {m.num_nodes} ops, max abs err vs PyTorch {err:.2e}")
    assert err < MAX_ABS_ERR
    assert {"ConvTranspose", "Transpose", "Reshape"} <= {n["op_type"] for n in m.nodes}


def _dataset(folder: Path, shape, n: int = 4) -> Path:
    rng = np.random.default_rng(7)
    names = []
    for i in range(n):
        np.save(folder / f"calib_{i}.npy", rng.standard_normal(shape).astype(np.float32))
        names.append(f"calib_{i}.npy")
    (folder / "dataset.txt").write_text("\n".join(names) + "\n")
    return folder / "dataset.txt"


@pytest.mark.parametrize("make", [mobilenet_like, deconv_reshape_net], ids=["mobilenet_like", "deconv_reshape"])
def test_int8_build_on_rk3588(make, tmp_path: Path, scratch: Path) -> None:
    net = make()
    proto, model = net.write(tmp_path, net.name, scratch)
    shape = next(iter(net.inputs.values()))
    dataset = _dataset(tmp_path, shape)
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    _, fp32 = _fp32(proto, model, {next(iter(net.inputs)): x})
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        assert tk.load_caffe(model=str(proto), blobs=str(model)) == 0
        assert tk.build(do_quantization=True, dataset=str(dataset)) == 0
        cpu = [n["node"] for n in tk.partition_report["cpu_nodes"]]
        tk.init_runtime()
        int8 = tk.inference(inputs=[x], data_format=["nchw"])
    cos = min(cosine_similarity(a, b) for a, b in zip(int8, fp32))
    print(f"\n{net.name}: rk3588 CPU fallbacks {len(cpu)} {cpu}, INT8 cosine vs FP32 {cos:.5f}")
    assert cos >= MIN_INT8_COSINE


# ---- errors name the file and the layer

def _one_conv(blob_shape=(4, 3, 3, 3), layer_type="Convolution", weights_name="conv") -> CaffeNet:
    n = CaffeNet("err", {"data": [1, 3, 8, 8]})
    n.conv("conv", "data", "conv", 4, 3)
    n.blobs = [(weights_name, layer_type, [np.zeros(blob_shape, np.float32), np.zeros(4, np.float32)])]
    return n


def test_unknown_layer_type_names_file_and_layer(tmp_path: Path, scratch: Path) -> None:
    n = _one_conv()
    n.text.append('layer { name: "odd" type: "Frobnicate" bottom: "conv" top: "odd" }\n')
    proto, model = n.write(tmp_path, "net", scratch)
    with pytest.raises(ModelLoadError, match=r"net\.prototxt: layer 'odd' \(Frobnicate\): layer type 'Frobnicate'"):
        npuc.Model.load_caffe(str(proto), str(model))


def test_missing_and_misshapen_blobs_name_both_files(tmp_path: Path, scratch: Path) -> None:
    proto, model = _one_conv(weights_name="other").write(tmp_path, "missing", scratch)
    with pytest.raises(ModelLoadError, match=r"missing\.prototxt: layer 'conv' \(Convolution\): has no blobs in .*missing\.caffemodel"):
        npuc.Model.load_caffe(str(proto), str(model))
    proto, model = _one_conv(blob_shape=(4, 3, 5, 5)).write(tmp_path, "shape", scratch)
    with pytest.raises(ModelLoadError, match=r"layer 'conv' \(Convolution\): blob 0 in .*shape\.caffemodel has shape "
                                             r"\[4, 3, 5, 5\], expected \[4, 3, 3, 3\]"):
        npuc.Model.load_caffe(str(proto), str(model))


def test_toolkit_load_caffe_arguments(tmp_path: Path, scratch: Path) -> None:
    proto, model = mobilenet_like(hw=32).write(tmp_path, "m", scratch)
    with npuc.Toolkit() as tk:
        assert tk.load_caffe(str(proto), str(model), input_name="data") == 0
        with pytest.raises(ModelLoadError, match=r"input_name 'image' is not an input of the net \(its inputs: 'data'\)"):
            tk.load_caffe(str(proto), str(model), input_name="image")
        with pytest.raises(ModelLoadError, match="conv1.*no caffemodel was given"):
            tk.load_caffe(str(proto))
        with pytest.raises(ModelLoadError, match="no such file"):
            tk.load_caffe(str(proto), str(tmp_path / "absent.caffemodel"))
        with pytest.raises(ModelLoadError, match="not a valid caffemodel"):
            tk.load_caffe(str(proto), str(proto))


def test_cli_info_convert_perf_take_a_prototxt_and_blobs(tmp_path: Path, scratch: Path) -> None:
    import subprocess
    import sys

    proto, model = mobilenet_like(hw=32).write(tmp_path, "m", scratch)
    env = dict(__import__("os").environ, PYTHONPATH=str(Path(npuc.__file__).parent.parent))

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "npuc", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)

    info = cli("info", "m.prototxt", "--blobs", "m.caffemodel")
    assert info.returncode == 0 and "prob: float32[1,10]" in info.stdout and "nodes: 30" in info.stdout, info.stderr
    conv = cli("convert", "m.prototxt", "--blobs", "m.caffemodel", "-t", "rk3588", "-o", "m.npub")
    assert conv.returncode == 0 and "0 CPU ops" in conv.stdout, conv.stdout + conv.stderr
    assert (tmp_path / "m.npub").stat().st_size > 0
    assert cli("perf", "m.prototxt", "--blobs", "m.caffemodel").returncode == 0
    bad = cli("info", "m.prototxt")
    assert bad.returncode == 1 and "layer 'conv1' (Convolution): needs trained weights" in bad.stderr


def test_batchnorm_read_by_another_layer_is_not_folded_with_its_scale(tmp_path: Path, scratch: Path) -> None:
    """BatchNorm -> "bn" read by Scale and by a ReLU: folding gamma/beta into the BatchNorm would
    change what the ReLU sees, so the Scale stays a Mul + Add."""
    n = CaffeNet("bn_shared", {"data": [1, 4, 6, 6]}, seed=5)
    n.conv("conv", "data", "conv", 4, 3, p=1)
    mean, var = np.full(4, 0.2, np.float32), np.full(4, 2.0, np.float32)
    gamma, beta = np.array([2, -1, 0.5, 3], np.float32), np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    import torch
    import torch.nn.functional as F

    n._layer("bn", "BatchNorm", ["conv"], ["bn"], "", [mean, var, np.ones(1, np.float32)],
             lambda x: F.batch_norm(x, torch.from_numpy(mean), torch.from_numpy(var), None, None, False, 0.0, 1e-5))
    n._layer("sc", "Scale", ["bn"], ["sc"], "scale_param { bias_term: true }", [gamma, beta],
             lambda x: x * torch.from_numpy(gamma).reshape(1, 4, 1, 1) + torch.from_numpy(beta).reshape(1, 4, 1, 1))
    n.act("relu", "ReLU", "bn", "r")
    n.eltwise("sum", ["sc", "r"], "sum")
    m, *_, err = _compare(n, tmp_path, scratch)
    assert err < MAX_ABS_ERR
    assert [x["op_type"] for x in m.nodes].count("Mul") == 1


def test_legacy_v1_caffemodel_with_4d_blobs(tmp_path: Path, scratch: Path) -> None:
    """Old caffemodels: layers in the V1 `layers` field, every blob padded to num/channels/height/width."""
    n = CaffeNet("legacy", {"data": [2, 6]}, seed=6, input_form="input_dim")
    n.inputs = {"data": [2, 6, 1, 1]}
    n.shapes["data"] = (2, 6, 1, 1)
    n.inner_product("ip", "data", "ip", 3)
    proto, _ = n.write(tmp_path, "legacy", scratch)
    pb2 = caffe_pb2(scratch)
    net = pb2.NetParameter()
    for name, _type, blobs in n.blobs:
        layer = net.layers.add()
        layer.name, layer.type = name, 14  # V1 enum INNER_PRODUCT
        for b, shape4 in zip(blobs, [(1, 1, 3, 6), (1, 1, 1, 3)]):
            bp = layer.blobs.add()
            bp.num, bp.channels, bp.height, bp.width = shape4
            bp.data.extend(b.ravel().tolist())
    model = tmp_path / "legacy_v1.caffemodel"
    model.write_bytes(net.SerializeToString())
    x = np.random.default_rng(0).standard_normal((2, 6, 1, 1)).astype(np.float32)
    _, got = _fp32(proto, model, {"data": x})
    np.testing.assert_allclose(got[0], n.reference({"data": x})["ip"], atol=1e-5)


def test_eltwise_coefficients_scale_by_a_bottom_and_a_lone_batchnorm(tmp_path: Path, scratch: Path) -> None:
    import torch
    import torch.nn.functional as F

    n = CaffeNet("variants", {"data": [1, 3, 5, 5], "gate": [1, 3]}, seed=8)
    a = n.conv("a", "data", "a", 3, 1)
    b = n.conv("b", "data", "b", 3, 3, p=1)
    n.eltwise("s", ["data", a, b], "s", "SUM", coeff=[-1.0, 1.0, 2.0])  # Neg, Add, Mul + Add
    n.eltwise("d", [a, b], "d", "SUM", coeff=[1.0, -1.0])               # Sub
    mean, var = np.array([0.1, -0.2, 0.3], np.float32), np.array([1.5, 0.5, 2.0], np.float32)
    n._layer("bn", "BatchNorm", ["d"], ["d"], "batch_norm_param { eps: 0.001 }",
             [mean * 4, var * 4, np.array([4.0], np.float32)],
             lambda x: F.batch_norm(x, torch.from_numpy(mean), torch.from_numpy(var), None, None, False, 0.0, 1e-3))
    n._layer("gs", "Scale", ["s", "gate"], ["gs"], "scale_param { axis: 0 }",  # gate [1, 3] covers dims 0-1
             [], lambda x, g: x * g.reshape(1, 3, 1, 1))
    n.eltwise("out", ["gs", "d"], "out", "MAX")
    m, *_, err = _compare(n, tmp_path, scratch)
    assert err < MAX_ABS_ERR
    ops = [x["op_type"] for x in m.nodes]
    assert {"Neg", "Sub", "BatchNormalization", "Max"} <= set(ops)
