#!/usr/bin/env python3
"""Quantizes the bundled digits model (models/digits/) to a QDQ ONNX model:
models/digits/digits_qdq.onnx, as onnxruntime's static quantizer would write it.

- batch_norm is folded into conv1 (float), then every Conv and the Gemm get int8
  weights, symmetric, one scale per output channel (|w| max / 127), and int32 biases of
  scale x_scale * w_scale (float32), zero point 0;
- activations are uint8, asymmetric: a min/max calibration (the range always includes
  0) over the training images — scikit-learn's 8x8 digits minus the 360 held out, the
  split tools/train_digits.py trains on — scale = (max - min) / 255, zero point
  round(-min / scale);
- the graph: x -> Q -> DQ -> Conv -> Relu -> Q -> DQ -> MaxPool -> Q -> DQ -> Conv ->
  Relu -> Q -> DQ -> MaxPool -> Q -> DQ -> Flatten -> Q -> DQ -> Gemm -> Q -> DQ ->
  Softmax (float probabilities out, input x float as in digits.onnx).

Prints the float model's and the quantized model's accuracy on the 100 test images
(models/digits/test_images.npy), the quantized one with ONNX's integer arithmetic in
numpy; bench/onnx_qdq_digits.sh measures the compiled models themselves.
Needs Debian's python3-onnx, python3-numpy and python3-sklearn:
    /usr/bin/python3 tools/quantize_digits_qdq.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "models", "digits")
SEED = 20261123  # tools/train_digits.py's split
BN_EPS = 1e-5
f32 = np.float32


def load(name):
    return np.load(os.path.join(MODEL, "weights", name + ".npy")).astype(np.float64)


def training_images():
    digits = load_digits()
    x_all = (digits.images / 16.0).astype(f32)[:, None, :, :]
    perm = np.random.default_rng(SEED).permutation(len(x_all))
    return x_all[perm[360:]]


def conv3x3(x, w, b):
    """NCHW, padding 1, stride 1."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd), x.dtype)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def maxpool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def float_layers(p, x):
    """The float model's activations (float64), by the name of the tensor quantized."""
    a = {"x": x}
    a["relu1"] = np.maximum(conv3x3(x, p["w1"], p["b1"]), 0)
    a["relu2"] = np.maximum(conv3x3(maxpool2(a["relu1"]), p["w2"], p["b2"]), 0)
    a["fc"] = maxpool2(a["relu2"]).reshape(len(x), -1) @ p["fc_w"].T + p["fc_b"]
    return a


def activation_params(values):
    lo, hi = min(float(values.min()), 0.0), max(float(values.max()), 0.0)
    scale = f32((hi - lo) / 255.0) if hi > lo else f32(1.0)
    return scale, np.uint8(np.clip(np.rint(-lo / scale), 0, 255))


def weight_params(w):
    """int8 symmetric per output channel (axis 0)."""
    flat = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    scale = np.where(flat > 0, flat / 127.0, 1.0).astype(f32)
    q = np.clip(np.rint(w / scale.reshape((-1,) + (1,) * (w.ndim - 1))), -127, 127).astype(np.int8)
    return q, scale


def quantize(x, s, z):
    return np.clip(np.rint(x.astype(f32) / f32(s)) + int(z), 0, 255).astype(np.int64)


def requantize(acc, xs, ws, ys, yz, relu):
    m = (f32(xs) * ws.astype(f32)) / f32(ys)
    y = np.rint(acc * m.astype(np.float64)) + int(yz)
    return np.clip(y, int(yz) if relu else 0, 255).astype(np.int64)


