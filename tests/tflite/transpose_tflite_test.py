#!/usr/bin/env python3
"""TFLite TRANSPOSE through `microtir run --target host`, against a transpose written here:
every dtype we read (float32, int8, int16, int32, int64), ranks 1 to 5, permutations from
a constant tensor (int32 as TFLite writes them, and int64), a chain of two. And the
refusals, each a named error with exit 1: a permutation that is a model input (computed
at run time), one that is not a permutation, one of the wrong length, a rank-6 tensor, an
output of another dtype.

usage: transpose_tflite_test.py MICROTIR FLATC SCHEMA

Each model is written as JSON and turned into a flatbuffer by flatc with our schema.
"""
import itertools
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_model_test import read_npy  # noqa: E402

rng = random.Random(35)
# TFLite's type name, struct code, npy descr, value range.
DTYPES = {
    "FLOAT32": ("f", "<f4", None),
    "INT8": ("b", "|i1", (-128, 127)),
    "INT16": ("h", "<i2", (-32768, 32767)),
    "INT32": ("i", "<i4", (-2**31, 2**31 - 1)),
    "INT64": ("q", "<i8", (-2**63, 2**63 - 1)),
}


def prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def values(dtype, n):
    code, _, bounds = DTYPES[dtype]
    if bounds is None:  # float32 values, exactly representable
        return [struct.unpack("<f", struct.pack("<f", rng.uniform(-100, 100)))[0] for _ in range(n)]
    return [rng.randint(*bounds) for _ in range(n)]


def transpose(data, shape, perm):
    """Row-major `data` of `shape` with its axes permuted: out[i] = in[i permuted back]."""
    out_shape = [shape[p] for p in perm]
    strides = [prod(shape[k + 1:]) for k in range(len(shape))]
    out = []
    for idx in itertools.product(*[range(d) for d in out_shape]):
        src = [0] * len(shape)
        for k, p in enumerate(perm):
            src[p] = idx[k]
        out.append(data[sum(i * s for i, s in zip(src, strides))])
    return out_shape, out


def write_npy(path, dtype, shape, data):
    code, descr, _ = DTYPES[dtype]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape) if len(shape) != 1 else f"{shape[0]},")
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack(f"<{len(data)}{code}", *data))


class Model:
    def __init__(self):
        self.tensors, self.buffers, self.ops = [], [{}], []

    def tensor(self, name, shape, dtype, data=None, data_dtype=None):
        t = {"name": name, "shape": shape, "type": dtype, "buffer": 0}
        if dtype == "INT8":
            t["quantization"] = {"scale": [0.5], "zero_point": [3]}
        elif dtype == "INT16":  # int16 activations are 16x8: zero point 0
            t["quantization"] = {"scale": [0.25], "zero_point": [0]}
        if data is not None:
            t["buffer"] = len(self.buffers)
            self.buffers.append({"data": list(struct.pack(f"<{len(data)}{DTYPES[data_dtype or dtype][0]}", *data))})
        self.tensors.append(t)
        return len(self.tensors) - 1

    def transpose(self, x, perm, out, perm_dtype="INT32"):
        p = perm if isinstance(perm, int) else self.tensor(f"perm{len(self.ops)}", [len(perm)], perm_dtype, perm)
        self.ops.append({"opcode_index": 0, "inputs": [x, p], "outputs": [out],
                         "builtin_options_type": "TransposeOptions", "builtin_options": {}})

    def json(self, inputs, outputs):
        return {"version": 3, "operator_codes": [{"builtin_code": "TRANSPOSE", "deprecated_builtin_code": 39, "version": 1}],
                "subgraphs": [{"tensors": self.tensors, "inputs": inputs, "outputs": outputs, "operators": self.ops}],
                "buffers": self.buffers}


