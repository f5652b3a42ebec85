#!/usr/bin/env python3
"""Exports the bundled digits model (models/digits/) to ONNX: models/digits/digits.onnx.

The ONNX graph has the same tensor names as digits.json, so both frontends build the
same graph and the same C (tests/e2e checks this). Needs only Debian's python3-onnx:
    apt-get install -y python3-onnx
    /usr/bin/python3 tools/export_onnx.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "models", "digits")


def weight(name):
    return numpy_helper.from_array(np.load(os.path.join(MODEL, "weights", name + ".npy")), name)


def main():
    names = ["conv1_w", "bn1_gamma", "bn1_beta", "bn1_mean", "bn1_var", "conv2_w", "conv2_b", "fc_w", "fc_b"]
    nodes = [
        helper.make_node("Conv", ["x", "conv1_w"], ["conv1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["conv1", "bn1_gamma", "bn1_beta", "bn1_mean", "bn1_var"], ["bn1"],
                         epsilon=1e-5),
        helper.make_node("Relu", ["bn1"], ["relu1"]),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1", "conv2_w", "conv2_b"], ["conv2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv2"], ["relu2"]),
        helper.make_node("MaxPool", ["relu2"], ["pool2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool2"], ["flat"], axis=1),
        # The dense layer: fc_w is (10, K), as in the JSON graph.
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["fc"], transB=1),
        helper.make_node("Softmax", ["fc"], ["probs"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "digits",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        initializer=[weight(n) for n in names])
    model = helper.make_model(graph, producer_name="microtir tools/export_onnx.py",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    out = os.path.join(MODEL, "digits.onnx")
    onnx.save(model, out)
    print("wrote", os.path.normpath(out))


if __name__ == "__main__":
    main()
