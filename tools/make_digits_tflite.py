#!/usr/bin/env python3
"""Writes the bundled digits CNN (models/digits/) as an int8 TFLite model, in the
flatbuffer JSON of our TFLite schema (core/frontend/tflite/tflite_schema.fbs):
web/examples/digits_int8.json. The playground's build turns it into
`digits_int8.tflite` with flatc (web/build.mjs), so the page's bundled TFLite example is
a model the project makes itself.

The weights and quantization are models/digits/digits_qdq.onnx's (tools/
quantize_digits_qdq.py: batch norm folded into conv1, int8 weights per output channel,
int32 biases of scale input_scale * weight_scale), in TFLite's int8 form as TFLite's
converter writes it:
- activations int8: ONNX's uint8 values minus 128, so each zero point is 128 lower and
  every scale the same;
- NHWC data, OHWI conv filters, and the dense layer's columns in NHWC flatten order
  (ONNX flattens C, H, W);
- x int8 [1, 8, 8, 1] -> CONV_2D 3x3 SAME + RELU (8) -> MAX_POOL_2D 2x2 -> CONV_2D 3x3
  SAME + RELU (16) -> MAX_POOL_2D 2x2 -> RESHAPE [1, 64] -> FULLY_CONNECTED (10) ->
  SOFTMAX, probs int8 [1, 10] with TFLite's softmax quantization (1/256, -128).
Also web/examples/digits_int8_images.npy: the 100 test images quantized as the model's
input (TFLite's QUANTIZE: round half away from zero, then the zero point, saturated).
Deterministic: the same ONNX model gives the same files. Needs Debian's python3-onnx:
    /usr/bin/python3 tools/make_digits_tflite.py            # writes the JSON
    /usr/bin/python3 tools/make_digits_tflite.py --check    # exit 1 if it is out of date
"""
import io
import json
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DIGITS = os.path.join(ROOT, "models", "digits")
ONNX_MODEL = os.path.join(DIGITS, "digits_qdq.onnx")
OUT = os.path.join(ROOT, "web", "examples", "digits_int8.json")
# The test images (models/digits/test_images.npy) quantized as the model's input, for the
# page's pictures to click: [100, 1, 8, 8], the same bytes as NHWC [100, 8, 8, 1].
IMAGES_OUT = os.path.join(ROOT, "web", "examples", "digits_int8_images.npy")


def f32(v):
    """A Python float that is exactly the float32 `v` (JSON prints it in full)."""
    return float(np.float32(v))


class Model:
    """Tensors, buffers and operators of one subgraph, as our schema's JSON names them."""

    def __init__(self):
        self.tensors, self.buffers, self.ops, self.codes = [], [{}], [], []

    def tensor(self, name, shape, dtype, data=None, scale=None, zero_point=None, axis=0):
        t = {"name": name, "shape": list(shape), "type": dtype, "buffer": 0}
        if scale is not None:
            scales = [f32(s) for s in np.atleast_1d(scale)]
            zps = [int(z) for z in np.atleast_1d(zero_point)]
            t["quantization"] = {"scale": scales, "zero_point": zps, "quantized_dimension": axis}
        if data is not None:
            t["buffer"] = len(self.buffers)
            self.buffers.append({"data": list(np.ascontiguousarray(data).tobytes())})
        self.tensors.append(t)
        return len(self.tensors) - 1

    def op(self, code, inputs, outputs, options_type, options):
        if code not in self.codes:
            self.codes.append(code)
        self.ops.append({"opcode_index": self.codes.index(code), "inputs": inputs, "outputs": outputs,
                         "builtin_options_type": options_type, "builtin_options": options})

    def json(self, inputs, outputs, description):
        return {"version": 3, "description": description,
                "operator_codes": [{"deprecated_builtin_code": 0, "builtin_code": c, "version": 1} for c in self.codes],
                "subgraphs": [{"name": "main", "tensors": self.tensors, "inputs": inputs, "outputs": outputs,
                               "operators": self.ops}],
                "buffers": self.buffers}


