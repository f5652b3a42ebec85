#!/usr/bin/env python3
"""SVDF models made here (.tflite through flatc with our schema) against a numpy reference
of TFLite Micro's arithmetic written in this file (micro/kernels/svdf_common.cc as
documented in core/ops/svdf.cc): float32 (rank 1 and 2, with and without bias, fused
RELU) and the integer form (int8 data and weights_feature; int16 or int8 weights_time
and state; int32 bias; rank 1 and 2; batch 1 and 2), exactly.

For each model:
  1. `microtir run model.tflite --target T` gives the reference's first Invoke (state at
     its initial value: 0, or the zero point of an int8 state);
  2. (host only; a float32, an int16-state and an int8-state model) the artifact of
     `microtir compile` built with tests/codegen/state_main.c runs twice on two inputs: the second output is the reference's second step (the
     state carried over), and after tvmgen_model_reset() the first input gives the first
     output again.

usage: svdf_tflite_test.py MICROTIR FLATC SCHEMA SOURCE_DIR [--target T] [--backend B]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ops_tflite_test import tflite_mbqm, tflite_quantize_multiplier  # noqa: E402

rng = np.random.default_rng(35)
F32 = np.float32


# ---- the reference: TFLM's SVDF step -----------------------------------------------------

def svdf_float_step(x, wf, wt, bias, state, rank, activation):
    """One Invoke on float32 data; `state` (batch, memory * filters) is updated in place."""
    batch, inputs = x.shape
    filters, memory = wt.shape
    flat = state.reshape(-1)
    flat[:-1] = flat[1:].copy()  # the whole state one element left
    st = state.reshape(batch, filters, memory)
    for b in range(batch):
        for f in range(filters):
            dot = F32(0)
            for k in range(inputs):
                dot = F32(dot + F32(wf[f, k] * x[b, k]))
            st[b, f, memory - 1] = dot
    units = filters // rank
    out = np.zeros((batch, units), F32)
    for b in range(batch):
        for u in range(units):
            acc = F32(bias[u]) if bias is not None else F32(0)
            for r in range(rank):
                f = u * rank + r
                s = F32(0)
                for j in range(memory):
                    s = F32(s + F32(wt[f, j] * st[b, f, j]))
                acc = F32(acc + s)
            if activation == "RELU":
                acc = max(F32(0), acc)
            out[b, u] = acc
    return out


def svdf_int_step(x, wf, wt, bias, state, rank, q):
    """One Invoke of the integer SVDF; `state` is updated in place."""
    batch, inputs = x.shape
    filters, memory = wt.shape
    lo, hi = (-128, 127) if state.dtype == np.int8 else (-32768, 32767)
    # TFLM's Prepare: effective scales formed from the float32 scales in float32.
    m1 = tflite_quantize_multiplier(float(F32(F32(q["x"][0]) * F32(q["wf"][0])) / F32(q["state"][0])))
    m2 = tflite_quantize_multiplier(float(F32(F32(q["state"][0]) * F32(q["wt"][0])) / F32(q["y"][0])))
    zx, zs, zy = q["x"][1], q["state"][1], q["y"][1]
    flat = state.reshape(-1)
    flat[:-1] = flat[1:].copy()
    st = state.reshape(batch, filters, memory)
    for b in range(batch):
        for f in range(filters):
            dot = sum(int(wf[f, k]) * (int(x[b, k]) - zx) for k in range(inputs))
            st[b, f, memory - 1] = min(hi, max(lo, tflite_mbqm(dot, *m1) + zs))
    units = filters // rank
    out = np.zeros((batch, units), np.int8)
    for b in range(batch):
        for u in range(units):
            acc = int(bias[u]) if bias is not None else 0
            for r in range(rank):
                f = u * rank + r
                acc += sum(int(wt[f, j]) * (int(st[b, f, j]) - zs) for j in range(memory))
            out[b, u] = min(127, max(-128, tflite_mbqm(acc, *m2) + zy))
    return out


# ---- the models ------------------------------------------------------------------------------

TYPES = {np.dtype(np.float32): "FLOAT32", np.dtype(np.int8): "INT8", np.dtype(np.int16): "INT16",
         np.dtype(np.int32): "INT32"}


class Svdf:
    """One SVDF model: x (batch, inputs) -> y (batch, filters / rank)."""

    def __init__(self, name, dtype, batch, inputs, filters, memory, rank, bias, state_dtype=None,
                 activation="NONE", two_runs=False):
        self.name, self.rank, self.activation, self.two_runs = name, rank, activation, two_runs
        self.float = dtype == np.float32
        self.state_dtype = np.float32 if self.float else state_dtype
        units = filters // rank
        self.shape_x, self.shape_y = (batch, inputs), (batch, units)
        self.state_shape = (batch, memory * filters)
        if self.float:
            self.wf = rng.uniform(-0.5, 0.5, (filters, inputs)).astype(F32)
            self.wt = rng.uniform(-0.5, 0.5, (filters, memory)).astype(F32)
            self.bias = rng.uniform(-0.2, 0.2, units).astype(F32) if bias else None
            self.q = {}
            return
        # Scales held as float32, as the flatbuffer holds them.
        wide = self.state_dtype == np.int16
        self.q = {"x": (F32(0.05), -10), "wf": (F32(0.01), 0),
                  "wt": (F32(1e-4), 0) if wide else (F32(0.004), 0),
                  "state": (F32(1e-3), 0) if wide else (F32(0.1), -5),
                  "y": (F32(0.15), 3)}
        self.wf = rng.integers(-127, 128, (filters, inputs)).astype(np.int8)
        self.wt = (rng.integers(-3000, 3001, (filters, memory)) if wide else
                   rng.integers(-127, 128, (filters, memory))).astype(self.state_dtype)
        bias_scale = F32(self.q["state"][0] * self.q["wt"][0])
        self.q["bias"] = (bias_scale, 0)
        self.bias = np.round(rng.uniform(-0.3, 0.3, units) / float(bias_scale)).astype(np.int32) if bias else None

    def initial_state(self):
        zero = 0 if self.float else self.q["state"][1]
        return np.full(self.state_shape, zero, self.state_dtype)

    def sample(self):
        if self.float:
            return rng.uniform(-2, 2, self.shape_x).astype(F32)
        return rng.integers(-128, 128, self.shape_x).astype(np.int8)

    def step(self, x, state):
        if self.float:
            return svdf_float_step(x, self.wf, self.wt, self.bias, state, self.rank, self.activation)
        return svdf_int_step(x, self.wf, self.wt, self.bias, state, self.rank, self.q)

    def flatbuffer_json(self):
        tensors, buffers = [], [{}]

        def tensor(name, array=None, shape=None, dtype=None, quant=None, variable=False):
            t = {"name": name, "shape": list(array.shape if array is not None else shape),
                 "type": TYPES[np.dtype(array.dtype if array is not None else dtype)], "buffer": 0}
            if quant:
                t["quantization"] = {"scale": [float(quant[0])], "zero_point": [int(quant[1])]}
            if variable:
                t["is_variable"] = True
            if array is not None:
                t["buffer"] = len(buffers)
                buffers.append({"data": list(array.astype(array.dtype.newbyteorder("<")).tobytes())})
            tensors.append(t)
            return len(tensors) - 1

        q = self.q
        x = tensor("x", shape=self.shape_x, dtype=F32 if self.float else np.int8, quant=q.get("x"))
        wf = tensor("weights_feature", self.wf, quant=q.get("wf"))
        wt = tensor("weights_time", self.wt, quant=q.get("wt"))
        b = tensor("bias", self.bias, quant=q.get("bias")) if self.bias is not None else -1
        st = tensor("activation_state", shape=self.state_shape, dtype=self.state_dtype, quant=q.get("state"),
                    variable=True)
        y = tensor("y", shape=self.shape_y, dtype=F32 if self.float else np.int8, quant=q.get("y"))
        op = {"opcode_index": 0, "inputs": [x, wf, wt, b, st], "outputs": [y], "builtin_options_type": "SVDFOptions",
              "builtin_options": {"rank": self.rank, "fused_activation_function": self.activation}}
        return {"version": 3, "operator_codes": [{"builtin_code": "SVDF", "deprecated_builtin_code": 27, "version": 1}],
                "subgraphs": [{"tensors": tensors, "inputs": [x], "outputs": [y], "operators": [op], "name": "main"}],
                "buffers": buffers}


MODELS = [
    Svdf("svdf_f32_rank1", np.float32, 1, 6, 4, 5, 1, bias=True, two_runs=True),
    Svdf("svdf_f32_rank2_relu", np.float32, 2, 5, 6, 3, 2, bias=False, activation="RELU"),
    Svdf("svdf_i8_state16_rank1", np.int8, 1, 8, 6, 4, 1, bias=True, state_dtype=np.int16),
    Svdf("svdf_i8_state16_rank2", np.int8, 2, 7, 8, 5, 2, bias=True, state_dtype=np.int16, two_runs=True),
    Svdf("svdf_i8_state8_rank1", np.int8, 1, 8, 4, 6, 1, bias=True, state_dtype=np.int8),
    Svdf("svdf_i8_state8_rank2", np.int8, 2, 6, 6, 4, 2, bias=False, state_dtype=np.int8, two_runs=True),
]

# The (operator, dtype) pair of each single-operator case (docs/tflite.md's table counts them).
PAIRS = [("SVDF", "float32" if m.float else "int8") for m in MODELS]


def same(got, want, is_float):
    if is_float:
        return got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-6)
    return got.shape == want.shape and np.array_equal(got, want)


def run(args, what):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:])
        raise SystemExit(f"FAIL: {what} exited {p.returncode}")
    return p.stdout


def runs_of_the_artifact(opts, work, name, model, inputs):
    """The artifact of `microtir compile model` (input 'x', output 'y') built on the host
    with tests/codegen/state_main.c and run on each raw input file in turn (the state
    carried over), then reset and the first input again: the lines it prints, each run's
    output in hex and "reset N bytes of state" before the last."""
    mlf = os.path.join(work, name + "_mlf")
    run([opts.cli, "compile", model, "-o", mlf], f"microtir compile {name}")
    src = [os.path.join(mlf, "codegen/host/src", f) for f in sorted(os.listdir(os.path.join(mlf, "codegen/host/src")))
           if f.endswith(".c")]
    rt = os.path.join(mlf, "runtime")
    src += [os.path.join(rt, "src", f) for f in sorted(os.listdir(os.path.join(rt, "src"))) if f.endswith(".c")]
    fw = os.path.join(work, name + "_fw")
    run(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I" + os.path.join(rt, "include"),
         "-I" + os.path.join(mlf, "codegen/host/include")] + src +
        [os.path.join(rt, "ports/host/platform.c"), os.path.join(opts.source, "tests/codegen/state_main.c"), "-lm",
         "-o", fw], f"building {name}'s firmware")
    return run([fw] + inputs, f"{name}'s firmware").split("\n")


def check_model(m, opts, work):
    jpath = os.path.join(work, m.name + ".json")
    with open(jpath, "w") as f:
        json.dump(m.flatbuffer_json(), f)
    subprocess.run([opts.flatc, "-b", "-o", work, opts.schema, jpath], check=True)
    model = os.path.join(work, m.name + ".tflite")
    x1, x2 = m.sample(), m.sample()
    state = m.initial_state()
    want1 = m.step(x1, state)
    want2 = m.step(x2, state)  # the state carried over from the first step
    paths = []
    for k, x in enumerate((x1, x2)):
        paths.append(os.path.join(work, f"{m.name}_x{k}.npy"))
        np.save(paths[-1], x)
        x.tofile(paths[-1] + ".bin")
    out = os.path.join(work, m.name + "_out")
    cmd = [opts.cli, "run", model, "--input", "x=" + paths[0], "--target", opts.target, "--output-dir", out]
    if opts.backend != "c":
        cmd += ["--backend", opts.backend]
    run(cmd, f"microtir run {m.name}")
    got = np.load(os.path.join(out, "y.npy"))
    ok = same(got, want1, m.float)
    print(f"{'ok' if ok else 'FAIL'} {m.name} on {opts.target} ({opts.backend}): the first Invoke, {got.size} values")
    if not ok:
        print("  got ", got.tolist(), "\n  want", want1.tolist())
    if opts.target != "host" or opts.backend != "c" or not m.two_runs:
        return ok
    lines = runs_of_the_artifact(opts, work, m.name, model, [p + ".bin" for p in paths])
    dtype = F32 if m.float else np.int8
    outs = [np.frombuffer(bytes.fromhex(lines[k]), dtype).reshape(m.shape_y) for k in (0, 1, 3)]
    state_bytes = m.initial_state().nbytes
    steps_ok = (same(outs[0], want1, m.float) and same(outs[1], want2, m.float) and np.array_equal(outs[2], outs[0])
                and lines[2] == f"reset {state_bytes} bytes of state" and not np.array_equal(want1, want2))
    print(f"{'ok' if steps_ok else 'FAIL'} {m.name}: two runs carry the state over, reset gives the first output again")
    if not steps_ok:
        print("  got ", [o.tolist() for o in outs], lines[2], "\n  want", want1.tolist(), want2.tolist())
    return ok and steps_ok


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("cli")
    ap.add_argument("flatc")
    ap.add_argument("schema")
    ap.add_argument("source")
    ap.add_argument("--target", default="host")
    ap.add_argument("--backend", default="c")
    ap.add_argument("--only", default="", help="comma-separated model names")
    opts = ap.parse_args()
    models = [m for m in MODELS if not opts.only or m.name in opts.only.split(",")]
    with tempfile.TemporaryDirectory() as work:
        failures = sum(not check_model(m, opts, work) for m in models)
    print(f"{len(models) - failures} of {len(models)} SVDF models pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
