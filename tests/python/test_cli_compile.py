"""npuc convert / perf / socs: good and bad arguments, and the YAML and flag forms agreeing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import npuc

from test_cli import npuc_cli, user_error


def write_yaml(path: Path, model: Path, extra_configs: str = "", extra_model_keys: str = "") -> Path:
    path.write_text(
        "models:\n"
        "  name: conv_relu\n"
        "  platform: onnx\n"
        f"  model_file_path: {model.name}\n"
        "  subgraphs:\n"
        "    input_size_list:\n"
        "      - [1, 3, 8, 8]\n"
        "    inputs: [x]\n"
        "  quantize: false\n"
        f"{extra_model_keys}"
        "  configs:\n"
        "    optimization_level: 3\n"
        f"{extra_configs}"
    )
    return path


def test_socs_lists_every_profile() -> None:
    r = npuc_cli("socs")
    assert r.returncode == 0, r.stderr
    for name in ("rk3588", "rk3576", "rk3566", "rk3562", "rv1106"):
        assert name in r.stdout
    assert "rk3568" in r.stdout and "rv1103" in r.stdout  # aliases


def test_convert_flag_and_yaml_forms_give_identical_blobs(conv_relu_path: Path, tmp_path: Path) -> None:
    flag_blob = tmp_path / "flags.npub"
    r = npuc_cli("convert", str(conv_relu_path), "-t", "rk3588", "-o", str(flag_blob))
    assert r.returncode == 0, r.stderr
    for text in ("npuc convert summary", "passes fired", "NPU tasks", "FPS on rk3588", "bytes"):
        assert text in r.stdout
    config = write_yaml(tmp_path / "model_config.yml", conv_relu_path)
    r = npuc_cli("convert", "-i", str(config), "-t", "rk3588", "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "conv_relu.npub").read_bytes() == flag_blob.read_bytes()


def test_perf_on_a_blob_and_across_socs(conv_relu_path: Path, tmp_path: Path) -> None:
    blob = tmp_path / "m.npub"
    assert npuc_cli("convert", str(conv_relu_path), "-t", "rk3566", "-o", str(blob)).returncode == 0
    csv = tmp_path / "perf.csv"
    r = npuc_cli("perf", str(blob), "--csv", str(csv))
    assert r.returncode == 0, r.stderr
    assert "rk3566" in r.stdout and "Operator Time Consuming Ranking Table" in r.stdout
    assert csv.read_text().splitlines()[0].startswith("ID,")
    r = npuc_cli("perf", str(conv_relu_path), "--compare-socs")
    assert r.returncode == 0, r.stderr
    assert all(name in r.stdout for name in ("rk3588", "rk3562", "rv1106"))


@pytest.mark.parametrize(
    "args, needle",
    [
        (["convert", "missing.onnx", "-t", "rk3588", "-o", "x.npub"], "does not exist"),
        (["convert", "{model}", "-t", "rk9999", "-o", "x.npub"], "rk9999"),
        (["convert", "{model}", "-t", "rk3588", "-o", "x.npub", "--quantize"], "--dataset"),
        (["convert", "{model}", "-t", "rk3588"], "-o/--output"),
        (["convert", "{model}", "-t", "rk3588", "-o", "x.npub", "--op-target", "conv"], "NAME_OR_OPTYPE"),
        (["perf", "missing.npub"], "does not exist"),
    ],
)
def test_bad_arguments_are_user_errors(conv_relu_path: Path, tmp_path: Path, args: list, needle: str) -> None:
    args = [a.replace("{model}", str(conv_relu_path)) for a in args]
    args = [str(tmp_path / a) if a.endswith(".npub") else a for a in args]
    user_error(npuc_cli(*args), needle)


def test_bad_yaml_keys_are_named(conv_relu_path: Path, tmp_path: Path) -> None:
    bad_config = write_yaml(tmp_path / "a.yml", conv_relu_path, extra_configs="    quantised_algo: normal\n")
    user_error(npuc_cli("convert", "-i", str(bad_config), "-t", "rk3588", "-o", str(tmp_path)), "quantised_algo")
    bad_model_key = write_yaml(tmp_path / "b.yml", conv_relu_path, extra_model_keys="  modle_path: x\n")
    user_error(npuc_cli("convert", "-i", str(bad_model_key), "-t", "rk3588", "-o", str(tmp_path)), "modle_path")
    (tmp_path / "c.yml").write_text("models: [unclosed\n")
    user_error(npuc_cli("convert", "-i", str(tmp_path / "c.yml"), "-t", "rk3588", "-o", str(tmp_path)), "YAML")


def _write_dataset(folder: Path, count: int = 4) -> Path:
    rng = np.random.default_rng(7)
    names = []
    for i in range(count):
        np.save(folder / f"s{i}.npy", rng.uniform(0, 255, (1, 3, 8, 8)).astype(np.float32))
        names.append(f"s{i}.npy")
    (folder / "dataset.txt").write_text("\n".join(names) + "\n")
    return folder / "dataset.txt"


def test_quantized_convert_flag_and_yaml_forms_give_identical_blobs(conv_relu_path: Path, tmp_path: Path) -> None:
    dataset = _write_dataset(tmp_path)
    flag_blob = tmp_path / "flags.npub"
    r = npuc_cli("convert", str(conv_relu_path), "-t", "rk3588", "-o", str(flag_blob), "--quantize",
                 "--dataset", str(dataset), "--algorithm", "mmse", "--method", "layer", "--mean", "10,20,30",
                 "--std", "50,60,70", "--input-size", "1,3,8,8", "--input-name", "x")
    assert r.returncode == 0, r.stderr
    config = write_yaml(tmp_path / "model_config.yml", conv_relu_path,
                        extra_configs="    quantized_algorithm: mmse\n    quantized_method: layer\n"
                        "    mean_values: [10, 20, 30]\n    std_values: [50, 60, 70]\n")
    text = config.read_text().replace("quantize: false", "quantize: true\n  dataset: dataset.txt")
    config.write_text(text)
    r = npuc_cli("convert", "-i", str(config), "-t", "rk3588", "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    yaml_blob = (tmp_path / "out" / "conv_relu.npub").read_bytes()
    assert yaml_blob == flag_blob.read_bytes()
    _, meta = npuc._npuc.load_blob(str(flag_blob))
    assert "QUNT" in meta["extra_sections"]
    assert meta["options"]["quantized_algorithm"] == "'mmse'"


@pytest.mark.parametrize(
    "args, needle",
    [
        (["perf", "{model}", "--soc", "rk9999"], "rk9999"),
        (["perf", "{model}", "--dtype", "int4"], "invalid choice"),
        (["convert", "{model}", "-t", "rk3588", "-o", "x.npub", "--algorithm", "minmax"], "invalid choice"),
        (["convert", "{model}", "-t", "rk3588", "-o", "x.npub", "--mean", "a,b"], "invalid list"),
        (["convert", "{model}", "-t", "rk3588", "-o", "x.npub", "--quantize", "--dataset", "none.txt"], "none.txt"),
        (["convert", "-t", "rk3588", "-o", "x.npub"], "either MODEL.onnx or -i"),
        (["convert", "{model}", "-o", "x.npub"], "-t/--target"),
        (["socs", "extra"], "unrecognized arguments"),
        (["ops", "--bogus"], "unrecognized arguments"),
    ],
)
def test_more_bad_arguments_are_user_errors(conv_relu_path: Path, tmp_path: Path, args: list, needle: str) -> None:
    args = [a.replace("{model}", str(conv_relu_path)) for a in args]
    args = [str(tmp_path / a) if a.endswith((".npub", ".txt")) else a for a in args]
    user_error(npuc_cli(*args), needle)


def test_yaml_problems_are_named(conv_relu_path: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    user_error(npuc_cli("convert", "-i", str(tmp_path / "absent.yml"), "-t", "rk3588", "-o", out), "absent.yml")
    (tmp_path / "a.yml").write_text("other: 1\n")
    user_error(npuc_cli("convert", "-i", str(tmp_path / "a.yml"), "-t", "rk3588", "-o", out), "'models'")
    (tmp_path / "b.yml").write_text("models:\n  name: m\n  model_file_path: nothere.onnx\n")
    user_error(npuc_cli("convert", "-i", str(tmp_path / "b.yml"), "-t", "rk3588", "-o", out), "nothere.onnx")
    (tmp_path / "c.yml").write_text("models:\n  model_file_path: x.onnx\n")
    user_error(npuc_cli("convert", "-i", str(tmp_path / "c.yml"), "-t", "rk3588", "-o", out), "missing 'name'")
    (tmp_path / "d.yml").write_text(f"models:\n  name: m\n  platform: keras\n  model_file_path: {conv_relu_path}\n")
    user_error(npuc_cli("convert", "-i", str(tmp_path / "d.yml"), "-t", "rk3588", "-o", out), "keras")
    # platform: tflite reads the file as TFLite whatever its name: an ONNX file is refused as one.
    (tmp_path / "d2.yml").write_text(f"models:\n  name: m\n  platform: tflite\n  model_file_path: {conv_relu_path}\n")
    user_error(npuc_cli("convert", "-i", str(tmp_path / "d2.yml"), "-t", "rk3588", "-o", out), "not a TFLite model")
    bad_value = write_yaml(tmp_path / "e.yml", conv_relu_path, extra_configs="    quantized_method: tensor\n")
    user_error(npuc_cli("convert", "-i", str(bad_value), "-t", "rk3588", "-o", out), "'channel', 'layer'")
    bad_soc = write_yaml(tmp_path / "f.yml", conv_relu_path)
    user_error(npuc_cli("convert", "-i", str(bad_soc), "-t", "rk9999", "-o", out), "rk9999")
