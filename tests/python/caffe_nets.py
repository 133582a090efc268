"""Small Caffe nets written from the same random weights as a PyTorch reference of them.

No Caffe runtime is packaged, so the tests describe a net once (``CaffeNet``): each layer adds its
prototxt text, its blobs (for the caffemodel) and a PyTorch function computing it. ``write()``
produces the ``.prototxt`` and the binary ``.caffemodel`` (through the Python module protoc
generates from npuc's own ``caffe.proto`` subset), ``reference()`` runs the PyTorch side. Pooling
follows Caffe's own loops (``caffe_pool``), not PyTorch's, so the check is against Caffe's rules.
"""

from __future__ import annotations

import importlib
import math
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTO = REPO_ROOT / "cpp" / "frontend" / "caffe" / "caffe.proto"

_pb2 = None


def caffe_pb2(scratch: Path):
    """npuc's caffe.proto subset compiled by protoc (Debian protobuf-compiler) into `scratch`, once."""
    global _pb2
    if _pb2 is None:
        scratch.mkdir(parents=True, exist_ok=True)
        subprocess.run(["protoc", f"--python_out={scratch}", f"--proto_path={PROTO.parent}", str(PROTO)], check=True)
        sys.path.insert(0, str(scratch))
        try:
            _pb2 = importlib.import_module("caffe_pb2")
        finally:
            sys.path.remove(str(scratch))
    return _pb2


