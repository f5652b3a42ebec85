#!/usr/bin/env python3
"""Benchmark, not a test (not in ctest): compile latency of every backend on the MLPerf
Tiny models, TFLM's person_detect and the bundled digits model, natively (the CLI as a
process, `compile --time-passes --json`) and in the wasm core under node (as the
playground's worker runs it). Median of several runs, with peak memory: the CLI's peak
resident set (wait4's ru_maxrss) and the wasm core's linear memory (its heap's high-water
mark). The timer's table says which step the time goes to.

usage: python3 bench/compile_latency.py [--runs N] [--cli build/core/cli/microtir]
           [--wasm build-wasm/wasm/microtir.js] [--shared ../shared/tflite] [--json FILE]
           [--only NAME] [--backend NAME] [--no-native]
Models missing from --shared are skipped, said plainly.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKENDS = [
    ("C", "c -executor=aot -interface-api=c -unpacked-api=1"),
    ("LLVM (thumbv7em)", "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4 -interface-api=c -unpacked-api=1"),
    ("wasm (Binaryen)", "wasm"),
]


def models(shared):
    out = []
    for name, rel in [("AD (ad01_int8)", "models/ad01_int8.tflite"), ("KWS (kws_ref_model)", "models/kws_ref_model.tflite"),
                      ("IC (pretrainedResnet_quant)", "models/pretrainedResnet_quant.tflite"),
                      ("VWW (vww_96_int8)", "models/vww_96_int8.tflite"),
                      ("person_detect (TFLM zoo)", "zoo/models/person_detect.tflite")]:
        path = os.path.join(shared, rel)
        if os.path.exists(path):
            out.append((name, path))
        else:
            print(f"skipped {name}: {path} not found", file=sys.stderr)
    out.append(("digits (models/digits, float32)", os.path.join(ROOT, "models/digits/digits.json")))
    return out


def native_run(cli, model, target, out_tar):
    """One `compile` as a process: (wall s, CPU s, peak RSS bytes, the timer's top-level steps in ms)."""
    start = time.perf_counter()
    proc = subprocess.Popen([cli, "compile", model, "--target", target, "-o", out_tar, "--json", "--time-passes"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout = proc.stdout.read()
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{model} {target}: exit {status}\n{stderr.decode()}")
    rows = json.loads(stdout)["timing"]["rows"]
    steps = {}
    for r in rows:
        if r["depth"] == 0:
            steps[r["name"]] = steps.get(r["name"], 0) + r["wall_ms"]
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, steps


def median_steps(runs):
    keys = list(runs[0].keys())
    return {k: statistics.median(r.get(k, 0) for r in runs) for k in keys}


def native_case(cli, model, target, runs, tmp):
    walls, cpus, peaks, steps = [], [], [], []
    for _ in range(runs):
        w, c, p, s = native_run(cli, model, target, os.path.join(tmp, "m.tar"))
        walls.append(w)
        cpus.append(c)
        peaks.append(p)
        steps.append(s)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "peak_bytes": max(peaks), "steps_ms": median_steps(steps)}


def wasm_case(node_js, wasm_js, model, target, runs):
    out = subprocess.run(["node", node_js, wasm_js, model, target, str(runs)], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout)


def mib(b):
    return f"{b / (1024 * 1024):.0f}"


def where(steps, top=2):
    big = sorted(steps.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k} {v / 1000:.2f}" for k, v in big)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build/core/cli/microtir"))
    ap.add_argument("--wasm", default=os.path.join(ROOT, "build-wasm/wasm/microtir.js"))
    ap.add_argument("--shared", default=os.environ.get("MICROTIR_SHARED_TFLITE", os.path.join(ROOT, "..", "shared", "tflite")))
    ap.add_argument("--json", help="also write every figure here")
    ap.add_argument("--only", help="only the models whose name contains this text (e.g. KWS)")
    ap.add_argument("--backend", help="only the backends whose name contains this text (e.g. LLVM)")
    ap.add_argument("--no-native", action="store_true", help="the wasm core only")
    args = ap.parse_args()
    have_wasm = os.path.exists(args.wasm)
    if not have_wasm:
        print(f"no wasm core at {args.wasm}: native figures only (scripts/build-wasm.sh builds it)", file=sys.stderr)
    node_js = os.path.join(ROOT, "bench", "compile_latency_core.js")
    results = []
    with tempfile.TemporaryDirectory(prefix="mtir-latency-") as tmp:
        for mname, mpath in models(args.shared):
            if args.only and args.only not in mname:
                continue
            for bname, target in BACKENDS:
                if args.backend and args.backend not in bname:
                    continue
                n = None if args.no_native else native_case(args.cli, mpath, target, args.runs, tmp)
                w = wasm_case(node_js, args.wasm, mpath, target, args.runs) if have_wasm else {"error": "no wasm core"}
                results.append({"model": mname, "backend": bname, "target": target, "native": n, "wasm": w})
                print(f"done {mname} {bname}", file=sys.stderr)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {args.runs} runs; native = `microtir compile` as a process (start-up and file writes included); "
          "core = the wasm core under node: the first response (artifacts, pass list, timer), then the pass IR texts "
          "and archive fetched after it; peak = the CLI's peak RSS / the core's linear memory (MiB)\n")
    print("| model | backend | native wall s | native CPU s | native peak | where the native time goes (wall s) | core first s | core IR + tar s | core heap | core / native CPU |")
    print("|---|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for r in results:
        n, w = r["native"], r["wasm"]
        if n is None:
            n = {"wall_s": float("nan"), "cpu_s": float("nan"), "peak_bytes": float("nan"), "steps_ms": {}}
        if "error" in w:
            core = ["—", "—", "—", "—"]
        else:
            core = [f"{w['first_ms'] / 1000:.2f}", f"{w['details_ms'] / 1000:.2f}", mib(w["heap_bytes"]),
                    f"{(w['first_ms'] / 1000) / n['cpu_s']:.2f}"]
        print(f"| {r['model']} | {r['backend']} | {n['wall_s']:.2f} | {n['cpu_s']:.2f} | {mib(n['peak_bytes'])} | {where(n['steps_ms'])} | "
              + " | ".join(core) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
