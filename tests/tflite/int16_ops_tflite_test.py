#!/usr/bin/env python3
"""int16x8 and integer-conversion operators of small project-made .tflite models through
`microtir run --target host` (which also checks the C against the interpreter), exactly
against references written here in numpy from TFLite Micro's documented arithmetic
(its reference kernels: add.h / sub.h with 15 bits of headroom, requantize.h,
leaky_relu.h, quantize.h, pad.cc, strided_slice_logic.h).

- ADD and SUB on int16 with numpy broadcasting (SUB's multipliers in float32 as TFLM
  computes them), a fused RELU, int16 MUL;
- PAD (int16: zeros) and PADV2 (int8, its constant value);
- STRIDED_SLICE on int16 and float32: masks, negative strides, shrink;
- LEAKY_RELU on int16, int8 (a zero point) and float32;
- QUANTIZE float32 -> int16, int16 -> int8, int16 -> int32, int32 -> int16, int8 -> int8,
  DEQUANTIZE int16 -> float32;
- MEAN and SUM on int16 and int8 over any axes (reduce.h's integer requantization);
- SOFTMAX int8 -> int16 (TFLM's Softmax<int8, int16>: gemmlowp's exp and reciprocal).

usage: int16_ops_tflite_test.py MICROTIR FLATC SCHEMA
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_json_model import OneSubgraphModel  # noqa: E402

rng = np.random.default_rng(35)
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


# ---- TFLite's fixed-point arithmetic, on numpy int64 arrays ---------------------------

def f32(x):
    return float(np.float32(x))


def quantize_multiplier(m):
    """QuantizeMultiplier: m = M * 2^(shift - 31), M in [2^30, 2^31)."""
    if m == 0:
        return 0, 0
    q, shift = math.frexp(m)
    fixed = int(math.floor(abs(q) * (1 << 31) + 0.5)) * (1 if q > 0 else -1)
    if fixed == (1 << 31):
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul: floor((a * b + 2^30) / 2^31), int32 inputs."""
    a = np.asarray(a, dtype=np.int64)
    r = (a * np.int64(b) + (1 << 30)) >> 31
    return np.where((a == I32_MIN) & (b == I32_MIN), I32_MAX, r)


def rdbp(x, e):
    """RoundingDivideByPOT: x / 2^e rounded half away from zero."""
    x = np.asarray(x, dtype=np.int64)
    mask = (1 << e) - 1
    rem = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (rem > threshold)


