#!/usr/bin/env bash
# End-to-end checks of the ONNX frontend through the CLI, one group per ctest test.
# usage: onnx_test.sh GROUP MICROTIR_BINARY SOURCE_DIR [NODE_TEST_DIR]
set -uo pipefail
group="$1"
mtir="$2"
src="$3"
node_tests="${4:-/usr/share/libonnx-testdata/data/node}"
source "$(dirname "$0")/check_helpers.sh"

# Every malformed or unsupported file: exit code 1 (a user error, not a crash or an
# internal error) and the named message.
group_malformed() {
  local n=0
  for f in "$src"/tests/onnx/malformed/*.onnx; do
    n=$((n + 1))
    local name
    name="$(basename "$f")"
    for sub in compile run; do
      if [ "$sub" = compile ]; then
        run 1 "$mtir" compile "$f" -o "$work/art" || continue
      else
        run 1 "$mtir" run "$f" --input x="$src/models/digits/sample_x.npy" || continue
      fi
      while IFS= read -r line; do
        [ -n "$line" ] && contains "$sub stderr of $name" "$err" "$line"
      done <"${f%.onnx}.expect"
      contains "$sub stderr of $name" "$err" "microtir: "
    done
  done
  [ "$n" -ge 12 ] || fail "only $n malformed ONNX files found"
}

# The bundled model: its ONNX export (tools/export_onnx.py) and its JSON graph compile
# to identical C, and the ONNX model runs on the host like the JSON one.
group_digits() {
  local d="$src/models/digits"
  run 0 "$mtir" compile "$d/digits.json" -o "$work/from_json" || return
  run 0 "$mtir" compile "$d/digits.onnx" -o "$work/from_onnx" || return
  local c_files=0
  for f in $(cd "$work/from_json" && find codegen -name '*.c' -o -name '*.h' | sort); do
    c_files=$((c_files + 1))
    checks=$((checks + 1))
    cmp -s "$work/from_json/$f" "$work/from_onnx/$f" || { fail "$f differs between the JSON and ONNX frontends";
      diff "$work/from_json/$f" "$work/from_onnx/$f" | head -20; }
  done
  [ "$c_files" -ge 2 ] || fail "only $c_files C files in the artifact"
  run 0 "$mtir" run "$d/digits.onnx" --input x="$d/sample_x.npy" --target host --json || return
  contains "run stdout" "$out" '"ok": true'
  # The same probabilities as the JSON graph's.
  run 0 "$mtir" run "$d/digits.json" --input x="$d/sample_x.npy" --json || return
  local json_out="$out"
  run 0 "$mtir" run "$d/digits.onnx" --input x="$d/sample_x.npy" --json || return
  checks=$((checks + 1))
  [ "$json_out" == "$out" ] || fail "digits.onnx and digits.json give different outputs"
}

# `microtir import`: the JSON graph it writes compiles to the same artifact as the .onnx
# itself (and loads with no other file: the weights are inline); stdout without -o;
# refusals are user errors.
group_import() {
  local d="$src/models/digits"
  run 0 "$mtir" import "$d/digits.onnx" -o "$work/digits.json" || return
  contains "import stdout" "$out" "wrote $work/digits.json"
  run 0 "$mtir" import "$d/digits.onnx" || return
  checks=$((checks + 1))
  [ "$out" == "$(cat "$work/digits.json")" ] || fail "import to stdout differs from import -o"
  contains "the written graph" "$out" '"format": "microtir-graph"'
  run 0 "$mtir" compile "$d/digits.onnx" -o "$work/from_onnx" || return
  run 0 "$mtir" compile "$work/digits.json" -o "$work/from_import" || return
  # Every file but the model's own copy in src/ (digits.onnx there, digits.json here).
  checks=$((checks + 1))
  diff -r -x src "$work/from_onnx" "$work/from_import" >/dev/null || { fail "the imported graph compiles to a different artifact";
    diff -r -x src "$work/from_onnx" "$work/from_import" | head -20; }
  [ -f "$work/from_import/codegen/host/src/lib0.c" ] || fail "no lib0.c in the artifact"
  run 1 "$mtir" import "$d/digits.json" || return
  contains "import stderr" "$err" "import reads an ONNX model"
  run 1 "$mtir" import "$src/tests/onnx/malformed/truncated.onnx" -o "$work/none.json" || return
  contains "import stderr" "$err" "malformed or truncated"
  checks=$((checks + 1))
  [ ! -e "$work/none.json" ] || fail "a refused import wrote a file"
}

# Models whose shapes, pads and axes are integer initializers: the artifact links them
# as static int64 arrays (in the file main's source includes, where main reads them) and
# runs on the host like any other (they used to be refused).
group_linked_int_constants() {
  local spec m name shape
  for spec in "reshape_initializers:1,2,6,6" "squeeze_unsqueeze_13:1,3,1,4" "pad_initializers:1,2,6,6" "gemm_matmul:3,4"; do
    m="${spec%%:*}" shape="${spec#*:}"
    python3 - "$work/$m.npy" "$shape" <<'PY'
import struct, sys
shape = tuple(int(d) for d in sys.argv[2].split(","))
n = 1
for d in shape: n *= d
header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (shape,)
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%df" % n, *[(i % 7 - 3) * 0.5 for i in range(n)]))
PY
    run 0 "$mtir" compile "$src/tests/onnx/import/$m.onnx" -o "$work/$m" || return
    contains "$m weights" "$(cat "$work/$m"/codegen/host/src/*_weights.inc)" "static const int64_t"
    run 0 "$mtir" run "$work/$m" --input "x=$work/$m.npy" --target host || return
    contains "$m run" "$out" "ok"
  done
}

# What opsets 1-6 (and Upsample's 7 and 9) write, one model per form
# (tests/onnx/make_old_opsets.py): each matches numpy's output within float rounding; the
# refused forms name the attribute or the opset.
group_old_opsets() {
  local d="$src/tests/onnx/old_opsets" n=0 m name
  for m in "$d"/*.onnx; do
    name="$(basename "${m%.onnx}")"
    n=$((n + 1))
    if [ -f "$d/$name.expect" ]; then
      run 1 "$mtir" compile "$m" -o "$work/$name" || continue
      contains "$name stderr" "$err" "unsupported: node 'y' "
      contains "$name stderr" "$err" "$(cat "$d/$name.expect")"
      continue
    fi
    mkdir -p "$work/$name"
    # The interpreter for each; the C build too (seconds each) for the forms that lower to
    # node combinations of their own (rank-8 broadcasts, per-activation statistics).
    local target=()
    case "$name" in upsample_* | batchnorm_spatial0_* | add_broadcast_*) target=(--target host) ;; esac
    run 0 "$mtir" run "$m" --input "x=$d/$name.x.npy" --output-dir "$work/$name" "${target[@]}" || continue
    checks=$((checks + 1))
    python3 - "$work/$name/y.npy" "$d/$name.y.npy" <<'PY' || fail "$name: the output differs from numpy's"
import ast, struct, sys
def load(path):  # float32 little-endian, C order: (shape, values)
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path
    hlen = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = (10 if data[6] == 1 else 12) + hlen
    header = ast.literal_eval(data[start - hlen:start].decode())
    assert header["descr"] == "<f4" and not header["fortran_order"], header
    n = (len(data) - start) // 4
    return tuple(header["shape"]), struct.unpack("<%df" % n, data[start:])
(gs, got), (ws, want) = load(sys.argv[1]), load(sys.argv[2])
if gs != ws:
    sys.exit("shape %s, numpy's %s" % (gs, ws))
bad = [i for i, (g, w) in enumerate(zip(got, want)) if abs(g - w) > 1e-5 + 1e-5 * abs(w)]
if bad:
    i = bad[0]
    sys.exit("%d of %d values differ; [%d] = %r, numpy's %r" % (len(bad), len(want), i, got[i], want[i]))
PY
  done
  [ "$n" -ge 20 ] || fail "only $n old-opset models found"
}

# 3-D convolutions and float64/int64 elementwise arithmetic (tests/onnx/make_dtypes_3d.py):
# the interpreter and host C agree bit for bit (run --target host reports a max abs diff
# of 0; LLVM for four of them, wasm32 for two), and match numpy's output (bit for bit, or within the model's .tolerance: rtol
# atol); the
# refused forms name the operator.
group_dtypes_3d() {
  local d="$src/tests/onnx/dtypes_3d" n=0 m name tolerance
  for m in "$d"/*.onnx; do
    name="$(basename "${m%.onnx}")"
    n=$((n + 1))
    if [ -f "$d/$name.expect" ]; then
      run 1 "$mtir" compile "$m" -o "$work/$name" || continue
      contains "$name stderr" "$err" "unsupported: node 'y' "
      contains "$name stderr" "$err" "$(cat "$d/$name.expect")"
      continue
    fi
    mkdir -p "$work/$name"
    run 0 "$mtir" run "$m" --input "x=$d/$name.x.npy" --output-dir "$work/$name" --target host || continue
    contains "$name: host C vs interpreter" "$out" "y: max abs diff 0, max rel diff 0  ok"
    tolerance=""
    [ -f "$d/$name.tolerance" ] && tolerance="$(cat "$d/$name.tolerance")"
    checks=$((checks + 1))
    python3 "$src/tests/onnx/same_npy.py" "$work/$name/y.npy" "$d/$name.y.npy" $tolerance ||
      fail "$name: the output differs from numpy's"
  done
  [ "$n" -ge 9 ] || fail "only $n models found"
  # The LLVM backend (host) and wasm32 (node) give the interpreter's bits too.
  for name in float64_math int64_arithmetic conv3d_pads_strides convtranspose_3d_groups; do
    run 0 "$mtir" run "$d/$name.onnx" --input "x=$d/$name.x.npy" --target host --backend llvm || continue
    contains "$name: LLVM vs interpreter" "$out" "y: max abs diff 0, max rel diff 0  ok"
    case "$name" in conv*) continue ;; esac  # float32 kernels: the unit tests run them as wasm
    run 0 "$mtir" compile "$d/$name.onnx" -o "$work/$name.tar" || continue
    run 0 "$mtir" run "$work/$name.tar" --input "x=$d/$name.x.npy" --target wasm32 || continue
    contains "$name: wasm32 vs interpreter" "$out" "y: max abs diff 0, max rel diff 0  ok"
  done
  # Generated C stays C99 with every warning an error, 8-byte types included.
  for name in float64_math int64_arithmetic conv3d_pads_strides; do
    run 0 "$mtir" compile "$d/$name.onnx" -o "$work/c_$name" || continue
    checks=$((checks + 1))
    ( cd "$work/c_$name" && cc -std=c99 -Wall -Wextra -Werror -pedantic -Iruntime/include -Icodegen/host/include \
        -c codegen/host/src/*.c ) >"$work/cc.log" 2>&1 || { fail "$name: the C does not compile as C99"; head -20 "$work/cc.log"; }
  done
}

# QDQ models (tests/onnx/make_qdq.py): the folded groups and the float ones give numpy's
# integers bit for bit, on the interpreter and as host C (run --target host compares
# the two), and the notes say which groups folded and which stayed float.
group_qdq() {
  local d="$src/tests/onnx/qdq" n=0 m name line
  for m in "$d"/*.onnx; do
    name="$(basename "${m%.onnx}")"
    n=$((n + 1))
    mkdir -p "$work/$name"
    run 0 "$mtir" run "$m" --input "x=$d/$name.x.npy" --output-dir "$work/$name" --target host --json || continue
    contains "$name stdout" "$out" '"ok": true'
    while IFS= read -r line; do
      [ -n "$line" ] && contains "$name stderr" "$err" "microtir: note: $line"
    done <"$d/$name.notes"
    [ -f "$d/$name.y.npy" ] || continue  # a float output: host C = interpreter is the check
    checks=$((checks + 1))
    python3 "$src/tests/onnx/same_npy.py" "$work/$name/y.npy" "$d/$name.y.npy" || fail "$name: the output differs from numpy's"
  done
  [ "$n" -ge 10 ] || fail "only $n QDQ and QOperator models found"
  # prepare_quantized lowers the folded (and the QOperator) qlinear_conv / qlinear_matmul
  # onto the fast qconv2d / qdense kernels: their C takes (data, weight, bias, requant),
  # the plain loops' C a params table.
  for name in chain_dscnn_block qoperator_conv_matmul; do
    run 0 "$mtir" compile "$d/$name.onnx" -o "$work/$name.tar" || continue
    mkdir -p "$work/$name.c" && tar xf "$work/$name.tar" -C "$work/$name.c"
    local c
    c="$(cat "$work/$name.c/codegen/host/src/lib0.c")"
    contains "$name C" "$c" "int8_t* restrict weight, int32_t* restrict bias, int32_t* restrict requant"
    case "$c" in *"restrict params"*) fail "$name: a plain qlinear loop is left" ;; esac
  done
  # The folded kernels are the integer ones: no float dequantize left in a folded chain.
  run 0 "$mtir" import "$d/chain_conv_pool_matmul.onnx"
  contains "import of the chain" "$out" '"op":"qlinear_conv"'
  contains "import of the chain" "$out" '"op":"qlinear_matmul"'
  case "$out" in *'"op":"dequantize_linear"'*) fail "the folded chain still dequantizes" ;; esac
  # A scale that is a run-time input is refused, naming it.
  if [ -d "$node_tests/test_quantizelinear" ]; then
    run 1 "$mtir" compile "$node_tests/test_quantizelinear/model.onnx" -o "$work/refused" || return
    contains "refusal" "$err" "unsupported: node 'y' (QuantizeLinear): input 'y_scale' must be a compile-time constant"
  fi
}

# The ONNX backend node tests against the committed floor (tests/conformance/floor.json).
group_conformance() {
  if [ ! -d "$node_tests" ]; then
    fail "no ONNX node tests at $node_tests (scripts/install-deps.sh installs libonnx-testdata)"
    return
  fi
  run 0 "$mtir" onnx-test "$node_tests" -j 2 --floor "$src/tests/conformance/floor.json"
  echo "$out" | tail -5
  contains "onnx-test stdout" "$out" "total"
}

"group_$group"
echo "$group: $checks checks, $failures failures"
[ "$failures" -eq 0 ]
