#!/usr/bin/env python3
"""TFLite Micro's own outputs for the single-operator cases in tflm_ops/ (see its
README): each model through `microtir run` (the reference interpreter; the requantizing
int16 ADD, SUB, LEAKY_RELU and SOFTMAX also with `--target host`, which builds the C and checks it
against the interpreter: one C build per case costs seconds, and tflite_int16_ops builds
every op's C), the output compared with TFLM's output_0.npy byte for byte (float32
within a relative 1e-5).

usage: tflm_ops_test.py MICROTIR CASES_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HOST_CASES = {"add_i16_10", "sub_i16_11", "leaky_relu_i16_10", "softmax_i16_10",
              # data movement: a checked run-time index, fixed-point and float coordinates, a padded remap
              "gather_i8_10", "resize_bilinear_i8_10", "resize_nearest_neighbor_f32_10", "space_to_batch_nd_i8_10"}


def main():
    cli, cases_dir = sys.argv[1:3]
    cases = sorted(d for d in os.listdir(cases_dir) if os.path.isfile(os.path.join(cases_dir, d, "meta.json")))
    failed = set()
    with tempfile.TemporaryDirectory() as work:
        for case in cases:
            d = os.path.join(cases_dir, case)
            meta = json.load(open(os.path.join(d, "meta.json")))
            out = os.path.join(work, case)
            args = [cli, "run", os.path.join(d, "model.tflite"), "--output-dir", out]
            if case in HOST_CASES:
                args += ["--target", "host"]
            for k, name in enumerate(meta["inputs"]):
                args += ["--input", f"{name}={os.path.join(d, f'input_{k}.npy')}"]
            p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                print(f"FAIL {case}: microtir run exited {p.returncode}\n{p.stderr.strip()}")
                failed.add(case)
                continue
            for k, name in enumerate(meta["outputs"]):
                want = np.load(os.path.join(d, f"output_{k}.npy"))
                got = np.load(os.path.join(out, name + ".npy"))
                if got.dtype != want.dtype or got.shape != want.shape:
                    ok, how = False, f"{got.dtype}{list(got.shape)} instead of {want.dtype}{list(want.shape)}"
                elif want.dtype.kind == "f":
                    ok = bool(np.allclose(got, want, rtol=1e-5, atol=0))
                    how = "within 1e-5" if ok else f"largest difference {np.max(np.abs(got - want))}"
                else:
                    diff = got.astype(np.int64) - want.astype(np.int64)
                    ok = not diff.any()
                    how = "TFLM's bytes" if ok else f"{np.count_nonzero(diff)} of {diff.size} differ, by up to {np.abs(diff).max()}"
                print(f"{'ok' if ok else 'FAIL'} {case} ({meta['op']}): {name} {want.dtype}{list(want.shape)} {how}")
                if not ok:
                    failed.add(case)
    print(f"{len(cases) - len(failed)} of {len(cases)} cases give TFLM's outputs")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
