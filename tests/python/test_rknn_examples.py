"""RKNN-Toolkit2's example scripts as their users run them on npuc (issue #23 acceptance suite).

Each script of ``tests/rknn_examples/`` (see its README: the examples' call sequences, with only the
import and the model paths changed) runs in its own scratch folder holding the files the original
example ships: stand-in models (the shared mobilenet_v2 with real ImageNet-shaped I/O where a
classifier is expected, small ONNX models with the original's inputs and outputs otherwise),
generated photos, ``dataset.txt`` and ``labels.txt``. Each script's ending is checked:

* ``RUNS``: exit 0, no ``E <call>:`` line, the files it writes exist, and where it saves its
  output the output matches npuc's FP32 runtime on the same image preprocessed by hand (so the
  mean/std and the NHWC handling are right, not just the return codes);
* ``PENDING``: the call npuc does not have yet returns -1 (exit status 255 after the script's
  ``exit(ret)``), with one ``E <call>: ... not supported yet`` line and the script's own message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc
from conftest import REPO_ROOT, shared_models_dir
from npuc.quantize import cosine_similarity

SCRIPTS = REPO_ROOT / "tests" / "rknn_examples"
PACKAGE_PARENT = str(Path(os.path.abspath(npuc.__file__)).parent.parent)
#: INT8 output vs FP32 on the same image: random-weight mobilenet_v2 keeps about 0.97 (see
#: docs/quantization.md); a wrong mean/std or layout gives far less.
MIN_INT8_COSINE = 0.95


def _require_cv2() -> None:
    try:
        import cv2  # noqa: F401
    except ImportError:
        if os.environ.get("NPUC_STRICT_DEPS"):
            raise
        pytest.skip("python3-opencv is not installed (tools/install_deps.sh test): the scripts import cv2")


def _photo(path: Path, width: int, height: int, seed: int) -> Path:
    """A smooth, photo-like RGB image (gradients and blobs), saved as JPEG/PNG by extension."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width] / max(width, height)
    channels = []
    for _ in range(3):
        c = rng.uniform(0, 255) * x + rng.uniform(0, 255) * y
        for _ in range(4):
            cx, cy, r = rng.uniform(0, 1), rng.uniform(0, 1), rng.uniform(0.05, 0.3)
            c += rng.uniform(-120, 120) * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / r**2)
        channels.append(c)
    pixels = np.clip(np.stack(channels, -1), 0, 255).astype(np.uint8)
    Image.fromarray(pixels, "RGB").save(path)
    return path