def wrap32(x):
    return ((np.asarray(x, dtype=np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)


def mbqm(x, mult):
    m, shift = mult
    left, right = max(shift, 0), max(-shift, 0)
    return rdbp(srdhm(wrap32(np.asarray(x, dtype=np.int64) << left), m), right)


def clamp(x, dtype):
    info = np.iinfo(dtype)
    return np.clip(x, info.min, info.max).astype(dtype)


# ---- gemmlowp's exp_on_negative_values and one_over_one_plus_x (SOFTMAX) -------------

def sat_add(a, b):
    return np.clip(a + b, I32_MIN, I32_MAX)


def exp_on_interval(a):
    """exp(x) for x in [-1/4, 0), a with 0 integer bits."""
    const_term = 1895147668
    const_third = 715827883
    x = a + (1 << 28)
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rdbp(x4, 2)
    poly = rdbp(sat_add(srdhm(sat_add(x4_over_4, x3), const_third), x2), 1)
    return sat_add(const_term, srdhm(const_term, sat_add(x, poly)))


def exp_on_negative_values(a, integer_bits):
    """exp(a) for a <= 0 with `integer_bits` integer bits in, 0 out."""
    fractional = 31 - integer_bits
    one_quarter = 1 << (fractional - 2)
    mask = one_quarter - 1
    a_mod = (a & mask) - one_quarter
    result = exp_on_interval(a_mod << integer_bits)
    remainder = a_mod - a
    multipliers = {-2: 1672461947, -1: 1302514674, 0: 790015084, 1: 290630308, 2: 39332535, 3: 720401, 4: 242}
    for exponent in range(-2, 5):
        shift = fractional + exponent
        if 0 <= shift <= 30 and exponent < integer_bits:
            bit = 1 << shift
            result = np.where((remainder & bit) != 0, srdhm(result, multipliers[exponent]), result)
    clamp_bits = fractional + (integer_bits if integer_bits < 5 else 5)
    if integer_bits > 5 and clamp_bits < 31:
        result = np.where(a < -(1 << clamp_bits), 0, result)
    return np.where(a == 0, I32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a):
    half_denominator = rdbp(np.int64(a) + I32_MAX, 1)  # RoundingHalfSum(a, One()), One() = 2^31 - 1
    x = 1515870810 + srdhm(half_denominator, -1010580540)
    for _ in range(3):
        err = (1 << 29) - srdhm(half_denominator, x)
        x = x + np.clip(srdhm(x, err) * 4, I32_MIN, I32_MAX)
    return np.clip(x * 2, I32_MIN, I32_MAX)


def softmax_int8(x, input_scale, beta, out_dtype):
    """reference_ops::Softmax<int8, OutputT> with PreprocessSoftmaxScaling (5 integer bits)."""
    real = min(beta * input_scale * (1 << 26), float((1 << 31) - 1))
    mult, left = quantize_multiplier(real)
    radius = int(math.floor(((1 << 5) - 1) * (1 << 26) / (1 << left)))
    diff_min = -radius
    bits_out = np.iinfo(out_dtype).bits
    out = np.zeros(x.shape, dtype=out_dtype)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx].astype(np.int64)
        diff = row - row.max()
        use = diff >= diff_min
        scaled = srdhm(diff << left, mult)
        exps = exp_on_negative_values(scaled, 5)
        total = int(np.sum(np.where(use, rdbp(exps, 12), 0)))
        headroom = 32 - total.bit_length()  # CountLeadingZeros(uint32)
        shifted = ((total << headroom) - (1 << 31))
        recip = int(one_over_one_plus_x_for_x_in_0_1(np.int64(wrap32(shifted))))
        num_bits_over_unit = 12 - headroom
        exponent = num_bits_over_unit + 31 - bits_out
        q = rdbp(srdhm(exps, recip), exponent) + np.iinfo(out_dtype).min
        out[idx] = np.where(use, clamp(q, out_dtype), np.iinfo(out_dtype).min)
    return out


# ---- the model builder --------------------------------------------------------------

TYPES = {np.float32: "FLOAT32", np.int8: "INT8", np.int16: "INT16", np.int32: "INT32", np.int64: "INT64"}


class Model(OneSubgraphModel):
    def __init__(self):
        super().__init__()
        self.prefix = ""  # each builder's tensors are named apart

    def tensor(self, name, shape, dtype, quant=None, data=None):
        t = {"name": self.prefix + name, "shape": list(shape), "type": TYPES[dtype], "buffer": 0}
        if quant:
            t["quantization"] = {"scale": [quant[0]], "zero_point": [quant[1]]}
        if data is not None:
            t["buffer"] = len(self.buffers)
            self.buffers.append({"data": list(np.asarray(data, dtype=dtype).tobytes())})
        self.tensors.append(t)
        return len(self.tensors) - 1


class Runner:
    """Collects every builder's inputs and expected outputs into one model, so that one
    `microtir run --target host` (one C build) checks them all."""

    def __init__(self, cli, flatc, schema, work):
        self.cli, self.flatc, self.schema, self.work = cli, flatc, schema, work
        self.failures = 0
        self.model = Model()
        self.inputs, self.outputs = [], []

    def run(self, name, model, inputs, outputs):
        assert model is self.model
        self.inputs += [(t, model.tensors[t]["name"], a) for t, _, a in inputs]
        self.outputs += [(t, model.tensors[t]["name"], want, name) for t, _, want in outputs]

    def check(self):
        name, model, inputs = "int16_ops", self.model, self.inputs
        outputs = self.outputs
        """inputs: [(tensor, name, array)], outputs: [(tensor, name, expected array)]."""
        jpath = os.path.join(self.work, name + ".json")
        with open(jpath, "w") as f:
            json.dump(model.json([t for t, _, _ in inputs], [t for t, _, _, _ in outputs]), f)
        subprocess.run([self.flatc, "-b", "-o", self.work, self.schema, jpath], check=True)
        out = os.path.join(self.work, name + "_out")
        args = [self.cli, "run", os.path.join(self.work, name + ".tflite"), "--target", "host", "--output-dir", out]
        for _, n, a in inputs:
            path = os.path.join(self.work, f"{name}_{n}.npy")
            np.save(path, a)
            args += ["--input", f"{n}={path}"]
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            print(f"FAIL {name}: microtir run exited {p.returncode}")
            self.failures += 1
            return
        for _, n, want, group in outputs:
            got = np.load(os.path.join(out, n + ".npy"))
            same = got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
            print(f"{'ok' if same else 'FAIL'} {group}: {n} {want.dtype}{list(want.shape)}"
                  f"{' exactly equal' if same else ''}")
            if not same:
                self.failures += 1
                print("  got ", got.dtype, got.shape, got.ravel()[:16], "\n  want", want.ravel()[:16])


def ints(dtype, shape, lo=None, hi=None):
    info = np.iinfo(dtype)
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1, size=shape, dtype=dtype)


