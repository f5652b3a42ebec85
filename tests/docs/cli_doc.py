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
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(generated_page.main(__doc__, "cli.md", lambda binary, src: generate(binary)))
