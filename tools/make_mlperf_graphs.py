#!/usr/bin/env python3
"""Writes JSON graphs with the layer shapes of the four MLPerf Tiny models (float32,
deterministic random weights, batch norm already folded into conv biases) for the
benchmarks: DS-CNN keyword spotting, MobileNetV1-0.25 visual wake words, ResNet-8 image
classification and the fully connected autoencoder. Standard library only.

usage: python3 tools/make_mlperf_graphs.py OUT_DIR
Writes OUT_DIR/<model>/<model>.json, its weights as .npy, and input.npy; prints each
model's multiply-accumulate count (conv2d and dense).
"""
import json
import os
import random
import struct
import sys


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


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
        if pad is None:  # TensorFlow's "same"
            oh, ow = -(-h // stride), -(-w // stride)
            ph, pw = max((oh - 1) * stride + kh - h, 0), max((ow - 1) * stride + kw - w, 0)
            pad = [ph // 2, pw // 2, ph - ph // 2, pw - pw // 2]
        oh = (h + pad[0] + pad[2] - kh) // stride + 1
        ow = (w + pad[1] + pad[3] - kw) // stride + 1
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

    def head(self, x, classes):
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


def ds_cnn():
    m = Model("ds_cnn", [1, 1, 49, 10], 1)
    x = m.conv("conv1", "x", 64, (10, 4), stride=2)
    for i in range(4):
        x = m.conv(f"dw{i}", x, 64, (3, 3), groups=64)
        x = m.conv(f"pw{i}", x, 64, (1, 1))
    m.head(x, 12)
    return m


def mobilenet_v1_025():
    m = Model("mobilenet_v1_025", [1, 3, 96, 96], 2)
    x = m.conv("conv1", "x", 8, (3, 3), stride=2)
    blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)] + [(128, 1)] * 5 + [(256, 2), (256, 1)]
    for i, (ch, stride) in enumerate(blocks):
        c = m.shape[x][1]
        x = m.conv(f"dw{i}", x, c, (3, 3), stride=stride, groups=c)
        x = m.conv(f"pw{i}", x, ch, (1, 1))
    m.head(x, 2)
    return m


def resnet8():
    m = Model("resnet8", [1, 3, 32, 32], 3)
    x = m.conv("conv1", "x", 16, (3, 3))
    for stage, ch in enumerate([16, 32, 64]):
        stride = 1 if stage == 0 else 2
        a = m.conv(f"s{stage}a", x, ch, (3, 3), stride=stride)
        b = m.conv(f"s{stage}b", a, ch, (3, 3), relu=False)
        short = x if stage == 0 else m.conv(f"s{stage}short", x, ch, (1, 1), stride=2, relu=False)
        s = m.node(f"s{stage}add", "add", [b, short], m.shape[b])
        x = m.node(f"s{stage}relu", "relu", [s], m.shape[b])
    m.head(x, 10)
    return m


def fc_autoencoder():
    m = Model("fc_autoencoder", [1, 640], 4)
    x = "x"
    for i, units in enumerate([128, 128, 128, 128, 8, 128, 128, 128, 128]):
        x = m.dense(f"fc{i}", x, units, relu=True)
    m.dense("out", x, 640)
    return m


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    for make in [ds_cnn, mobilenet_v1_025, resnet8, fc_autoencoder]:
        m = make()
        m.write(sys.argv[1])
        print(f"{m.name} {m.macs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
