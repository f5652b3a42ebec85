#!/usr/bin/env bash
# Benchmark (not a test): the four MLPerf Tiny .tflite models (../shared/tflite/models) on
# every target, one table per target, everything measured in this one run.
#  - Cortex-M4, Cortex-M7 (QEMU mps2-an386 / mps2-an500), Cortex-M33 (mps2-an505),
#    Cortex-M55 with Helium (mps3-an547; QEMU counts instructions, not the M55's beats)
#    and riscv32 (QEMU virt):
#    exact instructions per inference (`microtir run --target T --json`), RAM (workspace
#    + I/O buffers + stack high-water), flash without the weights (the firmware minus the
#    linked constants and the test input), and whether the output equals TFLite's bytes
#    (../shared/tflite/reference/<model>/lcg_9e3779b9/output.npy). Cortex-M4 and M55 twice:
#    the C backend and the LLVM backend (same schedules; issue 27 part 4). TFLM's firmware runs
#    beside ours in bench/tflite_vs_tflm.sh (Cortex-M4 only: that is the peer we have).
#  - wasm: node time per inference, the median of many single inferences, of the wasm
#    backend's module (microtir + Binaryen; SIMD128 where its kernels take it) beside
#    clang -O2's wasm32 builds of our own C artifact (WASI), without and with -msimd128
#    (like for like: clang may vectorize too), in turns, with the FNV-1a of the outputs
#    (they must agree); the ratio is against the faster clang build. And, deterministic
#    where the clock is not (a shared machine), the x86 instructions per inference of
#    all three under valgrind (VALGRIND=0 skips it; a few minutes per model).
#
# Usage: bash bench/mlperf_targets.sh [BUILD_DIR]   (default: build; needs its microtir)
#        BENCH_MODELS="kws ad" runs only those models; BENCH_TARGETS (default
#        "cortex-m4 cortex-m7 cortex-m33 cortex-m55 riscv32 wasm") the targets; RUNS (default 101) inferences
#        timed per wasm module and turn; REPS (default 3) turns; WASM_OPT (default O2) the
#        Binaryen level of the wasm backend; NODE_FLAGS flags for the timed node runs
#        (--no-liftoff: TurboFan code from the first inference, where a loaded machine
#        delays V8's tier-up past the timed runs); VALGRIND_RUNS (default 10) the fewest inferences
#        counted under valgrind, and VALGRIND_NS (default 5e7) the fewest nanoseconds of node time
#        they add up to (V8's own work varies by tens of millions of instructions).
#        Prints Markdown on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cli="$build/core/cli/microtir"
[ -x "$cli" ] || { echo "bench/mlperf_targets.sh: no $cli; build first (bash scripts/build.sh build)" >&2; exit 1; }
# The models and TFLM's outputs are third-party files beside the source tree, not in it.
shared="${MICROTIR_SHARED_TFLITE:-$(cd .. && pwd)/shared/tflite}"
[ -d "$shared/models" ] || { echo "bench/mlperf_targets.sh: $shared/models not found (set MICROTIR_SHARED_TFLITE)" >&2; exit 1; }
export MICROTIR_SHARED_TFLITE="$shared"
MODELS=(kws:kws_ref_model vww:vww_96_int8 ic:pretrainedResnet_quant ad:ad01_int8)
if [ -n "${BENCH_MODELS:-}" ]; then
  keep=()
  for entry in "${MODELS[@]}"; do
    for m in $BENCH_MODELS; do [ "${entry%%:*}" = "$m" ] && keep+=("$entry"); done
  done
  MODELS=("${keep[@]}")
fi
TARGETS="${BENCH_TARGETS:-cortex-m4 cortex-m7 cortex-m33 cortex-m55 riscv32 wasm}"
RUNS="${RUNS:-101}" REPS="${REPS:-3}" NODE_FLAGS="${NODE_FLAGS:-}" VALGRIND_RUNS="${VALGRIND_RUNS:-10}"
CASE=lcg_9e3779b9
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

input_name() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["input"]["name"])' "$1/quant.json"; }

