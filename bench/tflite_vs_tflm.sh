#!/usr/bin/env bash
# Benchmark (not a test): microtir against TensorFlow Lite Micro on Cortex-M4 (QEMU
# mps2-an386) or, with BENCH_TARGET=cortex-m55, on Cortex-M55 with Helium (mps3-an547;
# QEMU counts instructions, not the M55's beats), -icount shift=8, the exact counter of
# MEASURING.md, for the four MLPerf Tiny .tflite models and for every model of TFLM's own
# zoo that TFLM runs on that board.
# TFLM's side is its measured figures (../shared/peers/tflm/figures.json, its README.md:
# the same QEMU, flags and input bytes give the same counts, so they compare with ours as
# a run beside it would): instructions per Invoke() and per operator, arena, the stack of
# Invoke(), flash. Ours is `microtir run MODEL.tflite --target "$target"` on the same input
# bytes: MLPerf ../shared/tflite/reference/<model>/lcg_9e3779b9/input.npy, the zoo
# ../shared/tflite/zoo/reference/<model>/seed1/input_<k>.npy.
#
# Prints per model: instructions per inference (ours, TFLM+CMSIS-NN, TFLM reference
# kernels) and the ratios; RAM (our workspace + I/O buffers + stack high-water against
# TFLM's arena + the stack of its Invoke()); flash without the weights (ours: the firmware
# minus the linked constants and the test input; TFLM's: the firmware minus the embedded
# .tflite, for the zoo also with only the model's operators registered); whether our
# outputs are TFLM's bytes; the goals (<= 0.7x instructions, <= 0.8x RAM, <= 0.25x flash
# of TFLM+CMSIS-NN); then, per operator, both sides' instructions and instructions per
# MAC (ours from `run --profile-layers`). A zoo model we cannot run yet gets a row saying
# why.
#
# Usage: bash bench/tflite_vs_tflm.sh [BUILD_DIR]   (default: build; needs its microtir)
#        MICROTIR_SHARED_TFLITE=DIR the models and references (default ../shared/tflite
#        beside the source tree); TFLM_FIGURES=FILE TFLM's figures (default
#        ../shared/peers/tflm/figures.json); BENCH_MODELS="kws person_detect" runs only
#        those; BENCH_SECTIONS="mlperf zoo" (default both); SCHEDULE_ROWS (MLPerf only;
#        default: the schedules of the int8 kernels, merge_kernels and patch) names the
#        schedules to measure switched off, one row each; BENCH_TARGET (default cortex-m4,
#        or cortex-m55) the board, whose TFLM figures are compared. Runs one QEMU at a time. Prints
#        Markdown on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cli="$build/core/cli/microtir"
shared="${MICROTIR_SHARED_TFLITE:-$(cd .. && pwd)/shared/tflite}"
figures="${TFLM_FIGURES:-$(cd .. && pwd)/shared/peers/tflm/figures.json}"
target="${BENCH_TARGET:-cortex-m4}"
[ -x "$cli" ] || { echo "bench/tflite_vs_tflm.sh: no $cli; build first (bash scripts/build.sh build)" >&2; exit 1; }
[ -d "$shared" ] || { echo "bench/tflite_vs_tflm.sh: $shared not found (set MICROTIR_SHARED_TFLITE)" >&2; exit 1; }
[ -f "$figures" ] || { echo "bench/tflite_vs_tflm.sh: TFLM's figures $figures not found (set TFLM_FIGURES)" >&2; exit 1; }
for tool in qemu-system-arm arm-none-eabi-nm arm-none-eabi-readelf; do
  command -v "$tool" > /dev/null || { echo "bench/tflite_vs_tflm.sh: $tool not found (bash scripts/install-deps.sh)" >&2; exit 1; }
done

python3 -c 'import json, sys; sys.exit(sys.argv[2] not in json.load(open(sys.argv[1]))["targets"])' "$figures" "$target" ||
  { echo "bench/tflite_vs_tflm.sh: $figures has no figures for $target" >&2; exit 1; }

