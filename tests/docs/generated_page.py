"""The shared command line of the generated documentation pages (cli_doc.py, passes_doc.py,
target_options_doc.py):
`SCRIPT MICROTIR_BINARY SOURCE_DIR [--write]` regenerates docs/<page> with --write, and
otherwise checks it, failing with the command to run when it is stale."""
import os
import sys


def main(doc, page, generate):
    """`generate(binary, src)` returns the page's text; returns the exit code."""
    if len(sys.argv) < 3:
        print(doc, file=sys.stderr)
        return 2
    binary, src = sys.argv[1], sys.argv[2]
    path = os.path.join(src, "docs", page)
    text = generate(binary, src)
    if "--write" in sys.argv[3:]:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return 0
    current = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    if current != text:
        script = os.path.basename(sys.argv[0])
        print(f"{path} is stale: run `python3 tests/docs/{script} {binary} {src} --write`", file=sys.stderr)
        return 1
    return 0