def digits_int8(init):
    def act(name):
        """An activation's (scale, int8 zero point) from the ONNX uint8 quantization."""
        return f32(init[name + "_quantized_scale"]), int(init[name + "_quantized_zero_point"]) - 128

    m = Model()
    xs, xz = act("x")
    x = m.tensor("x", [1, 8, 8, 1], "INT8", scale=xs, zero_point=xz)

    def conv(name, data, data_scale, out_name, h):
        w = init[name + "_w_quantized"]                      # OIHW int8
        ws = init[name + "_w_scale"].astype(np.float32)
        o = w.shape[0]
        filt = m.tensor(name + "_w", [o, 3, 3, w.shape[1]], "INT8", w.transpose(0, 2, 3, 1),
                        ws, np.zeros(o, np.int64))
        bias = m.tensor(name + "_b", [o], "INT32", init[name + "_w_bias_quantized"].astype("<i4"),
                        np.float32(data_scale) * ws, np.zeros(o, np.int64))
        ys, yz = act(out_name)
        y = m.tensor(out_name, [1, h, h, o], "INT8", scale=ys, zero_point=yz)
        m.op("CONV_2D", [data, filt, bias], [y], "Conv2DOptions",
             {"padding": "SAME", "stride_w": 1, "stride_h": 1, "fused_activation_function": "RELU",
              "dilation_w_factor": 1, "dilation_h_factor": 1})
        return y, ys, yz

    def pool(name, data, scale, zp, c, h):
        y = m.tensor(name, [1, h, h, c], "INT8", scale=scale, zero_point=zp)
        m.op("MAX_POOL_2D", [data], [y], "Pool2DOptions",
             {"padding": "VALID", "stride_w": 2, "stride_h": 2, "filter_width": 2, "filter_height": 2,
              "fused_activation_function": "NONE"})
        return y

    relu1, s1, z1 = conv("conv1", x, xs, "relu1", 8)
    pool1 = pool("pool1", relu1, s1, z1, 8, 4)
    relu2, s2, z2 = conv("conv2", pool1, s1, "relu2", 4)
    pool2 = pool("pool2", relu2, s2, z2, 16, 2)
    shape = m.tensor("flat_shape", [2], "INT32", np.array([1, 64], "<i4"))
    flat = m.tensor("flat", [1, 64], "INT8", scale=s2, zero_point=z2)
    m.op("RESHAPE", [pool2, shape], [flat], "ReshapeOptions", {"new_shape": [1, 64]})
    # ONNX's column c*4 + h*2 + w (C, H, W) is NHWC's (h*2 + w)*16 + c.
    w = init["fc_w_quantized"].reshape(10, 16, 2, 2).transpose(0, 2, 3, 1).reshape(10, 64)
    ws = init["fc_w_scale"].astype(np.float32)
    fc_w = m.tensor("fc_w", [10, 64], "INT8", w, ws, np.zeros(10, np.int64))
    fc_b = m.tensor("fc_b", [10], "INT32", init["fc_w_bias_quantized"].astype("<i4"), np.float32(s2) * ws,
                    np.zeros(10, np.int64))
    fs, fz = act("fc")
    fc = m.tensor("fc", [1, 10], "INT8", scale=fs, zero_point=fz)
    m.op("FULLY_CONNECTED", [flat, fc_w, fc_b], [fc], "FullyConnectedOptions",
         {"fused_activation_function": "NONE", "weights_format": "DEFAULT", "keep_num_dims": False})
    probs = m.tensor("probs", [1, 10], "INT8", scale=1.0 / 256, zero_point=-128)
    m.op("SOFTMAX", [fc], [probs], "SoftmaxOptions", {"beta": 1.0})
    return m.json([x], [probs], "microtir's digits CNN (models/digits), int8: tools/make_digits_tflite.py")


def quantized_images(init):
    x = np.load(os.path.join(DIGITS, "test_images.npy")).astype(np.float32)
    scale, zp = np.float32(init["x_quantized_scale"]), int(init["x_quantized_zero_point"]) - 128
    v = x / scale
    q = np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)) + zp
    return np.clip(q, -128, 127).astype(np.int8)


def npy_bytes(a):
    f = io.BytesIO()
    np.save(f, a)
    return f.getvalue()


def main():
    init = {i.name: numpy_helper.to_array(i) for i in onnx.load(ONNX_MODEL).graph.initializer}
    images = npy_bytes(quantized_images(init))
    # Indented, but each list of numbers on one line.
    text = json.dumps(digits_int8(init), indent=1)
    text = re.sub(r"\[[-0-9.e,\s]*\]", lambda m: re.sub(r"\s+", "", m.group(0)).replace(",", ", "), text) + "\n"
    if sys.argv[1:] == ["--check"]:
        with open(OUT) as f:
            stale = f.read() != text
        with open(IMAGES_OUT, "rb") as f:
            stale = stale or f.read() != images
        if stale:
            sys.exit(f"{OUT} or {IMAGES_OUT} is out of date: run tools/make_digits_tflite.py")
        return
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write(text)
    with open(IMAGES_OUT, "wb") as f:
        f.write(images)
    print(f"wrote {OUT} and {IMAGES_OUT}")


if __name__ == "__main__":
    main()
