#!/usr/bin/env python3
"""UNIDIRECTIONAL_SEQUENCE_LSTM through `microtir run --target host` (which also checks the
C build against the interpreter), against a numpy reference of TFLite Micro's arithmetic
written here (tensorflow/lite/micro/kernels/lstm_eval.h and lstm_eval_common.cc, the
reference integer FullyConnected, MUL, LOGISTIC and TANH it calls):

- float32, batch-major and time-major, cell clipping on and off: within 1e-5 relative (TFLM's float arithmetic, libm's exp and tanh);
- int8 activations and weights with an int16 cell state, batch-major and time-major,
  non-zero input and hidden zero points, cell scales 2^-11 (clipping at cell_clip active)
  and 2^-12: exactly;
- TFLM's 16x8 LSTM (int16 activations with zero point 0, int8 weights, int64 biases, int16
  cell state; lstm_eval.h's EvalLstm<int16_t, int8_t, int16_t, int64_t>), batch- and
  time-major, clipping on and off, cell scales 2^-9 .. 2^-12: exactly.

And the LSTM variants TFLite Micro refuses (CIFG, peephole, projection, layer norm) are
refused by name. Each model is a single LSTM written as flatbuffer JSON and compiled by
flatc with our schema; its states are variable tensors, starting as TFLM starts them.

And the states carry over: the artifact of two models, run from a firmware main
(tests/codegen/state_main.c) on two inputs, gives the reference's two steps, the second
from the first one's states, and after tvmgen_model_reset() the first output again.

With `--target T --only CASE,...` only those cases run, on that target (a QEMU sample:
the same seeded data, no firmware-main state check, no refusals).

usage: lstm_tflite_test.py MICROTIR FLATC SCHEMA SOURCE_DIR [--target T --only CASE,...]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from state_firmware import two_runs_and_reset

# TFLite's sigmoid_table_uint16 (tensorflow/lite/kernels/internal/common.h): sigmoid(i / 24)
# in unsigned 0.16 fixed point, as published (it is not a plain rounding of the formula).
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432,
    42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475,
    49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485,
    55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519,
    59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036,
    62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405,
    64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179,
    65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337,
    65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517,
    65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533,
    65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
], dtype=np.int64)


# ---- TFLite's fixed-point helpers ---------------------------------------------------------

def quantize_multiplier(m):
    """QuantizeMultiplier: (multiplier, shift) with m = multiplier * 2^(shift - 31)."""
    if m == 0:
        return 0, 0
    frac, shift = np.frexp(m)
    q = int(np.floor(frac * (1 << 31) + 0.5))  # std::round: half away from zero (frac > 0)
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, int(shift)


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul on int64 arrays holding int32 values."""
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    q = ab + nudge
    # C's truncating division by 2^31
    return np.where(q >= 0, q >> 31, -((-q) >> 31))


def rdbpot(x, e):
    if e == 0:
        return x
    mask = (1 << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0)
    return (x >> e) + (rem > thr)


def mbqm(x, m):
    mult, shift = m
    left, right = max(shift, 0), max(-shift, 0)
    return rdbpot(srdhm(x * (1 << left), mult), right)


def mbqm_int64(acc, m):
    """MultiplyByQuantizedMultiplier(int64_t x, ...) (common.cc), the int16 FullyConnected's:
    the multiplier cut to 16 bits (rounded; 0x7FFF from 0x7FFF0000 up), one rounding shift."""
    mult, shift = m
    assert shift < 8, "TFLM asserts shift < 8 here"
    reduced = (mult + (1 << 15)) >> 16 if mult < 0x7FFF0000 else 0x7FFF
    total = 15 - shift
    return (acc * reduced + (1 << (total - 1))) >> total


def sat(x, lo, hi):
    return np.minimum(np.maximum(x, lo), hi)


def int16_logistic(x):
    """reference_integer_ops::Logistic(0, 0, ...): Q3.12 in, Q0.15 out."""
    v = x.astype(np.int64) * 3
    a = np.abs(v)
    uh = a >> 9
    i0 = np.minimum(uh, 254)
    r = np.where(uh >= 255, 0x7FFF << 10,
                 (SIGMOID_TABLE[i0] << 9) + (a & 0x1FF) * (SIGMOID_TABLE[i0 + 1] - SIGMOID_TABLE[i0]))
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return r >> 10


