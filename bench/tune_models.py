#!/usr/bin/env python3
"""Benchmark (not a test): `microtir tune` on the MLPerf Tiny four and TFLM's zoo models on
Cortex-M4 (QEMU mps2-an386), one model after the other, on a LocalCluster of TUNE_WORKERS.
Prints a Markdown table: per model the candidates measured (and whether that was the whole
space), default and tuned instructions, flash and RAM (static + stack), the tuning's wall
time and the load average (1 min) before and after it; then, per model, the layers whose
choice differs from the default.

Counts are exact and do not depend on the machine's load; wall times do.

Usage: python3 bench/tune_models.py [BUILD_DIR]   (default: build)
  BENCH_MODELS="kws ad person_detect"  only these (default: the four, then every zoo model)
  TUNE_WORKERS=2  TUNE_TRIALS=64  TUNE_CACHE=DIR (default: a fresh folder per model, so
  each run measures)  TUNE_OUT=DIR (records; default /tmp/microtir-tune-bench)
  TUNE_FLASH="vww=280K"  a --max-flash per model
  MICROTIR_SHARED_TFLITE=DIR the models (default ../shared/tflite beside the source tree)
MLPerf models are tuned on ../shared/tflite/reference/<model>/lcg_9e3779b9/input.npy,
the zoo on the tuner's fixed pseudo-random input.
"""
import json
import os
import subprocess
import sys
import time

MLPERF = {"kws": ("kws_ref_model", "input_1"), "vww": ("vww_96_int8", "input_1_int8"),
          "ic": ("pretrainedResnet_quant", "input_1_int8"), "ad": ("ad01_int8", "input_1")}


def models(shared):
    out = [(m, os.path.join(shared, "models", f + ".tflite"),
            [f"{name}={os.path.join(shared, 'reference', m, 'lcg_9e3779b9', 'input.npy')}"])
           for m, (f, name) in MLPERF.items()]
    zoo = os.path.join(shared, "zoo", "models")
    for f in sorted(os.listdir(zoo)) if os.path.isdir(zoo) else []:
        if f.endswith(".tflite"):
            out.append((f[:-7], os.path.join(zoo, f), []))
    only = os.environ.get("BENCH_MODELS", "").split()
    return [m for m in out if not only or m[0] in only]


def load():
    return os.getloadavg()[0]


def n(v):
    return f"{v:,}" if isinstance(v, int) else "-"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build")
    cli = os.path.join(build, "core", "cli", "microtir")
    shared = os.environ.get("MICROTIR_SHARED_TFLITE", os.path.join(os.path.dirname(root), "shared", "tflite"))
    workers, trials = os.environ.get("TUNE_WORKERS", "2"), os.environ.get("TUNE_TRIALS", "64")
    out = os.environ.get("TUNE_OUT", "/tmp/microtir-tune-bench")
    flash = dict(kv.split("=") for kv in os.environ.get("TUNE_FLASH", "").split())
    os.makedirs(out, exist_ok=True)
    rows, changed = [], []
    for model, path, inputs in models(shared):
        rec = os.path.join(out, f"{model}.json")
        cache = os.environ.get("TUNE_CACHE") or os.path.join(out, f"cache-{model}-{workers}w-{time.time_ns()}")
        cmd = [cli, "tune", path, "--target", "cortex-m4", "--workers", workers, "--trials", trials,
               "--cache", cache, "-o", rec] + [a for i in inputs for a in ("--input", i)]
        if model in flash:
            cmd += ["--max-flash", flash[model]]
        before, start = load(), time.time()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall, after = time.time() - start, load()
        if p.returncode != 0:
            rows.append(f"| {model} | {p.stderr.strip().splitlines()[-1][:200]} |||||||")
            continue
        t = json.load(open(rec))["tuning"]
        d, c = t["default"], t["tuned"]
        ram = lambda r: r["ram_bytes"] + (r["stack_bytes"] or 0)
        space = f"{t['candidates']}{' (whole space)' if t.get('whole_space') else ''}"
        rows.append(f"| {model} | {space} | {n(d['instructions'])} | {n(c['instructions'])} | "
                    f"{c['instructions'] / d['instructions']:.3f} | {n(d['flash_bytes'])} → {n(c['flash_bytes'])} | "
                    f"{n(ram(d))} → {n(ram(c))} | {wall:.0f} s | {before:.1f} → {after:.1f} |")
        for r in t["layers"]:
            if r["off"]:
                changed.append(f"| {model} | {r['operator']} | {', '.join(r['off'])} | {n(r['default_instructions'])} | "
                               f"{n(r['instructions'])} | {n(r['default_code_bytes'])} → {n(r['code_bytes'])} |")
        print(f"{model}: done in {wall:.0f} s", file=sys.stderr, flush=True)
    print(f"| model | candidates (workers: {workers}) | default: instructions | tuned | tuned / default | flash (bytes) | "
          "RAM + stack (bytes) | tuning wall time | load average (1 min) before → after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    print("\n".join(rows))
    print()
    print("| model | operator | switched off | default: instructions | tuned | kernel code bytes |")
    print("|---|---:|---|---:|---:|---:|")
    print("\n".join(changed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
