"""Rendered text for the OCR benchmarks: detection pages (480x480, like shared/models/ocr_det_calib)
and direction-classifier lines (48x192, upright or rotated 180 degrees), each with its ground truth.

Everything is drawn with PIL from Debian's DejaVu fonts (fonts-dejavu-core) and seeded, so a run
regenerates the same images. The seeds used for evaluation are never those of calibration, and
the vocabulary differs from the calibration pages' (invoice words), so no evaluation image is a
calibration image.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

#: Debian fonts-dejavu-core; PIL finds them by file name in the system font folders.
FONTS = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf",
         "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf")
WORDS = ("river", "station", "garden", "window", "market", "letter", "yellow", "winter", "signal",
         "harbor", "machine", "forest", "bridge", "engine", "silver", "planet", "museum", "ticket",
         "castle", "summer", "parcel", "orange", "rocket", "tunnel", "meadow", "pencil", "violet",
         "anchor", "valley", "copper", "Route", "North", "Main", "Street", "Delta", "Office")
PAGE = 480
LINE_H, LINE_W = 48, 192


@dataclass
class Page:
    image: np.ndarray  # H x W x 3 uint8, RGB
    boxes: List[Tuple[int, int, int, int]]  # ground-truth text-line boxes (x0, y0, x1, y1), clipped


@dataclass
class Line:
    image: np.ndarray  # 48 x 192 x 3 uint8, RGB
    rotated: bool  # True: the text is upside down (class 1 of ppocr_cls)


def _font(rng: np.random.Generator, lo: int, hi: int) -> ImageFont.FreeTypeFont:
    name = FONTS[int(rng.integers(len(FONTS)))]
    try:
        return ImageFont.truetype(name, int(rng.integers(lo, hi + 1)))
    except OSError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError(f"font {name} not found: install Debian's fonts-dejavu-core (make bench-deps)") from e


def _phrase(rng: np.random.Generator, words: int) -> str:
    text = " ".join(WORDS[int(i)] for i in rng.integers(len(WORDS), size=words))
    return text + (f" {int(rng.integers(100, 99999))}" if rng.random() < 0.6 else "")


def _noisy(img: Image.Image, rng: np.random.Generator, sigma: float) -> np.ndarray:
    if rng.random() < 0.3:
        img = img.filter(ImageFilter.GaussianBlur(radius=0.6))
    a = np.asarray(img, dtype=np.float32) + rng.normal(0.0, sigma, size=(img.height, img.width, 3))
    return np.clip(np.rint(a), 0, 255).astype(np.uint8)


def render_page(seed: int) -> Page:
    """A 480x480 page of 7-11 text lines of mixed fonts, sizes and colours on a light background."""
    rng = np.random.default_rng(seed)
    background = tuple(int(v) for v in rng.integers(200, 256, size=3))
    img = Image.new("RGB", (PAGE, PAGE), background)
    draw = ImageDraw.Draw(img)
    boxes: List[Tuple[int, int, int, int]] = []
    y = int(rng.integers(4, 20))
    while y < PAGE - 24:
        font = _font(rng, 14, 34)
        text = _phrase(rng, int(rng.integers(1, 5)))
        x = int(rng.integers(4, 120))
        colour = tuple(int(v) for v in rng.integers(0, 110, size=3))
        draw.text((x, y), text, font=font, fill=colour)
        x0, y0, x1, y1 = draw.textbbox((x, y), text, font=font)
        x1, y1 = min(x1, PAGE - 1), min(y1, PAGE - 1)
        if x1 - x0 > 8 and y1 - y0 > 4:
            boxes.append((x0, y0, x1, y1))
        y = y1 + int(rng.integers(10, 40))
    return Page(_noisy(img, rng, 3.0), boxes)


def render_line(seed: int, rotated: bool) -> Line:
    """One 48x192 text line (dark on light), upright or rotated by 180 degrees."""
    rng = np.random.default_rng(seed)
    background = tuple(int(v) for v in rng.integers(190, 256, size=3))
    img = Image.new("RGB", (LINE_W, LINE_H), background)
    draw = ImageDraw.Draw(img)
    font = _font(rng, 20, 30)
    text = _phrase(rng, int(rng.integers(1, 3)))
    colour = tuple(int(v) for v in rng.integers(0, 90, size=3))
    _, top, _, bottom = draw.textbbox((0, 0), text, font=font)
    draw.text((int(rng.integers(2, 12)), (LINE_H - (bottom - top)) // 2 - top), text, font=font, fill=colour)
    if rotated:
        img = img.rotate(180)
    return Line(_noisy(img, rng, 2.0), rotated)


def save_pages(pages: List[Page], folder) -> List[str]:
    """Writes the pages as PNG files (for a dataset.txt) and returns their paths."""
    paths = []
    for i, p in enumerate(pages):
        path = folder / f"page{i:02d}.png"
        Image.fromarray(p.image).save(path)
        paths.append(str(path))
    return paths
