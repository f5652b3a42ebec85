#!/usr/bin/env python3
"""Runs the runnable code blocks of docs/*.md, so the documentation cannot rot.

A fenced block whose info string is `sh run` is run with bash -e; `LANG file=NAME`
(any language) writes the block to NAME first. Each document runs in its own empty
folder, blocks in order, with `microtir` on PATH and $MICROTIR_SRC the source tree. A
block that starts with `# expect-exit: N` must exit with N. Any failure names the
document and line and prints the block's output; a run that finds no runnable block
at all fails too.

usage: run_doc_snippets.py MICROTIR_BINARY SOURCE_DIR [DOC.md...]
"""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(.*)$")


def blocks(path):
    """(line, info, text) of every fenced block."""
    out, info, start, lines = [], None, 0, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line.rstrip("\n"))
            if m and info is None:
                info, start, lines = m.group(1).strip(), n, []
            elif m and info is not None and m.group(1).strip() == "":
                out.append((start, info, "".join(lines)))
                info = None
            elif info is not None:
                lines.append(line)
    return out


def run_doc(path, binary, src):
    ran, failures = 0, []
    with tempfile.TemporaryDirectory(prefix="microtir-docs-") as work:
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(os.path.abspath(binary)) + os.pathsep + env.get("PATH", "")
        env["MICROTIR_SRC"] = src
        for line, info, text in blocks(path):
            words = info.split()
            target = next((w[5:] for w in words if w.startswith("file=")), None)
            if target:
                with open(os.path.join(work, target), "w", encoding="utf-8") as f:
                    f.write(text)
                continue
            if words[:2] != ["sh", "run"]:
                continue
            ran += 1
            m = re.match(r"# expect-exit: (\d+)", text)
            want = int(m.group(1)) if m else 0
            p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=work, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            if p.returncode != want:
                failures.append(f"{path}:{line}: exit {p.returncode}, expected {want}\n{text}--- output:\n"
                                f"{p.stdout.decode(errors='replace')}")
    return ran, failures


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, src = sys.argv[1], os.path.abspath(sys.argv[2])
    docs = sys.argv[3:] or sorted(os.path.join(src, "docs", d) for d in os.listdir(os.path.join(src, "docs"))
                                  if d.endswith(".md"))
    total, failures = 0, []
    for doc in docs:
        ran, failed = run_doc(doc, binary, src)
        print(f"{os.path.relpath(doc, src)}: {ran} runnable block(s), {len(failed)} failed", file=sys.stderr)
        total += ran
        failures += failed
    for f in failures:
        print(f, file=sys.stderr)
    if total == 0:
        print("no runnable block found", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