# The MACs of each model, for instructions per MAC.
for entry in "${MODELS[@]}"; do
  model="${entry%%:*}"
  "$cli" import "$shared/models/${entry#*:}.tflite" --layer-outputs -o "$work/$model.layers.json" > /dev/null
  python3 bench/tflite_bench.py "$work/$model.layers.json" "$shared/reference/$model/$CASE/quant.json" > "$work/$model.macs"
done

# --- boards: one `microtir run --json` per model, target and backend -------------------
for target in $TARGETS; do
  [ "$target" = wasm ] && continue
  backends="c"
  case "$target" in cortex-m4 | cortex-m55) backends="c llvm" ;; esac
  for backend in $backends; do
    for entry in "${MODELS[@]}"; do
      model="${entry%%:*}" file="${entry#*:}" ref="$shared/reference/${entry%%:*}/$CASE"
      echo "$model: microtir run --target $target --backend $backend" >&2
      out="$work/$target-$backend-$model"
      if ! "$cli" run "$shared/models/$file.tflite" --input "$(input_name "$ref")=$ref/input.npy" --target "$target" \
           --backend "$backend" --json --output-dir "$out.out" --keep-build "$out.build" > "$out.json" 2> "$out.err"; then
        python3 -c 'import json,sys; print(json.dumps({"failed": sys.argv[1]}))' "$(tail -1 "$out.err")" > "$out.json"
      fi
    done
  done
done

# --- wasm: the wasm backend's module and clang's wasm32 build, timed under node --------
cat > "$work/time_module.mjs" <<'EOF'
// node time_module.mjs MODULE.wasm RUNS in:NAME:BYTES... out:NAME:BYTES...: the wasm
// backend's module (its run takes the inputs, then the outputs); prints the median ns of
// RUNS single inferences and the FNV-1a of the output bytes.
import fs from 'node:fs';
import { env } from './module_env.mjs';
const [modulePath, runs] = [process.argv[2], Number(process.argv[3])];
const { instance } = await WebAssembly.instantiate(fs.readFileSync(modulePath), { env });
const ex = instance.exports;
const tensors = process.argv.slice(4).map((a) => a.split(':'));
const at = (kind, name) => ex[(kind === 'in' ? 'input:' : 'output:') + name].value;
const args = tensors.filter((t) => t[0] === 'in').concat(tensors.filter((t) => t[0] === 'out')).map((t) => at(t[0], t[1]));
const mem = () => new Uint8Array(ex.memory.buffer);
for (const [kind, name, bytes] of tensors)
  if (kind === 'in') for (let i = 0; i < Math.min(Number(bytes), 4096); i++) mem()[at(kind, name) + i] = (i * 37 + 11) & 0xff;
for (let i = 0; i < 10; i++) if (ex.run(...args) !== 0) process.exit(1);
const times = [];
for (let r = 0; r < runs; r++) {
  const t0 = process.hrtime.bigint();
  ex.run(...args);
  times.push(Number(process.hrtime.bigint() - t0));
}
times.sort((a, b) => a - b);
if (!runs) times.push(0);
let h = 0x811c9dc5;
for (const [kind, name, bytes] of tensors)
  if (kind === 'out') for (let i = 0; i < Number(bytes); i++) h = Math.imul(h ^ mem()[at(kind, name) + i], 0x01000193) >>> 0;
console.log(times[runs >> 1], h.toString(16));
EOF
cp core/codegen/wasm/module_env.mjs "$work/"
cat > "$work/wasi.mjs" <<'EOF'
import fs from 'node:fs';
import { WASI } from 'node:wasi';
const wasi = new WASI({ version: 'preview1', args: process.argv.slice(2) });
const { instance } = await WebAssembly.instantiate(fs.readFileSync(process.argv[2]), wasi.getImportObject());
wasi.start(instance);
EOF
if [[ " $TARGETS " == *" wasm "* ]]; then
  for entry in "${MODELS[@]}"; do
    model="${entry%%:*}" file="${entry#*:}"
    echo "$model: wasm backend (Binaryen) and clang wasm32, $REPS turns of $RUNS inferences" >&2
    "$cli" compile "$shared/models/$file.tflite" --target "wasm -opt=${WASM_OPT:-O2}" -o "$work/$model.wasmbe" > /dev/null
    "$cli" compile "$shared/models/$file.tflite" -o "$work/$model.c" > /dev/null
    M="$work/$model.c"
    # The same timing loop in C: the header names the inputs, outputs and their sizes.
    python3 - "$M/codegen/host/include/tvmgen_model.h" "$RUNS" "$work/$model.tensors" > "$work/$model.main.c" <<'PY'
