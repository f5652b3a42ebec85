"""What the MLPerf Tiny benchmarks share: .npy files read without numpy, and the nominal
MACs of each TFLite operator of a model.

A convolution, depthwise convolution or fully connected layer counts its output's elements
times the weight's taps per output (padded taps count, as TFLite's own count does). The
imported graph (`microtir import MODEL.tflite --layer-outputs -o LAYERS.json`) names the
output node of each TFLite operator; the nodes an operator emits come just before it.

    python3 bench/tflite_bench.py LAYERS.json QUANT.json   prints the model's total MACs
"""
import json
import sys


def npy(path):
    """(descr, shape, data bytes) of an .npy file."""
    raw = open(path, "rb").read()
    major = raw[6]
    hlen = int.from_bytes(raw[8:10] if major == 1 else raw[8:12], "little")
    start = (10 if major == 1 else 12) + hlen
    d = eval(raw[start - hlen:start].decode("latin1"), {"__builtins__": {}}, {"True": True, "False": False})
    return d["descr"], tuple(d["shape"]), raw[start:]


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
    print(sum(layer_macs(sys.argv[1], json.load(open(sys.argv[2]))).values()))
