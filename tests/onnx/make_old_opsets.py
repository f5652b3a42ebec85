#!/usr/bin/env python3
"""Regenerates tests/onnx/old_opsets/: one small model per form that opsets 1-6 (and the
Upsample of 7 and 9) write for an operator we support, as older exporters wrote them, with
an input x.npy and the output y.npy that numpy computes for it here (an independent
reference: no ONNX runtime). tests/e2e/onnx_test.sh (group old_opsets) runs each model on
the host and compares. Also writes refused forms (*.onnx with a *.expect of the message).
Needs Debian's python3-onnx and numpy. Run from this directory:
/usr/bin/python3 make_old_opsets.py"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUT = "old_opsets"
os.makedirs(OUT, exist_ok=True)
for f in os.listdir(OUT):
    os.remove(os.path.join(OUT, f))
F = TensorProto.FLOAT
rng = np.random.default_rng(24)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def write(name, node, x, y, inits=(), opset=6, expect=None, refused_shape=None):
    """One node from input 'x' to output 'y'; y is numpy's answer (None for a refusal, whose
    output has refused_shape, or x's shape)."""
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in inits]
    out_shape = list(y.shape) if y is not None else (refused_shape or list(x.shape))
    # IR 3 lists every initializer among the graph inputs too, as those exporters did.
    inputs = [helper.make_tensor_value_info("x", F, list(x.shape))]
    inputs += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in inits]
    g = helper.make_graph([node], name, inputs, [helper.make_tensor_value_info("y", F, out_shape)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 3  # what the exporters of opsets 1-6 wrote
    with open("%s/%s.onnx" % (OUT, name), "wb") as f:
        f.write(m.SerializeToString())
    np.save("%s/%s.x.npy" % (OUT, name), x)
    if y is not None:
        np.save("%s/%s.y.npy" % (OUT, name), y.astype(np.float32))
    if expect is not None:
        with open("%s/%s.expect" % (OUT, name), "w") as f:
            f.write(expect + "\n")


# Legacy broadcasting (opsets 1-6): B's shape matches A's dims from `axis` on.
x = rand(2, 3, 4, 5)
b = rand(3, 4)
write("add_broadcast_axis1_6", helper.make_node("Add", ["x", "b"], ["y"], broadcast=1, axis=1), x,
      x + b.reshape(1, 3, 4, 1), [("b", b)])
b = rand(3)
write("mul_broadcast_axis1_1", helper.make_node("Mul", ["x", "b"], ["y"], broadcast=1, axis=1, consumed_inputs=[0, 0]),
      x, x * b.reshape(1, 3, 1, 1), [("b", b)], opset=1)
b = rand(4, 5)  # no axis: B is a suffix of A
write("sub_broadcast_suffix_6", helper.make_node("Sub", ["x", "b"], ["y"], broadcast=1), x, x - b, [("b", b)])
b = rand(2, 3, 4, 5) + 3.0
write("div_same_shape_6", helper.make_node("Div", ["x", "b"], ["y"]), x, x / b, [("b", b)])
b = np.array(2.5, dtype=np.float32)  # a scalar B (the bias-free exporters' constant)
write("div_broadcast_scalar_6", helper.make_node("Div", ["x", "b"], ["y"], broadcast=1), x, x / b, [("b", b)])

# Gemm with broadcast = 1: C of shape (N,) broadcast over the rows.
a = rand(3, 4)
w = rand(5, 4)
c = rand(5)
write("gemm_broadcast_6", helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, broadcast=1, alpha=0.5, beta=2.0),
      a, 0.5 * a @ w.T + 2.0 * c, [("w", w), ("c", c)])

# BatchNormalization in inference mode (is_test = 1), spatial and per activation.
x = rand(2, 3, 4, 4)
scale, bias, mean = rand(3), rand(3), rand(3)
var = np.abs(rand(3)) + 0.5
bn = lambda m, v, s, bb, eps: (x - m) / np.sqrt(v + eps) * s + bb
sh = lambda v: v.reshape(1, 3, 1, 1)
write("batchnorm_is_test_1", helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], is_test=1,
                                              epsilon=1e-3, consumed_inputs=[0, 0, 0, 1, 1]),
      x, bn(sh(mean), sh(var), sh(scale), sh(bias), 1e-3), [("s", scale), ("b", bias), ("m", mean), ("v", var)], opset=1)