import re, sys
header, runs = open(sys.argv[1]).read(), int(sys.argv[2])
def fields(kind):
    body = re.search(r"struct tvmgen_model_%s \{(.*?)\};" % kind, header, re.S).group(1)
    return re.findall(r"void\* (\w+);", body)
ins, outs = fields("inputs"), fields("outputs")
size = lambda n: "TVMGEN_MODEL_%s_SIZE" % n.upper()
print("#define _POSIX_C_SOURCE 199309L\n#include <stdio.h>\n#include <stdlib.h>\n#include <stdint.h>\n#include <time.h>")
print("#include <tvm/runtime/crt/stack_allocator.h>\n#include \"tvmgen_model.h\"")
print("static uint8_t workspace[TVMGEN_MODEL_WORKSPACE_SIZE];")
for n in ins + outs: print("static uint8_t %s_buf[%s];" % (n, size(n)))
print("static int cmp(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return (x > y) - (x < y); }")
print("int main(int argc, char** argv) {\n  static double times[%d];\n  struct timespec t0, t1;\n  uint32_t h = 0x811c9dc5u;\n  unsigned i;" % runs)
# Any number of runs (valgrind counts many); the first RUNS are timed.
print("  unsigned runs = argc > 1 ? (unsigned)atoi(argv[1]) : %du, timed = runs < %du ? runs : %du;" % (runs, runs, runs))
print("  struct tvmgen_model_inputs in = {%s};" % ", ".join(n + "_buf" for n in ins))
print("  struct tvmgen_model_outputs out = {%s};" % ", ".join(n + "_buf" for n in outs))
for n in ins: print("  for (i = 0; i < %s && i < 4096; ++i) %s_buf[i] = (uint8_t)((i * 37 + 11) & 0xff);" % (size(n), n))
print("  if (TVMCrtWorkspaceInit(workspace, sizeof workspace) != 0) return 3;")
print("  for (i = 0; i < 10; ++i) if (tvmgen_model_run(&in, &out) != 0) return 1;")
print("  for (i = 0; i < runs; ++i) {\n    clock_gettime(CLOCK_MONOTONIC, &t0);\n    tvmgen_model_run(&in, &out);")
print("    clock_gettime(CLOCK_MONOTONIC, &t1);\n    if (i < timed) times[i] = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);\n  }")
print("  qsort(times, timed, sizeof times[0], cmp);")
for n in outs: print("  for (i = 0; i < %s; ++i) h = (h ^ %s_buf[i]) * 0x01000193u;" % (size(n), n))
print("  printf(\"%.0f %x\\n\", timed ? times[timed / 2] : 0.0, (unsigned)h);\n  return 0;\n}")
sizes = dict(re.findall(r"#define TVMGEN_MODEL_(\w+)_SIZE (\d+)", header))
with open(sys.argv[3], "w") as f:
    f.write(" ".join(["in:%s:%s" % (n, sizes[n.upper()]) for n in ins] + ["out:%s:%s" % (n, sizes[n.upper()]) for n in outs]))
