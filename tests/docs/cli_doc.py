#!/usr/bin/env python3
"""docs/cli.md is generated from `microtir --help` and every subcommand's --help, so it
cannot drift from the CLI. `--write` regenerates it; without it the file is checked
and a stale file fails with the command to run.

usage: cli_doc.py MICROTIR_BINARY SOURCE_DIR [--write]
"""
import re
import subprocess
import sys

import generated_page


def help_text(binary, *args):
    out = subprocess.run([binary, *args, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True)
    return out.stdout.decode().rstrip() + "\n"


def generate(binary):
    top = help_text(binary)
    subcommands = re.findall(r"^  (\S+)\s{2,}", top.split("Subcommands:", 1)[1], re.M)
    parts = ["# The microtir CLI\n",
             "Generated from `microtir --help` by `tests/docs/cli_doc.py --write`; a test fails when it is stale.\n",
             "Exit codes: 0 success, 1 user error (the message names the file, line and column where there is a",
             "source), 2 internal error. Errors go to stderr; `--json` prints a machine-readable result on stdout.\n",
             "```text", top.rstrip(), "```\n"]
    for sub in subcommands:
        parts += [f"## microtir {sub}\n", "```text", help_text(binary, sub).rstrip(), "```\n"]
    return "\n".join(parts) + BUDGET_GATES


# Hand-written, kept here so the page stays one generated file; its `sh run` block runs in CI.
BUDGET_GATES = """
## Budget gates

`--max-flash` and `--max-ram` make a build fail when the model does not fit the board. `run` checks
them on the build it runs on `--target` (a model: `.tflite`, `.onnx`, `model.json` or a compiled
`model.tar`); `compile` checks them when `--board` names a target to build and measure on (it runs
the artifact once, on zero inputs). Sizes are bytes, with an optional `K` (1024) or `M` (1024 K):
`65536`, `64K`, `1M`; anything else (`12Q`, `1.5M`, `64KB`) is refused with exit 1 before anything
is built.

- **flash** is the report's flash figure: code (`text`), read-only data (the linked weights among
  it) and the load image of initialized data. It includes the test harness's input (a few hundred
  bytes for most models), which the table lists apart.
- **RAM** is the static RAM (`data` and `bss`: the workspace, the input and output buffers, the
  state, the runtime's and C library's variables) plus the stack high-water of `run()` where the
  target measures one (the QEMU targets; not the host or wasm32).

Within budget, the table says how much is left and the command exits 0. Over it, the command exits
1: the table says which limit is exceeded and by how much, then what makes up the figure, largest
first (code, weights, workspace, input/output buffers, state, stack, the rest), and the firmware's
five largest functions and objects in that memory (from the ELF symbol table: the kernels by name,
the weights by their C identifiers). `--json` carries the same as a `budget` object beside the
`report` (`checks[]`: `resource`, `used`, `limit`, `exceeds`, `over_by`, `parts[]`, `symbols[]`),
and `ok` is false. The gate is the library function `mtir::sim::check_budget` (`sim/budget.h`),
which the Python package exposes too.

```sh run
# expect-exit: 1
# expect-output: budget on host: EXCEEDED
# expect-output: microtir: error: over budget on host: RAM by
microtir compile "$MICROTIR_SRC/models/digits/digits.json" -o digits.tar --board host --max-flash 1M --max-ram 1K
```

A CI job that fails the build when the keyword-spotting model outgrows a 64 KB-flash, 20 KB-RAM
Cortex-M4 part (GitHub Actions; the QEMU and Arm toolchain packages of [targets.md](targets.md)):

```yaml
jobs:
  model-budget:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: sudo apt-get install -y gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
      - run: cmake -S . -B build -G Ninja && ninja -C build microtir
      - name: KWS fits 64K flash and 20K RAM on Cortex-M4
        run: |
          build/core/cli/microtir compile models/kws.tflite --target "c -mcpu=cortex-m4" \\
            -o kws.tar --board cortex-m4 --max-flash 64K --max-ram 20K --json > budget.json
      - if: always()
        uses: actions/upload-artifact@v4
        with: {name: budget, path: budget.json}
```
"""


if __name__ == "__main__":
    sys.exit(generated_page.main(__doc__, "cli.md", lambda binary, src: generate(binary)))
