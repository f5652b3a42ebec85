#!/usr/bin/env python3
"""Regenerates tests/onnx/qdq/: small QDQ models (QuantizeLinear / DequantizeLinear around
float operators, as onnxruntime's quantizer writes them) with an input x.npy and the
output y.npy that an independent numpy reference computes here: integer accumulation of
the dequantized operands' integers, then ONNX's requantization (the float32 multiplier
x_scale * w_scale / y_scale, round half to even of acc * m in float64, saturation). The
float parts (groups that stay float) are numpy in float32 as ONNX's reference computes
them; the folded Add is the float graph's float32 steps, the folded AveragePool the exact
mean rounded half to even.
tests/e2e/onnx_test.sh (group qdq) compares microtir's output
bit for bit, on the interpreter and as host C, and checks which groups folded.
Needs Debian's python3-onnx and numpy. Run from this directory: /usr/bin/python3 make_qdq.py"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUT = "qdq"
os.makedirs(OUT, exist_ok=True)
for f in os.listdir(OUT):
    os.remove(os.path.join(OUT, f))
rng = np.random.default_rng(2424)
f32 = np.float32


def quantize(x, scale, zp, dtype, axis=None):
    """ONNX QuantizeLinear: saturate(rint(x / scale) + zp), x / scale in float32."""
    s = np.asarray(scale, f32)
    z = np.asarray(zp).astype(np.int64)
    if axis is not None and s.size > 1:
        shape = [1] * x.ndim
        shape[axis] = s.size
        s, z = s.reshape(shape), z.reshape(shape)
    info = np.iinfo(dtype)
    return np.clip(np.rint(x.astype(f32) / s) + z, info.min, info.max).astype(dtype)


def dequantize(q, scale, zp):
    return ((q.astype(np.int32) - np.int32(zp)).astype(f32) * f32(scale)).astype(f32)


def requantize(acc, xs, ws, ys, yz, dtype, relu=False):
    """ONNX's reference: m = x_scale * w_scale / y_scale in float32, rint(acc * m) + zp."""
    m = (f32(xs) * np.asarray(ws, f32)) / f32(ys)
    y = np.rint(acc.astype(np.float64) * m.astype(np.float64)) + yz
    info = np.iinfo(dtype)
    lo = max(info.min, yz) if relu else info.min
    return np.clip(y, lo, info.max).astype(dtype)


def conv_acc(xq, xz, wq, wz, bias, stride=1, pad=0, group=1):
    """Integer NCHW convolution: sum (x - xz)(w - wz[o]) + bias[o], int64."""
    x = np.pad(xq.astype(np.int64) - xz, ((0, 0), (0, 0), (pad, pad), (pad, pad)))  # zero = the zero point
    w = wq.astype(np.int64) - np.asarray(wz, np.int64).reshape(-1, 1, 1, 1)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.int64)
    og = o // group
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = x[:, g * cg:(g + 1) * cg, i * stride:i * stride + kh, j * stride:j * stride + kw]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out + (0 if bias is None else np.asarray(bias, np.int64).reshape(1, -1, 1, 1))


class Model:
    def __init__(self):
        self.nodes, self.inits = [], []

    def init(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def q(self, x, out, scale, zp, axis=None):
        self.init(out + "_scale", np.asarray(scale, f32))
        self.init(out + "_zp", np.asarray(zp))
        kw = {} if axis is None else {"axis": axis}
        self.nodes.append(helper.make_node("QuantizeLinear", [x, out + "_scale", out + "_zp"], [out], **kw))
        return out

    def dq(self, x, out, scale, zp, axis=None):
        self.init(out + "_scale", np.asarray(scale, f32))
        self.init(out + "_zp", np.asarray(zp))
        kw = {} if axis is None else {"axis": axis}
        self.nodes.append(helper.make_node("DequantizeLinear", [x, out + "_scale", out + "_zp"], [out], **kw))
        return out

    def node(self, op, ins, out, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def save(self, name, x, y, notes):
        g = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
                                                                    np.dtype(f32): TensorProto.FLOAT}[y.dtype], list(y.shape))],
                              initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        with open("%s/%s.onnx" % (OUT, name), "wb") as f:
            f.write(m.SerializeToString())
        np.save("%s/%s.x.npy" % (OUT, name), x)
        if y.dtype != f32:  # a float result (a group kept float) is only checked host C = interpreter
            np.save("%s/%s.y.npy" % (OUT, name), y)
        with open("%s/%s.notes" % (OUT, name), "w") as f:
            f.write("".join(n + "\n" for n in notes))


