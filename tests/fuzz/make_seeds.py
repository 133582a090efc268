#!/usr/bin/env python3
"""Writes the seed corpus of a fuzz target into a folder.

    python3 tests/fuzz/make_seeds.py {onnx,blob,dataset} OUT_DIR

For ``onnx`` (fuzz_onnx_import): the bad-input corpus (tests/bad_inputs/make_corpus.py), the
shared real models small enough for the fuzzer's -max_len, and the ONNX backend node-test models
(one small model per op, so mutations start from every op npuc knows).

For ``blob`` (fuzz_blob_load): float (FP16-build) and INT8 blobs of the small generated model and
of the shared models below -max_len, each twice: with mode byte 0 (bytes as they are) and 1
(re-sealed after mutation, see fuzz_blob_load.cc). Needs an importable npuc.

For ``dataset`` (fuzz_dataset_list): dataset.txt texts and .npy files in the input format of
fuzz_dataset_list.cc (a text, a separator line, then .npy bytes).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Optional, Tuple

REPO_ROOT = Path(__file__).resolve().parents[2]
# Seeds above this size are skipped: libFuzzer would truncate them to -max_len (run.sh) anyway.
MAX_SEED_BYTES = 512 * 1024
DEFAULT_ONNX_TESTDATA = Path("/usr/share/libonnx-testdata/data/node")


def load_bad_input_corpus():
    spec = importlib.util.spec_from_file_location("make_corpus", REPO_ROOT / "tests" / "bad_inputs" / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_corpus"] = module
    spec.loader.exec_module(module)
    return module


def shared_models_dir() -> Optional[Path]:
    env = os.environ.get("NPUC_SHARED_MODELS")
    if env:
        return Path(env) if Path(env).is_dir() else None
    for parent in REPO_ROOT.parents:
        if (parent / "shared" / "models").is_dir():
            return parent / "shared" / "models"
    return None


def onnx_node_testdata() -> Optional[Path]:
    """The libonnx-testdata node folder, found through dpkg when installed elsewhere."""
    try:
        listing = subprocess.run(["dpkg", "-L", "libonnx-testdata"], capture_output=True, text=True, check=False).stdout
        for line in listing.splitlines():
            if line.rstrip("/").endswith("/data/node"):
                return Path(line)
    except OSError:
        pass
    return DEFAULT_ONNX_TESTDATA if DEFAULT_ONNX_TESTDATA.is_dir() else None


def small_models(folder: Optional[Path], pattern: str) -> Iterator[Path]:
    if folder is None:
        return
    for path in sorted(folder.glob(pattern)):
        if path.stat().st_size <= MAX_SEED_BYTES:
            yield path


def write_onnx_seeds(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    corpus = load_bad_input_corpus()
    count = len(corpus.write_corpus(out_dir))
    (out_dir / "valid_conv_relu.onnx").write_bytes(corpus.conv_model())
    count += 1
    for path in small_models(shared_models_dir(), "*.onnx"):
        shutil.copyfile(path, out_dir / f"shared_{path.name}")
        count += 1
    for path in small_models(onnx_node_testdata(), "*/model.onnx"):
        shutil.copyfile(path, out_dir / f"node_{path.parent.name}.onnx")
        count += 1
    return count


# Blob seeds come from these shared models: small blobs keep the fuzzer fast (tiny_vit, 460 KB,
# ran at under 10 executions per second).
BLOB_SHARED_MODELS = ("glu_net", "conv_transpose_clip", "yolo_focus")
# Calibration samples for the INT8 seeds: few, since seeds only need a valid plan, not a good one.
BLOB_CALIBRATION_SAMPLES = 2


def _blob_variants(onnx_path: Path, tmp: Path) -> Iterator[Tuple[str, bytes]]:
    """(kind, blob bytes) for a float (FP16 build) and an INT8 build of one model."""
    import numpy as np
    import npuc

    for quantized in (False, True):
        tk = npuc.Toolkit()
        tk.config(target_platform="rk3588")
        tk.load_onnx(str(onnx_path))
        dataset = None
        if quantized:
            rng = np.random.default_rng(0)
            dataset = [
                [rng.standard_normal(i["shape"]).astype(np.float32) for i in tk.model.inputs]
                for _ in range(BLOB_CALIBRATION_SAMPLES)
            ]
        with contextlib.redirect_stdout(io.StringIO()):
            tk.build(do_quantization=quantized, dataset=dataset)
        out = tmp / "seed.npub"
        tk.export_blob(str(out))
        yield ("int8" if quantized else "float"), out.read_bytes()


def write_blob_seeds(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    corpus = load_bad_input_corpus()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sources = {"conv_relu": tmp / "conv_relu.onnx"}
        sources["conv_relu"].write_bytes(corpus.conv_model())
        shared = shared_models_dir()
        for name in BLOB_SHARED_MODELS:
            if shared is not None and (shared / f"{name}.onnx").is_file():
                sources[name] = shared / f"{name}.onnx"
        count = 0
        for name, path in sources.items():
            for kind, blob in _blob_variants(path, tmp):
                if len(blob) + 1 > MAX_SEED_BYTES:
                    continue
                for mode in (0, 1):
                    (out_dir / f"{name}_{kind}_mode{mode}.bin").write_bytes(bytes([mode]) + blob)
                    count += 1
    return count


def write_dataset_seeds(out_dir: Path) -> int:
    """Inputs of fuzz_dataset_list: dataset text, the separator line, then .npy bytes."""
    import numpy as np

    out_dir.mkdir(parents=True, exist_ok=True)
    texts = [
        b"a.npy\n",
        b"# calibration set\n\nimg0.jpg\nsub/img1.png  extra.npy\n",
        b"x0.npy y0.npy\r\nx1.npy y1.npy\r\n",
        b"/abs/path/a.npy\n   \n\t# comment\n../up.npy\n",
    ]
    arrays = [
        np.zeros((1, 3, 4, 4), np.float32),
        np.arange(6, dtype=np.int64).reshape(2, 3),
        np.asfortranarray(np.ones((2, 3), np.float64)),
        np.array(3.5, np.float32),
        np.zeros((0, 4), np.uint8),
        np.ones((5,), ">f4"),
    ]
    npys = []
    for a in arrays:
        buf = io.BytesIO()
        np.save(buf, a)
        npys.append(buf.getvalue())
    # A version 2.0 header (4-byte header length), written by hand: numpy only uses it when needed.
    v1 = npys[0]
    header = v1[10 : 10 + int.from_bytes(v1[8:10], "little")]
    npys.append(b"\x93NUMPY\x02\x00" + len(header).to_bytes(4, "little") + header + v1[10 + len(header) :])
    count = 0
    for i, text in enumerate(texts):
        for j, npy in enumerate(npys):
            if (i + j) % 2:  # not every pair: enough variety without a quadratic corpus
                continue
            (out_dir / f"dataset_{i}_{j}.bin").write_bytes(text + DATASET_SEPARATOR + npy)
            count += 1
    return count


# Separates the dataset text from the .npy bytes in a fuzz_dataset_list input (fuzz_dataset_list.cc).
DATASET_SEPARATOR = b"\n--npy--\n"


# Separates the cfg text from the .weights bytes in a fuzz_darknet_import input (fuzz_darknet_import.cc).
DARKNET_SEPARATOR = b"\xff\x00\xff\x00"


def write_darknet_seeds(out_dir: Path) -> int:
    """Inputs of fuzz_darknet_import: small cfgs with matching random weights (every layer kind the
    frontend builds), and Debian's cfgs shrunk to 32x32 with a header only (their weights exceed
    the input cap; they still drive the parser and planner to the length check)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    from darknet_ref import DARKNET_CFG_DIR, with_input_size, write_random_weights
    from test_darknet_import import ZOO_CFG

    out_dir.mkdir(parents=True, exist_ok=True)
    small = [ZOO_CFG,
             "[net]\nwidth=8\nheight=8\nchannels=3\n\n[convolutional]\nfilters=4\nsize=1\nactivation=mish\n\n"
             "[convolutional]\nfilters=4\nsize=1\nactivation=swish\n\n[route]\nlayers=-1,-2\ngroups=2\ngroup_id=1\n\n"
             "[convolutional]\nfilters=6\nsize=1\nactivation=linear\n\n[yolo]\nmask=0\nclasses=1\n"]
    count = 0
    tmp = out_dir / "weights.tmp"
    for i, cfg in enumerate(small):
        for header in ((0, 2, 0), (0, 1, 0)):
            write_random_weights(cfg, tmp, seed=i, header=header)
            (out_dir / f"small_{i}_{header[1]}.bin").write_bytes(cfg.encode() + DARKNET_SEPARATOR + tmp.read_bytes())
            count += 1
    tmp.unlink()
    for cfg in sorted(DARKNET_CFG_DIR.glob("*.cfg")) if DARKNET_CFG_DIR.is_dir() else []:
        text = with_input_size(cfg.read_text(), 32, 32).encode()
        (out_dir / f"debian_{cfg.stem}.bin").write_bytes(text + DARKNET_SEPARATOR + bytes(20))
        count += 1


