#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite twice: a normal build,
# then AddressSanitizer + UndefinedBehaviorSanitizer in a second build directory.
# Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)

run_suite() {
  local dir="$1"
  shift
  echo "== build $dir"
  bash scripts/build.sh "$dir" "$@"
  echo "== test $dir"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" ${CTEST_ARGS[@]+"${CTEST_ARGS[@]}"})
}

CTEST_ARGS=("$@")
run_suite build
run_suite build-asan -DMICROTIR_SANITIZE=ON -DMICROTIR_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
echo "== all tests passed (normal and sanitizer builds)"
