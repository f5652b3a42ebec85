#!/usr/bin/env python3
"""The pass list of the pipeline diagram in docs/architecture.md (the lines under
`core/transform/`) is generated from `kPipeline` in core/driver/pipeline.cc, the one
table of the lowering, so the diagram cannot miss a pass. `--write` rewrites those lines;
without it the page is checked and a stale diagram fails. A new condition of the table
needs its words in CONDITIONS below (the generation fails without them).

usage: architecture_doc.py MICROTIR_BINARY SOURCE_DIR [--write]
"""
import os
import re
import sys

import generated_page

# What each run condition of kPipeline means, as the diagram says it ("" for always).
CONDITIONS = {
    "always": "",
    "packed": "packed",
    "unpacked": "unpacked",
    "hoisting": "unless -disabled-schedules=hoist",
    "merging_kernels": "with make_unpacked_api, unless -disabled-schedules=merge_kernels",
    "scalarizing_all": "for the C backend; Helium vectors stay",
    "scalarizing_but_simd128": "wasm: what SIMD128 cannot emit",
}
# A few words on a pass where the diagram points further.
NOTES = {"plan_memory": "core/memory/: the static planner"}

HEAD = " core/transform/  the passes, one per file, in core/driver/pipeline.cc's kPipeline:"
END = "                        |"


def snake(factory):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", factory).lower()  # MakePackedAPI -> make_packed_api


def pipeline_steps(src):
    text = open(os.path.join(src, "core/driver/pipeline.cc"), encoding="utf-8").read()
    table = re.search(r"kPipeline\[\] = \{(.*?)\n\};", text, re.S)
    if not table:
        raise SystemExit("no kPipeline table in core/driver/pipeline.cc")
    steps = re.findall(r"\{(\w+), (\w+), (?:true|false)\}", table.group(1))
    for _, cond in steps:
        if cond not in CONDITIONS:
            raise SystemExit(f"kPipeline's condition '{cond}' has no words in CONDITIONS of {sys.argv[0]}")
    return [(snake(f), c) for f, c in steps]


def diagram_lines(steps):
    items = []
    i = 0
    while i < len(steps):
        name, cond = steps[i]
        # The calling convention: one of the two, side by side.
        if cond == "packed" and i + 1 < len(steps) and steps[i + 1][1] == "unpacked":
            items.append(f"{name} | {steps[i + 1][0]}")
            i += 2
            continue
        words = [w for w in (NOTES.get(name, ""), CONDITIONS[cond]) if w]
        items.append(name + (f" ({'; '.join(words)})" if words else ""))
        i += 1
    lines, line = [], "  "
    for k, item in enumerate(items):
        piece = " " + item + ("," if k + 1 < len(items) else "")
        if len(line) + len(piece) > 88 and line.strip():
            lines.append(line)
            line = "  "
        line += piece
    lines.append(line)
    return lines


def generate(binary, src):
    page = open(os.path.join(src, "docs/architecture.md"), encoding="utf-8").read().split("\n")
    if HEAD not in page:
        raise SystemExit(f"docs/architecture.md lost the diagram line '{HEAD.strip()}'")
    start = page.index(HEAD) + 1
    end = page.index(END, start)
    return "\n".join(page[:start] + diagram_lines(pipeline_steps(src)) + page[end:])


if __name__ == "__main__":
    sys.exit(generated_page.main(__doc__, "architecture.md", generate))