def weights(shape, axis_size, dtype=np.int8):
    info = np.iinfo(dtype)
    w = rng.integers(info.min, info.max + 1, size=shape).astype(dtype)
    scales = (rng.uniform(0.002, 0.02, size=axis_size)).astype(f32)
    return w, scales


# conv + relu, uint8 activations, int8 per-channel weights, int32 bias, padding 1.
m = Model()
x = rng.standard_normal((1, 3, 8, 8)).astype(f32)
xs, xz = f32(0.02), np.uint8(128)
w, ws = weights((4, 3, 3, 3), 4)
bias = rng.integers(-2000, 2000, size=4).astype(np.int32)
ys, yz = f32(0.05), np.uint8(10)
xq = m.q("x", "xq", xs, xz)
xd = m.dq(xq, "xd", xs, xz)
wd = m.dq(m.init("w", w), "wd", ws, np.zeros(4, np.int8), axis=0)
bd = m.dq(m.init("b", bias), "bd", f32(xs) * ws, np.zeros(4, np.int32), axis=0)
c = m.node("Conv", [xd, wd, bd], "conv", pads=[1, 1, 1, 1])
r = m.node("Relu", [c], "relu")
m.q(r, "y", ys, yz)
acc = conv_acc(quantize(x, xs, xz, np.uint8), 128, w, np.zeros(4), bias, pad=1)
m.save("conv_relu_per_channel", x, requantize(acc, xs, ws.reshape(1, -1, 1, 1), ys, 10, np.uint8, relu=True),
       ["QDQ: 1 group(s) folded to integer kernels (1 qlinear_conv/qlinear_matmul), 0 kept float"])

# depthwise conv, int8 activations, stride 2, per-channel weights with zero points.
m = Model()
x = rng.standard_normal((1, 4, 9, 9)).astype(f32)
xs, xz = f32(0.03), np.int8(-5)
w, ws = weights((4, 1, 3, 3), 4)
wz = np.array([0, 3, -2, 1], np.int8)
ys, yz = f32(0.04), np.int8(7)
xq = m.q("x", "xq", xs, xz)
xd = m.dq(xq, "xd", xs, xz)
wd = m.dq(m.init("w", w), "wd", ws, wz, axis=0)
c = m.node("Conv", [xd, wd], "conv", group=4, strides=[2, 2])
m.q(c, "y", ys, yz)
acc = conv_acc(quantize(x, xs, xz, np.int8), -5, w, wz, None, stride=2, group=4)
m.save("depthwise_int8", x, requantize(acc, xs, ws.reshape(1, -1, 1, 1), ys, 7, np.int8),
       ["QDQ: 1 group(s) folded to integer kernels (1 qlinear_conv/qlinear_matmul), 0 kept float"])

