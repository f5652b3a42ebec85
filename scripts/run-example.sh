#!/usr/bin/env bash
# The main job: install, build, then parse, check and interpret the bundled example
# program (a float32 matmul) and print its output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja >/dev/null
ninja -C build microtir
mtir=build/core/cli/microtir
echo "== microtir parse examples/matmul.tir"
$mtir parse examples/matmul.tir
echo "== microtir run examples/matmul.tir"
$mtir run examples/matmul.tir --func matmul \
  --input A=examples/matmul_A.npy --input B=examples/matmul_B.npy --output-dir build/example-out
echo "== wrote build/example-out/C.npy"