def int16_tanh(x, power):
    """lstm_internal::Tanh(cell_state_scale_power, ...) over reference_integer_ops::Tanh."""
    shift = 15 + power - 3
    mult = 0
    if shift < 0:
        shift, mult = -shift, 3
    if mult == 0:
        mult, shift = 3 << shift, 0
    rnd = (1 << (shift - 1)) if shift > 0 else 0
    v = (x.astype(np.int64) * mult + rnd) >> shift
    a = np.abs(v)
    uh = a >> 8
    i0 = np.minimum(uh, 254)
    r = np.where(uh >= 255, 0xFFFF << 8,
                 (SIGMOID_TABLE[i0] << 8) + (a & 0xFF) * (SIGMOID_TABLE[i0 + 1] - SIGMOID_TABLE[i0]))
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return r >> 8


def f32(v):
    return float(np.float32(v))


# ---- the references --------------------------------------------------------------------

def steps(x, time_major):
    """(batch, time, [batch, input] rows) in TFLM's order; every batch row is independent."""
    return x if time_major else x.transpose(1, 0, 2)


def lstm_float_ref(x, wx, wh, b, time_major, clip, state=None):
    """TFLM's float LSTM step: FC (sum, then bias), recurrent FC, sigmoid/tanh, cell, hidden."""
    xs = steps(x, time_major).astype(np.float64)
    T, B, _ = xs.shape
    S = wx[0].shape[0]
    h, c = state if state is not None else (np.zeros((B, S), np.float32), np.zeros((B, S), np.float32))
    out = np.zeros((T, B, S), np.float32)

    def sigmoid(v):
        return np.where(v > 16.619047164916992, 1.0, np.where(v < -9.0, np.exp(v), 1.0 / (1.0 + np.exp(-v))))

    for t in range(T):
        gates = []
        for g in range(4):
            pre = (xs[t] @ wx[g].T.astype(np.float64) + b[g]) + h.astype(np.float64) @ wh[g].T.astype(np.float64)
            gates.append(np.tanh(pre) if g == 2 else sigmoid(pre))
        i, f, cg, o = gates
        c = f * c + i * cg
        if clip > 0:
            c = np.clip(c, -f32(clip), f32(clip))
        h = np.tanh(c) * o
        c = c.astype(np.float32)
        h = h.astype(np.float32)
        out[t] = h
    if state is not None:
        state[:] = [h, c]
    return out if time_major else out.transpose(1, 0, 2)


def lstm_int_ref(x, wx, wh, b, q, time_major, clip, state=None):
    """TFLM's integer LSTM (8x8->16): x, h int8; weights int8; bias int32; c int16. On int16
    x (16x8): x, h int16 at zero point 0, bias int64, each gate's FullyConnected summed in
    int64 and requantized by the 64-bit MultiplyByQuantizedMultiplier; h saturates to int16."""
    wide = x.dtype == np.int16
    fc_requant = mbqm_int64 if wide else mbqm
    h_lo, h_hi = (-32768, 32767) if wide else (-128, 127)
    xs = steps(x, time_major).astype(np.int64)
    T, B, _ = xs.shape
    S = wx[0].shape[0]
    h, c = state if state is not None else (np.full((B, S), q["hidden_zp"], np.int64), np.zeros((B, S), np.int64))
    out = np.zeros((T, B, S), np.int64)
    q312 = f32(2.0 ** -12)
    power = int(round(np.log2(q["cell_scale"])))
    qclip = int(np.int16(min(max(f32(clip) / q["cell_scale"], -32768.0), 32767.0))) if clip > 0 else 0
    m_fc = quantize_multiplier(2.0 ** -15 * q["cell_scale"] / q["cell_scale"])
    m_ic = quantize_multiplier(2.0 ** -30 / q["cell_scale"])
    m_h = quantize_multiplier(2.0 ** -30 / q["hidden_scale"])
    for t in range(T):
        gates = []
        for g in range(4):
            mx = quantize_multiplier(q["input_scale"] * q["wx_scales"][g] / q312)
            mh = quantize_multiplier(q["hidden_scale"] * q["wh_scales"][g] / q312)
            acc_x = (xs[t] - q["input_zp"]) @ wx[g].T.astype(np.int64) + b[g]
            acc_h = (h - q["hidden_zp"]) @ wh[g].T.astype(np.int64)
            gx = sat(fc_requant(acc_x, mx), -32768, 32767)
            gh = sat(fc_requant(acc_h, mh), -32768, 32767)
            pre = sat(gx + gh, -32768, 32767)
            gates.append(int16_tanh(pre, -12) if g == 2 else int16_logistic(pre))
        i, f, cg, o = gates
        fc = sat(mbqm(f * c, m_fc), -32768, 32767)
        ic = sat(mbqm(i * cg, m_ic), -32768, 32767)
        c = sat(fc + ic, -32768, 32767)
        if clip > 0:
            c = sat(c, -qclip, qclip)
        th = int16_tanh(c, power)
        h = sat(mbqm(th * o, m_h) + q["hidden_zp"], h_lo, h_hi)
        out[t] = h
    if state is not None:
        state[:] = [h, c]
    out = out.astype(x.dtype)
    return out if time_major else out.transpose(1, 0, 2)


