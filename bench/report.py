#!/usr/bin/env python3
"""The benchmark report: runs every benchmark that exists, side by side in one run, and
writes bench/report.md with SVG charts (bench/report-*.svg), stating the machine, the
tool versions and the date. Not a test: numbers are measured, not asserted.

usage: python3 bench/report.py [BUILD_DIR] [WASM_BUILD_DIR]   (defaults: build, build-wasm)
       python3 bench/report.py --charts-only   redraws the charts that can be drawn from the figures
                                               already in bench/report.md (compile latency), runs nothing
"""
import re
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, sys.argv[1] if len(sys.argv) > 1 else "build")
WASM = os.path.join(ROOT, sys.argv[2] if len(sys.argv) > 2 else "build-wasm")
CLI = os.path.join(BUILD, "core/cli/microtir")
TARGETS = ["host", "cortex-m3", "cortex-m4", "cortex-m7", "riscv32", "wasm32"]
# MEASURING.md: the reference figures (int8, Cortex-M4), instructions per MAC.
REFERENCE = {"vendor kernels (DS-CNN, int8)": 2.93, "vendor kernels (ResNet-8, int8)": 2.20,
             "plain C loop nest (DS-CNN, int8)": 13.13, "plain C loop nest (ResNet-8, int8)": 7.63}


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, **kw)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def version(cmd):
    code, out, err = run(cmd)
    text = (out or err).strip().splitlines()
    return text[0] if code == 0 and text else "not found"


def bar_chart(path, title, rows, unit, reference=None):
    """A horizontal bar chart: rows of (label, value[, second value]); optional reference lines."""
    width, bar_h, gap = 720, 18, 8
    left = max(260, 16 + 7 * max(len(r[0]) for r in rows))  # room for the longest label
    series = max(len(r) - 1 for r in rows)
    top = max(max(r[1:]) for r in rows + [("", *(reference or {}).values())] if len(r) > 1) or 1
    height = 40 + len(rows) * (series * bar_h + gap) + 30
    colors = ["#3b6ea8", "#e39b3b"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<text x="8" y="20" font-size="14" font-weight="bold">{title}</text>']
    y = 36
    scale = (width - left - 80) / top
    for r in rows:
        out.append(f'<text x="{left - 6}" y="{y + bar_h - 4}" text-anchor="end">{r[0]}</text>')
        for k, v in enumerate(r[1:]):
            out.append(f'<rect x="{left}" y="{y}" width="{max(v * scale, 1):.1f}" height="{bar_h - 2}" fill="{colors[k % 2]}"/>')
            out.append(f'<text x="{left + v * scale + 4:.1f}" y="{y + bar_h - 5}">{v:,.2f} {unit}</text>')
            y += bar_h
        y += gap
    for label, v in (reference or {}).items():
        x = left + v * scale
        out.append(f'<line x1="{x:.1f}" y1="30" x2="{x:.1f}" y2="{y}" stroke="#b33" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{x + 3:.1f}" y="{y + 14}" fill="#b33" font-size="10">{label}</text>')
        y += 12
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out).replace(f'height="{height}"', f'height="{y + 20}"', 1) + "\n")


