"""config(dynamic_input) (issue #18): one blob, several fixed input-shape sets, weights stored once.

Each set's output from the dynamic build equals bit for bit what ``Toolkit._specialized`` gives at
that shape (set 0's quantization plan), before and after the blob round trip; the blob stores the
packed weights once (SHPV references them) and is smaller than separate blobs; inference picks the
set by shape and names the allowed sets otherwise; the CLI flag and the YAML key give the Toolkit's
blob byte for byte; bad sets, fixed-shape loaders and a corrupt SHPV are refused naming the problem.
The shared models' copies fix their input size, so their H and W are made dynamic here (as the
exporter left them). bench/dynamic_input.py measures FPS, arena and cosine per set.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

import npuc
from conftest import conv_relu_model, shared_models_dir
from dynamic_models import crnn_model, free_hw

MODELS_DIR = shared_models_dir()
needs_models = pytest.mark.skipif(MODELS_DIR is None, reason="shared models not found (set NPUC_SHARED_MODELS)")

DET_SETS = [[[1, 3, 160, 160]], [[1, 3, 224, 224]], [[1, 3, 320, 320]]]
REC_SETS = [[[1, 3, 48, 160]], [[1, 3, 48, 320]], [[1, 3, 48, 640]]]


def _quiet_build(tk: npuc.Toolkit, **kwargs: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tk.build(**kwargs)
    return out.getvalue()


def _dynamic(model: Path, sets: List[List[List[int]]], quantize: bool) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", dynamic_input=sets)
    tk.load_onnx(model=str(model))
    rng = np.random.default_rng(0)
    dataset = [[rng.standard_normal(sets[0][0]).astype(np.float32)] for _ in range(2)] if quantize else None
    tk._build_log = _quiet_build(tk, do_quantization=quantize, dataset=dataset)  # type: ignore[attr-defined]
    return tk


def _inputs(sets: List[List[List[int]]]) -> List[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.standard_normal(s[0]).astype(np.float32) for s in sets]


def _assert_sets_equal_specialized(tk: npuc.Toolkit, sets: List[List[List[int]]]) -> List[List[np.ndarray]]:
    outs = []
    for shapes, x in zip(sets, _inputs(sets)):
        got = tk.inference(inputs=[x])
        _, sim = tk._specialized(shapes)
        want = sim.run([x])
        for k, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape and np.array_equal(g, w), f"set {shapes}, output {k}"
        outs.append(got)
    return outs


def _sections(tk: npuc.Toolkit) -> Dict[str, int]:
    return {s["kind"]: s["size"] for s in tk.blob_meta["sections"]}


@needs_models
def test_ppocrv4_det_int8_sets_equal_their_specialized_builds_and_the_blob_stores_weights_once(tmp_path: Path) -> None:
    model = free_hw(MODELS_DIR / "ppocrv4_det.onnx", tmp_path / "det.onnx")
    tk = _dynamic(model, DET_SETS, quantize=True)
    assert "calibrating at set 0 [[1, 3, 160, 160]]" in tk._build_log
    assert "dynamic_input: 3 shape sets; packed weights" in tk._build_log and "stored once, shared by 3" in tk._build_log
    outs = _assert_sets_equal_specialized(tk, DET_SETS)
    assert [o[0].shape for o in outs] == [(1, 1, 160, 160), (1, 1, 224, 224), (1, 1, 320, 320)]
    with pytest.raises(npuc.InputError, match=r"input shape\(s\) \[\[1, 3, 256, 256\]\] match none of the model's config\(dynamic_input\) shape sets \(set 0: "
                                              r"\[\[1, 3, 160, 160\]\]; set 1: \[\[1, 3, 224, 224\]\]; set 2: "):
        tk.inference(inputs=[np.zeros((1, 3, 256, 256), np.float32)])

    blob = tmp_path / "det.npub"
    tk.export_blob(str(blob))
    again = tmp_path / "again.npub"
    tk.export_blob(str(again))
    assert blob.read_bytes() == again.read_bytes()  # deterministic
    loaded = npuc.Toolkit()
    loaded.load_blob(str(blob))
    for x, want in zip(_inputs(DET_SETS), outs):
        assert all(np.array_equal(g, w) for g, w in zip(loaded.inference(inputs=[x]), want))
    # The NHWC image of set 2 is recognized too ('auto' layout, checked against every set).
    x2 = _inputs(DET_SETS)[2]
    assert np.array_equal(loaded.inference(inputs=[x2.transpose(0, 2, 3, 1)])[0], outs[2][0])

    # Weights once: SHPV is a fraction of one set's packed weights; the other sets reference them.
    sections = _sections(loaded)
    assert sections["SHPV"] < sections["NWGT"] / 4, sections
    compiled = tk._compiled("test")
    reuse = compiled.shape_variant_reuse()
    assert reuse["packed_weight_bytes_stored"] == sections["NWGT"]
    assert reuse["packed_weight_bytes_per_program"] == 3 * sections["NWGT"]
    assert reuse["programs_sharing_packed_weights"] == 3
    # Smaller than three single-shape blobs (each set's program written alone).
    singles = 0
    for k, v in enumerate([npuc._npuc.compile_model(tk._simulator(), "rk3588", compiled.options)]
                          + list(compiled.shape_variants)):
        v.write(str(tmp_path / f"single{k}.npub"))
        singles += (tmp_path / f"single{k}.npub").stat().st_size
    assert blob.stat().st_size < singles - 1.8 * sections["NWGT"], (blob.stat().st_size, singles)

    # eval_perf / eval_memory per set; the arena the runtime needs is the largest set's.
    perf = loaded.eval_perf(is_print=False)
    assert [s for s, _ in perf.shape_sets] == DET_SETS
    fps = [r.fps for _, r in perf.shape_sets]
    assert perf.fps == fps[0] and fps[0] > fps[1] > fps[2]
    memory = loaded.eval_memory(is_print=False)
    arenas = [r["arena_bytes"] for _, r in memory.shape_sets]
    assert memory["runtime_arena_bytes"] == max(arenas) == arenas[2]
    assert memory["runtime_total_bytes"] < sum(r["total_bytes"] for _, r in memory.shape_sets)
    assert "max over the 3 shape sets" in str(dynamic_text(loaded))


def dynamic_text(tk: npuc.Toolkit) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tk.eval_memory(is_print=True)
    return out.getvalue()


def test_crnn_text_line_widths_int8(tmp_path: Path) -> None:
    # Height 48, widths 160 / 320 / 640: the sequence length follows the width.
    model = crnn_model(tmp_path / "crnn.onnx")
    tk = _dynamic(model, REC_SETS, quantize=True)
    outs = _assert_sets_equal_specialized(tk, REC_SETS)
    assert [o[0].shape for o in outs] == [(1, 40, 37), (1, 80, 37), (1, 160, 37)]
    blob = tmp_path / "crnn.npub"
    tk.export_blob(str(blob))
    loaded = npuc.Toolkit()
    loaded.load_blob(str(blob))
    for x, want in zip(_inputs(REC_SETS), outs):
        assert np.array_equal(loaded.inference(inputs=[x])[0], want[0])


@needs_models
def test_fp16_build_with_two_sets(tmp_path: Path) -> None:
    # ppocr_cls (real weights) takes other widths once its input is dynamic again.
    model = free_hw(MODELS_DIR / "ppocr_cls.onnx", tmp_path / "cls.onnx")
    sets = [[[1, 3, 48, 192]], [[1, 3, 48, 320]]]
    tk = _dynamic(model, sets, quantize=False)
    outs = _assert_sets_equal_specialized(tk, sets)
    blob = tmp_path / "cls.npub"
    tk.export_blob(str(blob))
    loaded = npuc.Toolkit()
    loaded.load_blob(str(blob))
    assert not loaded._compiled("test").quantized
    for x, want in zip(_inputs(sets), outs):
        assert np.array_equal(loaded.inference(inputs=[x])[0], want[0])


def test_cli_flag_and_yaml_key_give_the_toolkit_blob(tmp_path: Path) -> None:
    from test_cli import npuc_cli, user_error

    model = crnn_model(tmp_path / "crnn.onnx")
    sets = REC_SETS[:2]
    tk = _dynamic(model, sets, quantize=False)
    toolkit_blob = tmp_path / "tk.npub"
    tk.export_blob(str(toolkit_blob))
    flag_blob = tmp_path / "flags.npub"
    r = npuc_cli("convert", str(model), "-t", "rk3588", "-o", str(flag_blob),
                 "--dynamic-input", "1,3,48,160", "--dynamic-input", "1,3,48,320")
    assert r.returncode == 0, r.stderr
    assert "set 1 [[1, 3, 48, 320]]:" in r.stdout
    assert flag_blob.read_bytes() == toolkit_blob.read_bytes()
    r = npuc_cli("info", str(flag_blob))
    assert r.returncode == 0, r.stderr
    assert "shape sets (dynamic_input): 2" in r.stdout and "set 1: x: float32[1,3,48,320]" in r.stdout
    assert "SHPV  required" in r.stdout
    r = npuc_cli("perf", str(flag_blob))
    assert r.returncode == 0, r.stderr
    assert "==== dynamic_input set 1: inputs [[1, 3, 48, 320]] ====" in r.stdout
    config = tmp_path / "model_config.yml"
    config.write_text("models:\n  name: crnn\n  platform: onnx\n  model_file_path: crnn.onnx\n  quantize: false\n"
                      "  configs:\n    dynamic_input: [[[1, 3, 48, 160]], [[1, 3, 48, 320]]]\n")
    r = npuc_cli("convert", "-i", str(config), "-t", "rk3588", "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "crnn.npub").read_bytes() == toolkit_blob.read_bytes()
    user_error(npuc_cli("convert", str(model), "-t", "rk3588", "-o", str(tmp_path / "x.npub"),
                        "--dynamic-input", "1,3,48,160;"), "invalid shape set")


@pytest.mark.parametrize("sets, message", [
    ([[[1, 3, 8, 8], [1, 3, 8, 8]]], r"set 0 \[\[1, 3, 8, 8\], \[1, 3, 8, 8\]\] gives 2 shape\(s\) for the model's 1 input"),
    ([[[1, 3, 8, 8]], [[1, 3, 16]]], r"set 1, input 0 'x': \[1, 3, 16\] has rank 3, the input has rank 4"),
    ([[[1, 3, 8, 8]], [[1, 3, 8, 8]]], r"set 1 \[\[1, 3, 8, 8\]\] repeats set 0"),
])
def test_bad_sets_are_refused_naming_set_and_input(sets: Any, message: str, tmp_path: Path) -> None:
    import onnx

    path = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(path))
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", dynamic_input=sets)
    tk.load_onnx(model=str(path), input_size_list=[[1, 3, 8, 8]])
    with pytest.raises(npuc.ConfigError, match=message):
        tk.build(do_quantization=False)


def test_bad_values_are_refused_at_config() -> None:
    with pytest.raises(npuc.ConfigError, match=r"dynamic_input"):
        npuc.Toolkit().config(dynamic_input=[[[1, 3, -8, 8]]])
    with pytest.raises(npuc.ConfigError, match=r"dynamic_input"):
        npuc.Toolkit().config(dynamic_input="1,3,8,8")


def test_batch_together_with_dynamic_input_is_refused(tmp_path: Path) -> None:
    model = crnn_model(tmp_path / "crnn.onnx")
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", dynamic_input=REC_SETS[:2])
    tk.load_onnx(model=str(model))
    with pytest.raises(npuc.NotSupportedError, match=r"rknn_batch_size=2 with config\(dynamic_input\).*dim 0"):
        tk.build(do_quantization=False, rknn_batch_size=2)


def test_a_fixed_shape_loader_is_refused(tmp_path: Path) -> None:
    from darknet_ref import write_tiny

    cfg, weights = write_tiny(tmp_path)
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", dynamic_input=[[[1, 3, 8, 8]], [[1, 3, 16, 16]]])
    tk.load_darknet(model=str(cfg), weight=str(weights))
    with pytest.raises(npuc.NotSupportedError, match=r"dynamic_input\) lists 2 input-shape set\(s\).*fixed its shapes"):
        tk.build(do_quantization=False)


def test_a_corrupt_shpv_is_refused_naming_the_file_and_the_set(tmp_path: Path) -> None:
    from blob_surgery import flip_byte, payloads, reseal_with_digests, with_section

    model = crnn_model(tmp_path / "crnn.onnx")
    tk = _dynamic(model, REC_SETS, quantize=False)
    blob = tmp_path / "crnn.npub"
    tk.export_blob(str(blob))
    good = blob.read_bytes()
    # The last byte of SHPV is set 2's own SDIG: its rebuilt blob no longer verifies.
    bad = tmp_path / "bad.npub"
    bad.write_bytes(reseal_with_digests(flip_byte(good, "SHPV")))
    with pytest.raises(npuc.BlobError, match=rf"blob '{bad}': SHPV section, shape set 2 \[\[1,3,48,640\]\].*does not match the digest"):
        npuc.Toolkit().load_blob(str(bad))
    cut = tmp_path / "cut.npub"
    cut.write_bytes(reseal_with_digests(with_section(good, "SHPV", payloads(good)["SHPV"][:-9])))
    with pytest.raises(npuc.BlobError, match=rf"{cut}.*SHPV section"):
        npuc.Toolkit().load_blob(str(cut))


def test_nhwc_images_with_mean_std_pick_their_set(tmp_path: Path) -> None:
    # The layout is decided per set before mean/std apply: a 16x16 NHWC image is not taken as a
    # 3-channel-mismatched array of set 0.
    import onnx

    model = conv_relu_model()
    for k in (2, 3):
        model.graph.input[0].type.tensor_type.shape.dim[k].dim_param = "hw"[k - 2]
    del model.graph.output[0].type.tensor_type.shape.dim[:]
    onnx.save(model, str(tmp_path / "m.onnx"))
    tk = npuc.Toolkit()
    tk.config(target_platform="rk3588", mean_values=[[10, 20, 30]], std_values=[[2, 4, 8]],
              dynamic_input=[[[1, 3, 8, 8]], [[1, 3, 16, 16]]])
    tk.load_onnx(model=str(tmp_path / "m.onnx"))
    _quiet_build(tk, do_quantization=False)
    image = np.random.default_rng(0).integers(0, 255, (1, 16, 16, 3), dtype=np.uint8)
    got = tk.inference(inputs=[image])[0]
    assert got.shape == (1, 4, 16, 16)
    normalized = (image.astype(np.float32) - [10, 20, 30]) / [2, 4, 8]
    want = tk.inference(inputs=[normalized.transpose(0, 3, 1, 2).astype(np.float32)], inputs_pass_through=[1])[0]
    assert np.array_equal(got, want)


def test_a_set_the_plan_does_not_cover_is_named() -> None:
    from npuc import dynamic_input

    def specialized(shapes: Any) -> Any:
        raise npuc.ConfigError("quantization plan has no entry for value 'v7'")

    with pytest.raises(npuc.NotSupportedError, match=r"set 1 \[\[1, 3, 16, 16\]\]: the optimizer shapes this model's "
                                                     r"graph differently from set 0 .*'v7'"):
        dynamic_input.specialize_all([[[1, 3, 8, 8]], [[1, 3, 16, 16]]], specialized)


def test_two_inputs_per_set_through_the_cli_syntax(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from test_cli import npuc_cli

    w = numpy_helper.from_array(np.random.default_rng(3).standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Add", ["c", "bias"], ["y"])],
        "two_inputs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"]),
                       helper.make_tensor_value_info("bias", TensorProto.FLOAT, [1, 4, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    model = tmp_path / "two.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(model))
    sets = [[[1, 3, 8, 8], [1, 4, 1, 1]], [[1, 3, 16, 16], [1, 4, 1, 1]]]
    tk = _dynamic(model, sets, quantize=False)
    bias = np.arange(4, dtype=np.float32).reshape(1, 4, 1, 1)
    for size in (8, 16):
        assert tk.inference(inputs=[np.ones((1, 3, size, size), np.float32), bias])[0].shape == (1, 4, size, size)
    blob = tmp_path / "tk.npub"
    tk.export_blob(str(blob))
    r = npuc_cli("convert", str(model), "-t", "rk3588", "-o", str(tmp_path / "cli.npub"),
                 "--dynamic-input", "1,3,8,8;1,4,1,1", "--dynamic-input", "1,3,16,16;1,4,1,1")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cli.npub").read_bytes() == blob.read_bytes()
