#!/usr/bin/env bash
# Benchmark (not a test): the four int8 MLPerf Tiny graphs (tools/make_mlperf_graphs.py
# --int8) on Cortex-M4 under QEMU -icount, instructions counted around `run` only. One
# table, measured in one run: per model, MACs, instructions per inference and per MAC,
# flash, RAM, pool / lower bound, with every schedule on, then with each schedule of the
# int8 operators switched off in turn (so the value of each is visible). Every row's
# output is also compared bit for bit with the independent int8 reference.
# Usage: bash bench/mlperf_int8.sh [BUILD_DIR]   (default: build; needs its microtir binary
#        and tests/int8/int8_reference). Prints the Markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cli="$build/core/cli/microtir"
ref="$build/tests/int8/int8_reference"
[ -x "$cli" ] || { echo "bench/mlperf_int8.sh: no $cli; build first (bash scripts/build.sh build)" >&2; exit 1; }
[ -x "$ref" ] || { echo "bench/mlperf_int8.sh: no $ref; build the tests first" >&2; exit 1; }

# The schedules of the int8 operators (docs/quantization.md); "" is the row with all of them on.
SCHEDULES=("" fold_zero_point block unroll hoist smlad sxtb16 interleave pixel_triples dsp_no_early_scheduling smmlar_add fold_output_zero_point few_channels
           depthwise_tile depthwise_border_tiles smlal_requant dense_chunks merge_kernels patch)
# The `microtir run` arguments that switch one schedule off (NAME is replaced by it).
SCHEDULE_OFF=(--disable-schedules NAME)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 tools/make_mlperf_graphs.py --int8 "$work/graphs" > "$work/macs.txt"
# The option is detected, not assumed: without it the schedule rows say so.
"$cli" run --help > "$work/help.txt"
has_schedule=0
grep -e "${SCHEDULE_OFF[0]}" "$work/help.txt" > /dev/null && has_schedule=1

while read -r model macs; do
  graph="$work/graphs/$model/$model.json"
  x="x=$work/graphs/$model/input.npy"
  # The memory plan (pool vs lower bound) is printed by the host interpreter run.
  "$cli" run "$graph" --input "$x" > "$work/$model.plan" 2>&1 || true
  for s in "${SCHEDULES[@]}"; do
    tag="${s:-all}"
    args=()
    if [ -n "$s" ]; then
      if [ "$has_schedule" = 0 ]; then
        echo '{"skipped": "microtir run has no schedule option yet"}' > "$work/$model.$tag.json"
        continue
      fi
      args=("${SCHEDULE_OFF[@]//NAME/$s}")
    fi
    echo "$model, schedule off: ${s:-none}" >&2
    if "$cli" run "$graph" --input "$x" --target cortex-m4 --json --output-dir "$work/$model.$tag.out" "${args[@]}" \
         > "$work/$model.$tag.json" 2> "$work/$model.$tag.err"; then
      if "$ref" "$graph" "$work/graphs/$model/input.npy" --compare "$work/$model.$tag.out"/*.npy \
           > /dev/null 2> "$work/$model.$tag.cmp"; then
        echo yes > "$work/$model.$tag.exact"
      else
        echo NO > "$work/$model.$tag.exact"
      fi
    else
      python3 -c 'import json,sys; print(json.dumps({"failed": sys.argv[1]}))' \
        "$(tail -1 "$work/$model.$tag.err")" > "$work/$model.$tag.json"
    fi
  done
done < "$work/macs.txt"

python3 - "$work" "${SCHEDULES[@]}" <<'PY'
import json, os, re, sys
work, schedules = sys.argv[1], sys.argv[2:]
print("| model | schedule off | MACs | instructions | instr/MAC | flash (B) | RAM (B) | pool / lower bound | = reference |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|")
for line in open(os.path.join(work, "macs.txt")):
    model, macs = line.split()
    macs = int(macs)
    plan = open(os.path.join(work, model + ".plan")).read()
    m = re.search(r"pool (\d+) bytes, lower bound (\d+) bytes, ratio ([\d.]+)", plan)
    ratio = m.group(3) if m else "?"
    for s in schedules:
        tag = s or "all"
        r = json.load(open(os.path.join(work, f"{model}.{tag}.json")))
        name = s or "(none: all on)"
        if "skipped" in r or "failed" in r:
            print(f"| {model} | {name} | {macs:,} | {r.get('skipped') or 'failed: ' + r['failed']} | | | | | |")
            continue
        rep = r["report"]
        exact = open(os.path.join(work, f"{model}.{tag}.exact")).read().strip()
        instr = rep["instructions"]
        flash = rep["flash_bytes"] - rep.get("test_input_bytes", 0)
        print(f"| {model} | {name} | {macs:,} | {instr:,} | {instr / macs:.2f} | {flash:,} | {rep['ram_bytes']:,} | "
              f"{ratio} | {exact} |")
PY
