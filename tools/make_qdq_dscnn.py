#!/usr/bin/env python3
"""Writes the MLPerf Tiny keyword-spotting DS-CNN shape (the layers of tools/make_mlperf_graphs.py's
ds_cnn: conv 10x4 stride 2 to 64 channels, four depthwise 3x3 + pointwise 1x1 blocks, average
pool over the 25x5 map, dense to 12, softmax) as two ONNX models with the same weights:

- OUT_DIR/ds_cnn_float.onnx: float32 Conv/Relu/AveragePool/Gemm/Softmax;
- OUT_DIR/ds_cnn_qdq.onnx: the same graph quantized as onnxruntime's static quantizer writes
  it (QDQ): int8 weights with one scale per output channel, int32 biases of scale
  x_scale * w_scale, int8 activations calibrated min/max on a few random inputs
  (scale = (max - min) / 255, the range always including 0; the pool keeps its input's),
  QuantizeLinear / DequantizeLinear around every Conv, the pool, the Gemm; float input
  and output (the Softmax stays float).
- OUT_DIR/input.npy: one float input [1, 1, 49, 10].

The float weights are the dequantized int8 ones, so both models compute the same function up
to quantization. Weights are deterministic random numbers (no trained model: the benchmark
counts instructions and bytes, which do not depend on the values). 2,656,768 MACs.
bench/onnx_qdq_digits.sh runs this and measures both on Cortex-M4.
Needs Debian's python3-onnx and numpy:  /usr/bin/python3 tools/make_qdq_dscnn.py OUT_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

f32 = np.float32
rng = np.random.default_rng(2656768)

# (name, out channels, kernel, stride, groups, pads [t, l, b, r]); TensorFlow "same" padding.
LAYERS = [("conv1", 64, (10, 4), 2, 1, [4, 1, 5, 1])]
for i in range(4):
    LAYERS += [(f"dw{i}", 64, (3, 3), 1, 64, [1, 1, 1, 1]), (f"pw{i}", 64, (1, 1), 1, 1, [0, 0, 0, 0])]
CLASSES = 12


def conv(x, w, b, stride, groups, pads):
    """Float NCHW convolution (float64 for the calibration)."""
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def activation_params(v):
    lo, hi = min(float(v.min()), 0.0), max(float(v.max()), 0.0)
    scale = f32((hi - lo) / 255.0) if hi > lo else f32(1.0)
    return scale, np.int8(np.clip(np.rint(-128 - lo / scale), -128, 127))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    calib = rng.standard_normal((4, 1, 49, 10))
    # Weights: int8, per-output-channel scales; biases as float and as int32 of the activations'
    # scale times the weight scale (set once the input scale of the layer is known).
    params, x, c = [], calib, 1
    act = [activation_params(calib)]
    for name, o, (kh, kw), stride, groups, pads in LAYERS:
        cg = c // groups
        wq = rng.integers(-127, 128, size=(o, cg, kh, kw)).astype(np.int8)
        ws = (rng.uniform(0.5, 1.5, size=o) / np.sqrt(cg * kh * kw) / 64).astype(f32)
        wf = wq.astype(f32) * ws.reshape(-1, 1, 1, 1)
        bq = (rng.standard_normal(o) * 0.1 / (act[-1][0] * ws)).astype(np.int32)
        bf = (bq.astype(f32) * (act[-1][0] * ws)).astype(f32)
        x = np.maximum(conv(x, wf.astype(np.float64), bf.astype(np.float64), stride, groups, pads), 0)
        params.append((wq, ws, bq, wf, bf))
        act.append(activation_params(x))
        c = o
    pooled = x.mean(axis=(2, 3))
    # The pool keeps its input's scale and zero point (as onnxruntime's quantizer writes
    # AveragePool), so it folds to the integer mean.
    pool = act[-1]
    fq = rng.integers(-127, 128, size=(CLASSES, c)).astype(np.int8)
    fs = (rng.uniform(0.5, 1.5, size=CLASSES) / np.sqrt(c) / 16).astype(f32)
    fb = (rng.standard_normal(CLASSES) * 0.1 / (pool[0] * fs)).astype(np.int32)
    logits = pooled @ (fq.astype(np.float64) * fs.reshape(-1, 1)).T
    act.append(activation_params(logits))

    for quantized in (False, True):
        nodes, inits = [], []

        def init(name, value):
            inits.append(numpy_helper.from_array(np.asarray(value), name))
            return name

        def node(op, ins, name, **attrs):
            nodes.append(helper.make_node(op, ins, [name], **attrs))
            return name

        def qdq(x, name, sz):
            """x -> QuantizeLinear -> DequantizeLinear (a quantized float tensor)."""
            s, z = sz
            q = node("QuantizeLinear", [x, init(name + "_s", s), init(name + "_z", z)], name + "_q")
            return node("DequantizeLinear", [q, name + "_s", name + "_z"], name + "_dq")

        def weight(name, wq, ws, wf, x_scale, bq, bf):
            if not quantized:
                return [init(name + "_w", wf), init(name + "_b", bf)]
            zw = np.zeros(len(ws), np.int8)
            w = node("DequantizeLinear", [init(name + "_wq", wq), init(name + "_ws", ws), init(name + "_wz", zw)],
                     name + "_w", axis=0)
            b = node("DequantizeLinear", [init(name + "_bq", bq), init(name + "_bs", (x_scale * ws).astype(f32)),
                                          init(name + "_bz", np.zeros(len(ws), np.int32))], name + "_b", axis=0)
            return [w, b]

        x = qdq("x", "x", act[0]) if quantized else "x"
        for k, (name, o, (kh, kw), stride, groups, pads) in enumerate(LAYERS):
            wq, ws, bq, wf, bf = params[k]
            y = node("Conv", [x] + weight(name, wq, ws, wf, act[k][0], bq, bf), name, kernel_shape=[kh, kw],
                     strides=[stride, stride], pads=pads, group=groups)
            x = node("Relu", [y], name + "_relu")
            if quantized:
                x = qdq(x, name + "_out", act[k + 1])
        x = node("AveragePool", [x], "pool", kernel_shape=[25, 5])
        if quantized:
            x = qdq(x, "pool_out", pool)
        x = node("Flatten", [x], "flat")
        if quantized:
            x = qdq(x, "flat_out", pool)  # the same scale: Flatten runs on the int8 tensor
        fwf = (fq.astype(f32) * fs.reshape(-1, 1)).astype(f32)
        fbf = (fb.astype(f32) * pool[0] * fs).astype(f32)
        x = node("Gemm", [x] + weight("fc", fq, fs, fwf, pool[0], fb, fbf), "fc", transB=1)
        if quantized:
            x = qdq(x, "fc_out", act[-1])
        node("Softmax", [x], "y", axis=1)
        name = "ds_cnn_qdq" if quantized else "ds_cnn_float"
        graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 49, 10])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, CLASSES])], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                  producer_name="microtir tools/make_qdq_dscnn.py")
        model.ir_version = 7
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(model.SerializeToString())
    np.save(os.path.join(out, "input.npy"), rng.standard_normal((1, 1, 49, 10)).astype(f32))


if __name__ == "__main__":
    main()
