#!/usr/bin/env python3
"""Runs the ONNX backend test sets through npuc (Model + Runtime) and compares outputs.

The sets are those libonnx-testdata ships: ``node`` (one op per case, opsets 1 to 17),
``pytorch-converted`` and ``pytorch-operator`` (small PyTorch modules exported at opset 6) and
``simple`` (small multi-node models). A case is run when every op of its model is in npuc's
registry; the others are counted apart as "not run". Each case's test_data_set_* inputs go through npuc.Runtime and every output must match
the expected one like ONNX's own backend tests check it: same dtype and shape, and
|got - expected| <= atol + rtol * |expected| with rtol=1e-3, atol=1e-7, NaN equal to NaN.

Each set has its own known-failures list, known_failures/<set>.txt (``case_name  # reason``): listed
cases are run but count as skipped; a listed case that passes is pointed out so its line can be
deleted.

Cases run in worker processes (one per core), so a crash in a kernel is reported against its case
instead of ending the run. Output: one line per failure, then one line per set
``<set>: N passed, N failed, N skipped, N not run``. Exit status 1 when a case fails that is not a
known failure, or when a case is not run for an op outside the out-of-scope categories
(training, string, sequence, optional): every case made of inference ops must run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set

HERE = Path(__file__).resolve().parent
RTOL = 1e-3
ATOL = 1e-7
DEFAULT_DATA_ROOT = "/usr/share/libonnx-testdata/data"
SETS = ("node", "pytorch-converted", "pytorch-operator", "simple")


# ---------------------------------------------------------------------- locating things


def find_data_root() -> Path:
    """The folder holding one sub-folder per test set (node, pytorch-converted, ...)."""
    env = os.environ.get("NPUC_ONNX_TEST_DATA")
    if env:
        return Path(env)
    try:
        listing = subprocess.run(["dpkg", "-L", "libonnx-testdata"], capture_output=True, text=True, check=False)
        for line in listing.stdout.splitlines():
            if line.rstrip("/").endswith("/data/node"):
                return Path(line.rstrip("/")).parent
    except OSError:
        pass  # not a Debian system: fall back to the default location
    return Path(DEFAULT_DATA_ROOT)


def read_known_failures(path: Path) -> Dict[str, str]:
    """case name -> reason, from lines ``case_name  # reason`` (blank lines and # comments ignored)."""
    known: Dict[str, str] = {}
    if not path.exists():
        return known
    for raw in path.read_text().splitlines():
        name, _, reason = raw.partition("#")
        name = name.strip()
        if name:
            known[name] = reason.strip()
    return known


# Ops outside npuc's scope (#22): training, string processing, and the sequence and optional
# types. A case not run for one of these counts under that reason; a case not run for any other
# op is an inference op npuc still lacks.
OUT_OF_SCOPE_PREFIXES = {"ai.onnx.preview.training.": "training"}
OUT_OF_SCOPE_OPS = {
    "NegativeLogLikelihoodLoss": "training", "SoftmaxCrossEntropyLoss": "training",
    "StringNormalizer": "string", "RegexFullMatch": "string", "StringConcat": "string",
    "StringSplit": "string",
    "SequenceAt": "sequence", "SequenceConstruct": "sequence", "SequenceEmpty": "sequence",
    "SequenceErase": "sequence", "SequenceInsert": "sequence", "SequenceLength": "sequence",
    "SequenceMap": "sequence", "SplitToSequence": "sequence", "ConcatFromSequence": "sequence",
    "<non-tensor input/output>": "sequence/optional-typed graph input or output",
    "Optional": "optional", "OptionalGetElement": "optional", "OptionalHasElement": "optional",
}


def not_run_reason(ops: Iterable[str]) -> str:
    """Why a case with these unsupported ops is not run: an out-of-scope category, or 'missing op'."""
    for op in ops:
        for prefix, reason in OUT_OF_SCOPE_PREFIXES.items():
            if op.startswith(prefix):
                return reason
        if op in OUT_OF_SCOPE_OPS:
            return OUT_OF_SCOPE_OPS[op]
    return "missing op"