def _tiny_cnn(path: Path, hw: int, heads: Dict[str, List[int]], sigmoid: bool = False) -> Path:
    """x[1,3,hw,hw] -> strided Conv+Relu stem -> one Conv (+Sigmoid) per head, each head's output
    shaped as listed ([1, C, H, W] at H = hw / stride, or [1, N] after a global pool)."""
    rng = np.random.default_rng(len(heads))
    inits, nodes = [], []

    def conv(name: str, src: str, cin: int, cout: int, k: int, stride: int) -> str:
        inits.append(numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k))
                                             .astype(np.float32), f"{name}_w"))
        inits.append(numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32) * 0.1, f"{name}_b"))
        nodes.append(helper.make_node("Conv", [src, f"{name}_w", f"{name}_b"], [name], kernel_shape=[k, k],
                                      strides=[stride, stride], pads=[k // 2] * 4))
        return name

    nodes_src = conv("stem", "x", 3, 16, 3, 2)
    nodes.append(helper.make_node("Relu", [nodes_src], ["stem_relu"]))
    feature, size, outputs = "stem_relu", hw // 2, []
    for i, (name, shape) in enumerate(heads.items()):
        if len(shape) == 4:
            while size > shape[2]:
                feature = conv(f"down{i}_{size}", feature, 16, 16, 3, 2)
                size //= 2
            raw = conv(f"head{i}", feature, 16, shape[1], 1, 1)
        else:
            nodes.append(helper.make_node("GlobalAveragePool", [feature], [f"gap{i}"]))
            nodes.append(helper.make_node("Flatten", [f"gap{i}"], [f"flat{i}"]))
            inits.append(numpy_helper.from_array(rng.standard_normal((16, shape[1])).astype(np.float32), f"fc{i}_w"))
            nodes.append(helper.make_node("MatMul", [f"flat{i}", f"fc{i}_w"], [f"head{i}"]))
            raw = f"head{i}"
        nodes.append(helper.make_node("Sigmoid" if sigmoid else "Identity", [raw], [name]))
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
    graph = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, hw, hw])],
                              outputs, initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def _tiny_yolox(path: Path) -> Path:
    """YOLOX's shape: images[1,3,640,640] -> Conv+SiLU (x * Sigmoid(x)) stem and stride-2 stages ->
    per stride 8/16/32 a head [1, 85, h, w] = Concat(box 4, Sigmoid(objectness) 1, Sigmoid(classes) 80):
    many Sigmoids, both inside activations and on the outputs, as the real export has."""
    rng = np.random.default_rng(11)
    inits, nodes = [], []

    def conv_silu(name: str, src: str, cin: int, cout: int, stride: int, silu: bool = True) -> str:
        k = 3 if stride == 2 else 1
        inits.append(numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k))
                                             .astype(np.float32), f"{name}_w"))
        inits.append(numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32) * 0.1, f"{name}_b"))
        nodes.append(helper.make_node("Conv", [src, f"{name}_w", f"{name}_b"], [f"{name}_c" if silu else name],
                                      kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4))
        if silu:
            nodes.append(helper.make_node("Sigmoid", [f"{name}_c"], [f"{name}_s"]))
            nodes.append(helper.make_node("Mul", [f"{name}_c", f"{name}_s"], [name]))
        return name

    x, current = conv_silu("stem", "images", 3, 16, 2), 320
    outputs = []
    for level, size in enumerate((80, 40, 20)):
        while current > size:
            current //= 2
            x = conv_silu(f"down_{current}", x, 16, 16, 2)
        feature = conv_silu(f"stem{level}", x, 16, 16, 1)
        box = conv_silu(f"box{level}", feature, 16, 4, 1, silu=False)
        obj = conv_silu(f"obj{level}", feature, 16, 1, 1, silu=False)
        cls = conv_silu(f"cls{level}", feature, 16, 80, 1, silu=False)
        nodes.append(helper.make_node("Sigmoid", [obj], [f"obj{level}_p"]))
        nodes.append(helper.make_node("Sigmoid", [cls], [f"cls{level}_p"]))
        nodes.append(helper.make_node("Concat", [box, f"obj{level}_p", f"cls{level}_p"], [f"output{level}"], axis=1))
        outputs.append(helper.make_tensor_value_info(f"output{level}", TensorProto.FLOAT, [1, 85, size, size]))
    graph = helper.make_graph(nodes, "yolox_s", [helper.make_tensor_value_info("images", TensorProto.FLOAT,
                                                                               [1, 3, 640, 640])],
                              outputs, initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def _dual_residual(folder: Path) -> None:
    """The custom-op example's model as its file has it: one rknn_cst.cstDualResidual node (alpha 0.5)
    on inputs '0', '1' [1,3,10,10], outputs '2', '3' of unnamed dims, and saved NCHW inputs/outputs."""
    node = helper.make_node("cstDualResidual", ["0", "1"], ["2", "3"], name="cstDualResidual_0", domain="rknn_cst",
                            alpha=0.5)
    dims = [f"d{i}" for i in range(4)]
    graph = helper.make_graph([node], "torch-jit-export",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 10, 10]) for n in "01"],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims) for n in "23"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12), helper.make_opsetid("rknn_cst", 1)])
    onnx.save(model, str(folder / "dual_residual.onnx"))
    rng = np.random.default_rng(12)
    x, y = (rng.standard_normal((1, 3, 10, 10)).astype(np.float32) for _ in range(2))
    for i, a in enumerate((x, y, x * 0.5 - y, y * 0.5 - x)):
        np.save(folder / (f"dual_residual_input_{i}.npy" if i < 2 else f"dual_residual_output_{i - 2}.npy"), a)