PY
    for simd in "" -msimd128; do
      clang-14 --target=wasm32-wasi -std=c99 -O2 $simd -I"$M/runtime/include" -I"$M/codegen/host/include" \
        "$M"/codegen/host/src/*.c "$M"/runtime/src/*.c "$M/runtime/ports/wasm32/platform.c" "$work/$model.main.c" \
        -Wl,-z,stack-size=262144 -lm -o "$work/$model.clang${simd:+-simd}.wasm"
    done
    be_module="$work/$model.wasmbe/codegen/host/lib/model.wasm"
    # One turn: each build's median, in the same order every turn; keep each one's best.
    declare -A best=([clang]=1e30 [clang-simd]=1e30 [be]=1e30) hash=()
    for ((rep = 0; rep < REPS; rep++)); do
      for build in clang clang-simd be; do
        if [ "$build" = be ]; then
          read -r t h < <(node --no-warnings $NODE_FLAGS "$work/time_module.mjs" "$be_module" "$RUNS" $(cat "$work/$model.tensors"))
        else
          read -r t h < <(node --no-warnings $NODE_FLAGS "$work/wasi.mjs" "$work/$model.$build.wasm" "$RUNS")
        fi
        best[$build]=$(python3 -c 'import sys; print(min(map(float, sys.argv[1:])))' "${best[$build]}" "$t")
        hash[$build]=$h
      done
    done
    # Deterministic beside the clock: x86 instructions per inference under valgrind, with
    # V8 compiling everything with TurboFan up front (VALGRIND_RUNS inferences minus none).
    declare -A instr=([clang]=null [clang-simd]=null [be]=null)
    if command -v valgrind > /dev/null && [ "${VALGRIND:-1}" = 1 ]; then
      # V8's own work varies by tens of millions of instructions from run to run (GC and
      # compile timing), so the counted inferences must add up to far more than that: at
      # least VALGRIND_RUNS, and at least VALGRIND_NS of node time (default 50 ms).
      x86_instructions() {  # x86_instructions NS RUNNER.mjs MODULE.wasm ARGS...: per inference
        local runs counts=()
        runs=$(python3 -c 'import math, sys; print(max(int(sys.argv[1]), math.ceil(float(sys.argv[2]) / float(sys.argv[3]))))' \
          "$VALGRIND_RUNS" "${VALGRIND_NS:-5e7}" "$1")
        local runner=$2 module=$3
        shift 3
        for n in 0 "$runs"; do
          counts+=("$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --smc-check=all node --no-liftoff \
            --single-threaded --no-warnings "$runner" "$module" "$n" "$@" 2>&1 | sed -n 's/.*I *refs: *//p' | tr -d ,)")
        done
        if [ "${counts[1]}" -gt "${counts[0]}" ]; then
          echo $(((counts[1] - counts[0]) / runs))
        else  # the inferences were lost in V8's noise: say so rather than print a count
          echo "$model: $module: $runs inferences under valgrind counted no more than none" >&2
          echo null
        fi
      }
      instr[clang]=$(x86_instructions "${best[clang]}" "$work/wasi.mjs" "$work/$model.clang.wasm")
      instr[clang-simd]=$(x86_instructions "${best[clang-simd]}" "$work/wasi.mjs" "$work/$model.clang-simd.wasm")
      instr[be]=$(x86_instructions "${best[be]}" "$work/time_module.mjs" "$be_module" $(cat "$work/$model.tensors"))
    fi
    echo "{\"clang_ns\": ${best[clang]}, \"clang_simd_ns\": ${best[clang-simd]}, \"binaryen_ns\": ${best[be]}," \
         "\"clang_hash\": \"${hash[clang]}\", \"clang_simd_hash\": \"${hash[clang-simd]}\", \"binaryen_hash\": \"${hash[be]}\"," \
         "\"clang_instr\": ${instr[clang]}, \"clang_simd_instr\": ${instr[clang-simd]}, \"binaryen_instr\": ${instr[be]}," \
         "\"clang_bytes\": $(stat -c %s "$work/$model.clang.wasm"), \"clang_simd_bytes\": $(stat -c %s "$work/$model.clang-simd.wasm")," \
         "\"binaryen_bytes\": $(stat -c %s "$be_module")}" \
      > "$work/wasm-$model.json"
    unset best hash instr
  done
fi