def add_sub_mul(r):
    m = r.model
    sa, sb, so, ss, sm = f32(0.0011), f32(0.0007), f32(0.0016), f32(0.0009), f32(0.02)
    a = ints(np.int16, (2, 3, 8))
    b = ints(np.int16, (8,))
    ta = m.tensor("a", a.shape, np.int16, (sa, 0))
    tb = m.tensor("b", b.shape, np.int16, (sb, 0))
    t_add = m.tensor("sum", a.shape, np.int16, (so, 0))
    t_sub = m.tensor("diff", a.shape, np.int16, (ss, 0))
    t_mul = m.tensor("prod", a.shape, np.int16, (sm, 0))
    m.op("ADD", [ta, tb], [t_add], "AddOptions", {"pot_scale_int16": False})
    m.op("SUB", [ta, tb], [t_sub], "SubOptions", {"fused_activation_function": "RELU", "pot_scale_int16": False})
    m.op("MUL", [ta, tb], [t_mul], "MulOptions")
    A, B = a.astype(np.int64), np.broadcast_to(b, a.shape).astype(np.int64)
    # ADD: double multipliers, 15 bits of headroom.
    twice = 2 * max(sa, sb)
    ma, mb, mo = (quantize_multiplier(v) for v in (sa / twice, sb / twice, twice / ((1 << 15) * so)))
    want_add = clamp(mbqm(mbqm(A << 15, ma) + mbqm(B << 15, mb), mo), np.int16)
    # SUB: float32 multipliers (sub_common.cc), then RELU: [round(0 / s) + 0, 32767].
    fa, fb, fo = np.float32(sa), np.float32(sb), np.float32(ss)
    ftwice = np.float32(2) * max(fa, fb)
    ma, mb = quantize_multiplier(float(fa / ftwice)), quantize_multiplier(float(fb / ftwice))
    mo = quantize_multiplier(float(ftwice / (np.float32(1 << 15) * fo)))
    want_sub = np.clip(mbqm(mbqm(A << 15, ma) - mbqm(B << 15, mb), mo), 0, 32767).astype(np.int16)
    want_mul = clamp(mbqm(A * B, quantize_multiplier(sa * sb / sm)), np.int16)
    r.run("int16_add_sub_mul", m, [(ta, "a", a), (tb, "b", b)],
          [(t_add, "sum", want_add), (t_sub, "diff", want_sub), (t_mul, "prod", want_mul)])


