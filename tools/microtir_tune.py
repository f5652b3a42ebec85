#!/usr/bin/env python3
"""microtir tune: per-layer int8 schedules chosen on exact instruction counts, measured on
a dask.distributed cluster (docs/schedule-records.md, "Tuning").

    microtir tune MODEL --target cortex-m4 [--max-flash N] [--max-ram N] [--trials N]
                  [--workers N | --scheduler tcp://HOST:8786] [--input NAME=FILE.npy]
                  [--cache DIR] -o records.json

The search space comes from the kernels (`microtir tune MODEL --target T --space`: per
layer, the schedules whose switch changes its kernel). A candidate is a schedule record
that switches a set of knobs on every layer they apply to; one QEMU run of
`microtir run ... --profile-layers` gives every layer's exact count under it. Per-layer
counts are per kernel, so layers are independent: each layer keeps the candidate that
counts fewest instructions for it (ties: the earlier candidate, the default first). The
chosen record is then measured whole and checked against the flash and RAM budgets;
while over, the layer whose choice saves the fewest instructions goes back to the default.

Why Python calling the CLI: a measurement is a compile (host) and a firmware build and
QEMU run (subprocesses either way); a worker that runs `microtir` in a subprocess needs
nothing but the binary, survives a crash of it, and ships plain bytes (model, record,
inputs) rather than pickled extension objects, so the same task runs on a LocalCluster or
on any scheduler whose workers have microtir at the same path. Measurements are cached on
disk by (the generated kernel sources' hash, target), so a second run only compiles.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

FORMAT, VERSION = "microtir-schedule-record", 1


def log(message):
    print(f"microtir tune: {message}", file=sys.stderr, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="microtir tune", description=__doc__.split("\n\n")[0])
    p.add_argument("--microtir", required=True, help=argparse.SUPPRESS)
    p.add_argument("model", help="the model: .tflite, .onnx or a JSON graph")
    p.add_argument("--target", required=True, help="a target with an instruction counter: cortex-m3|m4|m7|m33|m55, riscv32")
    p.add_argument("-o", "--output", required=True, help="the schedule record to write (records.json)")
    p.add_argument("--max-flash", help="flash budget of the tuned firmware (65536, 64K, 1M): run's budget gate")
    p.add_argument("--max-ram", help="RAM budget (static RAM plus the stack high-water), as --max-flash")
    p.add_argument("--trials", type=int, default=64, help="at most this many candidates besides the default (default 64)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=1, help="workers of the local Dask cluster (default 1)")
    g.add_argument("--scheduler", help="address of a running Dask scheduler (tcp://HOST:8786) instead")
    p.add_argument("--input", action="append", default=[], help="NAME=FILE.npy (default: a fixed pseudo-random input)")
    p.add_argument("--cache", default=os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                                                   "microtir", "tune"),
                   help="measurement cache folder (default ~/.cache/microtir/tune; 'off' for none)")
    return p.parse_args(argv)


def run_cli(cli, args, budgeted=False):
    """The command's stdout; with `budgeted`, a run over budget (exit 1 with run's JSON
    "budget" not ok and every output matching) is a result, not a failure."""
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0 and budgeted and "over budget" in p.stderr:
        out = json.loads(p.stdout)
        if all(c.get("ok", True) for c in out.get("compare", [])) and not out["budget"]["ok"]:
            return p.stdout
    if p.returncode != 0:
        raise RuntimeError(f"`microtir {' '.join(args)}` failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def default_inputs(space):
    """A fixed pseudo-random value for each input (the counts hardly depend on the data)."""
    rng = np.random.default_rng(0)
    out = {}
    for t in space["inputs"]:
        dtype = np.dtype(t["dtype"])
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            a = rng.integers(max(info.min, -128), min(info.max, 127) + 1, size=t["shape"]).astype(dtype)
        else:
            a = rng.standard_normal(t["shape"]).astype(dtype)
        out[t["name"]] = a
    return out


def npy_bytes(a):
    path = tempfile.mktemp(suffix=".npy")
    np.save(path, a)
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    return data


def candidates(space, trials):
    """The default, each knob switched on every layer it applies to, then pairs of knobs
    that apply together to some layer, in a fixed order; at most `trials` besides the default."""
    knobs = []
    for layer in space["layers"]:
        for k in layer["schedules"]:
            if k not in knobs:
                knobs.append(k)
    sets = [()] + [(k,) for k in knobs]
    for i, a in enumerate(knobs):
        for b in knobs[i + 1:]:
            if any(a in l["schedules"] and b in l["schedules"] for l in space["layers"]):
                sets.append((a, b))
    return sets[: trials + 1]


def record_for(space, choice):
    """The record switching off, per layer, the knobs `choice[operator]` names (where they apply)."""
    layers = []
    for layer in space["layers"]:
        off = [k for k in choice.get(layer["operator"], ()) if k in layer["schedules"]]
        if off:
            layers.append({"operator": layer["operator"], "node": layer["node"], "op": layer["op"],
                           "schedules": {k: False for k in off}})
    return {"format": FORMAT, "version": VERSION, "model": space["model"], "target": space["target"], "layers": layers}


def code_bytes(firmware, kernels):
    """Bytes of each kernel function in the firmware (nm -S), 0 when not found."""
    nm = shutil.which("arm-none-eabi-nm") or shutil.which("nm")
    sizes = {}
    if nm and firmware and os.path.exists(firmware):
        out = subprocess.run([nm, "-S", firmware], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] in "tT":
                sizes[parts[3]] = sizes.get(parts[3], 0) + int(parts[1], 16)
    return {k: sizes.get(k, 0) for k in kernels}


def measure(cli, target, compile_target, model_name, model_bytes, record, inputs, cache_dir, budget=()):
    """One candidate on one worker: compile with the record, then (unless the cache has the
    same kernel sources for the target) run under QEMU with per-layer counts."""
    with tempfile.TemporaryDirectory(prefix="microtir-tune-") as work:
        model = os.path.join(work, model_name)
        with open(model, "wb") as f:
            f.write(model_bytes)
        rec = os.path.join(work, "record.json")
        with open(rec, "w") as f:
            json.dump(record, f)
        art = os.path.join(work, "artifact")
        run_cli(cli, ["compile", model, "--target", compile_target, "--schedules", rec, "-o", art])
        h = hashlib.sha256(" ".join([target, *budget]).encode())
        src = os.path.join(art, "codegen")
        for root, _, files in sorted(os.walk(src)):
            for name in sorted(files):
                h.update(os.path.relpath(os.path.join(root, name), src).encode())
                with open(os.path.join(root, name), "rb") as f:
                    h.update(f.read())
        key = h.hexdigest()
        cached = os.path.join(cache_dir, key + ".json") if cache_dir else None
        if cached and os.path.exists(cached):
            with open(cached) as f:
                result = json.load(f)
            result["cached"] = True
            return result
        args = ["run", art, "--target", target, "--profile-layers", "--json", "--keep-build", os.path.join(work, "build"),
                *budget]
        for name, data in inputs.items():
            path = os.path.join(work, f"input_{len(args)}.npy")
            with open(path, "wb") as f:
                f.write(data)
            args += ["--input", f"{name}={path}"]
        ran = json.loads(run_cli(cli, args, budgeted=bool(budget)))
        report = ran["report"]
        firmware = None
        for root, _, files in os.walk(os.path.join(work, "build")):
            for name in files:
                if name.endswith(".elf"):
                    firmware = os.path.join(root, name)
        kernels = [l["kernel"] for l in report["layers"]]
        sizes = code_bytes(firmware, kernels)
        layers = {}
        for l in report["layers"]:
            for node in l["nodes"]:
                layers[node] = {"instructions": l["instructions"], "kernel": l["kernel"], "code_bytes": sizes[l["kernel"]]}
        result = {"key": key, "instructions": report["instructions"], "flash_bytes": report["flash_bytes"],
                  "ram_bytes": report["ram_bytes"], "stack_bytes": report.get("stack_bytes"), "layers": layers,
                  "within_budget": ran.get("budget", {}).get("ok", True)}
        if cached:
            os.makedirs(cache_dir, exist_ok=True)
            tmp = cached + f".{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump(result, f)
            os.replace(tmp, cached)
        result["cached"] = False
        return result


class Tuner:
    """The search on a dask.distributed Client (any: local or remote)."""

    def __init__(self, client, cli, model, target, inputs=None, cache="off", trials=64, max_flash=None, max_ram=None):
        self.client, self.cli, self.target = client, os.path.abspath(cli), target
        self.model_name = os.path.basename(model)
        with open(model, "rb") as f:
            self.model_bytes = f.read()
        self.space = json.loads(run_cli(self.cli, ["tune", model, "--target", target, "--space"]))
        given = inputs if inputs is not None else default_inputs(self.space)
        self.inputs = {k: npy_bytes(v) for k, v in given.items()}
        self.cache = None if cache in (None, "off") else os.path.abspath(cache)
        self.trials = trials
        self.budget = [a for flag, v in (("--max-flash", max_flash), ("--max-ram", max_ram)) if v for a in (flag, str(v))]
        self.measured = self.cached = 0

    def measure_all(self, records, what):
        """Measures the records on the cluster; results in the records' order."""
        from distributed import as_completed
        futures = [self.client.submit(measure, self.cli, self.target, self.space["compile_target"], self.model_name, self.model_bytes, r,
                                      self.inputs, self.cache, self.budget, pure=False, retries=1) for r in records]
        index = {f.key: i for i, f in enumerate(futures)}
        results = [None] * len(futures)
        done = 0
        for f in as_completed(futures):
            i = index[f.key]
            results[i] = f.result()
            done += 1
            self.cached += results[i]["cached"]
            self.measured += not results[i]["cached"]
            log(f"[{done}/{len(futures)}] {what} {i}: {results[i]['instructions']:,} instructions"
                f"{' (cached)' if results[i]['cached'] else ''}")
        return results

    def choose(self, sets, results):
        """Per layer, the candidate with the fewest instructions (ties: the earlier one)."""
        choice, best = {}, {}
        for layer in self.space["layers"]:
            node = layer["node"]
            counts = [r["layers"].get(node, {}).get("instructions") for r in results]
            if counts[0] is None:
                continue
            i = min(range(len(sets)), key=lambda j: (counts[j] if counts[j] is not None else float("inf"), j))
            choice[layer["operator"]] = sets[i]
            best[node] = i
        return choice, best

    @staticmethod
    def over_budget(r):
        return not r["within_budget"]

    def tune(self):
        start = time.time()
        sets = candidates(self.space, self.trials)
        log(f"{len(self.space['layers'])} layers with schedules, {len(sets) - 1} candidates besides the default, "
            f"on {self.target}")
        records = [record_for(self.space, {l["operator"]: s for l in self.space["layers"]}) for s in sets]
        results = self.measure_all(records, "candidate")
        default = results[0]
        if self.over_budget(default):
            raise RuntimeError(f"the default schedules are over budget already ({' '.join(self.budget)}): flash "
                               f"{default['flash_bytes']:,} bytes, RAM {default['ram_bytes']:,} + stack {default['stack_bytes']} bytes")
        choice, best = self.choose(sets, results)
        saving = {op: default["layers"][self.node_of(op)]["instructions"] - results[best[self.node_of(op)]]["layers"]
                  [self.node_of(op)]["instructions"] for op in choice}
        while True:
            record = record_for(self.space, choice)
            final = self.measure_all([record], "chosen record")[0]
            if not self.over_budget(final):
                break
            changed = [op for op in choice if choice[op]]
            if not changed:
                break
            worst = min(changed, key=lambda op: (saving[op], op))
            log(f"over budget (flash {final['flash_bytes']:,}, RAM {final['ram_bytes']:,} + stack {final['stack_bytes']}): "
                f"operator {worst} back to the default")
            choice[worst] = ()
        record["tuning"] = self.table(default, final, choice)
        record["tuning"]["wall_seconds"] = round(time.time() - start, 1)
        record["tuning"]["measured"], record["tuning"]["cached"] = self.measured, self.cached
        return record

    def node_of(self, op):
        return next(l["node"] for l in self.space["layers"] if l["operator"] == op)

    def table(self, default, final, choice):
        rows = []
        for layer in self.space["layers"]:
            d, c = default["layers"].get(layer["node"]), final["layers"].get(layer["node"])
            if d is None or c is None:
                continue
            rows.append({"operator": layer["operator"], "node": layer["node"], "off": list(choice.get(layer["operator"], ())),
                         "default_instructions": d["instructions"], "instructions": c["instructions"],
                         "default_code_bytes": d["code_bytes"], "code_bytes": c["code_bytes"]})
        return {"default": {k: default[k] for k in ("instructions", "flash_bytes", "ram_bytes")},
                "tuned": {k: final[k] for k in ("instructions", "flash_bytes", "ram_bytes")},
                "layers": rows}