# ---- models --------------------------------------------------------------------------------

def lstm_model(x_shape, S, dtype, wx, wh, b, options, quant=None, drop=(), extra=None):
    """One LSTM: tensors in TFLite's 24-input layout; `drop` leaves inputs out (-1), `extra`
    adds tensors at other input positions (the variants that are refused)."""
    tensors, buffers = [], [{}]

    def tensor(name, shape, ttype, data=None, q=None, variable=False):
        t = {"name": name, "shape": list(shape), "type": ttype, "buffer": 0}
        if q is not None:
            t["quantization"] = {"scale": [q[0]], "zero_point": [q[1]]}
        if variable:
            t["is_variable"] = True
        if data is not None:
            t["buffer"] = len(buffers)
            buffers.append({"data": list(np.ascontiguousarray(data).tobytes())})
        tensors.append(t)
        return len(tensors) - 1

    qq = quant or {}
    integer = dtype in ("INT8", "INT16")
    wtype, btype = ("INT8", qq.get("bias_type", "INT64" if dtype == "INT16" else "INT32")) if integer \
        else ("FLOAT32", "FLOAT32")
    B = x_shape[1] if options.get("time_major") else x_shape[0]
    ins = [-1] * 24
    ins[0] = tensor("x", x_shape, dtype, q=(qq["input_scale"], qq["input_zp"]) if integer else None)
    for g in range(4):
        ins[1 + g] = tensor(f"wx{g}", wx[g].shape, wtype, wx[g], q=(qq["wx_scales"][g], 0) if integer else None)
        ins[5 + g] = tensor(f"wh{g}", wh[g].shape, wtype, wh[g], q=(qq["wh_scales"][g], 0) if integer else None)
        ins[12 + g] = tensor(f"b{g}", b[g].shape, btype, b[g],
                             q=(qq["input_scale"] * qq["wx_scales"][g], 0) if integer else None)
    ins[18] = tensor("hidden_state", (B, S), dtype, q=(qq["hidden_scale"], qq["hidden_zp"]) if integer else None,
                     variable=True)
    ins[19] = tensor("cell_state", (B, S), "INT16" if integer else "FLOAT32",
                     q=(qq["cell_scale"], 0) if integer else None, variable=True)
    for k in drop:
        ins[k] = -1
    for k, (shape, data) in (extra or {}).items():
        ins[k] = tensor(f"extra{k}", shape, wtype, data, q=(0.01, 0) if integer else None)
    T = x_shape[0] if options.get("time_major") else x_shape[1]
    out_shape = (T, B, S) if options.get("time_major") else (B, T, S)
    y = tensor("y", out_shape, dtype, q=(qq["hidden_scale"], qq["hidden_zp"]) if integer else None)
    return {"version": 3,
            "operator_codes": [{"builtin_code": "UNIDIRECTIONAL_SEQUENCE_LSTM", "deprecated_builtin_code": 44,
                                "version": 1}],
            "subgraphs": [{"tensors": tensors, "inputs": [ins[0]], "outputs": [y], "name": "main",
                           "operators": [{"opcode_index": 0, "inputs": ins, "outputs": [y],
                                          "builtin_options_type": "UnidirectionalSequenceLSTMOptions",
                                          "builtin_options": options}]}],
            "buffers": buffers}


# The target every case runs on and the cases selected (None: all), from the command line.
OPTS = {"target": "host", "only": None}


def selected(name):
    return OPTS["only"] is None or name in OPTS["only"]


