"""Metrics of the OCR benchmarks: a DB-style post-process of the text probability map and the
comparisons INT8 vs FP32 (pixel F1, box recall / precision at IoU 0.5).

The post-process follows PaddleOCR's DB head in the simple form that is enough to compare two runs
of the same model: binarize the probability map at THRESHOLD, label 8-connected components, one
axis-aligned box per component, drop components smaller than MIN_AREA pixels (DB drops boxes
whose short side is under 3 pixels; the text here is horizontal, so boxes need no rotation), and
"unclip" each box by area * UNCLIP_RATIO / perimeter on every side, as DB does to undo the shrink
of its training targets (so boxes can be compared with the rendered text lines).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
from scipy import ndimage

THRESHOLD = 0.3
MIN_AREA = 9
IOU_MATCH = 0.5
UNCLIP_RATIO = 1.5  # PaddleOCR's det_db_unclip_ratio default

Box = Tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive ends)


def text_map(output: np.ndarray) -> np.ndarray:
    """The H x W probability map of a ppocrv4_det output (1 x 1 x H x W)."""
    return np.asarray(output, dtype=np.float32).reshape(output.shape[-2:])


def boxes_of(prob: np.ndarray) -> List[Box]:
    """DB-style boxes: binarize at THRESHOLD, 8-connected components, one box each."""
    labels, count = ndimage.label(prob > THRESHOLD, structure=np.ones((3, 3), dtype=bool))
    boxes: List[Box] = []
    for index, found in enumerate(ndimage.find_objects(labels), start=1):
        if found is None:
            continue
        ys, xs = found
        if int(np.count_nonzero(labels[found] == index)) < MIN_AREA:
            continue
        if ys.stop - ys.start < 3 or xs.stop - xs.start < 3:
            continue
        w, h = xs.stop - xs.start, ys.stop - ys.start
        d = int(round(w * h * UNCLIP_RATIO / (2 * (w + h))))
        boxes.append((max(0, xs.start - d), max(0, ys.start - d), min(prob.shape[1], xs.stop + d),
                      min(prob.shape[0], ys.stop + d)))
    return boxes


def iou(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    area = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / area


def matched(reference: Sequence[Box], predicted: Sequence[Box]) -> int:
    """Pairs matched one to one at IoU >= IOU_MATCH, greedily from the best IoU down."""
    pairs = sorted(((iou(r, p), i, j) for i, r in enumerate(reference) for j, p in enumerate(predicted)),
                   reverse=True)
    used_r, used_p, n = set(), set(), 0
    for score, i, j in pairs:
        if score < IOU_MATCH:
            break
        if i in used_r or j in used_p:
            continue
        used_r.add(i)
        used_p.add(j)
        n += 1
    return n


@dataclass
class DetScore:
    """Accumulated over pages: pixel counts of the binarized maps and box matches."""
    tp: int = 0
    fp: int = 0
    fn: int = 0
    matches: int = 0
    reference_boxes: int = 0
    predicted_boxes: int = 0

    def add(self, reference_prob: np.ndarray, predicted_prob: np.ndarray) -> None:
        r, p = reference_prob > THRESHOLD, predicted_prob > THRESHOLD
        self.tp += int(np.count_nonzero(r & p))
        self.fp += int(np.count_nonzero(~r & p))
        self.fn += int(np.count_nonzero(r & ~p))
        self.add_boxes(boxes_of(reference_prob), boxes_of(predicted_prob))

    def add_boxes(self, reference: Sequence[Box], predicted: Sequence[Box]) -> None:
        self.matches += matched(reference, predicted)
        self.reference_boxes += len(reference)
        self.predicted_boxes += len(predicted)

    @property
    def pixel_f1(self) -> float:
        return 2 * self.tp / max(1, 2 * self.tp + self.fp + self.fn)

    @property
    def box_recall(self) -> float:
        return self.matches / max(1, self.reference_boxes)

    @property
    def box_precision(self) -> float:
        return self.matches / max(1, self.predicted_boxes)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / max(1e-30, np.linalg.norm(a) * np.linalg.norm(b)))
