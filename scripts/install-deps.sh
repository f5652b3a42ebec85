#!/usr/bin/env bash
# Installs the Debian packages microtir needs, and nothing else. Idempotent: packages
# already installed are skipped, so a second run does no network work.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ clang ccache    # build (clang: the second compiler generated C must satisfy)
  nlohmann-json3-dev libcli11-dev       # JSON, command line
  libdlpack-dev                         # DLTensor for the C runtime
  libgtest-dev libgmock-dev             # tests
  libbenchmark-dev                      # benchmarks
  python3                               # test helpers
  libonnx-dev libprotobuf-dev           # the ONNX frontend (libonnx's generated protobuf classes)
  libonnx-testdata                      # the ONNX backend node tests (conformance)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q "${missing[@]}"
