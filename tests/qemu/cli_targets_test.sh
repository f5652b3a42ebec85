#!/usr/bin/env bash
# `microtir run model.tar --target T`: the comparison and the report, as JSON for CI and
# as text; one-line errors with exit code 1 for a broken archive, a wrong input shape,
# an unknown target and a missing cross toolchain.
set -euo pipefail
cli="$1"
src="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cli" compile "$src/models/digits/digits.json" -o "$work/digits.tar" > /dev/null

# JSON on stdout, progress on stderr.
# The budget gate, kept (docs/cli.md "Budget gates").
"$cli" run "$work/digits.tar" --input x="$src/models/digits/sample_x.npy" --target cortex-m4 --json \
  --max-flash 1M --max-ram 256K > "$work/run.json" 2> "$work/run.err" || fail "run on cortex-m4 failed: $(cat "$work/run.err")"
grep -q '\[3/3\] cortex-m4: running on QEMU mps2-an386' "$work/run.err" || fail "no progress lines: $(cat "$work/run.err")"
# Compiled for no CPU, run on a DSP core: said, not refused.
grep -q 'warning: the artifact was compiled without -mcpu, so cortex-m4 runs its generic C kernels' "$work/run.err" \
  || fail "no generic-kernels warning: $(cat "$work/run.err")"
python3 - "$work/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is True, r
b = r["budget"]
assert b["ok"] and [c["resource"] for c in b["checks"]] == ["flash", "RAM"], b
assert b["checks"][1]["used"] == r["report"]["ram_bytes"] + r["report"]["stack_bytes"], (b, r["report"])
assert r["compare"][0]["ok"] is True, r["compare"]
rep = r["report"]
assert rep["target"] == "cortex-m4" and rep["instructions"] > 10000, rep
assert rep["flash_bytes"] > 0 and rep["ram_bytes"] >= rep["workspace_bytes"] > 0, rep
assert rep["stack_bytes"] > 0, rep
# The static bound (GCC's call graph) is never below the measurement, which starts in main's frame.
sb = rep["stack_bound"]
assert sb["function"] == "tvmgen_digits_run" and sb["bounded"], sb
assert sb["bytes"] + sb["main_frame_bytes"] >= rep["stack_bytes"], (sb, rep["stack_bytes"])
assert rep["function_stack_bounds"]["tvmgen_digits___tvm_main__"]["bytes"] < sb["bytes"], rep["function_stack_bounds"]
probs = r["outputs"][0]["values"]
assert max(range(10), key=lambda i: probs[i]) == 5, probs  # the sample is a handwritten 5
PY

# Text: the comparison line and the report, from an artifact folder, whose metadata.json
# then holds the static stack bound for the target.
"$cli" compile "$src/models/digits/digits.json" -o "$work/digits" > /dev/null
"$cli" run "$work/digits" --input x="$src/models/digits/sample_x.npy" --target riscv32 > "$work/run.txt" 2> /dev/null \
  || fail "run on riscv32 failed"
grep -q 'stack bound: tvmgen_digits_run needs at most [0-9,]* bytes; with main.s frame ([0-9]*)' "$work/run.txt" \
  || fail "no stack bound with main's frame: $(cat "$work/run.txt")"
# The host measures no stack: its bound line names no main frame to compare with.
"$cli" run "$work/digits" --input x="$src/models/digits/sample_x.npy" --target host > "$work/host.txt" 2> /dev/null \
  || fail "run on host failed"
grep -q 'stack bound: tvmgen_digits_run needs at most [0-9,]* bytes$' "$work/host.txt" \
  || fail "the host's stack bound line: $(cat "$work/host.txt")"
python3 - "$work/digits/metadata.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["memory"]["stack_bounds"]["riscv32"]
assert b["function"] == "tvmgen_digits_run" and b["bounded"] and b["bytes"] > 0, b
assert b["library_calls"] == [], b  # the C library's frames counted from the disassembly
assert 0 < b["functions"]["tvmgen_digits_fc"] < b["bytes"], b
PY
grep -q 'probs: max abs diff .* ok' "$work/run.txt" || fail "no comparison: $(cat "$work/run.txt")"
grep -q 'instructions per inference: [0-9,]* (exact: minstret' "$work/run.txt" || fail "no count: $(cat "$work/run.txt")"

# A model.json straight onto a target: compiled to a temporary artifact first.
"$cli" run "$src/models/digits/digits.json" --input x="$src/models/digits/sample_x.npy" --target wasm32 --json \
  > "$work/wasm.json" 2> /dev/null || fail "model.json on wasm32 failed"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["ok"] and r["report"]["instructions"] is None, r' \
  "$work/wasm.json" || fail "bad wasm32 result"

expect_error() {  # expect_error PATTERN CMD...: exit 1 and a one-line message matching PATTERN
  local pattern="$1"
  shift
  set +e
  "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  set -e
  [ "$rc" -eq 1 ] || fail "exit $rc instead of 1 for: $* ($(cat "$work/err"))"
  grep -q "$pattern" "$work/err" || fail "message '$(cat "$work/err")' does not match '$pattern'"
  [ "$(grep -c . "$work/err")" -le 1 ] || fail "more than one line: $(cat "$work/err")"
}

# A truncated archive, and one with a corrupted header.
head -c 3000 "$work/digits.tar" > "$work/short.tar"
expect_error "short.tar is not a usable tar archive: it is truncated" \
  "$cli" run "$work/short.tar" --input x="$src/models/digits/sample_x.npy" --target host
cp "$work/digits.tar" "$work/bad.tar"
printf 'X' | dd of="$work/bad.tar" bs=1 seek=10 conv=notrunc 2> /dev/null
expect_error "bad.tar is not a usable tar archive: the header at byte 0 has a wrong checksum" \
  "$cli" run "$work/bad.tar" --input x="$src/models/digits/sample_x.npy" --target host

# The wrong input shape: test_images.npy holds all 100 images.
expect_error "input 'x' must be float32 (1, 1, 8, 8), but .*test_images.npy holds float32 (100" \
  "$cli" run "$work/digits.tar" --input x="$src/models/digits/test_images.npy" --target host

# A missing cross toolchain (PATH without it): the package to install.
mkdir -p "$work/bin"
expect_error "target cortex-m4 needs 'arm-none-eabi-gcc', which is not installed; install the Debian package(s) gcc-arm-none-eabi" \
  env PATH="$work/bin" "$cli" run "$work/digits.tar" --input x="$src/models/digits/sample_x.npy" --target cortex-m4
echo "cli targets: ok"
