#!/usr/bin/env python3
"""Two small .tflite models through `microtir run --target host`, against references
written here in plain Python with TFLite's semantics. A float32 one: the layouts (OHWI conv filters,
[1, KH, KW, C*M] depthwise filters), SAME padding with strides and dilation, a depth
multiplier, fused activations, AVERAGE_POOL_2D counting only the valid taps,
FULLY_CONNECTED with keep_num_dims, SOFTMAX, PAD, ADD with broadcasting, MEAN. And an
int8 one whose ops need no requantization, compared exactly: QUANTIZE, PAD (with the
zero point), MAX_POOL_2D with a fused RELU, CONCATENATION, RESHAPE, DEQUANTIZE. And
int8 ADD, SUB, MUL, LOGISTIC, TANH, RELU6 with their own scales, within 1 of the real
result (the wiring of scales and zero points; the arithmetic has its own exact tests).
And int8 MEAN (keep_dims both ways, equal quantization or not), exactly: TFLite's
arithmetic written here.

usage: ops_tflite_test.py MICROTIR FLATC SCHEMA

Each model is written as JSON and turned into a flatbuffer by flatc with our schema.
"""
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_json_model import OneSubgraphModel  # noqa: E402

rng = random.Random(7)


def floats(n, scale=1.0):
    return [rng.uniform(-scale, scale) for _ in range(n)]


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def f32_bytes(vals):
    return list(struct.pack(f"<{len(vals)}f", *vals))


def i32_bytes(vals):
    return list(struct.pack(f"<{len(vals)}i", *vals))


def prod(s):
    n = 1
    for d in s:
        n *= d
    return n


class Model(OneSubgraphModel):
    def __init__(self):
        super().__init__()
        self.values = {}  # tensor index -> flat list (constants and reference results)

    def tensor(self, name, shape, data=None, dtype="FLOAT32", quant=None):
        t = {"name": name, "shape": shape, "type": dtype, "buffer": 0}
        if quant:
            t["quantization"] = {"scale": [quant[0]], "zero_point": [quant[1]]}
        if data is not None:
            t["buffer"] = len(self.buffers)
            self.buffers.append({"data": f32_bytes(data) if dtype == "FLOAT32" else i32_bytes(data)})
            self.values[len(self.tensors)] = [f32(v) for v in data] if dtype == "FLOAT32" else data
        self.tensors.append(t)
        return len(self.tensors) - 1


def same_pad(n, k, s, d):
    out = (n + s - 1) // s
    total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
    return out, total // 2


def valid_out(n, k, s, d):
    return (n - ((k - 1) * d + 1)) // s + 1


def act(v, a):
    if a == "RELU":
        return max(0.0, v)
    if a == "RELU6":
        return min(6.0, max(0.0, v))
    return v


def conv_ref(x, xs, w, ws, b, stride, dil, pad, depthwise, activation):
    n, h, wd, c = xs
    if depthwise:
        _, kh, kw, o = ws
        mult = o // c
    else:
        o, kh, kw, ci = ws
    if pad == "SAME":
        oh, pt = same_pad(h, kh, stride[0], dil[0])
        ow, pl = same_pad(wd, kw, stride[1], dil[1])
    else:
        oh, ow, pt, pl = valid_out(h, kh, stride[0], dil[0]), valid_out(wd, kw, stride[1], dil[1]), 0, 0
    out = []
    for y in range(oh):
        for xx in range(ow):
            for oc in range(o):
                acc = b[oc] if b else 0.0
                for ky in range(kh):
                    for kx in range(kw):
                        iy, ix = y * stride[0] - pt + ky * dil[0], xx * stride[1] - pl + kx * dil[1]
                        if not (0 <= iy < h and 0 <= ix < wd):
                            continue
                        if depthwise:
                            ic = oc // mult
                            acc += x[(iy * wd + ix) * c + ic] * w[(ky * kw + kx) * o + oc]
                        else:
                            for ic in range(ci):
                                acc += x[(iy * wd + ix) * c + ic] * w[((oc * kh + ky) * kw + kx) * ci + ic]
                out.append(act(acc, activation))
    return out, [n, oh, ow, o]


