#!/usr/bin/env python3
"""IF and WHILE: multi-subgraph models made here (tflite_model_builder.py) against a numpy
reference of TFLite Micro's semantics (micro/kernels/if.cc, while.cc):

- IF reads the first element of its bool condition (input 0) and runs only that branch
  on the other inputs; the branch's outputs are the operator's;
- WHILE copies its inputs to its outputs, then runs the cond subgraph on them and, while
  its bool's first element is true, the body, whose outputs become the next values.

Each case is one `microtir run` (the interpreter against the host C build, or the
target's run): float32 and int8 (quantized tensors pass through unchanged), a loop count
that depends on an input (zero iterations included), an IF nested in a WHILE body,
subgraph constants, rank-0 tensors (a scalar loop counter, a scalar branch argument), and
int8 FULLY_CONNECTED / CONV_2D with per-channel weights in branches (prepare_quantized's
tables inside functions). Then what is not compiled is refused by name, with the operator's
index.

usage: control_flow_tflite_test.py MICROTIR FLATC SCHEMA SOURCE_DIR [--target T] [--backend B] [--only a,b]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import int16_ops_tflite_test as fixed_point  # noqa: E402
from svdf_tflite_test import run  # noqa: E402
from tflite_model_builder import Model, build_tflite, suite_main  # noqa: E402

rng = np.random.default_rng(2037)
Q = (0.05, -4)  # the int8 tensors' scale and zero point (they pass through unchanged)


def io(sg, inputs, outputs):
    sg["inputs"], sg["outputs"] = inputs, outputs


# ---- the models: (model, input specs, reference(inputs) -> {output: array}, cases) --------

def if_f32():
    """y = cond ? x + c : x * x, c a constant of the then branch."""
    shape, c = (2, 3), rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    m = Model()
    main, then, other = m.subgraph(), m.subgraph(), m.subgraph()
    cond, x, y = m.tensor(main, "cond", (1,), np.bool_), m.tensor(main, "x", shape, np.float32), m.tensor(main, "y", shape, np.float32)
    m.op(main, "IF", [cond, x], [y], "IfOptions", {"then_subgraph_index": 1, "else_subgraph_index": 2})
    io(main, [cond, x], [y])
    tx, ty = m.tensor(then, "tx", shape, np.float32), m.tensor(then, "ty", shape, np.float32)
    m.op(then, "ADD", [tx, m.tensor(then, "c", shape, np.float32, c)], [ty], "AddOptions", {})
    io(then, [tx], [ty])
    ex, ey = m.tensor(other, "ex", shape, np.float32), m.tensor(other, "ey", shape, np.float32)
    m.op(other, "MUL", [ex, ex], [ey], "MulOptions", {})
    io(other, [ex], [ey])

    def ref(v):
        return {"y": (v["x"] + c).astype(np.float32) if v["cond"][0] else (v["x"] * v["x"]).astype(np.float32)}
    x0 = rng.uniform(-2, 2, shape).astype(np.float32)
    return m, ref, [{"cond": np.array([True]), "x": x0}, {"cond": np.array([False]), "x": x0}]


def if_i8():
    """Two int8 results: cond ? (max(a, c), a) : (min(a, b), b), raw int8 (one quantization)."""
    shape, c = (5,), rng.integers(-20, 20, (5,)).astype(np.int8)
    m = Model()
    main, then, other = m.subgraph(), m.subgraph(), m.subgraph()
    cond = m.tensor(main, "cond", (1,), np.bool_)
    a, b = m.tensor(main, "a", shape, np.int8, quant=Q), m.tensor(main, "b", shape, np.int8, quant=Q)
    y, z = m.tensor(main, "y", shape, np.int8, quant=Q), m.tensor(main, "z", shape, np.int8, quant=Q)
    m.op(main, "IF", [cond, a, b], [y, z], "IfOptions", {"then_subgraph_index": 1, "else_subgraph_index": 2})
    io(main, [cond, a, b], [y, z])
    for sg, op, pick in ((then, "MAXIMUM", 0), (other, "MINIMUM", 1)):
        sa, sb = m.tensor(sg, "sa", shape, np.int8, quant=Q), m.tensor(sg, "sb", shape, np.int8, quant=Q)
        r = m.tensor(sg, "r", shape, np.int8, quant=Q)
        second = m.tensor(sg, "c", shape, np.int8, c, quant=Q) if pick == 0 else sb
        m.op(sg, op, [sa, second], [r])
        io(sg, [sa, sb], [r, [sa, sb][pick]])  # returns an input as is: TFLM copies it

    def ref(v):
        if v["cond"][0]:
            return {"y": np.maximum(v["a"], c), "z": v["a"]}
        return {"y": np.minimum(v["a"], v["b"]), "z": v["b"]}
    a0, b0 = (rng.integers(-128, 128, shape).astype(np.int8) for _ in range(2))
    return m, ref, [{"cond": np.array([True]), "a": a0, "b": b0}, {"cond": np.array([False]), "a": a0, "b": b0}]


def while_nested_f32():
    """while i < n: x = (i < 2 ? x + x : x + 1); i += 1 (float32 counters). Outputs i and x (n passes through)."""
    shape = (4,)
    m = Model()
    main, cond, body, double, inc = (m.subgraph() for _ in range(5))
    ins = [m.tensor(main, "i", (1,), np.float32), m.tensor(main, "n", (1,), np.float32), m.tensor(main, "x", shape, np.float32)]
    outs = [m.tensor(main, "i_out", (1,), np.float32), m.tensor(main, "n_out", (1,), np.float32),
            m.tensor(main, "x_out", shape, np.float32)]
    m.op(main, "WHILE", ins, outs, "WhileOptions", {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    io(main, ins, [outs[0], outs[2]])
    ci, cn, cx = m.tensor(cond, "i", (1,), np.float32), m.tensor(cond, "n", (1,), np.float32), m.tensor(cond, "x", shape, np.float32)
    more = m.tensor(cond, "more", (1,), np.bool_)
    m.op(cond, "LESS", [ci, cn], [more])
    io(cond, [ci, cn, cx], [more])
    bi, bn, bx = m.tensor(body, "i", (1,), np.float32), m.tensor(body, "n", (1,), np.float32), m.tensor(body, "x", shape, np.float32)
    i1, early = m.tensor(body, "i1", (1,), np.float32), m.tensor(body, "early", (1,), np.bool_)
    x1 = m.tensor(body, "x1", shape, np.float32)
    m.op(body, "ADD", [bi, m.tensor(body, "one", (1,), np.float32, [1])], [i1], "AddOptions", {})
    m.op(body, "LESS", [bi, m.tensor(body, "two", (1,), np.float32, [2])], [early])
    m.op(body, "IF", [early, bx], [x1], "IfOptions", {"then_subgraph_index": 3, "else_subgraph_index": 4})
    io(body, [bi, bn, bx], [i1, bn, x1])
    dx, dy = m.tensor(double, "x", shape, np.float32), m.tensor(double, "y", shape, np.float32)
    m.op(double, "ADD", [dx, dx], [dy], "AddOptions", {})
    io(double, [dx], [dy])
    ix, iy = m.tensor(inc, "x", shape, np.float32), m.tensor(inc, "y", shape, np.float32)
    m.op(inc, "ADD", [ix, m.tensor(inc, "one", shape, np.float32, np.ones(shape))], [iy], "AddOptions", {})
    io(inc, [ix], [iy])

    def ref(v):
        i, n, x = v["i"][0], v["n"][0], v["x"].copy()
        while i < n:
            x = (x + x if i < 2 else x + np.float32(1)).astype(np.float32)
            i = np.float32(i + np.float32(1))
        return {"i_out": np.array([i], np.float32), "x_out": x}
    x0 = rng.uniform(-1, 1, shape).astype(np.float32)
    cases = [(0, 0), (0, 5), (3, 2), (1, 4)]
    return m, ref, [{"i": np.array([i], np.float32), "n": np.array([n], np.float32), "x": x0} for i, n in cases]


def while_rotate_i8():
    """while k < n: x = concat(x[1:], x[:1]); k += 1 — an int8 x rotated left n - k times (float32 counters)."""
    size = 6
    m = Model()
    main, cond, body = m.subgraph(), m.subgraph(), m.subgraph()
    ins = [m.tensor(main, "k", (1,), np.float32), m.tensor(main, "n", (1,), np.float32),
           m.tensor(main, "x", (size,), np.int8, quant=Q)]
    outs = [m.tensor(main, "k_out", (1,), np.float32), m.tensor(main, "n_out", (1,), np.float32),
            m.tensor(main, "y", (size,), np.int8, quant=Q)]
    m.op(main, "WHILE", ins, outs, "WhileOptions", {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    io(main, ins, [outs[2]])
    ck, cn, cx = m.tensor(cond, "k", (1,), np.float32), m.tensor(cond, "n", (1,), np.float32), m.tensor(cond, "x", (size,), np.int8, quant=Q)
    more = m.tensor(cond, "more", (1,), np.bool_)
    m.op(cond, "LESS", [ck, cn], [more])
    io(cond, [ck, cn, cx], [more])
    bk, bn, bx = m.tensor(body, "k", (1,), np.float32), m.tensor(body, "n", (1,), np.float32), m.tensor(body, "x", (size,), np.int8, quant=Q)
    k1 = m.tensor(body, "k1", (1,), np.float32)
    m.op(body, "ADD", [bk, m.tensor(body, "one", (1,), np.float32, [1])], [k1], "AddOptions", {})
    tail, head = m.tensor(body, "tail", (size - 1,), np.int8, quant=Q), m.tensor(body, "head", (1,), np.int8, quant=Q)
    const = lambda name, v: m.tensor(body, name, (1,), np.int32, [v])  # noqa: E731
    m.op(body, "SLICE", [bx, const("b1", 1), const("s1", size - 1)], [tail], "SliceOptions", {})
    m.op(body, "SLICE", [bx, const("b0", 0), const("s0", 1)], [head], "SliceOptions", {})
    x1 = m.tensor(body, "x1", (size,), np.int8, quant=Q)
    m.op(body, "CONCATENATION", [tail, head], [x1], "ConcatenationOptions", {"axis": 0})
    io(body, [bk, bn, bx], [k1, bn, x1])

    def ref(v):
        return {"y": np.roll(v["x"], -max(0, int(np.ceil(v["n"][0] - v["k"][0]))))}
    x0 = rng.integers(-128, 128, (size,)).astype(np.int8)
    return m, ref, [{"k": np.array([0], np.float32), "n": np.array([n], np.float32), "x": x0} for n in (0, 1, 4)]


def if_scalar():
    """y, t = cond ? (x * s, s + s) : (x - s, s): a rank-0 s (a constant of main) into both
    branches and a rank-0 result out of them."""
    shape, s0 = (2, 2), np.float32(0.75)
    m = Model()
    main, then, other = m.subgraph(), m.subgraph(), m.subgraph()
    cond, x = m.tensor(main, "cond", (1,), np.bool_), m.tensor(main, "x", shape, np.float32)
    s = m.tensor(main, "s", (), np.float32, [s0])
    y, t = m.tensor(main, "y", shape, np.float32), m.tensor(main, "t", (), np.float32)
    m.op(main, "IF", [cond, x, s], [y, t], "IfOptions", {"then_subgraph_index": 1, "else_subgraph_index": 2})
    io(main, [cond, x], [y, t])
    for sg, op in ((then, "MUL"), (other, "SUB")):
        bx, bs = m.tensor(sg, "x", shape, np.float32), m.tensor(sg, "s", (), np.float32)
        by = m.tensor(sg, "y", shape, np.float32)
        m.op(sg, op, [bx, bs], [by], op.title() + "Options", {})
        if op == "MUL":
            bt = m.tensor(sg, "t", (), np.float32)
            m.op(sg, "ADD", [bs, bs], [bt], "AddOptions", {})
        io(sg, [bx, bs], [by, bt if op == "MUL" else bs])

    def ref(v):
        if v["cond"][0]:
            return {"y": (v["x"] * s0).astype(np.float32), "t": np.array(s0 + s0, np.float32)}
        return {"y": (v["x"] - s0).astype(np.float32), "t": np.array(s0, np.float32)}
    x0 = rng.uniform(-2, 2, shape).astype(np.float32)
    return m, ref, [{"cond": np.array([True]), "x": x0}, {"cond": np.array([False]), "x": x0}]


def fc_ref(x, xq, w, bias, ws, yq):
    """TFLM's int8 FULLY_CONNECTED with per-channel weights: sum((x - zx) * w) + bias,
    each output channel requantized by xs * ws[c] / ys (QuantizeMultiplier of the double
    product of the float32 scales), plus zy, clamped."""
    acc = (x.astype(np.int64) - xq[1]) @ w.astype(np.int64).T + bias
    out = np.empty(acc.shape, np.int64)
    for c in range(acc.shape[-1]):
        f = fixed_point.f32
        out[..., c] = fixed_point.mbqm(acc[..., c], fixed_point.quantize_multiplier(f(xq[0]) * f(ws[c]) / f(yq[0])))
    return fixed_point.clamp(out + yq[1], np.int8)


def if_quantized_branches():
    """y = cond ? fc(x) : conv1x1(x): int8 FULLY_CONNECTED and CONV_2D with per-channel
    weights (multipliers that differ: a table prepare_quantized adds, as in main) in the
    two branches. Their weights are constants of the branches, so of the functions' caller.
    The 1x1 convolution over x reshaped to [1, 2, 1, 16] is the same product as the
    FULLY_CONNECTED (TFLM's integer conv and FC share the per-channel arithmetic)."""
    xq, yq = (0.04, -3), (0.09, 5)
    ws = [rng.uniform(0.005, 0.02, 6).astype(np.float32) for _ in range(2)]
    w = [rng.integers(-127, 128, (6, 16)).astype(np.int8) for _ in range(2)]
    bias = [rng.integers(-900, 900, (6,)).astype(np.int32) for _ in range(2)]
    m = Model()
    main, then, other = m.subgraph(), m.subgraph(), m.subgraph()
    cond, x = m.tensor(main, "cond", (1,), np.bool_), m.tensor(main, "x", (2, 16), np.int8, quant=xq)
    y = m.tensor(main, "y", (2, 6), np.int8, quant=yq)
    m.op(main, "IF", [cond, x], [y], "IfOptions", {"then_subgraph_index": 1, "else_subgraph_index": 2})
    io(main, [cond, x], [y])
    for k, sg in enumerate((then, other)):
        bx, by = m.tensor(sg, "x", (2, 16), np.int8, quant=xq), m.tensor(sg, "y", (2, 6), np.int8, quant=yq)
        wt = m.tensor(sg, "w", (6, 16) if k == 0 else (6, 1, 1, 16), np.int8, w[k].reshape((6, 16) if k == 0 else (6, 1, 1, 16)))
        bt = m.tensor(sg, "b", (6,), np.int32, bias[k])
        sg["tensors"][wt]["quantization"] = {"scale": ws[k].tolist(), "zero_point": [0] * 6, "quantized_dimension": 0}
        sg["tensors"][bt]["quantization"] = {"scale": (np.float32(xq[0]) * ws[k]).tolist(), "zero_point": [0] * 6}
        if k == 0:
            m.op(sg, "FULLY_CONNECTED", [bx, wt, bt], [by], "FullyConnectedOptions", {})
        else:
            x4, y4 = m.tensor(sg, "x4", (1, 2, 1, 16), np.int8, quant=xq), m.tensor(sg, "y4", (1, 2, 1, 6), np.int8, quant=yq)
            m.op(sg, "RESHAPE", [bx], [x4], "ReshapeOptions", {"new_shape": [1, 2, 1, 16]})
            m.op(sg, "CONV_2D", [x4, wt, bt], [y4], "Conv2DOptions", {"stride_w": 1, "stride_h": 1})
            m.op(sg, "RESHAPE", [y4], [by], "ReshapeOptions", {"new_shape": [2, 6]})
        io(sg, [bx], [by])

    def ref(v):
        k = 0 if v["cond"][0] else 1
        return {"y": fc_ref(v["x"], xq, w[k], bias[k], ws[k], yq)}
    x0 = rng.integers(-128, 128, (2, 16)).astype(np.int8)
    return m, ref, [{"cond": np.array([True]), "x": x0}, {"cond": np.array([False]), "x": x0}]


def while_scalar_counter():
    """TF's loop: while i < n: x = x * 1.5 + i; i += 1, with rank-0 i, n and bool (i0 and n
    constants of main and of cond, as a converted tf.while_loop has them). Outputs i and x."""
    shape = (3,)
    m = Model()
    main, cond, body = m.subgraph(), m.subgraph(), m.subgraph()
    x = m.tensor(main, "x", shape, np.float32)
    i0 = m.tensor(main, "i0", (), np.float32, [0])
    i_out, x_out = m.tensor(main, "i_out", (), np.float32), m.tensor(main, "x_out", shape, np.float32)
    m.op(main, "WHILE", [i0, x], [i_out, x_out], "WhileOptions", {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    io(main, [x], [i_out, x_out])
    ci, cx, more = m.tensor(cond, "i", (), np.float32), m.tensor(cond, "x", shape, np.float32), m.tensor(cond, "more", (), np.bool_)
    m.op(cond, "LESS", [ci, m.tensor(cond, "n", (), np.float32, [3])], [more])
    io(cond, [ci, cx], [more])
    bi, bx, i1 = m.tensor(body, "i", (), np.float32), m.tensor(body, "x", shape, np.float32), m.tensor(body, "i1", (), np.float32)
    scaled, x1 = m.tensor(body, "scaled", shape, np.float32), m.tensor(body, "x1", shape, np.float32)
    m.op(body, "ADD", [bi, m.tensor(body, "one", (), np.float32, [1])], [i1], "AddOptions", {})
    m.op(body, "MUL", [bx, m.tensor(body, "k", (), np.float32, [1.5])], [scaled], "MulOptions", {})
    m.op(body, "ADD", [scaled, bi], [x1], "AddOptions", {})
    io(body, [bi, bx], [i1, x1])

    def ref(v):
        i, x = np.float32(0), v["x"].copy()
        while i < np.float32(3):
            x = (x * np.float32(1.5) + i).astype(np.float32)
            i = np.float32(i + np.float32(1))
        return {"i_out": np.array(i, np.float32), "x_out": x}
    return m, ref, [{"x": rng.uniform(-1, 1, shape).astype(np.float32)}]


MODELS = {"if_f32": if_f32, "if_i8": if_i8, "while_nested_f32": while_nested_f32, "while_rotate_i8": while_rotate_i8,
          "if_scalar": if_scalar, "if_quantized_branches": if_quantized_branches, "while_scalar_counter": while_scalar_counter}


# ---- refusals -----------------------------------------------------------------------------

def two_branches(then_ops):
    """IF(cond, x) whose then branch is built by then_ops(m, sg, x, y); the else branch returns x."""
    m = Model()
    main, then, other = m.subgraph(), m.subgraph(), m.subgraph()
    cond, x, y = m.tensor(main, "cond", (1,), np.bool_), m.tensor(main, "x", (4,), np.float32), m.tensor(main, "y", (4,), np.float32)
    m.op(main, "IF", [cond, x], [y], "IfOptions", {"then_subgraph_index": 1, "else_subgraph_index": 2})
    io(main, [cond, x], [y])
    tx, ty = m.tensor(then, "x", (4,), np.float32), m.tensor(then, "y", (4,), np.float32)
    then_ops(m, then, tx, ty)
    io(then, [tx], [ty])
    ex = m.tensor(other, "x", (4,), np.float32)
    io(other, [ex], [ex])
    return m


def unsupported_op_in_branch():
    return two_branches(lambda m, sg, x, y: m.op(sg, "LSH_PROJECTION", [x], [y]))


def variable_in_branch():
    def ops(m, sg, x, y):
        m.op(sg, "READ_VARIABLE", [m.handle(sg, "v")], [y])
    return two_branches(ops)


def float_condition():
    m = Model()
    main, then = m.subgraph(), m.subgraph()
    cond, y = m.tensor(main, "cond", (1,), np.float32), m.tensor(main, "y", (1,), np.float32)
    m.op(main, "IF", [cond, cond], [y], "IfOptions", {"then_subgraph_index": 1, "else_subgraph_index": 1})
    io(main, [cond], [y])
    t = m.tensor(then, "t", (1,), np.float32)
    io(then, [t], [t])
    return m


def shrinking_loop():
    """A body that returns x[0:2] for a loop-carried x of 4 elements."""
    m = Model()
    main, cond, body = m.subgraph(), m.subgraph(), m.subgraph()
    x, y = m.tensor(main, "x", (4,), np.float32), m.tensor(main, "y", (4,), np.float32)
    m.op(main, "WHILE", [x], [y], "WhileOptions", {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    io(main, [x], [y])
    cx, more = m.tensor(cond, "x", (4,), np.float32), m.tensor(cond, "more", (4,), np.bool_)
    zero = m.tensor(cond, "zero", (4,), np.float32, np.zeros(4))
    m.op(cond, "LESS", [cx, zero], [more])
    io(cond, [cx], [more])
    bx, half = m.tensor(body, "x", (4,), np.float32), m.tensor(body, "half", (2,), np.float32)
    m.op(body, "SLICE", [bx, m.tensor(body, "b", (1,), np.int32, [0]), m.tensor(body, "s", (1,), np.int32, [2])], [half],
         "SliceOptions", {})
    io(body, [bx], [half])
    return m


REFUSALS = {
    "unsupported_op_in_branch": (unsupported_op_in_branch,
                                 "unsupported TFLite operator LSH_PROJECTION (subgraph 1 (the then branch of operator 0 "
                                 "(IF)), node 0)"),
    "variable_in_branch": (variable_in_branch, "operator 0 (IF)), operator 0 (VAR_HANDLE): resource variables and "
                                               "CALL_ONCE inside an IF/WHILE subgraph are not compiled"),
    "float_condition": (float_condition, "operator 0 (IF): its condition tensor 0 'cond' is float32(1)"),
    "shrinking_loop": (shrinking_loop, "operator 0 (WHILE): its body subgraph's output 0 is float32(2), but its output"),
}


def check_model(name, opts, work):
    m, ref, cases = MODELS[name]()
    model = build_tflite(m, name, opts.flatc, opts.schema, work)
    ok = True
    for k, inputs in enumerate(cases):
        args = [opts.cli, "run", model, "--target", opts.target, "--output-dir", os.path.join(work, f"{name}_{k}")]
        if opts.backend != "c":
            args += ["--backend", opts.backend]
        for n, v in inputs.items():
            path = os.path.join(work, f"{name}_{k}_{n}.npy")
            np.save(path, v)
            args += ["--input", f"{n}={path}"]
        run(args, f"microtir run {name} case {k}")
        for out, want in ref(inputs).items():
            got = np.load(os.path.join(work, f"{name}_{k}", out + ".npy"))
            good = got.dtype == want.dtype and np.array_equal(got, want)
            ok = ok and good
            if not good:
                print(f"  {name} case {k} {out}: got {got.tolist()}, want {want.tolist()}")
    print(f"{'ok' if ok else 'FAIL'} {name} on {opts.target}: {len(cases)} cases")
    return ok


if __name__ == "__main__":
    sys.exit(suite_main(__doc__, "control-flow", MODELS, REFUSALS, check_model))
