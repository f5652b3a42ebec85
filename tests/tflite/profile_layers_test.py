#!/usr/bin/env python3
"""`microtir run --profile-layers` on Cortex-M4 (QEMU) with the anomaly-detection model:
one instruction count per operator call of run(), every TFLite operator's output
computed by exactly one of the counted kernels, every count positive, and the counts
summing to the unprofiled total less the AOT main's own glue (workspace, return-code
checks: a few dozen instructions per call). The outputs equal the unprofiled run's,
which reports no per-operator counts. A target without a counter is refused.
With `llvm`, the same through the LLVM backend, whose objects get the hooks
(-profile-hooks=1) only for the profiled run; an LLVM artifact compiled without them
is refused with the option to add.

usage: profile_layers_test.py MICROTIR MODEL REFERENCE_CASE_DIR [c|llvm]
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_model_test import SKIP, skip_without  # noqa: E402

# The AOT main's own instructions per operator call outside the counted regions: the
# return-code check and the call's tail, plus the workspace set-up once.
GLUE_PER_CALL, GLUE_ONCE = 20, 60


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) not in (4, 5):
        raise SystemExit(__doc__)
    cli, model, case = sys.argv[1:4]
    backend = sys.argv[4] if len(sys.argv) == 5 else "c"
    if skip_without(model, case):
        return SKIP
    quant = json.load(open(os.path.join(case, "quant.json")))
    x = f"{quant['input']['name']}={os.path.join(case, 'input.npy')}"
    failures = []
    with tempfile.TemporaryDirectory() as work:
        layer_graph = os.path.join(work, "layers.json")
        rc, _, err = run([cli, "import", model, "--layer-outputs", "-o", layer_graph])
        if rc != 0:
            raise SystemExit(f"FAIL: import --layer-outputs: {err}")
        tflite_layers = json.load(open(layer_graph))["outputs"]

        base = [cli, "run", model, "--input", x, "--target", "cortex-m4", "--backend", backend, "--json"]
        rc, out, err = run(base)
        if rc != 0:
            raise SystemExit(f"FAIL: run --target cortex-m4 exited {rc}: {err}")
        plain = json.loads(out)
        rc, out, err = run(base + ["--profile-layers"])
        if rc != 0:
            raise SystemExit(f"FAIL: run --profile-layers exited {rc}: {err}")
        prof = json.loads(out)

        total = plain["report"]["instructions"]
        layers = prof["report"].get("layers")
        probe = prof["report"].get("layer_probe_instructions")
        if not layers:
            raise SystemExit("FAIL: no per-operator counts in the --json report")
        print(f"{len(layers)} operator calls, empty hook pair {probe} instructions, unprofiled total {total}")
        if not isinstance(probe, int) or probe <= 0:
            failures.append(f"the empty hook pair costs {probe} instructions")
        if [l["index"] for l in layers] != list(range(len(layers))):
            failures.append("the operator calls are not numbered 0..n-1 in order")
        for l in layers:
            print(f"  {l['index']:3} {l['instructions']:>10}  {l['kernel']} {l['nodes']}")
            if l.get("calls", 0) < 1:
                failures.append(f"operator {l['index']} ({l['kernel']}) reports {l.get('calls')} calls")
            if l["instructions"] <= 0:
                failures.append(f"operator {l['index']} ({l['kernel']}) counts {l['instructions']} instructions")
        # Each TFLite operator's output is computed by exactly one counted kernel.
        owners = {}
        for l in layers:
            for n in l["nodes"]:
                owners.setdefault(n, []).append(l["index"])
        for i, node in enumerate(tflite_layers):
            if len(owners.get(node, [])) != 1:
                failures.append(f"TFLite operator {i} (node '{node}') is computed by kernels {owners.get(node, [])}")
        counted = sum(l["instructions"] for l in layers)
        glue = total - counted
        # A call site in a loop (a patch stage's interior bands) counts all its calls.
        bound = GLUE_ONCE + GLUE_PER_CALL * sum(l["calls"] for l in layers)
        print(f"sum of the operators {counted}, unprofiled total {total}: {glue} outside them (bound {bound})")
        if not 0 <= glue <= bound:
            failures.append(f"the operators sum to {counted}, the total is {total}: {glue} outside them, not in [0, {bound}]")
        # The hooks change no result; the plain run has none of them.
        if [o["values"] for o in prof["outputs"]] != [o["values"] for o in plain["outputs"]] or not prof["ok"]:
            failures.append("the profiled run's outputs differ from the plain run's")
        if "layers" in plain["report"]:
            failures.append("the plain run reports per-operator counts")

        rc, _, err = run([cli, "run", model, "--input", x, "--target", "host", "--profile-layers"])
        if rc != 1 or "instruction counter" not in err:
            failures.append(f"--profile-layers on the host: exit {rc}, {err.strip()!r} (want exit 1 naming the counter)")
        if backend == "llvm":
            # A compiled LLVM artifact has no hooks unless it was built with them.
            artifact = os.path.join(work, "artifact")
            rc, _, err = run([cli, "compile", model, "--target", "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4",
                              "-o", artifact])
            if rc != 0:
                raise SystemExit(f"FAIL: compile for llvm: {err}")
            rc, _, err = run([cli, "run", artifact, "--input", x, "--target", "cortex-m4", "--profile-layers"])
            if rc != 1 or "-profile-hooks=1" not in err:
                failures.append(f"--profile-layers on an LLVM artifact without hooks: exit {rc}, {err.strip()!r} "
                                "(want exit 1 naming -profile-hooks=1)")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