def avg_pool_ref(x, xs, k, s, pad):
    n, h, wd, c = xs
    oh, pt = same_pad(h, k[0], s[0], 1) if pad == "SAME" else (valid_out(h, k[0], s[0], 1), 0)
    ow, pl = same_pad(wd, k[1], s[1], 1) if pad == "SAME" else (valid_out(wd, k[1], s[1], 1), 0)
    out = []
    for y in range(oh):
        for xx in range(ow):
            for ch in range(c):
                vals = [x[(iy * wd + ix) * c + ch] for iy in range(y * s[0] - pt, y * s[0] - pt + k[0])
                        for ix in range(xx * s[1] - pl, xx * s[1] - pl + k[1]) if 0 <= iy < h and 0 <= ix < wd]
                out.append(sum(vals) / len(vals))
    return out, [n, oh, ow, c]


def write_npy(path, shape, vals):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(f"{d}, " for d in shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack(f"<{len(vals)}f", *vals))


def read_npy_f32(path):
    raw = open(path, "rb").read()
    hlen = struct.unpack_from("<H", raw, 8)[0]
    data = raw[10 + hlen:]
    return list(struct.unpack(f"<{len(data) // 4}f", data))


def run_model(cli, flatc, schema, work, name, model_json, inputs, outputs, read):
    """Writes the model, runs it on the host; {output name: values}."""
    jpath = os.path.join(work, name + ".json")
    with open(jpath, "w") as f:
        json.dump(model_json, f)
    subprocess.run([flatc, "-b", "-o", work, schema, jpath], check=True)
    out = os.path.join(work, name + "_out")
    args = [cli, "run", os.path.join(work, name + ".tflite"), "--target", "host", "--output-dir", out]
    for n, path in inputs:
        args += ["--input", f"{n}={path}"]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit(f"FAIL: microtir run {name} exited {p.returncode}")
    return {o: read(os.path.join(out, o + ".npy")) for o in outputs}


