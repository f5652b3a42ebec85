#!/usr/bin/env bash
# QDQ ONNX models folded to integer kernels and a QOperator model (tests/onnx/qdq, made by
# make_qdq.py) on Cortex-M4 under QEMU, the convolutions and matmuls on the fast qconv2d /
# qdense kernels with their DSP schedules (smlad, sxtb16): the run must agree with the interpreter (run compares them) and
# give numpy's integers bit for bit.
set -euo pipefail
cli="$1"
src="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
d="$src/tests/onnx/qdq"
for name in chain_conv_pool_matmul conv_relu_per_channel dense_per_channel add_avgpool chain_dscnn_block \
  qoperator_conv_matmul; do
  # Run from the model, so it compiles for cortex-m4 (a .tar made by `compile` with the
  # default target would carry the generic schedules, without smlad and sxtb16).
  "$cli" run "$d/$name.onnx" --input x="$d/$name.x.npy" --target cortex-m4 --output-dir "$work/$name" --json \
    > "$work/$name.json" 2> "$work/$name.err" || fail "$name on cortex-m4: $(cat "$work/$name.err")"
  grep -q '"ok": true' "$work/$name.json" || fail "$name: cortex-m4 and the interpreter disagree"
  python3 "$src/tests/onnx/same_npy.py" "$work/$name/y.npy" "$d/$name.y.npy" || fail "$name: not numpy's integers"
  echo "$name: cortex-m4 = interpreter = numpy"
done
