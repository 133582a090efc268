"""Built-in verification of the graph optimizer: original vs optimized graph on the same inputs."""

from __future__ import annotations

from typing import Callable, List, Tuple

import numpy as np

from npuc._npuc import Model, Runtime
from npuc.errors import VerificationError

#: Relative tolerance (max|a-b| / max|b| per output) an optimized float graph must meet. Rewrites
#: such as BatchNorm folding reassociate float arithmetic, so the bar is 1e-3, not bit equality.
DEFAULT_RTOL = 1e-3


def random_inputs(model: Model, seed: int = 0) -> List[np.ndarray]:
    """One random array per model input: standard normal floats, small non-negative integers."""
    rng = np.random.default_rng(seed)
    feeds = []
    for info in model.inputs:
        shape, dtype = tuple(info["shape"]), np.dtype(info["dtype"])
        if dtype.kind == "f":
            feeds.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            feeds.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            feeds.append(rng.integers(0, 4, shape).astype(dtype))
    return feeds


def compare_outputs(reference: List[np.ndarray], candidate: List[np.ndarray]) -> List[Tuple[float, float]]:
    """(max absolute error, max relative error) per output; relative to the reference's max."""
    errors = []
    for ref, got in zip(reference, candidate):
        diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        max_abs = float(diff.max()) if diff.size else 0.0
        scale = float(np.abs(ref).max()) if ref.size else 0.0
        errors.append((max_abs, max_abs / scale if scale > 0 else max_abs))
    return errors


def verify_optimization(
    original: Model,
    optimized: Model,
    emit: Callable[[str], None],
    rtol: float = DEFAULT_RTOL,
    seed: int = 0,
) -> List[Tuple[float, float]]:
    """Runs both graphs on the same random inputs, prints the error table, raises on a mismatch.

    Raises:
        VerificationError: an output's relative error exceeds ``rtol`` (the output is named).
    """
    feeds = random_inputs(original, seed)
    # The reference runs without host fusion: the runtime's own graph simplification uses some of
    # the optimizer's passes (fold_batchnorm, fuse_activations), which must not check themselves.
    reference = Runtime(original, host_fusion=False).run(feeds)
    candidate = Runtime(optimized).run(feeds)
    errors = compare_outputs(reference, candidate)
    names = [o["name"] for o in original.outputs]
    lines = ["verify: original vs optimized graph on random inputs",
             f"  {'output':<32}{'max abs err':>14}{'max rel err':>14}"]
    for name, (max_abs, max_rel) in zip(names, errors):
        lines.append(f"  {name:<32}{max_abs:>14.3e}{max_rel:>14.3e}")
    emit("\n".join(lines))
    bad = [(n, e) for n, e in zip(names, errors) if not e[1] <= rtol]
    if bad:
        name, (_, rel) = bad[0]
        raise VerificationError(
            f"optimized graph differs from the original on output '{name}': relative error {rel:.3e} > {rtol:.0e}"
        )
    return errors
