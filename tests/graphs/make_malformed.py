#!/usr/bin/env python3
"""Regenerates tests/graphs/malformed/: one broken graph per *.json, with the message
substrings its diagnostic must contain in the sibling *.expect (one a line; a line
"@line N" asserts the diagnostic's line). Needs numpy only for the weights/ files.
Run from this directory: python3 make_malformed.py"""
import json, os
import numpy as np

os.makedirs("malformed/weights", exist_ok=True)
np.save("malformed/weights/w8.npy", np.arange(8 * 1 * 3 * 3, dtype="<f4").reshape(8, 1, 3, 3) / 100)
np.save("malformed/weights/f64.npy", np.zeros(8, dtype="<f8"))
open("malformed/weights/bad.npy", "wb").write(b"this is not an npy file\n")
open("malformed/weights/blob.bin", "wb").write(np.arange(8, dtype="<f4").tobytes())  # 32 bytes


def base():
    return {"format": "microtir-graph", "version": 1, "name": "m",
            "inputs": [{"name": "x", "shape": [1, 1, 8, 8], "dtype": "float32"}],
            "constants": [{"name": "w", "file": "weights/w8.npy"}],
            "nodes": [
                {"name": "conv1", "op": "conv2d", "inputs": ["x", "w"],
                 "attrs": {"strides": [1, 1], "padding": [1, 1, 1, 1], "layout": "NCHW"}},
                {"name": "relu1", "op": "relu", "inputs": ["conv1"]}],
            "outputs": ["relu1"]}


def dump_graph(g):
    """The graph as JSON text with one input, constant or node a line."""
    lines = ["{"]
    items = list(g.items())
    for i, (k, v) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(v, list) and v and all(isinstance(e, dict) for e in v):
            lines.append("  %s: [" % json.dumps(k))
            for j, e in enumerate(v):
                lines.append("    " + json.dumps(e) + ("," if j < len(v) - 1 else ""))
            lines.append("  ]" + comma)
        else:
            lines.append("  %s: %s%s" % (json.dumps(k), json.dumps(v), comma))
    lines.append("}")
    return "\n".join(lines) + "\n"


cases = {}


def case(name, expect, mutate):
    g = base()
    mutate(g)
    cases[name] = (g, expect)


def set_const(g, c):
    g["constants"][0] = c


def cyc(g):
    g["nodes"] = [{"name": "a", "op": "relu", "inputs": ["c"]}, {"name": "b", "op": "relu", "inputs": ["a"]},
                  {"name": "c", "op": "add", "inputs": ["b", "x"]}, {"name": "out", "op": "relu", "inputs": ["c"]}]
    g["constants"] = []
    g["outputs"] = ["out"]


case("wrong_format", ["wrong format \"onnx\"", "expected \"microtir-graph\"", "@line 2"], lambda g: g.update(format="onnx"))
case("wrong_version", ["unsupported version 2", "reads version 1"], lambda g: g.update(version=2))
case("bad_model_name", ["model name 'my-model' is not a C identifier"], lambda g: g.update(name="my-model"))
case("missing_field", ["node 'relu1': missing field 'op'"], lambda g: g["nodes"][1].pop("op"))
case("ill_typed_shape", ["input 'x': 'shape' must be a list of positive integers, not a string"],
     lambda g: g["inputs"][0].update(shape="1x1x8x8"))
case("ill_typed_inputs", ["node 'relu1': 'inputs' must be a list of names, not a string"],
     lambda g: g["nodes"][1].update(inputs="conv1"))
case("duplicate_name", ["node 'w': duplicate name 'w', already used by the constant 'w'"],
     lambda g: (g["nodes"][1].update(name="w"), g.update(outputs=["w"])))
case("unknown_op", ["node 'conv1': unknown op 'conv2'", "did you mean 'conv2d'?"], lambda g: g["nodes"][0].update(op="conv2"))
case("bad_attr_type", ["node 'conv1' (conv2d):", "strides"], lambda g: g["nodes"][0]["attrs"].update(strides="2"))
case("unknown_attr", ["node 'conv1' (conv2d):", "stride"], lambda g: g["nodes"][0]["attrs"].update(stride=[2, 2]))
case("dangling_input", ["node 'relu1': input 'conv9' is not a model input, constant or node", "did you mean 'conv1'?"],
     lambda g: g["nodes"][1].update(inputs=["conv9"]))
