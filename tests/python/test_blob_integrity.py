"""Every reader of a blob verifies every section it uses (issue #15, defect 10).

A section corrupted, or spliced in from another model's blob, and the header re-sealed (file size
and checksum recomputed, as a buggy or hostile writer would: tests/python/blob_surgery.py) is
refused with a BlobError naming the section, by ``npuc perf``, ``npuc info``, ``npuc run``,
``Toolkit.load_blob`` (after which eval_perf / eval_memory / inference have no model to run) and
``blob_memory_report``. The SDIG section's per-section digests catch the edit; a writer that
forges SDIG too still meets the section decoders' own checks against the graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc
from npuc import _npuc
from npuc.cli import main as cli_main
from npuc.memory import blob_memory_report

import blob_surgery

X_SHAPE = (1, 3, 8, 8)


def ladder_model(seed: int) -> onnx.ModelProto:
    """x -> Conv -> Relu -> Erf (a CPU op) -> Conv -> y: every section kind, and two seeds give two
    models of the same structure (so a section of one fits the other byte for byte)."""
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w1"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32) * 0.1, "b1"),
        numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32) * 0.3, "w2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Erf", ["r1"], ["e1"], name="erf1"),
        helper.make_node("Conv", ["e1", "w2"], ["y"], name="conv2", kernel_shape=[1, 1]),
    ]
    graph = helper.make_graph(nodes, "ladder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def export(tmp: Path, seed: int) -> bytes:
    onnx_path, blob = tmp / f"m{seed}.onnx", tmp / f"m{seed}.npub"
    onnx.save(ladder_model(seed), str(onnx_path))
    x = np.random.default_rng(7).standard_normal(X_SHAPE).astype(np.float32)
    with npuc.Toolkit() as tk:
        tk.config(target_platform="rk3588")
        tk.load_onnx(model=str(onnx_path))
        tk.build(do_quantization=True, dataset=[[x], [0.5 * x]])
        tk.export_blob(blob)
    return blob.read_bytes()


@pytest.fixture(scope="module")
def blobs(tmp_path_factory: pytest.TempPathFactory) -> Tuple[bytes, bytes, Path]:
    """Two INT8 blobs of same-shaped models with different weights, and an input .npy."""
    tmp = tmp_path_factory.mktemp("integrity")
    ours, theirs = export(tmp, 0), export(tmp, 1)
    np.save(tmp / "x.npy", np.ones(X_SHAPE, np.float32))
    return ours, theirs, tmp / "x.npy"


def test_the_blob_has_every_section_kind(blobs: Tuple[bytes, bytes, Path]) -> None:
    ours, theirs, _ = blobs
    kinds = [s.kind for s in blob_surgery.section_table(ours)]
    assert kinds == ["META", "GRPH", "WGHT", "QUNT", "TASK", "PIPE", "CPUO", "NWGT", "MPLN", "CSCH", "SDIG"]
    a, b = blob_surgery.payloads(ours), blob_surgery.payloads(theirs)
    for kind in ("META", "WGHT", "NWGT"):  # same sizes, different bytes: a splice that fits
        assert len(a[kind]) == len(b[kind]) and a[kind] != b[kind], kind


CORRUPTED = ["QUNT", "MPLN", "TASK", "PIPE", "CPUO", "NWGT", "GRPH", "WGHT", "META"]
SPLICED = ["META", "NWGT", "WGHT"]


def mutated(blobs: Tuple[bytes, bytes, Path], how: str, kind: str) -> bytes:
    ours, theirs, _ = blobs
    if how == "corrupt":
        return blob_surgery.reseal(blob_surgery.flip_byte(ours, kind))
    return blob_surgery.reseal(blob_surgery.with_section(ours, kind, blob_surgery.payloads(theirs)[kind]))


CASES = [("corrupt", k) for k in CORRUPTED] + [("splice", k) for k in SPLICED]


def refusal(kind: str) -> str:
    return f"section '{kind}' at offset"


@pytest.mark.parametrize("how,kind", CASES)
def test_every_reader_refuses_a_resealed_corrupt_or_spliced_section(
        blobs: Tuple[bytes, bytes, Path], tmp_path: Path, capsys: pytest.CaptureFixture, how: str, kind: str) -> None:
    path = tmp_path / f"{how}-{kind}.npub"
    path.write_bytes(mutated(blobs, how, kind))
    want = refusal(kind)

    for argv in (["perf", str(path)], ["info", str(path)], ["run", str(path), "--input", str(blobs[2])]):
        assert cli_main(argv) == 1, argv
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and err.startswith("npuc: error: "), (argv, err)
        assert want in err and str(path) in err, (argv, err)
        assert "does not match the digest SDIG records" in err, (argv, err)
        assert "Total" not in out, argv  # no perf table printed

    with npuc.Toolkit() as tk:
        with pytest.raises(npuc.BlobError, match=want):
            tk.load_blob(path)
        for call in (tk.eval_perf, tk.eval_memory, lambda: tk.inference(inputs=[np.ones(X_SHAPE, np.float32)])):
            with pytest.raises(npuc.NpucError, match="first"):  # nothing was loaded
                call()
    for load in (_npuc.load_compiled, _npuc.load_blob, blob_memory_report):
        with pytest.raises(npuc.BlobError, match=want):
            load(str(path))


def test_the_untouched_blob_passes_every_reader(blobs: Tuple[bytes, bytes, Path], tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "ok.npub"
    path.write_bytes(blob_surgery.reseal(blobs[0]))  # re-sealing an unedited blob changes nothing
    assert path.read_bytes() == blobs[0]
    for argv in (["perf", str(path)], ["info", str(path)], ["run", str(path), "--input", str(blobs[2])]):
        assert cli_main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "SDIG  optional" in out  # npuc info lists the section table as the reader checked it
    with npuc.Toolkit() as tk:
        tk.load_blob(path)
        tk.eval_perf()
        tk.eval_memory()
        tk.inference(inputs=[np.ones(X_SHAPE, np.float32)])


def test_a_forged_digest_table_still_meets_the_section_checks(blobs: Tuple[bytes, bytes, Path],
                                                              tmp_path: Path) -> None:
    """A writer that also rewrites SDIG gets past the digests; the QUNT plan is then checked against
    the graph (it quantizes a value the graph lacks), which eval_perf used to skip."""
    ours = blobs[0]
    qunt = blob_surgery.payloads(ours)["QUNT"]
    renamed = qunt.replace(b"conv1", b"convX")  # names in the plan no longer exist in the graph
    assert renamed != qunt
    path = tmp_path / "forged.npub"
    path.write_bytes(blob_surgery.reseal_with_digests(blob_surgery.with_section(ours, "QUNT", renamed)))
    with pytest.raises(npuc.BlobError, match=r"QUNT section gives node 'convX' a precision|QUNT section quantizes"):
        _npuc.load_compiled(str(path))


def test_a_blob_before_section_digests_is_refused_naming_its_version(blobs: Tuple[bytes, bytes, Path],
                                                                    tmp_path: Path) -> None:
    old = bytearray(blobs[0])
    old[4:6] = (1).to_bytes(2, "little")  # format 1.1
    old[6:8] = (1).to_bytes(2, "little")
    path = tmp_path / "old.npub"
    path.write_bytes(blob_surgery.reseal(bytes(old)))
    with pytest.raises(npuc.BlobError, match=r"blob format 1\.1 has no section digests \(added in 1\.2\)"):
        _npuc.load_compiled(str(path))


def test_a_missing_digest_table_is_refused(blobs: Tuple[bytes, bytes, Path], tmp_path: Path) -> None:
    ours = blobs[0]
    table = blob_surgery.section_table(ours)
    # Drop SDIG (the last section): one entry fewer, the file ends where the section before it ends.
    out = bytearray(ours[:table[-2].offset + table[-2].size])
    out[blob_surgery.SECTION_COUNT_AT:blob_surgery.SECTION_COUNT_AT + 4] = (len(table) - 1).to_bytes(4, "little")
    path = tmp_path / "nosdig.npub"
    path.write_bytes(blob_surgery.reseal(bytes(out)))
    with pytest.raises(npuc.BlobError, match="the section digest table 'SDIG' is missing"):
        _npuc.load_compiled(str(path))