# section:model:file:case folder. The zoo: every model TFLM ran on the board.
ENTRIES=()
sections="${BENCH_SECTIONS:-mlperf zoo}"
if [[ " $sections " == *" mlperf "* ]]; then
  for entry in kws:kws_ref_model vww:vww_96_int8 ic:pretrainedResnet_quant ad:ad01_int8; do
    ENTRIES+=("mlperf:${entry%%:*}:$shared/models/${entry#*:}.tflite:$shared/reference/${entry%%:*}/lcg_9e3779b9")
  done
fi
if [[ " $sections " == *" zoo "* ]]; then
  for model in $(python3 -c 'import json, sys; print(" ".join(sorted(json.load(open(sys.argv[1]))["targets"][sys.argv[2]])))' "$figures" "$target"); do
    [ -f "$shared/zoo/models/$model.tflite" ] && ENTRIES+=("zoo:$model:$shared/zoo/models/$model.tflite:$shared/zoo/reference/$model/seed1")
  done
fi
if [ -n "${BENCH_MODELS:-}" ]; then  # e.g. BENCH_MODELS="kws person_detect": only these
  keep=()
  for entry in "${ENTRIES[@]}"; do
    IFS=: read -r _ model _ <<<"$entry"
    for m in $BENCH_MODELS; do [ "$model" = "$m" ] && keep+=("$entry"); done
  done
  ENTRIES=("${keep[@]}")
fi
# Schedules of the int8 kernels whose worth gets a row (MLPerf): each model once more with it off.
SCHEDULE_ROWS="${SCHEDULE_ROWS-interleave word_gather short_pairs pair_records few_channel_pairs pixel_triples pixel_triples_stack pixel_triples_code rolled_leftovers dsp_no_early_scheduling smmlar_add fold_output_zero_point sxtb16 few_channels depthwise_tile depthwise_border_tiles smlal_requant smmlar_requant dense_chunks merge_kernels patch patch_overlap patch_residual patch_carry patch_edge_rows band_loops}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for entry in "${ENTRIES[@]}"; do
  IFS=: read -r section model tflite ref <<<"$entry"
  # Every TFLite operator's output a graph output: the operator order, the MACs and the
  # input names (a nameless input takes the graph's).
  if ! "$cli" import "$tflite" --layer-outputs -o "$work/$model.layers.json" > /dev/null 2> "$work/$model.err"; then
    python3 -c 'import json,sys; print(json.dumps({"failed": sys.argv[1]}))' "$(tail -1 "$work/$model.err")" > "$work/$model.json"
    continue
  fi
  mapfile -t inputs < <(python3 bench/tflite_bench.py inputs "$ref" "$work/$model.layers.json")
  echo "$model: microtir run --target "$target"" >&2
  # --keep-build keeps the artifact (its parameters/ are the linked weights).
  if ! "$cli" run "$tflite" "${inputs[@]}" --target "$target" --json \
       --output-dir "$work/$model.out" --keep-build "$work/$model.build" > "$work/$model.json" 2>> "$work/$model.err"; then
    python3 -c 'import json,sys; print(json.dumps({"failed": sys.argv[1]}))' \
      "$(tail -1 "$work/$model.err")" > "$work/$model.json"
    continue
  fi
  if [ "$section" = mlperf ]; then
    # What a schedule is worth: the same model with it switched off (SCHEDULE_ROWS).
    for sched in $SCHEDULE_ROWS; do
      "$cli" run "$tflite" "${inputs[@]}" --target "$target" --json \
        --disable-schedules "$sched" > "$work/$model.off-$sched.json" 2>> "$work/$model.err" || true
    done
    # RAM when the model's input and output buffers double as workspace (an option:
    # run() then overwrites its input).
    "$cli" run "$tflite" "${inputs[@]}" --target "$target" --json \
      --reuse-io-buffers > "$work/$model.reuse-io.json" 2>> "$work/$model.err" || true
  fi
  # Per operator: a second run with the profiling hooks (the totals above stay hook-free).
  "$cli" run "$tflite" "${inputs[@]}" --target "$target" --json \
    --profile-layers > "$work/$model.prof.json" 2> "$work/$model.prof.err" || true
done

python3 - "$work" "$figures" "$SCHEDULE_ROWS" "$target" "${ENTRIES[@]}" <<'PY'
import glob, json, os, re, subprocess, sys

sys.path.insert(0, "bench")
import tflite_bench  # noqa: E402

