#!/usr/bin/env python3
"""Generated single-operator cases for the dtypes TFLM's shared cases (tflm_ops/) lack:
bool, int32 and int64 data, CAST between every pair TFLM's kernel converts
(kernels/cast.cc: float32, int8, int16, int32 or bool in; int8, int16, int32 or float32
out, a static_cast per element), int16 BATCH_MATMUL (int64 sums, the int64
MultiplyByQuantizedMultiplier), and uint8 where TFLM's kernels take it: QUANTIZE
between uint8 and int8 (quantize_common.cc, reference_ops::Requantize), DEQUANTIZE uint8
to float32 (reference_ops::Dequantize), and the byte copies RESHAPE, SQUEEZE,
BROADCAST_TO and SHAPE (their kernels copy any type). Each model is made here (flatc from JSON, with
shape_ops_tflite_test's Model) with seeded inputs; the expected outputs come from numpy
references of TFLM's rules (C conversions: float to integer truncates toward zero,
integer narrowing wraps, bool is 0 or 1). Every case runs `microtir run --target host`
(the reference interpreter, the C artifact built and compared with it), all in this one
process, the cases side by side in two models (two runs). And refusals: the pairs TFLM's CAST
does not write (int64, bool out) and bool SELECT_V2 data are named.

Each case says its (operator, dtype) pair in CASES: docs/tflite.md's table counts them.

usage: dtype_cases_test.py MICROTIR FLATC SCHEMA
"""
import sys
import tempfile

import numpy as np

import int16_ops_tflite_test as fixed_point
import int16x8_mac_tflite_test as wide_mac
import shape_ops_tflite_test as shape_ops

rng = np.random.default_rng(53)
shape_ops.TYPES[np.bool_] = "BOOL"
shape_ops.TYPES[np.uint8] = "UINT8"
_base_ids = shape_ops.c_id
CODES = {"BATCH_MATMUL": 126, "ADD": 0, "QUANTIZE": 114, "DEQUANTIZE": 6, "RESHAPE": 22, "CAST": 53, "LOGICAL_AND": 86, "LOGICAL_OR": 84, "LOGICAL_NOT": 87, "SELECT_V2": 123, "EQUAL": 71,
         "LESS": 58, "GREATER_EQUAL": 62, "ARG_MAX": 56, "ARG_MIN": 79, "MAXIMUM": 55, "MINIMUM": 57, "SUB": 41, "MUL": 18,
         "DIV": 42, "NOT_EQUAL": 72, "GREATER": 61, "CUMSUM": 128, "ADD_N": 106}
shape_ops.c_id = lambda code: CODES[code] if code in CODES else _base_ids(code)


def values(dtype, shape):
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype == np.float32:
        return (rng.standard_normal(shape) * 60).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1 << 40), min(info.max, 1 << 40), shape, endpoint=True).astype(dtype)


def unquantized(m, t):
    m.tensors[t].pop("quantization", None)  # CAST and the comparisons of raw values read none
    return t


def quantized(m, t, scale, zero_point):
    m.tensors[t]["quantization"] = {"scale": [scale], "zero_point": [zero_point]}
    return t


def requantize_ref(x, si, zi, so, zo, dtype):
    """reference_ops::Requantize as TFLM prepares it: the multiplier of the double quotient
    of the float32 scales; (x - zi) scaled, plus zo, clamped to the output type. (Its fast
    path for int8 <-> uint8 at one scale, x ^ 0x80, gives the same bytes.)"""
    mult = fixed_point.quantize_multiplier(fixed_point.f32(si) / fixed_point.f32(so))
    return fixed_point.clamp(fixed_point.mbqm(x.astype(np.int64) - zi, mult) + zo, dtype)


def requantize_case(src, dst, si, zi, so, zo, shape=(3, 17)):
    def build(m, p):
        x = values(src, shape)
        a = quantized(m, m.input(p + "_x", x), si, zi)
        y = quantized(m, m.tensor(p + "_y", dst, shape), so, zo)
        m.op("QUANTIZE", [a], [y])
        return [y], [requantize_ref(x, si, zi, so, zo, dst)]
    return build


