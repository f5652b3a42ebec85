#!/usr/bin/env python3
"""Runs the runnable code blocks of docs/*.md, so the documentation cannot rot.

Markers, in the info string after the fence:
- `sh run`: run with bash -e. A block that starts with `# expect-exit: N` must exit
  with N; each `# expect-output: TEXT` line names text its output (stdout and stderr)
  must contain, so a documented refusal is checked with its exact message. Each
  `# requires: PATH` line names a file the block reads ($MICROTIR_SRC and
  $MICROTIR_SHARED_TFLITE expanded): when one is missing the block is skipped, saying so.
- `python run`: run with the Python that has the package microtir ($MICROTIR_PYTHON, with
  $MICROTIR_PYTHONPATH on PYTHONPATH: the build's python/ folder, which ctest sets when the
  package is built); `# expect-output:` as for `sh run`. Skipped, saying so, where the
  package is not built (the sanitized build).
- `LANG file=NAME` (any language): writes the block to NAME, for later blocks.
- `LANG tir` (TIR text; `file=NAME` optional): `microtir parse` must accept it; with
  `args="..."`, `microtir run FILE ARGS` runs it instead ($MICROTIR_SRC is expanded).
  `expect="TEXT"` (repeatable) is text the output must contain, `exit=N` the exit
  code (default 0). The info string is split like a shell line.
Each document runs in its own empty folder, blocks in order, with `microtir` on PATH,
$MICROTIR_SRC the source tree and $MICROTIR_SHARED_TFLITE the third-party models and
TFLM's outputs (../shared/tflite beside the source tree unless the environment says
otherwise). Any failure names the document and line and prints the block's output; a run
that finds no runnable block at all fails too, unless blocks were skipped: then it exits
with 77 (ctest's SKIP_RETURN_CODE).

usage: run_doc_snippets.py MICROTIR_BINARY SOURCE_DIR [DOC.md...]
"""
import os
import re
import shlex
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


def info_words(info):
    try:
        return shlex.split(info)
    except ValueError:
        return info.split()


def check(p, want_exit, expected):
    """The failure text of a finished process, or None."""
    output = p.stdout.decode(errors="replace")
    missing = [e for e in expected if e not in output]
    if p.returncode == want_exit and not missing:
        return None
    why = f"exit {p.returncode}, expected {want_exit}" if p.returncode != want_exit else ""
    why += "".join(f"\n  output lacks: {e}" for e in missing)
    return f"{why.strip()}\n--- output:\n{output}"


def missing_requirement(text, env):
    """The first `# requires: PATH` of a block that does not exist, or None."""
    for req in re.findall(r"^# requires: (.*)$", text, re.M):
        path = req.strip()
        for var in ("MICROTIR_SRC", "MICROTIR_SHARED_TFLITE"):
            path = path.replace("$" + var, env[var]).replace("${" + var + "}", env[var])
        if not os.path.exists(path):
            return path
    return None


def run_doc(path, binary, src):
    ran, skipped, failures = 0, 0, []
    with tempfile.TemporaryDirectory(prefix="microtir-docs-") as work:
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(os.path.abspath(binary)) + os.pathsep + env.get("PATH", "")
        env["MICROTIR_SRC"] = src
        env.setdefault("MICROTIR_SHARED_TFLITE", os.path.normpath(os.path.join(src, "..", "shared", "tflite")))
        for line, info, text in blocks(path):
            words = info_words(info)
            keys = dict(w.split("=", 1) for w in words if "=" in w)
            target = keys.get("file")
            if "tir" in words[1:]:
                target = target or f"snippet_{line}.tir"
            if target:
                with open(os.path.join(work, target), "w", encoding="utf-8") as f:
                    f.write(text)
            if "tir" in words[1:]:
                ran += 1
                args = keys.get("args", "").replace("$MICROTIR_SRC", src)
                cmd = [binary, "run", target, *shlex.split(args)] if "args" in keys else [binary, "parse", target]
                p = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
                failed = check(p, int(keys.get("exit", "0")), [w[7:] for w in words if w.startswith("expect=")])
                if failed:
                    failures.append(f"{path}:{line}: {' '.join(cmd[1:])}: {failed}")
                continue
            if target or words[:2] not in (["sh", "run"], ["python", "run"]):
                continue
            missing = missing_requirement(text, env)
            if not missing and words[0] == "python" and not env.get("MICROTIR_PYTHONPATH"):
                missing = "the Python package (MICROTIR_PYTHONPATH)"
            if missing:
                skipped += 1
                print(f"skipped: {os.path.relpath(path, src)}:{line}: {missing} not found", file=sys.stderr)
                continue
            ran += 1
            m = re.match(r"# expect-exit: (\d+)", text)
            expected = re.findall(r"^# expect-output: (.*)$", text, re.M)
            if words[0] == "python":
                env["PYTHONPATH"] = env["MICROTIR_PYTHONPATH"]
                cmd = [env.get("MICROTIR_PYTHON") or sys.executable, "-c", text]
            else:
                cmd = ["bash", "-e", "-o", "pipefail", "-c", text]
            p = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            failed = check(p, int(m.group(1)) if m else 0, expected)
            if failed:
                failures.append(f"{path}:{line}: {failed}\n--- block:\n{text}")
    return ran, skipped, failures


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, src = sys.argv[1], os.path.abspath(sys.argv[2])
    docs = sys.argv[3:] or sorted(os.path.join(src, "docs", d) for d in os.listdir(os.path.join(src, "docs"))
                                  if d.endswith(".md"))
    total, skipped, failures = 0, 0, []
    for doc in docs:
        ran, skips, failed = run_doc(doc, binary, src)
        print(f"{os.path.relpath(doc, src)}: {ran} runnable block(s), {len(failed)} failed"
              + (f", {skips} skipped" if skips else ""), file=sys.stderr)
        total += ran
        skipped += skips
        failures += failed
    for f in failures:
        print(f, file=sys.stderr)
    if total == 0:
        print("every runnable block was skipped" if skipped else "no runnable block found", file=sys.stderr)
        return 77 if skipped else 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