# dense (Gemm, transB) with per-channel weights and a bias.
m = Model()
x = rng.standard_normal((2, 16)).astype(f32)
xs, xz = f32(0.025), np.uint8(120)
w, ws = weights((5, 16), 5)
bias = rng.integers(-500, 500, size=5).astype(np.int32)
ys, yz = f32(0.06), np.uint8(128)
xq = m.q("x", "xq", xs, xz)
xd = m.dq(xq, "xd", xs, xz)
wd = m.dq(m.init("w", w), "wd", ws, np.zeros(5, np.int8), axis=0)
bd = m.dq(m.init("b", bias), "bd", f32(xs) * ws, np.zeros(5, np.int32), axis=0)
g = m.node("Gemm", [xd, wd, bd], "fc", transB=1)
m.q(g, "y", ys, yz)
acc = (quantize(x, xs, xz, np.uint8).astype(np.int64) - 120) @ w.astype(np.int64).T + bias
m.save("dense_per_channel", x, requantize(acc, xs, ws.reshape(1, -1), ys, 128, np.uint8),
       ["QDQ: 1 group(s) folded to integer kernels (1 qlinear_conv/qlinear_matmul), 0 kept float"])

# A chain: conv -> maxpool -> flatten -> matmul (per-tensor weight), every step quantized.
m = Model()
x = rng.standard_normal((1, 2, 6, 6)).astype(f32)
xs, xz = f32(0.02), np.int8(0)
w1, ws1 = weights((3, 2, 3, 3), 3)
s1, z1 = f32(0.03), np.int8(-10)
w2, _ = weights((12, 4), 1)
ws2 = f32(0.01)
ys, yz = f32(0.1), np.int8(3)
xd = m.dq(m.q("x", "xq", xs, xz), "xd", xs, xz)
c = m.node("Conv", [xd, m.dq(m.init("w1", w1), "w1d", ws1, np.zeros(3, np.int8), axis=0)], "conv", pads=[1, 1, 1, 1])
cd = m.dq(m.q(c, "cq", s1, z1), "cd", s1, z1)
p = m.node("MaxPool", [cd], "pool", kernel_shape=[3, 3], strides=[3, 3])
pd = m.dq(m.q(p, "pq", s1, z1), "pd", s1, z1)
fl = m.node("Flatten", [pd], "flat")
fd = m.dq(m.q(fl, "fq", s1, z1), "fd", s1, z1)
mm = m.node("MatMul", [fd, m.dq(m.init("w2", w2), "w2d", ws2, np.int8(0))], "mm")
m.q(mm, "y", ys, yz)
acc1 = conv_acc(quantize(x, xs, xz, np.int8), 0, w1, np.zeros(3), None, pad=1)
cq = requantize(acc1, xs, ws1.reshape(1, -1, 1, 1), s1, -10, np.int8)
pq = cq.reshape(1, 3, 2, 3, 2, 3).max(axis=(3, 5))
acc2 = (pq.reshape(1, 12).astype(np.int64) + 10) @ w2.astype(np.int64)
m.save("chain_conv_pool_matmul", x, requantize(acc2, s1, ws2, ys, 3, np.int8),
       ["QDQ: 4 group(s) folded to integer kernels (2 qlinear_conv/qlinear_matmul), 0 kept float"])

# An Add of two quantized tensors (folded to qlinear_add: the float32 steps of the float
# graph fused) and an AveragePool with the same scale in and out (folded to
# qlinear_avg_pool: the exact mean of the window, rounded half to even as QuantizeLinear
# rounds; the float graph's float32 mean can land a step away at a tie).
m = Model()
x = rng.standard_normal((1, 2, 4, 4)).astype(f32)
sa, za, sb, zb = f32(0.02), np.uint8(100), f32(0.05), np.uint8(30)
ad = m.dq(m.q("x", "aq", sa, za), "ad", sa, za)
bd = m.dq(m.q("x", "bq", sb, zb), "bd", sb, zb)
s = m.node("Add", [ad, bd], "sum")
so, zo = f32(0.06), np.uint8(128)
sd = m.dq(m.q(s, "sq", so, zo), "sd", so, zo)
ap = m.node("AveragePool", [sd], "avg", kernel_shape=[2, 2], strides=[2, 2])
m.q(ap, "y", so, zo)
a = dequantize(quantize(x, sa, za, np.uint8), sa, 100)
b = dequantize(quantize(x, sb, zb, np.uint8), sb, 30)
sq = quantize(a + b, so, zo, np.uint8)
win = sq.astype(np.int64).reshape(1, 2, 2, 2, 2, 2) - 128  # n, c, oh, kh, ow, kw
mean = np.rint(win.sum(axis=(3, 5)) / 4.0) + 128  # exact quarters, rint: half to even
m.save("add_avgpool", x, mean.astype(np.uint8),
       ["QDQ: 2 group(s) folded to integer kernels (0 qlinear_conv/qlinear_matmul), 0 kept float"])