# ---------------------------------------------------------------------- one case (worker side)


def model_ops(graph) -> Set[str]:
    """Op names a model uses ('Op', or 'domain.Op' outside ONNX), sub-graphs included."""
    ops: Set[str] = set()
    for node in graph.node:
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        ops.add(f"{domain}.{node.op_type}" if domain else node.op_type)
        for attr in node.attribute:
            for sub in list(attr.g.node and [attr.g] or []) + list(attr.graphs):
                ops |= model_ops(sub)
    return ops


def non_tensor_io(graph) -> List[str]:
    """Inputs/outputs whose type is not a tensor (sequences, optionals, maps): npuc has none."""
    return [v.name for v in list(graph.input) + list(graph.output) if v.type.WhichOneof("value") != "tensor_type"]


def compare(name: str, got, want) -> Optional[str]:
    """None if `got` matches `want` under the backend-test tolerance, else the reason."""
    import numpy as np

    if got.dtype != want.dtype:
        return f"output '{name}' has dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"output '{name}' has shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype.kind in "fc":
        ok = np.isclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        ok = got == want
    if not np.all(ok):
        bad = np.argwhere(~np.asarray(ok))
        where = tuple(int(i) for i in bad[0]) if bad.size else ()
        return (f"output '{name}': {len(bad)} of {want.size} elements differ, first at {list(where)}: "
                f"got {got[where]!r}, expected {want[where]!r}")
    return None


def needs_constants(error: Exception) -> bool:
    """True for the import error npuc raises when an op parameter (a shape, axes, scales, ...) is
    fed as a runtime input: npuc compiles static graphs and needs such parameters constant."""
    return "must be a constant" in str(error)


def bake_inputs(proto, feeds_by_name: Dict[str, "object"], names: Set[str]) -> bytes:
    """The model with the inputs `names` turned into initializers holding their test data."""
    import onnx
    from onnx import numpy_helper

    model = onnx.ModelProto()
    model.CopyFrom(proto)
    keep = [v for v in model.graph.input if v.name not in names]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    for name in sorted(names):
        model.graph.initializer.append(numpy_helper.from_array(feeds_by_name[name], name))
    return model.SerializeToString()


