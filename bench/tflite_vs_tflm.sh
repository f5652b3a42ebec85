#!/usr/bin/env bash
# Benchmark (not a test): microtir against TensorFlow Lite Micro on the four MLPerf Tiny
# .tflite models (tests/tflite/models), both measured in this one run on the same QEMU
# Cortex-M4 board (mps2-an386, -icount shift=8) with the same exact instruction counter
# (the MPS2 COUNTER around one inference, the empty probe pair subtracted; MEASURING.md).
# TFLM's firmware is the prebuilt peer in ../shared/peers/tflm (its README.md: reference
# kernels and CMSIS-NN kernels, the model embedded unchanged, the input compiled in).
# Ours is `microtir run MODEL.tflite --target cortex-m4` on the same input bytes
# (tests/tflite/reference/<model>/lcg_9e3779b9/input.npy).
#
# Prints per model: instructions per inference (ours, TFLM+CMSIS-NN, TFLM reference
# kernels) and the ratios; RAM (our workspace + I/O buffers + stack high-water against
# TFLM's arena); flash without the weights (ours: the firmware minus the linked constants
# and the test input; TFLM's: the firmware minus the embedded .tflite); whether our output
# is byte-identical to TFLM's; then, per operator, both sides' instructions and
# instructions per MAC (ours from `run --profile-layers`).
#
# Usage: bash bench/tflite_vs_tflm.sh [BUILD_DIR]   (default: build; needs its microtir)
#        TFLM_PEER=DIR overrides the peer folder (default: ../shared/peers/tflm next to
#        the repository); BENCH_MODELS="kws ad" runs only those models; SCHEDULE_ROWS
#        (default: the schedules of the int8 kernels, merge_kernels and patch) names the schedules to measure switched off, one
#        row each. Runs one QEMU at a time. Prints Markdown on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cli="$build/core/cli/microtir"
peer="${TFLM_PEER:-$(cd .. && pwd)/shared/peers/tflm}"
[ -x "$cli" ] || { echo "bench/tflite_vs_tflm.sh: no $cli; build first (bash scripts/build.sh build)" >&2; exit 1; }
[ -f "$peer/run_peer.sh" ] ||
  { echo "bench/tflite_vs_tflm.sh: no TFLM peer firmware in $peer (set TFLM_PEER)" >&2; exit 1; }
for tool in qemu-system-arm arm-none-eabi-nm arm-none-eabi-readelf; do
  command -v "$tool" > /dev/null || { echo "bench/tflite_vs_tflm.sh: $tool not found (bash scripts/install-deps.sh)" >&2; exit 1; }
done

MODELS=(kws:kws_ref_model vww:vww_96_int8 ic:pretrainedResnet_quant ad:ad01_int8)
if [ -n "${BENCH_MODELS:-}" ]; then  # e.g. BENCH_MODELS="kws ad": only these
  keep=()
  for entry in "${MODELS[@]}"; do
    for m in $BENCH_MODELS; do [ "${entry%%:*}" = "$m" ] && keep+=("$entry"); done
  done
  MODELS=("${keep[@]}")
fi
CASE=lcg_9e3779b9  # the input the TFLM firmware has compiled in
# Schedules of the int8 kernels whose worth gets a row: each model once more with it off.
SCHEDULE_ROWS="${SCHEDULE_ROWS-interleave fold_output_zero_point sxtb16 few_channels depthwise_tile depthwise_border_tiles smlal_requant smmlar_requant dense_chunks merge_kernels patch}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# TFLM first: all models, reference and CMSIS-NN kernels, one firmware at a time.
echo "TFLM peer firmware (run_peer.sh)" >&2
set +e
bash "$peer/run_peer.sh" -k ref,cmsis -l "$work/tflm" "${MODELS[@]%%:*}" > "$work/tflm.md" 2> "$work/tflm.err"
peer_rc=$?
set -e