def main():
    p = {"w2": load("conv2_w"), "b2": load("conv2_b"), "fc_w": load("fc_w"), "fc_b": load("fc_b")}
    k = load("bn1_gamma") / np.sqrt(load("bn1_var") + BN_EPS)
    p["w1"] = load("conv1_w") * k.reshape(-1, 1, 1, 1)
    p["b1"] = load("bn1_beta") - load("bn1_mean") * k
    calib = float_layers(p, training_images().astype(np.float64))
    act = {name: activation_params(v) for name, v in calib.items()}
    print("calibrated on %d training images" % len(calib["x"]))

    nodes, inits = [], []

    def init(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def q(x, out, params):
        nodes.append(helper.make_node("QuantizeLinear", [x, init(out + "_scale", params[0]),
                                                         init(out + "_zero_point", params[1])], [out]))
        return out

    def dq(x, out, scale, zero_point, axis=None):
        kw = {} if axis is None else {"axis": axis}
        nodes.append(helper.make_node("DequantizeLinear", [x, init(out + "_scale", scale),
                                                           init(out + "_zero_point", zero_point)], [out], **kw))
        return out

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    qw = {}

    def weighted(op, x_name, x_params, w_name, w, b, out, **attrs):
        wq, ws = weight_params(w)
        bs = (f32(x_params[0]) * ws).astype(f32)
        bq = np.rint(b / bs.astype(np.float64)).astype(np.int32)
        qw[w_name] = (wq, ws, bq)
        wd = dq(init(w_name + "_quantized", wq), w_name, ws, np.zeros(len(ws), np.int8), axis=0)
        bd = dq(init(w_name + "_bias_quantized", bq), w_name + "_bias", bs, np.zeros(len(ws), np.int32), axis=0)
        return node(op, [x_name, wd, bd], out, **attrs)

    xd = dq(q("x", "x_quantized", act["x"]), "x_dequantized", *act["x"])
    c1 = weighted("Conv", xd, act["x"], "conv1_w", p["w1"], p["b1"], "conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    r1 = dq(q(node("Relu", [c1], "relu1"), "relu1_quantized", act["relu1"]), "relu1_dequantized", *act["relu1"])
    p1 = dq(q(node("MaxPool", [r1], "pool1", kernel_shape=[2, 2], strides=[2, 2]), "pool1_quantized", act["relu1"]),
            "pool1_dequantized", *act["relu1"])
    c2 = weighted("Conv", p1, act["relu1"], "conv2_w", p["w2"], p["b2"], "conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    r2 = dq(q(node("Relu", [c2], "relu2"), "relu2_quantized", act["relu2"]), "relu2_dequantized", *act["relu2"])
    p2 = dq(q(node("MaxPool", [r2], "pool2", kernel_shape=[2, 2], strides=[2, 2]), "pool2_quantized", act["relu2"]),
            "pool2_dequantized", *act["relu2"])
    fl = dq(q(node("Flatten", [p2], "flat"), "flat_quantized", act["relu2"]), "flat_dequantized", *act["relu2"])
    fc = weighted("Gemm", fl, act["relu2"], "fc_w", p["fc_w"], p["fc_b"], "fc", transB=1)
    fd = dq(q(fc, "fc_quantized", act["fc"]), "fc_dequantized", *act["fc"])
    node("Softmax", [fd], "probs", axis=1)

    graph = helper.make_graph(nodes, "digits_qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="microtir tools/quantize_digits_qdq.py")
    model.ir_version = 7
    onnx.checker.check_model(model)
    path = os.path.join(MODEL, "digits_qdq.onnx")
    onnx.save(model, path)
    print("wrote", os.path.normpath(path))

    # Accuracy on the held-out test images: float, and the integers the QDQ model means.
    x = np.load(os.path.join(MODEL, "test_images.npy"))
    labels = np.load(os.path.join(MODEL, "test_labels.npy"))
    float_pred = float_layers(p, x.astype(np.float64))["fc"].argmax(axis=1)
    xs, xz = act["x"]
    a = quantize(x, xs, xz)
    for name, prev, nxt in (("conv1_w", "x", "relu1"), ("conv2_w", "relu1", "relu2")):
        wq, ws, bq = qw[name]
        acc = conv3x3((a - int(act[prev][1])).astype(np.float64), wq.astype(np.float64), bq.astype(np.float64))
        a = maxpool2(requantize(acc, act[prev][0], ws.reshape(1, -1, 1, 1), act[nxt][0], act[nxt][1], True))
    wq, ws, bq = qw["fc_w"]
    acc = (a.reshape(len(x), -1) - int(act["relu2"][1])) @ wq.astype(np.int64).T + bq
    q_pred = requantize(acc, act["relu2"][0], ws.reshape(1, -1), act["fc"][0], act["fc"][1], False).argmax(axis=1)
    print("test accuracy (%d images): float %.2f, QDQ int8 %.2f" %
          (len(labels), (float_pred == labels).mean(), (q_pred == labels).mean()))


if __name__ == "__main__":
    main()