def _concat_block(folder: Path) -> None:
    """The onnx_edit example's model: a KV-cache Concat (k_cache.1 [2,4,8,16] + new k [2,4,1,16])
    and its dataset of .npy pairs."""
    scale = numpy_helper.from_array(np.full((1, 4, 1, 16), 0.5, np.float32), "scale")
    nodes = [helper.make_node("Mul", ["k_new", "scale"], ["k_scaled"]),
             helper.make_node("Concat", ["k_cache.1", "k_scaled"], ["k_cache"], axis=2),
             helper.make_node("ReduceMean", ["k_cache"], ["summary"], axes=[2], keepdims=1)]
    graph = helper.make_graph(
        nodes, "concat_block",
        [helper.make_tensor_value_info("k_cache.1", TensorProto.FLOAT, [2, 4, 8, 16]),
         helper.make_tensor_value_info("k_new", TensorProto.FLOAT, [2, 4, 1, 16])],
        [helper.make_tensor_value_info("k_cache", TensorProto.FLOAT, [2, 4, 9, 16]),
         helper.make_tensor_value_info("summary", TensorProto.FLOAT, [2, 4, 1, 16])], initializer=[scale])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(folder / "concat_block.onnx"))
    rng = np.random.default_rng(3)
    lines = []
    for i in range(2):
        np.save(folder / f"concat_block_input_0_{i}.npy", rng.standard_normal((2, 4, 8, 16)).astype(np.float32))
        np.save(folder / f"concat_block_input_1_{i}.npy", rng.standard_normal((2, 4, 1, 16)).astype(np.float32))
        lines.append(f"concat_block_input_0_{i}.npy concat_block_input_1_{i}.npy")
    (folder / "dataset.txt").write_text("\n".join(lines) + "\n")


def _classifier_folder(folder: Path, model_name: str, image: str) -> None:
    models = shared_models_dir()
    if models is None:
        pytest.skip("shared models not found (set NPUC_SHARED_MODELS)")
    shutil.copy(models / "mobilenet_v2.onnx", folder / model_name)
    _photo(folder / image, 224, 224, 1)
    _photo(folder / "calib_299x299.jpg", 299, 299, 2)  # resized to 224 by the calibration reader
    (folder / "dataset.txt").write_text(f"{image}\ncalib_299x299.jpg\n")
    (folder / "labels.txt").write_text("".join(f"{i}: class {i}\n" for i in range(1000)))


def _darknet_yolov3(folder: Path) -> None:
    """yolov3-tiny's cfg from Debian's darknet package standing in for yolov3.cfg (same layer kinds
    and two [yolo] heads at 416x416, a tenth of the compute), with random weights in darknet's format."""
    from darknet_ref import DARKNET_CFG_DIR, write_random_weights

    source = DARKNET_CFG_DIR / "yolov3-tiny.cfg"
    if not source.is_file():
        if os.environ.get("NPUC_STRICT_DEPS"):
            raise AssertionError("Debian's darknet package is missing (tools/install_deps.sh test installs it)")
        pytest.skip("Debian's darknet package (its cfgs) is not installed")
    (folder / "yolov3.cfg").write_text(source.read_text())
    write_random_weights(source.read_text(), folder / "yolov3.weights", seed=7)
    _photo(folder / "dog_bike_car_416x416.jpg", 416, 416, 11)
    for i in range(3):
        _photo(folder / f"calib_{i}.jpg", 416, 416, 12 + i)
    (folder / "dataset.txt").write_text("".join(f"calib_{i}.jpg\n" for i in range(3)))


def _prepare(name: str, folder: Path) -> None:
    if name in ("onnx_resnet50v2", "accuracy_analysis"):
        _classifier_folder(folder, "resnet50v2.onnx", "dog_224x224.jpg")
    elif name == "pytorch_resnet18":
        _photo(folder / "space_shuttle_224.jpg", 224, 224, 3)
        _photo(folder / "calib_299x299.jpg", 299, 299, 2)
        (folder / "dataset.txt").write_text("space_shuttle_224.jpg\ncalib_299x299.jpg\n")
        (folder / "labels.txt").write_text("".join(f"{i}: class {i}\n" for i in range(1000)))
    elif name == "onnx_yolov5":
        _tiny_cnn(folder / "yolov5s_relu.onnx", 640, {"out80": [1, 255, 80, 80], "out40": [1, 255, 40, 40],
                                                       "out20": [1, 255, 20, 20]}, sigmoid=True)
        _photo(folder / "bus.jpg", 810, 1080, 4)
        (folder / "dataset.txt").write_text("bus.jpg\n")
    elif name.startswith("hybrid_quant"):
        _tiny_cnn(folder / "ssd_mobilenet_v2.onnx", 300, {"concat": [1, 32, 19, 19], "concat_1": [1, 91]})
        _photo(folder / "dog_bike_car_300x300.jpg", 300, 300, 5)
        (folder / "dataset.txt").write_text("dog_bike_car_300x300.jpg\n")
    elif name == "onnx_edit":
        _concat_block(folder)
    elif name == "custom_op_sigmoid":
        _tiny_yolox(folder / "yolox_s.onnx")
        _photo(folder / "bus.jpg", 640, 640, 6)
        for i in range(3):
            _photo(folder / f"calib_{i}.jpg", 640, 480, 7 + i)
        (folder / "dataset.txt").write_text("".join(f"calib_{i}.jpg\n" for i in range(3)))
    elif name == "custom_op_dual_residual":
        _dual_residual(folder)
    elif name == "darknet_yolov3":
        _darknet_yolov3(folder)
    elif name in CAFFE_SCRIPTS:
        _caffe_mobilenet(folder)
    elif name == "tflite_mobilenet_v1":
        _tflite_mobilenet(folder)


