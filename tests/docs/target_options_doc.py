#!/usr/bin/env python3
"""docs/target-options.md is generated from the target parser itself, so it cannot drift:
the keys are the list the parser prints for an unknown option, the defaults are the
canonical target strings `build --json` and `compile --json` print, the LLVM triples
are the list the backend prints for an unknown one, and every refusal below is run
and its exact message copied into the page (where the snippet runner checks it again).
A key the parser accepts without a description here fails the generation. `--write`
regenerates the page; without it the file is checked and a stale file fails with the
command to run.

usage: target_options_doc.py MICROTIR_BINARY SOURCE_DIR [--write]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import generated_page

TIR = '"$MICROTIR_SRC/examples/matmul.tir"'
MODEL = '"$MICROTIR_SRC/models/digits/digits.json"'

# What each key does and the values it takes; the keys themselves come from the parser.
KEYS = {
    "runtime": ("`c`", "The runtime the artifact is built for: microtir's C runtime (`crt/`). TVM's `cpp` is refused."),
    "executor": ("`aot`", "How the model's operators are called: an ahead-of-time main function. TVM's `graph` is refused."),
    "interface-api": ("`c`, `packed`",
                      "The interface the application calls: `c` is `tvmgen_<model>_run()` with structs of pointers, "
                      "`packed` is the model's main in the function registry, called with `TVMFuncCall` and DLTensors "
                      "(with linked weights, the registry's `tvmgen_<model>_run` takes only the inputs and outputs; "
                      "[runtime-api.md](runtime-api.md))."),
    "unpacked-api": ("`0`, `1` (`false`, `true`)",
                     "The calling convention of the kernels: `0` packed (`TVMValue` arguments, every argument checked), "
                     "`1` unpacked (a plain C function per kernel taking data pointers). Chooses `make_packed_api` or "
                     "`make_unpacked_api` in the pass pipeline ([passes.md](passes.md))."),
    "link-params": ("`0`, `1` (`false`, `true`)",
                    "`1` links the weights into the artifact as `const` arrays (flash); `0` makes them parameters the "
                    "application passes (`struct tvmgen_<model>_params`, or DLTensors with the packed interface)."),
    "workspace-byte-alignment": ("a power of two, 1 to 4096",
                                 "The alignment of every tensor's offset in the workspace pool (`plan_memory`)."),
    "mtriple": ("see [the triples](#llvm-triples)",
                "`llvm` only: the LLVM target triple of the IR and objects ([llvm-backend.md](llvm-backend.md))."),
    "mcpu": ("`llvm`: a CPU LLVM knows for the triple; `c`: any name, e.g. `cortex-m4`",
             "`llvm`: the CPU the objects are tuned for (with `MICROTIR_LLVM`, when objects are emitted). `c` and "
             "`llvm`: a CPU with the DSP extension (`cortex-m4`, `cortex-m7`, `cortex-m33`, `cortex-m55`) gets the "
             "int8 `smlad` and `sxtb16` schedules ([quantization.md](quantization.md))."),
    "opt": ("`O0`, `O1`, `O2`, `O3`, `Os`, `Oz`",
            "`wasm` only: Binaryen's optimization level for the module (`-Os`/`-Oz` trade speed for size)."),
    # Values and the int8 kernels' schedules come from the compiler's own list (ops/schedules.cc),
    # read from its message for an unknown schedule: see disabled_schedules_row().
    "disabled-schedules": None,
    "reuse-io-buffers": ("`0`, `1` (`false`, `true`)",
                         "`plan_memory` always places intermediate tensors in the model's output buffers before "
                         "their producers write them (the caller reads an output only after `run()` returns), "
                         "largest first, and the rest in the workspace pool. `1` also lets it use the input "
                         "buffers after their last readers: a smaller pool, as TVM's USMP gets by allocating the "
                         "I/O tensors in its pools. `run()` then "
                         "overwrites its input buffer, which is why it is an option. The memory report says how "
                         "many bytes moved (`microtir run --reuse-io-buffers`). Spelled in the canonical target "
                         "string only when `1`."),
    "workspace-budget": ("a number of bytes, 1 or more",
                         "A model's workspace pool need only fit this many bytes. The AOT executor's band planner "
                         "(`patch`, [passes.md](passes.md)) first finds the lowest bound of the intermediates it "
                         "reaches, then gives each band stage its cheapest choice (the fewest recomputed MACs, then "
                         "the fewest bands; running whole is cheapest) that keeps the bound within the budget "
                         "instead of within that lowest bound: fewer bands, fewer instructions, more bytes. A budget "
                         "below the lowest bound is refused with that bound; `plan_memory` refuses a pool over the "
                         "budget. The memory report (`microtir run`, `--workspace-budget`; `run --json`: "
                         "`report.patch_plan`) shows each stage's choice beside the lowest bound's. Unset, the "
                         "stages keep the lowest bound. Spelled in the canonical target string only when given."),
    "profile-hooks": ("`0`, `1` (`false`, `true`)",
                      "`llvm` only: `1` brackets each operator call of the AOT main with calls of "
                      "`void mtir_profile_begin(int32_t index, const char* kernel)` and "
                      "`void mtir_profile_end(int32_t index)`, which the application defines, as the C backend's "
                      "`TVMGEN_PROFILE_BEGIN`/`_END` macros do (those are always there and cost nothing unless "
                      "defined, so `c` refuses the key). `microtir run --backend llvm --profile-layers` compiles "
                      "with it ([targets.md](targets.md)). Spelled in the canonical target string only when `1`."),
}

# (command, why it is refused). The message shown is whatever the command prints.
REFUSALS = [
    (f'microtir build {TIR} --target "" -o out', "An empty target string names no backend."),
    (f'microtir build {TIR} --target "cpp" -o out',
     "The kinds are `c` (C99 source), `llvm` (LLVM IR) and `wasm` (a WebAssembly module through Binaryen)."),
    (f'microtir build {TIR} --target "c -runtime=cpp" -o out',
     "TVM's C++ runtime (graph executor, dynamic modules) needs an operating system; microtir builds for the C runtime only."),
    (f'microtir build {TIR} --target "c -executor=graph" -o out',
     "The graph executor interprets a JSON graph at run time and allocates as it goes; microtir compiles the graph ahead of time into static code and memory."),
    (f'microtir build {TIR} --target "c -interface-api=cmsis" -o out', "An interface that does not exist."),
    (f'microtir build {TIR} --target "c -unpacked-api=yes" -o out', "Flags take `0`/`1` (or `false`/`true`), nothing else."),
    (f'microtir build {TIR} --target "c -link-params=2" -o out', "As above."),
    (f'microtir build {TIR} --target "c -workspace-byte-alignment=12" -o out',
     "Offsets are rounded up with a mask, which only works for powers of two."),
    (f'microtir build {TIR} --target "c unpacked-api=1" -o out', "Every option is `-key=value` (or `--key=value`)."),
    (f'microtir build {TIR} --target "c -unpacked-ap=1" -o out',
     "An unknown key, with the closest known one and the whole list: a typo never passes silently."),
    (f'microtir build {TIR} --target "c -mtriple=thumbv7em-none-eabihf" -o out',
     "A triple means nothing to the C backend: the C compiler you build the artifact with chooses the machine."),
    (f'microtir build {TIR} --target "llvm -mtriple=x86_64-pc-windows" -o out',
     "The LLVM backend knows the data layout and calling conventions of these triples only."),
    (f'microtir compile {MODEL} --target "c -workspace-budget=1000" -o out',
     "No plan of the model's intermediates fits 1,000 bytes: the message names the lowest bound the band planner "
     "reaches (or, without band stages, the pool `plan_memory` placed)."),
    (f'microtir build {TIR} --target "c -profile-hooks=1" -o out',
     "The C backend's AOT main always has its profiling macros, defined away unless the application defines them."),
    (f'microtir build {TIR} --target "c -interface-api=c -unpacked-api=0" -o out',
     "As in TVM: with the C runtime, the C interface passes plain pointers to the model's main, so the kernels must "
     "use the unpacked calling convention too."),
    (f'microtir build "$MICROTIR_SRC/tests/programs/call_packed.tir" --target "c -unpacked-api=1" -o out',
     "The unpacked convention passes each buffer as a bare data pointer, so it is refused for a function that "
     "needs more than that: one that calls another with `T.tvm_call_packed`, or one that reads a buffer's shape at "
     "run time (`T.match_buffer` with a symbolic shape; pass the size as a scalar parameter instead). The message "
     "names the function and the pass."),
    (f'microtir compile {MODEL} --target "wasm -link-params=0" -o out',
     "A wasm module's `run` export takes plain pointers to the inputs and outputs and the module holds the weights "
     "in data segments, so the wasm target fixes `-interface-api=c -unpacked-api=1 -link-params=1`."),
    (f'microtir build {TIR} --target "c -opt=O2" -o out',
     "The C compiler you build a C artifact with has its own `-O` level; `-opt` is Binaryen's, for `wasm` only."),
    (f'microtir compile {MODEL} --device npu0=conv2d --target "c -interface-api=packed -link-params=0" -o out',
     "A device kernel receives its context (the resource handle) from the `devices` struct of the C interface, "
     "which only `-interface-api=c -unpacked-api=1` has ([devices.md](devices.md))."),
]


# What each schedule that is not an int8 kernel's does; every other name the compiler lists
# (ops/schedules.cc) is one of the int8 kernels', named in one sentence. A name here that the
# compiler does not list fails the generation.
MODEL_SCHEDULES = {
    "hoist": "the `hoist_loop_invariants` pass of the lowering ([passes.md](passes.md)), which computes "
             "loop-invariant address arithmetic once before each loop",
    "merge_kernels": "the pass of the same name (with `-unpacked-api=1`), which makes kernels that differ only in "
                     "integer constants one function taking them as parameters (less flash, a few more instructions; "
                     "off on `wasm`, where Binaryen merges identical functions and the playground times each layer's "
                     "own function)",
    "patch": "the AOT executor's patch-based inference ([passes.md](passes.md)): a chain of int8 NHWC convolutions "
             "runs band by band over its output rows, recomputing each band's halo, where that lowers the memory bound",
    "patch_overlap": "with `patch`, its stages of one layer too, each stage's output written a few rows beside the "
                     "input that dies in it",
    "patch_residual": "with `patch_overlap`, stages ending in the convolution that a residual add fuses into, "
                      "the add on the band's rows written over the residual in place and the earlier layers' halo "
                      "rows carried from band to band instead of recomputed",
    "patch_carry": "with `patch_overlap`, a stage of several layers without a residual add may carry its earlier "
                   "layers' halo rows from band to band (copied to the top of the band buffer, the stage run top "
                   "down) instead of recomputing them, where the bound allows",
    "patch_edge_rows": "with `patch_overlap`, a stage of one layer cut again so that its border rows (windows "
                       "reaching into the padding) are bands of their own and its interior runs in equal bands: "
                       "one interior kernel instead of a copy of its row code in each edge band; in a stage of more "
                       "layers, a later layer's padding rows as zero-point rows of its band buffer where the middle "
                       "bands' kernel then serves the edge band",
    "band_loops": "with `patch`, a patch stage's interior bands (runs of at least three that call the same kernels "
                  "on rows moving by the same count from band to band) as one loop in the AOT main, the regions' "
                  "starts affine in the band, instead of one call each with its own constant pointers; "
                  "`plan_memory` and the call checks read the loop as the calls it makes",
    "dsp_no_early_scheduling": "the C backend's `#pragma GCC optimize(\"no-schedule-insns\")` in a file with SMLAD "
                               "kernels, for GCC on a DSP core without MVE, and the LLVM backend's objects for such "
                               "a core compiled without LLVM's machine scheduler: scheduled before register "
                               "allocation, the register tiles spill ([quantization.md](quantization.md))",
    "pixel_triples_stack": "with `pixel_triples`, `prepare_quantized`'s rule that a convolution keeps the 3x2 tile "
                           "only where the instructions it saves pay for the bytes its three-pixel im2col scratch "
                           "adds to the model's deepest stack frame ([quantization.md](quantization.md))",
    "pixel_triples_code": "with `pixel_triples`, the same rule for the code the 3x2 tile adds",
}
KERNEL_SCHEDULE_NOTES = {"mve": " (Helium, on only for `cortex-m55`)"}


def disabled_schedules_row(schedules):
    """The -disabled-schedules row (values, what) from the compiler's list of schedules."""
    unknown = [n for n in list(MODEL_SCHEDULES) + list(KERNEL_SCHEDULE_NOTES) if n not in schedules]
    if unknown:
        raise SystemExit(f"target_options_doc.py: the compiler lists no schedule {unknown}")
    kernels = [f"`{n}`" + KERNEL_SCHEDULE_NOTES.get(n, "") for n in schedules if n not in MODEL_SCHEDULES]
    model = [f"`{n}`, {MODEL_SCHEDULES[n]}" for n in schedules if n in MODEL_SCHEDULES]
    values = "names from " + ", ".join(f"`{n}`" for n in schedules) + ", comma-separated"
    what = ("Schedules switched off, to measure what each gains ([quantization.md](quantization.md)): the int8 "
            "kernels' " + ", ".join(kernels[:-1]) + " and " + kernels[-1] + "; " + "; ".join(model[:-1]) +
            "; and " + model[-1] + ". Spelled in the canonical target string only when not empty.")
    return values, what


