#!/usr/bin/env bash
# One int8 MLPerf Tiny graph through microtir on one target (host: the C artifact run
# natively; cortex-m4: cross-compiled and run under QEMU), its output compared bit for bit
# with the independent int8 reference. BACKEND: c (default) or llvm.
# usage: mlperf_int8_test.sh MICROTIR INT8_REFERENCE MODEL_DIR TARGET [BACKEND]
set -euo pipefail
cli="$1"
ref="$2"
dir="$3"
target="$4"
backend="${5:-c}"
model=$(basename "$dir")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -f "$dir/$model.json" ] || fail "no $dir/$model.json (the int8_mlperf_graphs fixture writes it)"
"$cli" run "$dir/$model.json" --input x="$dir/input.npy" --target "$target" --backend "$backend" --output-dir "$work/out" --json \
  > "$work/run.json" 2> "$work/run.err" || fail "$model on $target: $(tail -3 "$work/run.err")"
outputs=("$work"/out/*.npy)
[ "${#outputs[@]}" -eq 1 ] && [ -f "${outputs[0]}" ] || fail "expected one output file, got: ${outputs[*]}"
"$ref" "$dir/$model.json" "$dir/input.npy" --compare "${outputs[0]}" || fail "$model on $target differs from the int8 reference"
# microtir's own check (the artifact against its interpreter) must agree too.
python3 - "$work/run.json" "$target" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is True, r.get("compare")
if sys.argv[2] != "host":
    rep = r["report"]
    print(f"{sys.argv[2]}: {rep['instructions']:,} instructions, flash {rep['flash_bytes']:,} B, RAM {rep['ram_bytes']:,} B")
    sb = rep["stack_bound"]
    if sb is not None:  # GCC's call graph: the static bound holds against the measurement
        if sb["bounded"]:
            assert sb["bytes"] + sb["main_frame_bytes"] >= rep["stack_bytes"], (sb, rep["stack_bytes"])
        else:  # only LLVM's objects, which carry no GCC call graph, leave it unknown
            assert "___tvm_main__ has no stack data" in sb["unbounded"], sb
PY