def _tflite_mobilenet(folder: Path) -> None:
    """mobilenet_v1_1.0_224.tflite is not available offline: MediaPipe's hand_landmark_lite.tflite
    (a trained MobileNet-style TFLite model from npm with the same 1x224x224x3 float input) stands
    in under that name, with the dog image and a dataset of it."""
    from tflite_reference import mediapipe_model

    try:
        shutil.copy(mediapipe_model("hand_landmark_lite"), folder / "mobilenet_v1_1.0_224.tflite")
    except FileNotFoundError as e:
        if os.environ.get("NPUC_STRICT_DEPS"):
            raise AssertionError(str(e)) from None
        pytest.skip(str(e))
    _photo(folder / "dog_224x224.jpg", 224, 224, 11)
    (folder / "dataset.txt").write_text("dog_224x224.jpg\n")


#: The scripts that load RKNN's Caffe MobileNetV2 (a stand-in of the same interface here).
CAFFE_SCRIPTS = ("caffe_mobilenet_v2", "dynamic_shape", "multi_batch", "codegen", "npu_device_test")


def _caffe_mobilenet(folder: Path) -> None:
    """mobilenet_v2_deploy.prototxt + .caffemodel: a small MobileNetV2-like Caffe net written by
    caffe_nets.py (224x224 input, random weights), the dog image and a dataset of it."""
    from caffe_nets import mobilenet_like

    mobilenet_like(hw=224).write(folder, "mobilenet_v2_deploy", folder / "pb2")
    (folder / "mobilenet_v2_deploy.caffemodel").rename(folder / "mobilenet_v2.caffemodel")
    _photo(folder / "dog_224x224.jpg", 224, 224, 11)
    (folder / "dataset.txt").write_text("dog_224x224.jpg\n")
    (folder / "labels.txt").write_text("".join(f"{i}: class {i}\n" for i in range(1000)))


def _run(script: str, folder: Path) -> subprocess.CompletedProcess:
    shutil.copy(SCRIPTS / f"{script}.py", folder / f"{script}.py")
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, f"{script}.py"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900)


def _fp32_on_image(model: Path, image: Path, mean: List[float], std: List[float], output: int = 0) -> np.ndarray:
    """npuc's FP32 runtime on `image` read as the scripts read it (cv2 BGR -> RGB), normalized by hand."""
    import cv2

    rgb = cv2.cvtColor(cv2.imread(str(image)), cv2.COLOR_BGR2RGB).astype(np.float32)
    x = ((rgb - np.array(mean, np.float32)) / np.array(std, np.float32)).transpose(2, 0, 1)[np.newaxis]
    return npuc.Runtime(npuc.Model.load(str(model))).run([np.ascontiguousarray(x)])[output]


def _check_resnet50v2(folder: Path, out: str) -> None:
    assert "-----TOP 5-----" in out
    want = _fp32_on_image(folder / "resnet50v2.onnx", folder / "dog_224x224.jpg", [123.675, 116.28, 103.53], [58.82] * 3)
    got = np.load(folder / "onnx_resnet50v2_0.npy")
    assert got.shape == want.shape and cosine_similarity(got, want) >= MIN_INT8_COSINE
    assert (folder / "resnet50v2.rknn").stat().st_size > 0


