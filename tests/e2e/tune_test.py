#!/usr/bin/env python3
"""Schedule records and `microtir tune` (docs/schedule-records.md) on the digits int8 model
(web/examples/digits_int8.json made binary by flatc: a CONV_2D and a FULLY_CONNECTED with
schedules) on Cortex-M4 under QEMU:

- every knob `tune --space` lists for a layer changes the generated code when switched
  off on that layer alone (the tuner never proposes a knob that does nothing);
- a record switching one knob off on the convolution changes that kernel's code, the
  artifact's metadata names the record (path and hash), and the outputs stay bit-exact;
- a record of another model, one naming the wrong node, a knob that does not apply and
  malformed records are refused with clear errors (file:line:col for JSON syntax);
- the tuner on a 1-worker LocalCluster (through the CLI), on a 2-worker LocalCluster with
  a worker process killed mid-run (a fresh cache, so it measures), and again through the
  CLI on 2 workers with the first cache (nothing measured) give the same record;
- the tuned record applied by `run --profile-layers` gives the tuned per-layer counts;
- the search's first round measured as the tuner does (candidate j switches every layer's
  j-th knob at once) gives each layer the count (within the few instructions of its call's
  argument setup) and the choice that measuring each layer's knob alone (the other layers
  at the default) gives;
- the search alone (no QEMU): rounds extend only layers that improved, never measure a set
  a prerequisite silences twice, and a merged kernel's calls are attributed per node.

usage: tune_test.py MICROTIR SOURCE_DIR FLATC
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
CALL_SETUP_SLACK = 4  # instructions a layer's count may move with its neighbours' code
sys.dont_write_bytecode = True  # the tuner is imported from the source tree


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


def check(cond, what, failures):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def make_model(src, flatc, work):
    schema = os.path.join(src, "core/frontend/tflite/tflite_schema.fbs")
    subprocess.run([flatc, "-b", "-o", work, schema, os.path.join(src, "web/examples/digits_int8.json")], check=True)
    return os.path.join(work, "digits_int8.tflite")


def record_checks(cli, model, space, work, failures):
    conv = next(l for l in space["layers"] if l["op"] == "qconv2d")
    knob = conv["schedules"][0]
    rec = {"format": "microtir-schedule-record", "version": 1, "model": space["model"], "target": "cortex-m4",
           "layers": [{"operator": conv["operator"], "node": conv["node"], "op": "qconv2d", "schedules": {knob: False}}]}
    path = os.path.join(work, "one.json")
    json.dump(rec, open(path, "w"), indent=1)
    target = space["compile_target"]
    arts = {}
    for name, extra in (("default", []), ("record", ["--schedules", path])):
        rc, out, err = run([cli, "compile", model, "--target", target, "-o", os.path.join(work, name), "--json"] + extra)
        check(rc == 0, f"compile {name} exits 0 ({err.strip()[:200]})", failures)
        arts[name] = json.loads(out)["metadata"] if rc == 0 else {}
    meta = arts["record"].get("schedule_record", {})
    check(meta.get("path") == path and len(meta.get("hash", "")) == 32, f"metadata.json names the record: {meta}", failures)
    kernel = lambda d: "".join(open(os.path.join(r, f)).read() for r, _, fs in os.walk(os.path.join(work, d, "codegen"))
                               for f in sorted(fs) if f.endswith(".c"))
    check(kernel("default") != kernel("record"), f"switching '{knob}' off on {conv['node']} changes the generated code",
          failures)
    outs = {}
    for name in ("default", "record"):
        rc, out, err = run([cli, "run", os.path.join(work, name), "--target", "cortex-m4", "--json",
                            "--input", f"x={os.path.join(work, 'x.npy')}"])
        check(rc == 0, f"run {name} artifact on cortex-m4 matches the interpreter ({err.strip()[-200:]})", failures)
        outs[name] = json.loads(out)["outputs"] if rc == 0 else None
    check(outs["default"] is not None and outs["default"] == outs["record"], "the record's outputs equal the default's",
          failures)
    rc, _, err = run([cli, "run", os.path.join(work, "record"), "--target", "cortex-m4", "--schedules", path])
    check(rc == 1 and "runs with the record it was compiled with" in err, "run ARTIFACT --schedules is refused", failures)

    def refused(text, pattern, what, extra=()):
        bad = os.path.join(work, "bad.json")
        open(bad, "w").write(text)
        rc, _, err = run([cli, "compile", model, "--target", target, "-o", os.path.join(work, "bad"), "--schedules", bad,
                          *extra])
        ok = rc == 1 and re.search(pattern, err) is not None
        check(ok, f"{what}: {err.strip()[:300]}", failures)

    other = dict(rec, model={"name": "kws.tflite", "fingerprint": "0" * 32})
    refused(json.dumps(other), r"was made for model 'kws.tflite' \(fingerprint 0+\), not for 'digits_int8.tflite'",
            "a record of another model is refused by name")
    wrong = json.loads(json.dumps(rec))
    wrong["layers"][0]["node"] = "nope"
    refused(json.dumps(wrong), r"names node 'nope' \(qconv2d\), but operator \d+ of 'digits_int8.tflite' is",
            "a record naming another node is refused")
    fc = next(l for l in space["layers"] if l["op"] == "qdense")
    na = json.loads(json.dumps(rec))
    na["layers"] = [{"operator": fc["operator"], "node": fc["node"], "op": "qdense", "schedules": {"depthwise_tile": False}}]
    refused(json.dumps(na), r"schedule 'depthwise_tile' does not apply to node", "a knob that does not apply is refused")
    text = json.dumps(rec, indent=1)
    lines = text.split("\n")
    cut = "\n".join(lines[:3]) + "\n  oops\n" + "\n".join(lines[3:])
    refused(cut, r"bad\.json:4:3: error: invalid JSON", "a JSON syntax error is located at file:line:col")
    unknown = text.replace(f'"{knob}"', '"no_such_knob"')
    line = next(i + 1 for i, l in enumerate(unknown.split("\n")) if "no_such_knob" in l)
    refused(unknown, rf"bad\.json:{line}:\d+: error: layers\[0\]: unknown schedule 'no_such_knob'",
            "an unknown schedule is located at its key")
    refused(text.replace('"version": 1', '"version": 2'), r"schedule record version 2: this microtir reads version 1",
            "another version is refused")


def compile_target_checks(cli, model, space, work, failures):
    """The space's compile_target is what `run --target cortex-m4` compiles (linked weights):
    the tuner measures the firmware run deploys, whose AOT main differs from a params-struct one."""
    rc, out, err = run([cli, "compile", model, "--target", "c -mcpu=cortex-m4", "-o", os.path.join(work, "deployed"),
                        "--json"])
    deployed = json.loads(out)["metadata"]["target"] if rc == 0 else err.strip()[:200]
    check(space["compile_target"] == deployed, f"the space's compile_target {space['compile_target']!r} is run's: {deployed!r}",
          failures)


def space_checks(cli, model, space, work, failures):
    """Each listed knob, switched off on its layer alone, changes the generated code."""
    def code(extra):
        out = os.path.join(work, "probe")
        rc, _, err = run([cli, "compile", model, "--target", space["compile_target"], "-o", out] + extra)
        if rc != 0:
            return "error: " + err
        return "".join(open(os.path.join(r, f)).read() for r, _, fs in sorted(os.walk(os.path.join(out, "codegen")))
                       for f in sorted(fs))
    default = code([])
    no_ops = []
    for layer in space["layers"]:
        for knob in layer["schedules"]:
            rec = {"format": "microtir-schedule-record", "version": 1, "model": space["model"],
                   "layers": [{"operator": layer["operator"], "node": layer["node"], "op": layer["op"],
                               "schedules": {knob: False}}]}
            path = os.path.join(work, "probe.json")
            json.dump(rec, open(path, "w"))
            if code(["--schedules", path]) == default:
                no_ops.append(f"{layer['node']}:{knob}")
    n = sum(len(l["schedules"]) for l in space["layers"])
    check(not no_ops, f"each of the {n} knobs of the space changes its layer's code (no-ops: {no_ops})", failures)


def layers_of(record):
    return record["layers"]


def kill_a_worker_when_busy(client, killed):
    """Kills the process of a worker that is running a task (the nanny restarts it)."""
    deadline = time.time() + 120
    while time.time() < deadline and not killed:
        busy = [w for w, tasks in client.processing().items() if tasks]
        if busy:
            time.sleep(1.0)  # inside the measurement: compiling, building or in QEMU
            pids = client.run(os.getpid, workers=[busy[0]])
            for pid in pids.values():
                os.kill(pid, signal.SIGKILL)
                killed.append(busy[0])
            return
        time.sleep(0.05)


def tuner_checks(cli, model, src, work, failures):
    tools = os.path.join(src, "tools")
    sys.path.insert(0, tools)
    os.environ["PYTHONPATH"] = tools + os.pathsep + os.environ.get("PYTHONPATH", "")
    import microtir_tune
    from distributed import Client, LocalCluster

    cache_a, cache_b = os.path.join(work, "cache_a"), os.path.join(work, "cache_b")
    rec_a, rec_c = os.path.join(work, "a.json"), os.path.join(work, "c.json")
    base = [cli, "tune", model, "--target", "cortex-m4", "--trials", "2"]
    start = time.time()
    rc, out, err = run(base + ["--workers", "1", "--cache", cache_a, "-o", rec_a])
    check(rc == 0, f"tune on 1 worker exits 0 ({time.time() - start:.1f} s; {err.strip()[-300:]})", failures)
    if rc != 0:
        return
    print(out)
    a = json.load(open(rec_a))
    check(a["tuning"]["measured"] > 0 and "[1/" in err, "the 1-worker run measured, with progress on stderr", failures)

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    killed = []
    try:
        killer = threading.Thread(target=kill_a_worker_when_busy, args=(client, killed))
        killer.start()
        start = time.time()
        b = microtir_tune.Tuner(client, cli, model, "cortex-m4", cache=cache_b, trials=2).tune()
        killer.join()
        print(f"2 workers, one killed: {time.time() - start:.1f} s, killed {killed}")
    finally:
        client.close()
        cluster.close()
    check(bool(killed), "a worker process was killed mid-run", failures)
    check(layers_of(b) == layers_of(a), "2 workers with one killed give the 1-worker record", failures)
    check(b["tuning"]["layers"] == a["tuning"]["layers"], "... and the same per-layer counts", failures)

    start = time.time()
    rc, out, err = run(base + ["--workers", "2", "--cache", cache_a, "-o", rec_c])
    check(rc == 0, f"tune again on 2 workers with the first cache exits 0 ({time.time() - start:.1f} s)", failures)
    if rc == 0:
        c = json.load(open(rec_c))
        check(layers_of(c) == layers_of(a), "the 2-worker CLI run gives the same record", failures)
        check(c["tuning"]["measured"] == 0, f"... measuring nothing: all {c['tuning']['cached']} from the cache", failures)

    rc, out, err = run([cli, "run", model, "--target", "cortex-m4", "--schedules", rec_a, "--profile-layers", "--json",
                        "--input", f"x={os.path.join(work, 'x.npy')}"])
    check(rc == 0, f"run with the tuned record exits 0 ({err.strip()[-200:]})", failures)
    if rc == 0:
        measured = microtir_tune.layer_counts(json.loads(out)["report"]["layers"])
        counts = {n: c for key, c in measured.items() for n in key}
        tuned = {r["node"]: r["instructions"] for r in a["tuning"]["layers"]}
        check(all(counts.get(n) == v for n, v in tuned.items()),
              f"the record applied gives the tuned counts {tuned} (run: {counts})", failures)


def separate_checks(cli, model, space, work, failures, width=3):
    """Round 1 of the search (at most `width` candidates) measured as the tuner measures it,
    and each layer's trial measured alone: the same count per layer, the same choice."""
    import microtir_tune
    inputs = {"x": open(os.path.join(work, "x.npy"), "rb").read()}
    model_bytes = open(model, "rb").read()

    def counts(choice):
        r = microtir_tune.measure(cli, "cortex-m4", space["compile_target"], os.path.basename(model), model_bytes,
                                  microtir_tune.record_for(space, choice), inputs, None)
        return microtir_tune.counts_of(r)
    default = counts({})
    search = microtir_tune.Search(space, default)
    choices, lists = search.next_round(width)
    combined = [counts(c) for c in choices]
    search.update(lists, combined)
    differ, alone = [], {}
    for unit, trials in lists.items():
        alone[unit] = [microtir_tune.unit_count(counts(t), unit) for t in trials]
        for j, trial in enumerate(trials):
            together = microtir_tune.unit_count(combined[j], unit)
            # A call's count includes its argument setup in the AOT main, which the register
            # allocation around the neighbouring calls can move by an instruction or two.
            if alone[unit][j] is None or together is None or abs(alone[unit][j] - together) > CALL_SETUP_SLACK:
                differ.append(f"{unit} {trial}: alone {alone[unit][j]}, with the others {together}")
    n = sum(len(t) for t in lists.values())
    check(len(choices) < n and not differ, f"{len(choices)} measurements give the counts of {n} per-layer ones, within "
          f"{CALL_SETUP_SLACK} instructions (beyond: {differ})", failures)
    choice = {}
    for unit, own in alone.items():
        j = min(range(len(own)), key=lambda i: (own[i], i))
        choice[unit] = lists[unit][j] if own[j] < microtir_tune.unit_count(default, unit) else {}
    check(choice == search.best, f"the choice from all-layers measurements equals the per-layer one: {choice}", failures)