work, figures_path, schedule_rows, target, entries = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4], sys.argv[5:]
FIGURES = json.load(open(figures_path))["targets"][target]
MACHINE = {"cortex-m4": "mps2-an386", "cortex-m55": "mps3-an547"}[target]
GOAL_INSTR, GOAL_RAM, GOAL_FLASH = 0.7, 0.8, 0.25
npy = tflite_bench.npy


def symbols(elf):
    out = subprocess.run(["arm-none-eabi-nm", "-S", elf], capture_output=True, text=True, check=True).stdout
    return {f[-1]: (int(f[0], 16), int(f[1], 16) if len(f) == 4 else 0) for f in (l.split() for l in out.splitlines())
            if len(f) >= 3}


def our_layers(model, macs):
    """Our instructions per TFLite operator, by its index: {index: (count, note, kernels)}. Each
    profiled kernel call covers the nodes it computes; the kernel's count goes to its
    last operator with MACs (a convolution with the residual ADD fused into it), or to
    its last operator when none has MACs (an activation fused into a pool); the others
    are merged into that one (count 0)."""
    try:
        prof = json.load(open(os.path.join(work, model + ".prof.json")))
        layers = json.load(open(os.path.join(work, model + ".layers.json")))["outputs"]
    except (OSError, ValueError):
        return {}
    kernel_of = {}
    calls_of = {}  # a node run band by band (patch stages) has several calls
    for call in prof.get("report", {}).get("layers", []):
        for node in call["nodes"]:
            kernel_of[node] = call
            calls_of.setdefault(node, []).append(call)
    out = {}
    for i, node in enumerate(layers):
        call = kernel_of.get(node)
        if call is None:
            out[i] = (None, "no kernel", [])
            continue
        members = [j for j in range(len(layers)) if kernel_of.get(layers[j]) is call]
        with_macs = [j for j in members if macs.get(j)]
        owner = (with_macs or members)[-1]
        bands = len(calls_of[node])
        out[i] = (0, f"merged into #{owner}", []) if owner != i else (
            sum(c["instructions"] for c in calls_of[node]), f"{bands} bands" if bands > 1 else "",
            [c["kernel"] for c in calls_of[node]])
    return out


def kernel_bytes(model, ours):
    """Code bytes of each operator's kernels in our firmware: {index: text}. A function that
    merge_kernels or GCC's identical-code folding shares between operators (one address) counts
    once, at the first operator that calls it; the others say whose it is."""
    elf = os.path.join(work, model + ".build", "build-" + target, "firmware.elf")
    try:
        syms = symbols(elf)
    except (OSError, subprocess.CalledProcessError):
        return {}
    first_user, out = {}, {}
    for i in sorted(ours):
        kernels = ours[i][2]
        if not kernels:
            continue
        size, shared = 0, []
        for k in dict.fromkeys(kernels):
            if k not in syms:  # merge_kernels: the call goes to a function shared with others
                shared.append("a merged kernel")
                continue
            addr, sz = syms[k]
            if addr in first_user:
                shared.append(f"#{first_user[addr]}'s")
            else:
                first_user[addr] = i
                size += sz
        shared = ", ".join(dict.fromkeys(shared))
        out[i] = shared if shared and not size else f"{size:,}" + (f" (and {shared})" if shared else "")
    return out


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def n(v):
    return f"{v:,}" if isinstance(v, int) else "-"


