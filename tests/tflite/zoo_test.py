#!/usr/bin/env python3
"""TensorFlow Lite Micro's own models (the zoo, ../shared/tflite/zoo, its README.md)
through `microtir run`, compared with TFLM's outputs.

usage: zoo_test.py MICROTIR ZOO_DIR MODEL CASE TARGET [--layers]
       zoo_test.py MICROTIR ZOO_DIR --seanet PATTERN...

- One case: `microtir run ZOO_DIR/models/MODEL.tflite --target TARGET` on the case's
  input_<k>.npy; every output must equal TFLM's output_<k>.npy, integers byte for byte,
  float32 within 1e-5 relative to the larger of the element and a millionth of the
  output's largest magnitude (the zoo's float references are x86-64 results; a target
  that fuses multiply-adds differs in the last bits, which on a softmax probability of
  1e-16 is a large relative difference of no meaning). With
  --layers (the seed1 cases carry layers/), the graph `microtir import --layer-outputs`
  writes runs instead, and each operator's output must equal TFLM's (the model's outputs
  are among them); the first layer that differs is named. Outputs are read from
  `run --json`, in the model's order.
- --seanet: every dev SEANet model whose name matches one of the glob PATTERNs
  (seanet_add*, ...), its `golden` case on the host, in this one process; prints the
  count per operator family and fails on any mismatch.

When ZOO_DIR does not exist (a clone without ../shared/tflite beside it) the test prints
that it was skipped and exits with 77, ctest's SKIP_RETURN_CODE.
"""
import concurrent.futures
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_model_test import SKIP, read_npy, skip_without  # noqa: E402 (shared with the MLPerf test)


class RunFailed(Exception):
    pass