def int8_data_movement(cli, flatc, schema, work):
    """QUANTIZE -> PAD -> MAX_POOL_2D (fused RELU) -> CONCATENATION -> RESHAPE ->
    DEQUANTIZE: the int8 ops whose results need no requantization, exactly."""
    m = Model()
    xs = [1, 3, 4, 2]
    x = [f32(v) for v in floats(prod(xs), 3.0)]
    s, z = 0.05, 7  # activation quantization, kept through the chain
    tx = m.tensor("x", xs)
    tq = m.tensor("q", xs, dtype="INT8", quant=(s, z))
    m.op("QUANTIZE", [tx], [tq])

    def quantize(v):  # TFLite: round half away from zero of x / scale, in float32
        r = f32(v / f32(s))
        return max(-128, min(127, int(math.floor(abs(r) + 0.5)) * (1 if r >= 0 else -1) + z))
    q = [quantize(v) for v in x]
    pads = m.tensor("pads", [4, 2], [0, 0, 1, 1, 0, 1, 0, 0], "INT32")
    ps = [1, 5, 5, 2]
    pq = [z] * prod(ps)  # padded with the zero point (real 0)
    for y in range(3):
        for xx in range(4):
            for c in range(2):
                pq[((y + 1) * 5 + xx) * 2 + c] = q[(y * 4 + xx) * 2 + c]
    tp = m.tensor("padded", ps, dtype="INT8", quant=(s, z))
    m.op("PAD", [tq, pads], [tp], "PadOptions")
    # 2x2 max pool, stride 2, SAME (3x3 out), fused RELU: clamp below at the zero point.
    mo = [1, 3, 3, 2]
    mp = []
    for y in range(3):
        for xx in range(3):
            for c in range(2):
                vals = [pq[(iy * 5 + ix) * 2 + c] for iy in (2 * y, 2 * y + 1) for ix in (2 * xx, 2 * xx + 1)
                        if iy < 5 and ix < 5]
                mp.append(max(z, max(vals)))
    tm = m.tensor("pooled", mo, dtype="INT8", quant=(s, z))
    m.op("MAX_POOL_2D", [tp], [tm], "Pool2DOptions", {"padding": "SAME", "stride_h": 2, "stride_w": 2,
                                                       "filter_height": 2, "filter_width": 2,
                                                       "fused_activation_function": "RELU"})
    cs = [1, 3, 3, 4]
    tc = m.tensor("joined", cs, dtype="INT8", quant=(s, z))
    m.op("CONCATENATION", [tm, tm], [tc], "ConcatenationOptions", {"axis": -1})
    cat = []
    for i in range(9):
        cat += mp[i * 2:i * 2 + 2] * 2
    tr = m.tensor("flat", [1, 36], dtype="INT8", quant=(s, z))
    m.op("RESHAPE", [tc], [tr], "ReshapeOptions", {"new_shape": [1, 36]})
    td = m.tensor("y", [1, 36])
    m.op("DEQUANTIZE", [tr], [td])
    want = [f32(f32(v - z) * f32(s)) for v in cat]
    xpath = os.path.join(work, "x8.npy")
    write_npy(xpath, xs, x)
    got = run_model(cli, flatc, schema, work, "int8_moves", m.json([tx], [td]), [("x", xpath)], ["y"],
                    read_npy_f32)["y"]
    ok = got == want
    print(f"{'ok' if ok else 'FAIL'} int8 QUANTIZE/PAD/MAX_POOL_2D+RELU/CONCATENATION/RESHAPE/DEQUANTIZE: "
          f"{len(got)} values {'exactly equal' if ok else 'differ'}")
    if not ok:
        print("  got ", got, "\n  want", want)
    return ok


def read_npy_i8(path):
    raw = open(path, "rb").read()
    hlen = struct.unpack_from("<H", raw, 8)[0]
    return [(b ^ 0x80) - 0x80 for b in raw[10 + hlen:]]


