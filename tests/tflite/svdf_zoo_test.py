#!/usr/bin/env python3
"""TFLite Micro's keyword benchmark models with SVDF (keyword_scrambled: int16 state,
keyword_scrambled_8bit: int8 state; both QUANTIZE int16 -> int8 first, SOFTMAX int8 ->
int16 and QUANTIZE int16 -> int32 last, nameless input and output) through `microtir
run --target T`, against TFLM's bytes: for seed1 every layer (`microtir import
--layer-outputs`: each operator's output a graph output, in execution order, as
meta.json lists the layers), the first differing layer named; for seed2 the output. The
models and TFLM's outputs are third-party files in ../shared/tflite (beside the source
tree); without them the test says it was skipped and exits 77.

usage: svdf_zoo_test.py MICROTIR SHARED_TFLITE_DIR TARGET
"""
import json
import os
import subprocess
import sys
import tempfile

MODELS = ("keyword_scrambled", "keyword_scrambled_8bit")


def npy(path):
    """(the header's dict text without padding, the data bytes) of a .npy file."""
    raw = open(path, "rb").read()
    hlen = int.from_bytes(raw[8:10], "little")
    return raw[10:10 + hlen].decode("latin1").strip(), raw[10 + hlen:]


def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {what} exited {p.returncode}: {p.stderr[-2000:]}")
    return p.stdout


def check(cli, zoo, model, case, target, work):
    ref = os.path.join(zoo, "reference", model, case)
    meta = json.load(open(os.path.join(ref, "meta.json")))
    tflite = os.path.join(zoo, "models", model + ".tflite")
    layers = meta.get("layers", [])
    subject = tflite
    if layers:
        subject = os.path.join(work, f"{model}_layers.json")
        run([cli, "import", "--layer-outputs", tflite, "-o", subject], f"import {model}")
    out = os.path.join(work, f"{model}_{case}")
    stdout = run([cli, "run", subject, "--input", "input_0=" + os.path.join(ref, "input_0.npy"), "--target", target,
                  "--output-dir", out, "--json"], f"{model} {case} on {target}")
    outputs = json.loads(stdout)["outputs"]
    wants = [(L["op"] + " (layer " + str(L["index"]) + ")", L["file"]) for L in layers] or [("the output", "output_0.npy")]
    if len(outputs) != len(wants):
        raise SystemExit(f"FAIL: {model} {case}: {len(outputs)} outputs, TFLM's reference has {len(wants)}")
    for o, (what, file) in zip(outputs, wants):
        got, want = npy(os.path.join(out, o["identifier"] + ".npy")), npy(os.path.join(ref, file))
        if got != want:
            print(f"FAIL: {model} {case} on {target}: {what} differs from TFLM's first (got {got[0]}, want {want[0]})")
            return False
    print(f"ok: {model} {case} on {target}: {'all ' + str(len(wants)) + ' layers' if layers else 'the output'} as TFLM's")
    return True


def main():
    cli, shared, target = sys.argv[1:4]
    zoo = os.path.join(shared, "zoo")
    if not all(os.path.exists(os.path.join(zoo, "models", m + ".tflite")) for m in MODELS):
        print("skipped: ../shared/tflite not found")
        return 77
    with tempfile.TemporaryDirectory() as work:
        failures = sum(not check(cli, zoo, m, case, target, work) for m in MODELS for case in ("seed1", "seed2"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
