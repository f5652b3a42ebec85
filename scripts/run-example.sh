#!/usr/bin/env bash
# The main job: install, build, then compile the bundled digits CNN (models/digits) for
# the C runtime, run it in the host simulator on a sample image, compare it with the
# reference interpreter, and print the prediction and the memory report. Then the same
# for a plain TIR program (examples/matmul.tir), with both calling conventions. Last,
# the compiled digits artifact on a Cortex-M4 under QEMU, with its flash/RAM/instructions.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja >/dev/null
ninja -C build microtir
mtir=build/core/cli/microtir
echo "== microtir run models/digits/digits.json --input x=models/digits/sample_x.npy --target host"
echo "   (a handwritten 5; the largest of the ten probabilities is the prediction)"
$mtir run models/digits/digits.json --input x=models/digits/sample_x.npy --target host
inputs=(--input A=examples/matmul_A.npy --input B=examples/matmul_B.npy)
echo "== microtir run examples/matmul.tir --target host (packed API)"
$mtir run examples/matmul.tir --func matmul "${inputs[@]}" --target host --output-dir build/example-out
echo "== microtir run examples/matmul.tir --target host --unpacked-api 1"
$mtir run examples/matmul.tir --func matmul "${inputs[@]}" --target host --unpacked-api 1
echo "== microtir build examples/matmul.tir -o build/example-artifact"
$mtir build examples/matmul.tir --target c -o build/example-artifact
echo "== microtir compile models/digits/digits.json --target \"c -mcpu=cortex-m4\" -o build/digits.tar"
$mtir compile models/digits/digits.json --target "c -mcpu=cortex-m4" -o build/digits.tar > /dev/null
echo "== microtir run build/digits.tar --input x=models/digits/sample_x.npy --target cortex-m4   (QEMU mps2-an386)"
$mtir run build/digits.tar --input x=models/digits/sample_x.npy --target cortex-m4
