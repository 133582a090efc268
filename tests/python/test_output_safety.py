"""Outputs never replace an input of the same job, are written whole or not at all, plot formats
are checked before any work, and YAML model names keep blobs inside OUTDIR (issue #15 defects 1,
4 and 11; npuc.output_files)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Dict, List

import numpy as np
import onnx
import pytest

import npuc
import npuc.perf
from npuc import cli
from npuc.output_files import JobInputs, atomic_output, refuse_output
from conftest import conv_relu_model

SOC = "rk3588"


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def folder_listing(folder: Path) -> List[str]:
    return sorted(os.listdir(folder))


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dict[str, Path]:
    """c/m.onnx, c/ds.txt listing c/s0.npy and c/s1.npy; the working directory is c/."""
    folder = tmp_path / "c"
    folder.mkdir()
    onnx.save(conv_relu_model(), str(folder / "m.onnx"))
    rng = np.random.default_rng(0)
    for i in range(2):
        np.save(folder / f"s{i}.npy", rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
    (folder / "ds.txt").write_text("s0.npy\ns1.npy\n")
    monkeypatch.chdir(folder)
    return {"dir": folder, "model": folder / "m.onnx", "dataset": folder / "ds.txt", "sample": folder / "s1.npy"}


def spell(job: Dict[str, Path], how: str) -> str:
    """The model file named another way: as given, through '..' and '.', a symlink, a hard link."""
    model = job["model"]
    if how == "same":
        return "m.onnx"
    if how == "dotted":
        return "../c/./m.onnx"
    if how == "symlink":
        os.symlink("m.onnx", job["dir"] / "link.onnx")
        return "link.onnx"
    os.link(model, job["dir"] / "hard.onnx")
    return "hard.onnx"


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(result: tuple, *needles: str) -> None:
    code, _, err = result
    assert code == 1, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err


def built_toolkit(model: str, dataset: object = None) -> npuc.Toolkit:
    tk = npuc.Toolkit()
    tk.config(target_platform=SOC)
    tk.load_onnx(model=model)
    tk.build(do_quantization=dataset is not None, dataset=dataset)
    return tk


# ---------------------------------------------------------------------- the CLI, defect 1


@pytest.mark.parametrize("how", ["same", "dotted", "symlink", "hardlink"])
def test_convert_refuses_the_model_as_output(job, capsys, how: str) -> None:
    before = sha(job["model"])
    target = spell(job, how)
    result = run_cli(capsys, "convert", "m.onnx", "-t", SOC, "-o", target)
    assert_user_error(result, f"refusing to write the blob to '{target}': it is the loaded model (m.onnx)")
    assert sha(job["model"]) == before


@pytest.mark.parametrize("which", ["dataset", "sample"])
def test_convert_refuses_the_dataset_list_and_a_listed_sample(job, capsys, which: str) -> None:
    before = sha(job[which])
    result = run_cli(capsys, "convert", "m.onnx", "-t", SOC, "-o", str(job[which]), "--quantize", "--dataset", "ds.txt")
    role = "the dataset list" if which == "dataset" else "a calibration sample listed in ds.txt line 2"
    assert_user_error(result, "refusing to write the blob to", f"it is {role}")
    assert sha(job[which]) == before


def test_convert_refuses_a_directory(job, capsys) -> None:
    (job["dir"] / "out").mkdir()
    assert_user_error(run_cli(capsys, "convert", "m.onnx", "-t", SOC, "-o", "out"),
                      "cannot write the blob to 'out': it is a directory")


@pytest.mark.parametrize("command", [("convert", "m.onnx", "-t", SOC, "-o", "new/../m.npub"),
                                     ("run", "m.onnx", "--input", "s0.npy", "--output-dir", "new/../out")])
def test_a_dotdot_after_a_missing_folder_creates_nothing(job, capsys, monkeypatch, command: tuple) -> None:
    # mkdir -p would create 'new' and leave it behind; open() refuses the path. So does npuc
    # (found by fuzz_cli_args: `convert M -o <missing>/../x` created the missing folder).
    before = folder_listing(job["dir"])
    monkeypatch.setattr(npuc.Toolkit, "build", lambda *a, **k: pytest.fail("built before the output folder was checked"))
    result = run_cli(capsys, *command)
    assert_user_error(result, "'new' does not exist, and '..' after it would leave it behind")
    assert result[1] == "", "refused before anything is built or run"
    assert folder_listing(job["dir"]) == before


def test_missing_output_folders_are_still_created(job, capsys) -> None:
    for out in ("a/b/m.npub", "../c/a/../new/m.npub"):  # '..' after folders that exist is fine
        code, _, err = run_cli(capsys, "convert", "m.onnx", "-t", SOC, "-o", out)
        assert code == 0, err
    assert (job["dir"] / "a" / "b" / "m.npub").is_file()
    assert (job["dir"] / "new" / "m.npub").is_file()


def test_convert_refuses_the_yaml_config_as_output(job, capsys) -> None:
    config = job["dir"] / "conv.npub"  # the YAML may have any name: here the one its blob gets
    config.write_text("models:\n  name: conv\n  model_file_path: m.onnx\n")
    before = sha(config)
    assert_user_error(run_cli(capsys, "convert", "-i", "conv.npub", "-t", SOC, "-o", "."),
                      "it is the config file (conv.npub)")
    assert sha(config) == before


@pytest.mark.parametrize("flag", ["--csv", "--json", "--plot"])
def test_perf_refuses_the_model_as_output(job, capsys, flag: str) -> None:
    before = sha(job["model"])
    os.symlink("m.onnx", job["dir"] / "m.png")  # a plot name with a valid extension, still the model
    target = "m.png" if flag == "--plot" else "m.onnx"
    result = run_cli(capsys, "perf", "m.onnx", flag, target)
    assert_user_error(result, f"refusing to write the perf {flag[2:].upper() if flag != '--plot' else 'plot'} "
                      f"to '{target}': it is the loaded model (m.onnx)")
    assert sha(job["model"]) == before


def test_run_refuses_to_write_an_output_over_an_input(job, capsys) -> None:
    out = job["dir"] / "out"
    out.mkdir()
    np.save(out / "y.npy", np.zeros((1, 3, 8, 8), np.float32))  # the input, where output 'y' goes
    before = sha(out / "y.npy")
    result = run_cli(capsys, "run", "m.onnx", "--input", "out/y.npy", "--output-dir", "out")
    assert_user_error(result, "refusing to write an output array to 'out/y.npy': it is --input 0 (out/y.npy)")
    assert sha(out / "y.npy") == before


# ---------------------------------------------------------------------- the Toolkit, defect 1


@pytest.mark.parametrize("how", ["same", "dotted", "symlink", "hardlink"])
def test_export_blob_and_export_onnx_refuse_the_loaded_model(job, how: str) -> None:
    before = sha(job["model"])
    target = spell(job, how)
    tk = built_toolkit("m.onnx")
    with pytest.raises(npuc.OutputError, match=r"refusing to write the blob to .*: it is the loaded model \(m.onnx\)"):
        tk.export_blob(target)
    with pytest.raises(npuc.OutputError, match="refusing to write the ONNX model to .*: it is the loaded model"):
        tk.export_onnx(target)
    assert sha(job["model"]) == before


def test_export_blob_refuses_the_dataset_and_its_samples(job) -> None:
    tk = built_toolkit("m.onnx", dataset="ds.txt")
    for which, role in (("dataset", "the dataset list"), ("sample", "a calibration sample listed in ds.txt line 2")):
        before = sha(job[which])
        with pytest.raises(npuc.OutputError, match=f"it is {role}"):
            tk.export_blob(job[which])
        assert sha(job[which]) == before


def test_export_blob_refuses_the_loaded_blob(job) -> None:
    built_toolkit("m.onnx").export_blob("m.npub")
    before = sha(job["dir"] / "m.npub")
    tk = npuc.Toolkit()
    tk.load_blob("m.npub")
    with pytest.raises(npuc.OutputError, match=r"it is the loaded blob \(m.npub\)"):
        tk.export_blob("./m.npub")
    assert sha(job["dir"] / "m.npub") == before


def test_export_refuses_the_models_external_data(job) -> None:
    onnx.save(conv_relu_model(), "ext.onnx", save_as_external_data=True, location="ext.weights", size_threshold=0)
    before = sha(job["dir"] / "ext.weights")
    tk = built_toolkit("ext.onnx")
    with pytest.raises(npuc.OutputError, match=r"it is external data of the model"):
        tk.export_blob("ext.weights")
    assert sha(job["dir"] / "ext.weights") == before


def test_a_new_model_is_a_new_job(job) -> None:
    """The inputs are those of the model loaded now: the earlier model's file may be written."""
    other = job["dir"] / "other.onnx"
    onnx.save(conv_relu_model(), str(other))
    tk = built_toolkit("other.onnx")
    tk.load_onnx("m.onnx")
    tk.export_onnx(other)
    with pytest.raises(npuc.OutputError):
        tk.export_onnx("m.onnx")