def _check_accuracy_analysis(folder: Path, out: str) -> None:
    golden = np.genfromtxt(folder / "snapshot" / "golden" / "output.txt")
    simulated = np.genfromtxt(folder / "snapshot" / "simulator" / "output.txt")
    want = _fp32_on_image(folder / "resnet50v2.onnx", folder / "dog_224x224.jpg", [123.68, 116.28, 103.53], [57.38] * 3)
    np.testing.assert_allclose(golden, want.reshape(-1), rtol=1e-4, atol=1e-4)
    assert cosine_similarity(simulated, golden) >= MIN_INT8_COSINE
    assert out.count("-----TOP 5-----") == 2


def _check_yolov5(folder: Path, out: str) -> None:
    shapes = [np.load(folder / f"onnx_yolov5_{i}.npy").shape for i in range(3)]
    assert shapes == [(1, 255, 80, 80), (1, 255, 40, 40), (1, 255, 20, 20)]
    assert (folder / "result.jpg").stat().st_size > 0 and "Save results to result.jpg!" in out


def _check_resnet18(folder: Path, out: str) -> None:
    import cv2

    rgb = cv2.cvtColor(cv2.imread(str(folder / "space_shuttle_224.jpg")), cv2.COLOR_BGR2RGB).astype(np.float32)
    x = ((rgb - np.array([123.675, 116.28, 103.53], np.float32)) / 58.395).transpose(2, 0, 1)[np.newaxis]
    import torch

    net = torch.jit.load(str(folder / "resnet18.pt"))
    want = net(torch.from_numpy(np.ascontiguousarray(x))).detach().numpy()
    got = np.load(folder / "pytorch_resnet18_0.npy")
    assert cosine_similarity(got, want) >= MIN_INT8_COSINE and "resnet18\n-----TOP 5-----" in out


def _check_onnx_edit(folder: Path, out: str) -> None:
    edited = onnx.load(str(folder / "concat_block_edited.onnx"))
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in [*edited.graph.input, *edited.graph.output]}
    assert shapes["k_cache.1"] == [1, 32, 4, 8] and shapes["k_cache"] == [1, 8, 9, 16]
    assert (folder / "concat_block_edited.rknn").stat().st_size > 0
    # The edited model computes the original on re-laid-out tensors.
    x0 = np.load(folder / "concat_block_input_0_0.npy")
    x1 = np.load(folder / "concat_block_input_1_0.npy")
    original = npuc.Runtime(npuc.Model.load(str(folder / "concat_block.onnx"))).run([x0, x1])
    edited_out = npuc.Runtime(npuc.Model.load(str(folder / "concat_block_edited.onnx"))).run(
        [x0.transpose(0, 3, 1, 2).reshape(1, 32, 4, 8), x1])
    np.testing.assert_array_equal(edited_out[0], original[0].reshape(1, 8, 9, 16))
    np.testing.assert_array_equal(edited_out[1], original[1])
    listed = (folder / "dataset_for_concat_block_edited.txt").read_text().split()
    assert np.load(folder / listed[0]).shape == (1, 32, 4, 8)


def _check_dual_residual(folder: Path, out: str) -> None:
    cosines = [float(line.rsplit(":", 1)[1]) for line in out.splitlines() if line.startswith("cos distance")]
    assert len(cosines) == 2 and min(cosines) >= 0.9999, out[-2000:]
    assert (folder / "dual_residual_custom.rknn").stat().st_size > 0


def _check_custom_sigmoid(folder: Path, out: str) -> None:
    """The INT8 outputs, with the user's cstSigmoid computing every Sigmoid, against npuc's FP32
    runtime on the unedited model (standard Sigmoid), the image read as the script reads it (640x640:
    the letterbox leaves it as it is; mean 0, std 1)."""
    want = [_fp32_on_image(folder / "yolox_s.onnx", folder / "bus.jpg", [0, 0, 0], [1, 1, 1], i) for i in range(3)]
    for i, w in enumerate(want):
        got = np.load(folder / f"functions_custom_op_non-onnx_standard_{i}.npy")
        assert got.shape == w.shape == (1, 85, 80 >> i, 80 >> i)
        assert cosine_similarity(got, w) >= MIN_INT8_COSINE, (i, cosine_similarity(got, w))
    assert "cstSigmoid" in out and "Save results to result.jpg!" in out
    assert (folder / "result.jpg").stat().st_size > 0