def dequantize_u8(m, p):
    x, scale, zero_point = values(np.uint8, (4, 9)), 0.0371, 131
    y = m.tensor(p + "_y", np.float32, x.shape)
    m.op("DEQUANTIZE", [quantized(m, m.input(p + "_x", x), scale, zero_point)], [y])
    # reference_ops::Dequantize: static_cast<float>(double(scale) * (x - zero_point)).
    return [y], [(np.float64(np.float32(scale)) * (x.astype(np.float64) - zero_point)).astype(np.float32)]


def copy_u8_case(code, in_shape, out_shape, **options):
    """RESHAPE, SQUEEZE or BROADCAST_TO of quantized uint8 data (TFLM copies the bytes)."""
    def build(m, p):
        x = values(np.uint8, in_shape)
        ins = [quantized(m, m.input(p + "_x", x), 0.5, 200)]
        if code != "SQUEEZE":
            ins.append(m.const(p + "_shape", list(out_shape)))
        y = quantized(m, m.tensor(p + "_y", np.uint8, out_shape), 0.5, 200)
        m.op(code, ins, [y], *([code.title().replace("_", "") + "Options"] if options else []), **options)
        return [y], [np.broadcast_to(x, out_shape).copy() if code == "BROADCAST_TO" else x.reshape(out_shape)]
    return build


def shape_of_u8(m, p):
    x = values(np.uint8, (2, 1, 5))
    y = m.tensor(p + "_y", np.int32, (3,))
    m.op("SHAPE", [m.input(p + "_x", x)], [y], "ShapeOptions", out_type="INT32")
    return [y], [np.array(x.shape, np.int32)]


def batch_matmul_i16(a_shape, b_shape, adj_y, scales):
    """TFLM's int16 BATCH_MATMUL (BatchMatMul<int16_t, int64_t>, zero points 0): int64 sums
    of a * b requantized by the int64 MultiplyByQuantizedMultiplier of
    double(float32(sa * sb)) / so, clamped to int16."""
    def build(m, p):
        sa, sb, so = (np.float32(s) for s in scales)
        a, b = values(np.int16, a_shape), values(np.int16, b_shape)
        bt = np.swapaxes(b, -1, -2) if adj_y else b
        out_shape = np.broadcast_shapes(a_shape[:-2], bt.shape[:-2]) + (a_shape[-2], bt.shape[-1])
        ta = quantized(m, m.input(p + "_a", a), float(sa), 0)
        tb = quantized(m, m.input(p + "_b", b), float(sb), 0)
        y = quantized(m, m.tensor(p + "_y", np.int16, out_shape), float(so), 0)
        m.op("BATCH_MATMUL", [ta, tb], [y], "BatchMatMulOptions", adj_y=adj_y)
        acc = np.matmul(a.astype(np.int64), bt.astype(np.int64))
        mult, shift = wide_mac.quantize_multiplier(float(np.float32(sa * sb)) / float(so))
        return [y], [fixed_point.clamp(wide_mac.mbqm64(acc, mult, shift), np.int16)]
    return build


def cast_case(src, dst, shape=(2, 3, 5)):
    def build(m, p):
        x = values(src, shape)
        if src == np.float32 and dst != np.float32:
            x = np.clip(x, -100, 100).astype(np.float32)  # in range of every target: C leaves the rest undefined
        a = unquantized(m, m.input(p + "_x", x))
        y = unquantized(m, m.tensor(p + "_y", dst, shape))
        m.op("CAST", [a], [y], "CastOptions", in_data_type=shape_ops.TYPES[src], out_data_type=shape_ops.TYPES[dst])
        return [y], [x.astype(dst)]
    return build