def int8_requantizing(cli, flatc, schema, work):
    """ADD, SUB, MUL, LOGISTIC, TANH and a standalone RELU6 on int8 data, each with its
    own scales: the frontend must hand each op the right scales and zero points. The
    reference is the real-valued result quantized to the output's scale; TFLite's integer
    arithmetic (checked bit for bit by the operators' own tests) may differ from it by 1."""
    m = Model()
    shape = [1, 4, 6]
    n = prod(shape)
    qa, qb = (0.04, -5), (0.03, 9)
    a = [rng.randint(-128, 127) for _ in range(n)]
    b = [rng.randint(-128, 127) for _ in range(n)]
    ta = m.tensor("a", shape, dtype="INT8", quant=qa)
    tb = m.tensor("b", shape, dtype="INT8", quant=qb)
    real_a = [qa[0] * (v - qa[1]) for v in a]
    real_b = [qb[0] * (v - qb[1]) for v in b]
    cases = [  # (op, options type, inputs, real result, output quantization)
        ("ADD", "AddOptions", [ta, tb], [x + y for x, y in zip(real_a, real_b)], (0.07, 3)),
        ("SUB", "SubOptions", [ta, tb], [x - y for x, y in zip(real_a, real_b)], (0.06, -2)),
        ("MUL", "MulOptions", [ta, tb], [x * y for x, y in zip(real_a, real_b)], (0.5, 1)),
        ("LOGISTIC", None, [ta], [1 / (1 + math.exp(-x)) for x in real_a], (1 / 256, -128)),
        ("TANH", None, [ta], [math.tanh(x) for x in real_a], (1 / 128, 0)),
        ("RELU6", None, [ta], [min(6.0, max(0.0, x)) for x in real_a], qa),
    ]
    outs, wants = [], {}
    for op, opt, ins, real, (s, z) in cases:
        name = op.lower()
        t = m.tensor(name, shape, dtype="INT8", quant=(s, z))
        m.op(op, ins, [t], opt, {} if opt else None)
        outs.append(t)
        wants[name] = [max(-128, min(127, round(r / s) + z)) for r in real]
    paths = []
    for nm, vals in (("a", a), ("b", b)):
        p = os.path.join(work, nm + "8.npy")
        header = "{'descr': '|i1', 'fortran_order': False, 'shape': (1, 4, 6), }"
        header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
        with open(p, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
            f.write(bytes(v & 0xFF for v in vals))
        paths.append((nm, p))
    got = run_model(cli, flatc, schema, work, "int8_arith", m.json([ta, tb], outs), paths, list(wants), read_npy_i8)
    ok = True
    for name, want in wants.items():
        worst = max(abs(x - y) for x, y in zip(got[name], want))
        good = worst <= 1
        ok = ok and good
        print(f"{'ok' if good else 'FAIL'} int8 {name.upper()}: {len(want)} values within {worst} of the real result")
    return ok


def tflite_quantize_multiplier(m):
    """TFLite's QuantizeMultiplier: m = q * 2^e, q rounded half away from zero to 31 bits."""
    if m == 0:
        return 0, 0
    q, e = math.frexp(m)
    qf = int(math.floor(q * 2 ** 31 + 0.5))
    if qf == 2 ** 31:
        qf, e = qf // 2, e + 1
    return (0, 0) if e < -31 else (qf, e)


def tflite_mbqm(x, mult, shift):
    """MultiplyByQuantizedMultiplier: gemmlowp's doubling high multiply, then its rounding
    divide by a power of two."""
    left, right = max(shift, 0), max(-shift, 0)
    x = ((x << left) + 2 ** 31) % 2 ** 32 - 2 ** 31
    ab = x * mult
    nudged = ab + (2 ** 30 if ab >= 0 else 1 - 2 ** 30)
    high = abs(nudged) // 2 ** 31 * (1 if nudged >= 0 else -1)
    mask = (1 << right) - 1
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> right) + (1 if (high & mask) > threshold else 0)


