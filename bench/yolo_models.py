"""YOLOv5s (ReLU) and YOLOv8n, written for the perf calibration from the published architecture
descriptions (not copied from ultralytics), with random weights: the cost model reads shapes only.

Both are exported as rknn_model_zoo exports them for its published FPS figures (v2.3.2), i.e. the
network up to the detection head's raw outputs, without box decoding or NMS:

- yolov5s_relu: the v6 layout (6x6/2 stem conv, C3 blocks, SPPF, PANet neck), every Conv-BN
  followed by ReLU; outputs the three Detect 1x1 convs, 3 anchors x (5 + 80) = 255 channels at
  strides 8, 16, 32.
- yolov8n: Conv-BN-SiLU, C2f blocks, SPPF, the v8 neck and its decoupled head. rknn_model_zoo's
  export (airockchip/ultralytics_yolov8, "RKOPT" notes) moves the DFL out of the model to the CPU
  post-processing and adds a class-score sum per scale, so each of the three scales outputs
  box = the 64-channel (4 x 16 bins) DFL logits conv, cls = Sigmoid(80-channel conv), and
  cls_sum = Clip(ReduceSum(cls over channels), 0, 1): nine outputs.

BatchNorm is folded into the convs before export (`fuse_batchnorm`), so the ONNX graph holds Conv
with bias, as a deployed model does.

    /usr/bin/python3 bench/yolo_models.py        # exports both into bench/.cache
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from common import CACHE

INPUT_SHAPE = (1, 3, 640, 640)
NUM_CLASSES = 80
DFL_BINS = 16  # reg_max: each box side is a distribution over 16 bins


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError("PyTorch is needed to export benchmark models: run `make bench-deps`") from e
    return torch


def _modules() -> dict[str, Any]:
    """The module classes, built on first use so importing this file does not need torch."""
    torch = _torch()
    nn = torch.nn

    class ConvBnAct(nn.Module):
        """Conv (no bias) + BatchNorm + activation; padding keeps 'same' size at stride 1."""

        def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, p: int | None = None,
                     act: Callable[[], Any] = nn.ReLU) -> None:
            super().__init__()
            self.conv = nn.Conv2d(c1, c2, k, s, k // 2 if p is None else p, bias=False)
            self.bn = nn.BatchNorm2d(c2)
            self.act = act()

        def forward(self, x: Any) -> Any:
            return self.act(self.bn(self.conv(x)))

    class Bottleneck(nn.Module):
        """Two convs (k1 then k2) with an optional residual add."""

        def __init__(self, c: int, shortcut: bool, k1: int, k2: int, act: Callable[[], Any]) -> None:
            super().__init__()
            self.cv1 = ConvBnAct(c, c, k1, act=act)
            self.cv2 = ConvBnAct(c, c, k2, act=act)
            self.add = shortcut

        def forward(self, x: Any) -> Any:
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class C3(nn.Module):
        """YOLOv5's CSP block: two 1x1 branches (one through n bottlenecks), concat, 1x1."""

        def __init__(self, c1: int, c2: int, n: int, shortcut: bool = True) -> None:
            super().__init__()
            c = c2 // 2
            self.cv1 = ConvBnAct(c1, c, 1)
            self.cv2 = ConvBnAct(c1, c, 1)
            self.cv3 = ConvBnAct(2 * c, c2, 1)
            self.m = nn.Sequential(*(Bottleneck(c, shortcut, 1, 3, nn.ReLU) for _ in range(n)))

        def forward(self, x: Any) -> Any:
            return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))

    class C2f(nn.Module):
        """YOLOv8's block: a 1x1 conv split in two halves, n bottlenecks chained on the second,
        every intermediate concatenated, 1x1."""

        def __init__(self, c1: int, c2: int, n: int, shortcut: bool) -> None:
            super().__init__()
            self.c = c2 // 2
            self.cv1 = ConvBnAct(c1, 2 * self.c, 1, act=nn.SiLU)
            self.cv2 = ConvBnAct((2 + n) * self.c, c2, 1, act=nn.SiLU)
            self.m = nn.ModuleList(Bottleneck(self.c, shortcut, 3, 3, nn.SiLU) for _ in range(n))

        def forward(self, x: Any) -> Any:
            y = list(self.cv1(x).split((self.c, self.c), 1))
            for m in self.m:
                y.append(m(y[-1]))
            return self.cv2(torch.cat(y, 1))

    class SPPF(nn.Module):
        """1x1 halving conv, three chained 5x5/1 max pools, concat of all four, 1x1."""

        def __init__(self, c1: int, c2: int, act: Callable[[], Any]) -> None:
            super().__init__()
            c = c1 // 2
            self.cv1 = ConvBnAct(c1, c, 1, act=act)
            self.cv2 = ConvBnAct(4 * c, c2, 1, act=act)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x: Any) -> Any:
            x = self.cv1(x)
            y1 = self.pool(x)
            y2 = self.pool(y1)
            return self.cv2(torch.cat((x, y1, y2, self.pool(y2)), 1))

    return {"ConvBnAct": ConvBnAct, "C3": C3, "C2f": C2f, "SPPF": SPPF}


