"""Calibration datasets: RKNN-Toolkit2's ``dataset.txt`` or any Python iterable of samples.

``dataset.txt`` holds one calibration sample per line; a model with several inputs lists one file
per input on the line, separated by spaces. Paths are relative to the file's folder. Files are
images (read with Pillow as RGB, optionally converted to BGR with ``quant_img_RGB2BGR``, HWC
transposed to the model's NCHW) or ``.npy`` arrays (NCHW, NHWC, or either without the batch
dimension). Blank lines and lines starting with ``#`` are skipped. The configured mean/std
normalization is applied to every file, as ``inference`` applies it to its inputs.

An image whose size differs from the model input's is resized to it (bilinear, as RKNN-Toolkit2
resizes dataset images: its caffe/mobilenet_v2 example calibrates a 224x224 model on 299x299
images); ``.npy`` arrays are never resized. An image's size is read from the file's header and
checked against the cap :data:`MAX_IMAGE_PIXELS` before the pixels are decoded, so a small file
declaring a huge image (a "decompression bomb") is refused without decoding it.

A Python iterable yields, per sample, one array (single-input model) or a list/tuple of arrays
(one per input). Those arrays are taken as the model's ready inputs (no normalization).

Samples are produced lazily, one at a time: calibration streams them and keeps none.
Errors are :class:`npuc.InputError` naming the line and the problem.

The list and ``.npy`` files are parsed in C++ (``cpp/frontend/dataset_list.h``, ``npy_reader.h``:
fuzzed and sanitized with the core); lines end with ``\n``, ``\r\n`` or ``\r`` and file names are
separated by spaces or tabs. Images are decoded by Pillow here.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from npuc.errors import InputError
from npuc.input_dtype import as_array, coerce_input
from npuc.messages import capped, shown, shown_path

__all__ = ["iterate_samples", "count_samples", "dataset_files", "fitting_layout", "progress", "progress_bar",
           "sample_array"]

#: File extensions read as images (anything else but ``.npy`` is refused by name).
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")

#: Largest image (width x height) npuc decodes: 8192 x 8192. Decoded to float32 RGB it takes 768
#: MiB; a larger file is refused from its header. Below Pillow's own warning threshold (~89 M
#: pixels), so Pillow never warns about an image npuc accepts.
MAX_IMAGE_PIXELS = 8192 * 8192

#: normalize(input_index, array, input_info) -> array, e.g. ``InputPreprocessor.apply``.
Normalizer = Callable[[int, np.ndarray, Dict[str, Any]], np.ndarray]

DatasetLike = Union[str, "os.PathLike[str]", Iterable[Any]]


def iterate_samples(
    dataset: DatasetLike,
    input_infos: Sequence[Dict[str, Any]],
    normalize: Optional[Normalizer] = None,
    rgb2bgr: bool = False,
) -> Iterator[List[np.ndarray]]:
    """Yields one list of arrays (one per model input, in the model's shape and dtype) per sample.

    Args:
        dataset: path of a ``dataset.txt``, or an iterable of arrays / lists of arrays.
        input_infos: the model's inputs as ``{'name', 'dtype', 'shape'}`` dicts.
        normalize: applied to each array read from a ``dataset.txt`` file.
        rgb2bgr: reverse the channel order of images read from a ``dataset.txt``.
    """
    if isinstance(dataset, (str, os.PathLike)):
        yield from _iterate_dataset_file(Path(dataset), input_infos, normalize, rgb2bgr)
        return
    for index, sample in enumerate(dataset):
        where = f"dataset sample {index}"
        if not isinstance(sample, (np.ndarray, list, tuple)):
            raise InputError(f"{where}: expected an array (a one-input model) or a list/tuple of arrays (one per "
                             f"input), got {type(sample).__name__} {shown(sample)}")
        arrays = [sample] if isinstance(sample, np.ndarray) else list(sample)
        if len(arrays) != len(input_infos):
            raise InputError(f"{where}: the model has {len(input_infos)} input(s), the sample has {len(arrays)}")
        yield [sample_array(a, info, where) for a, info in zip(arrays, input_infos)]


def count_samples(dataset: DatasetLike) -> Optional[int]:
    """Number of samples when known without reading them (a file, or a sized collection)."""
    if isinstance(dataset, (str, os.PathLike)):
        return len(_dataset_entries(Path(dataset)))
    return len(dataset) if hasattr(dataset, "__len__") else None  # type: ignore[arg-type]


def dataset_files(dataset: Optional[DatasetLike]) -> List[Tuple[str, str]]:
    """(path, role) of every file a ``dataset.txt`` makes the job read: the list itself, then each
    file it lists (for :class:`npuc.output_files.JobInputs`); empty for an in-memory dataset.

    A list that does not parse yields only itself: reading it reports the problem, with its line.
    """
    if not isinstance(dataset, (str, os.PathLike)):
        return []
    files = [(os.fspath(dataset), "the dataset list")]
    try:
        entries = _dataset_entries(Path(dataset))
    except InputError:
        return files
    name = Path(dataset).name
    for number, _, _, resolved in entries:
        files += [(f, f"a calibration sample listed in {name} line {number}") for f in resolved]
    return files


def progress_bar(total: int, desc: str, unit: str) -> Optional[Any]:
    """A tqdm bar on stderr when it is a terminal (and tqdm is installed), else None."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit)


def progress(iterable: Iterable[Any], total: Optional[int], desc: str) -> Iterable[Any]:
    """Wraps `iterable` in a tqdm progress bar when stderr is a terminal (and tqdm is installed)."""
    if not sys.stderr.isatty():
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=desc, unit="sample")