def sizes_to_fix(proto, feeds_by_name: Dict[str, "object"]) -> Dict[str, List[int]]:
    """input_size_list entries for the inputs whose declared shape is not exactly the data's."""
    declared = {
        v.name: [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
        for v in proto.graph.input
        if v.type.tensor_type.HasField("shape")
    }
    fixed = {}
    for name, data in feeds_by_name.items():
        if declared.get(name) != list(data.shape):
            fixed[name] = list(data.shape)
    return fixed


def compile_case(case_dir: Path, proto, input_names: List[str], feeds: List["object"]):
    """npuc.Runtime for the case plus the inputs it takes, as (runtime, {name: array}).

    The model is imported as it is first. If npuc needs some op parameters to be constants, the
    integer inputs, then all inputs but the first, then all inputs are baked into the model as initializers (with
    their test data; ONNX semantics are unchanged) and the import is retried."""
    import npuc

    by_name = dict(zip(input_names, feeds))
    fixed = sizes_to_fix(proto, by_name)
    try:
        model = npuc.Model.load(str(case_dir / "model.onnx"), list(fixed), list(fixed.values()), [])
        return npuc.Runtime(model), by_name
    except npuc.ShapeError as e:
        if not needs_constants(e):
            raise
        first_error = e
    integer_inputs = {n for n, f in by_name.items() if f.dtype.kind in "iu"}
    for baked in (integer_inputs, set(input_names[1:]), set(input_names)):
        if not baked:
            continue
        kept = {n: by_name[n] for n in input_names if n not in baked}
        fixed = sizes_to_fix(proto, kept)
        try:
            model = npuc.Model.from_bytes(bake_inputs(proto, by_name, baked), list(fixed), list(fixed.values()), [])
            return npuc.Runtime(model), kept
        except npuc.ShapeError as e:
            if not needs_constants(e):
                raise
    raise first_error


def load_tensors(data_dir: Path, prefix: str) -> List["object"]:
    import onnx
    from onnx import numpy_helper

    paths = sorted(data_dir.glob(prefix + "_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    return [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in paths]


def run_case(case_dir: Path, supported: Set[str]) -> dict:
    import numpy as np
    import onnx

    result = {"case": f"{case_dir.parent.name}/{case_dir.name}"}
    proto = onnx.load(str(case_dir / "model.onnx"), load_external_data=False)
    missing = sorted(model_ops(proto.graph) - supported)
    odd_io = non_tensor_io(proto.graph)
    if missing or odd_io:
        result.update(status="unsupported", ops=missing or ["<non-tensor input/output>"])
        return result
    initializers = {t.name for t in proto.graph.initializer}
    all_inputs = [v.name for v in proto.graph.input if v.name not in initializers]
    output_names = [v.name for v in proto.graph.output]
    try:
        for data_dir in sorted(case_dir.glob("test_data_set_*")):
            feeds = load_tensors(data_dir, "input")
            wants = load_tensors(data_dir, "output")
            # Some cases omit optional trailing inputs: feed the ones given.
            input_names = all_inputs[: len(feeds)]
            runtime, by_name = compile_case(case_dir, proto, input_names, feeds)
            missing_inputs = [i["name"] for i in runtime.inputs if i["name"] not in by_name]
            if missing_inputs:
                raise RuntimeError(f"no test data for input(s) {missing_inputs}")
            gots = runtime.run([np.require(by_name[i["name"]], requirements="C") for i in runtime.inputs])
            got_by_name = {info["name"]: g for info, g in zip(runtime.outputs, gots)}
            for name, want in zip(output_names, wants):
                if name not in got_by_name:
                    raise RuntimeError(f"npuc produced no output '{name}'")
                reason = compare(name, got_by_name[name], want)
                if reason:
                    result.update(status="fail", reason=f"{data_dir.name}: {reason}")
                    return result
    except Exception as e:  # noqa: BLE001 - npuc errors and any other exception fail this case
        message = " ".join(str(e).replace(str(case_dir) + "/", "").split())
        result.update(status="fail", reason=f"{type(e).__name__}: {message}")
        return result
    result["status"] = "pass"
    return result


def worker_main(data_dir: Path) -> int:
    """Reads case names (``<set>/<case>``) from stdin, writes one JSON result per line to stdout."""
    import npuc

    supported = set(npuc.supported_ops())
    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        print(json.dumps(run_case(data_dir / name, supported)), flush=True)
    return 0


# ---------------------------------------------------------------------- scheduling (parent side)


def run_shard(cases: List[str], data_dir: Path, results: List[dict]) -> None:
    """Runs `cases` in a worker; if the worker dies, blames the case it was on and restarts."""
    pending = list(cases)
    while pending:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", "--data-dir", str(data_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        stderr_lines: List[str] = []
        drain = threading.Thread(target=lambda: stderr_lines.extend(proc.stderr), daemon=True)
        drain.start()
        proc.stdin.write("".join(c + "\n" for c in pending))
        proc.stdin.close()
        done = 0
        for line in proc.stdout:
            try:
                results.append(json.loads(line))
                done += 1
            except json.JSONDecodeError:
                pass  # stray output of a kernel; results are the JSON lines
        proc.wait()
        drain.join(timeout=5)
        pending = pending[done:]
        if pending and proc.returncode != 0:
            last = " ".join("".join(stderr_lines[-3:]).split())
            results.append({"case": pending[0], "status": "fail",
                            "reason": f"worker crashed (exit {proc.returncode}) {last}".strip()})
            pending = pending[1:]
        elif pending:
            for case in pending:
                results.append({"case": case, "status": "fail", "reason": "worker ended without a result"})
            pending = []


def run_all(cases: List[str], data_dir: Path, jobs: int) -> List[dict]:
    shards = [cases[i::jobs] for i in range(jobs)]
    results: List[dict] = []
    threads = [threading.Thread(target=run_shard, args=(s, data_dir, results)) for s in shards if s]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(results, key=lambda r: r["case"])


def main(argv: Optional[Iterable[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Run the ONNX backend test sets through npuc.")
    ap.add_argument("--filter", default="", metavar="SUBSTR", help="only cases whose name contains SUBSTR")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case's result")
    ap.add_argument("--list-unsupported", action="store_true",
                    help="list the ops npuc lacks, with how many cases each keeps from running")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: cores)")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="folder holding the test sets (default: libonnx-testdata's data folder)")
    ap.add_argument("--set", dest="sets", action="append", choices=SETS,
                    help="run this test set (repeatable; default: all of " + ", ".join(SETS) + ")")
    ap.add_argument("--known-failures-dir", type=Path, default=HERE / "known_failures",
                    help="folder of <set>.txt known-failure lists")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(list(argv) if argv is not None else None)

    data_root = args.data_dir or find_data_root()
    if args.worker:
        return worker_main(data_root)
    sets = args.sets or list(SETS)
    missing = [s for s in sets if not (data_root / s).is_dir()]
    if missing:
        print(f"ONNX backend test set(s) {missing} not found under {data_root} (install libonnx-testdata)",
              file=sys.stderr)
        return 1
    cases = sorted(f"{s}/{p.parent.name}" for s in sets for p in (data_root / s).glob("*/model.onnx")
                   if args.filter in p.parent.name)
    results = run_all(cases, data_root, max(1, args.jobs))

    counts = {s: collections.Counter() for s in sets}
    unsupported = [r for r in results if r["status"] == "unsupported"]
    now_passing: List[str] = []
    known_by_set = {s: read_known_failures(args.known_failures_dir / f"{s}.txt") for s in sets}
    for r in results:
        status, full = r["status"], r["case"]
        test_set, _, case = full.partition("/")
        known, count = known_by_set[test_set], counts[test_set]
        if status == "unsupported":
            count["not run"] += 1
            if args.verbose:
                print(f"NOT RUN {full}: unsupported {', '.join(r['ops'])}")
            continue
        if case in known:
            count["skipped"] += 1
            if status == "pass":
                now_passing.append(full)
            elif args.verbose:
                print(f"SKIP {full}: known failure ({known[case]}): {r.get('reason', '')}")
            continue
        if status == "pass":
            count["passed"] += 1
            if args.verbose:
                print(f"ok   {full}")
        else:
            count["failed"] += 1
            print(f"FAIL {full}: {r.get('reason', '')}")

    if args.list_unsupported:
        per_op = collections.Counter(op for r in unsupported for op in r["ops"])
        print("ops npuc does not support (cases they keep from running):")
        for op, n in sorted(per_op.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {op:<32}{n:>5}")
    for full in now_passing:
        test_set, _, case = full.partition("/")
        print(f"note: {case} is listed in known_failures/{test_set}.txt but passes; delete its line")
    if unsupported:
        print(f"{len(unsupported)} case(s) not run: they use ops npuc does not support (see --list-unsupported)")
        by_reason = collections.Counter(not_run_reason(r["ops"]) for r in unsupported)
        print("not run, by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(by_reason.items())))
        missing = sorted({op for r in unsupported if not_run_reason(r["ops"]) == "missing op" for op in r["ops"]})
        if missing:
            # #22's bar: every case made of inference ops runs. A missing op fails the run, as a
            # failing case does, so a new ONNX test set or a dropped op cannot pass unnoticed.
            print("FAIL: in-scope ops missing (only training, string, sequence and optional cases may stay "
                  "not run): " + ", ".join(missing))
    for s in sets:
        c = counts[s]
        print(f"{s}: {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped, {c['not run']} not run")
    missing_op = any(not_run_reason(r["ops"]) == "missing op" for r in unsupported)
    return 1 if missing_op or any(c["failed"] for c in counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