def caffe_pool(x: np.ndarray, k: int, s: int, p: int, is_max: bool, ceil: bool = True) -> np.ndarray:
    """Caffe's PoolingLayer forward (CPU) for square windows, written from its documented rules:
    pooled size ceil((H + 2p - k) / s) + 1, minus one when padding makes the last window start in
    the padding; MAX ignores padding; AVE divides by the window clipped to input + padding."""
    n, c, h, w = x.shape

    def size(i: int) -> int:
        span = i + 2 * p - k
        out = (-(-span // s) if ceil else span // s) + 1
        if p > 0 and (out - 1) * s >= i + p:
            out -= 1
        return out

    ph, pw = size(h), size(w)
    y = np.zeros((n, c, ph, pw), np.float32)
    for oh in range(ph):
        for ow in range(pw):
            hs, ws = oh * s - p, ow * s - p
            he, we = min(hs + k, h + p), min(ws + k, w + p)
            pool = (he - hs) * (we - ws)
            hs0, ws0, he0, we0 = max(hs, 0), max(ws, 0), min(he, h), min(we, w)
            win = x[:, :, hs0:he0, ws0:we0]
            y[:, :, oh, ow] = win.max(axis=(2, 3)) if is_max else win.sum(axis=(2, 3)) / pool
    return y


class CaffeNet:
    """A Caffe net under construction. Blob names are Caffe's; in-place layers reuse them."""

    def __init__(self, name: str, inputs: Dict[str, Sequence[int]], seed: int = 0, input_form: str = "layer"):
        self.name = name
        self.inputs = {k: list(v) for k, v in inputs.items()}
        self.rng = np.random.default_rng(seed)
        self.text: List[str] = []
        self.blobs: List[Tuple[str, str, List[np.ndarray]]] = []  # (layer name, type, blobs)
        self.steps: List[Callable[[Dict[str, torch.Tensor]], None]] = []
        self.shapes: Dict[str, Tuple[int, ...]] = {k: tuple(v) for k, v in inputs.items()}
        self.consumed: set = set()
        self.order: List[str] = list(inputs)
        self.input_form = input_form

    # ---- plumbing
    def _w(self, *shape: int, scale: Optional[float] = None) -> np.ndarray:
        fan = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        sd = scale if scale is not None else 1.0 / math.sqrt(max(fan, 1))
        return (self.rng.standard_normal(shape) * sd).astype(np.float32)

    def _layer(self, name: str, type_: str, bottoms: Sequence[str], tops: Sequence[str], params: str,
               blobs: Sequence[np.ndarray], fn: Callable[..., object]) -> None:
        lines = [f'layer {{\n  name: "{name}"\n  type: "{type_}"']
        lines += [f'  bottom: "{b}"' for b in bottoms] + [f'  top: "{t}"' for t in tops]
        if params:
            lines.append("  " + params)
        self.text.append("\n".join(lines) + "\n}\n")
        if blobs:
            self.blobs.append((name, type_, [np.asarray(b, np.float32) for b in blobs]))
        self.consumed.update(bottoms)

        def step(env: Dict[str, torch.Tensor]) -> None:
            out = fn(*[env[b] for b in bottoms])
            outs = out if isinstance(out, tuple) else (out,) * len(tops)
            for t, o in zip(tops, outs):
                env[t] = o

        self.steps.append(step)
        env = {k: torch.zeros(v) for k, v in self.shapes.items() if k in bottoms}
        step(env)
        for t in tops:
            self.shapes[t] = tuple(env[t].shape)
            if t not in self.order:
                self.order.append(t)
            self.consumed.discard(t) if t in bottoms else None

    @staticmethod
    def _t(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a)

    # ---- layers
    def conv(self, name: str, bottom: str, top: str, num_output: int, k: int, s: int = 1, p: int = 0,
             group: int = 1, dilation: int = 1, bias: bool = True, hw_form: bool = False) -> str:
        cin = self.shapes[bottom][1]
        w = self._w(num_output, cin // group, k, k)
        b = self._w(num_output, scale=0.1)
        geo = (f"kernel_h: {k} kernel_w: {k} stride_h: {s} stride_w: {s} pad_h: {p} pad_w: {p}" if hw_form
               else f"kernel_size: {k} stride: {s} pad: {p}")
        params = (f"convolution_param {{ num_output: {num_output} {geo} group: {group} dilation: {dilation} "
                  f"bias_term: {str(bias).lower()} weight_filler {{ type: \"xavier\" }} }}")
        tw, tb = self._t(w), self._t(b) if bias else None
        self._layer(name, "Convolution", [bottom], [top], params, [w, b] if bias else [w],
                    lambda x: F.conv2d(x, tw, tb, s, p, dilation, group))
        return top

    def deconv(self, name: str, bottom: str, top: str, num_output: int, k: int, s: int, p: int = 0,
               group: int = 1) -> str:
        cin = self.shapes[bottom][1]
        w = self._w(cin, num_output // group, k, k)
        b = self._w(num_output, scale=0.1)
        params = f"convolution_param {{ num_output: {num_output} kernel_size: {k} stride: {s} pad: {p} group: {group} }}"
        tw, tb = self._t(w), self._t(b)
        self._layer(name, "Deconvolution", [bottom], [top], params, [w, b],
                    lambda x: F.conv_transpose2d(x, tw, tb, s, p, groups=group))
        return top

    def bn_scale(self, name: str, blob: str, scale_factor: float = 1.0, eps: float = 1e-5,
                 scale_bias: bool = True) -> str:
        """Caffe's BatchNorm (running sums times scale_factor) + Scale, both in place on `blob`."""
        c = self.shapes[blob][1]
        mean = self._w(c, scale=0.3)
        var = (self.rng.uniform(0.5, 1.5, c)).astype(np.float32)
        gamma = self.rng.uniform(0.5, 1.5, c).astype(np.float32)
        beta = self._w(c, scale=0.2)
        tm, tv, tg, tb = map(self._t, (mean, var, gamma, beta))
        self._layer(f"{name}/bn", "BatchNorm", [blob], [blob],
                    f"batch_norm_param {{ use_global_stats: true eps: {eps} }}",
                    [mean * scale_factor, var * scale_factor, np.array([scale_factor], np.float32)],
                    lambda x: F.batch_norm(x, tm, tv, None, None, False, 0.0, eps))
        shape = (1, c) + (1,) * (len(self.shapes[blob]) - 2)
        self._layer(f"{name}/scale", "Scale", [blob], [blob], f"scale_param {{ bias_term: {str(scale_bias).lower()} }}",
                    [gamma, beta] if scale_bias else [gamma],
                    lambda x: x * tg.reshape(shape) + (tb.reshape(shape) if scale_bias else 0))
        return blob

    def scale(self, name: str, bottom: str, top: str, bias: bool = True) -> str:
        c = self.shapes[bottom][1]
        gamma, beta = self._w(c, scale=1.0), self._w(c, scale=0.2)
        shape = (1, c) + (1,) * (len(self.shapes[bottom]) - 2)
        tg, tb = self._t(gamma), self._t(beta)
        self._layer(name, "Scale", [bottom], [top], f"scale_param {{ bias_term: {str(bias).lower()} }}",
                    [gamma, beta] if bias else [gamma],
                    lambda x: x * tg.reshape(shape) + (tb.reshape(shape) if bias else 0))
        return top

    def act(self, name: str, type_: str, bottom: str, top: Optional[str] = None, slope: float = 0.0) -> str:
        top = top or bottom
        fns = {"ReLU": (lambda x: F.leaky_relu(x, slope) if slope else F.relu(x)),
               "ReLU6": (lambda x: torch.clamp(x, 0, 6)), "Sigmoid": torch.sigmoid, "TanH": torch.tanh}
        params = f"relu_param {{ negative_slope: {slope} }}" if slope else ""
        self._layer(name, type_, [bottom], [top], params, [], fns[type_])
        return top

    def prelu(self, name: str, bottom: str, top: Optional[str] = None) -> str:
        top = top or bottom
        c = self.shapes[bottom][1]
        a = self.rng.uniform(0.05, 0.3, c).astype(np.float32)
        ta = self._t(a)
        self._layer(name, "PReLU", [bottom], [top], "", [a], lambda x: F.prelu(x, ta))
        return top

    def pool(self, name: str, bottom: str, top: str, method: str, k: int = 0, s: int = 1, p: int = 0,
             global_pooling: bool = False) -> str:
        if global_pooling:
            params = f"pooling_param {{ pool: {method} global_pooling: true }}"
            fn = (lambda x: x.amax(dim=(2, 3), keepdim=True)) if method == "MAX" else (
                lambda x: x.mean(dim=(2, 3), keepdim=True))
        else:
            params = f"pooling_param {{ pool: {method} kernel_size: {k} stride: {s} pad: {p} }}"
            fn = lambda x: torch.from_numpy(caffe_pool(x.numpy(), k, s, p, method == "MAX"))  # noqa: E731
        self._layer(name, "Pooling", [bottom], [top], params, [], fn)
        return top

    def inner_product(self, name: str, bottom: str, top: str, num_output: int, axis: int = 1,
                      transpose: bool = False) -> str:
        shape = self.shapes[bottom]
        k = int(np.prod(shape[axis:]))
        w = self._w(k, num_output) if transpose else self._w(num_output, k)
        b = self._w(num_output, scale=0.1)
        tw, tb = self._t(w), self._t(b)
        params = f"inner_product_param {{ num_output: {num_output} axis: {axis} transpose: {str(transpose).lower()} }}"

        def fn(x: torch.Tensor) -> torch.Tensor:
            flat = x.reshape(tuple(x.shape[:axis]) + (k,))
            return flat @ (tw if transpose else tw.T) + tb

        self._layer(name, "InnerProduct", [bottom], [top], params, [w, b], fn)
        return top

    def eltwise(self, name: str, bottoms: Sequence[str], top: str, op: str = "SUM",
                coeff: Sequence[float] = ()) -> str:
        params = f"eltwise_param {{ operation: {op} " + " ".join(f"coeff: {c}" for c in coeff) + " }"

        def fn(*xs: torch.Tensor) -> torch.Tensor:
            if op == "SUM":
                cs = list(coeff) or [1.0] * len(xs)
                return sum(c * x for c, x in zip(cs, xs))
            out = xs[0]
            for x in xs[1:]:
                out = out * x if op == "PROD" else torch.maximum(out, x)
            return out

        self._layer(name, "Eltwise", bottoms, [top], params, [], fn)
        return top

    def concat(self, name: str, bottoms: Sequence[str], top: str, axis: int = 1) -> str:
        self._layer(name, "Concat", bottoms, [top], f"concat_param {{ axis: {axis} }}", [],
                    lambda *xs: torch.cat(xs, axis))
        return top

    def softmax(self, name: str, bottom: str, top: str, axis: int = 1) -> str:
        self._layer(name, "Softmax", [bottom], [top], f"softmax_param {{ axis: {axis} }}", [],
                    lambda x: torch.softmax(x, axis))
        return top

    def flatten(self, name: str, bottom: str, top: str, axis: int = 1, end_axis: int = -1) -> str:
        self._layer(name, "Flatten", [bottom], [top], f"flatten_param {{ axis: {axis} end_axis: {end_axis} }}", [],
                    lambda x: torch.flatten(x, axis, end_axis))
        return top

    def permute(self, name: str, bottom: str, top: str, order: Sequence[int]) -> str:
        self._layer(name, "Permute", [bottom], [top],
                    "permute_param { " + " ".join(f"order: {o}" for o in order) + " }", [],
                    lambda x: x.permute(*order).contiguous())
        return top

    def reshape(self, name: str, bottom: str, top: str, dims: Sequence[int]) -> str:
        def fn(x: torch.Tensor) -> torch.Tensor:
            shape = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
            return x.reshape(shape)

        self._layer(name, "Reshape", [bottom], [top],
                    "reshape_param { shape { " + " ".join(f"dim: {d}" for d in dims) + " } }", [], fn)
        return top

    def dropout(self, name: str, blob: str) -> str:
        self._layer(name, "Dropout", [blob], [blob], "dropout_param { dropout_ratio: 0.2 }", [], lambda x: x)
        return blob

    def split(self, name: str, bottom: str, tops: Sequence[str]) -> Tuple[str, ...]:
        self._layer(name, "Split", [bottom], tops, "", [], lambda x: tuple(x for _ in tops))
        return tuple(tops)

    # ---- output
    def outputs(self) -> List[str]:
        return [b for b in self.order if b not in self.consumed and b not in self.inputs]

    def prototxt(self) -> str:
        head = f'name: "{self.name}"\n'
        if self.input_form == "layer":
            for name, shape in self.inputs.items():
                dims = " ".join(f"dim: {d}" for d in shape)
                head += (f'layer {{\n  name: "{name}"\n  type: "Input"\n  top: "{name}"\n'
                         f'  input_param {{ shape {{ {dims} }} }}\n}}\n')
        elif self.input_form == "input_shape":
            for name, shape in self.inputs.items():
                head += f'input: "{name}"\ninput_shape {{ ' + " ".join(f"dim: {d}" for d in shape) + " }\n"
        else:  # input_dim, the oldest form
            for name, shape in self.inputs.items():
                head += f'input: "{name}"\n' + "".join(f"input_dim: {d}\n" for d in shape)
        return head + "".join(self.text)

    def caffemodel(self, pb2) -> bytes:
        net = pb2.NetParameter()
        net.name = self.name
        for name, type_, blobs in self.blobs:
            layer = net.layer.add()
            layer.name, layer.type = name, type_
            for b in blobs:
                bp = layer.blobs.add()
                bp.shape.dim.extend(b.shape)
                bp.data.extend(b.ravel().tolist())
        return net.SerializeToString()

    def write(self, folder: Path, stem: str, scratch: Path) -> Tuple[Path, Path]:
        folder.mkdir(parents=True, exist_ok=True)
        proto, model = folder / f"{stem}.prototxt", folder / f"{stem}.caffemodel"
        proto.write_text(self.prototxt())
        model.write_bytes(self.caffemodel(caffe_pb2(scratch)))
        return proto, model

    def reference(self, feeds: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        env = {k: torch.from_numpy(np.ascontiguousarray(v, np.float32)) for k, v in feeds.items()}
        with torch.no_grad():
            for step in self.steps:
                step(env)
        return {k: env[k].numpy() for k in self.outputs()}


def mobilenet_like(hw: int = 56, seed: int = 0, input_form: str = "layer") -> CaffeNet:
    """A MobileNetV2-style net: stem conv, inverted residual blocks with depthwise convs and
    BatchNorm+Scale, ReLU6/ReLU/PReLU, ceil-mode pooling, Eltwise, Concat, InnerProduct, Softmax."""
    n = CaffeNet("mobilenet_like", {"data": [1, 3, hw, hw]}, seed, input_form)
    x = n.conv("conv1", "data", "conv1", 16, 3, s=2, p=1, bias=False)
    n.bn_scale("conv1", x, scale_factor=0.5)
    n.act("relu1", "ReLU6", x)
    # Inverted residual: expand 1x1, depthwise 3x3, project 1x1, Eltwise SUM with coefficients.
    a, b = n.split("conv1_split", x, ["conv1_a", "conv1_b"])
    e = n.conv("b1_expand", a, "b1_expand", 48, 1, bias=False)
    n.bn_scale("b1_expand", e, scale_factor=2.0)
    n.act("b1_expand_relu", "ReLU6", e)
    d = n.conv("b1_dw", e, "b1_dw", 48, 3, p=1, group=48, bias=False, hw_form=True)
    n.bn_scale("b1_dw", d)
    n.act("b1_dw_relu", "ReLU", d)
    pj = n.conv("b1_project", d, "b1_project", 16, 1, bias=False)
    n.bn_scale("b1_project", pj, scale_bias=True)
    r = n.eltwise("b1_add", [b, pj], "b1_add", "SUM", coeff=[1.0, 0.5])
    # Two branches: MAX pooling (ceil rule: 28 -> 14 with k3 s2), strided depthwise conv; Concat.
    p1 = n.pool("pool_max", r, "pool_max", "MAX", k=3, s=2)
    c2 = n.conv("b2_dw", r, "b2_dw", 16, 3, s=2, p=1, group=16)
    n.prelu("b2_prelu", c2)
    cat = n.concat("cat", [p1, c2], "cat")
    # AVE pooling with padding and the ceil overhang; gating with Sigmoid/TanH, PROD and MAX.
    av = n.pool("pool_ave", cat, "pool_ave", "AVE", k=3, s=2, p=1)
    g = n.act("gate", "Sigmoid", av, "gate")
    t = n.act("tanh", "TanH", av, "tanh")
    m = n.eltwise("gated", [av, g], "gated", "PROD")
    mx = n.eltwise("mx", [m, t], "mx", "MAX")
    h = n.conv("head", mx, "head", 64, 1)
    n.scale("head_scale", h, "head_scale")
    n.act("head_relu", "ReLU", "head_scale", slope=0.1)
    gp = n.pool("gap", "head_scale", "gap", "AVE", global_pooling=True)
    n.dropout("drop", gp)
    fc = n.inner_product("fc", gp, "fc", 10)
    n.softmax("prob", fc, "prob")
    return n


def deconv_reshape_net(seed: int = 1) -> CaffeNet:
    """Deconvolution, Permute, Reshape, Flatten, InnerProduct on axis 2 with transpose."""
    n = CaffeNet("deconv_reshape", {"data": [1, 8, 10, 12]}, seed, input_form="input_shape")
    c = n.conv("conv", "data", "conv", 8, 3, p=1)
    up = n.deconv("up", c, "up", 6, 4, s=2, p=1, group=2)
    n.act("up_relu", "ReLU", up)
    pm = n.permute("perm", up, "perm", [0, 2, 3, 1])            # [1, 20, 24, 6]
    rs = n.reshape("rs", pm, "rs", [0, -1, 6])                   # [1, 480, 6]
    ip = n.inner_product("ip_t", rs, "ip_t", 5, axis=2, transpose=True)  # [1, 480, 5]
    sm = n.softmax("sm", ip, "sm", axis=2)
    n.flatten("flat", sm, "flat")                                # [1, 2400]
    mx = n.pool("mp", c, "mp", "MAX", k=2, s=2)
    fl = n.flatten("flat2", mx, "flat2", axis=2)                 # [1, 8, 30]
    n.inner_product("ip2", fl, "ip2", 7)
    return n
