#!/usr/bin/env bash
# Fuzzing (not part of CI's time): builds the libFuzzer targets with clang, ASan and
# UBSan in build-fuzz/, runs each for SECONDS (default 60) from its seed corpus, and
# prints executions, coverage and crashes per target. A crash input is copied to
# tests/fuzz/regressions/<target>/, which every test build replays from then on.
# usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (targets: tir_text graph_json target_string)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(tir_text graph_json target_string)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DMICROTIR_FUZZ=ON -DMICROTIR_SANITIZE=ON \
  -DMICROTIR_BENCH=OFF -DMICROTIR_LLVM=OFF -DMICROTIR_ONNX=OFF >/dev/null
ninja -C build-fuzz $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null
declare -A seeds=(
  [tir_text]="tests/programs tests/script/malformed tests/call_tir examples"
  [graph_json]="tests/graphs models/digits"
  [target_string]="tests/fuzz/seeds/target_string"
)
printf '%-15s %12s %10s %8s\n' target executions coverage crashes
for t in "${targets[@]}"; do
  work="build-fuzz/corpus-$t"
  mkdir -p "$work" "build-fuzz/crashes-$t"
  for s in ${seeds[$t]}; do find "$s" -type f \( -name '*.tir' -o -name '*.json' -o -name '*.txt' \) -exec cp {} "$work/" \; ; done
  log="build-fuzz/fuzz-$t.log"
  echo "fuzzing $t for ${seconds}s (log: $log)" >&2
  "build-fuzz/tests/fuzz/fuzz_$t" "$work" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes-$t/" -max_len=65536 >"$log" 2>&1 || true
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  crashes=$(find "build-fuzz/crashes-$t" -type f | wc -l)
  printf '%-15s %12s %10s %8s\n' "$t" "$execs" "$cov" "$crashes"
  if [ "$crashes" -gt 0 ]; then
    mkdir -p "tests/fuzz/regressions/$t"
    cp build-fuzz/crashes-"$t"/* "tests/fuzz/regressions/$t/"
  fi
done
