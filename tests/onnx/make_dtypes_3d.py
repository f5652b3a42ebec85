#!/usr/bin/env python3
"""Regenerates tests/onnx/dtypes_3d/: one small model per form that 3-D convolutions and
float64/int64 elementwise arithmetic add to the ONNX frontend, with an input x.npy and
the output y.npy that numpy computes for it here (an independent reference: no ONNX
runtime). tests/e2e/onnx_test.sh (group dtypes_3d) runs each model on the interpreter
and as host C, requires the two to agree bit for bit, and compares with y.npy: bit for
bit for the integer and the float64 +, -, *, / models (IEEE arithmetic is exact to the
bit), within float rounding (the *.tolerance file: rtol atol) for the float32
convolutions and the libm functions. Also writes refused forms (*.onnx with a *.expect of the message).
Needs Debian's python3-onnx and numpy. Run from this directory:
/usr/bin/python3 make_dtypes_3d.py"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUT = "dtypes_3d"
os.makedirs(OUT, exist_ok=True)
for f in os.listdir(OUT):
    os.remove(os.path.join(OUT, f))
rng = np.random.default_rng(243)
np.seterr(over="ignore", divide="ignore")  # float64_math's infinities are meant
ONNX_TYPE = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64}


def write(name, nodes, x, y, inits=(), opset=13, tolerance=None, expect=None, out_shape=None):
    """Nodes from input 'x' to output 'y'; y is numpy's answer (None for a refusal)."""
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in inits]
    dtype = ONNX_TYPE[x.dtype.type]
    shape = list(y.shape) if y is not None else out_shape
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", dtype, list(x.shape))],
                          [helper.make_tensor_value_info("y", dtype, shape)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    with open("%s/%s.onnx" % (OUT, name), "wb") as f:
        f.write(m.SerializeToString())
    np.save("%s/%s.x.npy" % (OUT, name), x)
    if y is not None:
        np.save("%s/%s.y.npy" % (OUT, name), y.astype(x.dtype))
    if tolerance is not None:
        with open("%s/%s.tolerance" % (OUT, name), "w") as f:
            f.write("%g %g\n" % tolerance)
    if expect is not None:
        with open("%s/%s.expect" % (OUT, name), "w") as f:
            f.write(expect + "\n")


def conv3d(x, w, b, strides, pads, dilations, group):
    """Direct 3-D cross-correlation in float64 (pads: d, h, w begins, then ends)."""
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[k], pads[k + 3]) for k in range(3)])
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    k = w.shape[2:]
    ext = [(k[a] - 1) * dilations[a] + 1 for a in range(3)]
    out = [(x.shape[2 + a] - ext[a]) // strides[a] + 1 for a in range(3)]
    y = np.zeros((n, o) + tuple(out))
    og = o // group
    for oc in range(o):
        g = oc // og
        for od in range(out[0]):
            for oh in range(out[1]):
                for ow in range(out[2]):
                    d0, h0, w0 = od * strides[0], oh * strides[1], ow * strides[2]
                    win = x[:, g * cg:(g + 1) * cg, d0:d0 + ext[0]:dilations[0], h0:h0 + ext[1]:dilations[1],
                            w0:w0 + ext[2]:dilations[2]]
                    y[:, oc, od, oh, ow] = (win * w[oc].astype(np.float64)).sum(axis=(1, 2, 3, 4))
    if b is not None:
        y += b.reshape(1, -1, 1, 1, 1)
    return y.astype(np.float32)


def rand32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# Conv on NCDHW data: explicit pads and strides with a bias; groups, dilations and
# auto_pad SAME_UPPER.
x = rand32(1, 2, 4, 6, 5)
w, b = rand32(3, 2, 2, 3, 3), rand32(3)
write("conv3d_pads_strides", [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 0, 1, 0, 1, 1],
                                               strides=[1, 2, 2])],
      x, conv3d(x, w, b, [1, 2, 2], [1, 0, 1, 0, 1, 1], [1, 1, 1], 1), [("w", w), ("b", b)], tolerance=(1e-5, 1e-6))
x = rand32(2, 4, 5, 5, 4)
w = rand32(6, 2, 3, 2, 2)
# SAME_UPPER, strides 1: the total padding per axis is the dilated kernel extent - 1.
write("conv3d_groups_dilations_same", [helper.make_node("Conv", ["x", "w"], ["y"], group=2, dilations=[2, 1, 1],
                                                        auto_pad="SAME_UPPER")],
      x, conv3d(x, w, None, [1, 1, 1], [2, 0, 0, 2, 1, 1], [2, 1, 1], 2), [("w", w)], tolerance=(1e-5, 1e-6))


def conv_transpose3d(x, w, b, strides, pads, output_padding, group):
    """The scatter form in float64: each input element adds its kernel patch."""
    n, c = x.shape[:2]
    og, k = w.shape[1], w.shape[2:]
    cg = c // group
    full = [strides[a] * (x.shape[2 + a] - 1) + output_padding[a] + k[a] for a in range(3)]
    y = np.zeros((n, og * group) + tuple(full))
    for ic in range(c):
        g = ic // cg
        for i in np.ndindex(*x.shape[2:]):
            d0, h0, w0 = (i[a] * strides[a] for a in range(3))
            y[:, g * og:(g + 1) * og, d0:d0 + k[0], h0:h0 + k[1], w0:w0 + k[2]] += (
                x[:, ic][(slice(None),) + i].reshape(-1, 1, 1, 1, 1) * w[ic].astype(np.float64))
    if b is not None:
        y += b.reshape(1, -1, 1, 1, 1)
    return y[:, :, pads[0]:full[0] - pads[3], pads[1]:full[1] - pads[4], pads[2]:full[2] - pads[5]].astype(np.float32)