def binary_case(code, dtype, ref, out_dtype=None, shapes=((3, 4), (3, 4)), relu=False):
    def build(m, p):
        xs = [values(dtype, s) for s in shapes]
        if dtype == np.int32:
            xs = [x // 4 for x in xs]  # sums within int32
        ins = [unquantized(m, m.input(f"{p}_x{k}", x)) for k, x in enumerate(xs)]
        y = unquantized(m, m.tensor(p + "_y", out_dtype or dtype, np.broadcast_shapes(*shapes)))
        m.op(code, ins, [y], *(["AddOptions"] if relu else []), **({"fused_activation_function": "RELU"} if relu else {}))
        return [y], [ref(*xs).astype(out_dtype or dtype)]
    return build


def logical_not(m, p):
    x = values(np.bool_, (4, 5))
    y = m.tensor(p + "_y", np.bool_, x.shape)
    m.op("LOGICAL_NOT", [m.input(p + "_x", x)], [y])
    return [y], [~x]


def select_case(dtype):
    def build(m, p):
        c, a, b = values(np.bool_, (2, 1, 4)), values(dtype, (2, 3, 4)), values(dtype, (1, 3, 4))
        ins = [m.input(p + "_c", c), unquantized(m, m.input(p + "_a", a)), unquantized(m, m.input(p + "_b", b))]
        y = unquantized(m, m.tensor(p + "_y", dtype, (2, 3, 4)))
        m.op("SELECT_V2", ins, [y])
        return [y], [np.where(c, a, b).astype(dtype)]
    return build


def arg_case(code, dtype, out_dtype):
    def build(m, p):
        x = values(dtype, (3, 7))
        y = m.tensor(p + "_y", out_dtype, (3,))
        m.op(code, [unquantized(m, m.input(p + "_x", x)), m.const(p + "_axis", [1])], [y], "ArgMaxOptions" if code == "ARG_MAX"
             else "ArgMinOptions", output_type=shape_ops.TYPES[out_dtype])
        return [y], [(np.argmax if code == "ARG_MAX" else np.argmin)(x, axis=1).astype(out_dtype)]
    return build


def refuse_cast(dst, words):
    def build(m, p):
        a = unquantized(m, m.input(p + "_x", values(np.int32, (4,))))
        y = unquantized(m, m.tensor(p + "_y", dst, (4,)))
        m.op("CAST", [a], [y])
        return [y], words
    return build


def refuse_uint8(code, src, words):
    """A uint8 pair TFLM's kernels do not take: refused by name."""
    def build(m, p):
        a = m.input(p + "_x", values(src, (2, 4)))
        if src == np.uint8:
            quantized(m, a, 0.1, 128)
        y = quantized(m, m.tensor(p + "_y", np.uint8, (2, 4)), 0.1, 128)
        m.op(code, [a] * (2 if code == "ADD" else 1), [y])
        return [y], words
    return build


# CalculateActivationRange<int32_t>: the fused activation's bounds as integers.
INT_ACTIVATIONS = {"NONE": (-1 << 31, (1 << 31) - 1), "RELU": (0, (1 << 31) - 1), "RELU6": (0, 6), "RELU_N1_TO_1": (-1, 1)}


def truncating_div(a, b):
    """C's integer division (toward zero), as reference_ops::Div<int32_t> computes it."""
    return (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)


def int32_arith(code, ref, act, shapes=((2, 3, 4), (3, 1))):
    """TFLM's int32 SUB, MUL and DIV (sub.cc, mul_common.cc, div.cc): the plain operation
    in int32, clamped to the activation's integer range; broadcast."""
    def build(m, p):
        xs = [values(np.int32, s) // (1 << 17) for s in shapes]  # products within int32
        if code == "DIV":
            xs[1] = np.where(xs[1] == 0, 3, xs[1])
        ins = [unquantized(m, m.input(f"{p}_x{k}", x)) for k, x in enumerate(xs)]
        y = unquantized(m, m.tensor(p + "_y", np.int32, np.broadcast_shapes(*shapes)))
        m.op(code, ins, [y], code.title() + "Options", fused_activation_function=act)
        lo, hi = INT_ACTIVATIONS[act]
        return [y], [np.clip(ref(*(x.astype(np.int64) for x in xs)), lo, hi).astype(np.int32)]
    return build


def greater_int16(m, p):
    """TFLM's int16 GREATER (comparisons.cc): each side (x - zero point) * 2^8 times its
    scale as a multiplier below one (MultiplyByQuantizedMultiplierSmallerThanOneExp), then
    compared: values a few steps apart at a small scale compare equal."""
    (sa, za), (sb, zb) = (0.0005, 0), (0.0009, 0)
    a, b = values(np.int16, (4, 6)) // 64, values(np.int16, (6,)) // 64
    ta = quantized(m, unquantized(m, m.input(p + "_a", a)), sa, za)
    tb = quantized(m, unquantized(m, m.input(p + "_b", b)), sb, zb)
    y = m.tensor(p + "_y", np.bool_, (4, 6))
    m.op("GREATER", [ta, tb], [y])
    scale = lambda x, s, z: fixed_point.mbqm((x.astype(np.int64) - z) * 256, fixed_point.quantize_multiplier(fixed_point.f32(s)))
    return [y], [scale(a, sa, za) > scale(b, sb, zb)]


def reverse_u8(m, p):
    x = values(np.uint8, (3, 5, 2))
    y = quantized(m, m.tensor(p + "_y", np.uint8, x.shape), 0.5, 200)
    m.op("REVERSE_V2", [quantized(m, m.input(p + "_x", x), 0.5, 200), m.const(p + "_axis", [1])], [y])
    return [y], [x[:, ::-1].copy()]


def scaled_sum_case(code, inputs=1, axis=1, exclusive=False, reverse=False):
    """TFLM's int8 ADD_N and CUMSUM (reference_ops::AddN, CumSum): each input
    (x - zp) * 2^20 times the multiplier of 0.5, i.e. (x - zp) * 2^19; the int32 sum starts
    at the input offset -zp * 2^19 (not 0); MBQM by 2 scale / (2^20 output scale), plus the
    output zero point, clamped."""
    def build(m, p):
        (s, zp), (so, zo) = (0.043, -9), (0.11, 5)
        xs = [values(np.int8, (3, 5)) for _ in range(inputs)]
        ins = [quantized(m, m.input(f"{p}_x{k}", x), s, zp) for k, x in enumerate(xs)]
        if code == "CUMSUM":
            ins.append(m.const(p + "_axis", np.array(axis, np.int32)))
        y = quantized(m, m.tensor(p + "_y", np.int8, (3, 5)), so, zo)
        m.op(code, ins, [y], *(["CumsumOptions"] if code == "CUMSUM" else []),
             **({"exclusive": exclusive, "reverse": reverse} if code == "CUMSUM" else {}))
        scaled = [(x.astype(np.int64) - zp) << 19 for x in xs]
        if code == "ADD_N":
            total = sum(scaled)
        else:
            v = np.flip(scaled[0], axis) if reverse else scaled[0]
            c = np.cumsum(v, axis=axis)
            if exclusive:
                c = np.concatenate([np.zeros_like(np.take(c, [0], axis)), np.delete(c, -1, axis)], axis)
            total = np.flip(c, axis) if reverse else c
        f = fixed_point.f32
        mult = fixed_point.quantize_multiplier(2 * f(s) / ((1 << 20) * f(so)))
        out = fixed_point.mbqm(fixed_point.wrap32(total - zp * (1 << 19)), mult) + zo
        return [y], [fixed_point.clamp(out, np.int8)]
    return build


def refuse_div_scales(m, p):
    """int8 DIV whose requantization multiplier (a_scale / (b_scale * output_scale)) is
    2^26: TFLM's shift would turn left, refused by name."""
    a = quantized(m, m.input(p + "_a", values(np.int8, (2, 4))), 100.0, 0)
    b = quantized(m, m.input(p + "_b", values(np.int8, (2, 4))), 0.001, 0)
    y = quantized(m, m.tensor(p + "_y", np.int8, (2, 4)), 0.0015, 0)
    m.op("DIV", [a, b], [y])
    return [y], "TFLM's int8 DIV takes at most 2^23"


def case(op, dtype, build, name):
    return {"op": op, "dtype": dtype, "build": build, "name": name}


NAMES = {np.float32: "float32", np.int8: "int8", np.int16: "int16", np.int32: "int32", np.int64: "int64", np.bool_: "bool",
         np.uint8: "uint8"}
CASES = [case("CAST", NAMES[s], cast_case(s, d), f"cast_{NAMES[s]}_{NAMES[d]}")
         for s in (np.float32, np.int8, np.int16, np.int32, np.bool_)
         for d in (np.int8, np.int16, np.int32, np.float32) if s != d] + [
    case("LOGICAL_AND", "bool", binary_case("LOGICAL_AND", np.bool_, np.logical_and, shapes=((2, 4), (1, 4))), "logical_and"),
    case("LOGICAL_OR", "bool", binary_case("LOGICAL_OR", np.bool_, np.logical_or), "logical_or"),
    case("LOGICAL_NOT", "bool", logical_not, "logical_not"),
    case("SELECT_V2", "int64", select_case(np.int64), "select_v2_int64"),
    case("SELECT_V2", "int32", select_case(np.int32), "select_v2_int32"),
    case("EQUAL", "int64", binary_case("EQUAL", np.int64, np.equal, np.bool_), "equal_int64"),
    case("LESS", "int64", binary_case("LESS", np.int64, np.less, np.bool_, ((3, 4), (4,))), "less_int64"),
    case("GREATER_EQUAL", "int32", binary_case("GREATER_EQUAL", np.int32, np.greater_equal, np.bool_), "greater_equal_int32"),
    case("MAXIMUM", "int64", binary_case("MAXIMUM", np.int64, np.maximum), "maximum_int64"),
    case("MINIMUM", "int32", binary_case("MINIMUM", np.int32, np.minimum, shapes=((2, 3), (1, 3))), "minimum_int32"),
    case("ARG_MAX", "int32", arg_case("ARG_MAX", np.int32, np.int64), "arg_max_int32_to_int64"),
    case("ARG_MIN", "float32", arg_case("ARG_MIN", np.float32, np.int64), "arg_min_float32_to_int64"),
] + [
    # TFLM's int32 ADD ignores the fused activation (its range is all of int32).
    case("ADD", "int32", binary_case("ADD", np.int32, lambda a, b: a + b, shapes=((2, 3, 4), (3, 1)), relu=True),
         "add_int32_relu_ignored"),
    case("BATCH_MATMUL", "int16", batch_matmul_i16((2, 3, 7), (7, 4), False, (0.002, 0.0031, 0.9)), "batch_matmul_int16"),
    case("BATCH_MATMUL", "int16", batch_matmul_i16((1, 2, 5, 9), (3, 1, 6, 9), True, (0.0004, 0.0007, 0.011)),
         "batch_matmul_int16_adj_y_saturating"),
] + [
    case("SUB", "int32", int32_arith("SUB", lambda a, b: a - b, "RELU6"), "sub_int32_relu6"),
    case("MUL", "int32", int32_arith("MUL", lambda a, b: a * b, "RELU"), "mul_int32_relu"),
    case("DIV", "int32", int32_arith("DIV", truncating_div, "NONE"), "div_int32"),
    case("DIV", "int32", int32_arith("DIV", truncating_div, "RELU_N1_TO_1", ((3, 4), (3, 4))), "div_int32_relu_n1_to_1"),
    case("EQUAL", "bool", binary_case("EQUAL", np.bool_, np.equal, np.bool_, ((2, 4), (4,))), "equal_bool"),
    case("NOT_EQUAL", "bool", binary_case("NOT_EQUAL", np.bool_, np.not_equal, np.bool_), "not_equal_bool"),
    case("GREATER", "int16", greater_int16, "greater_int16_rescaled"),
    case("ADD_N", "int8", scaled_sum_case("ADD_N", inputs=3), "add_n_int8"),
    case("CUMSUM", "int8", scaled_sum_case("CUMSUM"), "cumsum_int8"),
    case("CUMSUM", "int8", scaled_sum_case("CUMSUM", axis=0, exclusive=True, reverse=True), "cumsum_int8_exclusive_reverse"),
] + [  # uint8: QUANTIZE's pair is its output's dtype
    case("QUANTIZE", "uint8", requantize_case(np.int8, np.uint8, 0.05, 3, 0.05, 131), "quantize_int8_uint8_shift"),
    case("QUANTIZE", "uint8", requantize_case(np.int8, np.uint8, 0.05, -7, 0.031, 120), "quantize_int8_uint8"),
    case("QUANTIZE", "int8", requantize_case(np.uint8, np.int8, 0.0078125, 128, 0.0078125, 0), "quantize_uint8_int8_shift"),
    case("QUANTIZE", "int8", requantize_case(np.uint8, np.int8, 0.02, 140, 0.037, -5), "quantize_uint8_int8"),
    case("DEQUANTIZE", "uint8", dequantize_u8, "dequantize_uint8"),
    case("RESHAPE", "uint8", copy_u8_case("RESHAPE", (2, 3, 4), (6, 4), new_shape=[6, 4]), "reshape_uint8"),
    case("SQUEEZE", "uint8", copy_u8_case("SQUEEZE", (1, 3, 1, 4), (3, 4), squeeze_dims=[0, 2]), "squeeze_uint8"),
    case("BROADCAST_TO", "uint8", copy_u8_case("BROADCAST_TO", (3, 1), (2, 3, 5)), "broadcast_to_uint8"),
    case("SHAPE", "uint8", shape_of_u8, "shape_uint8"),
    case("REVERSE_V2", "uint8", reverse_u8, "reverse_v2_uint8"),
]
REFUSALS = [("cast_to_int64", refuse_cast(np.int64, "CAST to int64 (TFLM's CAST writes int8, int16, int32 and float32)")),
            ("cast_to_bool", refuse_cast(np.bool_, "CAST to bool (TFLM's CAST writes int8, int16, int32 and float32)")),
            ("select_v2_bool", lambda m, p: (select_case(np.bool_)(m, p)[0],
                                             "bool SELECT_V2 (float32, int8, int16, int32 and int64 are supported)")),
            ("quantize_float32_uint8", refuse_uint8("QUANTIZE", np.float32,
                                                    "QUANTIZE from float32 to uint8 (int8 and int16 are supported)")),
            ("add_uint8", refuse_uint8("ADD", np.uint8, "uint8 ADD (float32, int8, int16 and int32 are supported)")),
            ("div_int8_scales", refuse_div_scales)]


def group(builds):
    """One model computing every case of `builds` [(name, build)] side by side (one
    microtir run for them all): its outputs and their expected values."""
    def build(m):
        outputs, expected = [], []
        for name, b in builds:
            o, e = b(m, name)
            outputs += o
            expected += e
        return outputs, expected
    return build


def main():
    cli, flatc, schema = sys.argv[1:4]
    families = {}
    for c in CASES:  # three models (CAST, uint8, the rest): few runs, each a C build
        family = "cast_cases" if c["op"] == "CAST" else "uint8_cases" if "uint8" in c["name"] else "bool_int_cases"
        families.setdefault(family, []).append((c["name"], c["build"]))
    jobs = [(family, group(builds)) for family, builds in families.items()]
    jobs += [(name, lambda m, b=b, name=name: b(m, name)) for name, b in REFUSALS]
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        for name, build in jobs:
            build.__name__ = name  # shape_ops.run names the files after it
            ok, how = shape_ops.run(cli, flatc, schema, work, build, "host")
            print(f"{'ok' if ok else 'FAIL'} {name}: {how}")
            failed += not ok
    print(f"{len(CASES)} cases in {len(jobs) - len(REFUSALS)} models and {len(REFUSALS)} refusals: "
          + ("all as expected" if not failed else f"{failed} runs failed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