def run(binary, src, command, work):
    env = dict(os.environ, MICROTIR_SRC=os.path.abspath(src))
    env["PATH"] = os.path.dirname(os.path.abspath(binary)) + os.pathsep + env.get("PATH", "")
    return subprocess.run(["bash", "-c", command], cwd=work, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)


def error_line(p, command):
    lines = [l for l in p.stderr.decode().splitlines() if "error:" in l]
    if p.returncode != 1 or not lines:
        raise SystemExit(f"`{command}` was expected to be refused (exit 1), got exit {p.returncode}:\n"
                         f"{p.stderr.decode()}")
    line = lines[0]
    # A located error starts with the file's absolute path, which differs from machine to machine.
    return line[line.index("error:"):] if "/" in line[:line.index("error:")] else line


def canonical(binary, src, command, work):
    p = run(binary, src, command + " --json", work)
    if p.returncode != 0:
        raise SystemExit(f"`{command}` failed:\n{p.stderr.decode()}")
    result = json.loads(p.stdout)
    return result.get("metadata", result)["target"]  # compile nests it in the metadata


def options_of(target):
    return dict(w[1:].split("=", 1) for w in target.split()[1:])


def generate(binary, src):
    with tempfile.TemporaryDirectory(prefix="microtir-target-doc-") as work:
        unknown = error_line(run(binary, src, f'microtir build {TIR} --target "c -no-such-key=1" -o out', work), "")
        keys = [k[1:] for k in re.search(r"\(known: (.*)\)", unknown).group(1).split()]
        unknown_schedule = error_line(
            run(binary, src, f'microtir build {TIR} --target "c -disabled-schedules=no_such_schedule" -o out', work), "")
        schedules = re.search(r"\(known: (.*)\)", unknown_schedule).group(1).split(", ")
        build_default = canonical(binary, src, f"microtir build {TIR} --target c -o b", work)
        compile_default = canonical(binary, src, f"microtir compile {MODEL} -o m", work)
        run(binary, src, f"microtir build {TIR} --target llvm -o l", work)
        ll = open(os.path.join(work, "l/codegen/host/src/lib0.ll"), encoding="utf-8").read()
        llvm_default = re.search(r'target triple = "([^"]+)"', ll).group(1)
        triples = error_line(run(binary, src, f'microtir build {TIR} --target "llvm -mtriple=none" -o out', work), "")
        triples = triples.split("use one of: ", 1)[1].split(", ")
        refusals = [(c, why, error_line(run(binary, src, c, work), c)) for c, why in REFUSALS]

    missing = [k for k in keys if k not in KEYS]
    extra = [k for k in KEYS if k not in keys]
    if missing or extra:
        raise SystemExit(f"target_options_doc.py: describe the parser's keys {missing}, drop {extra}")
    build_opts, compile_opts = options_of(build_default), options_of(compile_default)
    KEYS["disabled-schedules"] = disabled_schedules_row(schedules)

    out = ["# The target string\n",
           "Generated from the target parser by `tests/docs/target_options_doc.py --write`; a test fails when it is",
           "stale, and every block marked `sh run` runs in CI.\n",
           "`--target` of `microtir build`, `compile` and `passes` takes a target string as TVM users write it: a",
           "kind, `c` (C99 source) or `llvm` (LLVM IR), then `-key=value` options in any order (`--key=value` is",
           "accepted too). Unknown keys, bad values and combinations that cannot work are refused when the",
           "string is parsed, before anything is compiled, with a message that names the rule; the command exits",
           "with 1. The canonical form, every key in a fixed order (`-disabled-schedules` only when not empty, "
           "`-reuse-io-buffers` and `-profile-hooks` only when `1`), is what",
           "`metadata.json` records as `target`",
           "and what `build --json` prints.\n",
           "Defaults: a key not written takes the parser's default, and the defaults are the lean pair, the C",
           "interface with unpacked kernels: `c` alone is",
           f"`{build_default}`.",
           "Naming only the CPU, as TVM users do (`c -mcpu=cortex-m4`), gives that interface with the CPU's",
           "kernels. Writing one of the two keys decides the other: `-unpacked-api=0` alone gives the packed",
           "interface, `-interface-api=packed` alone packed kernels (`-interface-api=packed -unpacked-api=1` is",
           "valid too). `compile` without `--target` uses `c` and links the weights: `-link-params` not written",
           "is 1 for `compile`, so its default is",
           f"`{compile_default}`.",
           "`build` and `passes` without `--target` use `c -unpacked-api=0`: a TIR module's packed functions with",
           "the registry, as TVM builds one (a function reading a buffer's shape at run time needs them).",
           "`compile -v` prints the target and the keys it defaulted, and `metadata.json` records them as",
           "`target_defaults` (`mcpu`: null, no CPU: the generic kernels; `microtir run` warns when such an",
           "artifact runs on a core with the DSP extension).",
           "`run` has no target string: `--backend c|llvm` and `--unpacked-api 0|1` choose the host build, "
           "`--reuse-io-buffers` adds `-reuse-io-buffers=1`, `--workspace-budget N` adds `-workspace-budget=N`, "
           "`--backend llvm --profile-layers` adds `-profile-hooks=1`.\n",
           "```sh run",
           "# expect-output:   defaulted: -runtime=c -executor=aot -interface-api=c -unpacked-api=1 -link-params=1 -workspace-byte-alignment=16",
           f'microtir compile {MODEL} --target "c -mcpu=cortex-m4" -o m -v | head -2',
           "```\n",
           "## Keys\n",
           "| key | values | default | what it does |",
           "|---|---|---|---|"]
    for k in keys:
        values, what = KEYS[k]
        if k in ("mtriple", "mcpu"):
            default = (f"`{llvm_default}`" if k == "mtriple" else
                       "none (`llvm`: LLVM's generic CPU for the triple; both: the generic int8 kernels)")
        elif k == "opt":
            default = "`O2`"
        elif k in ("disabled-schedules", "workspace-budget"):
            default = "none"
        elif k in ("reuse-io-buffers", "profile-hooks"):
            default = "`0`"
        elif build_opts[k] == compile_opts[k]:
            default = f"`{build_opts[k]}`"
        else:
            default = f"`{build_opts[k]}` (`compile`: `{compile_opts[k]}`)"
        out.append(f"| `-{k}` | {values} | {default} | {what} |")
    out += ["\n## LLVM triples\n",
            "`-mtriple` takes one of these:\n"]
    out += [f"- `{t}`" + (" (default)" if t == llvm_default else "") for t in triples]
    out += ["\nThe run targets of `microtir run --target` map to them: see [targets.md](targets.md).\n",
            "## Combinations that work\n",
            "| target string | what you get |",
            "|---|---|",
            "| `c`, `c -mcpu=cortex-m4`, `c -interface-api=c -unpacked-api=1` (`compile`) | `tvmgen_<model>_run(&inputs, &outputs)`, weights in flash |",
            "| `c -link-params=0` | `run` takes a third struct, `tvmgen_<model>_params` |",
            "| `c -interface-api=packed -link-params=0` | the main in the registry, called with `TVMFuncCall` |",
            "| `c -interface-api=packed` (`compile`: weights linked) | `tvmgen_<model>_run` in the registry: `TVMFuncCall` with the inputs and outputs only |",
            "| `c -interface-api=c -unpacked-api=1` with `--device` | `run` takes a `tvmgen_<model>_devices` struct |",
            "| `llvm -mtriple=... -interface-api=c -unpacked-api=1` | the same C interface over LLVM IR (and objects) |",
            "| `wasm` (`compile`) | one WebAssembly module with an exported `run`, weights in data segments ([wasm-backend.md](wasm-backend.md)) |",
            "| `c -unpacked-api=0` (`build`, `passes` default), `c` | a TIR module's functions, packed or unpacked, with the registry |\n",
            "## What is refused, and why\n",
            "Each block runs in CI: the command must exit with 1 and print the message shown.\n"]
    for command, why, message in refusals:
        out += [why + "\n", "```sh run", "# expect-exit: 1", f"# expect-output: {message}", command, "```\n"]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(generated_page.main(__doc__, "target-options.md", generate))
