#!/usr/bin/env bash
# Installs dependencies, builds, and runs the test suite in four stages, each running
# the tests where it can find something (docs/contributing.md):
#   normal  build/         every test (unit, e2e, qemu, conformance)
#   asan    build-asan/    AddressSanitizer + UBSan at -Og on core/, sim/, crt/ and generated
#                          code; the test drivers compiled as in build/ (uninstrumented, so
#                          ccache serves the normal stage's objects): unit (with the fuzz replays and
#                          the pass cases) and host e2e tests; not qemu or conformance,
#                          where the code that runs is cross-compiled firmware the
#                          sanitizers do not instrument, nor label large (the big
#                          models, whose code paths the small ones take too); the unit
#                          tests' backend replays generate C and wasm there but do not
#                          compile or run them (the normal stage runs the same bytes);
#                          each kind of compiled artifact (digits, the MLPerf four, a zoo
#                          sample, the ONNX models, the TIR corpus) runs once as host C
#                          under the sanitizers (tests/CMakeLists.txt)
#   nollvm  build-nollvm/  without libLLVM (as on machines without llvm-14-dev and in the
#                          wasm core): proves the build and runs label `llvm`, the tests
#                          whose path changes (textual IR emitter, llc/clang fallback)
#   wasm    build-wasm/    the core in WebAssembly: node and browser tests
# usage: scripts/test.sh [--stage normal|asan|nollvm|wasm]... [ctest args...]
#   scripts/test.sh                   all four stages (what CI runs)
#   scripts/test.sh -L qemu           the normal build, tests labelled qemu only
#   scripts/test.sh --stage asan      one stage, with its own selection
set -euo pipefail
cd "$(dirname "$0")/.."

stages=()
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --stage) [ $# -ge 2 ] || { echo "test.sh: --stage needs a name (normal, asan, nollvm, wasm)" >&2; exit 1; }
             stages+=("$2"); shift 2 ;;
    --stage=*) stages+=("${1#--stage=}"); shift ;;
    *) ctest_args+=("$1"); shift ;;
  esac
done
if [ ${#stages[@]} -eq 0 ]; then
  if [ ${#ctest_args[@]} -gt 0 ]; then stages=(normal); else stages=(normal asan nollvm wasm); fi
fi
for s in "${stages[@]}"; do
  case "$s" in normal|asan|nollvm|wasm) ;; *) echo "test.sh: unknown stage '$s' (normal, asan, nollvm, wasm)" >&2; exit 1 ;; esac
done

bash scripts/install-deps.sh
jobs=$(nproc)
# Seconds since the start, so a CI log shows where the time goes.
stamp() { echo "== [$SECONDS s] $*"; }
# build/ and build-nollvm/ compile most files with the same flags: let ccache share them
# across build directories (with -g it hashes the working directory unless told not to)
# and across checkouts at other paths.
export CCACHE_NOHASHDIR=true CCACHE_BASEDIR="$PWD"

summary=()
# run_tests STAGE DIR [selection...]: the stage's tests, their count, the 20 slowest.
run_tests() {
  local stage="$1" dir="$2"
  shift 2
  local selection=("$@" ${ctest_args[@]+"${ctest_args[@]}"})
  local listed
  listed=$(cd "$dir" && ctest -N ${selection[@]+"${selection[@]}"} | sed -n 's/^Total Tests: //p')
  stamp "test $dir: $listed of $(cd "$dir" && ctest -N | sed -n 's/^Total Tests: //p') tests (${selection[*]:-all})"
  local start=$SECONDS rc=0
  (if [ -n "${stack_kb:-}" ]; then ulimit -s "$stack_kb"; fi
   cd "$dir" && ctest --output-on-failure -j "$jobs" --output-junit junit.xml ${selection[@]+"${selection[@]}"}) || rc=$?
  python3 scripts/slowest_tests.py "$dir/junit.xml" 20 || true
  summary+=("$(printf '%-7s build %5s s  test %5s s  %4s tests' "$stage" "$build_seconds" $((SECONDS - start)) "$listed")")
  [ "$rc" -eq 0 ] || { stamp "FAILED: $stage stage tests"; exit "$rc"; }
}

# build_stage DIR [cmake args...]: configure and build, timing it into build_seconds.
build_stage() {
  local dir="$1"
  shift
  stamp "build $dir"
  local start=$SECONDS
  bash scripts/build.sh "$dir" "$@"
  build_seconds=$((SECONDS - start))
}

for stage in "${stages[@]}"; do
  case "$stage" in
    normal)
      build_stage build
      run_tests normal build ;;
    asan)
      build_stage build-asan -DMICROTIR_SANITIZE=ON -DMICROTIR_BENCH=OFF -DMICROTIR_TARGET_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug
      # ASan's frames are about three times larger: the parser's nesting limit (1000
      # scoped statements, sized for 8 MB of normal frames) needs a larger stack there.
      # Not label docs (the pages' text against the CLI: paths the other tests take) nor
      # the 100,000-node graph (its point is that every step stays linear in the node
      # count, which the normal stage shows; under ASan it is the stage's slowest test).
      stack_kb=65536 run_tests asan build-asan -LE 'qemu|conformance|browser|large|docs' \
        -E '^ResourceLimits\.AGraphWithOneHundredThousandNodesBuilds$' ;;
    nollvm)
      build_stage build-nollvm -DMICROTIR_LLVM=OFF -DMICROTIR_BENCH=OFF
      run_tests nollvm build-nollvm -L llvm ;;
    wasm)
      # Node tests of the wasm module (compared byte for byte with build/'s CLI) and
      # browser tests in Chromium. Skipped only when emscripten itself is missing
      # (build-wasm.sh exits 3); install-deps.sh installs it.
      stamp "build build-wasm"
      start=$SECONDS
      wasm_rc=0
      bash scripts/build-wasm.sh build-wasm || wasm_rc=$?
      build_seconds=$((SECONDS - start))
      if [ "$wasm_rc" -eq 3 ]; then
        echo "== skipped build-wasm: emscripten is not installed"
      elif [ "$wasm_rc" -ne 0 ]; then
        exit "$wasm_rc"
      else
        run_tests wasm build-wasm
      fi ;;
  esac
done
stamp "all tests passed (${stages[*]})"
printf '%s\n' "${summary[@]}"
echo "total $SECONDS s"
