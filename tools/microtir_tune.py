#!/usr/bin/env python3
"""microtir tune: per-layer int8 schedules chosen on exact instruction counts, measured on
a dask.distributed cluster (docs/schedule-records.md, "Tuning").

    microtir tune MODEL --target cortex-m4 [--max-flash N] [--max-ram N] [--trials N]
                  [--workers N | --scheduler tcp://HOST:8786] [--input NAME=FILE.npy]
                  [--cache DIR] -o records.json

The search space comes from the kernels (`microtir tune MODEL --target T --space`: per
layer, the schedules whose switch changes its kernel). A candidate is a schedule record;
one QEMU run of `microtir run ... --profile-layers` gives every layer's exact count under
it. A layer's count depends on its own kernel only, so a candidate gives each layer a
different trial and one run measures them all: the whole space (every layer's every
combination of knobs) costs as many runs as the largest layer's space, and is measured
when that fits in --trials; otherwise greedy rounds extend each layer's best set by one
knob while it improves (class Search). The chosen record is then measured whole (the
per-layer counts checked against the search's) and against the flash and RAM budgets;
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
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

FORMAT, VERSION = "microtir-schedule-record", 1
CACHE_FORMAT = "measure-2"  # what a cached measurement holds (groups of nodes)


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


def run_cli(cli, args):
    """The command's stdout."""
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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


# Knobs that act only while others are on (core/ops/schedules.h): with one of those off,
# switching them off too changes nothing, so such a set is never measured twice.
REQUIRES = {"sxtb16": ("smlad",), "interleave": ("smlad", "block"), "few_channels": ("smlad",),
            "dense_chunks": ("smlad",), "smmlar_requant": ("smlal_requant",),
            "depthwise_border_tiles": ("depthwise_tile",), "pixel_triples": ("smlad", "block"),
            "rolled_leftovers": ("block",), "word_gather": ("smlad", "fold_zero_point"),
            "pair_loads": ("smlad",), "short_pairs": ("smlad", "sxtb16", "word_gather", "pair_loads")}


def canonical(knobs, order):
    """The set of knobs switched off, in the layer's order, without those a prerequisite
    switched off already silences."""
    return tuple(k for k in order if k in knobs and not any(r in knobs for r in REQUIRES.get(k, ())))


def layer_counts(report_layers):
    """Instructions per group of graph nodes from `run --profile-layers`' operator calls:
    {(node, ...): instructions}. A kernel computing n > 1 nodes (merged kernels) called n
    times: the i-th call is the i-th node's (both in graph order); a kernel of one node (or
    its band kernels): its calls summed; any other kernel's calls summed over its nodes together."""
    calls = {}
    for call in report_layers:
        calls.setdefault(call["kernel"], []).append(call)
    counts = {}
    for kernel, made in calls.items():
        nodes = made[0]["nodes"] or [kernel]
        if len(nodes) > 1 and len(nodes) == len(made):
            pairs = [((n,), c["instructions"]) for n, c in zip(nodes, made)]
        else:
            pairs = [(tuple(sorted(nodes)), sum(c["instructions"] for c in made))]
        for key, n in pairs:
            counts[key] = counts.get(key, 0) + n
    return counts


def unit_count(counts, unit):
    """The instructions of a unit (a group of nodes measured together), or None when a
    measured group straddles it."""
    total, members = 0, set(unit)
    for key, n in counts.items():
        if members.issuperset(key):
            total += n
        elif members.intersection(key):
            return None
    return total


