#!/usr/bin/env bash
# The main job: install, build, then interpret the bundled example program (a float32
# matmul), and build its C artifact, run it on the host and compare with the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja >/dev/null
ninja -C build microtir
mtir=build/core/cli/microtir
inputs=(--input A=examples/matmul_A.npy --input B=examples/matmul_B.npy)
echo "== microtir run examples/matmul.tir (reference interpreter)"
$mtir run examples/matmul.tir --func matmul "${inputs[@]}" --output-dir build/example-out
echo "== wrote build/example-out/C.npy"
echo "== microtir run examples/matmul.tir --target host (C artifact, packed API)"
$mtir run examples/matmul.tir --func matmul "${inputs[@]}" --target host
echo "== microtir run examples/matmul.tir --target host --unpacked-api 1"
$mtir run examples/matmul.tir --func matmul "${inputs[@]}" --target host --unpacked-api 1
echo "== microtir build examples/matmul.tir -o build/example-artifact"
$mtir build examples/matmul.tir --target c -o build/example-artifact
