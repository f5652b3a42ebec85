#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite three times: a normal build,
# AddressSanitizer + UndefinedBehaviorSanitizer in a second build directory, and a build
# without libLLVM (MICROTIR_LLVM=OFF, as on machines without llvm-14-dev and in the wasm
# core), where the textual LLVM IR emitter must still work and the rest pass.
# Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
# Seconds since the start, so a CI log shows where the time goes.
stamp() { echo "== [$SECONDS s] $*"; }
# build/ and build-nollvm/ compile most files with the same flags: let ccache share them
# across build directories (with -g it hashes the working directory unless told not to)
# and across checkouts at other paths.
export CCACHE_NOHASHDIR=true CCACHE_BASEDIR="$PWD"

run_suite() {
  local dir="$1"
  shift
  stamp "build $dir"
  bash scripts/build.sh "$dir" "$@"
  stamp "test $dir"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" ${CTEST_ARGS[@]+"${CTEST_ARGS[@]}"})
}

CTEST_ARGS=("$@")
run_suite build
run_suite build-asan -DMICROTIR_SANITIZE=ON -DMICROTIR_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
run_suite build-nollvm -DMICROTIR_LLVM=OFF -DMICROTIR_BENCH=OFF
# The core in WebAssembly and the playground: node tests of the wasm module (compared
# byte for byte with build/'s CLI) and browser tests in Chromium. Skipped only when
# emscripten itself is missing (build-wasm.sh exits 3); install-deps.sh installs it.
stamp "build build-wasm"
wasm_rc=0
bash scripts/build-wasm.sh build-wasm || wasm_rc=$?
if [ "$wasm_rc" -eq 3 ]; then
  echo "== skipped build-wasm: emscripten is not installed"
elif [ "$wasm_rc" -ne 0 ]; then
  exit "$wasm_rc"
else
  stamp "test build-wasm"
  (cd build-wasm && ctest --output-on-failure -j "$jobs" ${CTEST_ARGS[@]+"${CTEST_ARGS[@]}"})
fi
stamp "all tests passed (normal, sanitizer, no-LLVM and wasm builds)"
