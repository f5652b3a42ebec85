#!/usr/bin/env python3
"""TFLite Micro's own outputs for the single-operator cases in tflm_ops/ (see its README):
each model through `microtir run --target host` (the reference interpreter, then the C
artifact built, run and compared with it), the output compared with TFLM's output_<k>.npy
byte for byte (float32 within a relative 1e-5). A case whose operator or dtype microtir
does not support yet is listed in EXPECTED_REFUSALS with the words of its refusal: the
test fails when a supported case gives other bytes, when a listed case is refused with
other words, and when a listed case starts to work (then its line goes).

usage: tflm_ops_test.py MICROTIR CASES_DIR            the test (one process, every case)
       tflm_ops_test.py MICROTIR SHARED_OPS --survey  every case of ../shared/tflite/ops
           (renamed on the fly), no table: prints each (operator, dtype) pair's state
       tflm_ops_test.py --copy CASE_DIR... DEST_DIR   copies shared cases, renamed
"""
import concurrent.futures
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

# case -> words of microtir's refusal (a substring of its error message, after the file
# name). One line per case, sorted; a case that starts to work loses its line.
EXPECTED_REFUSALS = {}


def rename_case(src, dest):
    """Copies case `src` to `dest` with its model inputs renamed x0, x1, ... and its
    outputs y0, y1, ...: each name's flatbuffer string is overwritten in place (length
    prefix, bytes, NUL), so the model keeps its size and layout."""
    meta = json.load(open(os.path.join(src, "meta.json")))
    model = bytearray(open(os.path.join(src, "model.tflite"), "rb").read())
    new_names = {}
    for key, prefix in (("inputs", "x"), ("outputs", "y")):
        for k, name in enumerate(meta[key]):
            new_names[name] = f"{prefix}{k}"
    for old, new in new_names.items():
        raw = old.encode()
        pattern = struct.pack("<I", len(raw)) + raw + b"\0"
        at = model.find(pattern)
        if at < 0 or len(new) > len(raw):
            raise SystemExit(f"{src}: cannot rename '{old}' in place")
        while at >= 0:
            model[at:at + len(pattern)] = struct.pack("<I", len(new)) + new.encode() + b"\0" * (len(raw) - len(new) + 1)
            at = model.find(pattern, at + 1)
    os.makedirs(dest, exist_ok=True)
    for f in os.listdir(src):
        if f.endswith(".npy"):
            shutil.copyfile(os.path.join(src, f), os.path.join(dest, f))
    open(os.path.join(dest, "model.tflite"), "wb").write(model)
    meta["original_inputs"], meta["original_outputs"] = meta["inputs"], meta["outputs"]
    meta["inputs"] = [new_names[n] for n in meta["original_inputs"]]
    meta["outputs"] = [new_names[n] for n in meta["original_outputs"]]
    with open(os.path.join(dest, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def compare(want, got):
    """(ok, how) for TFLM's output against ours."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False, f"{got.dtype}{list(got.shape)} instead of {want.dtype}{list(want.shape)}"
    if want.dtype.kind == "f":
        # Relative 1e-5, with a floor of a millionth of the output's magnitude: a sum that
        # cancels to near 0 keeps only the absolute error of its terms.
        floor = 1e-6 * float(np.max(np.abs(want[np.isfinite(want)]), initial=0))
        ok = bool(np.allclose(got, want, rtol=1e-5, atol=floor, equal_nan=True))
        return ok, "within 1e-5" if ok else f"largest difference {np.max(np.abs(got - want))}"
    diff = got.astype(np.int64) - want.astype(np.int64)
    if not diff.any():
        return True, "TFLM's bytes"
    return False, f"{np.count_nonzero(diff)} of {diff.size} differ, by up to {np.abs(diff).max()}"


def run_case(cli, d, work):
    """('ok' | 'wrong' | 'refused', text) for one case directory."""
    meta = json.load(open(os.path.join(d, "meta.json")))
    out = os.path.join(work, os.path.basename(d))
    args = [cli, "run", os.path.join(d, "model.tflite"), "--output-dir", out, "--target", "host", "--print-limit", "0"]
    for k, name in enumerate(meta["inputs"]):
        args += ["--input", f"{name}={os.path.join(d, f'input_{k}.npy')}"]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return "refused", (p.stderr.strip() or p.stdout.strip()).replace("\n", " | ")
    notes = []
    state = "ok"
    for k, name in enumerate(meta["outputs"]):
        ok, how = compare(np.load(os.path.join(d, f"output_{k}.npy")), np.load(os.path.join(out, name + ".npy")))
        notes.append(f"{name} {how}")
        state = state if ok else "wrong"
    return state, "; ".join(notes)


def run_all(cli, dirs):
    """{case: (state, text)}, two cases at a time (a C build each)."""
    with tempfile.TemporaryDirectory() as work:
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            futures = {os.path.basename(d): pool.submit(run_case, cli, d, work) for d in dirs}
            return {case: f.result() for case, f in futures.items()}


def case_dirs(root):
    return sorted(os.path.join(root, c) for c in os.listdir(root) if os.path.isfile(os.path.join(root, c, "meta.json")))


def test(cli, cases_dir):
    results = run_all(cli, case_dirs(cases_dir))
    failed = []
    for case, (state, text) in sorted(results.items()):
        refusal = EXPECTED_REFUSALS.get(case)
        if refusal is None:
            good = state == "ok"
        elif state == "refused":
            good = refusal in text
            text = text if good else f"refused, but not with '{refusal}': {text}"
        else:
            good, text = False, f"listed in EXPECTED_REFUSALS but now runs ({state}: {text}): update the table"
        print(f"{'ok' if good else 'FAIL'} {case}: {state}: {text}")
        if not good:
            failed.append(case)
    for case in sorted(set(EXPECTED_REFUSALS) - set(results)):
        print(f"FAIL {case}: listed in EXPECTED_REFUSALS but there is no such case")
        failed.append(case)
    passing = sum(1 for s, _ in results.values() if s == "ok")
    print(f"{passing} of {len(results)} cases give TFLM's outputs, {len(results) - passing} refused as listed"
          if not failed else f"{len(failed)} unexpected: {' '.join(failed)}")
    return 1 if failed else 0


def survey(cli, shared_dir):
    with tempfile.TemporaryDirectory() as renamed:
        dirs = []
        for d in case_dirs(shared_dir):
            rename_case(d, os.path.join(renamed, os.path.basename(d)))
            dirs.append(os.path.join(renamed, os.path.basename(d)))
        results = run_all(cli, dirs)
    pairs = {}
    for case, (state, text) in sorted(results.items()):
        pair = re.sub(r"_\d+$", "", case)
        pairs.setdefault(pair, []).append((case, state, text))
    passing = 0
    for pair, runs in sorted(pairs.items()):
        good = all(state == "ok" for _, state, _ in runs)
        passing += good
        for case, state, text in runs:
            print(f"{'ok  ' if good else 'FAIL'} {case}: {state}: {text[:300]}")
    cases_ok = sum(1 for s, _ in results.values() if s == "ok")
    print(f"{passing} of {len(pairs)} (operator, dtype) pairs pass (every seed); {cases_ok} of {len(results)} cases")
    return 0


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--copy":
        for src in sys.argv[2:-1]:
            rename_case(src.rstrip("/"), os.path.join(sys.argv[-1], os.path.basename(src.rstrip("/"))))
        return 0
    if len(sys.argv) == 4 and sys.argv[3] == "--survey":
        return survey(sys.argv[1], sys.argv[2])
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    return test(*sys.argv[1:3])


if __name__ == "__main__":
    sys.exit(main())
