"""The Darknet frontend (issue #16) against darknet itself.

Random ``.weights`` files are written in darknet's format for cfgs of Debian's ``darknet`` package
(and a small cfg using every supported layer kind), loaded by npuc and by Debian's libdarknet
(through the ``darknet_ref_shim.c`` C shim), run on the same image, and compared: npuc's FP32
outputs (the raw tensors entering [yolo]/[region]/[detection] layers, and the last layer) must
match darknet's to 1e-4 relative to the output's largest magnitude. Activations and keys this
darknet (2018) lacks (mish, swish, route groups) are checked against numpy instead. Malformed
files must be refused naming the file, the line and the layer, or the floats expected and found.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List

import numpy as np
import pytest

import npuc
from darknet_ref import (DARKNET_CFG_DIR, DarknetLib, darknet_available, reference_layers, with_input_size,
                         write_random_weights)
from npuc.quantize import cosine_similarity

#: FP32 vs darknet, relative to the largest |output|: both sum the same products in float32, in
#: different orders (darknet's gemm vs oneDNN), and batch norm is folded into the weights here.
MAX_REL_ERROR = 1e-4


@pytest.fixture(scope="module")
def darknet(tmp_path_factory: pytest.TempPathFactory) -> DarknetLib:
    if not darknet_available():
        if os.environ.get("NPUC_STRICT_DEPS"):
            raise AssertionError("Debian's darknet package is missing (tools/install_deps.sh test installs it)")
        pytest.skip("Debian's darknet package (libdarknet, cfgs) is not installed")
    return DarknetLib(tmp_path_factory.mktemp("darknet_shim"))


def _write(folder: Path, name: str, text: str, seed: int = 1) -> tuple:
    cfg, weights = folder / f"{name}.cfg", folder / f"{name}.weights"
    cfg.write_text(text)
    write_random_weights(text, weights, seed=seed)
    return cfg, weights


def _image(model: npuc.Model, seed: int = 0) -> np.ndarray:
    c, h, w = model.inputs[0]["shape"][1:]
    return np.random.default_rng(seed).uniform(0, 1, (c, h, w)).astype(np.float32)


def _compare(darknet: DarknetLib, cfg: Path, weights: Path) -> List[float]:
    model = npuc.Model.load_darknet(str(cfg), str(weights))
    image = _image(model)
    got = npuc.Runtime(model).run([image[np.newaxis]])
    want = darknet.run(cfg, weights, image, reference_layers(cfg.read_text()))
    assert len(got) == len(want)
    errors = []
    for g, w, info in zip(got, want, model.outputs):
        assert g.size == w.size, info
        rel = float(np.abs(g.reshape(-1) - w).max() / np.abs(w).max())
        assert rel <= MAX_REL_ERROR, (info["name"], rel)
        errors.append(rel)
    return errors


# (cfg of /usr/share/darknet/cfg, input size, expected ops): small sizes keep darknet's naive gemm fast.
DEBIAN_CFGS = [
    ("yolov3-tiny", 416, {"Conv": 13, "LeakyRelu": 11, "MaxPool": 6, "Concat": 1, "Resize": 1}),
    ("yolov2-tiny", 224, {"Conv": 9, "LeakyRelu": 8, "MaxPool": 6}),
    ("darknet19", 224, {"Conv": 19, "LeakyRelu": 18, "MaxPool": 5, "GlobalAveragePool": 1, "Softmax": 1}),
    ("resnet18", 128, {"Conv": 18, "LeakyRelu": 17, "MaxPool": 1, "Add": 8, "Slice": 3, "Pad": 3,
                       "GlobalAveragePool": 1, "Softmax": 1}),
]


@pytest.mark.parametrize("name,size,ops", DEBIAN_CFGS, ids=[c[0] for c in DEBIAN_CFGS])
def test_debian_cfgs_match_darknet(darknet: DarknetLib, tmp_path: Path, name: str, size: int, ops: dict) -> None:
    text = with_input_size((DARKNET_CFG_DIR / f"{name}.cfg").read_text(), size, size)
    cfg, weights = _write(tmp_path, name, text)
    assert npuc.Model.load_darknet(str(cfg), str(weights)).op_histogram == ops
    _compare(darknet, cfg, weights)


# Every layer kind npuc builds that this darknet has, in one small network: BN and plain convs,
# grouped conv, darknet's maxpool padding (odd and size=2 stride=1), reorg, upsample, route,
# shortcuts between layers of different sizes and channel counts, connected with BN, dropout,
# grouped softmax, and the activations relu/logistic/tanh/elu/leaky.
ZOO_CFG = """[net]
width=24
height=24
channels=3

[convolutional]
batch_normalize=1
filters=8
size=3
stride=1
pad=1
activation=leaky

[maxpool]
size=3
stride=2

[convolutional]
filters=16
size=3
stride=1
pad=1
groups=2
activation=relu

[reorg]
stride=2

