#!/usr/bin/env python3
"""The multiply-accumulate operators in TFLite Micro's int16x8 quantization (int16
activations with zero point 0, int8 per-channel weights, int64 or int32 bias), and
TRANSPOSE_CONV in float32, int8 and int16x8, through `microtir run --target host`
against a reference written here in numpy from TFLM's reference kernels' arithmetic:

- an int64 accumulator (an int64 bias or none) is requantized by TFLM's 64-bit
  MultiplyByQuantizedMultiplier: the multiplier rounded to 16 bits,
  (x * reduced + 2^(14 - shift)) >> (15 - shift);
- an int32 accumulator (CONV_2D and FULLY_CONNECTED with an int32 bias) by the
  two-rounding MultiplyByQuantizedMultiplier (gemmlowp's doubling high multiply, then a
  rounding divide by a power of two);
- then the clamp to the activation's int16 range (no zero point: it is 0).
TRANSPOSE_CONV's padding is TFLM's: that of a convolution of the output's size.
Compared exactly (float32: to 1e-5 relative).

usage: int16x8_mac_tflite_test.py MICROTIR FLATC SCHEMA
"""
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # a python3 without numpy first on PATH (pyenv): Debian's has it
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_json_model import OneSubgraphModel  # noqa: E402

rng = np.random.default_rng(16)


class Model(OneSubgraphModel):

    def tensor(self, name, shape, dtype, data=None, scale=None, zero_point=None, axis=0):
        t = {"name": name, "shape": list(shape), "type": dtype, "buffer": 0}
        if scale is not None:
            scales = [float(s) for s in np.atleast_1d(scale)]
            zps = [0] * len(scales) if zero_point is None else [int(z) for z in np.atleast_1d(zero_point)]
            t["quantization"] = {"scale": scales, "zero_point": zps, "quantized_dimension": axis}
        if data is not None:
            t["buffer"] = len(self.buffers)
            self.buffers.append({"data": list(np.ascontiguousarray(data).tobytes())})
        self.tensors.append(t)
        return len(self.tensors) - 1


# ---- TFLM's arithmetic, in Python integers ------------------------------------------

def quantize_multiplier(m):
    """TFLite's QuantizeMultiplier of a double: (M in [2^30, 2^31), shift)."""
    if m == 0:
        return 0, 0
    q, e = math.frexp(m)
    x = q * 2 ** 31  # exact; rounded half away from zero (std::round)
    fixed = int(math.floor(x)) + (1 if x - math.floor(x) >= 0.5 else 0)
    if fixed == 2 ** 31:
        fixed, e = fixed // 2, e + 1
    return (0, 0) if e < -31 else (fixed, int(e))


def mbqm32(x, mult, shift):
    left, right = max(shift, 0), max(-shift, 0)
    x = ((x << left) + 2 ** 31) % 2 ** 32 - 2 ** 31
    high = (x * mult + 2 ** 30) >> 31  # the doubling high multiply rounds half up
    mask = (1 << right) - 1
    return (high >> right) + (1 if (high & mask) > (mask >> 1) + (1 if high < 0 else 0) else 0)


def mbqm64(x, mult, shift):
    reduced = (mult + (1 << 15)) >> 16 if mult < 0x7FFF0000 else 0x7FFF
    total = 15 - shift
    return (x * reduced + (1 << (total - 1))) >> total


def requantize(acc, in_scale, w_scales, out_scale, wide, lo=-32768, hi=32767, zero_point=0):
    """acc [..., O] (Python ints) -> output values, channel by channel."""
    out = np.empty(acc.shape, dtype=np.int64)
    for c in range(acc.shape[-1]):
        m, s = quantize_multiplier(float(np.float32(in_scale)) * float(np.float32(w_scales[c])) /
                                   float(np.float32(out_scale)))
        f = mbqm64 if wide else mbqm32
        out[..., c] = np.array([f(int(v), m, s) for v in acc[..., c].ravel()]).reshape(acc[..., c].shape)
    return np.clip(out + zero_point, lo, hi)