def run(cli, flatc, schema, work, name, model, x, expect_fail=None):
    jpath = os.path.join(work, name + ".json")
    with open(jpath, "w") as f:
        json.dump(model, f)
    subprocess.run([flatc, "-b", "-o", work, schema, jpath], check=True)
    xpath = os.path.join(work, name + "_x.npy")
    np.save(xpath, x)
    out = os.path.join(work, name + "_out")
    p = subprocess.run([cli, "run", os.path.join(work, name + ".tflite"), "--input", "x=" + xpath,
                        "--target", OPTS["target"], "--output-dir", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if expect_fail is not None:
        msg = p.stdout + p.stderr
        if p.returncode != 1 or expect_fail not in msg:
            print(msg)
            raise SystemExit(f"FAIL: {name}: expected exit 1 naming '{expect_fail}', got {p.returncode}")
        print(f"ok   {name}: refused ({expect_fail})")
        return None
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit(f"FAIL: microtir run {name} exited {p.returncode}")
    files = [f for f in os.listdir(out) if f.endswith(".npy")]
    return np.load(os.path.join(out, files[0]))


def check_state(cli, source, work, name, xs, wants, dtype):
    """The artifact from a firmware main: two runs (the state carried over), reset, the first again."""
    paths = []
    for k, x in enumerate(xs):
        paths.append(os.path.join(work, f"{name}_state_x{k}.bin"))
        x.tofile(paths[-1])
    outs, reset = two_runs_and_reset(cli, source, work, name, os.path.join(work, name + ".tflite"), paths)
    got = [np.frombuffer(o, dtype).reshape(wants[0].shape) for o in outs]
    if dtype == np.float32:
        close = [np.max(np.abs(g - w) / np.maximum(np.abs(w), 1e-3)) <= 1e-5 for g, w in zip(got, wants)]
        ok = all(close) and np.array_equal(got[2], got[0])
    else:
        ok = np.array_equal(got[0], wants[0]) and np.array_equal(got[1], wants[1]) and np.array_equal(got[2], got[0])
    ok = ok and reset.startswith("reset ") and not np.array_equal(wants[0], wants[1])
    print(f"{'ok  ' if ok else 'FAIL'} {name}: two runs carry the states over, reset gives the first output again")
    return ok


# (name, batch, time, inputs, state, time_major, cell_clip, activation)
FLOAT_CASES = [("float_batch_major", 2, 5, 3, 4, False, 0.0, "TANH"),
               ("float_time_major_clip", 3, 4, 5, 6, True, 0.7, "TANH"),
               ("float_clip_tight", 1, 6, 4, 3, False, 0.3, "TANH")]
# (name, batch, time, inputs, state, time_major, cell_scale, cell_clip)
INT8_CASES = [("int8_batch_major", 2, 7, 5, 4, False, 2.0 ** -11, 10.0),
              ("int8_time_major", 2, 6, 3, 5, True, 2.0 ** -12, 10.0),
              ("int8_clip_tight", 1, 9, 6, 8, False, 2.0 ** -11, 1.5),
              ("int8_no_clip", 3, 3, 4, 4, True, 2.0 ** -10, 0.0)]
# (name, batch, time, inputs, state, time_major, cell_scale, cell_clip, hidden_scale * 2^15):
# 16x8; a hidden scale below 2^-15 saturates the hidden state at int16's ends.
INT16_CASES = [("int16_batch_major", 2, 6, 5, 4, False, 2.0 ** -11, 3.0, 1.01),
               ("int16_time_major", 3, 5, 4, 6, True, 2.0 ** -12, 0.0, 1.01),
               ("int16_clip_tight", 1, 8, 7, 5, False, 2.0 ** -10, 0.8, 1.3),
               ("int16_hidden_saturates", 2, 4, 9, 12, True, 2.0 ** -9, 20.0, 0.6),
               ("int16_one_step", 4, 1, 3, 3, False, 2.0 ** -11, 0.0, 1.01)]
# The (operator, dtype) pair of each single-operator case (docs/tflite.md's table counts them).
PAIRS = [("UNIDIRECTIONAL_SEQUENCE_LSTM", "float32")] * len(FLOAT_CASES) + \
    [("UNIDIRECTIONAL_SEQUENCE_LSTM", "int8")] * len(INT8_CASES) + \
    [("UNIDIRECTIONAL_SEQUENCE_LSTM", "int16")] * len(INT16_CASES)


def float_case(cli, flatc, schema, source, work, name, xs, wx, wh, b, tm, clip, act):
    """One float32 LSTM against lstm_float_ref within 1e-5 relative; with a second input x2
    also the states carried over from a firmware main."""
    if not selected(name):
        return True
    x, x2 = xs
    B = x.shape[1] if tm else x.shape[0]
    S = wx[0].shape[0]
    opts = {"fused_activation_function": act, "cell_clip": clip, "time_major": tm}
    got = run(cli, flatc, schema, work, name, lstm_model(x.shape, S, "FLOAT32", wx, wh, b, opts), x)
    want = lstm_float_ref(x, wx, wh, b, tm, clip)
    err = np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-3))
    ok = got.shape == want.shape and err <= 1e-5
    print(f"{'ok  ' if ok else 'FAIL'} {name} on {OPTS['target']}: {got.shape}, max relative error {err:.2e}")
    if x2 is not None and OPTS["target"] == "host":
        state = [np.zeros((B, S), np.float32), np.zeros((B, S), np.float32)]
        wants = [lstm_float_ref(v, wx, wh, b, tm, clip, state) for v in (x, x2)]
        ok = check_state(cli, source, work, name, [x, x2], wants, np.float32) and ok
    return ok