def search_checks(failures):
    """The search on synthetic counts (no QEMU)."""
    import microtir_tune
    space = {"layers": [{"operator": 0, "node": "a", "op": "qconv2d", "schedules": ["block", "unroll", "smlad", "sxtb16"]},
                        {"operator": 1, "node": "b", "op": "qdense", "schedules": ["unroll", "smlad", "sxtb16"]}]}

    def cost(node, off):  # a: sxtb16 off helps, more with unroll off too; b: smlad off helps a little
        dsp = "smlad" not in off
        if node == "a":
            return 1000 - 100 * (dsp and "sxtb16" in off) - 50 * (dsp and {"unroll", "sxtb16"} <= set(off)) + 10 * ("block" in off)
        return 500 - 5 * ("smlad" in off)
    measure = lambda c: {("a",): cost("a", c.get(0, ())), ("b",): cost("b", c.get(1, ())), ("other",): 7}
    search, rounds = microtir_tune.Search(space, measure({})), []
    while True:
        choices, lists = search.next_round(100)
        if not choices:
            break
        rounds.append(choices)
        search.update(lists, [measure(c) for c in choices])
    check([len(r) for r in rounds] == [4, 2, 2], f"rounds of 4, 2 and 2 candidates (the longest list): {[len(r) for r in rounds]}", failures)
    check(search.choice() == {0: ("unroll", "sxtb16"), 1: ("smlad",)}, f"the best per layer: {search.choice()}", failures)
    tried_b = [c.get(1) for r in rounds for c in r]
    check(("smlad", "sxtb16") not in tried_b and ("sxtb16", "smlad") not in tried_b,
          "sxtb16 is never tried with smlad off (it changes nothing then)", failures)
    # Under a flash room: a (1000 / 300 B by default) can go to 850 for 500 B or 1010 for 200 B,
    # b (500 / 100 B) to 495 for 400 B. The fastest within 650 B: a at 850, b at the default.
    fitted = microtir_tune.Search(space, {("a",): 1000, ("b",): 500}, {"a": 300, "b": 100})
    fitted.update({("a",): [{0: ("unroll", "sxtb16")}, {0: ("block",)}], ("b",): [{1: ("smlad",)}]},
                  [{("a",): 850, ("b",): 495}, {("a",): 1010, ("b",): 500}], [{"a": 500, "b": 400}, {"a": 200, "b": 100}])
    ok = fitted.fit(650)
    check(ok and fitted.choice() == {0: ("unroll", "sxtb16")}, f"fit(650 B): {fitted.choice()}", failures)
    ok = fitted.fit(350)
    check(ok and fitted.choice() == {0: ("block",)}, f"fit(350 B) takes the smaller, slower a: {fitted.choice()}", failures)
    check(not fitted.fit(250), "fit(250 B) fails: nothing measured is that small", failures)
    calls = [{"kernel": "k", "nodes": ["p", "q"], "instructions": 10}, {"kernel": "j", "nodes": ["r"], "instructions": 3},
             {"kernel": "k", "nodes": ["p", "q"], "instructions": 12}, {"kernel": "j", "nodes": ["r"], "instructions": 4},
             {"kernel": "f", "nodes": ["s", "t"], "instructions": 9}]
    got = microtir_tune.layer_counts(calls)
    check(got == {("p",): 10, ("q",): 12, ("r",): 7, ("s", "t"): 9}, f"calls attributed per node: {got}", failures)


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    cli, src, flatc = sys.argv[1:]
    try:
        import distributed  # noqa: F401
        import numpy as np
    except ImportError as e:
        print(f"SKIP: {e} (scripts/install-deps.sh installs python3-distributed and python3-numpy)")
        return SKIP
    failures = []
    with tempfile.TemporaryDirectory() as work:
        model = make_model(src, flatc, work)
        rc, out, err = run([cli, "tune", model, "--target", "cortex-m4", "--space"])
        if rc != 0:
            raise SystemExit(f"FAIL: tune --space: {err}")
        space = json.loads(out)
        print(json.dumps(space["layers"]))
        sys.path.insert(0, os.path.join(src, "tools"))
        import microtir_tune
        x = microtir_tune.default_inputs(space)["x"]
        np.save(os.path.join(work, "x.npy"), x)
        search_checks(failures)
        compile_target_checks(cli, model, space, work, failures)
        space_checks(cli, model, space, work, failures)
        separate_checks(cli, model, space, work, failures)
        record_checks(cli, model, space, work, failures)
        tuner_checks(cli, model, src, work, failures)
    if failures:
        print(f"{len(failures)} failed")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
