#!/usr/bin/env python3
"""TFLite Micro's hello_world_int8 (a Keras export: input `serving_default_dense_input:0`,
output `StatefulPartitionedCall:0`) through `microtir run --target host` with `--input`
under the model's own name: the output file, named by the identifier rule
(docs/tflite.md, "Names"), holds TFLM's bytes for both dev cases. The model and TFLM's
outputs are third-party files in ../shared/tflite (beside the source tree); without them
the test says it was skipped and exits 77.

usage: names_zoo_test.py MICROTIR SHARED_TFLITE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile


def npy(path):
    """(the header's dict text without padding, the data bytes) of a .npy file."""
    raw = open(path, "rb").read()
    hlen = int.from_bytes(raw[8:10], "little")
    return raw[10:10 + hlen].decode("latin1").strip(), raw[10 + hlen:]


def main():
    cli, shared = sys.argv[1:3]
    zoo = os.path.join(shared, "zoo")
    model = os.path.join(zoo, "models", "hello_world_int8.tflite")
    if not os.path.exists(model):
        print("skipped: ../shared/tflite not found")
        return 77
    for case in ("seed1", "seed2"):
        ref = os.path.join(zoo, "reference", "hello_world_int8", case)
        with tempfile.TemporaryDirectory() as out:
            p = subprocess.run([cli, "run", model, "--input", "serving_default_dense_input:0=" + os.path.join(ref, "input_0.npy"),
                                "--target", "host", "--output-dir", out, "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                raise SystemExit(f"FAIL: {case}: microtir run exited {p.returncode}: {p.stderr}")
            outputs = json.loads(p.stdout)["outputs"]
            if [(o["name"], o["identifier"]) for o in outputs] != [("StatefulPartitionedCall:0", "StatefulPartitionedCall_0")]:
                raise SystemExit(f"FAIL: {case}: outputs {[(o['name'], o['identifier']) for o in outputs]}")
            # Both files are int8 [1, 1] .npy: the same header (dtype, shape), the same data.
            got = npy(os.path.join(out, "StatefulPartitionedCall_0.npy"))
            want = npy(os.path.join(ref, "output_0.npy"))
            if got != want:
                raise SystemExit(f"FAIL: {case}: {got}, TFLM gives {want}")
            print(f"ok: {case}: int8 {[b - 256 if b > 127 else b for b in got[1]]} as TFLM's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