# An AveragePool whose output scale differs from its input's (kept float, a note), then
# an AveragePool with padding (count_include_pad 0) and a GlobalAveragePool, both folded.
m = Model()
x = rng.standard_normal((1, 3, 5, 5)).astype(f32)
s0, s1, z1 = f32(0.05), f32(0.03), np.int8(-7)
xd = m.dq(m.q("x", "xq", s0, z1), "xd", s0, z1)
r = m.dq(m.q(m.node("AveragePool", [xd], "rescaled", kernel_shape=[1, 1]), "r_q", s1, z1), "r_d", s1, z1)
p1 = m.dq(m.q(m.node("AveragePool", [r], "avg", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), "avg_q", s1, z1),
          "avg_d", s1, z1)
m.q(m.node("GlobalAveragePool", [p1], "gap"), "y", s1, z1)
q1 = quantize(dequantize(quantize(x, s0, z1, np.int8), s0, -7), s1, z1, np.int8).astype(np.int64) + 7
padded = np.pad(q1, ((0, 0), (0, 0), (1, 1), (1, 1)))
ones = np.pad(np.ones_like(q1), ((0, 0), (0, 0), (1, 1), (1, 1)))
sums = sum(padded[:, :, i:i + 5, j:j + 5] for i in range(3) for j in range(3))
cells = sum(ones[:, :, i:i + 5, j:j + 5] for i in range(3) for j in range(3))
avg = np.rint(sums / cells).astype(np.int64)  # an exact fraction away from ties; ties exact
gap = np.rint(avg.sum(axis=(2, 3), keepdims=True) / 25.0) - 7
m.save("avgpool_global_rescaled", x, gap.astype(np.int8),
       ["QDQ: node 'rescaled' (AveragePool) stays float: its input and output have different scales or zero points",
        "QDQ: 2 group(s) folded to integer kernels (0 qlinear_conv/qlinear_matmul), 1 kept float"])

# Not exact, so kept float with a note (never a wrong answer): a Conv whose bias is a
# float initializer, not an int32 DequantizeLinear; its float output is dequantized.
m = Model()
x = rng.standard_normal((1, 2, 5, 5)).astype(f32)
xs, xz = f32(0.02), np.uint8(128)
w, ws = weights((3, 2, 3, 3), 3)
xd = m.dq(m.q("x", "xq", xs, xz), "xd", xs, xz)
c = m.node("Conv", [xd, m.dq(m.init("w", w), "wd", ws, np.zeros(3, np.int8), axis=0),
                    m.init("b", rng.standard_normal(3).astype(f32))], "conv")
m.dq(m.q(c, "cq", f32(0.05), np.uint8(128)), "y", f32(0.05), np.uint8(128))
m.save("conv_float_bias_kept_float", x, np.zeros((1, 3, 3, 3), f32),
       ["QDQ: node 'conv' (Conv) stays float: the bias is float (not an int32 DequantizeLinear)"])