def layer_table(model, cmsis, refk, quant, our_total):
    macs = tflite_bench.layer_macs(os.path.join(work, model + ".layers.json"), quant)
    ours = our_layers(model, macs)
    code = kernel_bytes(model, ours)
    ref_ops = {i: c for i, _, c in (refk.get("per_operator") or [])}
    lines = [f"### {model}: instructions per operator", "",
             "| # | operator | MACs | ours | TFLM+CMSIS-NN | ours / CMSIS-NN | ours: instr/MAC | CMSIS-NN: instr/MAC "
             "| TFLM ref kernels | share of ours | ours: kernel code bytes |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for i, name, c in cmsis["per_operator"]:
        mine, note, _ = ours.get(i, (None, "not profiled", []))
        mac = macs.get(i, 0)
        per = lambda v: f"{v / mac:.2f}" if mac and v else "-"
        shown = f"{mine:,}" if isinstance(mine, int) else "-"
        if note:
            shown += f" ({note})"
        share = f"{100 * mine / our_total:.1f}%" if isinstance(mine, int) and our_total else "-"
        lines.append(f"| {i} | {name} | {mac:,} | {shown} | {c:,} | {ratio(mine, c)} | {per(mine)} | {per(c)} | "
                     f"{n(ref_ops.get(i))} | {share} | {code.get(i, '-')} |")
    return lines


def flash_split(model, our_flash, goal_of):
    """Where our flash without the weights goes: the kernels, the AOT executor (`__tvm_main__`
    and `run`), and the rest (the CRT runtime, the test harness and newlib-nano)."""
    elf = os.path.join(work, model + ".build", "build-" + target, "firmware.elf")
    nm = subprocess.run(["arm-none-eabi-nm", "-S", elf], capture_output=True, text=True, check=True).stdout
    by_addr = {}
    for addr, size, kind, name in (l.split() for l in nm.splitlines() if len(l.split()) == 4):
        if kind in "tT" and name.startswith("tvmgen_"):  # code only: the weights are tvmgen_ data
            by_addr[int(addr, 16)] = (name, int(size, 16))
    aot = sum(size for name, size in by_addr.values() if name.endswith(("___tvm_main__", "_run")))
    kernels = sum(size for name, size in by_addr.values()) - aot
    goal = int(goal_of * GOAL_FLASH)
    return (f"| {model} | {n(our_flash)} | {n(kernels)} | {n(aot)} | {n(our_flash - kernels - aot)} | "
            f"{n(goal)} | {n(our_flash - goal) if our_flash > goal else 'met'} |")


def bit_exact(ours, io):
    """Whether each of our outputs (run --json) equals the reference case's, which is TFLM's:
    "yes", or what differs (floats: TFLM's host figures; see the zoo README)."""
    got = {o["name"]: o for o in ours["outputs"]}
    verdicts = []
    for k, (name, path) in enumerate(io["output_files"]):
        o = got.get(name, ours["outputs"][k] if k < len(ours["outputs"]) else None)
        if o is None:
            verdicts.append(f"output {k} missing")
            continue
        mine, want = tflite_bench.output_bytes(o), npy(path)[2]
        if mine == want:
            continue
        if o["dtype"] == "float32":
            w = list(__import__("array").array("f", want))
            worst = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(o["values"], w))
            verdicts.append(f"output {k}: float, max rel. diff {worst:.1e}")
        else:
            verdicts.append(f"output {k}: NO")
    return "yes" if not verdicts else "; ".join(verdicts)


sections = {"mlperf": {"rows": [], "goals": [], "layers": [], "flash": [], "whole": []},
            "zoo": {"rows": [], "goals": [], "layers": [], "flash": [], "whole": []}}