def pads(r):
    m = r.model
    x16 = ints(np.int16, (1, 3, 4, 2))
    x8 = ints(np.int8, (2, 5))
    t16 = m.tensor("x16", x16.shape, np.int16, (f32(0.003), 0))
    t8 = m.tensor("x8", x8.shape, np.int8, (f32(0.05), 3))
    p16 = m.tensor("pads16", (4, 2), np.int32, data=[[0, 0], [1, 2], [0, 3], [0, 0]])
    p8 = m.tensor("pads8", (2, 2), np.int64, data=[[1, 0], [2, 2]])
    c8 = m.tensor("value8", (1,), np.int8, (f32(0.05), 3), data=[-7])
    o16 = m.tensor("y16", (1, 6, 7, 2), np.int16, (f32(0.003), 0))
    o8 = m.tensor("y8", (3, 9), np.int8, (f32(0.05), 3))
    m.op("PAD", [t16, p16], [o16], "PadOptions")
    m.op("PADV2", [t8, p8, c8], [o8])
    want16 = np.pad(x16, [[0, 0], [1, 2], [0, 3], [0, 0]], constant_values=0)
    want8 = np.pad(x8, [[1, 0], [2, 2]], constant_values=-7)
    r.run("pad_int16_padv2_int8", m, [(t16, "x16", x16), (t8, "x8", x8)], [(o16, "y16", want16), (o8, "y8", want8)])


def strided_slices(r):
    m = r.model
    x = ints(np.int16, (2, 5, 6, 3))
    xf = rng.standard_normal((4, 7)).astype(np.float32)
    tx = m.tensor("x", x.shape, np.int16, (f32(0.01), 0))
    txf = m.tensor("xf", xf.shape, np.float32)
    cases = [
        # (begin, end, strides, begin_mask, end_mask, shrink, numpy index)
        ([0, 1, 0, 0], [2, 4, 6, 3], [1, 1, 2, 1], 0, 0, 0, np.s_[0:2, 1:4, 0:6:2, 0:3]),
        ([1, -1, 5, 2], [0, 0, 0, 0], [1, -2, -3, -1], 0, 0b1001, 0b0001, np.s_[1, -1:0:-2, 5:0:-3, 2::-1]),
        ([0, 2, -4, 0], [0, 9, -1, 2], [1, 1, 1, 1], 0b1001, 0b0001, 0b1000, np.s_[:, 2:9, -4:-1, 0]),
    ]
    outs, wants = [], []
    for k, (b, e, s, bm, em, sm, idx) in enumerate(cases):
        want = x[idx]
        tb = m.tensor(f"begin{k}", (4,), np.int32, data=b)
        te = m.tensor(f"end{k}", (4,), np.int32, data=e)
        ts = m.tensor(f"strides{k}", (4,), np.int32, data=s)
        to = m.tensor(f"y{k}", want.shape, np.int16, (f32(0.01), 0))
        m.op("STRIDED_SLICE", [tx, tb, te, ts], [to], "StridedSliceOptions",
             {"begin_mask": bm, "end_mask": em, "shrink_axis_mask": sm})
        outs.append((to, f"y{k}", want))
    want = xf[3:0:-1, ::-2]
    tb = m.tensor("beginf", (2,), np.int32, data=[3, -1])
    te = m.tensor("endf", (2,), np.int32, data=[0, 0])
    ts = m.tensor("stridesf", (2,), np.int32, data=[-1, -2])
    to = m.tensor("yf", want.shape, np.float32)
    m.op("STRIDED_SLICE", [txf, tb, te, ts], [to], "StridedSliceOptions", {"end_mask": 2})
    outs.append((to, "yf", want))
    r.run("strided_slice", m, [(tx, "x", x), (txf, "xf", xf)], outs)


