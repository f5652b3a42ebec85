#!/usr/bin/env python3
"""One generated single-operator case for each (operator, dtype) pair that TFLM's kernels
implement (tflm_kernel_dtypes.json) and that no other case checked: the data-movement
operators in int16, int32, int64 and bool (RESHAPE, SQUEEZE, BROADCAST_TO, REVERSE_V2,
STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, PACK, UNPACK, GATHER_ND, ZEROS_LIKE, SHAPE, PAD,
PADV2, FILL, CONCATENATION), the comparisons and MAXIMUM / MINIMUM in int32 and int64,
SELECT_V2 int16, QUANTIZE to int32 (reference_ops::Requantize), and TFLM's int16 PRELU
(prelu_common.cc: two multipliers, input/output and input*alpha/output) and int16
SQUARED_DIFFERENCE (squared_difference.cc: both sides scaled by their scale over twice
the larger one, the squared difference requantized) and TFLM's int8 DIV (div.cc: a
fixed-point reciprocal per element). Expected outputs are numpy
references of TFLM's rules; each model is made with flatc (shape_ops_tflite_test's Model).
And one case for each pair microtir takes beyond TFLM's kernels (BEYOND_TFLM: data movement
in int16, int32, int64 and bool, reductions, ARG_MAX / ARG_MIN, CUMSUM, FLOOR_DIV,
FLOOR_MOD and ADD_N on raw values, SELECT, int16 RESIZE_BILINEAR with the int8 arithmetic).
The cases run side by side in two models (TFLM's pairs, the others), each one `microtir
run --target host` (the reference interpreter, the C artifact built and compared with it);
--each runs them one by one.

Each case says its (operator, dtype) pair in CASES: docs/tflite.md's table counts them.

usage: tflm_pair_cases_test.py MICROTIR FLATC SCHEMA [--each]
"""
import sys
import tempfile

import numpy as np

import dtype_cases_test as dc
import int16_ops_tflite_test as fixed_point
import shape_ops_tflite_test as shape_ops

dc.CODES.update({"RESHAPE": 22, "SQUEEZE": 43, "BROADCAST_TO": 130, "REVERSE_V2": 105, "STRIDED_SLICE": 45, "SLICE": 65,
                 "SPLIT_V": 102, "SPLIT": 49, "PACK": 83, "UNPACK": 88, "GATHER_ND": 107, "ZEROS_LIKE": 93, "SHAPE": 77,
                 "PAD": 34, "PADV2": 60, "FILL": 94, "CONCATENATION": 2, "LESS_EQUAL": 63, "SQUARED_DIFFERENCE": 99,
                 "PRELU": 54, "TRANSPOSE": 39, "SPACE_TO_DEPTH": 26, "DEPTH_TO_SPACE": 5, "SUM": 74, "REDUCE_MAX": 82,
                 "REDUCE_MIN": 89, "FLOOR_DIV": 90, "FLOOR_MOD": 95, "SELECT": 64, "EMBEDDING_LOOKUP": 7,
                 "BROADCAST_ARGS": 145, "DIV": 42})
values, NAMES = dc.values, dc.NAMES


def plain(m, t):
    """Data without quantization (the byte copies and comparisons read none), but int8 and
    int16 keep theirs (the converter requires it of quantized types)."""
    return t if m.tensors[t]["type"] in ("INT8", "INT16") else dc.unquantized(m, t)


def select_v2(dtype):
    def build(m, p):
        c, a, b = values(np.bool_, (2, 1, 4)), values(dtype, (2, 3, 4)), values(dtype, (1, 3, 4))
        y = plain(m, m.tensor(p + "_y", dtype, (2, 3, 4)))
        m.op("SELECT_V2", [m.input(p + "_c", c), plain(m, m.input(p + "_a", a)), plain(m, m.input(p + "_b", b))], [y])
        return [y], [np.where(c, a, b)]
    return build