schedule_lines, reuse_lines, notes = [], [], []
for entry in entries:
    section, model, tflite, ref_dir = entry.split(":", 3)
    out = sections[section]
    io = tflite_bench.case_io(ref_dir)
    fig = FIGURES.get(model, {})
    cmsis, refk = fig.get("cmsis"), fig.get("ref") or {}
    ours = json.load(open(os.path.join(work, model + ".json")))
    if "failed" in ours or "report" not in ours:
        why = ours.get("failed", "no report").replace("|", "\\|")
        out["rows"].append(f"| {model} | not run: {why} |" + " |" * 11)
        out["goals"].append(f"| {model} | - | - | - | not run |")
        continue
    rep = ours["report"]
    # Our weights: the constants linked into the artifact (each also written as parameters/NAME.npy).
    weights = sum(len(npy(p)[2]) for p in glob.glob(os.path.join(work, model + ".build", "artifact", "parameters", "*.npy")))
    our_flash = rep["flash_bytes"] - rep["test_input_bytes"] - weights
    stack = rep.get("stack_bytes")
    our_ram = rep["workspace_bytes"] + rep["io_buffer_bytes"] + (stack or 0)
    their_ram = cmsis["arena"] + (cmsis.get("stack_invoke") or 0)
    their_flash = cmsis["flash_without_model"]
    # The flash goal: against TFLM with only the model's operators registered where measured (the zoo).
    their_own = cmsis.get("flash_without_model_own_ops_only") or their_flash
    same = bit_exact(ours, io)
    if stack is None:
        notes.append(f"{model}: our stack high-water is missing; RAM counts without it")
    ci, ri = cmsis["instructions"], refk.get("instructions")
    out["rows"].append(
        f"| {model} | {n(rep['instructions'])} | {n(ci)} | {ratio(rep['instructions'], ci)} | {n(ri)} | "
        f"{ratio(rep['instructions'], ri)} | {n(our_ram)} = {n(rep['workspace_bytes'])} + {n(rep['io_buffer_bytes'])} + "
        f"{n(stack)} | {n(their_ram)} = {n(cmsis['arena'])} + {n(cmsis.get('stack_invoke'))} | "
        f"{ratio(our_ram, their_ram)} | {n(our_flash)} | {n(their_flash)} | {n(their_own) if their_own != their_flash else '-'} | "
        f"{ratio(our_flash, their_own)} | {same} |")
    met = lambda a, b, goal: ("met" if a <= goal * b else "NOT met") + f" ({a / b:.2f})"
    out["goals"].append(f"| {model} | {met(rep['instructions'], ci, GOAL_INSTR)} | {met(our_ram, their_ram, GOAL_RAM)} | "
                        f"{met(our_flash, their_own, GOAL_FLASH)} | {same} |")
    if section == "mlperf":
        for sched in schedule_rows:
            try:
                off = json.load(open(os.path.join(work, f"{model}.off-{sched}.json")))
                off_i, off_ok = off["report"]["instructions"], off["ok"]
            except (OSError, ValueError, KeyError):
                off_i, off_ok = None, False
            schedule_lines.append(f"| {model} | {sched} | {n(rep['instructions'])} | {n(off_i)} | "
                                  f"{ratio(off_i, rep['instructions'])} | {ratio(off_i, ci)} | {'yes' if off_ok else 'NO'} |")
        try:
            reuse = json.load(open(os.path.join(work, model + ".reuse-io.json")))
            irep = reuse["report"]
            iram = irep["workspace_bytes"] + irep["io_buffer_bytes"] + (irep.get("stack_bytes") or 0)
            reuse_lines.append(f"| {model} | {n(our_ram)} | {n(iram)} = {n(irep['workspace_bytes'])} + "
                               f"{n(irep['io_buffer_bytes'])} + {n(irep.get('stack_bytes'))} | {n(their_ram)} | "
                               f"{ratio(our_ram, their_ram)} | {ratio(iram, their_ram)} | {'yes' if reuse['ok'] else 'NO'} |")
        except (OSError, ValueError, KeyError, TypeError):
            reuse_lines.append(f"| {model} | {n(our_ram)} | failed | {n(their_ram)} | {ratio(our_ram, their_ram)} | - | NO |")
    out["whole"].append(f"| {model} | {n(rep['flash_bytes'] - rep['test_input_bytes'])} ({n(weights)} weights) | "
                        f"{n(cmsis['flash'])} | {n(rep['ram_bytes'])} |")
    out["flash"].append(flash_split(model, our_flash, their_own))
    if cmsis.get("per_operator"):
        out["layers"].append(layer_table(model, cmsis, refk, io, rep["instructions"]))

qemu_version = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
print(f"microtir on {qemu_version}, -M {MACHINE} -icount shift=8, against TensorFlow Lite Micro's figures "
      "(`../shared/peers/tflm/figures.json`: the same QEMU, flags and input bytes). Inputs: MLPerf Tiny "
      "`../shared/tflite/reference/<model>/lcg_9e3779b9/input.npy`, the zoo `../shared/tflite/zoo/reference/<model>/seed1/`.")
print()
print("- Instructions: one inference (our `run`, TFLM's `Invoke()`), the empty probe pair subtracted on both sides."
      + (" QEMU counts instructions, not beats: the M55 executes a 128-bit MVE instruction in beats (two per "
         "cycle), so these counts are further from cycles than on the M4." if target == "cortex-m55" else ""))
print("- RAM: TFLM's arena holds its input, output and intermediate tensors and scratch buffers; its stack is the "
      "painted high-water of `Invoke()`. Ours: workspace + input/output buffers + the painted stack high-water of `run`.")