def test_export_refuses_the_pytorch_file(job) -> None:
    torch = pytest.importorskip("torch")
    torch.jit.trace(torch.nn.Conv2d(3, 4, 3), torch.zeros(1, 3, 8, 8)).save("net.pt")
    before = sha(job["dir"] / "net.pt")
    tk = npuc.Toolkit(verbose_file="net.pt")
    with pytest.raises(npuc.OutputError, match=r"verbose_file log to 'net.pt': it is the loaded model \(net.pt\)"):
        tk.load_pytorch("net.pt", input_size_list=[[1, 3, 8, 8]])
    tk = npuc.Toolkit()
    tk.load_pytorch("net.pt", input_size_list=[[1, 3, 8, 8]])
    with pytest.raises(npuc.OutputError, match=r"it is the loaded model \(net.pt\)"):
        tk.export_onnx("./net.pt")
    assert sha(job["dir"] / "net.pt") == before


def test_hybrid_step2_files_are_inputs(job) -> None:
    tk = npuc.Toolkit()
    tk.config(target_platform=SOC)
    tk.load_onnx("m.onnx")
    tk.hybrid_quantization_step1(dataset="ds.txt")
    tk.hybrid_quantization_step2("m.model", "m.data", "m.quantization.cfg")
    files = {"m.model": "model_input", "m.data": "data_input", "m.quantization.cfg": "model_quantization_cfg"}
    for name, role in files.items():
        before = sha(job["dir"] / name)
        with pytest.raises(npuc.OutputError, match=f"it is the hybrid {role}"):
            tk.export_blob(name)
        assert sha(job["dir"] / name) == before


