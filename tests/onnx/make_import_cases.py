#!/usr/bin/env python3
"""Regenerates tests/onnx/import/: small ONNX models for the paths of the ONNX frontend the
backend node tests do not reach (they pass shapes, pads and bounds as model inputs):
compile-time inputs from initializers and Constant nodes, raw and typed tensor data of
every dtype, 1-D windows, auto_pad, old and new opsets, outputs that need a copy, names
that need a C identifier, and models the JSON graph cannot hold. Both ONNX frontends (the
native one and web/src/onnx_import.js) must give the same JSON graph for each
(web/test/onnx_import.test.js), and each graph round-trips through the JSON writer
(tests/unit/graph_writer_test.cc). Needs Debian's python3-onnx. Run from this directory:
/usr/bin/python3 make_import_cases.py"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

os.makedirs("import", exist_ok=True)
F = TensorProto.FLOAT


def vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def write(name, nodes, inputs, outputs, inits=(), opset=13, graph_name="m", ir=7):
    g = helper.make_graph(nodes, graph_name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    with open("import/%s.onnx" % name, "wb") as f:
        f.write(m.SerializeToString())


def arr(name, a):
    return numpy_helper.from_array(np.asarray(a), name)  # raw_data


def typed(name, dtype, dims, vals):
    return helper.make_tensor(name, dtype, dims, vals)  # float_data / int32_data / int64_data ...


rng = np.random.default_rng(7)
x4 = vi("x", [1, 2, 6, 6])

# Reshape with an initializer shape (raw int64, a 0 and a -1), then Flatten and a typed shape.
write("reshape_initializers", [
    helper.make_node("Reshape", ["x", "s1"], ["r1"]),
    helper.make_node("Reshape", ["r1", "s2"], ["r2"]),
    helper.make_node("Flatten", ["r2"], ["y"], axis=2),
], [x4], [vi("y", None)], [arr("s1", np.array([0, 2, -1], np.int64)), typed("s2", TensorProto.INT64, [4], [1, 2, 3, 12])])

# Squeeze/Unsqueeze: axes as inputs (opset 13, from a Constant value_ints) and as attributes (11).
write("squeeze_unsqueeze_13", [
    helper.make_node("Constant", [], ["axes"], value_ints=[0, -1]),
    helper.make_node("Unsqueeze", ["x", "axes"], ["u"]),
    helper.make_node("Squeeze", ["u", "axes"], ["s"]),
    helper.make_node("Squeeze", ["s"], ["y"]),
], [vi("x", [1, 3, 1, 4])], [vi("y", None)])
write("squeeze_unsqueeze_11", [
    helper.make_node("Unsqueeze", ["x"], ["u"], axes=[1]),
    helper.make_node("Squeeze", ["u"], ["y"], axes=[1, 0]),
], [vi("x", [1, 5])], [vi("y", None)], opset=11)

# Clip: bounds from Constant nodes (a tensor and value_float) and from attributes (opset 10).
write("clip_constants", [
    helper.make_node("Constant", [], ["lo"], value=typed("lo_t", F, [], [-0.5])),
    helper.make_node("Constant", [], ["hi"], value_float=0.75),
    helper.make_node("Clip", ["x", "lo", "hi"], ["c"]),
    helper.make_node("Clip", ["c", "", "hi"], ["y"]),
], [x4], [vi("y", None)])
write("clip_attributes", [helper.make_node("Clip", ["x"], ["y"], min=-1.0, max=2.5)], [x4], [vi("y", None)], opset=10)

# Pad: pads and value as initializers (opset 13), reflect; attributes (opset 10), edge.
write("pad_initializers", [
    helper.make_node("Pad", ["x", "pads", "v"], ["p"], mode="constant"),
    helper.make_node("Pad", ["p", "pads2"], ["y"], mode="reflect"),
], [x4], [vi("y", None)], [arr("pads", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)), arr("v", np.array(1.5, np.float32)),
                          arr("pads2", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))])
write("pad_attributes", [helper.make_node("Pad", ["x"], ["y"], mode="edge", pads=[0, 0, 2, 0, 0, 0, 0, 3])], [x4],
      [vi("y", None)], opset=10)

# Convolutions: 1-D with SAME_UPPER and a bias, 2-D SAME_LOWER dilated grouped, VALID.
w1 = rng.standard_normal((4, 2, 3)).astype(np.float32)
write("conv1d_same_upper", [helper.make_node("Conv", ["x", "w", "b"], ["y"], auto_pad="SAME_UPPER", strides=[2])],
      [vi("x", [1, 2, 9])], [vi("y", None)], [arr("w", w1), arr("b", np.arange(4, dtype=np.float32))])
w2 = rng.standard_normal((4, 1, 3, 2)).astype(np.float32)
write("conv2d_same_lower_groups", [
    helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_LOWER", dilations=[2, 1], group=2, strides=[1, 2]),
    helper.make_node("Conv", ["c", "w3"], ["y"], auto_pad="VALID", kernel_shape=[1, 1]),
], [x4], [vi("y", None)], [arr("w", w2), typed("w3", F, [3, 4, 1, 1], list(range(12)))])

# Pools: 1-D max with ceil_mode, 2-D average with count_include_pad, global ones.
write("pools", [
    helper.make_node("MaxPool", ["x"], ["m"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, pads=[1, 1, 1, 1]),
    helper.make_node("AveragePool", ["m"], ["a"], kernel_shape=[2, 2], pads=[1, 0, 1, 0], count_include_pad=1),
    helper.make_node("GlobalMaxPool", ["a"], ["g1"]),
    helper.make_node("GlobalAveragePool", ["a"], ["g2"]),
    helper.make_node("Add", ["g1", "g2"], ["y"]),
], [x4], [vi("y", None)])
write("maxpool1d", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2], strides=[2], ceil_mode=1)],
      [vi("x", [1, 3, 7])], [vi("y", None)], opset=12)

# Softmax before opset 13 on 4-D data (a reshape around it), LogSoftmax after.
write("softmax_11", [helper.make_node("Softmax", ["x"], ["s"], axis=1), helper.make_node("LogSoftmax", ["s"], ["y"], axis=2)],
      [x4], [vi("y", None)], opset=11)
write("softmax_13", [helper.make_node("LogSoftmax", ["x"], ["s"], axis=1), helper.make_node("Softmax", ["s"], ["y"])],
      [x4], [vi("y", None)])

# Gemm: the dense layer, a transposed one with alpha/beta (gemm), MatMul 3-D by 2-D.
write("gemm_matmul", [
    helper.make_node("Gemm", ["x", "w", "b"], ["d"], transB=1),
    helper.make_node("Gemm", ["d", "w2", "b2"], ["g"], alpha=0.5, beta=2.0, transA=1),
    helper.make_node("Reshape", ["g", "s"], ["r"]),
    helper.make_node("MatMul", ["r", "m"], ["y"]),
], [vi("x", [3, 4])], [vi("y", None)], [
    arr("w", rng.standard_normal((5, 4)).astype(np.float32)), arr("b", rng.standard_normal(5).astype(np.float32)),
    arr("w2", rng.standard_normal((3, 2)).astype(np.float32)), arr("b2", np.float32([1.0, -1.0])),
    arr("s", np.array([1, 5, 2], np.int64)), arr("m", rng.standard_normal((2, 3)).astype(np.float32))])

# BatchNormalization after Conv (opset 9), elementwise ops, LeakyRelu, Dropout as identity.
c = 2
write("batchnorm_elementwise", [
    helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["bn"], epsilon=1e-3),
    helper.make_node("Sigmoid", ["bn"], ["s"]), helper.make_node("Tanh", ["s"], ["t"]),
    helper.make_node("Exp", ["t"], ["e"]), helper.make_node("Sqrt", ["e"], ["q"]),
    helper.make_node("Neg", ["q"], ["n"]), helper.make_node("Abs", ["n"], ["a"]),
    helper.make_node("Sub", ["a", "k"], ["sb"]), helper.make_node("Mul", ["sb", "k"], ["ml"]),
    helper.make_node("Div", ["ml", "k"], ["dv"]), helper.make_node("LeakyRelu", ["dv"], ["l1"]),
    helper.make_node("LeakyRelu", ["l1"], ["l2"], alpha=0.2), helper.make_node("Relu", ["l2"], ["rl"]),
    helper.make_node("Dropout", ["rl"], ["y"], ratio=0.3),
], [x4], [vi("y", None)], [arr("w", rng.standard_normal((c, 2, 3, 3)).astype(np.float32)),
                          arr("g", np.float32([1.0, 2.0])), arr("be", np.float32([0.0, -0.0])),
                          arr("mu", np.float32([0.1, 0.2])), arr("var", np.float32([1.0, 0.5])),
                          arr("k", np.float32([[[1.5]], [[-2.0]]]))], opset=9)
write("dropout_12", [
    helper.make_node("Dropout", ["x", "ratio", "training"], ["d"]),
    helper.make_node("Identity", ["d"], ["y"]),
], [x4], [vi("y", None)], [arr("ratio", np.array(0.5, np.float32)), arr("training", np.array(False))], opset=12)

# Concat (three inputs and one), Transpose with and without perm.
write("concat_transpose", [
    helper.make_node("Concat", ["x", "x", "k"], ["c"], axis=1),
    helper.make_node("Concat", ["c"], ["c1"], axis=0),
    helper.make_node("Transpose", ["c1"], ["t"], perm=[0, 2, 3, 1]),
    helper.make_node("Transpose", ["t"], ["y"]),
], [x4], [vi("y", None)], [typed("k", F, [1, 1, 6, 6], [float(i) / 7 for i in range(36)])])

# Outputs that need a copy: an Identity of an input, a constant, one listed twice; nodes
# out of order; a graph name that is not a C identifier.
write("outputs_and_order", [
    helper.make_node("Relu", ["a"], ["y"]),
    helper.make_node("Add", ["x", "k"], ["a"]),
    helper.make_node("Identity", ["x"], ["xi"]),
    helper.make_node("Constant", [], ["kc"], value=typed("kt", F, [2], [0.25, -0.0])),
], [vi("x", [2, 2])], [vi("y", None), vi("xi", None), vi("kc", None), vi("y", None)],
    [arr("k", np.float32([[1, 2], [3, 4]]))], graph_name="my-model 1")

# Constants of every dtype the JSON graph holds, raw and typed (unused by the nodes, kept
# as constants), and an IR-3 model listing its initializers among the inputs.
consts = [
    arr("r_f16", np.float16([0.5, -2.0, 65504.0])), typed("t_f16", TensorProto.FLOAT16, [2],
                                                          np.float16([1.5, -0.25]).view(np.uint16).tolist()),
    arr("r_i8", np.int8([-128, 127])), typed("t_i8", TensorProto.INT8, [2], [-5, 6]),
    arr("r_u8", np.uint8([0, 255])), typed("t_u8", TensorProto.UINT8, [2], [7, 200]),
    arr("r_i16", np.int16([-300, 300])), typed("t_i16", TensorProto.INT16, [1], [-2]),
    arr("r_u16", np.uint16([65535])), typed("t_u16", TensorProto.UINT16, [1], [40000]),
    arr("r_i32", np.int32([-(2 ** 31), 2 ** 31 - 1])), typed("t_i32", TensorProto.INT32, [1], [123456]),
    arr("r_u32", np.uint32([2 ** 32 - 1])), typed("t_u32", TensorProto.UINT32, [1], [4000000000]),
    arr("r_i64", np.int64([-(2 ** 40), 2 ** 40])), typed("t_i64", TensorProto.INT64, [2], [-7, 2 ** 33]),
    typed("t_f32", F, [2, 2], [0.1, -1e-30, 3e30, -0.0]),
]
write("constant_dtypes", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])] + [vi(t.name, list(t.dims), t.data_type) for t in consts],
      [vi("y", None)], consts, ir=3)

# What the JSON graph cannot hold, or the frontend refuses: a float64 constant, a NaN, a
# dynamic input, a uint64 constant.
write("refused_float64", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", None)], [arr("d", np.float64([1.0]))])
write("refused_nan", [helper.make_node("Add", ["x", "k"], ["y"])], [vi("x", [2])], [vi("y", None)],
      [arr("k", np.float32([1.0, np.nan]))])
write("refused_dynamic", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["N", 3])], [vi("y", None)])
write("refused_uint64", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", None)],
      [typed("u", TensorProto.UINT64, [1], [2 ** 63 + 5])])