def flatbuffer(flatc, schema, work, name, model_json):
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(model_json, f)
    p = subprocess.run([flatc, "-b", "-o", work, schema, path], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: flatc could not write {name}: {p.stderr}")
    return os.path.join(work, name + ".tflite")


def every_dtype_and_rank(cli, flatc, schema, work):
    """One model: a TRANSPOSE per case, each input its own model input; the outputs exact."""
    cases = [("FLOAT32", [2, 3, 4, 2, 3], [4, 0, 3, 1, 2], "INT32"),
             ("INT8", [1, 3, 224, 5], [0, 2, 3, 1], "INT32"),  # NCHW -> NHWC, as MobileNetV2's first layer
             ("INT16", [5, 6, 7], [2, 0, 1], "INT32"),
             ("INT32", [7, 9], [1, 0], "INT64"),
             ("INT64", [3, 1, 4, 1, 5], [3, 4, 2, 0, 1], "INT32"),
             ("INT8", [17], [0], "INT32"),  # rank 1: a copy
             ("INT16", [2, 3, 4, 5], [0, 1, 2, 3], "INT32")]  # the identity
    m = Model()
    inputs, outputs, want, args = [], [], {}, []
    for k, (dtype, shape, perm, perm_dtype) in enumerate(cases):
        x = m.tensor(f"x{k}", shape, dtype)
        out_shape, expected = transpose(data := values(dtype, prod(shape)), shape, perm)
        y = m.tensor(f"y{k}", out_shape, dtype)
        m.transpose(x, perm, y, perm_dtype)
        inputs.append(x)
        outputs.append(y)
        path = os.path.join(work, f"x{k}.npy")
        write_npy(path, dtype, shape, data)
        args += ["--input", f"x{k}={path}"]
        want[f"y{k}"] = (dtype, out_shape, expected, f"{dtype} {shape} perm {perm} ({perm_dtype})")
    # A chain: the second TRANSPOSE undoes the first, through an intermediate tensor.
    x = m.tensor("chain_in", [2, 3, 4], "FLOAT32")
    mid = m.tensor("chain_mid", [4, 2, 3], "FLOAT32")
    y = m.tensor("chain_out", [2, 3, 4], "FLOAT32")
    m.transpose(x, [2, 0, 1], mid)
    m.transpose(mid, [1, 2, 0], y)
    data = values("FLOAT32", 24)
    write_npy(os.path.join(work, "chain_in.npy"), "FLOAT32", [2, 3, 4], data)
    args += ["--input", f"chain_in={os.path.join(work, 'chain_in.npy')}"]
    inputs.append(x)
    outputs.append(y)
    want["chain_out"] = ("FLOAT32", [2, 3, 4], data, "a chain of two that undo each other")
    model = flatbuffer(flatc, schema, work, "transposes", m.json(inputs, outputs))
    out_dir = os.path.join(work, "out")
    p = subprocess.run([cli, "run", model, *args, "--target", "host", "--output-dir", out_dir],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return [f"run --target host: exit {p.returncode}: {p.stderr.strip()}"]
    failures = []
    for name, (dtype, shape, expected, what) in want.items():
        descr, got_shape, raw = read_npy(os.path.join(out_dir, name + ".npy"))
        got = list(struct.unpack(f"<{len(raw) // struct.calcsize(DTYPES[dtype][0])}{DTYPES[dtype][0]}", raw))
        if descr != DTYPES[dtype][1].lstrip("<|") or list(got_shape) != shape or got != expected:
            failures.append(f"{what}: got {descr} {list(got_shape)}, a different result from the transpose written here")
        else:
            print(f"ok {what}")
    return failures


def refusals(cli, flatc, schema, work):
    """Models TRANSPOSE cannot take, each refused by name."""
    failures = []

    def refused(name, build, words):
        m = Model()
        inputs, outputs = build(m)
        model = flatbuffer(flatc, schema, work, name, m.json(inputs, outputs))
        p = subprocess.run([cli, "compile", model, "-o", os.path.join(work, name + ".tar")], capture_output=True, text=True)
        if p.returncode != 1 or words not in p.stderr or "operator 0 (TRANSPOSE)" not in p.stderr:
            failures.append(f"{name}: exit {p.returncode}, expected 1 and '{words}' naming operator 0: {p.stderr.strip()}")
        else:
            print(f"ok {name}: {p.stderr.strip()}")

    def run_time_perm(m):
        x, p, y = m.tensor("x", [2, 3], "FLOAT32"), m.tensor("perm", [2], "INT32"), m.tensor("y", [3, 2], "FLOAT32")
        m.transpose(x, p, y)
        return [x, p], [y]

    def simple(shape, perm, out_shape, out_dtype="FLOAT32", perm_dtype="INT32"):
        def build(m):
            x, y = m.tensor("x", shape, "FLOAT32"), m.tensor("y", out_shape, out_dtype)
            m.transpose(x, perm, y, perm_dtype)
            return [x], [y]
        return build

    refused("run_time_permutation", run_time_perm, "a permutation computed at run time")
    refused("repeated_axis", simple([2, 3, 4], [0, 0, 2], [2, 2, 4]), "is not a permutation of 0..2")
    refused("axis_out_of_range", simple([2, 3], [0, 2], [2, 3]), "is not a permutation of 0..1")
    refused("negative_axis", simple([2, 3], [-1, 0], [3, 2]), "is not a permutation of 0..1")
    refused("short_permutation", simple([2, 3, 4], [1, 0], [3, 2, 4]), "the permutation must be [3]")
    refused("rank_6", simple([1, 2, 1, 2, 1, 2], [5, 4, 3, 2, 1, 0], [2, 1, 2, 1, 2, 1]), "rank-6 tensor (ranks 1 to 5")
    refused("other_output_dtype", simple([2, 3], [1, 0], [3, 2], "INT32"), "the output is int32 but the input is float32")
    refused("float_permutation", simple([2, 3], [1, 0], [3, 2], perm_dtype="FLOAT32"), "(int32 expected)")
    return failures


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    cli, flatc, schema = sys.argv[1:]
    with tempfile.TemporaryDirectory() as work:
        failures = every_dtype_and_rank(cli, flatc, schema, work) + refusals(cli, flatc, schema, work)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
