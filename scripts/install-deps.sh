#!/usr/bin/env bash
# Installs the Debian packages microtir needs, and nothing else. Idempotent: packages
# already installed are skipped, so a second run does no network work.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ clang ccache    # build (clang: the second compiler generated C must satisfy)
  lld                                   # links the test binaries several times faster than GNU ld
  nlohmann-json3-dev libcli11-dev       # JSON, command line
  libdlpack-dev                         # DLTensor for the C runtime
  libgtest-dev libgmock-dev             # tests
  libbenchmark-dev                      # benchmarks
  python3 python3-numpy                 # test helpers (numpy: the references of the TFLite operator tests)
  llvm-14-dev llvm-14                   # LLVM backend: libLLVM for verification and objects, llc-14 as fallback
  gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm      # Cortex-M targets (QEMU MPS2 boards)
  gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc  # riscv32 target (QEMU virt)
  wasi-libc libclang-rt-14-dev-wasm32   # wasm32 target (clang-14, run under node)
  emscripten binaryen                   # the core as WebAssembly for the playground (wasm-opt from binaryen)
  libonnx-dev libprotobuf-dev           # the ONNX frontend (libonnx's generated protobuf classes)
  libonnx-testdata                      # the ONNX backend node tests (conformance)
  libflatbuffers-dev flatbuffers-compiler  # the TFLite frontend (header-only reader, flatc at build time)
  python3-onnx                          # builds the test ONNX models (tests/onnx/*.py)
  python3-dev pybind11-dev              # the Python package microtir (python/: a pybind11 extension)
  python3-pytest python3-matplotlib     # its tests, and report.plot() (docs/python.md)
  python3-distributed                   # `microtir tune` measures on a dask.distributed cluster (docs/schedule-records.md)
)
# Installed without their recommended packages (chromium's pull in a desktop).
LEAN_PACKAGES=(
  chromium                              # browser tests of the playground (headless, driven by playwright-core)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
missing_lean=()
for p in "${LEAN_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing_lean+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ] && [ ${#missing_lean[@]} -eq 0 ]; then
  echo "install-deps: all $(( ${#PACKAGES[@]} + ${#LEAN_PACKAGES[@]} )) packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]} ${missing_lean[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
if [ ${#missing[@]} -gt 0 ]; then $SUDO apt-get install -y -q "${missing[@]}"; fi
if [ ${#missing_lean[@]} -gt 0 ]; then $SUDO apt-get install -y -q --no-install-recommends "${missing_lean[@]}"; fi
