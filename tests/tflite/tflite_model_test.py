#!/usr/bin/env python3
"""One MLPerf Tiny .tflite model through microtir, compared byte for byte with TFLite
Micro's reference outputs (../shared/tflite/reference, see its README.md).

usage: tflite_model_test.py MICROTIR MODEL REFERENCE_DIR TARGET [--layers] [--case=NAME] [--backend=c|llvm]
                            [--disable-schedules=NAMES]

For each case folder under REFERENCE_DIR (lcg_*; with --case, that one only, so ctest
runs the cases in parallel):
- TARGET host: `microtir run MODEL --target host` (the host C artifact, itself compared
  with the interpreter by `run`), and its output must equal output.npy byte for byte.
  With --layers, also the graph `microtir import --layer-outputs` writes (every TFLite
  operator's output a graph output) runs on the host, and each layer's output must equal
  its reference file; the first layer that differs is named.
- TARGET cortex-m4 (or another QEMU target, or wasm-binaryen: the wasm backend's module
  under node): `microtir run MODEL --target TARGET`, the output must equal output.npy.
With --backend=llvm, `run` builds the artifact with the LLVM backend instead of C (on the
host: LLVM IR compiled by clang), passed on as `--backend llvm`. --disable-schedules is
passed on to `run` as it is (e.g. depthwise_tile, which gives Cortex-M55's depthwise
convolutions to the Helium kernel).
"""
import json
import os
import subprocess
import sys
import tempfile


def read_npy(path):
    """(dtype descr, shape, data bytes) of a version 1.0 .npy file."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:6] != b"\x93NUMPY":
        raise SystemExit(f"{path}: not an .npy file")
    major = raw[6]
    hlen = int.from_bytes(raw[8:10], "little") if major == 1 else int.from_bytes(raw[8:12], "little")
    start = (10 if major == 1 else 12) + hlen
    header = raw[start - hlen:start].decode("latin1")
    d = eval(header, {"__builtins__": {}}, {"True": True, "False": False})  # a Python dict literal
    if d["fortran_order"]:
        raise SystemExit(f"{path}: Fortran order")
    return d["descr"].lstrip("<|="), tuple(d["shape"]), raw[start:]


def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.stdout.write(p.stdout)
        sys.stderr.write(p.stderr)
        raise SystemExit(f"FAIL: {what}: exit {p.returncode}: {' '.join(cmd)}")
    return p.stdout


def first_difference(got, want):
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            # int8 data: show signed values
            return i, (a ^ 0x80) - 0x80, (b ^ 0x80) - 0x80
    return None


SKIP = 77  # ctest's SKIP_RETURN_CODE


def skip_without(*paths):
    """True (after saying so) when a third-party file is missing: the models and TFLM's
    outputs live in ../shared/tflite beside the source tree, not in the repository."""
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        print(f"skipped: {missing[0]} not found (third-party models and TFLM's outputs live in ../shared/tflite "
              "beside the source tree; MICROTIR_SHARED_TFLITE points elsewhere)")
    return bool(missing)


MAX_DIFF = int(os.environ.get("MICROTIR_TFLITE_MAX_DIFF", "0"))  # 0: byte for byte (the tests)


def compare(got_path, want_path, what):
    g, w = read_npy(got_path), read_npy(want_path)
    if g[0] != w[0] or g[1] != w[1]:
        return f"{what}: got {g[0]} {g[1]}, the reference is {w[0]} {w[1]}"
    if MAX_DIFF and g[0] == "i1":
        worst = max(abs(((a ^ 0x80) - 0x80) - ((b ^ 0x80) - 0x80)) for a, b in zip(g[2], w[2]))
        return None if worst <= MAX_DIFF else f"{what}: differs by {worst}"
    if g[2] != w[2]:
        i, a, b = first_difference(g[2], w[2])
        n = sum(1 for x, y in zip(g[2], w[2]) if x != y)
        return f"{what}: {n} of {len(w[2])} bytes differ; the first at element {i}: got {a}, TFLite {b}"
    return None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    layers = "--layers" in sys.argv
    only = [a[len("--case="):] for a in sys.argv[1:] if a.startswith("--case=")]
    backends = [a[len("--backend="):] for a in sys.argv[1:] if a.startswith("--backend=")]
    backend = backends[-1] if backends else "c"
    if backend not in ("c", "llvm"):
        raise SystemExit(f"FAIL: --backend takes c or llvm, not '{backend}'")
    if len(args) != 4:
        raise SystemExit(__doc__)
    cli, model, ref_dir, target = args
    if skip_without(model, ref_dir):
        return SKIP
    on = f"{target} ({backend.upper()} backend)"
    backend_args = ["--backend", backend]
    for a in sys.argv[1:]:
        if a.startswith("--disable-schedules="):
            backend_args += ["--disable-schedules", a[len("--disable-schedules="):]]
    cases = sorted(c for c in os.listdir(ref_dir) if c.startswith("lcg_") and (not only or c in only))
    if not cases or len(cases) < len(only):
        raise SystemExit(f"FAIL: no case {' '.join(only)} in {ref_dir}" if only else f"FAIL: no cases in {ref_dir}")
    failures = []
    with tempfile.TemporaryDirectory() as work:
        layer_graph = os.path.join(work, "layers.json")
        if layers:
            run([cli, "import", model, "--layer-outputs", "-o", layer_graph], "import --layer-outputs")
            outputs = json.load(open(layer_graph))["outputs"]
        for case in cases:
            cdir = os.path.join(ref_dir, case)
            quant = json.load(open(os.path.join(cdir, "quant.json")))
            x = f"{quant['input']['name']}={os.path.join(cdir, 'input.npy')}"
            out_dir = os.path.join(work, case, "out")
            run([cli, "run", model, "--input", x, "--target", target, *backend_args, "--output-dir", out_dir],
                f"{case}: run --target {target} --backend {backend}")
            name = quant["output"]["name"]
            problem = compare(os.path.join(out_dir, name + ".npy"), os.path.join(cdir, "output.npy"),
                              f"{case}: output '{name}' on {on}")
            if problem:
                failures.append(problem)
            else:
                print(f"ok {case}: output '{name}' on {on} is byte-identical to TFLite Micro's")
            if not layers:
                continue
            if len(outputs) != len(quant["layers"]):
                raise SystemExit(f"FAIL: {len(outputs)} layer outputs, the reference has {len(quant['layers'])}")
            layer_dir = os.path.join(work, case, "layers")
            run([cli, "run", layer_graph, "--input", x, "--target", target, *backend_args, "--output-dir", layer_dir],
                f"{case}: run the layer graph --target {target} --backend {backend}")
            for node, layer in zip(outputs, quant["layers"]):
                problem = compare(os.path.join(layer_dir, node + ".npy"), os.path.join(cdir, layer["file"]),
                                  f"{case}: layer {layer['index']} ({layer['op']}, node '{node}')")
                if problem:
                    failures.append(problem + " -- the first layer that differs")
                    break
            else:
                print(f"ok {case}: all {len(outputs)} layers byte-identical to TFLite Micro's")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