class Search:
    """Per-layer greedy search in rounds. A unit is a group of nodes the default's
    profile counts together (almost always one layer). Round 1 tries, on every unit, each
    knob of its layers switched off alone; later rounds extend the unit's best set by one
    more knob, only on units whose count fell in the previous round (pairs of knobs only
    where the first helped). Since per-kernel counts do not depend on the other layers'
    schedules, candidate j of a round gives every unit its j-th trial at once: a round costs
    as many measurements as the longest unit's list, not the sum over units."""

    def __init__(self, space, default_counts, default_flash=None):
        self.layers = {l["operator"]: l for l in space["layers"]}
        node_unit = {n: key for key in default_counts for n in key}
        self.units = {}
        for l in space["layers"]:
            unit = node_unit.get(l["node"])
            if unit is not None:
                self.units.setdefault(unit, []).append(l["operator"])
        self.best = {u: {} for u in self.units}  # unit -> {operator: knobs off}
        self.best_count = {u: unit_count(default_counts, u) for u in self.units}
        self.tried = {u: {self.key({})} for u in self.units}
        self.cap = 0
        # unit -> [(assignment, instructions, flash bytes)] of every trial measured, default first
        self.seen = {u: [({}, self.best_count[u], unit_flash(default_flash or {}, u))] for u in self.units}
        self.active = set(self.units)

    @staticmethod
    def key(assignment):
        return tuple(sorted((op, s) for op, s in assignment.items() if s))

    def frontier(self, unit):
        """The unit's untried assignments one knob away from its best, in a fixed order."""
        out = []
        for op in self.units[unit]:
            order = self.layers[op]["schedules"]
            base = self.best[unit].get(op, ())
            for k in order:
                s = canonical(set(base) | {k}, order)
                trial = {**self.best[unit], op: s}
                if s != base and self.key(trial) not in self.tried[unit] and trial not in out:
                    out.append(trial)
        return out

    def space_of(self, unit):
        """Every assignment of the unit but the default (each layer's canonical sets of knobs
        switched off, smaller sets first), or None when there are more than `cap`."""
        per_layer = []
        for op in self.units[unit]:
            order = self.layers[op]["schedules"]
            sets = {canonical(set(c), order) for r in range(len(order) + 1) for c in itertools.combinations(order, r)}
            per_layer.append(sorted(sets, key=lambda s: (len(s), [order.index(k) for k in s])))
        out = (dict(zip(self.units[unit], combo)) for combo in itertools.product(*per_layer))
        return list(itertools.islice((a for a in out if self.key(a)), self.cap + 1))

    def whole_round(self, limit):
        """The whole space in one round when every unit's fits in `limit` candidates: the
        per-layer optimum of the space, exactly; else None."""
        self.cap = limit
        lists = {u: self.space_of(u) for u in sorted(self.units)}
        if any(len(f) > limit for f in lists.values()):
            return None
        width = max((len(f) for f in lists.values()), default=0)
        rounds = []
        for j in range(width):
            choice = {}
            for u, f in lists.items():
                if j < len(f):
                    choice.update(f[j])
            rounds.append(choice)
        return rounds, lists

    def fit(self, room):
        """Sets each unit's best to the trial measured that minimises instructions + lam *
        flash bytes, with the smallest lam (a Lagrange multiplier) whose flash sum fits in
        `room`; False when even the smallest trials do not fit."""
        def pick(lam):
            return {u: min(obs, key=lambda o: (o[1] + lam * o[2], o[2])) for u, obs in self.seen.items()}

        def total(picked):
            return sum(o[2] for o in picked.values())
        lo, hi = 0.0, 1.0
        while total(pick(hi)) > room and hi < 1e15:
            hi *= 4
        if total(pick(0.0)) > room:
            if total(pick(hi)) > room:
                return False
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if total(pick(mid)) <= room else (mid, hi)
        for u, (trial, n, _) in pick(hi if total(pick(0.0)) > room else 0.0).items():
            self.best[u], self.best_count[u] = trial, n
        return True

    def choice(self):
        """Operator -> knobs off, over every unit's best."""
        return {op: s for u in self.units for op, s in self.best[u].items()}

    def next_round(self, limit):
        """Up to `limit` candidate choices (operator -> knobs off) and what each unit tries in them."""
        lists = {u: self.frontier(u) for u in sorted(self.active)}
        width = min(limit, max((len(f) for f in lists.values()), default=0))
        rounds = []
        for j in range(width):
            choice = self.choice()
            for u, f in lists.items():
                if j < len(f):
                    choice.update(f[j])
                    self.tried[u].add(self.key(f[j]))
            rounds.append(choice)
        return rounds, {u: f[:width] for u, f in lists.items()}

    def update(self, lists, counts, flash=None):
        """Keeps, per unit, the trial that counts fewest instructions if below its best (ties:
        the earlier); units that did not improve leave the search. `flash[j]`: candidate j's
        flash bytes per node."""
        self.active = set()
        for u, trials in lists.items():
            for j, trial in enumerate(trials):
                n = unit_count(counts[j], u)
                if n is not None:
                    self.seen[u].append((trial, n, unit_flash(flash[j] if flash else {}, u)))
                if n is not None and self.best_count[u] is not None and n < self.best_count[u]:
                    self.best[u], self.best_count[u] = trial, n
                    self.active.add(u)


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
    """Bytes of each kernel function in the firmware (nm -S), 0 when not found; a body that
    several names share (the linker folded identical code) is counted once, split among them."""
    nm = shutil.which("arm-none-eabi-nm") or shutil.which("nm")
    at, size = {}, {}
    if nm and firmware and os.path.exists(firmware):
        out = subprocess.run([nm, "-S", firmware], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] in "tT":
                at[parts[3]], size[parts[0]] = parts[0], int(parts[1], 16)
    sharing = {}
    for k in set(kernels):
        if k in at:
            sharing[at[k]] = sharing.get(at[k], 0) + 1
    return {k: size[at[k]] // sharing[at[k]] if k in at else 0 for k in kernels}


def flash_bytes_per_node(firmware, artifact, calls):
    """The flash each node's calls use: the code bytes of the functions they run (a profiled
    call names its kernel before merge_kernels; the generated call after TVMGEN_PROFILE_BEGIN
    names the function that runs) and the bytes of the weights (parameters/) they pass; a
    function or weight shared by several nodes split evenly among them. ({node: code}, {node: weights})"""
    called, args = {}, {}
    pattern = re.compile(r'TVMGEN_PROFILE_BEGIN\(\d+, "(\w+)"\);\s*(\w+)\(([^;]*)\);')
    src = os.path.join(artifact, "codegen", "host", "src")
    for name in sorted(os.listdir(src)) if os.path.isdir(src) else []:
        with open(os.path.join(src, name)) as f:
            for kernel, function, text in pattern.findall(f.read()):
                called[kernel] = function
                args.setdefault(kernel, set()).update(re.findall(r"\b(\w+)\[", text))
    params = os.path.join(artifact, "parameters")
    weights = {f[:-4]: np.load(os.path.join(params, f), mmap_mode="r").nbytes
               for f in (os.listdir(params) if os.path.isdir(params) else []) if f.endswith(".npy")}
    users = {}
    for c in calls:
        for thing in [("code", called.get(c["kernel"], c["kernel"]))] + [("weight", w) for w in args.get(c["kernel"], ())
                                                                      if w in weights]:
            users.setdefault(thing, set()).update(c["nodes"])
    sizes = code_bytes(firmware, sorted(name for kind, name in users if kind == "code"))
    code, weight = {}, {}
    for (kind, name), nodes in users.items():
        out, size = (code, sizes[name]) if kind == "code" else (weight, weights[name])
        for node in nodes:
            out[node] = out.get(node, 0) + size // len(nodes)
    return code, weight


def measure(cli, target, compile_target, model_name, model_bytes, record, inputs, cache_dir, profile=True):
    """One candidate on one worker: compile with the record, then (unless the cache has the
    same kernel sources for the target) run under QEMU with per-layer counts, or without
    them (`profile` False: the firmware as deployed, whose flash, RAM and count lack the
    hooks' 5 KB of calls and log, 12 KB of RAM and 0.05 % of instructions on VWW)."""
    with tempfile.TemporaryDirectory(prefix="microtir-tune-") as work:
        model = os.path.join(work, model_name)
        with open(model, "wb") as f:
            f.write(model_bytes)
        rec = os.path.join(work, "record.json")
        with open(rec, "w") as f:
            json.dump(record, f)
        art = os.path.join(work, "artifact")
        run_cli(cli, ["compile", model, "--target", compile_target, "--schedules", rec, "-o", art])
        h = hashlib.sha256(" ".join([CACHE_FORMAT, target] + ([] if profile else ["plain"])).encode())
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
        args = ["run", art, "--target", target, "--json", "--keep-build", os.path.join(work, "build")]
        args += ["--profile-layers"] if profile else []
        for name, data in inputs.items():
            path = os.path.join(work, f"input_{len(args)}.npy")
            with open(path, "wb") as f:
                f.write(data)
            args += ["--input", f"{name}={path}"]
        ran = json.loads(run_cli(cli, args))
        report = ran["report"]
        firmware = None
        for root, _, files in os.walk(os.path.join(work, "build")):
            for name in files:
                if name.endswith(".elf"):
                    firmware = os.path.join(root, name)
        node_bytes, node_weights = flash_bytes_per_node(firmware, art, report.get("layers", []))
        weights = sum(np.load(os.path.join(art, "parameters", f)).nbytes
                      for f in os.listdir(os.path.join(art, "parameters")) if f.endswith(".npy")) \
            if os.path.isdir(os.path.join(art, "parameters")) else 0
        groups = [[list(key), n] for key, n in sorted(layer_counts(report.get("layers", [])).items())]
        result = {"key": key, "instructions": report["instructions"], "flash_bytes": report["flash_bytes"],
                  "ram_bytes": report["ram_bytes"], "stack_bytes": report.get("stack_bytes"),
                  "weights_bytes": weights, "test_input_bytes": report.get("test_input_bytes"),
                  "groups": groups, "code_bytes": node_bytes, "weight_bytes": node_weights}
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
        self.max_flash, self.max_ram = max_flash, max_ram
        self.measured = self.cached = self.candidates = self.rounds = 0
        self.exhaustive = False
        self.default_plain = None

    def measure_all(self, records, what, profiles=None):
        """Measures the records on the cluster (profiles[i]: with per-layer counts, default
        True); results in the records' order."""
        from distributed import as_completed
        profiles = profiles or [True] * len(records)
        futures = [self.client.submit(measure, self.cli, self.target, self.space["compile_target"], self.model_name, self.model_bytes, r,
                                      self.inputs, self.cache, p, pure=False, retries=1) for r, p in zip(records, profiles)]
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

    def measure_whole(self, record, what):
        """The record profiled (its per-layer counts) and as deployed (its real figures):
        (profiled, plain)."""
        profiled, plain = self.measure_all([record, record], what, [True, False])
        return profiled, plain

    def over_budget(self, r):
        """run's budget gate on a measurement: its flash, its static RAM plus the stack high-water
        (measured without the budget, so the cache serves any budget)."""
        return bool((self.max_flash and r["flash_bytes"] > parse_size(self.max_flash)) or
                    (self.max_ram and r["ram_bytes"] + (r["stack_bytes"] or 0) > parse_size(self.max_ram)))

    def search(self):
        """The default, then the whole space or the rounds of Search until no unit improves
        or --trials are spent."""
        default, self.default_plain = self.measure_whole(record_for(self.space, {}), "default")
        plain = self.default_plain
        ram_over = self.max_ram and plain["ram_bytes"] + (plain["stack_bytes"] or 0) > parse_size(self.max_ram)
        if ram_over or (self.over_budget(plain) and not self.max_flash):
            raise RuntimeError(f"the default schedules are over budget already ({' '.join(self.budget)}): flash "
                               f"{plain['flash_bytes']:,} bytes, RAM {plain['ram_bytes']:,} + stack {plain['stack_bytes']} bytes")
        search = Search(self.space, counts_of(default), flash_of(default))
        log(f"{len(self.space['layers'])} layers with schedules in {len(search.units)} units, on {self.target}; "
            f"at most {self.trials} candidates besides the default")
        whole = search.whole_round(self.trials)
        if whole:
            log(f"the whole space: {len(whole[0])} candidates")
            self.exhaustive = True
        while self.candidates < self.trials:
            choices, lists = whole or search.next_round(self.trials - self.candidates)
            if not choices:
                break
            self.rounds += 1
            results = self.measure_all([record_for(self.space, c) for c in choices], f"round {self.rounds}, candidate")
            self.candidates += len(choices)
            search.update(lists, [counts_of(r) for r in results], [flash_of(r) for r in results])
            if whole:
                break
        return default, search

    def fit_flash(self, default, search):
        """With --max-flash: per unit the fastest trials whose flash fits (Search.fit, on the
        per-node code and weight bytes), measured whole; an overshoot (the estimate is per
        node, the linker's sharing is not) tightens the room and fits again."""
        budget = parse_size(self.max_flash)
        room = budget - (self.default_plain["flash_bytes"] - sum(unit_flash(flash_of(default), u) for u in search.units))
        for _ in range(6):
            if not search.fit(room):
                least = sum(min(o[2] for o in obs) for obs in search.seen.values())
                raise RuntimeError(f"no choice of the {self.candidates} candidates measured fits --max-flash {self.max_flash}: "
                                   f"the smallest per layer sum to {least:,} bytes of kernels and weights, the "
                                   f"room for them is {room:,} bytes")
            final = self.measure_whole(record_for(self.space, search.choice()), "chosen record")
            if final[1]["flash_bytes"] <= budget:
                return final
            room -= final[1]["flash_bytes"] - budget
            log(f"flash {final[1]['flash_bytes']:,} over {budget:,}: fitting in {room:,} bytes")
        return final

    def tune(self):
        start = time.time()
        default, search = self.search()
        final = self.fit_flash(default, search) if self.max_flash else None  # (profiled, plain)
        units = {u: ops for u, ops in search.units.items() if search.best[u]}
        saving = {u: unit_count(counts_of(default), u) - search.best_count[u] for u in units}
        while True:
            choice = search.choice()
            record = record_for(self.space, choice)
            final = final or self.measure_whole(record, "chosen record")
            if not self.over_budget(final[1]) or not units:
                break
            worst = min(units, key=lambda u: (saving[u], u))
            log(f"over budget (flash {final[1]['flash_bytes']:,}, RAM {final[1]['ram_bytes']:,} + stack {final[1]['stack_bytes']}): "
                f"{', '.join(worst)} back to the default")
            search.best[worst], final = {}, None
            del units[worst]
        (final, final_plain) = final
        record["tuning"] = self.table((default, self.default_plain), (final, final_plain), choice)
        # The choice rests on each layer's count being independent of the others' schedules:
        # the whole record's counts check that, layer by layer.
        predicted = {u: search.best_count[u] if search.best[u] else unit_count(counts_of(default), u) for u in search.units}
        differ = {"+".join(u): [n, unit_count(counts_of(final), u)] for u, n in predicted.items()
                  if unit_count(counts_of(final), u) != n}
        if differ:
            log(f"layers whose count differs from the search's (predicted, measured): {differ}")
        record["tuning"].update(differs_from_search=differ, wall_seconds=round(time.time() - start, 1),
                                measured=self.measured, cached=self.cached, candidates=self.candidates,
                                rounds=self.rounds, whole_space=self.exhaustive,
                                within_budget=not self.over_budget(final_plain))
        return record

    def table(self, defaults, finals, choice):
        """Per layer the profiled counts and code bytes; the model's totals as deployed."""
        (default, default_plain), (final, final_plain) = defaults, finals
        rows = []
        before, after = counts_of(default), counts_of(final)
        unit_of = {n: key for key in before for n in key}
        for layer in self.space["layers"]:
            unit = unit_of.get(layer["node"])
            if unit is None or unit_count(after, unit) is None:
                continue
            rows.append({"operator": layer["operator"], "node": layer["node"], "off": list(choice.get(layer["operator"], ())),
                         "default_instructions": unit_count(before, unit), "instructions": unit_count(after, unit),
                         "default_code_bytes": default["code_bytes"].get(layer["node"], 0),
                         "code_bytes": final["code_bytes"].get(layer["node"], 0)})
            if len(unit) > 1:
                rows[-1]["measured_with"] = list(unit)
        keys = ("instructions", "flash_bytes", "ram_bytes", "stack_bytes", "weights_bytes", "test_input_bytes")
        return {"default": {k: default_plain[k] for k in keys}, "tuned": {k: final_plain[k] for k in keys}, "layers": rows}


def unit_flash(flash, unit):
    return sum(flash.get(n, 0) for n in unit)


def flash_of(result):
    """A measurement's flash bytes per node: its code and its weights."""
    return {n: result["code_bytes"].get(n, 0) + result["weight_bytes"].get(n, 0)
            for n in set(result["code_bytes"]) | set(result["weight_bytes"])}


def parse_size(text):
    """run's budget sizes: 65536, 64K, 1M."""
    text = str(text)
    scale = {"K": 1024, "M": 1024 * 1024}.get(text[-1:].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def counts_of(result):
    """A measurement's counts per group of nodes, as layer_counts gives them."""
    return {tuple(nodes): n for nodes, n in result["groups"]}


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
    log(f"wrote {a.output} ({record['tuning']['candidates']} candidates in {record['tuning']['rounds']} rounds; "
        f"{record['tuning']['measured']} measured, {record['tuning']['cached']} from the cache, "
        f"{record['tuning']['wall_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
