"""What the .tflite benchmarks share: .npy files read without numpy, the inputs and outputs
of a reference case (MLPerf Tiny's quant.json or the zoo's meta.json), and the nominal
MACs of each TFLite operator of a model.

A convolution, depthwise convolution or fully connected layer counts its output's elements
times the weight's taps per output (padded taps count, as TFLite's own count does). The
imported graph (`microtir import MODEL.tflite --layer-outputs -o LAYERS.json`) names the
output node of each TFLite operator; the nodes an operator emits come just before it.

    python3 bench/tflite_bench.py LAYERS.json QUANT.json   prints the model's total MACs
    python3 bench/tflite_bench.py inputs CASE_DIR LAYERS.json  prints `--input NAME=FILE`, one word a line
"""
import array
import json
import os
import sys


def npy(path):
    """(descr, shape, data bytes) of an .npy file."""
    raw = open(path, "rb").read()
    major = raw[6]
    hlen = int.from_bytes(raw[8:10] if major == 1 else raw[8:12], "little")
    start = (10 if major == 1 else 12) + hlen
    d = eval(raw[start - hlen:start].decode("latin1"), {"__builtins__": {}}, {"True": True, "False": False})
    return d["descr"], tuple(d["shape"]), raw[start:]


def case_io(case_dir):
    """The reference case's description (quant.json or meta.json) with two lists added:
    "input_files" [(name, path)] and "output_files" [(name, path)], in the model's order."""
    q = os.path.join(case_dir, "quant.json")
    if os.path.exists(q):  # MLPerf Tiny: one input, one output
        d = json.load(open(q))
        d["input_files"] = [(d["input"]["name"], os.path.join(case_dir, d["input"].get("file", "input.npy")))]
        d["output_files"] = [(d["output"]["name"], os.path.join(case_dir, d["output"].get("file", "output.npy")))]
        return d
    d = json.load(open(os.path.join(case_dir, "meta.json")))  # the zoo
    d["input_files"] = [(i["name"], os.path.join(case_dir, i["file"])) for i in d["inputs"]]
    d["output_files"] = [(o["name"], os.path.join(case_dir, o["file"])) for o in d["outputs"]]
    return d


DTYPE_CODES = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "float32": "f"}


def output_bytes(out):
    """The bytes of one output as `microtir run --json` lists it ({"dtype", "values"})."""
    a = array.array(DTYPE_CODES[out["dtype"]], out["values"])
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


def input_args(case_dir, layers_json):
    """`--input NAME=FILE` words; a nameless input takes the imported graph's name for it."""
    graph_inputs = [i["name"] for i in json.load(open(layers_json))["inputs"]]
    words = []
    for k, (name, path) in enumerate(case_io(case_dir)["input_files"]):
        words += ["--input", f"{name or graph_inputs[k]}={path}"]
    return words


def layer_macs(layers_json, quant):
    """{operator index: MACs}; {} when the imported graph is missing or unreadable."""
    try:
        g = json.load(open(layers_json))
    except (OSError, ValueError):
        return {}
    shapes = {c["name"]: c["shape"] for c in g["constants"]}
    position = {nd["name"]: k for k, nd in enumerate(g["nodes"])}
    macs, start = {}, 0
    for i, node in enumerate(g["outputs"]):
        end = position[node] + 1
        elements = 1
        for d in quant["layers"][i]["shape"]:
            elements *= d
        total = 0
        for nd in g["nodes"][start:end]:
            if nd["op"] in ("qconv2d", "qdense", "conv2d", "dense"):
                w = nd.get("attrs", {}).get("weight_shape") or shapes.get(nd["inputs"][1])
                taps = 1
                for d in (w or [0])[1:]:
                    taps *= d
                total += elements * taps
        macs[i] = total
        start = end
    return macs


if __name__ == "__main__":
    if sys.argv[1] == "inputs":
        print("\n".join(input_args(sys.argv[2], sys.argv[3])))
    else:
        print(sum(layer_macs(sys.argv[1], json.load(open(sys.argv[2]))).values()))