for entry in "${MODELS[@]}"; do
  model="${entry%%:*}"
  file="${entry#*:}"
  ref="tests/tflite/reference/$model/$CASE"
  input=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["input"]["name"])' "$ref/quant.json")
  echo "$model: microtir run --target cortex-m4" >&2
  # --keep-build keeps the artifact (its parameters/ are the linked weights).
  if ! "$cli" run "tests/tflite/models/$file.tflite" --input "$input=$ref/input.npy" --target cortex-m4 --json \
       --output-dir "$work/$model.out" --keep-build "$work/$model.build" > "$work/$model.json" 2> "$work/$model.err"; then
    python3 -c 'import json,sys; print(json.dumps({"failed": sys.argv[1]}))' \
      "$(tail -1 "$work/$model.err")" > "$work/$model.json"
  fi
  # What a schedule is worth: the same model with it switched off (SCHEDULE_ROWS).
  for sched in $SCHEDULE_ROWS; do
    "$cli" run "tests/tflite/models/$file.tflite" --input "$input=$ref/input.npy" --target cortex-m4 --json \
      --disable-schedules "$sched" > "$work/$model.off-$sched.json" 2>> "$work/$model.err" || true
  done
  # RAM when the model's input and output buffers double as workspace (an option:
  # run() then overwrites its input).
  "$cli" run "tests/tflite/models/$file.tflite" --input "$input=$ref/input.npy" --target cortex-m4 --json \
    --reuse-io-buffers > "$work/$model.reuse-io.json" 2>> "$work/$model.err" || true
  # Per operator: a second run with the profiling hooks (the totals above stay hook-free),
  # and the node of each TFLite operator (import --layer-outputs) to align the two.
  "$cli" run "tests/tflite/models/$file.tflite" --input "$input=$ref/input.npy" --target cortex-m4 --json \
    --profile-layers > "$work/$model.prof.json" 2> "$work/$model.prof.err" || true
  "$cli" import "tests/tflite/models/$file.tflite" --layer-outputs -o "$work/$model.layers.json" \
    > /dev/null 2>> "$work/$model.prof.err" || true
done

python3 - "$work" "$peer" "$peer_rc" "$CASE" "$SCHEDULE_ROWS" "${MODELS[@]}" <<'PY'
import glob, json, os, re, socket, subprocess, sys, time

sys.path.insert(0, "bench")
import tflite_bench  # noqa: E402

work, peer, peer_rc, case, schedule_rows, entries = (sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4],
                                                     sys.argv[5].split(), sys.argv[6:])
QEMU = ["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none", "-serial", "none",
        "-semihosting-config", "enable=on,target=native", "-icount", "shift=8"]


npy = tflite_bench.npy