# A DS-CNN-shaped chain on the fast int8 kernels (prepare_quantized lowers the folded
# qlinear_conv / qlinear_matmul onto qconv2d / qdense with ONNX's requantization): conv 3x3
# stride 2, depthwise 3x3 and pointwise 1x1 (all per-axis weights, Relu), a residual
# Add, then Flatten and Gemm; int8 activations.
m = Model()
x = rng.standard_normal((1, 3, 10, 10)).astype(f32)
xs, xz = f32(0.025), np.int8(-3)
w1, ws1 = weights((8, 3, 3, 3), 8)
b1 = rng.integers(-800, 800, size=8).astype(np.int32)
s1, z1 = f32(0.04), np.int8(-128)
w2, ws2 = weights((8, 1, 3, 3), 8)
s2, z2 = f32(0.05), np.int8(-128)
w3, ws3 = weights((8, 8, 1, 1), 8)
b3 = rng.integers(-300, 300, size=8).astype(np.int32)
s3, z3 = f32(0.045), np.int8(-128)
sa, za = f32(0.07), np.int8(-20)
w4, ws4 = weights((6, 200), 6)
b4 = rng.integers(-1000, 1000, size=6).astype(np.int32)
ys, yz = f32(0.2), np.int8(4)


def qconv(m, src, src_s, w, ws, bias, name, s, z, **attrs):
    o = w.shape[0]
    ins = [src, m.dq(m.init(name + "_w", w), name + "_wd", ws, np.zeros(o, np.int8), axis=0)]
    if bias is not None:
        ins.append(m.dq(m.init(name + "_b", bias), name + "_bd", f32(src_s) * ws, np.zeros(o, np.int32), axis=0))
    r = m.node("Relu", [m.node("Conv", ins, name, **attrs)], name + "_relu")
    q = m.q(r, name + "_q", s, z)
    return q, m.dq(q, name + "_d", s, z)


xd = m.dq(m.q("x", "xq", xs, xz), "xd", xs, xz)
c1q, c1d = qconv(m, xd, xs, w1, ws1, b1, "conv1", s1, z1, pads=[1, 1, 1, 1], strides=[2, 2])
c2q, c2d = qconv(m, c1d, s1, w2, ws2, None, "dw", s2, z2, pads=[1, 1, 1, 1], group=8)
c3q, c3d = qconv(m, c2d, s2, w3, ws3, b3, "pw", s3, z3)
sq = m.q(m.node("Add", [c3d, c2d], "res"), "res_q", sa, za)
fq = m.q(m.node("Flatten", [m.dq(sq, "res_d", sa, za)], "flat"), "flat_q", sa, za)
fd = m.dq(fq, "flat_d", sa, za)
g = m.node("Gemm", [fd, m.dq(m.init("fc_w", w4), "fc_wd", ws4, np.zeros(6, np.int8), axis=0),
                    m.dq(m.init("fc_b", b4), "fc_bd", f32(sa) * ws4, np.zeros(6, np.int32), axis=0)], "fc", transB=1)
m.q(g, "y", ys, yz)
a1 = requantize(conv_acc(quantize(x, xs, xz, np.int8), -3, w1, np.zeros(8), b1, stride=2, pad=1), xs,
                ws1.reshape(1, -1, 1, 1), s1, -128, np.int8, relu=True)
a2 = requantize(conv_acc(a1, -128, w2, np.zeros(8), None, pad=1, group=8), s1, ws2.reshape(1, -1, 1, 1), s2, -128,
                np.int8, relu=True)
a3 = requantize(conv_acc(a2, -128, w3, np.zeros(8), b3), s2, ws3.reshape(1, -1, 1, 1), s3, -128, np.int8, relu=True)
res = quantize(dequantize(a3, s3, -128) + dequantize(a2, s2, -128), sa, za, np.int8)
acc = (res.reshape(1, 200).astype(np.int64) + 20) @ w4.astype(np.int64).T + b4
m.save("chain_dscnn_block", x, requantize(acc, sa, ws4.reshape(1, -1), ys, 4, np.int8),
       ["QDQ: 6 group(s) folded to integer kernels (4 qlinear_conv/qlinear_matmul), 0 kept float"])

