#!/usr/bin/env bash
# float64 and int64 arithmetic and 3-D (transposed) convolutions (tests/onnx/dtypes_3d,
# made by make_dtypes_3d.py) on Cortex-M4 under QEMU, where double and 64-bit integer
# operations are the compiler's soft routines: the run must equal the interpreter bit for
# bit and match numpy's output (bit for bit, or within the model's .tolerance).
set -euo pipefail
cli="$1"
src="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
d="$src/tests/onnx/dtypes_3d"
for name in float64_arithmetic float64_math int64_arithmetic int64_div_truncates conv3d_pads_strides \
  convtranspose_3d_groups; do
  "$cli" compile "$d/$name.onnx" -o "$work/$name.tar" > /dev/null 2>&1 || fail "$name does not compile"
  "$cli" run "$work/$name.tar" --input x="$d/$name.x.npy" --target cortex-m4 --output-dir "$work/$name" \
    > "$work/$name.out" 2> "$work/$name.err" || fail "$name on cortex-m4: $(cat "$work/$name.err")"
  grep -q "y: max abs diff 0, max rel diff 0  ok" "$work/$name.out" ||
    fail "$name: cortex-m4 and the interpreter differ: $(cat "$work/$name.out")"
  tolerance=""
  [ -f "$d/$name.tolerance" ] && tolerance="$(cat "$d/$name.tolerance")"
  # shellcheck disable=SC2086  # the tolerance is two arguments
  python3 "$src/tests/onnx/same_npy.py" "$work/$name/y.npy" "$d/$name.y.npy" $tolerance || fail "$name: not numpy's output"
  echo "$name: cortex-m4 = interpreter = numpy"
done
