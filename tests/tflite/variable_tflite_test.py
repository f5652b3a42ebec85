#!/usr/bin/env python3
"""Resource variables and CALL_ONCE: models with several subgraphs made here (.tflite
through flatc with our schema) against a numpy reference of TFLite Micro's semantics
(micro_resource_variable.cc, call_once.cc, read_variable.cc, assign_variable.cc):

- a variable is allocated by its first ASSIGN_VARIABLE with that value's size and every
  byte set to the value tensor's zero point cast to int8 (0 without quantization);
- CALL_ONCE runs its init subgraph on the first Invoke only;
- READ_VARIABLE copies the variable as it is at that point of the run, ASSIGN_VARIABLE
  copies a value into it; the variable is kept from one Invoke to the next.

For each model: `microtir run --target T` gives the first Invoke; on the host the artifact
of `microtir compile`, run from tests/codegen/state_main.c, gives the first and second
Invokes (the state carried over) and, after tvmgen_model_reset(), the first again. Then
what a static artifact cannot do is refused by name (an init subgraph that computes, a
variable read but never assigned).

usage: variable_tflite_test.py MICROTIR FLATC SCHEMA SOURCE_DIR [--target T] [--only a,b]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svdf_tflite_test import run, runs_of_the_artifact  # noqa: E402
from tflite_model_builder import Model, build_tflite, suite_main  # noqa: E402

rng = np.random.default_rng(37)


# ---- the models and their references -------------------------------------------------------

def accumulator():
    """y = 0.5 * acc after acc += x; acc starts at the constant CALL_ONCE assigns."""
    shape, initial = (2, 3), rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    half = np.full(shape, 0.5, np.float32)
    m = Model()
    main, init = m.subgraph(), m.subgraph()
    x = m.tensor(main, "x", shape, np.float32)
    m.op(main, "CALL_ONCE", [], [], "CallOnceOptions", {"init_subgraph_index": 1})
    h = m.handle(main, "acc")
    r = m.tensor(main, "read", shape, np.float32)
    m.op(main, "READ_VARIABLE", [h], [r])
    s = m.tensor(main, "sum", shape, np.float32)
    m.op(main, "ADD", [r, x], [s], "AddOptions", {})
    m.op(main, "ASSIGN_VARIABLE", [h, s], [])
    r2 = m.tensor(main, "read_again", shape, np.float32)  # the same run: the value just assigned
    m.op(main, "READ_VARIABLE", [h], [r2])
    y = m.tensor(main, "y", shape, np.float32)
    m.op(main, "MUL", [r2, m.tensor(main, "half", shape, np.float32, half)], [y], "MulOptions", {})
    main["inputs"], main["outputs"] = [x], [y]
    h1 = m.handle(init, "acc")
    m.op(init, "ASSIGN_VARIABLE", [h1, m.tensor(init, "initial", shape, np.float32, initial)], [])

    def steps(xs):
        acc, out = initial.copy(), []
        for v in xs:
            acc = (acc + v).astype(np.float32)
            out.append((acc * np.float32(0.5)).astype(np.float32))
        return out
    return m, shape, np.float32, steps, 4 * 6


def delay_line():
    """y = the previous run's x; the first run reads the variable as TFLM allocates it: the
    zero point (-3) in every byte. One subgraph, no CALL_ONCE."""
    shape, quant = (1, 5), (0.1, -3)
    m = Model()
    main = m.subgraph()
    x = m.tensor(main, "x", shape, np.int8, quant=quant)
    h = m.handle(main, "line")
    y = m.tensor(main, "y", shape, np.int8, quant=quant)
    m.op(main, "READ_VARIABLE", [h], [y])
    m.op(main, "ASSIGN_VARIABLE", [h, x], [])
    main["inputs"], main["outputs"] = [x], [y]

    def steps(xs):
        prev, out = np.full(shape, -3, np.int8), []
        for v in xs:
            out.append(prev)
            prev = v
        return out
    return m, shape, np.int8, steps, 5


MODELS = {"accumulator_f32": accumulator, "delay_line_i8": delay_line}


# ---- refusals -----------------------------------------------------------------------------

def computing_init():
    m = Model()
    main, init = m.subgraph(), m.subgraph()
    m.op(main, "CALL_ONCE", [], [], "CallOnceOptions", {"init_subgraph_index": 1})
    x = m.tensor(main, "x", (4,), np.float32)
    y = m.tensor(main, "y", (4,), np.float32)
    h = m.handle(main, "v")
    m.op(main, "READ_VARIABLE", [h], [y])
    m.op(main, "ASSIGN_VARIABLE", [h, x], [])
    main["inputs"], main["outputs"] = [x], [y]
    h1 = m.handle(init, "v")
    c = m.tensor(init, "c", (4,), np.float32, np.ones(4))
    t = m.tensor(init, "t", (4,), np.float32)
    m.op(init, "ADD", [c, c], [t], "AddOptions", {})
    m.op(init, "ASSIGN_VARIABLE", [h1, t], [])
    return m


def never_assigned():
    m = Model()
    main = m.subgraph()
    x = m.tensor(main, "x", (4,), np.float32)
    r = m.tensor(main, "r", (4,), np.float32)
    y = m.tensor(main, "y", (4,), np.float32)
    h = m.handle(main, "ghost")
    m.op(main, "READ_VARIABLE", [h], [r])
    m.op(main, "ADD", [r, x], [y], "AddOptions", {})
    main["inputs"], main["outputs"] = [x], [y]
    return m


REFUSALS = {
    "computing_init": (computing_init, "init subgraph 1, operator 1 (ADD): an init subgraph runs at compile time"),
    "never_assigned": (never_assigned, "variable 'ghost' is read, but no ASSIGN_VARIABLE gives it a value"),
}


def flatbuffer(m, name, opts, work):
    return build_tflite(m, name, opts.flatc, opts.schema, work)


def sample(shape, dtype):
    if dtype == np.int8:
        return rng.integers(-128, 128, shape).astype(np.int8)
    return rng.uniform(-2, 2, shape).astype(np.float32)


def check_model(name, opts, work):
    m, shape, dtype, steps, state_bytes = MODELS[name]()
    model = flatbuffer(m, name, opts, work)
    xs = [sample(shape, dtype), sample(shape, dtype)]
    want = steps(xs)
    paths = []
    for k, x in enumerate(xs):
        paths.append(os.path.join(work, f"{name}_x{k}.npy"))
        np.save(paths[-1], x)
        x.tofile(paths[-1] + ".bin")
    out = os.path.join(work, name + "_out")
    run([opts.cli, "run", model, "--input", "x=" + paths[0], "--target", opts.target, "--output-dir", out],
        f"microtir run {name}")
    got = np.load(os.path.join(out, "y.npy"))
    ok = got.shape == want[0].shape and np.array_equal(got, want[0])
    print(f"{'ok' if ok else 'FAIL'} {name} on {opts.target}: the first Invoke")
    if not ok:
        print("  got ", got.tolist(), "\n  want", want[0].tolist())
    if opts.target != "host":
        return ok
    lines = runs_of_the_artifact(opts, work, name, model, [p + ".bin" for p in paths])
    outs = [np.frombuffer(bytes.fromhex(lines[k]), dtype).reshape(shape) for k in (0, 1, 3)]
    steps_ok = (np.array_equal(outs[0], want[0]) and np.array_equal(outs[1], want[1]) and
                np.array_equal(outs[2], want[0]) and lines[2] == f"reset {state_bytes} bytes of state" and
                not np.array_equal(want[0], want[1]))
    print(f"{'ok' if steps_ok else 'FAIL'} {name}: the second run continues from the first, the reset starts over")
    if not steps_ok:
        print("  got ", [o.tolist() for o in outs], lines[2], "\n  want", [w.tolist() for w in want])
    return ok and steps_ok


if __name__ == "__main__":
    sys.exit(suite_main(__doc__, "variable", MODELS, REFUSALS, check_model))
