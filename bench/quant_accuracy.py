"""INT8 quantization quality: npuc vs PyTorch FX post-training quantization (issue #5).

For mobilenet_v2, shufflenet_v2_x0_5, resnet18 (torchvision, random weights) and tiny_vit (a small
ViT defined here, mirroring shared/models/tiny_vit.onnx), each built seeded with BatchNorm
statistics re-estimated on the synthetic distribution below:

* one in-memory torch module is exported to ONNX (npuc's input) *and* handed to PyTorch FX PTQ;
* both quantizers calibrate on the same CALIB_SAMPLES images and are evaluated on EVAL_SAMPLES
  others; the metric is the output cosine INT8 vs the FP32 torch module, per sample, averaged;
* npuc: the graph optimized as ``Toolkit.build`` does (``optimize`` at level 3), one calibration
  pass, then every algorithm (normal, kl_divergence, mmse, percentile) x method (channel, layer);
* PyTorch: fbgemm engine, ``get_default_qconfig_mapping('fbgemm')`` (HistogramObserver
  activations with reduce_range=True, i.e. 7-bit, and per-channel symmetric int8 weights), the
  same mapping with 8-bit activations (reduce_range=False, the same activation bits as ours), and
  that mapping with MinMaxObserver activations;
* pairing: npuc's ``normal`` (min/max) is judged against torch's MinMaxObserver configuration,
  every other algorithm against the better HistogramObserver one; each difference is printed with
  the standard error of the per-sample differences, and ``normal`` is also shown against the best;
* two bounds, FP32 with only some values rounded: the model input alone, and (CNNs) the input of
  every Conv/Linear, with one int8 grid per channel (finer than any per-tensor int8 scheme).

Then the wall time of calibrating mobilenet_v2 on 100 samples plus building the plan.

Synthetic distribution: each image is a smooth random field, the sum of Gaussian noise octaves on
4x4, 8x8, 16x16 and 32x32 grids (amplitude halving per octave) bilinearly upsampled to the input
size, squashed into [0, 1] with a logistic per image, then normalized with the ImageNet mean/std.
It has the low-frequency structure and bounded range of natural images, unlike white noise.

Run: ``cd bench && /usr/bin/python3 quant_accuracy.py`` (``--models``, ``--skip-timing``).
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Sequence

import numpy as np

from common import CACHE, median

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from export_torchvision import BN_BATCH_SIZE, build_torchvision, export_module, reestimate_batchnorm  # noqa: E402

#: Batches of BN_BATCH_SIZE synthetic images that BatchNorm statistics are re-estimated on.
BN_BATCHES = 8

CALIB_SAMPLES = 32
EVAL_SAMPLES = 64
TIMING_SAMPLES = 100
ALGORITHMS = ("normal", "kl_divergence", "mmse", "percentile")
METHODS = ("channel", "layer")
CNNS = ("mobilenet_v2", "shufflenet_v2_x0_5", "resnet18")
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
#: Seeds of the disjoint sample sets (BatchNorm re-estimation, calibration, evaluation, timing).
SEED_BN, SEED_CALIB, SEED_EVAL, SEED_TIMING = 100, 200, 300, 400
OCTAVE_GRIDS = (4, 8, 16, 32)


def synthetic_images(count: int, size: int, seed: int) -> np.ndarray:
    """`count` x 3 x size x size float32 images of the fixed synthetic distribution (module doc)."""
    gen = torch.Generator().manual_seed(seed)
    field = torch.zeros(count, 3, size, size)
    for octave, grid in enumerate(OCTAVE_GRIDS):
        noise = torch.randn(count, 3, grid, grid, generator=gen) * (0.5 ** octave)
        field += F.interpolate(noise, size=(size, size), mode="bilinear", align_corners=False)
    # Logistic squashing per image: contrast varies across images like real photos.
    std = field.flatten(1).std(dim=1).view(count, 1, 1, 1)
    pixels = torch.sigmoid(2.0 * field / std)
    mean = torch.from_numpy(IMAGENET_MEAN).view(1, 3, 1, 1)
    scale = torch.from_numpy(IMAGENET_STD).view(1, 3, 1, 1)
    return ((pixels - mean) / scale).numpy().astype(np.float32)


class Attention(nn.Module):
    """Multi-head self-attention written out (qkv Linear, scaled QK^T, softmax, out Linear).
    Shapes are fixed at construction so torch.fx can trace it."""

    def __init__(self, dim: int, heads: int, tokens: int) -> None:
        super().__init__()
        self.dim, self.tokens, self.heads, self.head_dim = dim, tokens, heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qkv = self.qkv(x).reshape(-1, self.tokens, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / (self.head_dim ** 0.5), dim=-1)
        return self.proj(torch.matmul(attn, v).transpose(1, 2).reshape(-1, self.tokens, self.dim))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln1(x)), then x + mlp(ln2(x)) with a GELU MLP."""

    def __init__(self, dim: int, heads: int, tokens: int, mlp_ratio: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, tokens)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyViT(nn.Module):
    """The shape of shared/models/tiny_vit.onnx: 1x3x64x64 -> 8x8 patches of 64 channels, two
    blocks of 4 heads and a 4x MLP, final LayerNorm, mean over tokens, 10-class head."""

    def __init__(self, size: int = 64, dim: int = 64, patch: int = 8, depth: int = 2, heads: int = 4,
                 classes: int = 10) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        tokens = (size // patch) ** 2
        self.blocks = nn.Sequential(*[Block(dim, heads, tokens, 4) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = self.norm(self.blocks(x))
        return self.head(x.mean(dim=1))


@dataclass
class Bench:
    name: str
    input_size: int
    build: Callable[[Callable[[int], torch.Tensor]], nn.Module]


def _torchvision(arch: str) -> Callable[[Callable[[int], torch.Tensor]], nn.Module]:
    return lambda make_batch: build_torchvision(arch, (1, 3, 224, 224), seed=0, make_batch=make_batch,
                                                batches=BN_BATCHES, exact=True)


def _tiny_vit(make_batch: Callable[[int], torch.Tensor]) -> nn.Module:
    torch.manual_seed(0)
    return reestimate_batchnorm(TinyViT(), make_batch, BN_BATCHES, exact=True)  # no BatchNorm: sets eval


BENCHES = {
    "mobilenet_v2": Bench("mobilenet_v2", 224, _torchvision("mobilenet_v2")),
    "shufflenet_v2_x0_5": Bench("shufflenet_v2_x0_5", 224, _torchvision("shufflenet_v2_x0_5")),
    "resnet18": Bench("resnet18", 224, _torchvision("resnet18")),
    "tiny_vit": Bench("tiny_vit", 64, _tiny_vit),
}


def cosine_rows(reference: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row (sample) of two [N, ...] arrays."""
    r = reference.reshape(len(reference), -1).astype(np.float64)
    t = test.reshape(len(test), -1).astype(np.float64)
    denom = np.linalg.norm(r, axis=1) * np.linalg.norm(t, axis=1)
    return np.where(denom > 0, (r * t).sum(axis=1) / np.maximum(denom, 1e-300), 1.0)


@dataclass
class Score:
    """Agreement of INT8 outputs with FP32 over the evaluation samples."""

    cosine: float  # mean over samples of the output cosine (the metric)
    top1: float  # % of samples whose arg-max class equals FP32's
    per_sample: np.ndarray  # the output cosine of each evaluation sample

    @staticmethod
    def of(reference: np.ndarray, test: np.ndarray) -> "Score":
        agree = float((reference.reshape(len(reference), -1).argmax(1) ==
                       test.reshape(len(test), -1).argmax(1)).mean() * 100.0)
        rows = cosine_rows(reference, test)
        return Score(float(rows.mean()), agree, rows)

    def minus(self, other: "Score") -> str:
        """`self - other` in mean cosine, with the standard error of the paired per-sample
        differences (both scores are over the same samples)."""
        diff = self.per_sample - other.per_sample
        return f"{diff.mean():+.5f} ± {diff.std(ddof=1) / np.sqrt(len(diff)):.5f}"

    def __str__(self) -> str:
        return f"{self.cosine:.5f} ({self.top1:.0f}%)"


def round_input_to_int8(images: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """`images` quantized and dequantized with npuc's asymmetric int8 grid for [lo, hi] (zero
    exact, docs/quantization.md section 1): the error every INT8 model starts from."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0
    zero = np.clip(np.round(-128.0 - lo / scale), -128, 127)
    q = np.clip(np.round(images / scale) + zero, -128, 127)
    return ((q - zero) * scale).astype(np.float32)


def activation_rounding_bound(model: nn.Module, calib: np.ndarray, evals: np.ndarray) -> np.ndarray:
    """FP32 outputs of `model` on `evals` when only the inputs of its Conv2d / Linear layers are
    rounded to int8, each *channel* on its own asymmetric grid spanning that channel's calibrated
    min/max (weights and every other op stay FP32). A per-channel grid is finer than the
    per-tensor one an int8 NPU has, so this approximates the best any 8-bit rounding of the
    activations can do: on random-weight networks the rounding error itself, amplified layer
    after layer, limits every INT8 quantizer (the bench's 0.99 CNN target was set against it)."""
    layers = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    lo: Dict[nn.Module, torch.Tensor] = {}
    hi: Dict[nn.Module, torch.Tensor] = {}

    def channel_axis(layer: nn.Module, x: torch.Tensor) -> int:
        return 1 if isinstance(layer, nn.Conv2d) else x.dim() - 1

    def observe(layer: nn.Module, args: tuple) -> None:
        x = args[0]
        axis = channel_axis(layer, x)
        dims = [d for d in range(x.dim()) if d != axis]
        lo[layer] = torch.minimum(lo.get(layer, torch.zeros(())), x.amin(dim=dims))
        hi[layer] = torch.maximum(hi.get(layer, torch.zeros(())), x.amax(dim=dims))

    def round_input(layer: nn.Module, args: tuple) -> tuple:
        x = args[0]
        shape = [1] * x.dim()
        shape[channel_axis(layer, x)] = -1
        low, high = lo[layer].view(shape), hi[layer].view(shape)
        scale = torch.clamp((high - low) / 255.0, min=1e-12)
        zero = torch.round(-128.0 - low / scale)
        q = torch.clamp(torch.round(x / scale) + zero, -128, 127)
        return ((q - zero) * scale,) + tuple(args[1:])

    handles = [layer.register_forward_pre_hook(observe) for layer in layers]
    try:
        torch_outputs(model, calib)
    finally:
        for h in handles:
            h.remove()
    handles = [layer.register_forward_pre_hook(round_input) for layer in layers]
    try:
        return torch_outputs(model, evals)
    finally:
        for h in handles:
            h.remove()


def torch_outputs(model: nn.Module, images: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return np.concatenate([model(torch.from_numpy(images[i:i + 1])).numpy() for i in range(len(images))])


def quantized_engine(preferred: str) -> str:
    """`preferred` if this torch build has it, else x86's other engine: Debian's torch is built
    without fbgemm, and onednn runs the same x86 int8 arithmetic (no 16-bit saturation)."""
    engines = torch.backends.quantized.supported_engines
    return preferred if preferred in engines else "onednn"


def _traceable_channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    """torchvision's channel_shuffle without unpacking x.size(), which torch.fx cannot trace."""
    return x.unflatten(1, (groups, -1)).transpose(1, 2).flatten(1, 2)


def _traceable_inverted_residual(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """torchvision's ShuffleNet InvertedResidual.forward, indexing the chunks instead of
    unpacking them (torch.fx cannot iterate a traced value); same arithmetic."""
    if self.stride == 1:
        halves = x.chunk(2, dim=1)
        out = torch.cat((halves[0], self.branch2(halves[1])), dim=1)
    else:
        out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
    return _traceable_channel_shuffle(out, 2)


@contextlib.contextmanager
def fx_traceable_torchvision() -> Iterator[None]:
    """Swaps in the traceable ShuffleNet block forward while torch.fx traces."""
    import torchvision.models.shufflenetv2 as shufflenet

    original = shufflenet.InvertedResidual.forward
    shufflenet.InvertedResidual.forward = _traceable_inverted_residual
    try:
        yield
    finally:
        shufflenet.InvertedResidual.forward = original


def minmax_qconfig_mapping() -> Any:
    """``get_default_qconfig_mapping('onednn')`` with MinMaxObserver (8-bit, per tensor affine)
    in place of its HistogramObserver: PyTorch's own min/max calibration, the like-for-like peer
    of npuc's ``normal`` (weights stay per-channel symmetric min/max)."""
    from torch.ao.quantization import QConfig, MinMaxObserver, get_default_qconfig_mapping

    mapping = get_default_qconfig_mapping("onednn")
    histogram = mapping.global_qconfig
    minmax = MinMaxObserver.with_args(dtype=torch.quint8, reduce_range=False)
    mapping.set_global(QConfig(activation=minmax, weight=histogram.weight))
    for key, qconfig in list(mapping.object_type_qconfigs.items()):
        if qconfig is not None and qconfig.activation is histogram.activation:
            mapping.object_type_qconfigs[key] = QConfig(activation=minmax, weight=qconfig.weight)
    return mapping


def torch_fx_ptq(model: nn.Module, calib: np.ndarray, mapping_name: str) -> nn.Module:
    """PyTorch FX PTQ with the qconfig mapping `mapping_name` (a key of TORCH_MAPPINGS),
    calibrated on `calib`."""
    import copy

    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    engine, make_mapping = TORCH_MAPPINGS[mapping_name]
    torch.backends.quantized.engine = quantized_engine(engine)
    example = (torch.from_numpy(calib[:1]),)
    with fx_traceable_torchvision():
        prepared = prepare_fx(copy.deepcopy(model).eval(), make_mapping(), example_inputs=example)
    with torch.no_grad():
        for i in range(len(calib)):
            prepared(torch.from_numpy(calib[i:i + 1]))
    return convert_fx(prepared)


def _default_mapping(name: str) -> Callable[[], Any]:
    def make() -> Any:
        from torch.ao.quantization import get_default_qconfig_mapping

        return get_default_qconfig_mapping(name)

    return make


#: qconfig mapping name -> (quantized engine preferred, mapping factory).
TORCH_MAPPINGS: Dict[str, tuple] = {
    "fbgemm": ("fbgemm", _default_mapping("fbgemm")),
    "onednn": ("onednn", _default_mapping("onednn")),
    "minmax": ("onednn", minmax_qconfig_mapping),
}
#: Report label -> qconfig mapping name.
TORCH_QCONFIGS = {
    "torch FX fbgemm qconfig (7-bit act)": "fbgemm",
    "torch FX onednn qconfig (8-bit act)": "onednn",
    "torch FX onednn qconfig, MinMaxObserver act": "minmax",
}
#: The torch configurations calibrating activations with a histogram search, the peers of
#: npuc's searching algorithms (kl_divergence, mmse, percentile); `normal` is min/max and is
#: paired with torch's min/max observer (and still shown against the best torch result).
TORCH_HISTOGRAM_LABELS = tuple(label for label, name in TORCH_QCONFIGS.items() if name != "minmax")
TORCH_MINMAX_LABEL = "torch FX onednn qconfig, MinMaxObserver act"
TORCH_QCONFIG_TEXT = (
    "torch FX PTQ (prepare_fx / 32 calibration forwards / convert_fx): "
    "get_default_qconfig_mapping('fbgemm') = activation HistogramObserver(reduce_range=True: 7-bit "
    "quint8, per-tensor affine), weight PerChannelMinMaxObserver(qint8, per_channel_symmetric); "
    "get_default_qconfig_mapping('onednn') = the same with HistogramObserver(reduce_range=False: "
    "8-bit, like ours); 'MinMaxObserver act' = the onednn mapping with MinMaxObserver (8-bit) "
    "activations. Executed on the quantized engine "
    f"'{quantized_engine('fbgemm')}' (supported here: {', '.join(torch.backends.quantized.supported_engines)})")


def npuc_results(onnx_path: Path, calib: np.ndarray, evals: np.ndarray, reference: np.ndarray,
                 algorithms: Sequence[str]) -> Dict[str, Dict[str, Score]]:
    """Score per algorithm and method (one calibration pass for all of them)."""
    import npuc
    from npuc._npuc import Calibrator

    optimized, _ = npuc.optimize(npuc.Model.load(str(onnx_path)), 3, [], "")
    calibrator = Calibrator(optimized)
    for i in range(len(calib)):
        calibrator.add_sample([calib[i:i + 1]])
    results: Dict[str, Dict[str, Score]] = {}
    for algorithm in algorithms:
        for method in METHODS:
            q = calibrator.quantize(algorithm, method)
            out = np.concatenate([q.run([evals[i:i + 1]])[0] for i in range(len(evals))])
            results.setdefault(algorithm, {})[method] = Score.of(reference, out)
    return results


#: (quantized_dtype, quantized_method) of the --dtypes table (issue #17), algorithm normal.
DTYPES = (("w8a8", "channel"), ("w8a16", "channel"), ("w16a16i", "channel"), ("w16a16i_dfp", "channel"),
          ("w4a16", "group32"), ("w4a16", "group128"), ("w4a16", "group256"))


def dtype_scores(name: str) -> Dict[str, Score]:
    """Score of every quantized dtype on `name` (one calibration pass; algorithm normal)."""
    import npuc
    from npuc._npuc import Calibrator

    size = BENCHES[name].input_size
    model, onnx_path = build_and_export(name)
    calib = synthetic_images(CALIB_SAMPLES, size, SEED_CALIB)
    evals = synthetic_images(EVAL_SAMPLES, size, SEED_EVAL)
    reference = torch_outputs(model, evals)
    optimized, _ = npuc.optimize(npuc.Model.load(str(onnx_path)), 3, [], "")
    calibrator = Calibrator(optimized)
    for i in range(len(calib)):
        calibrator.add_sample([calib[i:i + 1]])
    scores: Dict[str, Score] = {}
    for dtype, method in DTYPES:
        q = calibrator.quantize("normal", method, [], False, dtype)
        out = np.concatenate([q.run([evals[i:i + 1]])[0] for i in range(len(evals))])
        scores[f"{dtype} {method}" if dtype == "w4a16" else dtype] = Score.of(reference, out)
    return scores


def dtype_table(models: Sequence[str]) -> None:
    """--dtypes: mean output cosine (and top-1 agreement) per model and dtype, and the issue's targets."""
    labels = [f"{d} {m}" if d == "w4a16" else d for d, m in DTYPES]
    print("\n| model | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    all_scores = {}
    for name in models:
        t0 = time.perf_counter()
        scores = dtype_scores(name)
        all_scores[name] = scores
        print(f"| {name} | " + " | ".join(str(scores[k]) for k in labels) + f" |  ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    print("\ntargets:")
    for name, sc in all_scores.items():
        print(f"  {name}: w8a16 >= w8a8: {sc['w8a16'].cosine:.5f} vs {sc['w8a8'].cosine:.5f} "
              f"({'met' if sc['w8a16'].cosine >= sc['w8a8'].cosine else 'MISSED'}); w16a16i >= 0.9999: "
              f"{sc['w16a16i'].cosine:.6f} ({'met' if sc['w16a16i'].cosine >= 0.9999 else 'MISSED'})")
    if "tiny_vit" in all_scores:
        sc = all_scores["tiny_vit"]
        gap = sc["w8a16"].cosine - sc["w4a16 group128"].cosine
        print(f"  tiny_vit: w4a16 group128 within 0.005 of w8a16: gap {gap:.5f} ({'met' if gap <= 0.005 else 'MISSED'})")


def float_ops_of(quantized: Any) -> List[str]:
    """Ops PyTorch left in float after convert_fx: float modules among the layer kinds we care
    about, plus float softmax calls in the generated code."""
    kinds = set()
    for m in quantized.modules():
        kind = type(m).__name__
        if not type(m).__module__.startswith("torch.ao.nn.quantized") and kind in (
                "LayerNorm", "GELU", "Softmax", "Linear", "Conv2d"):
            kinds.add(kind)
    if "torch.softmax(" in quantized.code:
        kinds.add("softmax")
    return sorted(kinds)


def build_and_export(name: str) -> tuple[nn.Module, Path]:
    """The seeded torch module of `name` (BatchNorm re-estimated on synthetic images) and its
    ONNX export in bench/.cache (rewritten every run: the file is exactly this module)."""
    bench = BENCHES[name]
    size = bench.input_size
    bn_images = synthetic_images(BN_BATCHES * BN_BATCH_SIZE, size, SEED_BN)
    model = bench.build(lambda i: torch.from_numpy(bn_images[i * BN_BATCH_SIZE:(i + 1) * BN_BATCH_SIZE]))
    return model, export_module(model, CACHE / f"qbench_{name}.onnx", (1, 3, size, size))


def run_model(name: str, algorithms: Sequence[str]) -> Dict[str, Any]:
    size = BENCHES[name].input_size
    model, onnx_path = build_and_export(name)
    calib = synthetic_images(CALIB_SAMPLES, size, SEED_CALIB)
    evals = synthetic_images(EVAL_SAMPLES, size, SEED_EVAL)
    reference = torch_outputs(model, evals)
    t0 = time.perf_counter()
    ours = npuc_results(onnx_path, calib, evals, reference, algorithms)
    t_ours = time.perf_counter() - t0
    theirs: Dict[str, Score] = {}
    notes: List[str] = []
    t0 = time.perf_counter()
    for label, mapping_name in TORCH_QCONFIGS.items():
        quantized = torch_fx_ptq(model, calib, mapping_name)
        theirs[label] = Score.of(reference, torch_outputs(quantized, evals))
        notes = float_ops_of(quantized)
    t_theirs = time.perf_counter() - t0
    # How far from FP32 the model already is when only its input is int8 (a bound for any INT8
    # quantizer: random-weight CNNs amplify small input errors).
    floor = Score.of(reference, torch_outputs(model, round_input_to_int8(evals, float(calib.min()),
                                                                           float(calib.max()))))
    # The CNN target's bound; tiny_vit's Linear layers read LayerNorm / GELU outputs that npuc
    # quantizes differently (FP16 LayerNorm, table GELU), so the bound says nothing there.
    act_bound = Score.of(reference, activation_rounding_bound(model, calib, evals)) if name in CNNS else None
    return {"ours": ours, "torch": theirs, "torch_float_modules": notes, "seconds": (t_ours, t_theirs),
            "input_only": floor, "activations_only": act_bound}


def best_torch(res: Dict[str, Any]) -> Score:
    return max(res["torch"].values(), key=lambda score: score.cosine)


def paired_torch(res: Dict[str, Any], algorithm: str) -> Score:
    """The torch result `algorithm` is judged against: torch's min/max observer for `normal`
    (min/max), the better of torch's HistogramObserver configurations for the searching ones."""
    if algorithm == "normal":
        return res["torch"][TORCH_MINMAX_LABEL]
    return max((res["torch"][label] for label in TORCH_HISTOGRAM_LABELS), key=lambda score: score.cosine)


def print_model_table(name: str, res: Dict[str, Any]) -> None:
    best = best_torch(res)
    print(f"\n### {name}  (mean output cosine INT8 vs FP32 over {EVAL_SAMPLES} samples, in brackets the "
          f"share of samples whose top-1 class equals FP32's; npuc {res['seconds'][0]:.1f} s, "
          f"torch {res['seconds'][1]:.1f} s; differences ± the standard error of the paired "
          "per-sample differences)\n")
    print("| algorithm | npuc channel | npuc layer | npuc channel - paired torch | npuc channel - best torch |")
    print("|---|---|---|---|---|")
    for algorithm, per_method in res["ours"].items():
        ours = per_method["channel"]
        print(f"| {algorithm} | {ours} | {per_method['layer']} | {ours.minus(paired_torch(res, algorithm))} | "
              f"{ours.minus(best)} |")
    for label, score in res["torch"].items():
        print(f"| {label} | {score} | | | |")
    print(f"| bound: FP32 with only the input rounded to int8 | {res['input_only']} | | | |")
    if res["activations_only"] is not None:
        print(f"| bound: FP32 with only the conv/linear inputs rounded to int8, per channel | "
              f"{res['activations_only']} | | | |")
    if res["torch_float_modules"]:
        print(f"\ntorch ops left in float by convert_fx: {', '.join(res['torch_float_modules'])}")


def check_targets(results: Dict[str, Dict[str, Any]]) -> tuple[List[str], List[str]]:
    """The target: npuc channel >= the paired torch result for every algorithm. The random-weight
    CNNs are measured against their activation-rounding bound, not a fixed cosine (issue #26
    retired ">= 0.99": no 8-bit activation grid reaches it on these weights, see
    docs/quantization.md section 13). Returns (misses, notes): notes give each CNN's gap to
    that bound and where an algorithm trails the best torch result although it beats its pair."""
    misses, notes = [], []
    for name, res in results.items():
        best = best_torch(res)
        for algorithm, per_method in res["ours"].items():
            ours = per_method["channel"]
            peer = paired_torch(res, algorithm)
            if ours.cosine < peer.cosine:
                misses.append(f"{name} {algorithm}: npuc {ours.cosine:.5f} < paired torch {peer.cosine:.5f}")
            elif ours.cosine < best.cosine:
                notes.append(f"{name} {algorithm}: npuc {ours.cosine:.5f} < best torch {best.cosine:.5f} "
                             f"({ours.minus(best)})")
        top = max(max(score.cosine for score in m.values()) for m in res["ours"].values())
        if name in CNNS:
            bound = res["activations_only"].cosine
            notes.append(f"{name}: best npuc {top:.5f}, activation-rounding bound {bound:.5f} "
                         f"(gap {bound - top:+.5f})")
    return misses, notes


def calibration_timing(algorithms: Sequence[str]) -> None:
    """Wall time of calibrating mobilenet_v2 on TIMING_SAMPLES samples, then the plan per algorithm."""
    import npuc
    from npuc._npuc import Calibrator

    _, onnx_path = build_and_export("mobilenet_v2")
    optimized, _ = npuc.optimize(npuc.Model.load(str(onnx_path)), 3, [], "")
    images = synthetic_images(TIMING_SAMPLES, 224, SEED_TIMING)
    calibrator = Calibrator(optimized)
    per_sample = []
    t0 = time.perf_counter()
    for i in range(TIMING_SAMPLES):
        t = time.perf_counter()
        calibrator.add_sample([images[i:i + 1]])
        per_sample.append((time.perf_counter() - t) * 1e3)
    calib_s = time.perf_counter() - t0
    print(f"\n### Calibration time, mobilenet_v2, {TIMING_SAMPLES} samples (1x3x224x224)\n")
    print(f"calibration (FP32 forward + histograms of every activation): {calib_s:.2f} s total, "
          f"median {median(per_sample):.1f} ms/sample\n")
    print("| algorithm | plan + simulator build (channel) | calibration + plan |")
    print("|---|---|---|")
    for algorithm in algorithms:
        t = time.perf_counter()
        calibrator.quantize(algorithm, "channel")
        plan_s = time.perf_counter() - t
        print(f"| {algorithm} | {plan_s * 1e3:.0f} ms | {calib_s + plan_s:.2f} s |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(BENCHES), choices=list(BENCHES))
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    parser.add_argument("--skip-timing", action="store_true", help="skip the calibration timing")
    parser.add_argument("--dtypes", action="store_true", help="only the quantized_dtype table (issue #17)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.dtypes:
        dtype_table(args.models)
        return 0
    print(f"calibration {CALIB_SAMPLES} samples, evaluation {EVAL_SAMPLES} samples (synthetic smooth "
          f"random fields, ImageNet-normalized); torch {torch.__version__}")
    print(TORCH_QCONFIG_TEXT)
    results = {}
    for name in args.models:
        results[name] = run_model(name, args.algorithms)
        print_model_table(name, results[name])
        sys.stdout.flush()
    misses, notes = check_targets(results)
    print("\ntarget (npuc channel >= the paired torch result for every algorithm): " +
          ("all met" if not misses else "MISSED:\n  " + "\n  ".join(misses)))
    if notes:
        print("notes (the CNNs' gap to their activation-rounding bound; where npuc trails the best torch "
              "result, a HistogramObserver search, although ahead of the pair):\n  " +
              "\n  ".join(notes))
    if not args.skip_timing:
        calibration_timing(args.algorithms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