@pytest.mark.parametrize("which", ["model", "dataset"])
def test_verbose_file_that_is_an_input_is_refused_and_left_unchanged(job, which: str) -> None:
    before = sha(job[which])
    tk = npuc.Toolkit(verbose_file=str(job[which]))
    tk.config(target_platform=SOC)  # logged (appended) before the toolkit knows what it reads
    if which == "model":
        with pytest.raises(npuc.OutputError,
                           match=r"refusing to write the verbose_file log to '.*m.onnx': it is the loaded model"):
            tk.load_onnx(model="m.onnx")
    else:
        tk.load_onnx(model="m.onnx")
        with pytest.raises(npuc.OutputError, match="verbose_file log .*: it is the dataset list"):
            tk.build(dataset="ds.txt")
    assert sha(job[which]) == before  # the lines logged to it were taken back


def test_verbose_file_directory_is_refused(job) -> None:
    with pytest.raises(npuc.OutputError, match="cannot write the verbose_file log to '.*c': it is a directory"):
        npuc.Toolkit(verbose_file=str(job["dir"]))


def test_accuracy_analysis_refuses_to_dump_over_its_input(job) -> None:
    golden = job["dir"] / "snap" / "golden"
    golden.mkdir(parents=True)
    np.save(golden / "x.npy", np.load(job["sample"]))  # where the dump of tensor 'x' goes
    before = sha(golden / "x.npy")
    tk = built_toolkit("m.onnx", dataset="ds.txt")
    with pytest.raises(npuc.OutputError, match=r"accuracy_analysis dump to '.*x.npy': it is accuracy_analysis input 0"):
        tk.accuracy_analysis(inputs=[str(golden / "x.npy")], output_dir="snap")
    assert sha(golden / "x.npy") == before
    assert not (job["dir"] / "snap" / "error_analysis.txt").exists()  # nothing written