# Separates the prototxt from the caffemodel in a fuzz_caffe_import input (fuzz_caffe_import.cc).
CAFFE_SEPARATOR = b"\n--caffemodel--\n"


def write_caffe_seeds(out_dir: Path) -> int:
    """Inputs of fuzz_caffe_import: the test nets of tests/python/caffe_nets.py (small sizes), with
    and without their caffemodel, and each input form."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    import tempfile

    from caffe_nets import caffe_pb2, deconv_reshape_net, mobilenet_like

    out_dir.mkdir(parents=True, exist_ok=True)
    count = 0
    with tempfile.TemporaryDirectory() as tmp:
        pb2 = caffe_pb2(Path(tmp))
        nets = [mobilenet_like(hw=16, input_form=f) for f in ("layer", "input_shape", "input_dim")]
        nets.append(deconv_reshape_net())
        for i, net in enumerate(nets):
            text = net.prototxt().encode()
            (out_dir / f"caffe_{i}.bin").write_bytes(text + CAFFE_SEPARATOR + net.caffemodel(pb2))
            (out_dir / f"caffe_{i}_noweights.bin").write_bytes(text)
            count += 2
    return count


def write_tflite_seeds(out_dir: Path) -> int:
    """Inputs of fuzz_tflite_import: MediaPipe's two small trained models (float16 weights behind
    DEQUANTIZE, the custom transposed conv; the third is over the input cap) when npm installed
    them, single-op float and int8 models written with tests/python/tflite_reference.py, and a
    truncated copy of each."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    import numpy as np
    import tflite_reference as ref

    out_dir.mkdir(parents=True, exist_ok=True)
    seeds = {}
    for name in ("face_detection_short_range", "selfie_segmentation"):
        try:
            seeds[name] = Path(ref.mediapipe_model(name)).read_bytes()
        except FileNotFoundError:
            pass
    if ref.flatbuffers is not None:
        rng = np.random.default_rng(0)
        b = ref.GraphBuilder()
        x = b.tensor("x", [1, 6, 6, 3])
        w = b.tensor("w", [4, 3, 3, 3], data=rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
        bias = b.tensor("b", [4], data=np.zeros(4, np.float32))
        y = b.tensor("y", [1, 3, 3, 4])
        b.op("CONV_2D", [x, w, bias], [y], "Conv2DOptions", padding=0, stride_w=2, stride_h=2, fused_activation_function=3)
        z = b.tensor("z", [1, 36])
        b.op("RESHAPE", [y], [z], "ReshapeOptions", new_shape=np.asarray([1, 36], "<i4"))
        seeds["conv_reshape"] = ref.model_bytes(b.finish([x], [z]))
        q = ref.GraphBuilder()
        qi = q.tensor("x", [1, 4, 4, 2], ref.INT8, quant=ref._quant([0.05], [3]))
        qw = q.tensor("w", [1, 3, 3, 2], ref.INT8, data=rng.integers(-127, 128, (1, 3, 3, 2)).astype(np.int8),
                      quant=ref._quant([0.01, 0.02], [0, 0], 3))
        qo = q.tensor("y", [1, 4, 4, 2], ref.INT8, quant=ref._quant([0.1], [-5]))
        q.op("DEPTHWISE_CONV_2D", [qi, qw, -1], [qo], "DepthwiseConv2DOptions", padding=0, stride_w=1, stride_h=1,
             depth_multiplier=1)
        seeds["int8_depthwise"] = ref.model_bytes(q.finish([qi], [qo]))
    count = 0
    for name, data in seeds.items():
        (out_dir / f"{name}.tflite").write_bytes(data)
        (out_dir / f"{name}_truncated.tflite").write_bytes(data[: len(data) // 2])
        count += 2
    return count


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["onnx", "blob", "dataset", "darknet", "caffe", "tflite"])
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    writers = {"onnx": write_onnx_seeds, "blob": write_blob_seeds, "dataset": write_dataset_seeds,
               "darknet": write_darknet_seeds, "caffe": write_caffe_seeds, "tflite": write_tflite_seeds}
    count = writers[args.kind](args.out_dir)
    print(f"wrote {count} {args.kind} seeds to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
