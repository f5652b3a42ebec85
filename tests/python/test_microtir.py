"""The Python package microtir, function by function, against the CLI's own figures.

Every public function and class: load (path, bytes, TIR), the model's tensors, layers and
graph, compile (c, llvm, wasm; board=; options), the artifact's files, header, metadata,
sources, passes, memory plan and export, run on the host and on Cortex-M4 (QEMU) with
per-layer counts and the plot, parse / run_tir, errors as microtir.Error with the CLI's
message and location, the HTML views, and a notebook-like script in a fresh python.
"""

import json
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from conftest import CONV_CASE, DIGITS, SOURCE_DIR, have_tools

MATMUL = os.path.join(SOURCE_DIR, "examples", "matmul.tir")


def run_cli(cli, *args):
    p = subprocess.run([cli, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


# --- load ---------------------------------------------------------------------------


def test_load_digits_tensors_and_layers(microtir, digits):
    assert isinstance(digits, microtir.Model)
    assert digits.name == "digits"
    assert [(t.name, t.dtype, t.shape) for t in digits.inputs] == [("x", "float32", (1, 1, 8, 8))]
    assert [t.name for t in digits.outputs] == ["probs"]
    assert digits.inputs[0].quantization is None
    ops = [layer.op for layer in digits.layers]
    assert "conv2d" in ops and "dense" in ops
    # The model view's MACs: the conv and dense layers carry them, the total is their sum.
    assert digits.macs == sum(layer.macs for layer in digits.layers) > 0
    conv = next(layer for layer in digits.layers if layer.op == "conv2d")
    assert conv.macs > 0 and conv.weight_bytes > 0 and conv.activation_bytes == 4 * int(np.prod(conv.shape))
    assert "digits" in repr(digits)


def test_model_graph_is_the_json_graph(digits):
    with open(DIGITS) as f:
        assert digits.graph == json.load(f)


def test_load_tflite_bytes_quantization_and_graph(microtir, cli):
    with open(os.path.join(CONV_CASE, "model.tflite"), "rb") as f:
        model = microtir.load(f.read(), name="conv")
    x, y = model.inputs[0], model.outputs[0]
    assert (x.name, x.dtype, x.shape) == ("x0", "int8", (1, 8, 7, 7))
    assert x.quantization is not None and x.quantization.scale > 0
    assert (y.name, y.dtype, y.shape) == ("y0", "int8", (1, 4, 4, 8))
    # .graph is what `microtir import` writes.
    rc, out, err = run_cli(cli, "import", os.path.join(CONV_CASE, "model.tflite"))
    assert rc == 0, err
    assert model.graph == json.loads(out)


def test_load_onnx_and_bytes_of_a_json_graph(microtir, digits):
    onnx = microtir.load(os.path.join(SOURCE_DIR, "models", "digits", "digits.onnx"))
    assert [t.shape for t in onnx.inputs] == [(1, 1, 8, 8)] and onnx.macs == digits.macs
    graph = {k: v for k, v in digits.graph.items()}
    with pytest.raises(microtir.Error, match="cannot open"):  # its weights are files beside it
        microtir.load(json.dumps(graph).encode())


def test_load_tir_file_and_parse(microtir):
    program = microtir.load(MATMUL)
    assert isinstance(program, microtir.Program)
    assert program.functions == ["matmul"]
    again = microtir.parse(program.text)
    assert again.text == program.text and str(again) == program.text


# --- TIR ----------------------------------------------------------------------------


def test_run_tir_matches_numpy(microtir):
    a = np.load(os.path.join(SOURCE_DIR, "examples", "matmul_A.npy"))
    b = np.load(os.path.join(SOURCE_DIR, "examples", "matmul_B.npy"))
    with open(MATMUL) as f:
        result = microtir.run_tir(f.read(), inputs={"A": a, "B": b})
    assert result.func == "matmul" and result.returned is None
    assert list(result.outputs) == ["C"]
    np.testing.assert_allclose(result["C"], a @ b, rtol=1e-6)


def test_run_tir_scalars_and_inouts(microtir):
    program = microtir.parse(
        "@T.prim_func\n"
        "def axpy(a: T.float32, n: T.int32, X: T.Buffer((n,), \"float32\"), Y: T.Buffer((n,), \"float32\")):\n"
        "    for i in range(n):\n"
        "        Y[i] = Y[i] + a * X[i]\n"
    )
    x = np.arange(4, dtype=np.float32)
    y = np.ones(4, dtype=np.float32)
    result = program.run(inputs={"X": x}, inouts={"Y": y}, scalars={"a": 2.0, "n": 4})
    np.testing.assert_array_equal(result["Y"], 1 + 2 * x)


# --- errors -------------------------------------------------------------------------


def test_parse_error_has_the_cli_message_and_location(microtir, cli, tmp_path):
    text = "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    A[0] = undefined_name\n"
    with pytest.raises(microtir.Error) as info:
        microtir.parse(text, filename="bad.tir")
    e = info.value
    assert (e.file, e.line) == ("bad.tir", 3) and e.column is not None and not e.internal
    assert e.location == f"bad.tir:3:{e.column}"
    bad = tmp_path / "bad.tir"
    bad.write_text(text)
    rc, _, err = run_cli(cli, "parse", str(bad))
    assert rc == 1
    # The same rendering the CLI prints after "microtir: ", its path aside.
    assert err == "microtir: " + e.rendered.replace("bad.tir", str(bad))


def test_errors_without_location(microtir, digits_artifact, digits):
    with pytest.raises(microtir.Error, match="no input 'nope'"):
        digits_artifact.run({"x": np.zeros((1, 1, 8, 8), np.float32), "nope": np.zeros(1, np.float32)})
    with pytest.raises(microtir.Error, match="model input 'x'"):
        digits_artifact.run({})
    with pytest.raises(microtir.Error, match="must be float32"):
        digits_artifact.run(np.zeros((1, 1, 8, 8), np.int8))
    with pytest.raises(microtir.Error, match="unknown|option"):
        microtir.compile(digits, "c -no-such-option=1")
    with pytest.raises(microtir.Error) as info:
        microtir.load(os.path.join(SOURCE_DIR, "no-such-model.tflite"))
    assert "no-such-model.tflite" in str(info.value) and info.value.line is None
    with pytest.raises(microtir.Error, match="profile_layers=True"):
        microtir.Report({"target": "host", "board": "", "compiler": "", "flash_bytes": 0, "ram_bytes": 0,
                         "workspace_bytes": 0, "io_buffer_bytes": 0, "state_bytes": 0, "stack_bytes": None,
                         "instructions": None}, "").plot()


# --- compile ------------------------------------------------------------------------


def test_compile_digits_c_artifact(microtir, digits_artifact, tmp_path):
    a = digits_artifact
    assert "-unpacked-api=1" in a.target
    assert "tvmgen_digits_run" in a.header
    assert a.metadata["model_name"] == "digits" and a.metadata["memory"]["pool_bytes"] > 0
    assert "metadata.json" in a.files and json.loads(a.files["metadata.json"]) == a.metadata
    assert any(p.endswith(".c") for p in a.sources) and all(p.startswith("codegen/") for p in a.sources)
    names = [p.name for p in a.passes]
    assert names[0] == "input" and "plan_memory" in names
    assert "T.prim_func" in str(a.passes[-1])
    assert "workspace" in a.memory_plan.lower() or "pool" in a.memory_plan.lower()
    tar = a.export(tmp_path / "digits.tar")
    with tarfile.open(tar) as t:
        assert sorted(t.getnames()) == sorted(a.files)
    folder = a.export(tmp_path / "digits")
    with open(os.path.join(folder, "metadata.json"), "rb") as f:
        assert f.read() == a.files["metadata.json"]


def test_compile_matches_cli_files(microtir, digits, digits_artifact, cli, tmp_path):
    out = tmp_path / "cli.tar"
    rc, _, err = run_cli(cli, "compile", DIGITS, "-o", str(out))
    assert rc == 0, err
    with tarfile.open(out) as t:
        cli_files = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
    assert cli_files == digits_artifact.files


def test_compile_targets_boards_and_options(microtir, digits):
    llvm = microtir.compile(digits, "llvm", board="cortex-m4")
    assert "-mtriple=thumbv7em" in llvm.target and any(p.endswith(".ll") for p in llvm.sources)
    wasm = microtir.compile(digits, "wasm")
    assert any(p.endswith(".wat") for p in wasm.sources)
    m4 = microtir.compile(digits, board="cortex-m4", link_params=False)
    assert "-mcpu=cortex-m4" in m4.target and "-link-params=0" in m4.target
    with pytest.raises(microtir.Error, match="board="):
        microtir.compile(digits, "wasm", board="cortex-m4")
    assert "plan_memory" in microtir.passes()


# --- run ----------------------------------------------------------------------------


def test_run_digits_on_host_matches_cli(microtir, digits_artifact, digits_sample, cli, tmp_path):
    result = digits_artifact.run(digits_sample)
    probs = result["probs"]
    assert probs.shape == (1, 10) and probs.dtype == np.float32
    assert int(np.argmax(probs)) == 5 and abs(float(probs.sum()) - 1) < 1e-5  # the bundled sample is a 5
    assert result.comparison[0]["ok"] and result.report.target == "host"
    assert result.report.flash_bytes > 0 and result.report.ram_bytes >= result.report.workspace_bytes
    assert "host" in repr(result.report) and "<table>" in result._repr_html_()

    tar = digits_artifact.export(tmp_path / "digits.tar")
    np.save(tmp_path / "x.npy", digits_sample)
    rc, out, err = run_cli(cli, "run", tar, "--target", "host", "--input", f"x={tmp_path / 'x.npy'}", "--json")
    assert rc == 0, err
    cli_run = json.loads(out)
    assert np.array_equal(np.array(cli_run["outputs"][0]["values"], np.float32), probs.ravel())
    figures = ("flash_bytes", "ram_bytes", "workspace_bytes", "io_buffer_bytes")
    assert {k: cli_run["report"][k] for k in figures} == {k: result.report.data[k] for k in figures}


def test_budget_gate_passes_and_fails_as_the_cli(microtir, digits_artifact, digits_sample):
    flash = digits_artifact.run(digits_sample).report.flash_bytes
    within = digits_artifact.run(digits_sample, max_flash=flash, max_ram="64M")
    assert within.budget["ok"] and [c["resource"] for c in within.budget["checks"]] == ["flash", "RAM"]
    assert within.budget["checks"][0]["used"] == flash
    with pytest.raises(microtir.BudgetExceeded) as over:
        digits_artifact.run(digits_sample, max_flash=flash - 1)
    assert "budget on host: EXCEEDED" in str(over.value) and isinstance(over.value, microtir.Error)
    assert over.value.budget["checks"][0]["over_by"] == 1 and over.value.result.outputs["probs"].shape == (1, 10)
    with pytest.raises(microtir.Error, match="bad --max-ram '12Q'"):
        digits_artifact.run(digits_sample, max_ram="12Q")


def test_tflite_int8_bit_exact_against_cli_and_tflm(microtir, cli, tmp_path):
    model_path = os.path.join(CONV_CASE, "model.tflite")
    x = np.load(os.path.join(CONV_CASE, "input_0.npy"))
    artifact = microtir.compile(model_path)
    got = artifact.run({"x0": x})["y0"]
    rc, _, err = run_cli(cli, "run", model_path, "--target", "host", "--input",
                         f"x0={os.path.join(CONV_CASE, 'input_0.npy')}", "--output-dir", str(tmp_path))
    assert rc == 0, err
    assert got.dtype == np.int8 and np.array_equal(got, np.load(tmp_path / "y0.npy"))
    assert np.array_equal(got, np.load(os.path.join(CONV_CASE, "output_0.npy")))  # TFLite Micro's bytes


def test_compile_with_a_schedule_record(microtir, cli, tmp_path):
    # The record from the CLI's search space: the convolution's first knob switched off.
    model_path = os.path.join(CONV_CASE, "model.tflite")
    rc, out, err = run_cli(cli, "tune", model_path, "--target", "cortex-m4", "--space")
    assert rc == 0, err
    space = json.loads(out)
    layer = space["layers"][0]
    record = {"format": "microtir-schedule-record", "version": 1, "model": space["model"],
              "layers": [{"operator": layer["operator"], "node": layer["node"], "op": layer["op"],
                          "schedules": {layer["schedules"][0]: False}}]}
    plain = microtir.compile(model_path, board="cortex-m4")
    tuned = microtir.compile(model_path, board="cortex-m4", schedules=record)
    assert tuned.metadata["schedule_record"]["layers"] == 1 and "schedule_record" not in plain.metadata
    assert tuned.sources != plain.sources
    x = np.load(os.path.join(CONV_CASE, "input_0.npy"))
    assert np.array_equal(tuned.run({"x0": x})["y0"], np.load(os.path.join(CONV_CASE, "output_0.npy")))
    record["model"] = {"name": "other.tflite", "fingerprint": "f" * 32}
    with pytest.raises(microtir.Error, match="was made for model 'other.tflite'"):
        microtir.compile(model_path, board="cortex-m4", schedules=record)


@pytest.mark.skipif(not have_tools("arm-none-eabi-gcc", "qemu-system-arm"), reason="no Cortex-M toolchain or QEMU")
def test_run_on_cortex_m4_profile_layers_and_plot(microtir, digits, digits_sample, tmp_path):
    artifact = microtir.compile(digits, board="cortex-m4")
    result = artifact.run({"x": digits_sample}, target="cortex-m4", profile_layers=True)
    report = result.report
    assert report.target == "cortex-m4" and report.instructions > 0 and report.stack_bytes > 0
    assert report.layers and all(layer.instructions > 0 for layer in report.layers)
    assert sum(layer.instructions for layer in report.layers) < report.instructions
    # digits has no band loops: every entry is one call, as the CLI's JSON says.
    assert [layer.calls for layer in report.layers] == [l["calls"] for l in report.data["layers"]] == [1] * len(report.layers)
    assert f"instructions per inference: {report.instructions:,}" in report.text
    assert "instructions per operator call" in report.text and "instructions per operator call" in report._repr_html_()
    import matplotlib

    matplotlib.use("Agg")
    png = tmp_path / "layers.png"
    ax = report.plot(path=str(png))
    assert len(ax.patches) == len(report.layers)
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


# --- Jupyter and help -----------------------------------------------------------------


def test_html_views_and_docstrings(microtir, digits):
    html = digits._repr_html_()
    assert html.startswith("<table>") and html.count("<tr>") == len(digits.layers) + 1
    # help() reads well: every public function says what it does and is annotated.
    for f in (microtir.load, microtir.compile, microtir.parse, microtir.run_tir, microtir.passes,
              microtir.Artifact.run, microtir.Artifact.export, microtir.Report.plot, microtir.Program.run):
        assert f.__doc__ and len(f.__doc__.split()) >= 8, f.__name__
        assert "return" in f.__annotations__, f.__name__
    assert "board" in microtir.compile.__doc__ and "Raises" in microtir.compile.__doc__
    assert microtir.__version__


NOTEBOOK = r"""
import numpy as np, microtir, matplotlib
matplotlib.use("Agg")
model = microtir.load(MODEL)
html = model._repr_html_()
artifact = microtir.compile(model)
x = np.load(SAMPLE)
run = artifact.run({model.inputs[0].name: x})
print(model.name, int(np.argmax(run.outputs["probs"])), run.report.flash_bytes > 0, "<table>" in html)
"""


def test_notebook_like_script(tmp_path):
    script = NOTEBOOK.replace("MODEL", repr(DIGITS)).replace(
        "SAMPLE", repr(os.path.join(SOURCE_DIR, "models", "digits", "sample_x.npy")))
    p = subprocess.run([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    name, label, flash, html = p.stdout.split()
    assert (name, flash, html) == ("digits", "True", "True") and 0 <= int(label) < 10