[convolutional]
batch_normalize=1
filters=16
size=1
stride=1
pad=1
activation=logistic

[upsample]
stride=2

[route]
layers=-1,2

[convolutional]
filters=32
size=3
stride=2
activation=tanh

[shortcut]
from=-2
activation=leaky

[convolutional]
batch_normalize=1
filters=8
size=1
activation=elu

[shortcut]
from=-3

[maxpool]
size=2
stride=1

[connected]
output=20
batch_normalize=1
activation=linear

[dropout]
probability=.5

[softmax]
groups=2
"""


def test_every_layer_kind_matches_darknet(darknet: DarknetLib, tmp_path: Path) -> None:
    cfg, weights = _write(tmp_path, "zoo", ZOO_CFG)
    model = npuc.Model.load_darknet(str(cfg), str(weights))
    assert {"Transpose", "Resize", "Concat", "Slice", "Add", "Gemm", "Softmax", "Elu", "Tanh"} <= set(model.op_histogram)
    _compare(darknet, cfg, weights)


def test_old_header_and_transposed_connected_weights(darknet: DarknetLib, tmp_path: Path) -> None:
    """Format 0.1 (a 4-byte `seen`) and major > 1000 (connected weights stored transposed) read as
    darknet reads them."""
    for header in ((0, 1, 0), (1001, 0, 0)):
        cfg, weights = tmp_path / "zoo.cfg", tmp_path / "zoo.weights"
        cfg.write_text(ZOO_CFG)
        write_random_weights(ZOO_CFG, weights, seed=3, header=header)
        _compare(darknet, cfg, weights)


def test_activations_and_route_groups_this_darknet_lacks(tmp_path: Path) -> None:
    """mish, swish and route groups/group_id (newer darknet) against numpy."""
    text = ("[net]\nwidth=5\nheight=4\nchannels=4\n\n"
            "[convolutional]\nfilters=4\nsize=1\nactivation=mish\n\n"
            "[convolutional]\nfilters=4\nsize=1\nactivation=swish\n\n"
            "[route]\nlayers=-1,-2\ngroups=2\ngroup_id=1\n")
    cfg, weights = _write(tmp_path, "newer", text)
    data = np.fromfile(weights, "<f4", offset=20)
    b0, w0, b1, w1 = data[:4], data[4:20].reshape(4, 4), data[20:24], data[24:40].reshape(4, 4)
    x = np.random.default_rng(0).standard_normal((4, 4, 5)).astype(np.float32)
    y0 = np.einsum("oc,chw->ohw", w0, x) + b0[:, None, None]
    y0 = y0 * np.tanh(np.log1p(np.exp(y0)))
    y1 = np.einsum("oc,chw->ohw", w1, y0) + b1[:, None, None]
    y1 = y1 / (1 + np.exp(-y1))
    want = np.concatenate([y1[2:], y0[2:]])[np.newaxis]
    (got,) = npuc.Runtime(npuc.Model.load_darknet(str(cfg), str(weights))).run([x[np.newaxis]])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_int8_build_of_yolov3_tiny_stays_close_to_fp32(tmp_path: Path) -> None:
    text = (DARKNET_CFG_DIR / "yolov3-tiny.cfg").read_text() if DARKNET_CFG_DIR.is_dir() else None
    if text is None:
        pytest.skip("Debian's darknet cfgs are not installed")
    cfg, weights = _write(tmp_path, "yolov3-tiny", text)
    rng = np.random.default_rng(0)

    def photo() -> np.ndarray:  # smooth gradients plus noise, 0..1, NCHW as the model takes it
        y, x = np.mgrid[0:416, 0:416] / 416
        img = np.stack([rng.uniform(0, 1) * x + rng.uniform(0, 1) * y for _ in range(3)])
        return np.clip(img + rng.normal(0, 0.04, img.shape), 0, 1).astype(np.float32)[np.newaxis]

    calibration, image = [photo() for _ in range(4)], photo()
    want = npuc.Runtime(npuc.Model.load_darknet(str(cfg), str(weights))).run([image])
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        assert tk.load_darknet(model=str(cfg), weight=str(weights)) == 0
        tk.build(do_quantization=True, dataset=calibration)
        assert tk.partition_report["cpu_nodes"] == []  # every op of yolov3-tiny runs on the rk3588 NPU
        tk.init_runtime()
        got = tk.inference(inputs=[image], data_format="nchw")
    cosines = [cosine_similarity(g, w) for g, w in zip(got, want)]
    assert min(cosines) >= 0.99, cosines


# ---- refusals: each names the file and where in it


def test_a_short_or_long_weights_file_names_the_floats_expected_and_found(tmp_path: Path) -> None:
    cfg, weights = _write(tmp_path, "zoo", ZOO_CFG)
    good = weights.read_bytes()
    expected = (len(good) - 20) // 4
    weights.write_bytes(good[:-8])
    with pytest.raises(npuc.ModelLoadError, match=rf"zoo.weights: expected {expected} floats .* found {expected - 2} "
                                                   r"\(the file is 8 bytes short; .*zoo.cfg:\d+: layer 12 \[connected\]"):
        npuc.Model.load_darknet(str(cfg), str(weights))
    weights.write_bytes(good + b"\0" * 12)
    with pytest.raises(npuc.ModelLoadError, match=rf"expected {expected} floats .* found {expected + 3} \(12 bytes too many"):
        npuc.Model.load_darknet(str(cfg), str(weights))
    weights.write_bytes(good[:-2])
    with pytest.raises(npuc.ModelLoadError, match="not a whole number of float32"):
        npuc.Model.load_darknet(str(cfg), str(weights))


@pytest.mark.parametrize("edit,error,words", [
    (("[dropout]", "[fancy_layer]"), npuc.ModelLoadError, r"zoo.cfg:\d+: layer 13 \[fancy_layer\]: unknown layer type"),
    (("[dropout]", "[local]"), npuc.UnsupportedOpError, r"layer 13 \[local\]: darknet layer type \[local\] is not supported"),
    (("activation=tanh", "activation=tanhh"), npuc.ModelLoadError, r"layer 7 \[convolutional\]: unknown activation 'tanhh'"),
    (("activation=tanh", "activation=selu"), npuc.UnsupportedOpError, "activation 'selu' is not supported"),
    (("filters=32", "filters=32\ndilation=2"), npuc.ModelLoadError, r"layer 7 \[convolutional\]: unknown key 'dilation'"),
    (("filters=32", "filters=3x2"), npuc.ModelLoadError, r"filters='3x2' is not an integer"),
    (("filters=32", "filters=32\nfilters=16"), npuc.ModelLoadError, r"key 'filters' of layer 7 \[convolutional\] is repeated"),
    (("layers=-1,2", "layers=-1,12"), npuc.ModelLoadError, r"layer 6 \[route\]: layers refers to layer 12"),
    (("groups=2", "groups=3"), npuc.ModelLoadError, "groups=3 must divide"),
    (("width=24", "width=0"), npuc.ModelLoadError, r"\[net\]: the input"),
    (("stride=2\n\n[route]", "stride=-2\n\n[route]"), npuc.UnsupportedOpError, "negative upsample stride"),
])
def test_a_bad_cfg_is_refused_naming_file_line_and_layer(tmp_path: Path, edit: tuple, error: type, words: str) -> None:
    _, weights = _write(tmp_path, "good", ZOO_CFG)
    cfg = tmp_path / "zoo.cfg"
    assert edit[0] in ZOO_CFG
    cfg.write_text(ZOO_CFG.replace(edit[0], edit[1], 1))
    with pytest.raises(error, match=words):
        npuc.Model.load_darknet(str(cfg), str(weights))


def test_missing_files_and_cfg_syntax(tmp_path: Path) -> None:
    cfg, weights = _write(tmp_path, "zoo", ZOO_CFG)
    with pytest.raises(npuc.ModelLoadError, match="nope.weights: cannot open"):
        npuc.Model.load_darknet(str(cfg), str(tmp_path / "nope.weights"))
    bad = tmp_path / "bad.cfg"
    bad.write_text("width=3\n[net]\n")
    with pytest.raises(npuc.ModelLoadError, match=r"bad.cfg:1: key 'width' appears before the first \[section\]"):
        npuc.Model.load_darknet(str(bad), str(weights))
    bad.write_text("[net]\nwidth=3\njunk line\n")
    with pytest.raises(npuc.ModelLoadError, match=r"bad.cfg:3: expected 'key=value'"):
        npuc.Model.load_darknet(str(bad), str(weights))


def test_toolkit_and_rknn_face(tmp_path: Path) -> None:
    from npuc.rknn.api import RKNN
    from npuc.rknn_only import FRONTENDS_PENDING

    assert "load_darknet" not in FRONTENDS_PENDING
    cfg, weights = _write(tmp_path, "zoo", ZOO_CFG)
    rknn = RKNN()
    assert rknn.load_darknet(model=str(cfg), weight=str(tmp_path / "missing.weights")) == -1
    assert rknn.load_darknet(model=str(cfg), weight=str(weights)) == 0
    assert rknn.build(do_quantization=False) == 0
    rknn.release()


def test_cli_reads_a_cfg_with_its_weights_beside_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from npuc.cli import main

    cfg, weights = _write(tmp_path, "zoo", ZOO_CFG)
    assert main(["info", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "data: float32[1,3,24,24]" in out and "layer14_softmax: float32[1,20,1,1]" in out
    assert main(["perf", str(cfg)]) == 0
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 24, 24), np.float32))
    assert main(["run", str(cfg), "--input", str(tmp_path / "x.npy")]) == 0
    assert "layer14_softmax" in capsys.readouterr().out
    weights.unlink()
    assert main(["info", str(cfg)]) != 0
    assert "zoo.weights' (same name, beside the .cfg) do not exist" in capsys.readouterr().err