# A QOperator model (QLinearConv, QLinearMatMul), uint8 as these ops use it most: uint8
# input and weights with zero points (the weight zero point comes off at compile time),
# per-channel conv scales; the input is the quantized tensor itself.
xq = rng.integers(0, 256, size=(1, 3, 6, 6)).astype(np.uint8)
xs, xz = f32(0.03), np.uint8(120)
wc = rng.integers(0, 256, size=(4, 3, 3, 3)).astype(np.uint8)
wcs, wcz = rng.uniform(0.002, 0.02, size=4).astype(f32), np.uint8(128)
bc = rng.integers(-3000, 3000, size=4).astype(np.int32)
s1, z1 = f32(0.08), np.uint8(100)
wm = rng.integers(0, 256, size=(144, 5)).astype(np.uint8)
wms, wmz = f32(0.004), np.uint8(128)
ys, yz = f32(0.3), np.uint8(128)
inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in [
    ("xs", xs), ("xz", xz), ("wc", wc), ("wcs", wcs), ("wcz", wcz), ("bc", bc), ("s1", s1), ("z1", z1),
    ("wm", wm), ("wms", wms), ("wmz", wmz), ("ys", ys), ("yz", yz), ("shape", np.array([1, 144], np.int64))]]
nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "wc", "wcs", "wcz", "s1", "z1", "bc"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Reshape", ["c", "shape"], ["flat"]),
         helper.make_node("QLinearMatMul", ["flat", "s1", "z1", "wm", "wms", "wmz", "ys", "yz"], ["y"])]
gr = helper.make_graph(nodes, "qoperator_conv_matmul", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 6, 6])],
                       [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 5])], initializer=inits)
mo = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 13)])
mo.ir_version = 7
with open("%s/qoperator_conv_matmul.onnx" % OUT, "wb") as f:
    f.write(mo.SerializeToString())
cq = requantize(conv_acc(xq, 120, wc, np.full(4, 128), bc, pad=1), xs, wcs.reshape(1, -1, 1, 1), s1, 100,
                np.uint8)
acc = (cq.reshape(1, 144).astype(np.int64) - 100) @ (wm.astype(np.int64) - 128)
np.save("%s/qoperator_conv_matmul.x.npy" % OUT, xq)
np.save("%s/qoperator_conv_matmul.y.npy" % OUT, requantize(acc, s1, wms, ys, 128, np.uint8))
open("%s/qoperator_conv_matmul.notes" % OUT, "w").close()

# Two convolutions of one input, quantized alike, joined by a Concat of the same scale and
# zero point: the Concat runs on the int8 tensors.
m = Model()
x = rng.standard_normal((1, 2, 5, 5)).astype(f32)
xs, xz = f32(0.03), np.int8(4)
wa, wsa = weights((3, 2, 3, 3), 3)
wb, wsb = weights((2, 2, 1, 1), 2)
s1, z1 = f32(0.04), np.int8(-9)
xd = m.dq(m.q("x", "xq", xs, xz), "xd", xs, xz)
ca = m.dq(m.q(m.node("Conv", [xd, m.dq(m.init("wa", wa), "wad", wsa, np.zeros(3, np.int8), axis=0)], "ca",
                     pads=[1, 1, 1, 1]), "ca_q", s1, z1), "ca_d", s1, z1)
cb = m.dq(m.q(m.node("Conv", [xd, m.dq(m.init("wb", wb), "wbd", wsb, np.zeros(2, np.int8), axis=0)], "cb"),
              "cb_q", s1, z1), "cb_d", s1, z1)
m.q(m.node("Concat", [ca, cb], "cat", axis=1), "y", s1, z1)
xq = quantize(x, xs, xz, np.int8)
ya = requantize(conv_acc(xq, 4, wa, np.zeros(3), None, pad=1), xs, wsa.reshape(1, -1, 1, 1), s1, -9, np.int8)
yb = requantize(conv_acc(xq, 4, wb, np.zeros(2), None), xs, wsb.reshape(1, -1, 1, 1), s1, -9, np.int8)
m.save("concat_same_scale", x, np.concatenate([ya, yb], axis=1),
       ["QDQ: 3 group(s) folded to integer kernels (2 qlinear_conv/qlinear_matmul), 0 kept float"])