def test_hybrid_step1_refuses_to_replace_its_dataset_before_any_work(job) -> None:
    data = job["dir"] / "m.data"  # step 1 writes <model stem>.data
    data.write_text("s0.npy\n")
    before = sha(data)
    tk = npuc.Toolkit()
    tk.config(target_platform=SOC)
    tk.load_onnx("m.onnx")
    with pytest.raises(npuc.OutputError, match=r"the hybrid step1 data file to 'm.data': it is the dataset list"):
        tk.hybrid_quantization_step1(dataset="m.data")
    assert sha(data) == before
    assert not (job["dir"] / "m.model").exists() and tk.optimization_report is None  # refused before build


def test_build_dump_dir_does_not_replace_the_model(job) -> None:
    dumps = job["dir"] / "dumps"
    dumps.mkdir()
    model = dumps / "check0_import.onnx"  # the name the first optimizer dump gets
    model.write_bytes(job["model"].read_bytes())
    before = sha(model)
    tk = npuc.Toolkit()
    tk.load_onnx(str(model))
    with pytest.raises(npuc.OutputError, match="optimizer dump .*check0_import.onnx': it is the loaded model"):
        tk.build(do_quantization=False, dump_dir=str(dumps))
    assert sha(model) == before
    assert folder_listing(dumps) == ["check0_import.onnx"]  # no other dump moved in, no staging folder left


def test_build_dump_dir_writes_the_dumps(job) -> None:
    built = npuc.Toolkit()
    built.load_onnx("m.onnx")
    built.build(do_quantization=False, dump_dir="dumps")
    names = folder_listing(job["dir"] / "dumps")
    assert names and all(n.startswith("check") and n.endswith(".onnx") for n in names)


# ---------------------------------------------------------------------- defect 11: plot formats


def test_plot_with_an_unknown_format_is_refused_before_any_work(job, capsys, monkeypatch) -> None:
    formats = "use one of .eps, .jpeg, .jpg, .pdf, .png"
    result = run_cli(capsys, "perf", "m.onnx", "--plot", "x.onnx")
    assert_user_error(result, "cannot write the perf plot to 'x.onnx': '.onnx' is not an image format "
                      "matplotlib writes", formats)
    tk = npuc.Toolkit()
    tk.config(target_platform=SOC)
    tk.load_onnx("m.onnx")
    monkeypatch.setattr(npuc.perf, "eval_perf", lambda *a, **k: pytest.fail("eval_perf ran before the check"))
    with pytest.raises(npuc.OutputError, match="'.onnx' is not an image format"):
        tk.eval_perf(plot_path="x.onnx", is_print=False)
    report = npuc.perf.PerfReport(npuc._npuc.eval_perf(tk.model, SOC, {}, False, "int8", True, ""))
    with pytest.raises(npuc.OutputError, match="it has no image extension"):
        report.plot("plot")
    assert not (job["dir"] / "x.onnx").exists()


def test_plot_follows_the_extension(job) -> None:
    report = npuc.perf.eval_perf("m.onnx", SOC)
    assert report.plot("p.svg").read_text().lstrip().startswith("<?xml")
    assert Path("p.pdf").exists() is False
    report.plot("p.pdf")
    assert Path("p.pdf").read_bytes()[:4] == b"%PDF"
    with pytest.raises(npuc.OutputError, match="it is the loaded model"):
        report.to_json("../c/m.onnx")  # a report from a model path remembers it


# ---------------------------------------------------------------------- atomic writes


def test_a_failing_export_keeps_the_earlier_blob_and_leaves_no_temporary(job, monkeypatch) -> None:
    tk = built_toolkit("m.onnx")
    tk.export_blob("out.npub")
    before, listing = sha(job["dir"] / "out.npub"), folder_listing(job["dir"])

    class HalfWriter:
        def write(self, path: str) -> None:
            Path(path).write_bytes(b"NPUB half")
            raise npuc.BlobError("simulated failure half-way")

    monkeypatch.setattr(npuc.Toolkit, "_compiled", lambda self, caller: HalfWriter())
    with pytest.raises(npuc.BlobError, match="half-way"):
        tk.export_blob("out.npub")
    assert sha(job["dir"] / "out.npub") == before
    assert folder_listing(job["dir"]) == listing