def run(cmd, what):
    """stdout of a command that must succeed; RunFailed names it and microtir's error."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        errors = [line for line in p.stderr.splitlines() if "error" in line] or p.stderr.strip().splitlines()[-1:]
        raise RunFailed(f"{what}: exit {p.returncode}: {errors[-1] if errors else '(no message)'}")
    return p.stdout

FLOAT_RTOL = 1e-5


def as_values(descr, data):
    """The elements of raw little-endian .npy data as Python numbers."""
    import array
    codes = {"i1": "b", "u1": "B", "i2": "h", "u2": "H", "i4": "i", "u4": "I", "i8": "q", "u8": "Q", "f4": "f", "f8": "d"}
    if descr not in codes:
        raise SystemExit(f"FAIL: .npy dtype {descr} is not handled")
    a = array.array(codes[descr])
    a.frombytes(data)
    if sys.byteorder != "little":
        a.byteswap()
    return a


def compare_arrays(got, want, what):
    """None when `got` equals `want` ((descr, shape, bytes) triples), else the problem."""
    if got[0] != want[0] or got[1] != want[1]:
        return f"{what}: got {got[0]} {list(got[1])}, TFLM's is {want[0]} {list(want[1])}"
    if got[2] == want[2]:
        return None
    g, w = as_values(got[0], got[2]), as_values(want[0], want[2])
    if want[0].startswith("f"):
        floor = 1e-6 * max((abs(b) for b in w), default=0.0)
        bad = [i for i, (a, b) in enumerate(zip(g, w)) if abs(a - b) > FLOAT_RTOL * max(abs(a), abs(b), floor)]
    else:
        bad = [i for i, (a, b) in enumerate(zip(g, w)) if a != b]
    if not bad:
        return None
    i = bad[0]
    return f"{what}: {len(bad)} of {len(w)} elements differ; the first at element {i}: got {g[i]}, TFLM {w[i]}"


def npy_from_values(descr, shape, values):
    """(descr, shape, bytes) for the values `run --json` prints."""
    import array
    codes = {"i1": "b", "i2": "h", "i4": "i", "i8": "q", "f4": "f"}
    a = array.array(codes[descr], values)
    if sys.byteorder != "little":
        a.byteswap()
    return descr, tuple(shape), a.tobytes()


DTYPES = {"int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "float32": "f4"}


class Model:
    """A zoo model: its file and the input names `--input` takes."""

    def __init__(self, cli, zoo, name, work):
        self.cli, self.name = cli, name
        self.file = os.path.join(zoo, "models", name + ".tflite")
        self.work = os.path.join(work, name)
        os.makedirs(self.work, exist_ok=True)
        self._layer_graph = None

    def input_args(self, meta, case_dir):
        """--input NAME=FILE for each input: the model's own name (the graph's when empty)."""
        graph_inputs = None
        args = []
        for k, spec in enumerate(meta["inputs"]):
            name = spec["name"]
            if not name:
                if graph_inputs is None:
                    g = os.path.join(self.work, "graph.json")
                    run([self.cli, "import", self.file, "-o", g], f"{self.name}: import")
                    graph_inputs = [i["name"] for i in json.load(open(g))["inputs"]]
                name = graph_inputs[k]
            args += ["--input", f"{name}={os.path.join(case_dir, spec['file'])}"]
        return args

    def layer_graph(self):
        if self._layer_graph is None:
            self._layer_graph = os.path.join(self.work, "layers.json")
            run([self.cli, "import", self.file, "--layer-outputs", "-o", self._layer_graph],
                f"{self.name}: import --layer-outputs")
        return self._layer_graph


def check_outputs(model, meta, case_dir, target, label, extra=()):
    """Runs the model on the case (with `extra` arguments to `run`); returns the problems
    (empty: every output equals TFLM's)."""
    out = run([model.cli, "run", model.file, *model.input_args(meta, case_dir), "--target", target, "--json", *extra],
              f"{label}: run --target {target}")
    got = json.loads(out)["outputs"]
    if len(got) != len(meta["outputs"]):
        return [f"{label}: {len(got)} outputs, TFLM's model has {len(meta['outputs'])}"]
    by_name = {o["name"]: o for o in got}
    problems = []
    for k, spec in enumerate(meta["outputs"]):
        o = by_name.get(spec["name"], got[k])  # by name; by position for a nameless output
        if o["dtype"] not in DTYPES:
            problems.append(f"{label}: output {k} is {o['dtype']}")
            continue
        mine = npy_from_values(DTYPES[o["dtype"]], o["shape"], o["values"])
        p = compare_arrays(mine, read_npy(os.path.join(case_dir, spec["file"])), f"{label}: output {k} '{spec['name']}'")
        if p:
            problems.append(p)
    return problems


def check_layers(model, meta, case_dir, target, label):
    """Every operator's output against TFLM's layers/: the first that differs, or None. The
    layer graph's outputs come back as `run --json` lists them, in the graph's order (no
    file names to guess: a layer may be named 'MobilenetV1/Predictions/Reshape_1')."""
    graph = model.layer_graph()
    nodes = json.load(open(graph))["outputs"]
    layers = meta["layers"]
    if len(nodes) != len(layers):
        return f"{label}: {len(nodes)} layer outputs, TFLM's reference has {len(layers)}"
    out = run([model.cli, "run", graph, *model.input_args(meta, case_dir), "--target", target, "--json"],
              f"{label}: run the layer graph --target {target}")
    got = json.loads(out)["outputs"]
    if len(got) != len(layers):
        return f"{label}: run gave {len(got)} layer outputs, TFLM's reference has {len(layers)}"
    for node, layer, o in zip(nodes, layers, got):
        what = f"{label}: layer {layer['index']} ({layer['op']}, tensor '{layer['name']}', node '{node}')"
        if o["dtype"] not in DTYPES:
            return f"{what}: {o['dtype']} output"
        p = compare_arrays(npy_from_values(DTYPES[o["dtype"]], o["shape"], o["values"]),
                           read_npy(os.path.join(case_dir, layer["file"])), what)
        if p:
            return p + " -- the first layer that differs"
    print(f"ok {label}: all {len(layers)} layers equal TFLM's")
    return None


def one_case(cli, zoo, name, case, target, layers):
    case_dir = os.path.join(zoo, "reference", name, case)
    if not os.path.isdir(case_dir):
        raise SystemExit(f"FAIL: no case {case_dir}")
    meta = json.load(open(os.path.join(case_dir, "meta.json")))
    label = f"{name} {case} on {target}"
    with tempfile.TemporaryDirectory() as work:
        model = Model(cli, zoo, name, work)
        if layers:
            # Every model output is an operator's output, so the layer graph's run checks the
            # outputs too: one run instead of two (the model graph itself runs in the other
            # cases of the model: seed2 on the host, seed1 on Cortex-M4).
            if "layers" not in meta:
                raise SystemExit(f"FAIL: {case_dir} has no layers (only the seed1 cases do)")
            layer_tensors = {layer["tensor"] for layer in meta["layers"]}
            missing = [o["name"] for o in meta["outputs"] if o["tensor"] not in layer_tensors]
            problems = check_outputs(model, meta, case_dir, target, label) if missing else []
            p = check_layers(model, meta, case_dir, target, label)
            if p:
                problems.append(p)
            elif not missing:
                print(f"ok {label}: its {len(meta['outputs'])} output(s), layers of the run above, equal TFLM's")
        else:
            problems = check_outputs(model, meta, case_dir, target, label)
            if not problems:
                print(f"ok {label}: {len(meta['outputs'])} output(s) equal TFLM's")
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


def seanet_one(cli, zoo, work, name):
    """The problems of one SEANet model's golden case on the host (empty: TFLM's output)."""
    case_dir = os.path.join(zoo, "reference", name, "golden")
    meta = json.load(open(os.path.join(case_dir, "meta.json")))
    try:
        return check_outputs(Model(cli, zoo, name, work), meta, case_dir, "host", name)
    except RunFailed as e:  # refused or failed: counted, and the others still run
        return [str(e)]


def seanet(cli, zoo, patterns):
    names = sorted(n for n in os.listdir(os.path.join(zoo, "reference"))
                   if n.startswith("seanet_") and any(fnmatch.fnmatchcase(n, p) for p in patterns))
    if not names:
        raise SystemExit(f"FAIL: no SEANet model matches {' '.join(patterns)}")
    passed, total, failures = {}, {}, []
    with tempfile.TemporaryDirectory() as work:
        # Two at a time (ctest reserves two processors for this test): each run is mostly
        # the C compiler's.
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda n: seanet_one(cli, zoo, work, n), names))
    for name, problems in zip(names, results):
        family = re.sub(r"\d+$", "", name[len("seanet_"):])
        total[family] = total.get(family, 0) + 1
        if problems:
            failures += problems
        else:
            passed[family] = passed.get(family, 0) + 1
    for family in sorted(total):
        print(f"seanet {family}: {passed.get(family, 0)} of {total[family]} equal TFLM's output")
    print(f"seanet: {sum(passed.values())} of {len(names)} models")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) < 2:
        raise SystemExit(__doc__)
    cli, zoo = args[0], args[1]
    if skip_without(zoo):
        return SKIP
    if "--seanet" in sys.argv:
        return seanet(cli, zoo, args[2:])
    if len(args) != 5:
        raise SystemExit(__doc__)
    try:
        return one_case(cli, zoo, *args[2:5], "--layers" in sys.argv)
    except RunFailed as e:
        print(f"FAIL: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
