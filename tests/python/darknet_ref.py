"""Darknet test helpers: random ``.weights`` files in darknet's format, and darknet's own outputs.

* :func:`write_random_weights` walks a ``.cfg`` with its own small size tracker (independent of
  npuc's planner, so a layout mistake in either shows up as a load error or a mismatch) and writes
  the header and every layer's parameters in darknet's order, with sane statistics: positive
  variances, He-scaled weights, so activations neither vanish nor explode through 75 layers.
* :class:`DarknetLib` runs Debian's libdarknet (package ``darknet``) through a tiny C shim
  (``darknet_ref_shim.c``, compiled on first use) and returns raw layer outputs.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

DARKNET_CFG_DIR = Path("/usr/share/darknet/cfg")
DARKNET_INCLUDE = Path("/usr/lib/darknet/include")
DARKNET_LIB = Path("/usr/lib/darknet/libdarknet.so")
SHIM_SOURCE = Path(__file__).with_name("darknet_ref_shim.c")


def parse_cfg(text: str) -> List[Tuple[str, Dict[str, str]]]:
    sections: List[Tuple[str, Dict[str, str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            sections.append((line[1:-1].strip(), {}))
        else:
            key, value = line.split("=", 1)
            sections[-1][1][key.strip()] = value.strip()
    return sections


def with_input_size(cfg_text: str, width: int, height: int) -> str:
    """The cfg with [net] width/height replaced (darknet sizes every layer from them)."""
    out, in_net = [], False
    for line in cfg_text.splitlines():
        s = line.strip()
        if s.startswith("["):
            in_net = s in ("[net]", "[network]")
        if in_net and s.replace(" ", "").startswith("width="):
            line = f"width={width}"
        elif in_net and s.replace(" ", "").startswith("height="):
            line = f"height={height}"
        out.append(line)
    return "\n".join(out) + "\n"


def layer_arrays(cfg_text: str) -> Tuple[List[List[Tuple[str, int]]], List[Tuple[str, Tuple[int, int, int]]]]:
    """Per layer, the arrays it reads from .weights in file order ((role, count) pairs), and per
    layer its type and output (C, H, W)."""
    sections = parse_cfg(cfg_text)
    net = sections[0][1]
    c, h, w = int(net["channels"]), int(net["height"]), int(net["width"])
    dims: List[Tuple[int, int, int]] = []
    arrays: List[List[Tuple[str, int]]] = []
    types: List[Tuple[str, Tuple[int, int, int]]] = []
    for i, (kind, o) in enumerate(sections[1:]):
        get = lambda k, d: int(o.get(k, d))  # noqa: E731
        a: List[Tuple[str, int]] = []
        if kind in ("convolutional", "conv"):
            n, k, s, g = get("filters", 1), get("size", 1), get("stride", 1), get("groups", 1)
            p = k // 2 if get("pad", 0) else get("padding", 0)
            bn = get("batch_normalize", 0)
            a = [("bias", n)] + ([("gamma", n), ("mean", n), ("var", n)] if bn else []) + [(f"w{c // g * k * k}", n * c // g * k * k)]
            c, h, w = n, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        elif kind in ("connected", "conn"):
            n, bn = get("output", 1), get("batch_normalize", 0)
            a = [("bias", n), (f"w{c * h * w}", n * c * h * w)] + ([("gamma", n), ("mean", n), ("var", n)] if bn else [])
            c, h, w = n, 1, 1
        elif kind in ("maxpool", "max"):
            s = get("stride", 1)
            k = get("size", s)
            p = get("padding", k - 1)
            h, w = (h + p - k) // s + 1, (w + p - k) // s + 1
        elif kind in ("avgpool", "avg"):
            h, w = 1, 1
        elif kind == "upsample":
            s = get("stride", 2)
            h, w = h * s, w * s
        elif kind == "reorg":
            s = get("stride", 1)
            c, h, w = c * s * s, h // s, w // s
        elif kind == "route":
            refs = [int(x) for x in o["layers"].split(",")]
            srcs = [dims[r if r >= 0 else i + r] for r in refs]
            groups = get("groups", 1)
            c, h, w = sum(d[0] // groups for d in srcs), srcs[0][1], srcs[0][2]
        dims.append((c, h, w))
        arrays.append(a)
        types.append((kind, (c, h, w)))
    return arrays, types


def write_random_weights(cfg_text: str, path: Path, seed: int = 0, header: Tuple[int, int, int] = (0, 2, 5)) -> int:
    """Writes random weights for the cfg in darknet's format; returns the number of floats."""
    rng = np.random.default_rng(seed)
    arrays, _ = layer_arrays(cfg_text)
    parts = []
    for layer in arrays:
        for role, n in layer:
            if role == "bias":
                v = rng.uniform(-0.1, 0.1, n)
            elif role == "gamma":
                v = rng.uniform(0.5, 1.5, n)
            elif role == "mean":
                v = rng.uniform(-0.2, 0.2, n)
            elif role == "var":
                v = rng.uniform(0.5, 2.0, n)
            else:  # weights, He-scaled by their fan-in
                fan_in = int(role[1:])
                v = rng.standard_normal(n) * np.sqrt(2.0 / fan_in)
            parts.append(v.astype("<f4"))
    data = np.concatenate(parts) if parts else np.zeros(0, "<f4")
    major, minor, revision = header
    seen64 = major * 10 + minor >= 2 and major < 1000 and minor < 1000
    with open(path, "wb") as f:
        f.write(np.array([major, minor, revision], "<i4").tobytes())
        f.write(np.array([0], "<i8" if seen64 else "<i4").tobytes())
        f.write(data.tobytes())
    return int(data.size)


