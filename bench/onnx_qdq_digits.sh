#!/usr/bin/env bash
# Benchmark (not a test): the bundled digits model as float ONNX (models/digits/digits.onnx)
# against its QDQ quantization (models/digits/digits_qdq.onnx, tools/quantize_digits_qdq.py),
# and the MLPerf Tiny keyword-spotting DS-CNN shape as float and QDQ ONNX
# (tools/make_qdq_dscnn.py, random weights, 2,656,768 MACs), all measured in this one run:
# - on Cortex-M4 (QEMU mps2-an386, exact instruction counts around one inference,
#   MEASURING.md): instructions, instructions per MAC (23,680 MACs: conv1 8x1x9x64,
#   conv2 16x8x9x16, fc 10x64), RAM (workspace + I/O + stack) and flash;
# - digits: accuracy on the 100 held-out test images (models/digits/test_images.npy), each
#   run through the reference interpreter; DS-CNN: the largest difference of the two
#   models' output probabilities on one input.
# Usage: bash bench/onnx_qdq_digits.sh [BUILD_DIR]   (default: build). Prints Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cli="$build/core/cli/microtir"
[ -x "$cli" ] || { echo "bench/onnx_qdq_digits.sh: no $cli; build first (bash scripts/build.sh build)" >&2; exit 1; }
py=/usr/bin/python3  # Debian's, with numpy
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
d=models/digits
MACS=23680

$py - "$d/test_images.npy" "$work" <<'PY'
import sys
import numpy as np
x = np.load(sys.argv[1])
for i in range(len(x)):
    np.save("%s/img%03d.npy" % (sys.argv[2], i), x[i:i + 1])
PY

echo "| model | instructions | instr/MAC | RAM bytes | flash bytes | workspace bytes | accuracy (100 test images) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for model in digits digits_qdq; do
  # From the model, so it compiles for cortex-m4 with the DSP schedules (smlad, sxtb16).
  "$cli" run "$d/$model.onnx" --input x="$d/sample_x.npy" --target cortex-m4 --json > "$work/$model.json" 2> /dev/null
  correct=0
  labels=($($py -c "import numpy as np; print(' '.join(str(v) for v in np.load('$d/test_labels.npy')))"))
  for i in $(seq 0 99); do
    img=$(printf "%s/img%03d.npy" "$work" "$i")
    pred=$("$cli" run "$d/$model.onnx" --input x="$img" --json 2> /dev/null |
      $py -c "import json, sys; v = json.load(sys.stdin)['outputs'][0]['values']; print(max(range(10), key=lambda k: v[k]))")
    [ "$pred" = "${labels[$i]}" ] && correct=$((correct + 1))
  done
  $py - "$work/$model.json" "$model" "$MACS" "$correct" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["report"]
macs = int(sys.argv[3])
print("| %s | %d | %.1f | %d | %d | %d | %d %% |" % (sys.argv[2], r["instructions"], r["instructions"] / macs,
      r["ram_bytes"], r["flash_bytes"], r["workspace_bytes"], int(sys.argv[4])))
PY
done

echo
$py tools/make_qdq_dscnn.py "$work/ds"
echo "| model | instructions | instr/MAC | RAM bytes | flash bytes | workspace bytes | max output difference |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for model in ds_cnn_float ds_cnn_qdq; do
  "$cli" run "$work/ds/$model.onnx" --input x="$work/ds/input.npy" --target cortex-m4 --json --output-dir "$work/$model.out" \
    > "$work/$model.json" 2> /dev/null
done
for model in ds_cnn_float ds_cnn_qdq; do
  $py - "$work" "$model" <<'PY'
import json, sys
import numpy as np
work, model = sys.argv[1], sys.argv[2]
r = json.load(open("%s/%s.json" % (work, model)))["report"]
diff = np.abs(np.load(work + "/ds_cnn_float.out/y.npy") - np.load(work + "/ds_cnn_qdq.out/y.npy")).max()
print("| %s | %d | %.2f | %d | %d | %d | %s |" % (model, r["instructions"], r["instructions"] / 2656768, r["ram_bytes"],
      r["flash_bytes"], r["workspace_bytes"], "%.4f" % diff if model.endswith("qdq") else "(reference)"))
PY
done