def leaky_relus(r):
    m = r.model
    x16 = ints(np.int16, (2, 40))
    x8 = ints(np.int8, (3, 20))
    xf = rng.standard_normal((5, 4)).astype(np.float32)
    si16, so16, si8, so8, alpha = f32(0.002), f32(0.0017), f32(0.04), f32(0.03), f32(0.2)
    t16 = m.tensor("x16", x16.shape, np.int16, (si16, 0))
    t8 = m.tensor("x8", x8.shape, np.int8, (si8, -9))
    tf = m.tensor("xf", xf.shape, np.float32)
    o16 = m.tensor("y16", x16.shape, np.int16, (so16, 0))
    o8 = m.tensor("y8", x8.shape, np.int8, (so8, 4))
    of = m.tensor("yf", xf.shape, np.float32)
    for t, o in ((t16, o16), (t8, o8), (tf, of)):
        m.op("LEAKY_RELU", [t], [o], "LeakyReluOptions", {"alpha": alpha})

    def ref(x, si, zi, so, zo, dtype):  # multipliers in float32, as TFLM's Prepare
        ident = quantize_multiplier(float(np.float32(si) / np.float32(so)))
        neg = quantize_multiplier(float(np.float32(si) * np.float32(alpha) / np.float32(so)))
        v = x.astype(np.int64) - zi
        return clamp(np.where(v >= 0, mbqm(v, ident), mbqm(v, neg)) + zo, dtype)
    wantf = np.where(xf > 0, xf, xf * np.float32(alpha)).astype(np.float32)
    r.run("leaky_relu", m, [(t16, "x16", x16), (t8, "x8", x8), (tf, "xf", xf)],
          [(o16, "y16", ref(x16, si16, 0, so16, 0, np.int16)), (o8, "y8", ref(x8, si8, -9, so8, 4, np.int8)),
           (of, "yf", wantf)])


def quantizes(r):
    m = r.model
    xf = (rng.standard_normal((3, 7)) * 40).astype(np.float32)
    x16 = ints(np.int16, (4, 6))
    x32 = ints(np.int32, (2, 9), -(1 << 24), 1 << 24)
    x8 = ints(np.int8, (10,))
    s16, s8, s32, si32, so16, s8b = f32(0.0013), f32(0.19), f32(0.0004), f32(1.5e-7), f32(0.0009), f32(0.07)
    tf = m.tensor("xf", xf.shape, np.float32)
    t16 = m.tensor("x16", x16.shape, np.int16, (s16, 0))
    t32 = m.tensor("x32", x32.shape, np.int32, (si32, 0))
    t8 = m.tensor("x8", x8.shape, np.int8, (s8b, 5))
    q16 = m.tensor("q16", xf.shape, np.int16, (s16, 0))
    r8 = m.tensor("r8", x16.shape, np.int8, (s8, -3))
    r32 = m.tensor("r32", x16.shape, np.int32, (s32, 0))
    r16 = m.tensor("r16", x32.shape, np.int16, (so16, 0))
    rr8 = m.tensor("rr8", x8.shape, np.int8, (s8, -20))
    d16 = m.tensor("d16", x16.shape, np.float32)
    m.op("QUANTIZE", [tf], [q16])
    m.op("QUANTIZE", [t16], [r8])
    m.op("QUANTIZE", [t16], [r32])
    m.op("QUANTIZE", [t32], [r16])
    m.op("QUANTIZE", [t8], [rr8])
    m.op("DEQUANTIZE", [t16], [d16])
    # AffineQuantize: round half away from zero of x / scale in float32.
    v = xf / np.float32(s16)
    want_q16 = clamp(np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)), np.int16)

    def requant(x, si, zi, so, zo, dtype):
        return clamp(mbqm(x.astype(np.int64) - zi, quantize_multiplier(si / so)) + zo, dtype)
    want_d16 = (np.float32(s16) * (x16.astype(np.int32)).astype(np.float32)).astype(np.float32)
    r.run("quantize", m, [(tf, "xf", xf), (t16, "x16", x16), (t32, "x32", x32), (t8, "x8", x8)],
          [(q16, "q16", want_q16), (r8, "r8", requant(x16, s16, 0, s8, -3, np.int8)),
           (r32, "r32", requant(x16, s16, 0, s32, 0, np.int32)), (r16, "r16", requant(x32, si32, 0, so16, 0, np.int16)),
           (rr8, "rr8", requant(x8, s8b, 5, s8, -20, np.int8)), (d16, "d16", want_d16)])


