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