case("shape_mismatch", ["node 'conv1' (conv2d):", "channel"], lambda g: g["inputs"][0].update(shape=[1, 3, 8, 8]))
case("cycle", ["the graph has a cycle:", "a -> b -> c -> a"], cyc)
case("self_cycle", ["the graph has a cycle: relu1 -> relu1"], lambda g: g["nodes"][1].update(inputs=["relu1"]))
case("missing_constant_file", ["constant 'w': cannot read 'weights/nope.npy'"],
     lambda g: g["constants"][0].update(file="weights/nope.npy"))
case("bad_npy", ["constant 'w':", "weights/bad.npy"], lambda g: g["constants"][0].update(file="weights/bad.npy"))
case("npy_shape_mismatch", ["constant 'w': declared shape (8, 1, 3) but 'weights/w8.npy' holds (8, 1, 3, 3)"],
     lambda g: g["constants"][0].update(shape=[8, 1, 3]))
case("npy_unsupported_dtype", ["constant 'w' ('weights/f64.npy'): unsupported dtype 'float64'"],
     lambda g: g["constants"][0].update(file="weights/f64.npy"))
case("blob_out_of_range",
     ["constant 'w': bytes [16, 48) of blob 'weights/blob.bin' are out of range: the blob has 32 bytes"],
     lambda g: set_const(g, {"name": "w", "blob": "weights/blob.bin", "offset": 16, "shape": [8, 1, 1, 1], "dtype": "float32"}))
case("blob_negative_offset", ["constant 'w': 'offset' must be a non-negative integer, not -4"],
     lambda g: set_const(g, {"name": "w", "blob": "weights/blob.bin", "offset": -4, "shape": [8, 1, 1, 1], "dtype": "float32"}))
case("blob_without_dtype", ["constant 'w': missing field 'dtype'"],
     lambda g: set_const(g, {"name": "w", "blob": "weights/blob.bin", "offset": 0, "shape": [8, 1, 1, 1]}))
case("two_sources", ["constant 'w': give exactly one of 'file'", "found 2"], lambda g: g["constants"][0].update(values=[1.0]))
case("values_count", ["constant 'w': 'values' has 3 numbers but the shape (8, 1, 1, 1) needs 8"],
     lambda g: set_const(g, {"name": "w", "values": [1, 2, 3], "shape": [8, 1, 1, 1], "dtype": "float32"}))
case("unknown_output", ["output 'relu' is not a model input, constant or node", "did you mean 'relu1'?"],
     lambda g: g.update(outputs=["relu"]))
case("empty_outputs", ["'outputs' must be a non-empty list of names, not an empty list"], lambda g: g.update(outputs=[]))
case("constant_output", ["output 'w' is the constant, not a node's result", "a reshape node"],
     lambda g: g.update(outputs=["relu1", "w"]))
case("input_output", ["output 'x' is the model input, not a node's result"], lambda g: g.update(outputs=["x"]))
case("unsupported_dtype", ["input 'x': unsupported dtype 'float64'", "supported: float32"],
     lambda g: g["inputs"][0].update(dtype="float64"))
case("non_positive_dim", ["input 'x': dimension 2 of the shape is 0; dimensions must be positive"],
     lambda g: g["inputs"][0].update(shape=[1, 1, 0, 8]))
case("unknown_node_field", ["node 'relu1': unknown field 'attr'", "did you mean 'attrs'?"], lambda g: g["nodes"][1].update(attr={}))
case("missing_pool_size", ["node 'pool' (max_pool2d):", "pool_size"],
     lambda g: g["nodes"].append({"name": "pool", "op": "max_pool2d", "inputs": ["relu1"], "attrs": {"strides": [2, 2]}}))
case("wrong_input_count", ["node 'relu1' (relu):"], lambda g: g["nodes"][1].update(inputs=["conv1", "x"]))
case("unnamed_node", ["nodes[1]: missing field 'name'"], lambda g: g["nodes"][1].pop("name"))

for name, (g, expect) in cases.items():
    with open(f"malformed/{name}.json", "w") as f:
        f.write(dump_graph(g))
    with open(f"malformed/{name}.expect", "w") as f:
        f.write("\n".join(expect) + "\n")

# Hand-written: invalid JSON (a trailing comma on line 6) and a document that is no object.
open("malformed/invalid_json.json", "w").write('''{
  "format": "microtir-graph",
  "version": 1,
  "name": "m",
  "inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
  "nodes": [{"name": "r", "op": "relu", "inputs": ["x"]},],
  "outputs": ["r"]
}
''')
open("malformed/invalid_json.expect", "w").write("invalid JSON: syntax error\n@line 6\n")
open("malformed/not_an_object.json", "w").write('[{"format": "microtir-graph"}]\n')
open("malformed/not_an_object.expect", "w").write("the graph must be a JSON object, not a list\n")
print(len(cases) + 2, "cases")
