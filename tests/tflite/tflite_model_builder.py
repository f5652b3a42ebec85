"""A small .tflite writer for tests: a model in flatc's JSON form, built subgraph by
subgraph, made binary by flatc with our schema (core/frontend/tflite/tflite_schema.fbs).
Shared by the tests of multi-subgraph models (variable_tflite_test.py,
control_flow_tflite_test.py)."""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np

TYPES = {np.dtype(np.float32): "FLOAT32", np.dtype(np.int8): "INT8", np.dtype(np.int32): "INT32",
         np.dtype(np.bool_): "BOOL"}
# BuiltinOperator codes of the operators the tests write.
CODES = {"ADD": 0, "CONCATENATION": 2, "FULLY_CONNECTED": 9, "CONV_2D": 3, "SUB": 41, "RESHAPE": 22, "LSH_PROJECTION": 15, "MUL": 18, "MAXIMUM": 55, "MINIMUM": 57, "LESS": 58,
         "SLICE": 65, "IF": 118, "WHILE": 119, "CALL_ONCE": 129, "VAR_HANDLE": 142, "READ_VARIABLE": 143,
         "ASSIGN_VARIABLE": 144}


class Model:
    """A .tflite in flatc's JSON form, built subgraph by subgraph."""

    def __init__(self):
        self.codes, self.buffers, self.subgraphs = [], [{}], []

    def subgraph(self):
        sg = {"tensors": [], "inputs": [], "outputs": [], "operators": []}
        self.subgraphs.append(sg)
        return sg

    def tensor(self, sg, name, shape, dtype, data=None, quant=None, resource=False):
        t = {"name": name, "shape": list(shape), "type": "RESOURCE" if resource else TYPES[np.dtype(dtype)], "buffer": 0}
        if quant:
            t["quantization"] = {"scale": [quant[0]], "zero_point": [quant[1]]}
        if data is not None:
            t["buffer"] = len(self.buffers)
            self.buffers.append({"data": list(np.asarray(data, dtype).astype(np.dtype(dtype).newbyteorder("<")).tobytes())})
        sg["tensors"].append(t)
        return len(sg["tensors"]) - 1

    def op(self, sg, code, inputs, outputs, options_type=None, options=None):
        if code not in self.codes:
            self.codes.append(code)
        o = {"opcode_index": self.codes.index(code), "inputs": inputs, "outputs": outputs}
        if options_type:
            o["builtin_options_type"], o["builtin_options"] = options_type, options or {}
        sg["operators"].append(o)

    def handle(self, sg, name):
        h = self.tensor(sg, name + "_handle", [], None, resource=True)
        self.op(sg, "VAR_HANDLE", [], [h], "VarHandleOptions", {"shared_name": name})
        return h

    def json(self):
        codes = [{"builtin_code": c, "deprecated_builtin_code": min(CODES[c], 127), "version": 1} for c in self.codes]
        return {"version": 3, "operator_codes": codes, "subgraphs": self.subgraphs, "buffers": self.buffers}


def build_tflite(m, name, flatc, schema, work):
    """Writes `m` as <work>/<name>.tflite and returns that path."""
    jpath = os.path.join(work, name + ".json")
    with open(jpath, "w") as f:
        json.dump(m.json(), f)
    subprocess.run([flatc, "-b", "-o", work, schema, jpath], check=True)
    return os.path.join(work, name + ".tflite")


def check_refusal(refusals, name, opts, work):
    """Builds refusals[name] = (build, words): `run` must exit 1 with `words` on stderr."""
    build, words = refusals[name]
    model = build_tflite(build(), name, opts.flatc, opts.schema, work)
    p = subprocess.run([opts.cli, "run", model, "--target", "host", "--output-dir", os.path.join(work, name)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ok = p.returncode == 1 and words in p.stderr
    print(f"{'ok' if ok else 'FAIL'} {name} is refused: {p.stderr.strip()[:300]}")
    return ok


def suite_main(doc, what, models, refusals, check_model):
    """The command line of a model suite: CLI FLATC SCHEMA SOURCE [--target] [--backend]
    [--only]; every model through check_model, the refusals on the host; exit 1 on a failure."""
    ap = argparse.ArgumentParser(usage=doc)
    for a in ("cli", "flatc", "schema", "source"):
        ap.add_argument(a)
    ap.add_argument("--target", default="host")
    ap.add_argument("--backend", default="c")
    ap.add_argument("--only", default="", help="comma-separated model names")
    opts = ap.parse_args()
    names = [n for n in models if not opts.only or n in opts.only.split(",")]
    refused = list(refusals) if opts.target == "host" and not opts.only else []
    with tempfile.TemporaryDirectory() as work:
        failures = sum(not check_model(n, opts, work) for n in names)
        failures += sum(not check_refusal(refusals, n, opts, work) for n in refused)
    total = len(names) + len(refused)
    print(f"{total - failures} of {total} {what} models and refusals pass")
    return 1 if failures else 0
