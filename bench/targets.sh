#!/usr/bin/env bash
# Benchmark (not a test): the bundled digits model compiled once and run on every
# target; prints flash, RAM and exact instructions per inference in one table.
# Usage: bash bench/targets.sh [BUILD_DIR]   (default: build; needs its microtir binary)
set -euo pipefail
cd "$(dirname "$0")/.."
cli="${1:-build}/core/cli/microtir"
[ -x "$cli" ] || { echo "bench/targets.sh: no $cli; build first (bash scripts/build.sh build)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$cli" compile models/digits/digits.json -o "$work/digits.tar" > /dev/null
for t in host cortex-m3 cortex-m4 cortex-m7 riscv32 wasm32; do
  "$cli" run "$work/digits.tar" --input x=models/digits/sample_x.npy --target "$t" --json --keep-build "$work/keep-$t" \
    > "$work/$t.json" 2> "$work/$t.err" || { echo "$t failed: $(tail -1 "$work/$t.err")" >&2; exit 1; }
done

# The CRT runtime's own share of the Cortex-M4 firmware: the linked sizes of the
# functions and objects defined in crt/src (after --gc-sections).
for f in crt/src/*.c; do
  arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -std=c99 -O2 -Icrt/include \
    -I"$work/keep-cortex-m4/artifact/runtime/include" -c "$f" -o "$work/crt.o"
  arm-none-eabi-nm --defined-only "$work/crt.o" >> "$work/crt.nm"
done
arm-none-eabi-nm -S "$work/keep-cortex-m4/build-cortex-m4/firmware.elf" > "$work/firmware.nm"

python3 - "$work" <<'PY'
import ast, json, sys

def npy_shape(path):
    head = open(path, "rb").read(256)
    start = head.index(b"{")
    return tuple(ast.literal_eval(head[start:head.index(b"}") + 1].decode())["shape"])

def digits_macs():
    # Multiply-accumulates of the conv2d (NCHW) and dense layers, by shape propagation.
    g = json.load(open("models/digits/digits.json"))
    shapes = {i["name"]: tuple(i["shape"]) for i in g["inputs"]}
    for c in g["constants"]:
        shapes[c["name"]] = npy_shape("models/digits/" + c["file"])
    macs = 0
    for n in g["nodes"]:
        a, ins = n.get("attrs") or {}, [shapes[i] for i in n["inputs"]]
        if n["op"] in ("conv2d", "max_pool2d"):
            N, C, H, W = ins[0]
            kh, kw = ins[1][2:] if n["op"] == "conv2d" else a["pool_size"]
            (sh, sw), (pt, pl, pb, pr) = a.get("strides", [1, 1]), a.get("padding", [0, 0, 0, 0])
            Ho, Wo = (H + pt + pb - kh) // sh + 1, (W + pl + pr - kw) // sw + 1
            O = ins[1][0] if n["op"] == "conv2d" else C
            shapes[n["name"]] = (N, O, Ho, Wo)
            if n["op"] == "conv2d":
                macs += N * O * Ho * Wo * ins[1][1] * kh * kw
        elif n["op"] == "flatten":
            s = ins[0]
            shapes[n["name"]] = (s[0], s[1] * s[2] * s[3])
        elif n["op"] == "dense":
            shapes[n["name"]] = (ins[0][0], ins[1][0])
            macs += ins[0][0] * ins[1][0] * ins[1][1]
        else:
            shapes[n["name"]] = ins[0]
    return macs

rows = []
for t in ["host", "cortex-m3", "cortex-m4", "cortex-m7", "riscv32", "wasm32"]:
    r = json.load(open(f"{sys.argv[1]}/{t}.json"))
    rep = r["report"]
    n = lambda v: "n/a" if v is None else f"{v:,}"
    rows.append([t, n(rep["flash_bytes"] - rep["test_input_bytes"]), n(rep["ram_bytes"]), n(rep["workspace_bytes"]),
                 n(rep["stack_bytes"]), n(rep["instructions"]), "yes" if r["ok"] else "NO"])
head = ["target", "flash (B)", "static RAM (B)", "workspace (B)", "stack (B)", "instructions", "= interp"]
print("digits CNN, float32, -O2; flash without the 256-byte test input; RAM without the stack")
w = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
for row in [head] + rows:
    print("  ".join(str(c).rjust(w[i]) if i else str(c).ljust(w[i]) for i, c in enumerate(row)))
macs = digits_macs()
m4 = json.load(open(f"{sys.argv[1]}/cortex-m4.json"))["report"]["instructions"]
print(f"cortex-m4: {m4 / macs:.2f} instructions per MAC ({macs:,} MACs in conv2d and dense)")
crt = {l.split()[2] for l in open(f"{sys.argv[1]}/crt.nm") if len(l.split()) == 3 and l.split()[1] in "TtRrDd"}
crt_bytes = sum(int(f[1], 16) for f in (l.split() for l in open(f"{sys.argv[1]}/firmware.nm"))
                if len(f) == 4 and f[3] in crt and f[2] in "TtRr")
print(f"CRT runtime in the cortex-m4 firmware: {crt_bytes:,} bytes of flash (code and constants from crt/src; goal under 2 KB)")
PY