# ---------------------------------------------------------------------- dataset.txt


def _dataset_entries(path: Path, expected_files: int = 0) -> List[tuple]:
    """(line number, line text, names as written, resolved paths) per sample line (C++ parser)."""
    from npuc._npuc import parse_dataset_list

    return parse_dataset_list(os.fspath(path), expected_files)


def _iterate_dataset_file(
    path: Path, infos: Sequence[Dict[str, Any]], normalize: Optional[Normalizer], rgb2bgr: bool
) -> Iterator[List[np.ndarray]]:
    # The list is parsed (and every line's file count checked) before the first sample is read.
    for number, _, names, files in _dataset_entries(path, len(infos)):
        where = f"dataset {shown_path(path)} line {number}"
        sample = []
        for index, (name, file, info) in enumerate(zip(names, files, infos)):
            array = _read_file(Path(file), where, rgb2bgr, info)
            sample.append(sample_array(array, info, f"{where} ({shown_path(name)})", _bound(normalize, index, info)))
        yield sample


def _bound(normalize: Optional[Normalizer], index: int, info: Dict[str, Any]) -> Optional[Callable[[np.ndarray], Any]]:
    return None if normalize is None else (lambda array: normalize(index, array, info))


def sample_array(
    value: Any, info: Dict[str, Any], where: str, normalize: Optional[Callable[[np.ndarray], Any]] = None
) -> np.ndarray:
    """One calibration (or accuracy-analysis) array for the input `info`, ready to feed.

    Shaped to the input (:func:`_fit_to_input`), checked and converted by the one array-type rule
    (:func:`npuc.input_dtype.coerce_input`), normalized by `normalize`. Refused when it holds NaN
    or +/-Inf as given (the index is in the array as given, e.g. the file's layout) or after
    conversion and normalization (an overflow): a non-finite sample makes the ranges the
    calibrator collects meaningless (an all-NaN sample once built silently, at cosine 0.4).

    Raises:
        InputError: wrong shape, refused array type, or non-finite values (counted, with the
            index of the first), naming `where`.
    """
    array = as_array(value, info, where)
    _require_finite(array, info, where, "")

    def fit_and_normalize(a: np.ndarray) -> Any:
        fitted = _fit_to_input(a, info, where)
        return fitted if normalize is None else normalize(fitted)

    ready = coerce_input(array, info, where, fit_and_normalize)
    _require_finite(ready, info, where, f" after conversion to {ready.dtype}" + (" and mean/std" if normalize else ""))
    return ready


def _require_finite(array: np.ndarray, info: Dict[str, Any], where: str, stage: str) -> None:
    if array.dtype.kind not in "fc":
        return
    bad = ~np.isfinite(array)
    count = int(np.count_nonzero(bad))
    if count:
        first = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), array.shape))
        raise InputError(
            f"{where}: {count} non-finite value(s) (NaN or +/-Inf){stage} in the array for input '{info['name']}' "
            f"{list(array.shape)}, the first at index {list(first)} ({array[first]}); calibration and "
            f"accuracy-analysis samples must be finite"
        )