# ConvTranspose on NCDHW data: strides, pads, output_padding, groups and a bias; an
# output_shape that would pad the start of the output is refused.
x = rand32(1, 4, 2, 3, 2)
w, b = rand32(4, 2, 2, 3, 2), rand32(4)
write("convtranspose_3d_groups", [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], group=2, strides=[2, 1, 2],
                                                   pads=[0, 1, 1, 1, 0, 0], output_padding=[1, 0, 1])],
      x, conv_transpose3d(x, w, b, [2, 1, 2], [0, 1, 1, 1, 0, 0], [1, 0, 1], 2), [("w", w), ("b", b)],
      tolerance=(1e-5, 1e-6))
write("convtranspose_3d_output_shape_too_big", [helper.make_node("ConvTranspose", ["x", "w"], ["y"],
                                                                 output_shape=[9, 5, 4])],
      rand32(1, 1, 3, 3, 3), None, [("w", rand32(1, 2, 3, 3, 2))],
      expect="an output_shape that pads the start of the output (negative 'pads')", out_shape=[1, 2, 9, 5, 4])

# float64: values a float32 cannot hold (1 + 2^-40, 1e300, subnormals). +, -, *, / and
# Max/Min are IEEE double operations: numpy's bits.
x = np.array([[1.0 + 2.0 ** -40, 1e300, -2.5, 5e-320], [0.1, -7.0, 3.0, -1e-300]], dtype=np.float64)
b = np.array([1e-10, -3.0, 0.2, 2.0 ** 60], dtype=np.float64)
c = np.array([[0.7], [-1e200]], dtype=np.float64)
write("float64_arithmetic", [helper.make_node("Add", ["x", "b"], ["t0"]), helper.make_node("Mul", ["t0", "c"], ["t1"]),
                             helper.make_node("Sub", ["t1", "x"], ["t2"]), helper.make_node("Div", ["t2", "b"], ["y"])],
      x, ((x + b) * c - x) / b, [("b", b), ("c", c)])
write("float64_max_min", [helper.make_node("Max", ["x", "b", "c"], ["t0"]), helper.make_node("Min", ["t0", "b"], ["t1"]),
                          helper.make_node("Neg", ["t1"], ["t2"]), helper.make_node("Abs", ["t2"], ["t3"]),
                          helper.make_node("Relu", ["t2"], ["t4"]), helper.make_node("Add", ["t3", "t4"], ["y"])],
      x, (lambda t: np.abs(-t) + np.maximum(-t, 0))(np.minimum(np.maximum(np.maximum(x, b), c), b)),
      [("b", b), ("c", c)], opset=8)
# libm: within a few ulps of numpy's (both round double results; the functions differ).
xm = np.array([[0.5, -3.25, 1.0 + 2.0 ** -40, 20.0], [-0.0, 1e-300, 700.0, -745.0]], dtype=np.float64)
write("float64_math", [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Tanh", ["x"], ["t"]),
                       helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Abs", ["x"], ["a"]),
                       helper.make_node("Sqrt", ["a"], ["r"]), helper.make_node("LeakyRelu", ["x"], ["l"], alpha=0.25),
                       helper.make_node("Mul", ["t", "s"], ["ts"]),
                       helper.make_node("Add", ["ts", "r"], ["tsr"]), helper.make_node("Add", ["tsr", "l"], ["u"]),
                       helper.make_node("Div", ["u", "e"], ["y"])],
      xm, (np.tanh(xm) / (1 + np.exp(-xm)) + np.sqrt(np.abs(xm)) + np.where(xm > 0, xm, 0.25 * xm)) / np.exp(xm),
      tolerance=(1e-13, 0))

# int64: beyond 2^53 (where a double would round), negative operands, products that
# wrap (two's complement, as numpy's int64 arrays and our C do). Div truncates
# toward zero (C, and ONNX's reference: numpy's true division cast back to the integer
# type); numpy's // floors, so the reference is built from the magnitudes.
big = 2 ** 60 + 3
xi = np.array([[big, -big, 7, -7], [-(2 ** 62), 9, -9, 2 ** 40 + 1]], dtype=np.int64)
bi = np.array([[2, 2, -2, -2], [3, -4, 4, -(2 ** 20) - 1]], dtype=np.int64)
trunc_div = lambda a, d: np.sign(a) * np.sign(d) * (np.abs(a) // np.abs(d))
write("int64_div_truncates", [helper.make_node("Div", ["x", "b"], ["y"])], xi, trunc_div(xi, bi), [("b", bi)])
ci = np.array([5, -(2 ** 55), 2 ** 33, -1], dtype=np.int64)
write("int64_arithmetic", [helper.make_node("Mul", ["x", "c"], ["t0"]), helper.make_node("Sub", ["t0", "x"], ["t1"]),
                           helper.make_node("Max", ["t1", "c"], ["t2"]), helper.make_node("Min", ["t2", "x"], ["t3"]),
                           helper.make_node("Neg", ["t3"], ["t4"]), helper.make_node("Abs", ["t4"], ["t5"]),
                           helper.make_node("Relu", ["t4"], ["t6"]), helper.make_node("Add", ["t5", "t6"], ["y"])],
      xi, (lambda t: np.abs(-t) + np.maximum(-t, 0))(np.minimum(np.maximum(xi * ci - xi, ci), xi)), [("c", ci)],
      opset=14)  # Relu takes integers from opset 14
