#!/usr/bin/env bash
# Builds the core as WebAssembly (Debian's emscripten) into build-wasm/ and bundles the
# playground into build-wasm/web/ (npm ci from web/package-lock.json).
# usage: scripts/build-wasm.sh [BUILD_DIR] [extra cmake args...]
# Exits 3 when emscripten is not installed (scripts/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build-wasm}"
shift || true
if ! command -v emcmake >/dev/null || ! command -v emcc >/dev/null; then
  echo "build-wasm: emscripten is not installed" >&2
  exit 3
fi
# Debian's emscripten runs node scripts that need Debian's node modules (acorn).
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"
# emcmake's default emulator passes --experimental-wasm-threads, which node 20 rejects.
# The native CLI the wasm outputs are compared with, byte for byte (scripts/test.sh
# builds it first); the comparison is skipped without it.
native_cli="${MICROTIR_NATIVE_CLI:-$PWD/build/core/cli/microtir}"
[ -x "$native_cli" ] || native_cli=""
emcmake cmake -S . -B "$dir" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DMICROTIR_LLVM=OFF -DMICROTIR_BENCH=OFF \
  -DCMAKE_CROSSCOMPILING_EMULATOR="$(command -v node)" \
  -Dnlohmann_json_DIR="$PWD/wasm/cmake" \
  -DMICROTIR_NATIVE_CLI="$native_cli" \
  "$@" >/dev/null
ninja -C "$dir" -j "${MICROTIR_JOBS:-$(nproc)}" microtir_wasm
if [ -f web/package.json ]; then
  (cd web && { [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund; } \
     && MICROTIR_WASM_DIR="$PWD/../$dir/wasm" MICROTIR_WEB_OUT="$PWD/../$dir/web" npm run --silent build)
fi