def fnv1a(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def tflm_log(model, kernels):
    """What the peer firmware printed: count, per-op counts, output bytes, arena, input hash."""
    path = os.path.join(work, "tflm", f"{model}-{kernels}.log")
    if not os.path.exists(path):
        return None
    text = open(path).read()
    if not re.search(r"^RESULT PASS", text, re.M):
        return None
    m = re.search(r"^invoke 2: instructions=(\d+)", text, re.M)
    ops = [(int(i), name, int(n)) for i, name, n in re.findall(r"^op\s+(\d+) (\S+)\s+instructions=(\d+)", text, re.M)]
    out = []
    for line in re.findall(r"^out\s+\d+:((?: -?\d+)+)", text, re.M):
        out += [int(v) & 0xFF for v in line.split()]
    arena = re.search(r"arena_size=(\d+)", text)
    inp = re.search(r"^input: bytes=(\d+) fnv1a=(0x[0-9a-f]+)", text, re.M)
    return {"instructions": int(m.group(1)) if m else None, "ops": ops, "output": bytes(out),
            "arena": int(arena.group(1)) if arena else None, "input_fnv": int(inp.group(2), 16) if inp else None}


def symbols(elf):
    out = subprocess.run(["arm-none-eabi-nm", "-S", elf], capture_output=True, text=True, check=True).stdout
    return {f[-1]: (int(f[0], 16), int(f[1], 16) if len(f) == 4 else 0) for f in (l.split() for l in out.splitlines())
            if len(f) >= 3}


def elf_sizes(elf):
    """(flash, static RAM) of an ELF: flash as the peer's README counts it, every allocated section
    with contents (.text with .rodata, .ARM.exidx, init arrays, the .data load image); RAM the
    writable allocated sections (.data, .bss)."""
    headers = subprocess.run(["arm-none-eabi-readelf", "-S", "--wide", elf], capture_output=True, text=True,
                             check=True).stdout
    flash = ram = 0
    for m in re.finditer(r"^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+ [0-9a-f]+ ([0-9a-f]+) [0-9a-f]+ +(\S*)", headers, re.M):
        _, kind, size, flags = m.groups()
        if "A" in flags and kind != "NOBITS":
            flash += int(size, 16)
        if "A" in flags and "W" in flags:
            ram += int(size, 16)
    return flash, ram


PAINT = bytes.fromhex("7de1a3c5")


def call_stack_bytes(elf, function, window=0x8000):
    """Stack high-water of the first call of `function`, measured as our firmware measures run():
    QEMU (same board and flags) stops at the function's entry under its gdbstub, the stack below
    the entry SP is painted, the call runs to its return address, and the lowest word no longer
    holding the paint gives the depth. None if the function is never called."""
    entry = symbols(elf)[function][0] & ~1
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    qemu = subprocess.Popen(QEMU + ["-kernel", elf, "-gdb", f"tcp:127.0.0.1:{port}", "-S"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                conn = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        else:
            return None
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(120)
        pending = b""

        def ask(packet):  # one GDB remote-protocol exchange
            nonlocal pending
            conn.sendall(b"$%s#%02x" % (packet.encode(), sum(packet.encode()) & 0xFF))
            while True:
                m = re.search(rb"\$([^#]*)#..", pending)
                if m:
                    pending = pending[m.end():]
                    conn.sendall(b"+")
                    return m.group(1).decode()
                data = conn.recv(65536)
                if not data:
                    raise OSError("QEMU's gdbstub closed the connection")
                pending += data

        if ask(f"Z0,{entry:x},2") != "OK" or not ask("c").startswith(("T", "S")):
            return None
        regs = ask("g")
        sp, lr = (int.from_bytes(bytes.fromhex(regs[8 * r:8 * r + 8]), "little") for r in (13, 14))
        bottom = sp - window
        for a in range(bottom, sp, 1024):
            n = min(1024, sp - a)
            ask(f"M{a:x},{n:x}:" + (PAINT * (n // 4)).hex())
        ask(f"z0,{entry:x},2")
        if ask(f"Z0,{lr & ~1:x},2") != "OK" or not ask("c").startswith(("T", "S")):
            return None
        mem = b"".join(bytes.fromhex(ask(f"m{a:x},{min(1024, sp - a):x}")) for a in range(bottom, sp, 1024))
        i = 0
        while i < len(mem) and mem[i:i + 4] == PAINT:
            i += 4
        return None if i == 0 else len(mem) - i  # 0: the window was too small
    finally:
        qemu.kill()
        qemu.wait()


def our_layers(model, macs):
    """Our instructions per TFLite operator, by its index: {index: (count, note)}. Each
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
    elf = os.path.join(work, model + ".build", "build-cortex-m4", "firmware.elf")
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


def layer_macs(model, quant, ref_dir):
    return tflite_bench.layer_macs(os.path.join(work, model + ".layers.json"), quant)


def layer_table(model, cmsis, refk, quant, ref_dir, our_total):
    macs = layer_macs(model, quant, ref_dir)
    ours = our_layers(model, macs)
    code = kernel_bytes(model, ours)
    ref_ops = {i: c for i, _, c in (refk["ops"] if refk else [])}
    lines = [f"### {model}: instructions per operator", "",
             "| # | operator | MACs | ours | TFLM+CMSIS-NN | ours / CMSIS-NN | ours: instr/MAC | CMSIS-NN: instr/MAC "
             "| TFLM ref kernels | share of ours | ours: kernel code bytes |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for i, name, c in cmsis["ops"]:
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


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def n(v):
    return f"{v:,}" if isinstance(v, int) else "-"


rows, whole, layer_sections, notes, schedule_lines, reuse_lines, flash_lines = [], [], [], [], [], [], []


def flash_split(model, our_flash, their_flash):
    """Where our flash without the weights goes: the kernels, the AOT executor (`__tvm_main__`
    and `run`), and the rest (the CRT runtime, the test harness and newlib-nano)."""
    elf = os.path.join(work, model + ".build", "build-cortex-m4", "firmware.elf")
    nm = subprocess.run(["arm-none-eabi-nm", "-S", elf], capture_output=True, text=True, check=True).stdout
    by_addr = {}
    for addr, size, kind, name in (l.split() for l in nm.splitlines() if len(l.split()) == 4):
        if kind in "tT" and name.startswith("tvmgen_"):  # code only: the weights are tvmgen_ data
            by_addr[int(addr, 16)] = (name, int(size, 16))
    aot = sum(size for name, size in by_addr.values() if name.endswith(("___tvm_main__", "_run")))
    kernels = sum(size for name, size in by_addr.values()) - aot
    goal = their_flash // 4
    return (f"| {model} | {n(our_flash)} | {n(kernels)} | {n(aot)} | {n(our_flash - kernels - aot)} | "
            f"{n(goal)} | {n(our_flash - goal) if our_flash > goal else 'met'} |")
for entry in entries:
    model, file = entry.split(":")
    ref_dir = os.path.join("tests/tflite/reference", model, case)
    quant = json.load(open(os.path.join(ref_dir, "quant.json")))
    cmsis, refk = tflm_log(model, "cmsis"), tflm_log(model, "ref")
    cm_elf = os.path.join(peer, "elf", f"{model}-cmsis.elf")
    cm_flash, cm_ram = elf_sizes(cm_elf)
    cm_model = symbols(cm_elf)["g_model"][1]
    print(f"{model}: stack of TFLM's Invoke()", file=sys.stderr)
    cm_stack = call_stack_bytes(cm_elf, "_ZN6tflite16MicroInterpreter6InvokeEv")
    ours = json.load(open(os.path.join(work, model + ".json")))
    if "failed" in ours or "report" not in ours:
        rows.append(f"| {model} | failed: {ours.get('failed', 'no report')} |" + " |" * 12)
        continue
    rep = ours["report"]
    # Our weights: the constants linked into the artifact (each also written as parameters/NAME.npy).
    weights = sum(len(npy(p)[2]) for p in glob.glob(os.path.join(work, model + ".build", "artifact", "parameters", "*.npy")))
    our_flash = rep["flash_bytes"] - rep["test_input_bytes"] - weights
    stack = rep.get("stack_bytes")
    our_ram = rep["workspace_bytes"] + rep["io_buffer_bytes"] + (stack or 0)
    their_ram = cmsis["arena"] + (cm_stack or 0) if cmsis and cmsis["arena"] else None
    got = npy(os.path.join(work, model + ".out", quant["output"]["name"] + ".npy"))[2]
    want = npy(os.path.join(ref_dir, "output.npy"))[2]
    inp = npy(os.path.join(ref_dir, "input.npy"))[2]
    same = []
    for kernels, log in (("CMSIS-NN", cmsis), ("ref", refk)):
        if log is None:
            same.append(f"{kernels}: no run")
        elif log["input_fnv"] != fnv1a(inp):
            same.append(f"{kernels}: other input")
        else:
            same.append(f"{kernels}: {'yes' if got == log['output'] else 'NO'}")
    if got != want:
        notes.append(f"{model}: our output differs from tests/tflite/reference/{model}/{case}/output.npy")
    if stack is None or cm_stack is None:
        notes.append(f"{model}: a stack high-water is missing (ours {stack}, TFLM {cm_stack}); RAM counts without it")
    ci = cmsis["instructions"] if cmsis else None
    for sched in schedule_rows:
        try:
            off = json.load(open(os.path.join(work, f"{model}.off-{sched}.json")))
            off_i, off_ok = off["report"]["instructions"], off["ok"]
        except (OSError, ValueError, KeyError):
            off_i, off_ok = None, False
        schedule_lines.append(f"| {model} | {sched} | {n(rep['instructions'])} | {n(off_i)} | "
                              f"{ratio(off_i, rep['instructions'])} | {ratio(off_i, ci)} | {'yes' if off_ok else 'NO'} |")
    ri = refk["instructions"] if refk else None
    rows.append(f"| {model} | {n(rep['instructions'])} | {n(ci)} | {ratio(rep['instructions'], ci)} | {n(ri)} | "
                f"{ratio(rep['instructions'], ri)} | {n(our_ram)} = {n(rep['workspace_bytes'])} + {n(rep['io_buffer_bytes'])} + "
                f"{n(stack)} | {n(their_ram)} = {n(cmsis['arena'] if cmsis else None)} + {n(cm_stack)} | "
                f"{ratio(our_ram, their_ram)} | {n(our_flash)} | {n(cm_flash - cm_model)} | "
                f"{ratio(our_flash, cm_flash - cm_model)} | {'; '.join(same)} |")
    try:
        io = json.load(open(os.path.join(work, model + ".reuse-io.json")))
        irep = io["report"]
        iram = irep["workspace_bytes"] + irep["io_buffer_bytes"] + (irep.get("stack_bytes") or 0)
        reuse_lines.append(f"| {model} | {n(our_ram)} | {n(iram)} = {n(irep['workspace_bytes'])} + "
                           f"{n(irep['io_buffer_bytes'])} + {n(irep.get('stack_bytes'))} | {n(their_ram)} | "
                           f"{ratio(our_ram, their_ram)} | {ratio(iram, their_ram)} | {'yes' if io['ok'] else 'NO'} |")
    except (OSError, ValueError, KeyError, TypeError):
        reuse_lines.append(f"| {model} | {n(our_ram)} | failed | {n(their_ram)} | {ratio(our_ram, their_ram)} | - | NO |")
    whole.append(f"| {model} | {n(rep['flash_bytes'] - rep['test_input_bytes'])} ({n(weights)} weights) | "
                 f"{n(cm_flash)} ({n(cm_model)} .tflite) | {n(rep['ram_bytes'])} | {n(cm_ram)} |")
    flash_lines.append(flash_split(model, our_flash, cm_flash - cm_model))
    if cmsis and cmsis["ops"]:
        layer_sections.append(layer_table(model, cmsis, refk, quant, ref_dir, rep["instructions"]))

qemu_version = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
print(f"microtir vs TensorFlow Lite Micro: {qemu_version}, -M mps2-an386 -icount shift=8, "
      f"input tests/tflite/reference/<model>/{case}/input.npy (the TFLM firmware's compiled-in input)")
print()
print("| model | ours: instructions | TFLM+CMSIS-NN | ours / CMSIS-NN | TFLM ref kernels | ours / ref | "
      "ours: RAM = workspace + I/O + stack | TFLM+CMSIS-NN: RAM = arena + stack | RAM ours / TFLM | "
      "ours: flash w/o weights | TFLM+CMSIS-NN: flash w/o model | flash ours / TFLM | output == TFLM's |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
print("\n".join(rows))
print()
print("- Instructions: one inference (our `run`, TFLM's `Invoke()`), the empty probe pair subtracted on both sides.")
print("- RAM: TFLM's arena holds its input, output and intermediate tensors and scratch buffers. Stack: the "
      "high-water of one call, from the caller's frame down (ours: painted by our firmware around `run`; TFLM's: "
      "its `Invoke()` painted and scanned through QEMU's gdbstub, the same method).")
print("- Flash without the weights: ours is the firmware minus the linked constants and the test input; TFLM's "
      "is the firmware minus the embedded `.tflite` (weights and graph). Both include the test harness and "
      "newlib-nano (printf, semihosting).")
print()
if reuse_lines:
    print("RAM with `-reuse-io-buffers=1` (`run --reuse-io-buffers`): intermediates may live in the model's input "
          "buffer after its last reader and in its output buffer before its producer, so `run()` overwrites its input; "
          "\"= interpreter\": the output is still bit-exact.")
    print()
    print("| model | ours: RAM, default | ours: RAM with -reuse-io-buffers=1 = workspace + I/O + stack | "
          "TFLM+CMSIS-NN: RAM | ours / TFLM, default | ours / TFLM, reuse | = interpreter |")
    print("|---|---:|---:|---:|---:|---:|---|")
    print("\n".join(reuse_lines))
    print()
if schedule_lines:
    print("What a schedule of the int8 kernels is worth: each model once more with it switched off "
          "(`--disable-schedules NAME`); \"= interpreter\": the output is still bit-exact.")
    print()
    print("| model | schedule off | instructions, all on | instructions, it off | off / on | off / CMSIS-NN | = interpreter |")
    print("|---|---|---:|---:|---:|---:|---|")
    print("\n".join(schedule_lines))
    print()
print("Where our flash without the weights goes (kernels: every `tvmgen_` function but the AOT executor's, "
      "each address once; the rest: the CRT runtime, the test harness and newlib-nano, which TFLM's firmware "
      "also links):")
print()
print("| model | ours: flash w/o weights | kernels | AOT `__tvm_main__` + `run` | the rest | goal (0.25 of TFLM's) | "
      "over the goal by |")
print("|---|---:|---:|---:|---:|---:|---:|")
print("\n".join(flash_lines))
print()
print("Whole firmware, harness and libc included:")
print()
print("| model | ours: flash (w/o test input) | TFLM+CMSIS-NN: flash | ours: static RAM (.data + .bss) | "
      "TFLM+CMSIS-NN: static RAM (.data + .bss) |")
print("|---|---:|---:|---:|---:|")
print("\n".join(whole))
print()
print("Per layer, in the model's operator order: ours from `microtir run --profile-layers` (a second run: the "
      "generated AOT main brackets each operator call with TVMGEN_PROFILE hooks that read the same counter; the "
      "cost of an empty hook pair is subtracted), TFLM's from its profiler (the empty event subtracted). An operator "
      "our compiler fused into one kernel with another (an activation into its convolution, a residual ADD into "
      "the convolution that produces its other input) shows 0 and \"merged into #k\", the operator that carries the "
      "kernel's count (the last one with MACs); a layer run band by band (patch) sums its bands; "
      "RESHAPE runs no kernel (its output is a view of its input: \"no kernel\"). The per-operator sums fall short of the totals by the AOT main's own "
      "calls and checks (ours) and TFLM's interpreter loop (theirs). Kernel code bytes: the size of the "
      "operator's kernel functions in our firmware (`arm-none-eabi-nm`), a function shared by several operators "
      "(merge_kernels, GCC's identical-code folding) counted once, at its first caller.")
for lines in layer_sections:
    print()
    print("\n".join(lines))
if peer_rc != 0:
    notes.append("run_peer.sh did not pass: " + open(os.path.join(work, "tflm.md")).read().strip().splitlines()[-1])
for note in notes:
    print(f"\nnote: {note}")
PY
