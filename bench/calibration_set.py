"""The calibration set of npuc's performance model: rknn_model_zoo's published FPS (README at
v2.3.2; INT8, max NPU clock, model inference only, one NPU core on RK3588/RK3576) and the models
npuc exports to stand for them. Shared by bench/perf_calibration.py and bench/perf_fit.py."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from export_torchvision import export
from yolo_models import export_yolo

SOCS = ("rk3566", "rk3562", "rk3588", "rk3576")

#: published name -> (npuc's stand-in, its exporter, FPS per SoC in SOCS order). rk3566 stands for
#: the README's RK3566/RK3568 column.
PUBLISHED: dict[str, tuple[str, Callable[[], Path], tuple[float, ...]]] = {
    "mobilenetv2-12": ("mobilenet_v2 (torchvision)", lambda: export("mobilenet_v2"), (180.7, 281.3, 450.7, 467.0)),
    "resnet50-v2-7": ("resnet50 (torchvision)", lambda: export("resnet50"), (37.9, 54.9, 110.1, 99.0)),
    "yolov5s_relu": ("yolov5s_relu (bench/yolo_models.py)", lambda: export_yolo("yolov5s_relu"),
                     (25.5, 33.2, 66.1, 65.0)),
    "yolov8n": ("yolov8n (bench/yolo_models.py)", lambda: export_yolo("yolov8n"), (34.0, 40.9, 73.5, 90.2)),
}


def rows() -> list[tuple[str, str, Path, float]]:
    """(published model name, SoC, exported ONNX path, published FPS) for every table cell."""
    out = []
    for name, (_, exporter, fps) in PUBLISHED.items():
        path = exporter()
        out += [(name, soc, path, f) for soc, f in zip(SOCS, fps)]
    return out