print("- Flash without the weights: ours is the firmware minus the linked constants and the test input; TFLM's "
      "is the firmware minus the embedded `.tflite` (weights and graph), with all of TFLM's operators registered, and "
      "for the zoo also with only the model's own operators (the goal's measure where it exists). Both include their "
      "test harness: TFLM's links newlib-nano's printf and semihosting; ours writes its lines with its own "
      "formatter over semihosting (no printf).")
print(f"- Goals against TFLM+CMSIS-NN: instructions <= {GOAL_INSTR}x, RAM <= {GOAL_RAM}x, flash without the weights "
      f"<= {GOAL_FLASH}x; bit-exact outputs.")
HEADER = ("| model | ours: instructions | TFLM+CMSIS-NN | ours / CMSIS-NN | TFLM ref kernels | ours / ref | "
          "ours: RAM = workspace + I/O + stack | TFLM+CMSIS-NN: RAM = arena + stack | RAM ours / TFLM | "
          "ours: flash w/o weights | TFLM+CMSIS-NN: flash w/o model | TFLM+CMSIS-NN: the same, own operators only | "
          "flash ours / TFLM | output == TFLM's |")
TITLES = {"mlperf": "MLPerf Tiny", "zoo": "TFLite Micro's model zoo (every model TFLM runs on this board)"}
for name, sec in sections.items():
    if not sec["rows"]:
        continue
    print()
    print(f"## {TITLES[name]}")
    print()
    print(HEADER)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    print("\n".join(sec["rows"]))
    print()
    print("| model | instructions <= 0.7x | RAM <= 0.8x | flash w/o weights <= 0.25x | bit-exact |")
    print("|---|---|---|---|---|")
    print("\n".join(sec["goals"]))
    print()
    print("Where our flash without the weights goes (kernels: every `tvmgen_` function but the AOT executor's, "
          "each address once; the rest: the CRT runtime, the test harness and newlib-nano, which TFLM's firmware "
          "also links):")
    print()
    print("| model | ours: flash w/o weights | kernels | AOT `__tvm_main__` + `run` | the rest | goal (0.25 of TFLM's) | "
          "over the goal by |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(sec["flash"]))
    print()
    print("Whole firmware, harness and libc included:")
    print()
    print("| model | ours: flash (w/o test input) | TFLM+CMSIS-NN: flash | ours: static RAM (.data + .bss) |")
    print("|---|---:|---:|---:|")
    print("\n".join(sec["whole"]))
    if name == "mlperf" and reuse_lines:
        print()
        print("RAM with `-reuse-io-buffers=1` (`run --reuse-io-buffers`): intermediates may live in the model's input "
              "buffer after its last reader and in its output buffer before its producer, so `run()` overwrites its "
              "input; \"= interpreter\": the output is still bit-exact.")
        print()
        print("| model | ours: RAM, default | ours: RAM with -reuse-io-buffers=1 = workspace + I/O + stack | "
              "TFLM+CMSIS-NN: RAM | ours / TFLM, default | ours / TFLM, reuse | = interpreter |")
        print("|---|---:|---:|---:|---:|---:|---|")
        print("\n".join(reuse_lines))
    if name == "mlperf" and schedule_lines:
        print()
        print("What a schedule of the int8 kernels is worth: each model once more with it switched off "
              "(`--disable-schedules NAME`); \"= interpreter\": the output is still bit-exact.")
        print()
        print("| model | schedule off | instructions, all on | instructions, it off | off / on | off / CMSIS-NN | = interpreter |")
        print("|---|---|---:|---:|---:|---:|---|")
        print("\n".join(schedule_lines))
    if sec["layers"]:
        print()
        print("Per layer, in the model's operator order: ours from `microtir run --profile-layers` (a second run: the "
              "generated AOT main brackets each operator call with TVMGEN_PROFILE hooks that read the same counter; the "
              "cost of an empty hook pair is subtracted), TFLM's from its profiler (the empty event subtracted). An "
              "operator our compiler fused into one kernel with another shows 0 and \"merged into #k\", the operator "
              "that carries the kernel's count (the last one with MACs); a layer run band by band (patch) sums its "
              "bands; RESHAPE runs no kernel (\"no kernel\"). Kernel code bytes: the size of the operator's kernel "
              "functions in our firmware, a function shared by several operators counted once, at its first caller.")
        for lines in sec["layers"]:
            print()
            print("\n".join(lines))
for note in notes:
    print(f"\nnote: {note}")
PY