def conv_acc(x, w, stride, pad_tl, out_hw, dil=(1, 1), depthwise=False):
    """int64 sums of x * w: x NHWC, w OHWI (depthwise: [1, KH, KW, C*M])."""
    n, h, wd, c = x.shape
    if depthwise:
        kh, kw, o = w.shape[1], w.shape[2], w.shape[3]
    else:
        o, kh, kw, _ = w.shape
    acc = np.zeros((n, out_hw[0], out_hw[1], o), dtype=np.int64)
    for oy in range(out_hw[0]):
        for ox in range(out_hw[1]):
            for ky in range(kh):
                for kx in range(kw):
                    iy, ix = oy * stride[0] - pad_tl[0] + ky * dil[0], ox * stride[1] - pad_tl[1] + kx * dil[1]
                    if 0 <= iy < h and 0 <= ix < wd:
                        v = x[:, iy, ix, :].astype(np.int64)
                        if depthwise:
                            acc[:, oy, ox, :] += np.repeat(v, o // c, axis=1) * w[0, ky, kx, :]
                        else:
                            acc[:, oy, ox, :] += v @ w[:, ky, kx, :].astype(np.int64).T
    return acc


def transpose_acc(x, w, stride, pad_tl, out_hw, dtype=np.int64):
    """TFLM's scatter: input (iy, ix) adds into output (iy * s - pad + fy, ix * s - pad + fx)."""
    n, h, wd, c = x.shape
    o, kh, kw, _ = w.shape
    acc = np.zeros((n, out_hw[0], out_hw[1], o), dtype=dtype)
    for iy in range(h):
        for ix in range(wd):
            for ic in range(c):
                for fy in range(kh):
                    for fx in range(kw):
                        oy, ox = iy * stride[0] - pad_tl[0] + fy, ix * stride[1] - pad_tl[1] + fx
                        if 0 <= oy < out_hw[0] and 0 <= ox < out_hw[1]:
                            acc[:, oy, ox, :] += (x[:, iy, ix, ic].astype(dtype)[:, None] *
                                                  w[:, fy, fx, ic].astype(dtype)[None, :])
    return acc


def same(n, k, s):
    out = (n + s - 1) // s
    return out, max(0, (out - 1) * s + k - n) // 2


def transpose_pad(out_size, k, s, padding):
    conv_out = (out_size + s - 1) // s if padding == "SAME" else (out_size + s - k) // s
    return max(0, (conv_out - 1) * s + k - out_size) // 2


# ---- the models ------------------------------------------------------------------------

def scales(n, lo, hi):
    return np.float32(rng.uniform(lo, hi, n))


def int16_model():
    """CONV_2D (int64 bias, per channel, SAME, stride 2) -> DEPTHWISE_CONV_2D (multiplier
    2, int64 bias, RELU) -> TRANSPOSE_CONV (stride 2, SAME, int64 bias, constant output
    shape) -> FULLY_CONNECTED (int64 bias); and from the input a CONV_2D with an int32 bias
    (an int32 accumulator), one without bias and a FULLY_CONNECTED without bias (int64)."""
    m, want = Model(), {}
    x = rng.integers(-32768, 32768, (1, 7, 6, 3), dtype=np.int16)
    sx = np.float32(0.0009)
    tx = m.tensor("x", x.shape, "INT16", scale=sx)

    # CONV_2D 3x3, 4 outputs, SAME, stride 2, per-channel weights, int64 bias.
    w0 = rng.integers(-127, 128, (4, 3, 3, 3), dtype=np.int8)
    sw0, s0 = scales(4, 0.002, 0.01), np.float32(0.004)
    b0 = rng.integers(-2 ** 20, 2 ** 20, 4).astype(np.int64)
    (oh, pt), (ow, pl) = same(7, 3, 2), same(6, 3, 2)
    acc = conv_acc(x, w0, (2, 2), (pt, pl), (oh, ow)) + b0
    y0 = requantize(acc, sx, sw0, s0, True).astype(np.int16)
    t_w0 = m.tensor("w0", w0.shape, "INT8", w0, sw0)
    t_b0 = m.tensor("b0", [4], "INT64", b0, sx * sw0)
    t_y0 = m.tensor("conv64", y0.shape, "INT16", scale=s0)
    m.op("CONV_2D", [tx, t_w0, t_b0], [t_y0], "Conv2DOptions", {"padding": "SAME", "stride_h": 2, "stride_w": 2})

    # DEPTHWISE_CONV_2D 2x2, multiplier 2, VALID, RELU, int64 bias.
    w1 = rng.integers(-127, 128, (1, 2, 2, 8), dtype=np.int8)
    sw1, s1 = scales(8, 0.003, 0.02), np.float32(0.002)
    b1 = rng.integers(-2 ** 16, 2 ** 16, 8).astype(np.int64)
    hw1 = (y0.shape[1] - 1, y0.shape[2] - 1)
    acc = conv_acc(y0, w1, (1, 1), (0, 0), hw1, depthwise=True) + b1
    y1 = requantize(acc, s0, sw1, s1, True, lo=0).astype(np.int16)  # RELU: q(0) = 0
    t_w1 = m.tensor("w1", w1.shape, "INT8", w1, sw1, axis=3)
    t_b1 = m.tensor("b1", [8], "INT64", b1, s0 * sw1)
    t_y1 = m.tensor("depthwise", y1.shape, "INT16", scale=s1)
    m.op("DEPTHWISE_CONV_2D", [t_y0, t_w1, t_b1], [t_y1], "DepthwiseConv2DOptions",
         {"padding": "VALID", "stride_h": 1, "stride_w": 1, "depth_multiplier": 2, "fused_activation_function": "RELU"})

    # TRANSPOSE_CONV 3x3, stride 2, SAME, 5 outputs, int64 bias, constant output shape.
    w2 = rng.integers(-127, 128, (5, 3, 3, 8), dtype=np.int8)
    sw2, s2 = scales(5, 0.002, 0.01), np.float32(0.003)
    b2 = rng.integers(-2 ** 16, 2 ** 16, 5).astype(np.int64)
    ohw2 = (2 * y1.shape[1], 2 * y1.shape[2])
    pad2 = (transpose_pad(ohw2[0], 3, 2, "SAME"), transpose_pad(ohw2[1], 3, 2, "SAME"))
    acc = transpose_acc(y1, w2, (2, 2), pad2, ohw2) + b2
    y2 = requantize(acc, s1, sw2, s2, True).astype(np.int16)
    t_shape = m.tensor("shape2", [4], "INT32", np.array([1, ohw2[0], ohw2[1], 5], dtype=np.int32))
    t_w2 = m.tensor("w2", w2.shape, "INT8", w2, sw2)
    t_b2 = m.tensor("b2", [5], "INT64", b2, s1 * sw2)
    t_y2 = m.tensor("transposed", y2.shape, "INT16", scale=s2)
    m.op("TRANSPOSE_CONV", [t_shape, t_w2, t_y1, t_b2], [t_y2], "TransposeConvOptions",
         {"padding": "SAME", "stride_h": 2, "stride_w": 2})
    want["transposed"] = y2

    # FULLY_CONNECTED over the transposed output's rows of 5, 3 units, int64 bias (per tensor).
    w3 = rng.integers(-127, 128, (3, 5), dtype=np.int8)
    sw3, s3 = np.float32(0.01), np.float32(0.002)
    b3 = rng.integers(-2 ** 16, 2 ** 16, 3).astype(np.int64)
    rows = y2.reshape(-1, 5).astype(np.int64)
    acc = rows @ w3.astype(np.int64).T + b3
    y3 = requantize(acc, s2, [sw3] * 3, s3, True).astype(np.int16)
    t_w3 = m.tensor("w3", w3.shape, "INT8", w3, sw3)
    t_b3 = m.tensor("b3", [3], "INT64", b3, s2 * sw3)
    t_y3 = m.tensor("dense64", y3.shape, "INT16", scale=s3)
    m.op("FULLY_CONNECTED", [t_y2, t_w3, t_b3], [t_y3], "FullyConnectedOptions", {})
    want["dense64"] = y3

    # CONV_2D 2x2 VALID with an int32 bias (int32 accumulator), a 1x1 one without bias (int64).
    w4 = rng.integers(-127, 128, (3, 2, 2, 3), dtype=np.int8)
    sw4, s4 = scales(3, 0.002, 0.01), np.float32(0.005)
    b4 = rng.integers(-2 ** 16, 2 ** 16, 3).astype(np.int32)
    acc = conv_acc(x, w4, (1, 1), (0, 0), (6, 5)) + b4
    y4 = requantize(acc, sx, sw4, s4, False).astype(np.int16)
    t_w4 = m.tensor("w4", w4.shape, "INT8", w4, sw4)
    t_b4 = m.tensor("b4", [3], "INT32", b4, sx * sw4)
    t_y4 = m.tensor("conv32", y4.shape, "INT16", scale=s4)
    m.op("CONV_2D", [tx, t_w4, t_b4], [t_y4], "Conv2DOptions", {"padding": "VALID", "stride_h": 1, "stride_w": 1})
    want["conv32"] = y4
    w5 = rng.integers(-127, 128, (2, 1, 1, 3), dtype=np.int8)
    sw5 = scales(2, 0.002, 0.01)
    acc = conv_acc(x, w5, (1, 1), (0, 0), (7, 6))
    t_w5 = m.tensor("w5", w5.shape, "INT8", w5, sw5)
    # The output scale 0.0002 gives RELU_N1_TO_1 the bounds -5000, 5000.
    y5 = requantize(acc, sx, sw5, np.float32(0.0002), True, lo=-5000, hi=5000).astype(np.int16)
    t_y5 = m.tensor("conv_nobias", y5.shape, "INT16", scale=np.float32(0.0002))
    m.op("CONV_2D", [tx, t_w5, -1], [t_y5], "Conv2DOptions",
         {"padding": "VALID", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU_N1_TO_1"})
    want["conv_nobias"] = y5
    # FULLY_CONNECTED without bias over the input's rows of 3 (int64 accumulator).
    w6 = rng.integers(-127, 128, (4, 3), dtype=np.int8)
    sw6, s6 = np.float32(0.008), np.float32(0.0015)
    acc = x.reshape(-1, 3).astype(np.int64) @ w6.astype(np.int64).T
    y6 = requantize(acc, sx, [sw6] * 4, s6, True).astype(np.int16)
    t_w6 = m.tensor("w6", w6.shape, "INT8", w6, sw6)
    t_y6 = m.tensor("dense_nobias", y6.shape, "INT16", scale=s6)
    m.op("FULLY_CONNECTED", [tx, t_w6, -1], [t_y6], "FullyConnectedOptions", {})
    want["dense_nobias"] = y6
    return m.json([tx], [t_y2, t_y3, t_y4, t_y5, t_y6]), {"x": x}, want


def int8_transpose_model():
    """int8 TRANSPOSE_CONV (VALID, stride (2, 3), zero points, int32 bias, per channel),
    its output shape a model input as in TFLM's SEANet tests (not read)."""
    m = Model()
    x = rng.integers(-128, 128, (2, 3, 4, 3), dtype=np.int8)
    sx, zx, so, zo = np.float32(0.02), 7, np.float32(0.05), -3
    w = rng.integers(-127, 128, (4, 3, 4, 3), dtype=np.int8)
    sw = scales(4, 0.005, 0.02)
    b = rng.integers(-5000, 5000, 4).astype(np.int32)
    ohw = ((3 - 1) * 2 + 3, (4 - 1) * 3 + 4)
    pad = (transpose_pad(ohw[0], 3, 2, "VALID"), transpose_pad(ohw[1], 4, 3, "VALID"))
    acc = transpose_acc(x.astype(np.int64) - zx, w, (2, 3), pad, ohw) + b
    y = requantize(acc, sx, sw, so, False, lo=-128, hi=127, zero_point=zo).astype(np.int8)
    shape = np.array([2, ohw[0], ohw[1], 4], dtype=np.int32)
    t_shape = m.tensor("out_shape", [4], "INT32")
    tx = m.tensor("x", x.shape, "INT8", scale=sx, zero_point=zx)
    t_w = m.tensor("w", w.shape, "INT8", w, sw)
    t_b = m.tensor("b", [4], "INT32", b, sx * sw)
    t_y = m.tensor("y", y.shape, "INT8", scale=so, zero_point=zo)
    m.op("TRANSPOSE_CONV", [t_shape, t_w, tx, t_b], [t_y], "TransposeConvOptions",
         {"padding": "VALID", "stride_h": 2, "stride_w": 3})
    return m.json([t_shape, tx], [t_y]), {"out_shape": shape, "x": x}, {"y": y}


def float_transpose_model():
    """float32 TRANSPOSE_CONV (SAME, stride 2, output one larger than twice the input, bias, RELU)."""
    m = Model()
    x = np.float32(rng.uniform(-1, 1, (1, 4, 3, 2)))
    w = np.float32(rng.uniform(-1, 1, (3, 4, 3, 2)))
    b = np.float32(rng.uniform(-0.5, 0.5, 3))
    ohw = (8, 5)
    pad = (transpose_pad(8, 4, 2, "SAME"), transpose_pad(5, 3, 2, "SAME"))
    y = np.maximum(transpose_acc(x, w, (2, 2), pad, ohw, dtype=np.float32) + b, 0).astype(np.float32)
    t_shape = m.tensor("shape", [4], "INT32", np.array([1, 8, 5, 3], dtype=np.int32))
    tx = m.tensor("x", x.shape, "FLOAT32")
    t_w, t_b = m.tensor("w", w.shape, "FLOAT32", w), m.tensor("b", [3], "FLOAT32", b)
    t_y = m.tensor("y", y.shape, "FLOAT32")
    m.op("TRANSPOSE_CONV", [t_shape, t_w, tx, t_b], [t_y], "TransposeConvOptions",
         {"padding": "SAME", "stride_h": 2, "stride_w": 2, "fused_activation_function": "RELU"})
    return m.json([tx], [t_y]), {"x": x}, {"y": y}


def run(cli, flatc, schema, work, name, model, inputs):
    jpath = os.path.join(work, name + ".json")
    with open(jpath, "w") as f:
        json.dump(model, f)
    subprocess.run([flatc, "-b", "-o", work, schema, jpath], check=True)
    out = os.path.join(work, name + "_out")
    args = [cli, "run", os.path.join(work, name + ".tflite"), "--target", "host", "--output-dir", out]
    for n, v in inputs.items():
        p = os.path.join(work, f"{name}_{n}.npy")
        np.save(p, v)
        args += ["--input", f"{n}={p}"]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit(f"FAIL: microtir run {name} exited {p.returncode}")
    return out


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    cli, flatc, schema = sys.argv[1:]
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        for name, (model, inputs, want) in (("int16x8", int16_model()), ("int8_transpose", int8_transpose_model()),
                                            ("float_transpose", float_transpose_model())):
            out = run(cli, flatc, schema, work, name, model, inputs)
            for o, w in want.items():
                got = np.load(os.path.join(out, o + ".npy"))
                if w.dtype == np.float32:
                    ok = got.shape == w.shape and np.allclose(got, w, rtol=1e-5, atol=1e-6)
                else:
                    ok = got.dtype == w.dtype and got.shape == w.shape and np.array_equal(got, w)
                detail = "" if ok or got.shape != w.shape else f", {int(np.sum(got != w))} of {w.size} differ"
                print(f"{'ok' if ok else 'FAIL'} {name} {o}: {w.dtype}{list(w.shape)}{detail}")
                failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
