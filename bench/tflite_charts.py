#!/usr/bin/env python3
"""Charts of a bench/tflite_vs_tflm.sh run (its Markdown output), for bench/report.md:
bench/report-tflm-ratios.svg (ours / TFLM+CMSIS-NN per model: instructions, RAM, flash
without the weights, against the issue's goals) and bench/report-tflm-depthwise.svg (every
depthwise 3x3 layer's instructions per MAC, ours beside CMSIS-NN's, the goal 3.0).

usage: bash bench/tflite_vs_tflm.sh > run.md && python3 bench/tflite_charts.py run.md [ISSUE]

With ISSUE (41: Cortex-M4's limits; 40: BENCH_TARGET=cortex-m55's run) only the ratio chart
is written, against that issue's goals, to bench/report-issue<ISSUE>-ratios.svg.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import ROOT, bar_chart  # noqa: E402


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def number(text):
    m = re.match(r"-?[\d,]*\.?\d+", text.replace(",", ""))
    return float(m.group(0)) if m else None


# Per issue: the chart's title and its dashed goals.
ISSUE_GOALS = {
    "27": ("Cortex-M4: ours / TFLM + CMSIS-NN (shorter is better; goals dashed)",
           {"flash goal 0.25": 0.25, "instructions goal 0.7": 0.7, "RAM goal 0.8": 0.8}),
    "41": ("Cortex-M4, issue 41: ours / TFLM + CMSIS-NN (shorter is better; goals dashed)",
           {"flash goal 0.25": 0.25, "instructions and RAM goal 0.5": 0.5}),
    "40": ("Cortex-M55, issue 40: ours / TFLM + CMSIS-NN with MVE (shorter is better; goals dashed)",
           {"flash goal 0.25": 0.25, "instructions goal 0.7": 0.7, "RAM goal 0.8": 0.8}),
}


def main(path, issue="27"):
    lines = open(path).read().splitlines()
    # The summary table: model, instructions ratio (col 3), RAM ratio (col 8), flash ratio (col 11).
    head = next(i for i, l in enumerate(lines) if l.startswith("| model | ours: instructions |"))
    ratios = []
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        c = cells(line)
        for label, col in (("instructions", 3), ("RAM", 8), ("flash w/o weights", 11)):
            if number(c[col]) is not None:
                ratios.append((f"{c[0].upper()} {label}", number(c[col])))
    title, goals = ISSUE_GOALS[issue]
    if issue != "27":
        bar_chart(os.path.join(ROOT, f"bench/report-issue{issue}-ratios.svg"), title, ratios, "", goals)
        print(f"wrote bench/report-issue{issue}-ratios.svg", file=sys.stderr)
        return
    bar_chart(os.path.join(ROOT, "bench/report-tflm-ratios.svg"), title, ratios, "", goals)
    # The per-operator tables: every DEPTHWISE_CONV_2D row with its own kernel count.
    depthwise, model = [], None
    for line in lines:
        m = re.match(r"### (\w+): instructions per operator", line)
        if m:
            model = m.group(1).upper()
        c = cells(line) if line.startswith("|") else []
        if model and len(c) > 7 and c[1] == "DEPTHWISE_CONV_2D" and number(c[6]) is not None:
            depthwise.append((f"{model} #{c[0]}", number(c[6]), number(c[7])))
    bar_chart(os.path.join(ROOT, "bench/report-tflm-depthwise.svg"),
              "Depthwise 3x3 layers, instructions per MAC: ours (blue), CMSIS-NN (orange)", depthwise, "",
              {"goal 3.0": 3.0})
    print("wrote bench/report-tflm-ratios.svg and bench/report-tflm-depthwise.svg", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in ISSUE_GOALS):
        sys.exit(__doc__.strip())
    main(*sys.argv[1:])
