#!/usr/bin/env python3
"""Writes JSON graphs with the layer shapes of the four MLPerf Tiny models (float32,
deterministic random weights, batch norm already folded into conv biases) for the
benchmarks: DS-CNN keyword spotting, MobileNetV1-0.25 visual wake words, ResNet-8 image
classification and the fully connected autoencoder. Standard library only.

With --int8 the same layer shapes are written as int8 graphs (QModel below): NHWC data,
OHWI weights, per-tensor and per-channel weight scales, int32 biases, qadd residuals,
qavg_pool2d / qglobal_avg_pool2d, reshape for flatten and qsoftmax heads.

usage: python3 tools/make_mlperf_graphs.py [--int8] OUT_DIR
Writes OUT_DIR/<model>/<model>.json, its weights as .npy, and input.npy; prints each
model's multiply-accumulate count (conv2d and dense).
"""
import json
import os
import random
import struct
import sys


NPY_TYPES = {"float32": ("<f4", "f"), "int8": ("|i1", "b"), "int32": ("<i4", "i")}


def write_npy(path, shape, values, dtype="float32"):
    descr, code = NPY_TYPES[dtype]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr,
        ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def conv_geometry(h, w, kh, kw, stride, pad):
    """Padding [t, l, b, r] (TensorFlow's "same" when pad is None) and the output size."""
    if pad is None:
        oh, ow = -(-h // stride), -(-w // stride)
        ph, pw = max((oh - 1) * stride + kh - h, 0), max((ow - 1) * stride + kw - w, 0)
        pad = [ph // 2, pw // 2, ph - ph // 2, pw - pw // 2]
    return pad, (h + pad[0] + pad[2] - kh) // stride + 1, (w + pad[1] + pad[3] - kw) // stride + 1


class Model:
    def __init__(self, name, input_shape, seed):
        self.name, self.rng = name, random.Random(seed)
        self.nodes, self.constants, self.macs = [], {}, 0
        self.shape = {"x": list(input_shape)}
        self.input_shape = list(input_shape)
        self.last = "x"

    def const(self, name, shape, scale):
        n = 1
        for d in shape:
            n *= d
        self.constants[name] = (shape, [self.rng.uniform(-scale, scale) for _ in range(n)])
        return name

    def node(self, name, op, inputs, shape, attrs=None):
        self.nodes.append({"name": name, "op": op, "inputs": inputs, **({"attrs": attrs} if attrs else {})})
        self.shape[name] = shape
        self.last = name
        return name

    def conv(self, name, x, out_ch, k, stride=1, pad=None, groups=1, relu=True):
        n, c, h, w = self.shape[x]
        kh, kw = k
        pad, oh, ow = conv_geometry(h, w, kh, kw, stride, pad)
        fan_in = (c // groups) * kh * kw
        wgt = self.const(name + "_w", [out_ch, c // groups, kh, kw], (2.0 / fan_in) ** 0.5)
        bias = self.const(name + "_b", [out_ch], 0.05)
        self.macs += n * out_ch * oh * ow * fan_in
        y = self.node(name, "conv2d", [x, wgt, bias], [n, out_ch, oh, ow],
                      {"strides": [stride, stride], "padding": pad, "groups": groups})
        return self.node(name + "_relu", "relu", [y], [n, out_ch, oh, ow]) if relu else y

    def dense(self, name, x, units, relu=False):
        n, k = self.shape[x]
        wgt = self.const(name + "_w", [units, k], (2.0 / k) ** 0.5)
        bias = self.const(name + "_b", [units], 0.05)
        self.macs += n * units * k
        y = self.node(name, "dense", [x, wgt, bias], [n, units])
        return self.node(name + "_relu", "relu", [y], [n, units]) if relu else y

    def channels(self, x):
        return self.shape[x][1]

    def add_relu(self, name, a, b):
        s = self.node(name + "add", "add", [a, b], self.shape[a])
        return self.node(name + "relu", "relu", [s], self.shape[a])

    def head(self, x, classes, window_pool=False):  # window_pool: the int8 graphs only
        n, c, h, w = self.shape[x]
        p = self.node("pool", "global_avg_pool2d", [x], [n, c, 1, 1])
        f = self.node("flat", "flatten", [p], [n, c])
        logits = self.dense("fc", f, classes)
        return self.node("probs", "softmax", [logits], [n, classes])

    def write(self, out):
        d = os.path.join(out, self.name)
        os.makedirs(d, exist_ok=True)
        for name, (shape, values) in self.constants.items():
            write_npy(os.path.join(d, name + ".npy"), shape, values)
        n = 1
        for s in self.input_shape:
            n *= s
        write_npy(os.path.join(d, "input.npy"), self.input_shape, [self.rng.uniform(0, 1) for _ in range(n)])
        graph = {"format": "microtir-graph", "version": 1, "name": self.name,
                 "description": "MLPerf Tiny layer shapes, random weights (tools/make_mlperf_graphs.py)",
                 "inputs": [{"name": "x", "shape": self.input_shape, "dtype": "float32"}],
                 "constants": [{"name": k, "file": k + ".npy"} for k in self.constants],
                 "nodes": self.nodes, "outputs": [self.last]}
        with open(os.path.join(d, self.name + ".json"), "w") as f:
            json.dump(graph, f, indent=1)


class QModel(Model):
    """The int8 twin of Model, driven by the same layer calls (NHWC data, OHWI weights).
    Each tensor carries (scale, zero point, rms), rms estimating the RMS of q - zero_point.
    A layer's requantization multiplier is chosen from the fan-in so the accumulator's
    spread lands on TARGET output steps (TARGET_RELU before a ReLU, whose zero point sits
    at the bottom of the range), and the weight scales are derived from that multiplier:
    no layer saturates wholesale and none collapses onto a few values."""
    SIGMA_W = 127 / 3 ** 0.5  # RMS of a weight drawn uniformly from [-127, 127]
    TARGET, TARGET_RELU = 40.0, 48.0

    def __init__(self, name, input_shape, seed):
        n, *rest = input_shape
        nhwc = [n, *rest[1:], rest[0]] if len(rest) == 3 else list(input_shape)
        super().__init__(name, nhwc, seed + 1000)
        # MobileNetV1 is trained with ReLU6; the others with ReLU.
        self.relu = "relu6" if name.startswith("mobilenet") else "relu"
        # The input: [0, 1) features at scale 1/255, zero point -128 (uniform codes: rms ~147).
        self.q = {"x": (1 / 255, -128, 147.0)}
        self.layers = 0

    def channels(self, x):
        return self.shape[x][-1]

    def qconst(self, name, shape, values, dtype):
        self.constants[name] = (shape, values, dtype)
        return name

    def requant(self, name, x, channels, fan_in, act):
        """The quantization attributes of a conv/dense layer, its int32 bias, and the
        output's (scale, zero point, rms)."""
        sx, zx, rms = self.q[x]
        acc = fan_in ** 0.5 * rms * self.SIGMA_W  # accumulator RMS for zero-mean weights
        target = self.TARGET if act == "none" else self.TARGET_RELU
        if act == "relu6":
            so, zo = 6 / 200, -128  # the ReLU6 ceiling lands at code 72
        elif act == "relu":
            so, zo = self.rng.uniform(0.02, 0.1), -128 + self.rng.randint(0, 12)
        else:
            so, zo = self.rng.uniform(0.02, 0.1), self.rng.randint(-12, 12)
        m = target / acc
        self.layers += 1
        if self.layers % 3:  # two layers in three per-channel, the rest per-tensor
            ws = [m * self.rng.uniform(0.7, 1.3) * so / sx for _ in range(channels)]
        else:
            ws = m * so / sx
        bias = self.qconst(name + "_b", [channels],
                           [round(self.rng.gauss(0, 0.3 * acc)) for _ in range(channels)], "int32")
        self.q[name] = (so, zo, target / 2 ** 0.5 if act != "none" else target)
        attrs = {"input_scale": sx, "input_zero_point": zx, "weight_scale": ws,
                 "output_scale": so, "output_zero_point": zo, "activation": act}
        return attrs, bias

    def weights(self, name, shape):
        n = 1
        for d in shape:
            n *= d
        return self.qconst(name, shape, [self.rng.randint(-127, 127) for _ in range(n)], "int8")

    def conv(self, name, x, out_ch, k, stride=1, pad=None, groups=1, relu=True):
        n, h, w, c = self.shape[x]
        kh, kw = k
        pad, oh, ow = conv_geometry(h, w, kh, kw, stride, pad)
        fan_in = (c // groups) * kh * kw
        wgt = self.weights(name + "_w", [out_ch, kh, kw, c // groups])
        attrs, bias = self.requant(name, x, out_ch, fan_in, self.relu if relu else "none")
        self.macs += n * out_ch * oh * ow * fan_in
        attrs.update({"strides": [stride, stride], "padding": pad, "groups": groups})
        return self.node(name, "qconv2d", [x, wgt, bias], [n, oh, ow, out_ch], attrs)

    def dense(self, name, x, units, relu=False):
        n, k = self.shape[x]
        wgt = self.weights(name + "_w", [units, k])
        attrs, bias = self.requant(name, x, units, k, "relu" if relu else "none")
        self.macs += n * units * k
        return self.node(name, "qdense", [x, wgt, bias], [n, units], attrs)

    def add_relu(self, name, a, b):
        (sa, za, ra), (sb, zb, rb) = self.q[a], self.q[b]
        so = ((sa * ra) ** 2 + (sb * rb) ** 2) ** 0.5 / self.TARGET_RELU
        zo = -128 + self.rng.randint(0, 12)
        self.q[name + "add"] = (so, zo, self.TARGET_RELU / 2 ** 0.5)
        return self.node(name + "add", "qadd", [a, b], self.shape[a],
                         {"a_scale": sa, "a_zero_point": za, "b_scale": sb, "b_zero_point": zb,
                          "output_scale": so, "output_zero_point": zo, "activation": "relu"})

    def head(self, x, classes, window_pool=False):
        n, h, w, c = self.shape[x]
        if window_pool:
            p = self.node("pool", "qavg_pool2d", [x], [n, 1, 1, c], {"pool_size": [h, w]})
        else:
            p = self.node("pool", "qglobal_avg_pool2d", [x], [n, 1, 1, c])
        sx, zx, rms = self.q[x]
        self.q[p] = self.q["flat"] = (sx, zx, rms * 0.7)  # the mean of a ReLU output, roughly
        f = self.node("flat", "reshape", [p], [n, c], {"newshape": [n, c]})
        logits = self.dense("fc", f, classes)
        return self.node("probs", "qsoftmax", [logits], [n, classes],
                         {"input_scale": self.q[logits][0], "output_scale": 1 / 256, "output_zero_point": -128})

    def write(self, out):
        d = os.path.join(out, self.name)
        os.makedirs(d, exist_ok=True)
        for name, (shape, values, dtype) in self.constants.items():
            write_npy(os.path.join(d, name + ".npy"), shape, values, dtype)
        n = 1
        for s in self.input_shape:
            n *= s
        write_npy(os.path.join(d, "input.npy"), self.input_shape,
                  [self.rng.randint(-128, 127) for _ in range(n)], "int8")
        graph = {"format": "microtir-graph", "version": 1, "name": self.name,
                 "description": "MLPerf Tiny layer shapes, int8, random weights and quantization "
                                "(tools/make_mlperf_graphs.py --int8)",
                 "inputs": [{"name": "x", "shape": self.input_shape, "dtype": "int8"}],
                 "constants": [{"name": k, "file": k + ".npy"} for k in self.constants],
                 "nodes": self.nodes, "outputs": [self.last]}
        with open(os.path.join(d, self.name + ".json"), "w") as f:
            json.dump(graph, f, indent=1)


def ds_cnn(cls=Model):
    m = cls("ds_cnn", [1, 1, 49, 10], 1)
    x = m.conv("conv1", "x", 64, (10, 4), stride=2)
    for i in range(4):
        x = m.conv(f"dw{i}", x, 64, (3, 3), groups=64)
        x = m.conv(f"pw{i}", x, 64, (1, 1))
    m.head(x, 12, window_pool=True)  # MLPerf's DS-CNN: AveragePooling2D over the whole 25x5 map
    return m


def mobilenet_v1_025(cls=Model):
    m = cls("mobilenet_v1_025", [1, 3, 96, 96], 2)
    x = m.conv("conv1", "x", 8, (3, 3), stride=2)
    blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)] + [(128, 1)] * 5 + [(256, 2), (256, 1)]
    for i, (ch, stride) in enumerate(blocks):
        c = m.channels(x)
        x = m.conv(f"dw{i}", x, c, (3, 3), stride=stride, groups=c)
        x = m.conv(f"pw{i}", x, ch, (1, 1))
    m.head(x, 2)
    return m


def resnet8(cls=Model):
    m = cls("resnet8", [1, 3, 32, 32], 3)
    x = m.conv("conv1", "x", 16, (3, 3))
    for stage, ch in enumerate([16, 32, 64]):
        stride = 1 if stage == 0 else 2
        a = m.conv(f"s{stage}a", x, ch, (3, 3), stride=stride)
        b = m.conv(f"s{stage}b", a, ch, (3, 3), relu=False)
        short = x if stage == 0 else m.conv(f"s{stage}short", x, ch, (1, 1), stride=2, relu=False)
        x = m.add_relu(f"s{stage}", b, short)
    m.head(x, 10)
    return m


def fc_autoencoder(cls=Model):
    m = cls("fc_autoencoder", [1, 640], 4)
    x = "x"
    for i, units in enumerate([128, 128, 128, 128, 8, 128, 128, 128, 128]):
        x = m.dense(f"fc{i}", x, units, relu=True)
    m.dense("out", x, 640)
    return m


MODELS = [ds_cnn, mobilenet_v1_025, resnet8, fc_autoencoder]


def main():
    args = sys.argv[1:]
    int8 = "--int8" in args
    args = [a for a in args if a != "--int8"]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    cls = QModel if int8 else Model
    for make in MODELS:
        m = make(cls)
        m.write(args[0])
        print(f"{m.name} {m.macs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
