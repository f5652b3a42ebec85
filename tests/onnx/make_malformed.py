#!/usr/bin/env python3
"""Regenerates tests/onnx/malformed/: one broken ONNX file per *.onnx, with the message
substrings its diagnostic must contain in the sibling *.expect (one a line). Needs
Debian's python3-onnx. Run from this directory: /usr/bin/python3 make_malformed.py"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

os.makedirs("malformed", exist_ok=True)


def model(nodes, inits=(), opsets=(("", 13),), outputs=("y",)):
    g = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 7
    return m.SerializeToString()


def write(name, data, *expect):
    with open("malformed/%s.onnx" % name, "wb") as f:
        f.write(data)
    with open("malformed/%s.expect" % name, "w") as f:
        f.write("\n".join(expect) + "\n")


w = numpy_helper.from_array(np.ones((3, 2, 3, 3), dtype=np.float32), "w")
good = model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
             [w])
write("truncated", good[: len(good) // 2], "is not a valid ONNX model", "malformed or truncated")
write("wrong_magic", b'{"format": "microtir-graph", "version": 1}\n', "is not")
write("empty", b"", "is empty")
write("missing_initializer", model([helper.make_node("Conv", ["x", "w"], ["y"])]),
      "node 'y' (Conv): input 'w' is not defined", "missing initializer")
write("cycle", model([helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
                      helper.make_node("Relu", ["b"], ["y"])]),
      "the graph has a cycle", "'a' (Add)", "'b' (Relu)")
write("unknown_domain", model([helper.make_node("FancyOp", ["x"], ["y"], domain="com.example")],
                              opsets=(("", 13), ("com.example", 1))),
      "unsupported: node 'y' (FancyOp): operator domain 'com.example'")
write("no_default_opset", model([helper.make_node("Relu", ["x"], ["y"])], opsets=(("com.example", 1),)),
      "unsupported:", "imports no opset of the default ONNX domain", "'com.example'")
write("future_opset", model([helper.make_node("Relu", ["x"], ["y"])], opsets=(("", 18),)),
      "unsupported: opset version 18")
write("unsupported_op", model([helper.make_node("Elu", ["x"], ["y"])]), "unsupported: node 'y' (Elu): operator 'Elu'")
write("unsupported_attr", model([helper.make_node("Relu", ["x"], ["y"], fancy=1)]),
      "unsupported: node 'y' (Relu): attribute 'fancy'")
write("dynamic_reshape", model([helper.make_node("Reshape", ["x", "x"], ["y"])]),
      "unsupported: node 'y' (Reshape): input 'shape' must be a compile-time constant", "'x' is a model input")
write("int_initializer_data", model([helper.make_node("Add", ["x", "k"], ["y"])],
                                    [numpy_helper.from_array(np.ones((4,), dtype=np.int32), "k")]),
      "unsupported: node 'y' (Add)", "input 'rhs' has type int32 but 'lhs' has type float32")
write("shape_mismatch", model([helper.make_node("Add", ["x", "k"], ["y"])],
                              [numpy_helper.from_array(np.ones((3,), dtype=np.float32), "k")]),
      "node 'y' (Add): add: shapes (1, 2, 4, 4) and (3) cannot be broadcast")


def quantized_model(nodes, inits, shape):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.UINT8, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m.SerializeToString()


def scalars(**values):
    return [numpy_helper.from_array(np.array(v, dtype=np.float32 if isinstance(v, float) or
                                             (isinstance(v, list) and isinstance(v[0], float)) else np.uint8), k)
            for k, v in values.items()]


# QLinearMatMul and QLinearConv requantize with one data scale and one output scale (the
# weight's may be per channel).
write("qlinear_matmul_per_row_scale",
      quantized_model([helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])],
                      scalars(xs=[0.1, 0.2], xz=128, ws=0.05, wz=128, ys=0.2, yz=128) +
                      [numpy_helper.from_array(np.full((4, 3), 130, dtype=np.uint8), "w")], [2, 4]),
      "unsupported: node 'y' (QLinearMatMul): per-row a_scale or per-column y_scale")
write("qlinear_conv_per_channel_output_scale",
      quantized_model([helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])],
                      scalars(xs=0.1, xz=128, ws=0.05, wz=128, ys=[0.2, 0.3, 0.4], yz=128) +
                      [numpy_helper.from_array(np.full((3, 2, 3, 3), 130, dtype=np.uint8), "w")], [1, 2, 4, 4]),
      "unsupported: node 'y' (QLinearConv): per-channel x_scale or y_scale")