def refusals(cli, flatc, schema, work):
    """The variants TFLite Micro refuses, and 16x8 as TFLM cannot take it: exit 1 naming them."""
    S, I = 3, 2
    wx = [np.zeros((S, I), np.float32)] * 4
    wh = [np.zeros((S, S), np.float32)] * 4
    b = [np.zeros((S,), np.float32)] * 4
    x = np.zeros((1, 2, I), np.float32)
    opts = {"fused_activation_function": "TANH"}
    for name, kw, msg in [("cifg", {"drop": (1, 5, 12)}, "without an input gate (CIFG)"),
                          ("peephole", {"extra": {10: ((S,), np.zeros(S, np.float32))}}, "peephole"),
                          ("projection", {"extra": {16: ((S, S), np.zeros((S, S), np.float32))}}, "projection"),
                          ("layer_norm", {"extra": {21: ((S,), np.zeros(S, np.float32))}}, "layer-norm LSTM")]:
        run(cli, flatc, schema, work, "refused_" + name, lstm_model(x.shape, S, "FLOAT32", wx, wh, b, opts, **kw),
            x, expect_fail=msg)
    run(cli, flatc, schema, work, "refused_relu", lstm_model(x.shape, S, "FLOAT32", wx, wh, b,
                                                               {"fused_activation_function": "RELU"}),
        x, expect_fail="cell gate activation is RELU")
    # 16x8 as TFLM cannot take it: an int16 zero point (its int16 FullyConnected ignores
    # it), an int32 bias (read as int64 by EvalLstm<..., int64_t>).
    wx8 = [np.zeros((S, I), np.int8)] * 4
    wh8 = [np.zeros((S, S), np.int8)] * 4
    q16 = {"input_scale": 1e-4, "input_zp": 0, "hidden_scale": 1e-4, "hidden_zp": 0, "cell_scale": 2.0 ** -11,
           "wx_scales": [0.01] * 4, "wh_scales": [0.01] * 4}
    x16 = np.zeros((1, 2, I), np.int16)
    for name, qk, bias, msg in [("int16_zero_point", {"input_zp": 5}, np.int64, "has a non-zero zero point"),
                                ("int16_int32_bias", {"bias_type": "INT32"}, np.int32, "int32 biases on int16 data")]:
        b16 = [np.zeros((S,), bias)] * 4
        run(cli, flatc, schema, work, "refused_" + name,
            lstm_model(x16.shape, S, "INT16", wx8, wh8, b16, opts, dict(q16, **qk)), x16, expect_fail=msg)


def int8_weights(rng, I, S):
    """The four gates' input and recurrent weights, int8, symmetric."""
    wx = [rng.integers(-127, 128, (S, I), dtype=np.int8) for _ in range(4)]
    wh = [rng.integers(-127, 128, (S, S), dtype=np.int8) for _ in range(4)]
    return wx, wh