def unary(code, dtype, shape, args, ref, out_dtype=None, options=None):
    """`code` on one run-time input and constant arguments `args` (arrays) → one output
    (integer sums on values small enough not to overflow)."""
    def build(m, p):
        x = values(dtype, shape)
        if code in ("SUM", "CUMSUM"):
            x = x // 256
        ins = [plain(m, m.input(p + "_x", x))] + [plain(m, m.const(f"{p}_c{k}", a, a.dtype.type)) for k, a in enumerate(args)]
        want = ref(x)
        y = plain(m, m.tensor(p + "_y", out_dtype or dtype, want.shape))
        m.op(code, ins, [y], *([options[0]] if options else []), **(options[1] if options else {}))
        return [y], [want.astype(out_dtype or dtype)]
    return build


def i32(*v):
    return np.array(v, np.int32)


def movement(code, dtype):
    """The data-movement case of `code` in `dtype` (a numpy reference of the copy)."""
    table = {
        "RESHAPE": lambda: unary(code, dtype, (2, 3, 4), [i32(6, 4)], lambda x: x.reshape(6, 4),
                                 options=("ReshapeOptions", {"new_shape": [6, 4]})),
        "SQUEEZE": lambda: unary(code, dtype, (1, 3, 1, 4), [], lambda x: x.reshape(3, 4),
                                 options=("SqueezeOptions", {"squeeze_dims": [0, 2]})),
        "BROADCAST_TO": lambda: unary(code, dtype, (3, 1), [i32(2, 3, 5)], lambda x: np.broadcast_to(x, (2, 3, 5))),
        "REVERSE_V2": lambda: unary(code, dtype, (3, 5, 2), [i32(1)], lambda x: x[:, ::-1]),
        "STRIDED_SLICE": lambda: unary(code, dtype, (5, 6), [i32(1, 0), i32(5, 6), i32(2, 2)], lambda x: x[1:5:2, ::2],
                                       options=("StridedSliceOptions", {})),
        "SLICE": lambda: unary(code, dtype, (4, 6), [i32(1, 2), i32(2, 3)], lambda x: x[1:3, 2:5]),
        "GATHER_ND": lambda: unary(code, dtype, (4, 3), [np.array([[1], [3], [0]], np.int32)], lambda x: x[[1, 3, 0]]),
        "ZEROS_LIKE": lambda: unary(code, dtype, (3, 4), [], np.zeros_like),
        "SHAPE": lambda: unary(code, dtype, (2, 1, 5), [], lambda x: np.array(x.shape), np.int32,
                               ("ShapeOptions", {"out_type": "INT32"})),
        "PAD": lambda: unary(code, dtype, (2, 3), [np.array([[1, 0], [0, 2]], np.int32)],
                             lambda x: np.pad(x, ((1, 0), (0, 2)))),
        "PADV2": lambda: unary(code, dtype, (2, 3), [np.array([[0, 2], [1, 1]], np.int32), np.array([7], dtype)],
                               lambda x: np.pad(x, ((0, 2), (1, 1)), constant_values=7)),
    }
    return table[code]()


def split_case(code, dtype):
    """SPLIT (axis, data) or SPLIT_V (data, sizes, axis) of (4, 6) along axis 1 into 2 and 4."""
    def build(m, p):
        x = values(dtype, (4, 6))
        data = plain(m, m.input(p + "_x", x))
        axis = m.const(p + "_axis", i32(1))
        ys = [plain(m, m.tensor(f"{p}_y{k}", dtype, (4, w))) for k, w in enumerate((3, 3) if code == "SPLIT" else (2, 4))]
        if code == "SPLIT":
            m.op(code, [axis, data], ys, "SplitOptions", num_splits=2)
            return ys, [x[:, :3], x[:, 3:]]
        m.op(code, [data, m.const(p + "_sizes", i32(2, -1)), axis], ys, "SplitVOptions", num_splits=2)
        return ys, [x[:, :2], x[:, 2:]]
    return build


def pack_case(code, dtype):
    """PACK of two (3, 4) inputs at axis 1, or UNPACK of (3, 2, 4) at axis 1."""
    def build(m, p):
        if code == "PACK":
            xs = [values(dtype, (3, 4)) for _ in range(2)]
            y = plain(m, m.tensor(p + "_y", dtype, (3, 2, 4)))
            m.op(code, [plain(m, m.input(f"{p}_x{k}", x)) for k, x in enumerate(xs)], [y], "PackOptions", values_count=2,
                 axis=1)
            return [y], [np.stack(xs, axis=1)]
        x = values(dtype, (3, 2, 4))
        ys = [plain(m, m.tensor(f"{p}_y{k}", dtype, (3, 4))) for k in range(2)]
        m.op(code, [plain(m, m.input(p + "_x", x))], ys, "UnpackOptions", num=2, axis=1)
        return ys, [x[:, 0], x[:, 1]]
    return build