def yolov5s_relu() -> Any:
    """YOLOv5s v6 (width 0.50, depth 0.33) with ReLU, returning the three raw Detect convs."""
    torch = _torch()
    nn = torch.nn
    m = _modules()
    Conv, C3, SPPF = m["ConvBnAct"], m["C3"], m["SPPF"]
    anchors_per_scale = 3

    class YoloV5s(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.b0 = Conv(3, 32, 6, 2, 2)
            self.b1, self.b2 = Conv(32, 64, 3, 2), C3(64, 64, 1)
            self.b3, self.b4 = Conv(64, 128, 3, 2), C3(128, 128, 2)
            self.b5, self.b6 = Conv(128, 256, 3, 2), C3(256, 256, 3)
            self.b7, self.b8 = Conv(256, 512, 3, 2), C3(512, 512, 1)
            self.b9 = SPPF(512, 512, nn.ReLU)
            self.h10, self.h13 = Conv(512, 256, 1), C3(512, 256, 1, False)
            self.h14, self.h17 = Conv(256, 128, 1), C3(256, 128, 1, False)
            self.h18, self.h20 = Conv(128, 128, 3, 2), C3(256, 256, 1, False)
            self.h21, self.h23 = Conv(256, 256, 3, 2), C3(512, 512, 1, False)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            out = anchors_per_scale * (5 + NUM_CLASSES)
            self.detect = nn.ModuleList(nn.Conv2d(c, out, 1) for c in (128, 256, 512))

        def forward(self, x: Any) -> tuple[Any, ...]:
            p3 = self.b4(self.b3(self.b2(self.b1(self.b0(x)))))
            p4 = self.b6(self.b5(p3))
            p5 = self.b9(self.b8(self.b7(p4)))
            h10 = self.h10(p5)
            h14 = self.h14(self.h13(torch.cat((self.up(h10), p4), 1)))
            out3 = self.h17(torch.cat((self.up(h14), p3), 1))
            out4 = self.h20(torch.cat((self.h18(out3), h14), 1))
            out5 = self.h23(torch.cat((self.h21(out4), h10), 1))
            return tuple(d(o) for d, o in zip(self.detect, (out3, out4, out5)))

    return YoloV5s()


def yolov8n() -> Any:
    """YOLOv8n (width 0.25, depth 0.33) with rknn_model_zoo's head outputs (see the module doc)."""
    torch = _torch()
    nn = torch.nn
    m = _modules()
    C2f, SPPF = m["C2f"], m["SPPF"]

    def Conv(c1: int, c2: int, k: int = 1, s: int = 1) -> Any:  # noqa: N802 - a layer factory
        return m["ConvBnAct"](c1, c2, k, s, act=nn.SiLU)

    class YoloV8n(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.b0, self.b1, self.b2 = Conv(3, 16, 3, 2), Conv(16, 32, 3, 2), C2f(32, 32, 1, True)
            self.b3, self.b4 = Conv(32, 64, 3, 2), C2f(64, 64, 2, True)
            self.b5, self.b6 = Conv(64, 128, 3, 2), C2f(128, 128, 2, True)
            self.b7, self.b8 = Conv(128, 256, 3, 2), C2f(256, 256, 1, True)
            self.b9 = SPPF(256, 256, nn.SiLU)
            self.h12, self.h15 = C2f(384, 128, 1, False), C2f(192, 64, 1, False)
            self.h16, self.h18 = Conv(64, 64, 3, 2), C2f(192, 128, 1, False)
            self.h19, self.h21 = Conv(128, 128, 3, 2), C2f(384, 256, 1, False)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            box_c = max(16, 64 // 4, 4 * DFL_BINS)  # v8's head widths for the smallest scale's 64 ch
            cls_c = max(64, min(NUM_CLASSES, 100))
            self.box = nn.ModuleList(
                nn.Sequential(Conv(c, box_c, 3), Conv(box_c, box_c, 3), nn.Conv2d(box_c, 4 * DFL_BINS, 1))
                for c in (64, 128, 256))
            self.cls = nn.ModuleList(
                nn.Sequential(Conv(c, cls_c, 3), Conv(cls_c, cls_c, 3), nn.Conv2d(cls_c, NUM_CLASSES, 1))
                for c in (64, 128, 256))

        def forward(self, x: Any) -> tuple[Any, ...]:
            p3 = self.b4(self.b3(self.b2(self.b1(self.b0(x)))))
            p4 = self.b6(self.b5(p3))
            p5 = self.b9(self.b8(self.b7(p4)))
            h12 = self.h12(torch.cat((self.up(p5), p4), 1))
            out3 = self.h15(torch.cat((self.up(h12), p3), 1))
            out4 = self.h18(torch.cat((self.h16(out3), h12), 1))
            out5 = self.h21(torch.cat((self.h19(out4), p5), 1))
            outputs = []
            for i, feat in enumerate((out3, out4, out5)):
                cls = torch.sigmoid(self.cls[i](feat))
                outputs += [self.box[i](feat), cls, torch.clamp(cls.sum(1, keepdim=True), 0, 1)]
            return tuple(outputs)

    return YoloV8n()


def fuse_batchnorm(model: Any) -> Any:
    """Folds every ConvBnAct's BatchNorm into its conv (eval mode), leaving an Identity."""
    torch = _torch()
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    model.eval()
    for mod in model.modules():
        if hasattr(mod, "bn") and isinstance(mod.bn, torch.nn.BatchNorm2d):
            mod.conv = fuse_conv_bn_eval(mod.conv, mod.bn)
            mod.bn = torch.nn.Identity()
    return model


BUILDERS: dict[str, Callable[[], Any]] = {"yolov5s_relu": yolov5s_relu, "yolov8n": yolov8n}


def export_yolo(name: str, opset: int = 13) -> Path:
    """Returns the path of `<name>.onnx` in the bench cache, exporting it first if missing."""
    out = CACHE / f"{name}.onnx"
    if out.exists():
        return out
    torch = _torch()
    torch.manual_seed(0)
    model = fuse_batchnorm(BUILDERS[name]())
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with torch.no_grad():
        outputs = model(torch.randn(*INPUT_SHAPE))
    torch.onnx.export(model, torch.randn(*INPUT_SHAPE), str(tmp), opset_version=opset, input_names=["input"],
                      output_names=[f"output{i}" for i in range(len(outputs))], do_constant_folding=True)
    tmp.rename(out)
    return out


if __name__ == "__main__":
    for arch in sys.argv[1:] or list(BUILDERS):
        print(export_yolo(arch))