def int_case(cli, flatc, schema, source, work, name, dtype, xs, wx, wh, b, q, tm, clip, with_state):
    """One integer LSTM (int8 or 16x8) against lstm_int_ref, exactly; with_state also runs the
    artifact twice from a firmware main (the states carried over) and after a reset."""
    if not selected(name):
        return True
    x, x2 = xs
    B = x.shape[1] if tm else x.shape[0]
    S = wx[0].shape[0]
    opts = {"fused_activation_function": "TANH", "cell_clip": clip, "time_major": tm}
    got = run(cli, flatc, schema, work, name, lstm_model(x.shape, S, dtype, wx, wh, b, opts, q), x)
    want = lstm_int_ref(x, wx, wh, b, q, tm, clip)
    ok = got.shape == want.shape and got.dtype == x.dtype and np.array_equal(got, want)
    diff = int(np.sum(got != want)) if got.shape == want.shape else -1
    print(f"{'ok  ' if ok else 'FAIL'} {name} on {OPTS['target']}: {got.shape} {got.dtype}, {diff} of {want.size} "
          f"values differ, {len(np.unique(want))} distinct")
    if with_state and OPTS["target"] == "host":
        state = [np.full((B, S), q["hidden_zp"], np.int64), np.zeros((B, S), np.int64)]
        wants = [lstm_int_ref(v, wx, wh, b, q, tm, clip, state) for v in (x, x2)]
        ok = check_state(cli, source, work, name, [x, x2], wants, x.dtype) and ok
    return ok


def main():
    cli, flatc, schema, source = sys.argv[1:5]
    flags = dict(zip(sys.argv[5::2], sys.argv[6::2]))
    OPTS["target"] = flags.get("--target", "host")
    if "--only" in flags:
        OPTS["only"] = flags["--only"].split(",")
    rng = np.random.default_rng(35)
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        # float32
        for name, B, T, I, S, tm, clip, act in FLOAT_CASES:
            wx = [rng.uniform(-0.8, 0.8, (S, I)).astype(np.float32) for _ in range(4)]
            wh = [rng.uniform(-0.8, 0.8, (S, S)).astype(np.float32) for _ in range(4)]
            b = [rng.uniform(-0.5, 0.5, (S,)).astype(np.float32) for _ in range(4)]
            shape = (T, B, I) if tm else (B, T, I)
            x = rng.standard_normal(shape).astype(np.float32)
            x2 = rng.standard_normal(shape).astype(np.float32) if name == "float_batch_major" else None
            failures += not float_case(cli, flatc, schema, source, work, name, (x, x2), wx, wh, b, tm, clip, act)
        # int8 with an int16 cell state
        for name, B, T, I, S, tm, cell_scale, clip in INT8_CASES:
            q = {"input_scale": f32(0.05), "input_zp": -7, "hidden_scale": f32(1 / 128.0 * 1.01), "hidden_zp": 3,
                 "cell_scale": cell_scale,
                 "wx_scales": [f32(v) for v in rng.uniform(0.004, 0.03, 4)],
                 "wh_scales": [f32(v) for v in rng.uniform(0.004, 0.03, 4)]}
            wx, wh = int8_weights(rng, I, S)
            b = [rng.integers(-3000, 3000, (S,), dtype=np.int32) for _ in range(4)]
            shape = (T, B, I) if tm else (B, T, I)
            x = rng.integers(-128, 128, shape, dtype=np.int8)
            x2 = rng.integers(-128, 128, shape, dtype=np.int8)
            failures += not int_case(cli, flatc, schema, source, work, name, "INT8", (x, x2), wx, wh, b, q, tm, clip,
                                     name in ("int8_batch_major", "int8_time_major"))
        # 16x8: int16 data and hidden state (zero point 0), int8 weights, int64 biases
        for name, B, T, I, S, tm, cell_scale, clip, hidden in INT16_CASES:
            q = {"input_scale": f32(4.0 / 32768), "input_zp": 0, "hidden_scale": f32(hidden / 32768), "hidden_zp": 0,
                 "cell_scale": cell_scale,
                 "wx_scales": [f32(v) for v in rng.uniform(0.004, 0.03, 4)],
                 "wh_scales": [f32(v) for v in rng.uniform(0.004, 0.03, 4)]}
            wx, wh = int8_weights(rng, I, S)
            # Biases of about +-1.5 at scale input_scale * wx_scale: beyond int32's 2^31 as
            # sums with the products would not be, but int64 is the tensor type.
            b = [rng.integers(-2 ** 21, 2 ** 21, (S,), dtype=np.int64) for _ in range(4)]
            shape = (T, B, I) if tm else (B, T, I)
            x, x2 = (np.clip(rng.normal(0, 9000, shape), -32768, 32767).astype(np.int16) for _ in range(2))
            failures += not int_case(cli, flatc, schema, source, work, name, "INT16", (x, x2), wx, wh, b, q, tm, clip,
                                     name == "int16_batch_major")
        if OPTS["only"] is None:
            refusals(cli, flatc, schema, work)
    if failures:
        raise SystemExit(f"FAIL: {failures} LSTM case(s) differ")
    print("all LSTM cases match")


if __name__ == "__main__":
    main()