def latency_chart(text):
    """The compile-latency chart from compile_latency.js's table (`case  wasm ms  native ms  ratio`);
    returns the Markdown lines that show it, or [] when the table has no rows."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^(.*?)\s{2,}([\d.]+)\s+([\d.]+|-)\s+([\d.]+|-)\s*$", line)
        if m:
            rows.append((m.group(1).strip(), float(m.group(2))) +
                        ((float(m.group(3)),) if m.group(3) != "-" else ()))
    if not rows:
        return []
    bar_chart(os.path.join(ROOT, "bench/report-latency.svg"),
              "Compile latency, ms (median): wasm core in node (blue), native CLI (orange)", rows, "ms")
    return ["", "![compile latency, wasm vs native](report-latency.svg)", "",
            "The native figure is the CLI as a process, start-up and file writes included; a case the CLI cannot "
            "run the same way has one bar."]


def charts_only():
    """Redraws the compile-latency chart from the figures in the committed report, and links it."""
    path = os.path.join(ROOT, "bench/report.md")
    md = open(path, encoding="utf-8").read()
    m = re.search(r"## Compile latency[^\n]*\n\n```text\n(.*?)```\n?", md, re.S)
    if not m:
        print("bench/report.md has no compile-latency figures; run the whole report", file=sys.stderr)
        return 1
    lines = latency_chart(m.group(1))
    if lines and "report-latency.svg" not in md:
        md = md[:m.end()].rstrip("\n") + "\n" + "\n".join(lines) + "\n" + md[m.end():]
        with open(path, "w", encoding="utf-8") as f:
            f.write(md)
    print("wrote bench/report-latency.svg", file=sys.stderr)
    return 0


def main():
    if sys.argv[1:] == ["--charts-only"]:
        return charts_only()
    if not os.access(CLI, os.X_OK):
        print(f"bench/report.py: no {CLI}; build first (bash scripts/build.sh)", file=sys.stderr)
        return 1
    md = ["# microtir benchmark report", "",
          f"Generated by `python3 bench/report.py` on {datetime.date.today().isoformat()}; every figure below was",
          "measured in this one run. Machine and tools:", "",
          f"- {platform.node()}: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
          f"- {version(['cc', '--version'])}; {version(['clang', '--version'])}",
          f"- {version(['arm-none-eabi-gcc', '--version'])}; {version(['qemu-system-arm', '--version'])}",
          f"- node {version(['node', '--version'])}; {version(['emcc', '--version'])}; {version([CLI, '--version'])}", "",
          "Instruction counts, sizes and memory are exact and repeatable; wall-time ratios (calling conventions,",
          "LLVM vs C, compile latency) move by several percent between runs on a shared machine.", ""]

    # 1. The memory planner: pool vs lower bound.
    print("[1/5] memory planner", file=sys.stderr)
    code, out, _ = run([os.path.join(BUILD, "bench/memory_planner_bench"), "--benchmark_filter=plan_memory$",
                        "--benchmark_format=json"])
    rows = []
    if code == 0:
        for b in json.loads(out)["benchmarks"]:
            model = b["name"].split("/")[1]
            rows.append((model, b["pool_bytes"] / 1024, b["lower_bound_bytes"] / 1024))
    md += ["## Memory: workspace pool vs lower bound", "",
           "The lower bound is the most bytes live at once; published planners land at 1.10 to 1.17 on these graphs.", "",
           "| model | pool (KiB) | lower bound (KiB) | ratio |", "|---|---:|---:|---:|"]
    md += [f"| {m} | {p:.1f} | {lb:.1f} | {p / lb:.2f} |" for m, p, lb in rows]
    if rows:
        bar_chart(os.path.join(ROOT, "bench/report-memory.svg"), "Workspace pool (blue) vs lower bound (orange), KiB",
                  rows, "KiB")
        md += ["", "![pool vs lower bound](report-memory.svg)"]

    # 2. The bundled model on every target.
    print("[2/5] targets", file=sys.stderr)
    md += ["", "## The bundled digits CNN on every target (float32, C backend, -O2)", "",
           "| target | flash (B) | static RAM (B) | stack (B) | instructions / inference |", "|---|---:|---:|---:|---:|"]
    per_target = []
    with tempfile.TemporaryDirectory() as work:
        tar = os.path.join(work, "digits.tar")
        run([CLI, "compile", "models/digits/digits.json", "-o", tar])
        for t in TARGETS:
            code, out, err = run([CLI, "run", tar, "--input", "x=models/digits/sample_x.npy", "--target", t, "--json"])
            if code != 0:
                md.append(f"| {t} | failed: {err.strip().splitlines()[-1] if err.strip() else code} | | | |")
                continue
            r = json.loads(out)["report"]
            stack = r["stack_bytes"] if r.get("stack_bytes") is not None else "n/a"
            instr = f"{r['instructions']:,}" if r.get("instructions") else "n/a"
            md.append(f"| {t} | {r['flash_bytes']:,} | {r['ram_bytes']:,} | {stack} | {instr} |")
            if r.get("instructions"):
                per_target.append((t, r["instructions"] / 23680))
    if per_target:
        bar_chart(os.path.join(ROOT, "bench/report-instructions.svg"),
                  "Instructions per MAC, digits CNN (float32; 23,680 MACs)", per_target, "instr/MAC",
                  reference={"plain C int8 (ResNet-8)": REFERENCE["plain C loop nest (ResNet-8, int8)"]})
        md += ["", "![instructions per MAC](report-instructions.svg)", "",
               "Reference figures from `MEASURING.md` (int8 on Cortex-M4, instructions per MAC): " +
               ", ".join(f"{k} {v}" for k, v in REFERENCE.items()) +
               ". microtir's figures here are float32 (the int8 operators are not built yet), so they compare with "
               "the plain-C column, not with the vendor kernels."]

    # 2b. The four MLPerf-Tiny-shaped graphs on Cortex-M4, C and LLVM backends.
    print("[2b/5] MLPerf Tiny shapes on cortex-m4", file=sys.stderr)
    md += ["", "## MLPerf-Tiny-shaped graphs on Cortex-M4 (float32, random weights, `tools/make_mlperf_graphs.py`)", "",
           "Instructions counted exactly around `run` (QEMU `-icount`); pool and lower bound from the host run's memory plan.", "",
           "| model | MACs | C: instructions | C: instr/MAC | LLVM: instructions | LLVM: instr/MAC | flash (B) | RAM (B) | pool / lower bound |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    per_model = []
    with tempfile.TemporaryDirectory() as work:
        code, out, _ = run(["python3", "tools/make_mlperf_graphs.py", work])
        macs = dict(line.split() for line in out.strip().splitlines())
        for model, n in macs.items():
            n = int(n)
            graph = os.path.join(work, model, model + ".json")
            x = "x=" + os.path.join(work, model, "input.npy")
            counts, report = {}, {}
            for backend in ["c", "llvm"]:
                code, out, err = run([CLI, "run", graph, "--input", x, "--target", "cortex-m4", "--backend", backend,
                                      "--json"], timeout=1800)
                if code == 0:
                    r = json.loads(out)["report"]
                    counts[backend] = r.get("instructions")
                    if backend == "c":
                        report = r
            code, out, _ = run([CLI, "run", graph, "--input", x], timeout=1800)
            plan = next((l.strip() for l in out.splitlines() if "lower bound" in l and l.strip().startswith("pool ")), "")
            ratio = plan.split("ratio ")[-1] if "ratio" in plan else "?"
            c, l = counts.get("c"), counts.get("llvm")
            md.append(f"| {model} | {n:,} | {c or 'failed':,} | {c / n if c else 0:.2f} | {l or 'failed':,} | "
                      f"{l / n if l else 0:.2f} | {report.get('flash_bytes', 0):,} | {report.get('ram_bytes', 0):,} | {ratio} |"
                      if c and l else f"| {model} | {n:,} | {c} | | {l} | | | | {ratio} |")
            if c and l:
                per_model.append((model, c / n, l / n))
    if per_model:
        bar_chart(os.path.join(ROOT, "bench/report-mlperf.svg"),
                  "Instructions per MAC on Cortex-M4: C backend (blue), LLVM backend (orange)", per_model, "instr/MAC",
                  reference={"vendor int8 (DS-CNN)": REFERENCE["vendor kernels (DS-CNN, int8)"],
                             "plain C int8 (DS-CNN)": REFERENCE["plain C loop nest (DS-CNN, int8)"]})
        md += ["", "![instructions per MAC, MLPerf shapes](report-mlperf.svg)"]

    # 2c. The int8 MLPerf Tiny graphs on Cortex-M4, with each int8 schedule switched off in turn.
    print("[2c/5] int8 MLPerf Tiny graphs on cortex-m4", file=sys.stderr)
    code, out, err = run(["bash", "bench/mlperf_int8.sh", BUILD], timeout=3600)
    md += ["", "## int8 MLPerf Tiny graphs on Cortex-M4 (`bash bench/mlperf_int8.sh`)", "",
           "Random int8 weights and quantization (`tools/make_mlperf_graphs.py --int8`); instructions counted exactly "
           "around `run` (QEMU `-icount`); flash without the test input; each row below the first of a model switches "
           "one schedule of the int8 operators off; \"= reference\": the output equals the independent int8 "
           "reference bit for bit. Goal: at most 2.5 instructions per MAC on DS-CNN and ResNet-8.", ""]
    md += out.strip().splitlines() if code == 0 else [f"failed: {err.strip().splitlines()[-1] if err.strip() else code}"]

    # 2d. The real MLPerf Tiny .tflite models against TensorFlow Lite Micro's firmware, same QEMU, same counter.
    print("[2d/5] TFLite models: microtir vs TFLite Micro on cortex-m4", file=sys.stderr)
    code, out, err = run(["bash", "bench/tflite_vs_tflm.sh", BUILD], timeout=3600)
    md += ["", "## MLPerf Tiny and TFLM's model zoo: microtir vs TensorFlow Lite Micro on Cortex-M4 (`bash bench/tflite_vs_tflm.sh`)",
           "", "The four MLPerf Tiny reference models and every zoo model TFLM runs on the board (`../shared/tflite`), "
           "ours measured in this run, TFLM's from its figures (`../shared/peers/tflm/figures.json`: the same QEMU "
           "board, flags, counter and input bytes).", ""]
    md += out.strip().splitlines() if code == 0 else [f"not run: {err.strip().splitlines()[-1] if err.strip() else code}"]

    # 2e. Quantized ONNX (QDQ) against the same models through the float path.
    print("[2e/5] QDQ ONNX models vs float on cortex-m4", file=sys.stderr)
    code, out, err = run(["bash", "bench/onnx_qdq_digits.sh", BUILD], timeout=3600)
    md += ["", "## QDQ ONNX models vs the float path on Cortex-M4 (`bash bench/onnx_qdq_digits.sh`)", "",
           "The bundled digits CNN and the DS-CNN keyword-spotting shape (`tools/make_qdq_dscnn.py`, random weights), "
           "each as float ONNX and as QDQ ONNX, compiled for Cortex-M4 and counted exactly in this one run.", ""]
    md += out.strip().splitlines() if code == 0 else [f"failed: {err.strip().splitlines()[-1] if err.strip() else code}"]

    # 3. Calling conventions and backends on the host (wall time ratios, noisy).
    print("[3/5] calling conventions and LLVM vs C", file=sys.stderr)
    for name in ["calling_convention_bench", "llvm_vs_c_bench"]:
        exe = os.path.join(BUILD, "bench", name)
        if os.access(exe, os.X_OK):
            code, out, err = run([exe], timeout=900)
            md += ["", f"## {name}", "", "```text", (out or err).strip(), "```"]

    # 4. Conformance.
    print("[4/5] ONNX conformance", file=sys.stderr)
    node_dir = "/usr/share/libonnx-testdata/data/node"
    if os.path.isdir(node_dir):
        code, out, _ = run([CLI, "onnx-test", node_dir, "--json"], timeout=1800)
        try:
            totals = json.loads(out).get("totals", {})
            md += ["", "## ONNX backend node tests", "", "| pass | fail | unsupported | error |", "|---:|---:|---:|---:|",
                   f"| {totals.get('pass')} | {totals.get('fail')} | {totals.get('unsupported')} | {totals.get('error')} |"]
        except ValueError:
            md += ["", "## ONNX backend node tests", "", "the runner's output was not JSON"]

    # 5. Compile latency, wasm vs native.
    print("[5/5] compile latency", file=sys.stderr)
    js = os.path.join(WASM, "wasm/microtir.js")
    if os.path.exists(js):
        code, out, err = run(["node", "wasm/bench/compile_latency.js", js, CLI], timeout=900)
        md += ["", "## Compile latency: the wasm core (node) vs the native CLI", "", "```text", (out or err).strip(), "```"]
        md += latency_chart(out)

    with open(os.path.join(ROOT, "bench/report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("wrote bench/report.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
