#!/usr/bin/env bash
# End-to-end checks of the microtir CLI, one group per ctest test.
# usage: cli_test.sh GROUP MICROTIR_BINARY SOURCE_DIR
set -uo pipefail
group="$1"
mtir="$2"
src="$3"
source "$(dirname "$0")/check_helpers.sh"

example="$src/examples/matmul.tir"

group_basics() {
  run 0 "$mtir" --version && contains stdout "$out" "microtir 0."
  run 0 "$mtir" --help && contains stdout "$out" "parse"
  for sub in parse run passes; do
    run 0 "$mtir" "$sub" --help && contains "$sub --help" "$out" "Usage"
  done
  run 1 "$mtir" && contains stderr "$err" "subcommand"
  run 1 "$mtir" frobnicate && empty stdout "$out"
  run 1 "$mtir" parse && contains stderr "$err" "file"
  run 1 "$mtir" parse --bogus-flag "$example" && contains stderr "$err" "microtir: error: "
  # Counts say what they take (not CLI11's range up to DBL_MAX).
  run 1 "$mtir" run "$example" --print-limit -1 && contains stderr "$err" "microtir: error: --print-limit: '-1' is not a whole number of 0 or more"
  run 1 "$mtir" run "$example" --workspace-budget 0 && contains stderr "$err" "'0' is not a whole number of 1 or more"
  run 1 "$mtir" tune "$example" --trials 2x && contains stderr "$err" "--trials: '2x' is not a whole number of 1 or more"
  run 1 "$mtir" parse "$work/does-not-exist.tir" && contains stderr "$err" "cannot open"
  run 1 "$mtir" parse "$work" && contains stderr "$err" "directory"
  run 0 "$mtir" parse "$example" && contains stdout "$out" "def matmul(" && empty stderr "$err"
  # The printed form is a fixed point.
  echo "$out" >"$work/once.tir"
  run 0 "$mtir" parse "$work/once.tir"
  [ "$out" == "$(cat "$work/once.tir")" ] || fail "parse output is not a fixed point"
  run 0 "$mtir" parse - <"$example" && contains stdout "$out" "T.grid"
  run 0 "$mtir" parse --json "$example" && contains stdout "$out" '"ok": true'
}

