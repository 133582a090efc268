"""Images in a dataset are checked from their header before they are decoded (issue #15 defect 7):
a small PNG declaring a huge image is refused with an InputError naming the dataset line, the
file, its size and the size the input expects - not decoded (gigabytes) and not left to Pillow's
DecompressionBombError traceback.

The PNGs are written here: IHDR + one IDAT of zlib-compressed all-zero rows of a 1-bit image, so
a 14000x14000 file is ~24 KB and takes ~0.2 s to make."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Tuple

import numpy as np
import onnx
import pytest

import npuc
from conftest import conv_relu_model
from npuc import accuracy
from npuc.dataset import MAX_IMAGE_PIXELS, iterate_samples

MIB = 1 << 20
PACKAGE_PARENT = str(Path(os.path.abspath(npuc.__file__)).parent.parent)
INPUT_8x8 = {"name": "x", "dtype": "float32", "shape": (1, 3, 8, 8)}


def write_blank_png(path: Path, width: int, height: int) -> Path:
    """A 1-bit grayscale PNG of width x height black pixels, compressed row by row."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = bytes(1 + (width + 7) // 8)  # filter byte 0, then the packed bits
    compressor = zlib.compressobj(9)
    data = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # 1 bit, grayscale
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b""))
    return path


def dataset_of(tmp_path: Path, image: Path) -> Path:
    listing = tmp_path / "dataset.txt"
    listing.write_text(f"# calibration\n{image.name}\n")
    return listing


def test_decompression_bomb_past_pillows_limit_is_an_input_error(tmp_path: Path) -> None:
    """14000 x 14000 = 196 M pixels: Pillow itself refuses to open it (over 2x its limit)."""
    listing = dataset_of(tmp_path, write_blank_png(tmp_path / "huge.png", 14000, 14000))
    assert listing.with_name("huge.png").stat().st_size < 200_000
    with pytest.raises(npuc.InputError) as info:
        next(iterate_samples(str(listing), [INPUT_8x8]))
    message = str(info.value)
    assert f"dataset '{listing}' line 2: image '{tmp_path / 'huge.png'}' is refused before decoding" in message
    assert "196000000 pixels" in message
    assert "input 'x' expects 8x8 pixels (float32[1, 3, 8, 8])" in message


def test_oversized_image_is_refused_from_the_header(tmp_path: Path) -> None:
    """10000 x 10000 = 100 M pixels (Pillow only warns): refused for its size, before decoding,
    although a smaller image would be resized to the input."""
    listing = dataset_of(tmp_path, write_blank_png(tmp_path / "big.png", 10000, 10000))
    start = time.monotonic()
    with pytest.raises(npuc.InputError, match=(
            rf"dataset '.*dataset.txt' line 2: image '.*big.png' is 10000x10000 pixels, more than the "
            rf"{MAX_IMAGE_PIXELS} npuc decodes")):
        next(iterate_samples(str(listing), [INPUT_8x8]))
    assert time.monotonic() - start < 1.0  # decoding it takes seconds


@pytest.mark.parametrize("shape", [(1, 3, 8, 6), (1, 8, 6, 3)])
def test_an_image_of_another_size_is_resized_to_the_input(tmp_path: Path, shape: Tuple[int, ...]) -> None:
    """As RKNN-Toolkit2 does (its caffe/mobilenet_v2 example calibrates 224x224 on 299x299 images):
    bilinear to the input's width x height, NCHW or NHWC input."""
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, (11, 13, 3), dtype=np.uint8)
    Image.fromarray(pixels, "RGB").save(tmp_path / "photo.png")
    listing = dataset_of(tmp_path, tmp_path / "photo.png")
    (x,) = next(iterate_samples(str(listing), [{"name": "x", "dtype": "float32", "shape": shape}]))
    want = np.asarray(Image.fromarray(pixels, "RGB").resize((6, 8), Image.BILINEAR), dtype=np.float32)
    assert x.shape == shape
    hwc = x[0] if shape[-1] == 3 else x[0].transpose(1, 2, 0)
    np.testing.assert_array_equal(hwc, want)