def int8_mean(cli, flatc, schema, work):
    """int8 MEAN over H and W, exactly as TFLite Micro (90b983c2) computes it: with keep_dims
    and without, with the output quantization equal to the input's and different, both
    QuantizedMeanOrSum (1/count folded into the multiplier; older TFLM truncated the raw
    mean when the quantization was equal)."""
    m = Model()
    shape = [1, 5, 4, 3]
    qi = (0.05, 3)
    x = [rng.randint(-128, 127) for _ in range(prod(shape))]
    tx = m.tensor("x", shape, dtype="INT8", quant=qi)
    cases = [("mean_keep", [1, 2], True, (0.02, -4)), ("mean_flat", [-2, 1], False, (0.1, 10)),
             ("mean_same", [2, 1], False, qi)]
    outs, wants = [], {}
    count, channels = shape[1] * shape[2], shape[3]
    sums = [sum(x[i * channels + c] for i in range(count)) for c in range(channels)]
    for name, axes, keep, (so, zo) in cases:
        ta = m.tensor(name + "_axes", [2], axes, "INT32")
        t = m.tensor(name, [1, 1, 1, channels] if keep else [1, channels], dtype="INT8", quant=(so, zo))
        m.op("MEAN", [tx, ta], [t], "ReducerOptions", {"keep_dims": keep})
        outs.append(t)
        mult, shift = tflite_quantize_multiplier(f32(qi[0]) / f32(so))
        s = min(count.bit_length() - 1, 32, 31 + shift)
        mult, shift = (mult << s) // count, shift - s
        wants[name] = [max(-128, min(127, tflite_mbqm(v - qi[1] * count, mult, shift) + zo)) for v in sums]
    p = os.path.join(work, "mean_x.npy")
    header = "{'descr': '|i1', 'fortran_order': False, 'shape': (1, 5, 4, 3), }"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(p, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(bytes(v & 0xFF for v in x))
    got = run_model(cli, flatc, schema, work, "int8_mean", m.json([tx], outs), [("x", p)], list(wants), read_npy_i8)
    ok = True
    for name, want in wants.items():
        good = got[name] == want
        ok = ok and good
        print(f"{'ok' if good else 'FAIL'} int8 MEAN {name}: {got[name]} (want {want})")
    # An axis outside the rank is refused by name, as every reducer's is.
    bad = Model()
    tb = bad.tensor("x", shape, dtype="INT8", quant=qi)
    ta = bad.tensor("axes", [2], [1, 4], "INT32")
    t = bad.tensor("y", [1, 1, 1, channels], dtype="INT8", quant=qi)
    bad.op("MEAN", [tb, ta], [t], "ReducerOptions", {"keep_dims": True})
    jpath = os.path.join(work, "mean_bad_axis.json")
    with open(jpath, "w") as f:
        json.dump(bad.json([tb], [t]), f)
    subprocess.run([flatc, "-b", "-o", work, schema, jpath], check=True)
    p = subprocess.run([cli, "compile", jpath[:-5] + ".tflite", "-o", os.path.join(work, "bad.tar")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    refused = p.returncode == 1 and "axis 4 is out of range for rank 4" in p.stderr
    print(f"{'ok' if refused else 'FAIL'} int8 MEAN axis 4 of rank 4 refused: {p.stderr.strip()}")
    return ok and refused


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    cli, flatc, schema = sys.argv[1:]
    m = Model()
    xs = [1, 5, 6, 2]
    x = [f32(v) for v in floats(prod(xs))]
    tx = m.tensor("x", xs)
    # PAD one row on top and one column on the right.
    pads = [[0, 0], [1, 0], [0, 1], [0, 0]]
    tp = m.tensor("pads", [4, 2], [v for p in pads for v in p], "INT32")
    ps = [1, 6, 7, 2]
    px = [0.0] * prod(ps)
    for y in range(5):
        for xx in range(6):
            for c in range(2):
                px[((y + 1) * 7 + xx) * 2 + c] = x[(y * 6 + xx) * 2 + c]
    t_pad = m.tensor("padded", ps)
    m.op("PAD", [tx, tp], [t_pad], "PadOptions")
    # CONV_2D 3x3, 3 outputs, SAME, stride (2, 1), RELU.
    w0s, w0 = [3, 3, 3, 2], floats(54, 0.5)
    b0 = floats(3, 0.1)
    y0, y0s = conv_ref(px, ps, [f32(v) for v in w0], w0s, [f32(v) for v in b0], (2, 1), (1, 1), "SAME", False, "RELU")
    t_w0, t_b0 = m.tensor("w0", w0s, w0), m.tensor("b0", [3], b0)
    t_y0 = m.tensor("conv", y0s)
    m.op("CONV_2D", [t_pad, t_w0, t_b0], [t_y0], "Conv2DOptions",
         {"padding": "SAME", "stride_h": 2, "stride_w": 1, "fused_activation_function": "RELU"})
    # DEPTHWISE_CONV_2D 2x2, multiplier 2, VALID, dilation 2, RELU6.
    w1s, w1 = [1, 2, 2, 6], floats(24, 1.0)
    b1 = floats(6, 0.1)
    y1, y1s = conv_ref(y0, y0s, [f32(v) for v in w1], w1s, [f32(v) for v in b1], (1, 1), (2, 2), "VALID", True, "RELU6")
    t_w1, t_b1 = m.tensor("w1", w1s, w1), m.tensor("b1", [6], b1)
    t_y1 = m.tensor("depthwise", y1s)
    m.op("DEPTHWISE_CONV_2D", [t_y0, t_w1, t_b1], [t_y1], "DepthwiseConv2DOptions",
         {"padding": "VALID", "stride_h": 1, "stride_w": 1, "depth_multiplier": 2, "fused_activation_function": "RELU6",
          "dilation_h_factor": 2, "dilation_w_factor": 2})
    # AVERAGE_POOL_2D 2x2, stride 2, SAME: the edge windows count their valid taps only.
    y2, y2s = avg_pool_ref(y1, y1s, (2, 2), (2, 2), "SAME")
    t_y2 = m.tensor("pool", y2s)
    m.op("AVERAGE_POOL_2D", [t_y1], [t_y2], "Pool2DOptions",
         {"padding": "SAME", "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2})
    # ADD with a broadcast [6] constant.
    c3 = floats(6, 0.5)
    y3 = [v + f32(c3[i % 6]) for i, v in enumerate(y2)]
    t_c3, t_y3 = m.tensor("offset", [6], c3), m.tensor("shifted", y2s)
    m.op("ADD", [t_y2, t_c3], [t_y3], "AddOptions")
    # FULLY_CONNECTED 4 units, keep_num_dims.
    w4 = floats(24, 0.5)
    rows = len(y3) // 6
    y4 = [sum(y3[r * 6 + k] * f32(w4[u * 6 + k]) for k in range(6)) for r in range(rows) for u in range(4)]
    y4s = y2s[:-1] + [4]
    t_w4, t_y4 = m.tensor("w4", [4, 6], w4), m.tensor("fc", y4s)
    m.op("FULLY_CONNECTED", [t_y3, t_w4, -1], [t_y4], "FullyConnectedOptions", {"keep_num_dims": True})
    # SOFTMAX over the last axis.
    y5 = []
    for r in range(rows):
        e = [math.exp(v - max(y4[r * 4:r * 4 + 4])) for v in y4[r * 4:r * 4 + 4]]
        y5 += [v / sum(e) for v in e]
    t_y5 = m.tensor("probs", y4s)
    m.op("SOFTMAX", [t_y4], [t_y5], "SoftmaxOptions", {"beta": 1.0})
    # MEAN over H and W of the depthwise output (a second model output).
    axes = m.tensor("axes", [2], [1, 2], "INT32")
    n_hw = y1s[1] * y1s[2]
    y6 = [sum(y1[i * 6 + c] for i in range(n_hw)) / n_hw for c in range(6)]
    t_y6 = m.tensor("mean", [1, 6])
    m.op("MEAN", [t_y1, axes], [t_y6], "ReducerOptions", {"keep_dims": False})

    with tempfile.TemporaryDirectory() as work:
        jpath = os.path.join(work, "float_ops.json")
        with open(jpath, "w") as f:
            json.dump(m.json([tx], [t_y5, t_y6]), f)
        subprocess.run([flatc, "-b", "-o", work, schema, jpath], check=True)
        write_npy(os.path.join(work, "x.npy"), xs, x)
        out = os.path.join(work, "out")
        p = subprocess.run([cli, "run", os.path.join(work, "float_ops.tflite"), "--input", "x=" + os.path.join(work, "x.npy"),
                            "--target", "host", "--output-dir", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            raise SystemExit(f"FAIL: microtir run exited {p.returncode}")
        failures = 0
        for name, want in (("probs", y5), ("mean", y6)):
            got = read_npy_f32(os.path.join(out, name + ".npy"))
            worst = max(abs(a - b) / max(1e-6, abs(b)) for a, b in zip(got, want)) if len(got) == len(want) else math.inf
            ok = worst < 1e-4
            failures += not ok
            print(f"{'ok' if ok else 'FAIL'} {name}: {len(got)} values, largest relative difference {worst:.2g}")
        failures += not int8_data_movement(cli, flatc, schema, work)
        failures += not int8_requantizing(cli, flatc, schema, work)
        failures += not int8_mean(cli, flatc, schema, work)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