def fill_case(dtype):
    def build(m, p):
        v = values(dtype, ())
        y = plain(m, m.tensor(p + "_y", dtype, (2, 3)))
        m.op("FILL", [m.const(p + "_dims", i32(2, 3)), plain(m, m.const(p + "_v", v, dtype))], [y])
        return [y], [np.full((2, 3), v, dtype)]
    return build


def concat_case(dtype):
    def build(m, p):
        xs = [values(dtype, (2, 3)), values(dtype, (2, 2))]
        y = plain(m, m.tensor(p + "_y", dtype, (2, 5)))
        m.op("CONCATENATION", [plain(m, m.input(f"{p}_x{k}", x)) for k, x in enumerate(xs)], [y], "ConcatenationOptions",
             axis=1)
        return [y], [np.concatenate(xs, axis=1)]
    return build


def small_binary(code, dtype, ref, out_dtype=None, shift=20, nonzero=False):
    """A broadcast binary operator on raw values small enough that products stay in range."""
    def build(m, p):
        xs = [values(dtype, (3, 4)) // (1 << shift), values(dtype, (4,)) // (1 << shift)]
        xs[1][0] = xs[0][0, 0]  # one equal pair for the comparisons
        if nonzero:
            xs[1] = np.where(xs[1] == 0, -3, xs[1]).astype(dtype)
        y = plain(m, m.tensor(p + "_y", out_dtype or dtype, (3, 4)))
        m.op(code, [plain(m, m.input(f"{p}_x{k}", x)) for k, x in enumerate(xs)], [y])
        return [y], [ref(*xs).astype(out_dtype or dtype)]
    return build


def broadcast_args(dtype):
    """BROADCAST_ARGS of two constant shapes (numpy's rule), an output and BROADCAST_TO's
    target shape (folded at compile time)."""
    def build(m, p):
        x = values(np.float32, (3, 1))
        shape = plain(m, m.tensor(p + "_shape", dtype, (3,)))
        m.op("BROADCAST_ARGS", [m.const(p + "_a", [3, 1], dtype), m.const(p + "_b", [2, 1, 5], dtype)], [shape])
        y = m.tensor(p + "_y", np.float32, (2, 3, 5))
        m.op("BROADCAST_TO", [m.input(p + "_x", x), shape], [y])
        return [shape, y], [np.array([2, 3, 5], dtype), np.broadcast_to(x, (2, 3, 5))]
    return build


def embedding_lookup(dtype, out_dtype):
    """EMBEDDING_LOOKUP (embedding_lookup.cc): rows of a constant table picked by run-time
    ids; an int8 table into float32 is the hybrid lookup, each row dequantized with the
    table's scale (zero point 0): float32(scale * q)."""
    def build(m, p):
        table, ids = values(dtype, (5, 2, 3)), np.array([4, 0, 4, 2], np.int32)
        t = m.const(p + "_table", table, dtype)
        if dtype == np.int8:
            dc.quantized(m, t, 0.037, 0)
        y = m.tensor(p + "_y", out_dtype, (4, 2, 3))
        if out_dtype == np.int8:
            dc.quantized(m, y, 0.037, 0)
        m.op("EMBEDDING_LOOKUP", [m.input(p + "_ids", ids), t], [y])
        rows = table[ids]
        if dtype == out_dtype:
            return [y], [rows]
        return [y], [(np.float64(np.float32(0.037)) * rows).astype(np.float32)]
    return build


def mbqm_small(x, scale):
    """MultiplyByQuantizedMultiplierSmallerThanOneExp(x, QuantizeMultiplierSmallerThanOneExp(scale))."""
    return fixed_point.mbqm(x, fixed_point.quantize_multiplier(scale))


def prelu_int16(m, p):
    """TFLM's int16 PRELU with an int8 alpha (BroadcastPrelu4DSlow): x - zp >= 0 →
    MBQM(x - zp, in/out), else MBQM((x - zp) * (alpha - alpha_zp), in*alpha/out); + out zp."""
    (si, so), (sa, za) = (0.002, 0.0031), (0.01, -4)
    x, alpha = values(np.int16, (2, 3, 4)), values(np.int8, (4,))
    tx = dc.quantized(m, m.input(p + "_x", x), si, 0)
    ta = dc.quantized(m, m.const(p + "_alpha", alpha, np.int8), sa, za)
    y = dc.quantized(m, m.tensor(p + "_y", np.int16, x.shape), so, 0)
    m.op("PRELU", [tx, ta], [y])
    f = fixed_point.f32
    v = x.astype(np.int64)
    pos = fixed_point.mbqm(v, fixed_point.quantize_multiplier(f(si) / f(so)))
    neg = fixed_point.mbqm(v * (alpha.astype(np.int64) - za), fixed_point.quantize_multiplier(f(si) * f(sa) / f(so)))
    return [y], [fixed_point.clamp(np.where(v >= 0, pos, neg), np.int16)]


def squared_difference_int16(m, p):
    """TFLM's int16 SQUARED_DIFFERENCE (zero points 0, left shift 0): each side times its
    scale over twice the larger scale, the difference squared in int32, requantized by
    (twice the larger scale)^2 / output scale."""
    s1, s2, so = 0.0011, 0.0007, 0.0025
    a, b = values(np.int16, (3, 5)), values(np.int16, (5,))
    ta = dc.quantized(m, m.input(p + "_a", a), s1, 0)
    tb = dc.quantized(m, m.input(p + "_b", b), s2, 0)
    y = dc.quantized(m, m.tensor(p + "_y", np.int16, (3, 5)), so, 0)
    m.op("SQUARED_DIFFERENCE", [ta, tb], [y])
    f = fixed_point.f32
    twice = 2.0 * max(f(s1), f(s2))
    d = mbqm_small(a.astype(np.int64), f(s1) / twice) - mbqm_small(b.astype(np.int64), f(s2) / twice)
    out = fixed_point.mbqm(fixed_point.wrap32(d * d), fixed_point.quantize_multiplier(twice * twice / f(so)))
    return [y], [fixed_point.clamp(out, np.int16)]


def div_int8_reference(a, b, za, zb, zo, mult, relu):
    """reference_ops::DivElementwise<int8_t> per element, as TFLM's GCC build computes it
    (CountLeadingSignBits is __builtin_clrsb). Where its rounding shift reaches 32 (a
    quotient below half an output step; undefined in TFLM's C), the quotient rounds to 0;
    a zero divisor (a DCHECK in TFLM) saturates toward the dividend's sign."""
    m, shift = mult
    out = []
    for x, d in zip(a.ravel().tolist(), b.ravel().tolist()):
        v1, v2 = x - za, d - zb
        if v2 == 0:
            r = 0 if v1 == 0 else (1 << 30 if v1 > 0 else -(1 << 30))
        else:
            if v2 < 0:
                v1, v2 = -v1, -v2
            zeros = 32 - v2.bit_length()
            recip = int(fixed_point.one_over_one_plus_x_for_x_in_0_1(np.int64((v2 << zeros) - (1 << 31))))
            headroom = 31 - (v1 if v1 >= 0 else -1 - v1).bit_length()
            quotient = int(fixed_point.srdhm(v1 << headroom, recip))
            right = 31 - shift - zeros + headroom
            r = 0 if right > 31 else int(fixed_point.rdbp(fixed_point.srdhm(quotient, m), right))
        out.append(min(127, max(zo if relu else -128, zo + r)))
    return np.array(out, dtype=np.int8).reshape(a.shape)


def div_int8(m, p):
    """TFLM's int8 DIV (div.cc), b broadcast along the first axis, with a fused RELU: the
    dividend (a - a_zp) over the divisor (b - b_zp) through GetReciprocal, requantized by
    a_scale / (b_scale * output_scale) in float32. Some divisors are zero and some
    quotients round below half a step (the two cases TFLM leaves undefined)."""
    (sa, za), (sb, zb), (so, zo) = (0.05, 3), (0.04, -5), (0.06, -7)
    a = values(np.int8, (4, 6, 8))
    b = values(np.int8, (1, 6, 8))
    b.ravel()[:3] = [zb, zb + 1, zb - 1]
    ta = dc.quantized(m, m.input(p + "_a", a), sa, za)
    tb = dc.quantized(m, m.input(p + "_b", b), sb, zb)
    y = dc.quantized(m, m.tensor(p + "_y", np.int8, a.shape), so, zo)
    m.op("DIV", [ta, tb], [y], "DivOptions", fused_activation_function="RELU")
    f = np.float32  # TFLM divides the scales in float
    mult = fixed_point.quantize_multiplier(float(f(sa) / (f(sb) * f(so))))
    bb = np.broadcast_to(b, a.shape)
    return [y], [div_int8_reference(a.astype(np.int64), bb.astype(np.int64), za, zb, zo, mult, True)]


# ---- pairs beyond TFLM's kernels (microtir takes them: copies of elements, raw values) ----

def to_space(x, b):
    """SPACE_TO_DEPTH of NHWC x with block b (TFLite's order: block row, block column, channel)."""
    n, h, w, c = x.shape
    return x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5).reshape(n, h // b, w // b, b * b * c)


def from_space(x, b):
    n, h, w, c = x.shape
    return x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5).reshape(n, h * b, w * b, c // (b * b))


def to_batch(x, b):
    """SPACE_TO_BATCH_ND with block [b, b], no padding: batch index (by * b + bx) * N + n."""
    n, h, w, c = x.shape
    return x.reshape(n, h // b, b, w // b, b, c).transpose(2, 4, 0, 1, 3, 5).reshape(b * b * n, h // b, w // b, c)


def from_batch(x, b):
    n, h, w, c = x.shape
    return x.reshape(b, b, n // (b * b), h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(n // (b * b), h * b, w * b, c)


def beyond(code, dtype):
    zero_pads = np.zeros((4, 2), np.int32)
    table = {
        "TRANSPOSE": lambda: unary(code, dtype, (2, 3, 4), [i32(2, 0, 1)], lambda x: x.transpose(2, 0, 1)),
        "EXPAND_DIMS": lambda: unary(code, dtype, (3, 4), [i32(1)], lambda x: x[:, None]),
        "SPACE_TO_DEPTH": lambda: unary(code, dtype, (1, 4, 4, 2), [], lambda x: to_space(x, 2),
                                        options=("SpaceToDepthOptions", {"block_size": 2})),
        "DEPTH_TO_SPACE": lambda: unary(code, dtype, (1, 2, 2, 8), [], lambda x: from_space(x, 2),
                                        options=("DepthToSpaceOptions", {"block_size": 2})),
        "SPACE_TO_BATCH_ND": lambda: unary(code, dtype, (1, 4, 4, 1), [i32(2, 2), zero_pads[:2]], lambda x: to_batch(x, 2)),
        "BATCH_TO_SPACE_ND": lambda: unary(code, dtype, (4, 2, 2, 1), [i32(2, 2), zero_pads[:2]],
                                           lambda x: from_batch(x, 2)),
        "MIRROR_PAD": lambda: unary(code, dtype, (3, 4), [np.array([[1, 1], [2, 0]], np.int32)],
                                    lambda x: np.pad(x, ((1, 1), (2, 0)), mode="reflect"),
                                    options=("MirrorPadOptions", {"mode": "REFLECT"})),
        "GATHER": lambda: unary(code, dtype, (5, 3), [i32(4, 0, 2)], lambda x: x[[4, 0, 2]],
                                options=("GatherOptions", {"axis": 0})),
        "SUM": lambda: unary(code, dtype, (3, 4), [i32(1)], lambda x: x.sum(axis=1, dtype=dtype),
                             options=("ReducerOptions", {"keep_dims": False})),
        "REDUCE_MAX": lambda: unary(code, dtype, (3, 4), [i32(1)], lambda x: x.max(axis=1),
                                    options=("ReducerOptions", {"keep_dims": False})),
        "REDUCE_MIN": lambda: unary(code, dtype, (3, 4), [i32(0)], lambda x: x.min(axis=0),
                                    options=("ReducerOptions", {"keep_dims": False})),
        "CUMSUM": lambda: unary(code, dtype, (3, 4), [np.array(1, np.int32)], lambda x: np.cumsum(x, axis=1, dtype=dtype),
                                options=("CumsumOptions", {})),
        "ARG_MAX": lambda: unary(code, dtype, (3, 7), [i32(1)], lambda x: np.argmax(x, axis=1), np.int32,
                                 ("ArgMaxOptions", {"output_type": "INT32"})),
        "ARG_MIN": lambda: unary(code, dtype, (3, 7), [i32(1)], lambda x: np.argmin(x, axis=1), np.int32,
                                 ("ArgMinOptions", {"output_type": "INT32"})),
    }
    if code in table:
        return table[code]()
    if code in ("SPLIT", "SPLIT_V"):
        return split_case(code, dtype)
    if code in ("PACK", "UNPACK"):
        return pack_case(code, dtype)
    return {"FILL": fill_case, "CONCATENATION": concat_case}.get(code, lambda d: movement(code, d))(dtype)


def add_n_int32(m, p):
    xs = [values(np.int32, (3, 4)) // 4 for _ in range(3)]
    y = plain(m, m.tensor(p + "_y", np.int32, (3, 4)))
    m.op("ADD_N", [plain(m, m.input(f"{p}_x{k}", x)) for k, x in enumerate(xs)], [y])
    return [y], [xs[0] + xs[1] + xs[2]]


def select_v1(dtype):
    def build(m, p):
        c, a, b = values(np.bool_, (3, 4)), values(dtype, (3, 4)), values(dtype, (3, 4))
        y = plain(m, m.tensor(p + "_y", dtype, (3, 4)))
        m.op("SELECT", [m.input(p + "_c", c), plain(m, m.input(p + "_a", a)), plain(m, m.input(p + "_b", b))], [y])
        return [y], [np.where(c, a, b)]
    return build


def resize_bilinear_int16(m, p):
    """ResizeBilinearInteger in int16 (TFLM's int8 arithmetic: 10 fractional bits)."""
    x = values(np.int16, (1, 3, 4, 2))
    y = m.tensor(p + "_y", np.int16, (1, 5, 7, 2))
    m.op("RESIZE_BILINEAR", [m.input(p + "_x", x), m.const(p + "_size", i32(5, 7))], [y], "ResizeBilinearOptions",
         half_pixel_centers=True)
    return [y], [shape_ops.bilinear_int_ref(x, 5, 7, align=False, half=True)]


def case(op, dtype, build, name=None):
    return dc.case(op, NAMES[dtype], build, name or f"{op.lower()}_{NAMES[dtype]}")


I16, I32, I64, B = np.int16, np.int32, np.int64, np.bool_
TFLM_PAIRS = [case(op, d, movement(op, d)) for op, ds in [
    ("RESHAPE", (I32, I64, B)), ("SQUEEZE", (I32, I64, B)), ("BROADCAST_TO", (I16, I32, I64, B)),
    ("REVERSE_V2", (I16, I32, I64, B)), ("STRIDED_SLICE", (I32, B)), ("SLICE", (I32, B)),
    ("GATHER_ND", (np.float32, np.int8)), ("ZEROS_LIKE", (np.int8, I32, I64)),
    ("SHAPE", (np.float32, np.int8, I16, I32, I64, B)), ("PAD", (I32,)), ("PADV2", (I16, I32))] for d in ds] + [
    case("SPLIT", I32, split_case("SPLIT", I32)), case("SPLIT_V", I32, split_case("SPLIT_V", I32)),
    case("PACK", I32, pack_case("PACK", I32)), case("PACK", I64, pack_case("PACK", I64)),
    case("UNPACK", I32, pack_case("UNPACK", I32)),
    case("FILL", np.float32, fill_case(np.float32)), case("FILL", np.int8, fill_case(np.int8)),
    case("FILL", I32, fill_case(I32)), case("CONCATENATION", I32, concat_case(I32)),
    case("CONCATENATION", I64, concat_case(I64)),
    case("MAXIMUM", I32, small_binary("MAXIMUM", I32, np.maximum)),
    case("MINIMUM", I64, small_binary("MINIMUM", I64, np.minimum)),
    case("SQUARED_DIFFERENCE", I32, small_binary("SQUARED_DIFFERENCE", I32, lambda a, b: (a - b) ** 2)),
    case("SELECT_V2", I16, select_v2(I16)),
    case("QUANTIZE", I32, dc.requantize_case(np.int8, I32, 0.02, -3, 0.0007, 0), "quantize_int8_int32"),
    case("PRELU", I16, prelu_int16), case("SQUARED_DIFFERENCE", I16, squared_difference_int16),
    case("DIV", np.int8, div_int8),
    case("BROADCAST_ARGS", I32, broadcast_args(I32)), case("BROADCAST_ARGS", I64, broadcast_args(I64)),
    case("EMBEDDING_LOOKUP", np.float32, embedding_lookup(np.float32, np.float32)),
    case("EMBEDDING_LOOKUP", np.int8, embedding_lookup(np.int8, np.int8)),
    case("EMBEDDING_LOOKUP", np.int8, embedding_lookup(np.int8, np.float32), "embedding_lookup_int8_hybrid"),
] + [case(op, d, small_binary(op, d, ref, B)) for op, ref, ds in [
    ("EQUAL", np.equal, (I32,)), ("NOT_EQUAL", np.not_equal, (I32, I64)), ("LESS", np.less, (I32,)),
    ("LESS_EQUAL", np.less_equal, (I32, I64)), ("GREATER", np.greater, (I32, I64)),
    ("GREATER_EQUAL", np.greater_equal, (I64,))] for d in ds]
BEYOND_TFLM = [case(op, d, beyond(op, d)) for op, ds in [
    ("TRANSPOSE", (I32, I64, B)), ("STRIDED_SLICE", (I64,)), ("SLICE", (I64,)), ("SPLIT_V", (I64, B)),
    ("PACK", (B,)), ("UNPACK", (I64, B)), ("EXPAND_DIMS", (I32, I64, B))] + [
    (op, (I16, I32, I64, B)) for op in ("SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND",
                                        "MIRROR_PAD", "GATHER", "GATHER_ND")] + [
    ("ZEROS_LIKE", (I16, B)), ("PAD", (I64, B)), ("PADV2", (I64, B)), ("SPLIT", (I64, B)), ("FILL", (I16, I64, B)),
    ("CONCATENATION", (B,)), ("SUM", (I32,)), ("REDUCE_MAX", (I16, I32)), ("REDUCE_MIN", (I16, I32)),
    ("ARG_MAX", (I16, I64)), ("ARG_MIN", (I16, I32, I64)), ("CUMSUM", (I32,))] for d in ds] + [
    case("FLOOR_DIV", I32, small_binary("FLOOR_DIV", I32, np.floor_divide, nonzero=True)),
    case("FLOOR_MOD", I32, small_binary("FLOOR_MOD", I32, np.mod, nonzero=True)),
    case("ADD_N", I32, add_n_int32), case("RESIZE_BILINEAR", I16, resize_bilinear_int16)] + [
    case(op, I16, small_binary(op, I16, ref, B, shift=4)) for op, ref in [
        ("EQUAL", np.equal), ("NOT_EQUAL", np.not_equal), ("LESS", np.less), ("LESS_EQUAL", np.less_equal),
        ("GREATER_EQUAL", np.greater_equal)]] + [
    case("SELECT", d, select_v1(d)) for d in (np.float32, np.int8, I16, I32, I64)]
CASES = TFLM_PAIRS + BEYOND_TFLM


def main():
    cli, flatc, schema = sys.argv[1:4]
    jobs = [("tflm_pairs", TFLM_PAIRS), ("beyond_tflm", BEYOND_TFLM)]
    if "--each" in sys.argv:
        jobs = [(c["name"], [c]) for c in CASES]
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        for name, cases in jobs:
            build = dc.group([(c["name"], c["build"]) for c in cases])
            build.__name__ = name
            ok, how = shape_ops.run(cli, flatc, schema, work, build, "host")
            print(f"{'ok' if ok else 'FAIL'} {name}: {how}")
            failed += not ok
    print(f"{len(CASES)} cases in {len(jobs)} models: " + ("all as expected" if not failed else f"{failed} runs failed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