def test_an_image_for_an_input_no_rgb_image_fills_is_refused(tmp_path: Path) -> None:
    listing = dataset_of(tmp_path, write_blank_png(tmp_path / "small.png", 10, 10))
    info = {"name": "x", "dtype": "float32", "shape": (1, 4, 8, 8)}
    with pytest.raises(npuc.InputError, match=r"image '.*small.png' is 10x10 pixels, but input 'x' expects "
                       r"float32\[1, 4, 8, 8\], which no RGB image fills"):
        next(iterate_samples(str(listing), [info]))


def test_image_over_the_pixel_cap_is_refused_even_when_the_input_matches(tmp_path: Path) -> None:
    side = 8200  # 67.2 M pixels, just over the cap of 8192 x 8192
    assert side * side > MAX_IMAGE_PIXELS
    listing = dataset_of(tmp_path, write_blank_png(tmp_path / "large.png", side, side))
    info = {"name": "x", "dtype": "float32", "shape": (1, 3, side, side)}
    with pytest.raises(npuc.InputError, match=rf"line 2: image '.*large.png' is {side}x{side} pixels, more than the "
                       rf"{MAX_IMAGE_PIXELS} npuc decodes \(npuc.dataset.MAX_IMAGE_PIXELS\)"):
        next(iterate_samples(str(listing), [info]))


def test_images_of_the_input_size_are_read(tmp_path: Path) -> None:
    from PIL import Image

    pixels = np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3)
    Image.fromarray(pixels, "RGB").save(tmp_path / "ok.png")
    listing = dataset_of(tmp_path, tmp_path / "ok.png")
    (x,) = next(iterate_samples(str(listing), [INPUT_8x8]))
    np.testing.assert_array_equal(x, pixels.transpose(2, 0, 1)[np.newaxis].astype(np.float32))
    (bgr,) = next(iterate_samples(str(listing), [INPUT_8x8], rgb2bgr=True))
    np.testing.assert_array_equal(bgr, x[:, ::-1])


def test_accuracy_analysis_inputs_are_checked_the_same_way(tmp_path: Path) -> None:
    image = write_blank_png(tmp_path / "big.png", 10000, 10000)
    with pytest.raises(npuc.InputError, match=r"accuracy_analysis input 0: image '.*big.png' is 10000x10000 pixels"):
        accuracy.load_inputs([str(image)], [INPUT_8x8], lambda i, a, info: a, rgb2bgr=False)


# Refuses the 10000 x 10000 PNG of argv[1] and prints the growth of the peak RSS in bytes.
MEASURE = r"""
import sys
import npuc
from npuc.dataset import iterate_samples
def peak():  # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) * 1024
info = {"name": "x", "dtype": "float32", "shape": (1, 3, 8, 8)}
base = peak()
try:
    next(iterate_samples(sys.argv[1], [info]))
    raise SystemExit("not refused")
except npuc.InputError:
    pass
print(peak() - base)
"""


def test_refused_images_are_not_decoded(tmp_path: Path) -> None:
    listing = dataset_of(tmp_path, write_blank_png(tmp_path / "big.png", 10000, 10000))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", MEASURE, str(listing)], env=env, check=True, capture_output=True,
                         text=True, timeout=120)
    assert int(out.stdout.strip().splitlines()[-1]) < 64 * MIB, out.stdout  # decoding it takes ~1.5 GB


def test_npuc_convert_exits_1_with_one_line(tmp_path: Path) -> None:
    model = tmp_path / "conv.onnx"
    onnx.save(conv_relu_model(), str(model))
    listing = dataset_of(tmp_path, write_blank_png(tmp_path / "huge.png", 14000, 14000))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PACKAGE_PARENT, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "npuc", "convert", str(model), "-t", "rk3588", "-o",
                        str(tmp_path / "out.npub"), "--quantize", "--dataset", str(listing)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith(f"npuc: error: dataset '{listing}' line 2: image "), lines[0]