def darknet_available() -> bool:
    return DARKNET_LIB.is_file() and (DARKNET_INCLUDE / "darknet.h").is_file() and shutil.which("cc") is not None


class DarknetLib:
    """Debian's libdarknet through the shim: load a network, run one image, read layer outputs."""

    def __init__(self, build_dir: Path):
        so = build_dir / "darknet_ref_shim.so"
        if not so.exists():
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-I{DARKNET_INCLUDE}", str(SHIM_SOURCE),
                            f"-L{DARKNET_LIB.parent}", "-ldarknet", f"-Wl,-rpath,{DARKNET_LIB.parent}", "-o", str(so)],
                           check=True)
        lib = ctypes.CDLL(str(so))
        lib.dn_load.restype = ctypes.c_void_p
        lib.dn_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        for name in ("dn_num_layers", "dn_layer_outputs"):
            getattr(lib, name).restype = ctypes.c_int
        lib.dn_num_layers.argtypes = [ctypes.c_void_p]
        lib.dn_layer_outputs.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.dn_predict.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.dn_layer_output.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        lib.dn_free.argtypes = [ctypes.c_void_p]
        self._lib = lib

    def run(self, cfg: Path, weights: Path, image_chw: np.ndarray, layers: List[int]) -> List[np.ndarray]:
        """Outputs of `layers` (darknet indices) for one CHW float image, flat."""
        lib = self._lib
        net = lib.dn_load(os.fsencode(cfg), os.fsencode(weights))
        try:
            x = np.ascontiguousarray(image_chw, np.float32)
            lib.dn_predict(net, x.ctypes.data)
            outs = []
            for i in layers:
                buf = np.empty(lib.dn_layer_outputs(net, i), np.float32)
                lib.dn_layer_output(net, i, buf.ctypes.data)
                outs.append(buf)
            return outs
        finally:
            lib.dn_free(net)


def reference_layers(cfg_text: str) -> List[int]:
    """The darknet layers whose outputs npuc's graph outputs are, in npuc's output order: the input
    of every [yolo]/[region]/[detection] layer, then the last non-[cost] layer if not one of those."""
    _, types = layer_arrays(cfg_text)
    out: List[int] = []
    for i, (kind, _) in enumerate(types):
        if kind in ("yolo", "region", "detection") and i - 1 not in out:
            out.append(i - 1)
    last = max(i for i, (kind, _) in enumerate(types) if kind != "cost")
    if types[last][0] not in ("yolo", "region", "detection"):
        out.append(last)
    return out


TINY_CFG = "[net]\nwidth=8\nheight=8\nchannels=3\n\n[convolutional]\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n"


def write_tiny(folder: Path) -> Tuple[Path, Path]:
    """A one-conv 8x8 Darknet model with random weights in `folder`: (cfg, weights). For tests of
    what a fixed-shape loader refuses."""
    cfg, weights = folder / "tiny.cfg", folder / "tiny.weights"
    cfg.write_text(TINY_CFG)
    write_random_weights(TINY_CFG, weights)
    return cfg, weights