def print_table(record, out=sys.stdout):
    t = record["tuning"]
    out.write(f"{'op':>4} {'node':40} {'default':>12} {'tuned':>12} {'code B':>14}  switched off\n")
    for r in t["layers"]:
        code = f"{r['default_code_bytes']}->{r['code_bytes']}"
        out.write(f"{r['operator']:>4} {r['node'][:40]:40} {r['default_instructions']:>12,} {r['instructions']:>12,} "
                  f"{code:>14}  {', '.join(r['off']) or '-'}\n")
    d, c = t["default"], t["tuned"]
    ratio = c["instructions"] / d["instructions"] if d["instructions"] else 1.0
    out.write(f"model: {d['instructions']:,} -> {c['instructions']:,} instructions ({ratio:.3f}x), flash "
              f"{d['flash_bytes']:,} -> {c['flash_bytes']:,} bytes, RAM {d['ram_bytes']:,} -> {c['ram_bytes']:,} bytes\n")


def make_client(workers, scheduler):
    from distributed import Client, LocalCluster
    if scheduler:
        return Client(scheduler), None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster), cluster


def main(argv):
    a = parse_args(argv)
    inputs = None
    if a.input:
        inputs = {}
        for spec in a.input:
            name, _, path = spec.partition("=")
            inputs[name] = np.load(path)
    client, cluster = make_client(a.workers, a.scheduler)
    try:
        tuner = Tuner(client, a.microtir, a.model, a.target, inputs, a.cache, a.trials, a.max_flash, a.max_ram)
        record = tuner.tune()
    except RuntimeError as e:
        raise SystemExit(f"microtir tune: {e}")
    finally:
        client.close()
        if cluster:
            cluster.close()
    with open(a.output, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print_table(record)
    log(f"wrote {a.output} ({record['tuning']['measured']} measured, {record['tuning']['cached']} from the cache, "
        f"{record['tuning']['wall_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