group_run() {
  run 0 "$mtir" run "$example" --func matmul --input A="$src/examples/matmul_A.npy" \
    --input B="$src/examples/matmul_B.npy" --output-dir "$work/out-dir"
  contains stdout "$out" "C: float32 (4, 3)"
  [ -f "$work/out-dir/C.npy" ] || fail "C.npy not written"
  # C.npy is a real .npy file with the right header.
  head -c 6 "$work/out-dir/C.npy" | od -c | grep -q "N   U   M   P   Y" || fail "C.npy has no npy magic"
  # JSON output: compare against a matmul computed here, independently, in python.
  run 0 "$mtir" run "$example" --input A="$src/examples/matmul_A.npy" \
    --input B="$src/examples/matmul_B.npy" --json
  echo "$out" >"$work/run.json"
  python3 - "$work/run.json" "$src/examples/matmul_A.npy" "$src/examples/matmul_B.npy" <<'PY' || fail "matmul values differ"
import json, struct, sys
def npy(path):
    b = open(path, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0]
    hdr = b[10:10 + hl].decode()
    shape = tuple(int(x) for x in hdr.split("'shape': (")[1].split(")")[0].split(",") if x.strip())
    n = 1
    for s in shape: n *= s
    return shape, struct.unpack("<%df" % n, b[10 + hl:10 + hl + 4 * n])
(m, k), a = npy(sys.argv[2])
(_, n), b = npy(sys.argv[3])
out = json.load(open(sys.argv[1]))["outputs"][0]
assert out["name"] == "C" and out["shape"] == [m, n], out
for i in range(m):
    for j in range(n):
        ref = 0.0
        for x in range(k):
            ref = struct.unpack("f", struct.pack("f", ref + struct.unpack("f", struct.pack("f", a[i*k+x]*b[x*n+j]))[0]))[0]
        got = out["values"][i*n+j]
        assert abs(got - ref) <= 1e-6 * max(1.0, abs(ref)), (i, j, got, ref)
PY
  # Bad packed-in arguments are user errors, and nothing is written.
  run 1 "$mtir" run "$example" --input A="$src/examples/matmul_B.npy" --input B="$src/examples/matmul_B.npy" \
    --output-dir "$work/bad-out" && contains stderr "$err" "A"
  [ ! -e "$work/bad-out/C.npy" ] || fail "an output was written after an error"
  run 1 "$mtir" run "$example" --input X="$src/examples/matmul_A.npy" && contains stderr "$err" "no buffer parameter 'X'"
  run 1 "$mtir" run "$example" --input A && contains stderr "$err" "NAME=VALUE"
  run 1 "$mtir" run "$example" --func nope && contains stderr "$err" "no function 'nope'"
  printf 'not an npy file' >"$work/junk.npy"
  run 1 "$mtir" run "$example" --input A="$work/junk.npy" && contains stderr "$err" "junk.npy"
  run 1 "$mtir" run "$example" --input A="$src/examples/matmul_B.npy" --json && contains stdout "$out" '"ok": false'
  # An out-of-bounds access is a located error, not a crash.
  cat >"$work/oob.tir" <<'TIR'
@T.prim_func
def oob(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(5):
        B[i] = A[i]
TIR
  run 1 "$mtir" run "$work/oob.tir" && contains stderr "$err" "oob.tir:4:" && contains stderr "$err" "out-of-bounds"
  # Scalar parameters size the outputs.
  cat >"$work/iota.tir" <<'TIR'
@T.prim_func
def iota(n: T.int32, B: T.Buffer((n,), "int32")):
    for i in range(n):
        B[i] = i * i
TIR
  run 0 "$mtir" run "$work/iota.tir" --scalar n=5 && contains stdout "$out" "[0, 1, 4, 9, 16]"
  run 1 "$mtir" run "$work/iota.tir" && contains stderr "$err" "--scalar n="
  run 1 "$mtir" run "$work/iota.tir" --scalar n=five && contains stderr "$err" "expected an integer"
}

group_passes() {
  run 0 "$mtir" passes --list && contains stdout "$out" "simplify" && contains stdout "$out" "verify_well_formed"
  run 0 "$mtir" passes "$example" --dump-ir "$work/dump"
  ls "$work/dump" | grep -q '^00-input.tir$' || fail "no 00-input.tir"
  ls "$work/dump" | grep -q -- '-simplify.tir$' || fail "no NN-simplify.tir"
  for f in "$work/dump"/*.tir; do
    run 0 "$mtir" parse "$f"
  done
  run 0 "$mtir" passes "$example" --json && contains stdout "$out" '"changed"'
  run 1 "$mtir" passes "$example" --passes nosuchpass && contains stderr "$err" "unknown pass 'nosuchpass'"
  cat >"$work/fold.tir" <<'TIR'
@T.prim_func
def fold(B: T.Buffer((4,), "int32")):
    for i in range(4):
        if 2 < 1:
            B[i] = 1
        else:
            B[i] = i * 1 + (3 + 4)
TIR
  run 0 "$mtir" passes "$work/fold.tir" --passes simplify && contains stdout "$out" "B[i] = i + 7"
}

group_host() {
  local inputs=(--input A="$src/examples/matmul_A.npy" --input B="$src/examples/matmul_B.npy")
  for api in 0 1; do
    run 0 "$mtir" run "$example" "${inputs[@]}" --target host --unpacked-api "$api" --keep-build "$work/host$api"
    contains stdout "$out" "C: max abs diff 0, max rel diff 0  ok"
    [ -x "$work/host$api/sim" ] || fail "--keep-build did not keep the program"
  done
  run 0 "$mtir" run "$example" "${inputs[@]}" --target host --json && contains stdout "$out" '"max_abs_diff": 0.0'
  # A model whose workspace is larger than the host program's default arena (1 MiB): the
  # host build gets the arena its header asks for (two transposes of a 600x600 float32).
  cat > "$work/big.json" <<'EOF2'
{"format": "microtir-graph", "version": 1, "name": "big", "inputs": [{"name": "x", "shape": [600, 600], "dtype": "float32"}],
 "constants": [], "nodes": [{"name": "t1", "op": "transpose", "inputs": ["x"], "attrs": {"axes": [1, 0]}},
 {"name": "t2", "op": "transpose", "inputs": ["t1"], "attrs": {"axes": [1, 0]}}], "outputs": ["t2"]}
EOF2
  python3 -c 'import struct, sys
h = "{\x27descr\x27: \x27<f4\x27, \x27fortran_order\x27: False, \x27shape\x27: (600, 600), }"
h += " " * (63 - (10 + len(h)) % 64) + "\n"
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<360000f", *range(360000)))' "$work/bigx.npy"
  run 0 "$mtir" run "$work/big.json" --input x="$work/bigx.npy" --target host
  contains stdout "$out" "t2: max abs diff 0, max rel diff 0  ok"
  contains stdout "$out" "pool 1440000 bytes"
  run 0 "$mtir" build "$example" --target "c -unpacked-api=1" -o "$work/art" && contains stdout "$out" "lib0.c"
  grep -q "int32_t matmul(float\* restrict A, float\* restrict B, float\* restrict C)" "$work/art/codegen/host/src/lib0.c" \
    || fail "unpacked signature not found in lib0.c"
  run 0 "$mtir" build "$example" -o "$work/packed" --json && contains stdout "$out" '"symbol": "matmul"'
  grep -q "TVMSystemLibEntryPoint" "$work/packed/codegen/host/src/lib1.c" || fail "no registry in lib1.c"
  # Refused options name the rule, and nothing is written.
  run 1 "$mtir" build "$example" --target "c -interface-api=c -unpacked-api=0" -o "$work/bad" && contains stderr "$err" "needs -unpacked-api=1"
  [ ! -e "$work/bad" ] || fail "a refused build wrote output"
  run 1 "$mtir" build "$example" --target "c -executor=graph" -o "$work/bad" && contains stderr "$err" "use -executor=aot"
  run 1 "$mtir" run "$example" "${inputs[@]}" --target cuda
  # A runtime shape cannot go through the unpacked API.
  cat >"$work/rt.tir" <<'TIR'
@T.prim_func
def f(a: T.handle):
    m = T.int32()
    A = T.match_buffer(a, (m,), "float32")
    for i in range(m):
        A[i] = T.float32(0)
TIR
  run 1 "$mtir" build "$work/rt.tir" --unpacked-api 1 -o "$work/rt" && contains stderr "$err" "rt.tir:4:5: error: make_unpacked_api"
  run 0 "$mtir" build "$work/rt.tir" -o "$work/rt"
  # call_tir: the dump shows the call before lowering and the direct kernel call after.
  local calls="$src/tests/programs/call_tir_tree.tir"
  for api in 0 1; do
    run 0 "$mtir" passes "$calls" --target "c -unpacked-api=$api" --dump-ir "$work/calls$api"
    grep -q 'T.call_tir("rows", M\[0:2, :\], Tmp, bias)' "$work/calls$api/00-input.tir" || fail "no call_tir in the input dump"
    local lowered
    lowered="$(ls "$work/calls$api"/*-lower_call_tir.tir)"
    grep -q 'T.call_extern("int32", "rows' "$lowered" || fail "no kernel call after lower_call_tir ($api)"
    grep -q 'T.call_tir' "$lowered" && fail "call_tir left after lower_call_tir ($api)"
  done
  run 0 "$mtir" run "$calls" --func top --scalar bias=2 --target host --unpacked-api 1 && contains stdout "$out" "Out: max abs diff 0"
  # The bundled model: host C equals the interpreter, and the memory plan is reported.
  run 0 "$mtir" run "$src/models/digits/digits.json" --input x="$src/models/digits/sample_x.npy" --target host
  contains stdout "$out" "probs: max abs diff 0, max rel diff 0  ok"
  contains stdout "$out" "pool 2560 bytes, lower bound 2560 bytes, ratio 1.00"
  run 1 "$mtir" run "$src/models/digits/digits.json" --input x="$src/examples/matmul_A.npy" && contains stderr "$err" "argument 'x'"
  run 0 "$mtir" compile "$src/models/digits/digits.json" -o "$work/mlf" --json && contains stdout "$out" '"workspace_bytes"'
  grep -q "#define TVMGEN_DIGITS_WORKSPACE_SIZE" "$work/mlf/codegen/host/include/tvmgen_digits.h" || fail "no workspace macro"
  [ -f "$work/mlf/metadata.json" ] && [ -f "$work/mlf/src/digits.json" ] || fail "artifact layout incomplete"
  # The artifact folder builds on its own (its runtime/ included) with a firmware main.
  ( cd "$work/mlf" && cc -std=c99 -Wall -Wextra -Werror -pedantic -Iruntime/include -Icodegen/host/include \
      codegen/host/src/*.c runtime/src/*.c runtime/ports/host/platform.c "$src/tests/codegen/digits_main.c" -lm -o fw ) \
    >"$work/fw.log" 2>&1 || { fail "the artifact does not build on its own"; cat "$work/fw.log"; }
  python3 -c "import sys; b=open(sys.argv[1],'rb').read(); n=int.from_bytes(b[8:10],'little'); open(sys.argv[2],'wb').write(b[10+n:])" \
    "$src/models/digits/sample_x.npy" "$work/x.bin"
  run 0 "$work/mlf/fw" "$work/x.bin" && contains stdout "$out" "0.999556124"
  # As one archive: the same files, byte for byte, in the documented layout.
  run 0 "$mtir" compile "$src/models/digits/digits.json" -o "$work/digits.tar"
  mkdir -p "$work/untar" && tar -xf "$work/digits.tar" -C "$work/untar" || fail "the archive does not unpack"
  for f in metadata.json codegen/host/include/tvmgen_digits.h codegen/host/src/lib0.c parameters/fc_w.npy \
           runtime/include/tvm/runtime/c_runtime_api.h src/digits.json; do
    cmp -s "$work/untar/$f" "$work/mlf/$f" || fail "$f differs between the folder and the archive"
  done
  # metadata.json follows the schema in docs/ (and the checker does refuse a broken one).
  run 0 python3 "$src/tests/e2e/check_schema.py" "$src/docs/metadata.schema.json" "$work/untar/metadata.json"
  echo '{"version": "1"}' >"$work/broken.json"
  run 1 python3 "$src/tests/e2e/check_schema.py" "$src/docs/metadata.schema.json" "$work/broken.json"
  contains stdout "$out" "$.version: expected integer"
  # The packed interface: a header for TVMFuncCall, weights passed in, no interface source.
  run 0 "$mtir" compile "$src/models/digits/digits.json" --target "c -interface-api=packed -link-params=0" -o "$work/mlf3"
  grep -q 'define TVMGEN_DIGITS_MAIN "tvmgen_digits___tvm_main__"' "$work/mlf3/codegen/host/include/tvmgen_digits.h" \
    || fail "the packed header does not name main"
  [ ! -e "$work/mlf3/codegen/host/src/tvmgen_digits_interface.c" ] || fail "the packed interface wrote a C interface source"
  grep -q '"interface_api": "packed"' "$work/mlf3/metadata.json" || fail "metadata.json does not record the interface"
  # Weights passed in through the C interface.
  run 0 "$mtir" compile "$src/models/digits/digits.json" --target "c -interface-api=c -unpacked-api=1 -link-params=0" -o "$work/mlf4"
  grep -q 'struct tvmgen_digits_params' "$work/mlf4/codegen/host/include/tvmgen_digits.h" || fail "no params struct"
  # Layers on two simulated NPU instances: device files, the devices struct, and a run on the host.
  run 0 "$mtir" compile "$src/models/digits/digits.json" --device npu0=conv2d --device npu1=dense -o "$work/mlf5"
  [ -f "$work/mlf5/codegen/npu0/src/lib0.c" ] && [ -f "$work/mlf5/codegen/npu1/src/lib0.c" ] || fail "no device sources"
  grep -q 'struct tvmgen_digits_devices' "$work/mlf5/codegen/host/include/tvmgen_digits.h" || fail "no devices struct"
  run 0 "$mtir" run "$work/mlf5" --input x="$src/models/digits/sample_x.npy" --target host
  contains stdout "$out" "probs: max abs diff 0"
  contains stdout "$out" "device npu0: 1 activations, 2 kernels, 23040 MACs, 5960 cycles"
  contains stdout "$out" "device npu1: 1 activations, 1 kernels, 640 MACs, 260 cycles"
  run 1 "$mtir" compile "$src/models/digits/digits.json" --device npu0=softmax -o "$work/mlf6"
  contains stderr "$err" "node 'probs': op 'softmax' cannot run on device 'npu0' (npu runs conv2d, dense)"
  [ ! -e "$work/mlf6" ] || fail "a refused compile wrote output"
  run 1 "$mtir" compile "$src/models/digits/digits.json" --device npu0=conv2d --target "c -interface-api=packed -link-params=0" -o "$work/mlf7"
  contains stderr "$err" "need -runtime=c -executor=aot -interface-api=c -unpacked-api=1"
  # The device call and its attribute are visible after every pass.
  run 0 "$mtir" passes "$src/models/digits/digits.json" --device npu0=conv2d --target "c -interface-api=c -unpacked-api=1" --dump-ir "$work/dev-ir"
  dev_irs=("$work"/dev-ir/*-verify_well_formed.tir)  # the last pass's file, whatever its number
  grep -q '"tir.resource_handle": True' "${dev_irs[-1]}" || fail "the device call's attribute is not in the last pass's IR"
  run 1 "$mtir" compile "$example" -o "$work/mlf3" && contains stderr "$err" "not a model"
}

# The LLVM backend: host runs equal the interpreter, IR for every triple, objects when
# the CLI has the native LLVM helpers ($MICROTIR_LLVM_NATIVE=ON), and an LLVM-built model
# artifact that links with the C interface and a firmware main and prints what C prints.
# Every interface mode `compile` writes, run by `run` on the host; the memory sections
# of metadata.json; `compile`'s quiet default.
group_interfaces() {
  local model="$src/models/digits/digits.json" x=(--input x="$src/models/digits/sample_x.npy")
  run 0 "$mtir" compile "$model" -o "$work/quiet" && empty stdout "$out"
  run 0 "$mtir" compile "$model" -o "$work/loud" -v
  contains stdout "$out" "wrote $work/loud:codegen/host/include/tvmgen_digits.h"
  # -v says which keys the target string left out and what they became: the lean pair.
  run 0 "$mtir" compile "$model" --target "c -mcpu=cortex-m4" -o "$work/lean" -v
  contains stdout "$out" "target c -mcpu=cortex-m4 -runtime=c -executor=aot -interface-api=c -unpacked-api=1 -link-params=1"
  contains stdout "$out" "  defaulted: -runtime=c -executor=aot -interface-api=c -unpacked-api=1 -link-params=1 -workspace-byte-alignment=16"
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["target_defaults"]; assert d == {"runtime": "c", "executor": "aot", "interface-api": "c", "unpacked-api": "1", "link-params": "1", "workspace-byte-alignment": "16"}, d' \
    "$work/lean/metadata.json" || fail "metadata.json's target_defaults"
  contains "compile -v" "$err" "pass       plan_memory"  # -v times the steps too (--time-passes)
  # The timer's table in the JSON: every step, the passes of the lowering, every figure a number >= 0.
  run 0 "$mtir" compile "$model" -o "$work/timed" --json --time-passes
  echo "$out" | python3 -c '
import json, sys
t = json.load(sys.stdin)["timing"]
rows = t["rows"]
steps = [r["name"] for r in rows if r["kind"] == "step"]
assert steps == ["import", "schedule", "lower", "codegen", "export", "write"], steps
passes = [r["name"] for r in rows if r["kind"] == "pass"]
assert passes[0] == "verify_well_formed" and "plan_memory" in passes and len(passes) >= 12, passes
assert all(r["wall_ms"] >= 0 and r["peak_bytes"] >= 0 for r in rows), rows
assert t["memory"] in ("rss_peak", "rss_hwm_growth"), t["memory"]
' || fail "compile --json --time-passes: the timing table is incomplete"
  checks=$((checks + 1))
  # The packed interface asked for, with the weights linked in (TVM's `--target c`).
  run 0 "$mtir" compile "$model" --target "c -interface-api=packed" -o "$work/packed_linked.tar"
  tar -xf "$work/packed_linked.tar" -C "$work" codegen/host/include/tvmgen_digits.h metadata.json
  grep -q 'define TVMGEN_DIGITS_MAIN "tvmgen_digits_run"' "$work/codegen/host/include/tvmgen_digits.h" \
    || fail "the packed header with linked weights does not name its entry"
  grep -q 'define TVMGEN_DIGITS_NUM_ARGS 2' "$work/codegen/host/include/tvmgen_digits.h" \
    || fail "the packed entry with linked weights takes more than the input and the output"
  run 0 python3 "$src/tests/e2e/check_schema.py" "$src/docs/metadata.schema.json" "$work/metadata.json"
  python3 - "$work/metadata.json" <<'PY' || fail "metadata.json's memory section is wrong"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]["functions"]
main = m["main"][0]
assert main["workspace_size_bytes"] == 2560, main
assert main["inputs_size_bytes"] == 256 and main["outputs_size_bytes"] == 40 and main["io_size_bytes"] == 296, main
assert main["constants_size_bytes"] == 4 * (8 + 72 + 16 + 1152 + 10 + 640), main
ops = {f["function_name"]: f["workspace"][0]["workspace_size_bytes"] for f in m["operator_functions"]}
assert ops.get("tvmgen_digits_fused_bn1_relu1") == 400, ops
PY
  for t in "c" "c -interface-api=packed -link-params=0" "c -interface-api=c -unpacked-api=1 -link-params=0" \
           "llvm -interface-api=packed"; do
    run 0 "$mtir" compile "$model" --target "$t" -o "$work/mode.tar"
    run 0 "$mtir" run "$work/mode.tar" "${x[@]}" --target host
    contains "run ($t)" "$out" "probs: max abs diff 0, max rel diff 0  ok"
  done
  # `run model.tar` prints the memory plan as `run model.json` does.
  contains stdout "$out" "pool 2560 bytes, lower bound 2560 bytes, ratio 1.00"
  contains stdout "$out" "relu1                             0       2048"
  # A model without weights under -link-params=0: no params struct (an empty struct is not
  # C99, and the firmware is built with -pedantic) and run() takes inputs and outputs only.
  cat > "$work/noweights.json" <<'JSON'
{"format": "microtir-graph", "version": 1, "name": "noweights",
 "inputs": [{"name": "a", "shape": [2, 3], "dtype": "float32"}, {"name": "b", "shape": [2, 3], "dtype": "float32"}],
 "nodes": [{"name": "sum", "op": "add", "inputs": ["a", "b"]}], "outputs": ["sum"]}
JSON
  run 0 "$mtir" compile "$work/noweights.json" --target "c -interface-api=c -unpacked-api=1 -link-params=0" -o "$work/nw"
  grep -q "tvmgen_noweights_params" "$work/nw/codegen/host/include/tvmgen_noweights.h" \
    && fail "a model without weights declares a params struct"
  grep -q "int32_t tvmgen_noweights_run(struct tvmgen_noweights_inputs\* inputs, struct tvmgen_noweights_outputs\* outputs);" \
    "$work/nw/codegen/host/include/tvmgen_noweights.h" || fail "run() of a model without weights"
  checks=$((checks + 2))
  run 0 "$mtir" compile "$work/noweights.json" --target "c -interface-api=c -unpacked-api=1 -link-params=0" -o "$work/nw.tar"
  python3 - "$work/nw_a.npy" <<'PY'
import struct, sys
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<6f", -2.5, -1.0, 0.0, 0.5, 3.25, 100.0))
PY
  run 0 "$mtir" run "$work/nw.tar" --target host --input a="$work/nw_a.npy" --input b="$work/nw_a.npy"
  contains "run (no weights, -link-params=0)" "$out" "sum: max abs diff 0, max rel diff 0  ok"
}

# Budget gates (docs/cli.md "Budget gates"): two host builds, one per command.
group_budget() {
  local model="$src/models/digits/digits.json" x=(--input x="$src/models/digits/sample_x.npy")
  # Bad sizes and misplaced options are refused before anything is built.
  run 1 "$mtir" run "$model" "${x[@]}" --target host --max-flash 12Q
  contains stderr "$err" "bad --max-flash '12Q': expected bytes, as a whole number with an optional K (1024) or M (1024 K) suffix"
  run 1 "$mtir" run "$model" "${x[@]}" --target host --max-ram 1.5M && contains stderr "$err" "bad --max-ram '1.5M'"
  run 1 "$mtir" run "$src/examples/matmul.tir" --target host --max-flash 64K
  contains stderr "$err" "--max-flash and --max-ram check a model's build on a target"
  run 1 "$mtir" compile "$model" -o "$work/nob" --max-ram 20K && contains stderr "$err" "add --board"
  # One limit kept, one exceeded: exit 1, the table with by how much and what takes the room.
  run 1 "$mtir" run "$model" "${x[@]}" --target host --max-flash 64M --max-ram 1K
  contains stdout "$out" "probs: max abs diff 0, max rel diff 0  ok"
  contains stdout "$out" "budget on host: EXCEEDED"
  # The report and the table print sizes alike (one with_commas).
  echo "$out" | grep -Eq '^  flash: [0-9]{1,3}(,[0-9]{3})+ bytes \(text' || fail "no flash line with commas: $out"
  echo "$out" | grep -Eq '^  flash +[0-9,]+ bytes of +67,108,864  ok, [0-9,]+ to spare$' || fail "no kept flash line: $out"
  echo "$out" | grep -Eq '^  RAM +[0-9,]+ bytes of +1,024  EXCEEDS by [0-9,]+ bytes \([0-9]+% over\)$' || fail "no RAM line: $out"
  contains stdout "$out" "    workspace (intermediate tensors)"
  contains stdout "$out" "    largest functions and objects in it:"
  contains stderr "$err" "microtir: error: over budget on host: RAM by "
  # compile --board measures; --json carries the same in a "budget" object.
  run 1 "$mtir" compile "$model" -o "$work/budget.tar" --board host --max-flash 4K --json
  echo "$out" > "$work/budget.json"
  python3 - "$work/budget.json" <<'PY' || fail "the budget JSON is wrong"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is False and r["metadata"]["model_name"] == "digits", r.keys()
b, rep = r["budget"], r["report"]
assert b["ok"] is False and b["target"] == "host" and len(b["checks"]) == 1, b
c = b["checks"][0]
assert c["resource"] == "flash" and c["limit"] == 4096 and c["used"] == rep["flash_bytes"], (c, rep)
assert c["exceeds"] and c["over_by"] == c["used"] - 4096, c
assert sum(p["bytes"] for p in c["parts"]) == c["used"], c["parts"]
parts = {p["name"]: p["bytes"] for p in c["parts"]}
assert parts["unnamed constants (string literals: error messages)"] > 0, parts
assert parts["code (text)"] == rep["text_bytes"] and parts["weights (linked constants)"] == 4 * (8 + 72 + 16 + 1152 + 10 + 640), parts
assert [p["bytes"] for p in c["parts"]] == sorted((p["bytes"] for p in c["parts"]), reverse=True), c["parts"]
assert c["symbols"] and all(s["section"] in ("text", "rodata", "data") for s in c["symbols"]), c["symbols"]
assert c["symbols"][0] == {"name": "tvmgen_digits_conv2_w", "bytes": 4 * 1152, "section": "rodata"}, c["symbols"]
PY
}

group_llvm() {
  local native="${MICROTIR_LLVM_NATIVE:-OFF}"
  local inputs=(--input A="$src/examples/matmul_A.npy" --input B="$src/examples/matmul_B.npy")
  for api in 0 1; do
    run 0 "$mtir" run "$example" "${inputs[@]}" --target host --backend llvm --unpacked-api "$api"
    contains stdout "$out" "host LLVM"
    contains stdout "$out" "C: max abs diff 0, max rel diff 0  ok"
  done
  run 0 "$mtir" run "$src/models/digits/digits.json" --input x="$src/models/digits/sample_x.npy" --target host --backend llvm
  contains stdout "$out" "probs: max abs diff 0, max rel diff 0  ok"
  run 1 "$mtir" run "$example" "${inputs[@]}" --target host --backend rust
  local triple
  for triple in x86_64-pc-linux-gnu thumbv7m-none-eabi thumbv7em-none-eabihf riscv32-unknown-elf wasm32-unknown-unknown; do
    run 0 "$mtir" build "$example" --target "llvm -mtriple=$triple" -o "$work/ll-$triple"
    contains stdout "$out" "codegen/host/src/lib0.ll"
    grep -q "target triple = \"$triple\"" "$work/ll-$triple/codegen/host/src/lib0.ll" || fail "no triple $triple in lib0.ll"
    grep -q "@TVMSystemLibEntryPoint" "$work/ll-$triple/codegen/host/src/lib1.ll" || fail "no registry in lib1.ll"
    if [ "$native" = ON ]; then
      local magic
      magic="$(head -c 4 "$work/ll-$triple/codegen/host/lib/lib0.o" | od -An -c | tr -d ' ')"
      case "$triple" in
        wasm32*) [ "$magic" = '\0asm' ] || fail "lib0.o for $triple is not a wasm object ($magic)" ;;
        *) [ "$magic" = '177ELF' ] || fail "lib0.o for $triple is not an ELF object ($magic)" ;;
      esac
    elif command -v llc-14 >/dev/null; then
      run 0 llc-14 -filetype=obj -mtriple="$triple" "$work/ll-$triple/codegen/host/src/lib0.ll" -o "$work/ll-$triple/lib0.o"
    fi
  done
  run 1 "$mtir" build "$example" --target "llvm -mtriple=sparc-sun-solaris" -o "$work/bad"
  contains stderr "$err" "-mtriple=sparc-sun-solaris is not supported by the LLVM backend"
  [ ! -e "$work/bad" ] || fail "a refused build wrote output"
  # A model artifact: .ll for inspection, .o in codegen/host/lib/, the C interface in C.
  run 0 "$mtir" compile "$src/models/digits/digits.json" --target "llvm -interface-api=c -unpacked-api=1" -o "$work/mlf" --time-passes
  contains "--time-passes" "$err" "llvm: kernels (lib0.ll)"
  [ -f "$work/mlf/codegen/host/src/lib0.ll" ] && [ -f "$work/mlf/codegen/host/src/tvmgen_digits_interface.c" ] \
    || fail "LLVM artifact layout incomplete"
  if [ "$native" = ON ]; then
    grep -q '"codegen/host/lib/lib0.o"' "$work/mlf/metadata.json" || fail "metadata.json does not list lib0.o"
    contains "--time-passes" "$err" "llvm: object lib0.o (native"
    contains "--time-passes" "$err" "llvm: optimize lib0.ll (-O2)"
    ( cd "$work/mlf" && cc -std=c99 -Wall -Wextra -Werror -pedantic -Iruntime/include -Icodegen/host/include \
        codegen/host/src/*.c codegen/host/lib/*.o runtime/src/*.c runtime/ports/host/platform.c \
        "$src/tests/codegen/digits_main.c" -lm -o fw ) >"$work/fw.log" 2>&1 \
      || { fail "the LLVM artifact does not link with the C interface"; cat "$work/fw.log"; }
    python3 -c "import sys; b=open(sys.argv[1],'rb').read(); n=int.from_bytes(b[8:10],'little'); open(sys.argv[2],'wb').write(b[10+n:])" \
      "$src/models/digits/sample_x.npy" "$work/x.bin"
    run 0 "$work/mlf/fw" "$work/x.bin" && contains stdout "$out" "0.999556124"
    llvm_parts
  fi
}

# A large module compiles in parts on threads (docs/llvm-backend.md): MLPerf Tiny's IC
# model (19,000 lines of IR) is two objects, all listed in metadata.json; the timer has
# the split and each part. (tests/tflite runs IC's parts on Cortex-M4 against TFLite.)
llvm_parts() {
  local shared="${MICROTIR_SHARED_TFLITE:-$src/../shared/tflite}" ic
  ic="$shared/models/pretrainedResnet_quant.tflite"
  if [ ! -f "$ic" ]; then echo "skipped: the IC model's parts: $ic not found"; return 0; fi
  run 0 "$mtir" compile "$ic" --target "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4 -interface-api=c -unpacked-api=1" \
    -o "$work/ic" --time-passes
  contains "--time-passes" "$err" "llvm: split lib0.ll into parts"
  contains "--time-passes" "$err" "llvm: optimize and emit 2 parts of lib0.ll"
  contains "--time-passes" "$err" "llvm: part 1 ("
  local o
  for o in lib0.o lib0_part1.o lib1.o; do
    [ -f "$work/ic/codegen/host/lib/$o" ] || fail "the IC artifact has no $o"
    grep -q "\"codegen/host/lib/$o\"" "$work/ic/metadata.json" || fail "metadata.json does not list $o"
  done
  [ ! -e "$work/ic/codegen/host/lib/lib0_part2.o" ] || fail "IC is two parts, not more"
  [ "$(grep -c '^define' "$work/ic/codegen/host/src/lib0.ll")" -gt 3 ] || fail "lib0.ll is not the whole module"
}

# The WebAssembly backend through the CLI (docs/wasm-backend.md): the artifact's files,
# the run under node against the interpreter, and the refusals of mismatched runs.
group_wasm() {
  local d="$src/models/digits" x=(--input x="$src/models/digits/sample_x.npy")
  run 0 "$mtir" compile "$d/digits.json" --target wasm -o "$work/w" -v
  contains stdout "$out" "codegen/host/src/digits.wat"
  checks=$((checks + 1))
  [ ! -d "$work/w/runtime" ] || fail "a wasm artifact carries the C runtime"
  grep -q '"target": "wasm -opt=O2' "$work/w/metadata.json" || fail "metadata.json has no wasm target"
  if [ "${MICROTIR_BINARYEN_NATIVE:-OFF}" = ON ]; then
    [ "$(head -c 4 "$work/w/codegen/host/lib/digits.wasm" | od -An -c | tr -d ' ')" = '\0asm' ] || fail "digits.wasm is not a wasm module"
    contains "compile -v" "$err" "binaryen: assemble and optimize (-O2)"
    contains "compile -v" "$err" "binaryen: optimize (-O2)"
    run 0 "$mtir" run "$work/w" "${x[@]}" --target wasm-binaryen
    contains stdout "$out" "probs: max abs diff 0, max rel diff 0  ok"
    contains stdout "$out" "us per inference"
    run 0 "$mtir" run "$d/digits.json" "${x[@]}" --target wasm-binaryen --json
    contains "run --json" "$out" '"ok": true'
    run 0 "$mtir" build "$example" --target "wasm -opt=Oz" -o "$work/b"
    contains stdout "$out" "codegen/host/lib/lib0.wasm"
    run 1 "$mtir" run "$work/w" "${x[@]}" --target host
    contains stderr "$err" "run it with --target wasm-binaryen"
  else
    run 1 "$mtir" run "$work/w" "${x[@]}" --target wasm-binaryen
    contains stderr "$err" "compiled without Binaryen"
  fi
  run 0 "$mtir" compile "$d/digits.json" -o "$work/c"
  run 1 "$mtir" run "$work/c" "${x[@]}" --target wasm-binaryen
  contains stderr "$err" "runs artifacts compiled with --target wasm"
  run 1 "$mtir" run "$d/digits.json" "${x[@]}" --target wasm-binaryen --backend llvm
  contains stderr "$err" "--backend llvm does not apply"
  run 1 "$mtir" compile "$d/digits.json" --target "wasm -link-params=0" -o "$work/lp"
  contains stderr "$err" "the wasm target needs"
  checks=$((checks + 1))
  [ ! -e "$work/lp" ] || fail "a refused compile wrote output"
  if [ "${MICROTIR_BINARYEN_NATIVE:-OFF}" = ON ]; then
    run 0 "$mtir" run "$d/digits.json" "${x[@]}" --target wasm-binaryen --device npu0=conv2d --device npu1=dense
    contains stdout "$out" "probs: max abs diff"
    contains stdout "$out" "device npu0: 1 activations, 2 kernels, 23040 MACs, 5960 cycles"
  fi
}

# In-place sharing: tests/e2e/models/residual_reshape.json's add (with its relu) writes
# over its dead input and its reshapes and flatten are views (no kernel): the pool is
# below the whole-tensor bound, and every build equals the interpreter, which runs the
# unplanned main (each tensor its own allocation).
inplace_model="$src/tests/e2e/models/residual_reshape.json"
inplace_input="x=$src/tests/e2e/models/residual_reshape_x.npy"

group_inplace() {
  for api in 0 1; do
    run 0 "$mtir" run "$inplace_model" --input "$inplace_input" --target host --unpacked-api $api
    contains stdout "$out" "logits: max abs diff 0, max rel diff 0  ok"
    contains stdout "$out" "pool 512 bytes, lower bound 768 bytes, ratio 0.67"
    contains stdout "$out" "lower bound with in-place sharing 512 bytes, ratio 1.00"
  done
  run 0 "$mtir" run "$inplace_model" --input "$inplace_input" --target host --backend llvm
  contains stdout "$out" "logits: max abs diff 0, max rel diff 0  ok"
  run 0 "$mtir" compile "$inplace_model" -o "$work/inplace"
  local meta="$work/inplace/metadata.json" lib="$work/inplace/codegen/host/src/lib0.c"
  python3 - "$meta" <<'PY' || fail "metadata.json: wrong memory figures"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
assert (m["pool_bytes"], m["lower_bound_bytes"], m["shared_lower_bound_bytes"]) == (512, 768, 512), m
PY
  # The kernel that writes over its input promises distinct buffers only for the input
  # it does not write over; the reshapes and the flatten have no kernel.
  grep -q "tvmgen_residual_reshape_fused_sum_act(float\* lhs, float\* restrict rhs, float\* out)" "$lib" ||
    fail "the in-place kernel's parameters: restrict only on rhs"
  grep -Eq "tvmgen_residual_reshape_(r1|r2|flat)\(" "$lib" && fail "a reshape still has a copy kernel"
  # -reuse-io-buffers=1: the AD model's intermediates (128 bytes each) all fit in its
  # 640-byte input after the first layer and in its output before the last.
  mlperf_ad || return 0
  run 0 "$mtir" run "$ad" --input "input_1=$ad_in" --target host --reuse-io-buffers
  contains stdout "$out" "Identity: max abs diff 0, max rel diff 0  ok"
  contains stdout "$out" "pool 0 bytes"
  contains stdout "$out" "1032 bytes of intermediates in the model's input/output buffers (-reuse-io-buffers=1)"
  contains stdout "$out" "functional_1_activation_Relu          0        128 in Identity"
  # By default the intermediates go to its output alone, before the last layer writes it:
  # the last layer's input stays in the pool.
  run 0 "$mtir" run "$ad" --input "input_1=$ad_in" --target host
  contains stdout "$out" "pool 128 bytes"
  contains stdout "$out" "904 bytes of intermediates in the model's output buffers before their results"
  run 0 "$mtir" compile "$ad" --target "c -interface-api=c -unpacked-api=1 -reuse-io-buffers=1" -o "$work/ad-io"
  grep -q '"target": "c .*-reuse-io-buffers=1"' "$work/ad-io/metadata.json" || fail "metadata.json has no -reuse-io-buffers=1"
  run 1 "$mtir" compile "$ad" --target "c -reuse-io-buffers=2" -o "$work/ad-bad"
  contains stderr "$err" "reuse-io-buffers takes 0 or 1"
}

# MLPerf Tiny's AD model and an input TFLM ran it on: third-party files, in
# ../shared/tflite beside the source tree (or MICROTIR_SHARED_TFLITE). Sets $ad and
# $ad_in, or says the checks that need them are skipped and returns 1.
mlperf_ad() {
  local shared="${MICROTIR_SHARED_TFLITE:-$src/../shared/tflite}"
  ad="$shared/models/ad01_int8.tflite" ad_in="$shared/reference/ad/lcg_9e3779b9/input.npy"
  if [ ! -f "$ad" ] || [ ! -f "$ad_in" ]; then
    echo "skipped: the AD model checks: $shared/models or $shared/reference not found"
    return 1
  fi
}

group_inplace_qemu() {
  run 0 "$mtir" run "$inplace_model" --input "$inplace_input" --target cortex-m4
  contains stdout "$out" "cortex-m4 vs interpreter"
  contains stdout "$out" "logits: max abs diff 0, max rel diff 0  ok"
  contains stdout "$out" "lower bound with in-place sharing 512 bytes"
  mlperf_ad || return 0
  # By default too: the last layer gathers its input before it writes the output, so that
  # input lies in the output buffer and no pool is left (only the allocator's slack).
  run 0 "$mtir" run "$ad" --input "input_1=$ad_in" --target cortex-m4
  contains stdout "$out" "Identity: max abs diff 0, max rel diff 0  ok"
  contains stdout "$out" "workspace 15, input/output buffers 1,280"
  contains stdout "$out" "pool 0 bytes"
  run 0 "$mtir" run "$ad" --input "input_1=$ad_in" --target cortex-m4 --reuse-io-buffers
  contains stdout "$out" "Identity: max abs diff 0, max rel diff 0  ok"
  contains stdout "$out" "workspace 15, input/output buffers 1,280"
}

group_malformed() {
  local n=0
  # Text errors, and call_tir errors the verifier finds after parsing.
  for f in "$src"/tests/script/malformed/*.tir "$src"/tests/call_tir/invalid/*.tir; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    local expect
    expect="$(sed -n 's/^# expect-error: \([0-9]*:[0-9]*\): \(.*\)$/\1|\2/p' "$f" | head -1)"
    [ -n "$expect" ] || { fail "$f has no '# expect-error: L:C: message' line"; continue; }
    local loc="${expect%%|*}" msg="${expect#*|}"
    if run 1 "$mtir" parse "$f"; then
      contains "stderr of $(basename "$f")" "$err" "$(basename "$f"):$loc: error: "
      contains "stderr of $(basename "$f")" "$err" "$msg"
      contains "stderr of $(basename "$f")" "$err" "^"
      empty "stdout of $(basename "$f")" "$out"
    fi
  done
  [ "$n" -ge 25 ] || fail "only $n malformed inputs found, expected at least 25"
}

"group_$group"
echo "$group: $checks checks, $failures failures"
[ "$failures" -eq 0 ]
