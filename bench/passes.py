"""Time of the whole graph optimization pipeline (npuc.optimize at level 3).

Models: a generated ~1000-node ResNet-style stack (Conv -> BatchNormalization -> Relu blocks with
residual Adds and a decomposed LayerNorm every few blocks, so the fusion passes have work) and
every model in shared/models. Target: under 50 ms for 1000 nodes. Prints medians in ms.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from common import median, shared_models_dir, time_calls


def resnet_stack(blocks: int, channels: int = 16, size: int = 8) -> bytes:
    """A deep residual stack whose node count grows by 7-13 per block."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
        return name

    x = "input"
    for b in range(blocks):
        p = f"b{b}_"
        w = const(p + "w", rng.standard_normal((channels, channels, 3, 3)) * 0.1)
        nodes.append(helper.make_node("Conv", [x, w], [p + "conv"], pads=[1, 1, 1, 1], name=p + "conv"))
        bn = [const(p + n, v) for n, v in (("g", rng.uniform(0.5, 1.5, channels)), ("be", rng.standard_normal(channels)),
                                           ("m", rng.standard_normal(channels)), ("v", rng.uniform(0.5, 1.5, channels)))]
        nodes.append(helper.make_node("BatchNormalization", [p + "conv"] + bn, [p + "bn"], name=p + "bn"))
        nodes.append(helper.make_node("Relu", [p + "bn"], [p + "relu"], name=p + "relu"))
        nodes.append(helper.make_node("Add", [p + "relu", x], [p + "res"], name=p + "add"))
        out = p + "res"
        if b % 4 == 3:  # decomposed LayerNorm over W, as exporters write it
            eps = const(p + "eps", np.array(1e-5))
            two = const(p + "two", np.array(2.0))
            nodes += [
                helper.make_node("ReduceMean", [out], [p + "mu"], axes=[-1], name=p + "mu"),
                helper.make_node("Sub", [out, p + "mu"], [p + "d"], name=p + "sub"),
                helper.make_node("Pow", [p + "d", two], [p + "d2"], name=p + "pow"),
                helper.make_node("ReduceMean", [p + "d2"], [p + "var"], axes=[-1], name=p + "var"),
                helper.make_node("Add", [p + "var", eps], [p + "ve"], name=p + "addeps"),
                helper.make_node("Sqrt", [p + "ve"], [p + "sd"], name=p + "sqrt"),
                helper.make_node("Div", [p + "d", p + "sd"], [p + "ln"], name=p + "div"),
            ]
            out = p + "ln"
        x = out
    graph = helper.make_graph(
        nodes, "resnet_stack",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, channels, size, size])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000, help="approximate node count of the generated model")
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()

    import npuc

    blocks = max(1, round(args.nodes / 5.75))  # 4 nodes per block + 7 per LayerNorm every 4th block
    models = {"resnet_stack": npuc.Model.from_bytes(resnet_stack(blocks))}
    shared = shared_models_dir()
    for path in sorted(shared.glob("*.onnx")) if shared.is_dir() else []:
        models[path.stem] = npuc.Model.load(str(path))

    print(f"{'model':<22}{'nodes in':>10}{'nodes out':>11}{'optimize ms':>13}{'ms/1000 nodes':>15}")
    for name, model in models.items():
        _, report = npuc.optimize(model)
        lat = time_calls(lambda: npuc.optimize(model), warmup=1, iters=args.iters)
        n = report["nodes_before"]
        ms = median(lat)
        print(f"{name:<22}{n:>10}{report['nodes_after']:>11}{ms:>13.2f}{ms * 1000 / max(n, 1):>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
