#!/usr/bin/env bash
# The Python package microtir from a fresh Debian 12 machine: installs the packages
# (scripts/install-deps.sh), builds the package into build/python and uses it with
# Debian's python3 (docs/python.md). Afterwards, in your own scripts or notebooks:
#   PYTHONPATH=$PWD/build/python /usr/bin/python3 -c "import microtir"
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja >/dev/null
ninja -C build microtir_python
echo "== PYTHONPATH=build/python /usr/bin/python3: load, compile and run the digits model on the host"
PYTHONPATH=build/python /usr/bin/python3 - <<'PY'
import numpy as np
import microtir

model = microtir.load("models/digits/digits.json")
print(model)
artifact = microtir.compile(model)
run = artifact.run({"x": np.load("models/digits/sample_x.npy")}, target="host")
print("probabilities:", np.round(run.outputs["probs"], 3))
print("prediction:", int(np.argmax(run.outputs["probs"])))
print(run.report)
PY