write("batchnorm_is_test_6", helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], is_test=1,
                                              spatial=1),
      x, bn(sh(mean), sh(var), sh(scale), sh(bias), 1e-5), [("s", scale), ("b", bias), ("m", mean), ("v", var)])
scale, bias, mean = rand(3, 4, 4), rand(3, 4, 4), rand(3, 4, 4)
var = np.abs(rand(3, 4, 4)) + 0.5
write("batchnorm_spatial0_6", helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], is_test=1,
                                               spatial=0, epsilon=1e-4),
      x, bn(mean, var, scale, bias, 1e-4), [("s", scale), ("b", bias), ("m", mean), ("v", var)])
write("batchnorm_training_6", helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"]),
      x, None, [("s", scale), ("b", bias), ("m", mean), ("v", var)],
      expect="is_test = 0 (training, the default before opset 7; this model has opset 6)")

# Dropout at inference.
write("dropout_is_test_6", helper.make_node("Dropout", ["x"], ["y"], is_test=1, ratio=0.3), x, x.copy())
write("dropout_training_6", helper.make_node("Dropout", ["x"], ["y"], ratio=0.3), x, None,
      expect="is_test = 0 (training, the default before opset 7; this model has opset 6)")

# Reshape with the shape as an attribute (opsets 1-4).
write("reshape_attribute_4", helper.make_node("Reshape", ["x"], ["y"], shape=[2, 0, -1]), x, x.reshape(2, 3, 16),
      opset=4)

# Pad's attribute forms: `paddings` (opset 1), `pads` (opsets 2-10).
x = rand(1, 2, 3, 4)
write("pad_paddings_1", helper.make_node("Pad", ["x"], ["y"], paddings=[0, 0, 1, 2, 0, 0, 2, 1], value=1.5), x,
      np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 1)], constant_values=1.5), opset=1)
write("pad_reflect_2", helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 2, 0, 0, 2, 1], mode="reflect"), x,
      np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 1)], mode="reflect"), opset=2)
write("pad_edge_2", helper.make_node("Pad", ["x"], ["y"], pads=[0, 1, 0, 0, 0, 0, 0, 3], mode="edge"), x,
      np.pad(x, [(0, 0), (1, 0), (0, 0), (0, 3)], mode="edge"), opset=2)

# Upsample, nearest: height_scale/width_scale (opset 1), scales attribute (7), input (9).
up = lambda v, s: v.repeat(s[0], 0).repeat(s[1], 1).repeat(s[2], 2).repeat(s[3], 3)
write("upsample_heightwidth_1", helper.make_node("Upsample", ["x"], ["y"], height_scale=2.0, width_scale=3.0), x,
      up(x, [1, 1, 2, 3]), opset=1)
write("upsample_scales_attribute_7", helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 2.0, 2.0, 1.0]), x,
      up(x, [1, 2, 2, 1]), opset=7)
write("upsample_scales_input_9", helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest"), x,
      up(x, [1, 1, 3, 2]), [("s", np.array([1, 1, 3, 2], dtype=np.float32))], opset=9)
write("upsample_linear_9", helper.make_node("Upsample", ["x", "s"], ["y"], mode="linear"), x, None,
      [("s", np.array([1, 1, 2, 2], dtype=np.float32))], opset=9, expect="mode 'linear' (only 'nearest' is supported)",
      refused_shape=[1, 2, 6, 8])
write("upsample_fraction_7", helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 1.5, 2.0]), x, None,
      opset=7, expect="scale 1.5 on axis 2 (only whole scales from 1 are supported)", refused_shape=[1, 2, 4, 8])