def _read_file(file: Path, where: str, rgb2bgr: bool, info: Dict[str, Any]) -> np.ndarray:
    """The array in `file` (.npy, or an image as NCHW float32 RGB/BGR with batch 1); an image must
    fit `info` (the model input it is read for), which is checked before it is decoded."""
    if not file.is_file():
        raise InputError(f"{where}: file {shown_path(file)} does not exist")
    suffix = file.suffix.lower()
    if suffix == ".npy":
        from npuc._npuc import read_npy

        try:
            return read_npy(os.fspath(file))
        except InputError as e:
            raise InputError(f"{where}: {e}") from None
    if suffix not in IMAGE_EXTENSIONS:
        raise InputError(f"{where}: {shown_path(file)} is neither an image ({', '.join(IMAGE_EXTENSIONS)}) nor a .npy file")
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise InputError(f"{where}: reading images needs Pillow (pip install pillow)") from None
    try:
        with warnings.catch_warnings():
            # Pillow warns about large images when it opens them; npuc refuses those itself below.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(file) as image:  # lazy: reads the header, decodes nothing yet
                size = _check_image_size(image.size, file, where, info)
                rgb = image.convert("RGB")
                if size != rgb.size:
                    rgb = rgb.resize(size, Image.BILINEAR)
                hwc = np.asarray(rgb, dtype=np.float32)
    except Image.DecompressionBombError as e:  # past Pillow's own limit: refused by open() itself
        raise InputError(f"{where}: image '{file}' is refused before decoding: {e} "
                         f"(input '{info['name']}' expects {_expected_image_text(info)})") from None
    except (OSError, UnidentifiedImageError) as e:
        raise InputError(f"{where}: unreadable image {shown_path(file)} ({capped(str(e), 300)})") from None
    if rgb2bgr:
        hwc = hwc[:, :, ::-1]
    dims = tuple(info["shape"])[-3:]
    if len(dims) == 3 and dims[2] == 3 and dims[0] != 3:  # an NHWC image input keeps HWC
        return np.ascontiguousarray(hwc)[np.newaxis]
    return hwc.transpose(2, 0, 1)[np.newaxis]  # HWC -> NCHW with batch 1


def _check_image_size(size: Tuple[int, int], file: Path, where: str, info: Dict[str, Any]) -> Tuple[int, int]:
    """The (width, height) an image of the header's `size` is read at for input `info`: its own
    when it fits, else the input's (resized, as RKNN-Toolkit2 resizes dataset images). Refuses an
    image larger than MAX_IMAGE_PIXELS, and one for an input no RGB image fills (not 3 channels)."""
    width, height = size
    if width * height > MAX_IMAGE_PIXELS:
        raise InputError(f"{where}: image '{file}' is {width}x{height} pixels, more than the "
                         f"{MAX_IMAGE_PIXELS} npuc decodes (npuc.dataset.MAX_IMAGE_PIXELS)")
    if fitting_layout((1, 3, height, width), tuple(info["shape"])) is not None:
        return width, height
    target = _image_input_size(tuple(info["shape"]))
    if target is None:
        raise InputError(f"{where}: image '{file}' is {width}x{height} pixels, but input '{info['name']}' "
                         f"expects {_expected_image_text(info)}")
    return target


def _image_input_size(shape: Tuple[Any, ...]) -> Optional[Tuple[int, int]]:
    """(width, height) of a 3-channel image input, NCHW or NHWC, with or without batch dim of 1."""
    dims = shape[1:] if len(shape) == 4 and shape[0] == 1 else shape
    if len(dims) != 3 or not all(isinstance(d, int) and d > 0 for d in dims):
        return None
    if dims[0] == 3:
        return dims[2], dims[1]
    if dims[2] == 3:
        return dims[1], dims[0]
    return None


def _expected_image_text(info: Dict[str, Any]) -> str:
    """'224x224 pixels (float32[1, 3, 224, 224])' for an NCHW 3-channel input, else its shape."""
    shape = list(info["shape"])
    described = f"{info.get('dtype', '')}{shape}"
    if len(shape) == 4 and shape[0] == 1 and shape[1] == 3:
        return f"{shape[3]}x{shape[2]} pixels ({described})"
    return f"{described}, which no RGB image fills"


def fitting_layout(shape: Tuple[int, ...], expected: Tuple[int, ...]) -> Optional[Tuple[bool, bool]]:
    """(add a batch dim, transpose NHWC -> NCHW) that brings an array of `shape` to `expected`, or
    None: the one rule _fit_to_input applies and the image header check predicts."""
    for add_batch in (False, True):
        if add_batch and len(shape) != len(expected) - 1:
            continue
        s = (1, *shape) if add_batch else shape
        if s == expected:
            return add_batch, False
        if len(s) == 4 and (s[0], s[3], s[1], s[2]) == expected:
            return add_batch, True
    return None


def _fit_to_input(array: np.ndarray, info: Dict[str, Any], where: str) -> np.ndarray:
    """The array in the input's shape: as is, with a batch dim added, or NHWC -> NCHW."""
    layout = fitting_layout(tuple(array.shape), tuple(info["shape"]))
    if layout is not None:
        add_batch, transpose = layout
        if add_batch:
            array = array[np.newaxis]
        if transpose:
            array = array.transpose(0, 3, 1, 2)
        return np.ascontiguousarray(array)
    raise InputError(
        f"{where}: wrong shape {list(array.shape)} for input '{info['name']}', which expects {list(info['shape'])} "
        f"(NCHW, NHWC, or either without the batch dimension)"
    )