def _check_darknet_yolov3(folder: Path, out: str) -> None:
    """The script keeps no outputs: its blob, run on its image, against npuc's FP32 runtime on the
    darknet model with the image scaled by hand (mean 0, std 255: darknet's 0..1 input)."""
    import cv2

    rgb = cv2.cvtColor(cv2.imread(str(folder / "dog_bike_car_416x416.jpg")), cv2.COLOR_BGR2RGB)
    x = np.ascontiguousarray((rgb.astype(np.float32) / 255).transpose(2, 0, 1)[np.newaxis])
    want = npuc.Runtime(npuc.Model.load_darknet(str(folder / "yolov3.cfg"), str(folder / "yolov3.weights"))).run([x])
    with npuc.Toolkit() as tk:
        tk.load_blob(str(folder / "yolov3_416x416.rknn"))
        tk.init_runtime()
        got = tk.inference(inputs=[rgb])
    assert [g.shape for g in got] == [w.shape for w in want] == [(1, 255, 13, 13), (1, 255, 26, 26)]
    assert min(cosine_similarity(g, w) for g, w in zip(got, want)) >= MIN_INT8_COSINE
    assert out.rstrip().endswith("done")


def _check_caffe_mobilenet_v2(folder: Path, out: str) -> None:
    """The stand-in Caffe net loads, builds INT8 for rk3566 with every node on the NPU, exports and
    runs; its saved output against npuc's FP32 runtime of the Caffe net on the same BGR image (the
    script feeds cv2's BGR with BGR-ordered mean/std, as the original does)."""
    import cv2

    assert "Partition for rk3566: 22 nodes, 22 on NPU, 0 on CPU" in out, out[-2000:]
    assert (folder / "mobilenet_v2.rknn").stat().st_size > 0
    assert "mobilenet_v2\n-----TOP 5-----" in out and out.rstrip().endswith("done")
    bgr = cv2.imread(str(folder / "dog_224x224.jpg")).astype(np.float32)
    x = ((bgr - np.array([103.94, 116.78, 123.68], np.float32)) / 58.82).transpose(2, 0, 1)[np.newaxis]
    model = npuc.Model.load_caffe(str(folder / "mobilenet_v2_deploy.prototxt"), str(folder / "mobilenet_v2.caffemodel"))
    want = npuc.Runtime(model).run([np.ascontiguousarray(x)])[0]
    got = np.load(folder / "caffe_mobilenet_v2_0.npy")
    assert got.shape == want.shape and cosine_similarity(got, want) >= MIN_INT8_COSINE, cosine_similarity(got, want)


def _check_tflite_mobilenet_v1(folder: Path, out: str) -> None:
    """The stand-in TFLite model loads, builds INT8 for rk3566 and exports; the blob, run on the
    script's NHWC image, against npuc's FP32 runtime of the TFLite model with the script's mean/std
    (128, 128) applied by hand."""
    import cv2

    assert (folder / "mobilenet_v1.rknn").stat().st_size > 0 and out.rstrip().endswith("done")
    rgb = cv2.cvtColor(cv2.imread(str(folder / "dog_224x224.jpg")), cv2.COLOR_BGR2RGB)
    x = ((rgb.astype(np.float32) - 128) / 128).transpose(2, 0, 1)[np.newaxis]
    want = npuc.Runtime(npuc.Model.load_tflite(str(folder / "mobilenet_v1_1.0_224.tflite"))).run([np.ascontiguousarray(x)])
    with npuc.Toolkit() as tk:
        tk.config(mean_values=[128, 128, 128], std_values=[128, 128, 128])
        tk.load_blob(str(folder / "mobilenet_v1.rknn"))
        tk.init_runtime()
        got = tk.inference(inputs=[rgb[np.newaxis]], data_format="nhwc")
    assert [g.shape for g in got] == [w.shape for w in want]
    cos = [cosine_similarity(g, w) for g, w in zip(got, want)]
    # The 4th output (world landmarks, metres, ~0.05) is a tiny range calibrated on the example's
    # one dog image: 0.83 measured. It was 0.0 while merge_sibling_projections put the four
    # FULLY_CONNECTED heads on one INT8 grid set by the pixel landmarks (~200).
    print("tflite example cosines", cos)
    assert min(cos[:3]) >= MIN_INT8_COSINE and cos[3] >= 0.75, cos


def _check_caffe_codegen(folder: Path, out: str) -> None:
    assert "codegen wrote rknn_app_demo" in out
    assert (folder / "rknn_app_demo" / "CMakeLists.txt").is_file()