def test_a_failing_rename_keeps_the_earlier_file(job, monkeypatch) -> None:
    report = npuc.perf.eval_perf("m.onnx", SOC)
    Path("p.csv").write_text("earlier\n")
    listing = folder_listing(job["dir"])

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(npuc.OutputError, match="cannot write the perf CSV to 'p.csv': No space left on device"):
        report.to_csv("p.csv")
    assert Path("p.csv").read_text() == "earlier\n"
    assert folder_listing(job["dir"]) == listing


def test_a_missing_folder_is_a_clear_error(job) -> None:
    tk = built_toolkit("m.onnx")
    with pytest.raises(npuc.OutputError, match="cannot write the ONNX model to 'nowhere/m2.onnx': "
                       "folder 'nowhere' does not exist"):
        tk.export_onnx("nowhere/m2.onnx")


def test_permissions_follow_open(job) -> None:
    """A new file: 0666 minus the umask; an existing file keeps its mode, as open('w') would."""
    old = os.umask(0o027)
    try:
        with atomic_output("new.bin", "a test file") as tmp:
            Path(tmp).write_bytes(b"1")
        Path("kept.bin").write_bytes(b"0")
        os.chmod("kept.bin", 0o604)
        with atomic_output("kept.bin", "a test file") as tmp:
            Path(tmp).write_bytes(b"1")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat("new.bin").st_mode) == 0o640
    assert stat.S_IMODE(os.stat("kept.bin").st_mode) == 0o604 and Path("kept.bin").read_bytes() == b"1"


def test_a_symlinked_output_is_written_through(job) -> None:
    Path("real.json").write_text("{}")
    os.symlink("real.json", "link.json")
    npuc.perf.eval_perf("m.onnx", SOC).to_json("link.json")
    assert os.path.islink("link.json") and '"summary"' in Path("real.json").read_text()


def test_refuse_output_compares_files_not_names(job) -> None:
    inputs = JobInputs()
    inputs.add("m.onnx", "the loaded model")
    inputs.add("absent.onnx", "a missing file")  # nothing to protect: ignored
    refuse_output("absent.onnx", "x", inputs)
    refuse_output("m2.onnx", "x", inputs)
    with pytest.raises(npuc.OutputError, match=r"to write x to '.*c/m.onnx': it is the loaded model \(m.onnx\)"):
        refuse_output(str(job["model"]), "x", inputs)
    for name, problem in (("", "the file name is empty"), ("a\0b", "NUL byte")):
        with pytest.raises(npuc.OutputError, match=problem):
            refuse_output(name, "x")


# ---------------------------------------------------------------------- defect 4: YAML names


def write_config(folder: Path, names: List[str]) -> Path:
    config = folder / "cfg.yml"
    config.write_text("models:\n" + "".join(f"  - name: {n!r}\n    model_file_path: m.onnx\n".replace("'", '"')
                                            for n in names))
    return config


@pytest.mark.parametrize("name, problem", [
    ("../../x", "is a path"), ("/tmp/x", "is a path"), ("a/b", "is a path"), ("a\\b", "is a path"),
    ("", "is empty"), ("..", "names a folder"), ("a\0b", "contains a NUL byte"),
])
def test_yaml_names_that_leave_outdir_are_refused(job, capsys, name: str, problem: str) -> None:
    write_config(job["dir"], ["ok", name])
    result = run_cli(capsys, "convert", "-i", "cfg.yml", "-t", SOC, "-o", "out")
    assert_user_error(result, "cfg.yml: models[1]: name", problem, "OUTDIR/<name>.npub")
    assert not (job["dir"] / "out").exists()  # refused before anything was built


def test_yaml_duplicate_names_are_refused_before_anything_is_built(job, capsys) -> None:
    write_config(job["dir"], ["a", "b", "a"])
    result = run_cli(capsys, "convert", "-i", "cfg.yml", "-t", SOC, "-o", "out")
    assert_user_error(result, "cfg.yml: models[0] and models[2] have the same name 'a'")
    assert not (job["dir"] / "out").exists()


def test_yaml_plain_names_go_into_outdir(job, capsys) -> None:
    write_config(job["dir"], ["a", "a..b"])
    code, _, err = run_cli(capsys, "convert", "-i", "cfg.yml", "-t", SOC, "-o", "out")
    assert code == 0, err
    assert folder_listing(job["dir"] / "out") == ["a..b.npub", "a.npub"]