python3 - "$work" "$TARGETS" "$CASE" "${MODELS[@]}" <<'PY'
import json, os, sys
sys.path.insert(0, "bench")
from tflite_bench import npy  # noqa: E402
work, targets, case, entries = sys.argv[1], sys.argv[2].split(), sys.argv[3], sys.argv[4:]
models = [e.split(":")[0] for e in entries]
MACS = {m: int(open(f"{work}/{m}.macs").read()) for m in models}

def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return {"failed": "no result"}

def constants_bytes(build):
    for root, _, files in os.walk(build):
        if "metadata.json" in files:
            meta = json.load(open(os.path.join(root, "metadata.json")))
            return meta["memory"]["functions"]["main"][0].get("constants_size_bytes", 0)
    return 0

def same_as_tflite(model, out_dir):
    want = npy(os.path.join(os.environ["MICROTIR_SHARED_TFLITE"], "reference", model, case, "output.npy"))[2]
    got = [npy(os.path.join(out_dir, f))[2] for f in sorted(os.listdir(out_dir))] if os.path.isdir(out_dir) else []
    return "yes" if got == [want] else "NO"

for target in targets:
    if target == "wasm":
        continue
    backends = ["c", "llvm"] if target in ("cortex-m4", "cortex-m55") else ["c"]
    print(f"\n### {target}\n")
    if target == "cortex-m55":
        print("QEMU counts instructions, not beats: the M55 executes a 128-bit MVE instruction in beats, so its "
              "counts are further from cycles than the M4's.\n")
    head = "| model | backend | instructions | instr/MAC | RAM = workspace + I/O + stack | flash w/o weights | output == TFLite's |"
    print(head)
    print("|---|---|---:|---:|---:|---:|---|")
    for backend in backends:
        for m in models:
            base = f"{work}/{target}-{backend}-{m}"
            d = load(base + ".json")
            if "failed" in d:
                print(f"| {m} | {backend} | failed: {d['failed']} |")
                continue
            r = d["report"]
            ram = r["workspace_bytes"] + r["io_buffer_bytes"] + r["stack_bytes"]
            flash = r["flash_bytes"] - constants_bytes(base + ".build") - r["test_input_bytes"]
            row = (f"| {m} | {backend} | {r['instructions']:,} | {r['instructions'] / MACS[m]:.2f} | {ram:,} = "
                   f"{r['workspace_bytes']:,} + {r['io_buffer_bytes']:,} + {r['stack_bytes']:,} | {flash:,} | "
                   f"{same_as_tflite(m, base + '.out')} |")
            print(row)

if "wasm" in targets:
    print("\n### wasm (node: median ns of single inferences, best turn; x86 instructions per inference under valgrind)\n")
    print("clang -O2 wasm32 builds our C artifact (WASI) without and with `-msimd128`; the wasm backend's module is "
          "microtir + Binaryen (-O2). The ratios are against the faster clang build.\n")
    print("| model | clang: ns | clang -msimd128: ns | backend: ns | backend / clang (goal <= 0.9) |"
          " clang: x86 instructions | clang -msimd128: x86 instructions | backend: x86 instructions | backend / clang |"
          " same output bytes | module bytes: clang / -msimd128 / backend |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for m in models:
        w = load(f"{work}/wasm-{m}.json")
        if "failed" in w:
            print(f"| {m} | failed |")
            continue
        same = "yes" if w["clang_hash"] == w["binaryen_hash"] == w["clang_simd_hash"] else "NO"
        ns = min(w["clang_ns"], w["clang_simd_ns"])
        ci, si, bi = w.get("clang_instr"), w.get("clang_simd_instr"), w.get("binaryen_instr")
        instr = f" {ci:,} | {si:,} | {bi:,} | {bi / min(ci, si):.2f} |" if ci and si and bi else " - | - | - | - |"
        print(f"| {m} | {w['clang_ns']:,.0f} | {w['clang_simd_ns']:,.0f} | {w['binaryen_ns']:,.0f} | {w['binaryen_ns'] / ns:.2f} |"
              f"{instr} {same} | {w['clang_bytes']:,} / {w['clang_simd_bytes']:,} / {w['binaryen_bytes']:,} |")
PY