RUNS: Dict[str, Callable[[Path, str], None]] = {
    "darknet_yolov3": _check_darknet_yolov3,
    "caffe_mobilenet_v2": _check_caffe_mobilenet_v2,
    "tflite_mobilenet_v1": _check_tflite_mobilenet_v1,
    "codegen": _check_caffe_codegen,
    "custom_op_dual_residual": _check_dual_residual,
    "custom_op_sigmoid": _check_custom_sigmoid,
    "onnx_resnet50v2": _check_resnet50v2,
    "onnx_yolov5": _check_yolov5,
    "pytorch_resnet18": _check_resnet18,
    "accuracy_analysis": _check_accuracy_analysis,
    "onnx_edit": _check_onnx_edit,
}

#: script -> (the call that returns -1, words of its error line, the script's own failure message).
PENDING = {
    "tensorflow_ssd_mobilenet_v1": ("load_tensorflow", "TensorFlow (frozen .pb) models are not supported yet",
                                    "Load model failed!"),
    # The Caffe model loads; these stop at what a fixed-shape loader cannot do (several input
    # shapes and batch > 1 re-import the model) and at a board as accuracy_analysis target.
    "dynamic_shape": ("build", "this model's loader (TFLite, Darknet, Caffe", "Build model failed!"),
    "multi_batch": ("build", "batch 4 needs a model loaded with load_onnx or load_pytorch", "Build model failed!"),
    "npu_device_test": ("accuracy_analysis", "only the host simulator (target=None) is supported",
                        "Accuracy analysis failed!"),
    "hybrid_quant_step1": ("load_tensorflow", "not supported yet", "Load model failed!"),
}


def test_every_script_is_checked() -> None:
    scripts = {p.stem for p in SCRIPTS.glob("*.py")}
    assert scripts == set(RUNS) | set(PENDING) | {"hybrid_quant_onnx_step1", "hybrid_quant_onnx_step2"}


@pytest.mark.parametrize("script", sorted(RUNS))
def test_script_runs_to_the_end(script: str, tmp_path: Path) -> None:
    _require_cv2()
    _prepare(script, tmp_path)
    done = _run(script, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "\nE " not in "\n" + done.stderr, done.stderr[-3000:]
    RUNS[script](tmp_path, done.stdout)


@pytest.mark.parametrize("script", sorted(PENDING))
def test_script_stops_at_the_missing_call_with_rknns_minus_one(script: str, tmp_path: Path) -> None:
    _require_cv2()
    _prepare(script, tmp_path)
    call, words, message = PENDING[script]
    done = _run(script, tmp_path)
    assert done.returncode == 255, done.stdout[-3000:] + done.stderr[-3000:]  # exit(-1)
    errors = [line for line in done.stderr.splitlines() if line.startswith("E ")]
    assert len(errors) == 1 and errors[0].startswith(f"E {call}") and words in errors[0], done.stderr
    assert done.stdout.rstrip().endswith(message)
    assert "Traceback" not in done.stderr


def test_hybrid_flow_step2_in_a_fresh_object(tmp_path: Path) -> None:
    """Step 1, the user's edit of the cfg as step 1's tips say (a layer named by its output tensor),
    then step 2 in a new process: it exports without config() (the SoC and mean/std recorded by
    step 1) and keeps that layer in FP16."""
    _require_cv2()
    _prepare("hybrid_quant_onnx_step1", tmp_path)
    first = _run("hybrid_quant_onnx_step1", tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    cfg = tmp_path / "ssd_mobilenet_v2.quantization.cfg"
    text = cfg.read_text()
    assert "custom_quantize_layers: {}" in text
    cfg.write_text(text.replace("custom_quantize_layers: {}", "custom_quantize_layers:\n  stem: float16"))
    second = _run("hybrid_quant_onnx_step2", tmp_path)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "hybrid_quantization_step2: 1 layer(s) in FP16" in second.stdout
    assert not (tmp_path / "snapshot").exists()  # output_dir=None
    with npuc.Toolkit() as tk:
        tk.load_blob(str(tmp_path / "ssd_mobilenet_v2.rknn"))
        assert tk.get_config()["target_platform"] == "rk3566"
        assert np.allclose(np.ravel(tk.get_config()["mean_values"]), 127.5)