def reductions(r):
    """MEAN and SUM on int16 and int8 over any axes: the int32 sum, then TFLM's integer
    requantization (MEAN folds 1/count into the multiplier), also for a MEAN whose input
    and output quantization are equal (TFLM 90b983c2's EvalIntegerMean)."""
    m = r.model
    x16 = ints(np.int16, (2, 5, 3, 4))
    x8 = ints(np.int8, (3, 4, 5))
    s16, so16, s8, so8 = f32(0.002), f32(0.0013), f32(0.03), f32(0.5)
    t16 = m.tensor("x16", x16.shape, np.int16, (s16, 0))
    t8 = m.tensor("x8", x8.shape, np.int8, (s8, 6))
    cases = []  # (name, op, input tensor, input array, (si, zi), (so, zo), axes, keep_dims)
    cases.append(("mean16", "MEAN", t16, x16, (s16, 0), (so16, 0), [1, -1], False))
    cases.append(("mean16_same", "MEAN", t16, x16, (s16, 0), (s16, 0), [0, 2], True))
    cases.append(("sum16", "SUM", t16, x16, (s16, 0), (f32(0.02), 0), [2], False))
    cases.append(("sum8", "SUM", t8, x8, (s8, 6), (so8, -4), [0, 2], True))
    cases.append(("mean8", "MEAN", t8, x8, (s8, 6), (f32(0.02), 3), [1], False))
    outs = []
    for name, op, t, x, (si, zi), (so, zo), axes, keep in cases:
        ax = tuple(a % x.ndim for a in axes)
        total = x.astype(np.int64).sum(axis=ax, keepdims=keep)
        n = int(np.prod([x.shape[a] for a in ax]))
        mult = quantize_multiplier(si / so)
        if op == "SUM":
            want = clamp(mbqm(total - zi * n, mult) + zo, x.dtype)
        else:
            shift = min(n.bit_length() - 1, 32, 31 + mult[1])
            want = clamp(mbqm(total - zi * n, ((mult[0] << shift) // n, mult[1] - shift)) + zo, x.dtype)
        ta = m.tensor(name + "_axes", (len(axes),), np.int32, data=axes)
        to = m.tensor(name, want.shape, x.dtype.type, (so, zo))
        m.op(op, [t, ta], [to], "ReducerOptions", {"keep_dims": keep})
        outs.append((to, name, want))
    r.run("mean_sum", m, [(t16, "x16", x16), (t8, "x8", x8)], outs)


def softmax_int16_out(r):
    m = r.model
    x = ints(np.int8, (3, 10))
    x[0, :] = rng.integers(100, 128, size=10)  # a row near the maximum
    si = f32(0.09)
    tx = m.tensor("x", x.shape, np.int8, (si, 4))
    to = m.tensor("p", x.shape, np.int16, (f32(1.0 / 65536), -32768))
    m.op("SOFTMAX", [tx], [to], "SoftmaxOptions", {"beta": 1.0})
    r.run("softmax_int8_int16", m, [(tx, "x", x)], [(to, "p", softmax_int8(x, si, 1.0, np.int16))])


def main():
    cli, flatc, schema = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as work:
        r = Runner(cli, flatc, schema, work)
        for test in (add_sub_mul, pads, strided_slices, leaky_relus, quantizes, reductions, softmax_int16_out):
            r.model.prefix = test.__name__ + "_"
            test(r)
        r.check()
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
