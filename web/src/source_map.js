// Source <-> output mapping, as Compiler Explorer does for C and assembly: hovering a source
// line marks the output lines it became, and hovering an output line marks the source
// lines it came from and their other output lines. For a TIR program the map is the
// core's (response.source_map: each C line's TIR line); for a model it is built here:
// each kernel, in C, LLVM IR or WebAssembly text, against the graph nodes it came from.
import { StateEffect, StateField } from '@codemirror/state';
import { EditorView, Decoration } from '@codemirror/view';
import { functionLines } from './model_view.js';

const setMarked = StateEffect.define();
const mark = Decoration.line({ class: 'cm-mapped' });

// The marked lines of one view (1-based line numbers).
export const markedLines = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    for (const e of tr.effects) {
      if (!e.is(setMarked)) continue;
      const doc = tr.state.doc;
      return Decoration.set(e.value.filter((n) => n >= 1 && n <= doc.lines).sort((a, b) => a - b).map((n) => mark.range(doc.line(n).from)));
    }
    return deco.map(tr.changes);
  },
  provide: (f) => EditorView.decorations.from(f),
});

// With `scroll`, the view's own scroller brings the first marked line into sight; the
// page itself never moves, or the line under the pointer would slide away from it.
export function markLines(view, lines, scroll) {
  view.dispatch({ effects: [setMarked.of(lines)] });
  if (!scroll || !lines.length || Math.min(...lines) > view.state.doc.lines) return;
  const block = view.lineBlockAt(view.state.doc.line(Math.min(...lines)).from);
  const scroller = view.scrollDOM;
  if (block.top < scroller.scrollTop || block.bottom > scroller.scrollTop + scroller.clientHeight) {
    scroller.scrollTop = Math.max(0, block.top - scroller.clientHeight / 3);
    view.requestMeasure();  // draws the lines now in sight
  }
}

// Calls `onLine(lineNumber | null)` as the pointer moves over the view's lines.
export function hoverLines(onLine) {
  let last = null;
  const report = (n) => { if (n !== last) { last = n; onLine(n); } };
  return EditorView.domEventHandlers({
    mousemove(e, view) {
      const pos = view.posAtCoords({ x: e.clientX, y: e.clientY });
      report(pos === null ? null : view.state.doc.lineAt(pos).number);
    },
    mouseleave() { report(null); },
  });
}

// A line map: map[i] lists the source lines (1-based) that output line i + 1 came from.

// The core's map (one source line per output line, 0 for none) as a line map.
export function coreLineMap(lines) {
  return lines.map((n) => (n ? [n] : []));
}

// The output lines (1-based) that source line `n` became.
export function outputLinesOf(map, n) {
  const lines = [];
  map.forEach((sources, i) => { if (sources.includes(n)) lines.push(i + 1); });
  return lines;
}

// The source lines of output line `n` (1-based).
export function sourceLinesOf(map, n) {
  return map[n - 1] || [];
}

// A model's line map between its graph JSON (`source`) and one generated file: every line
// of a kernel, and every line of the AOT function that calls it, maps to the lines of the
// graph nodes that became that kernel (several when layers are fused). Null when the
// source has no node list.
export function modelLineMap(source, model, path, text) {
  const src = source.split('\n');
  const nodesAt = src.findIndex((l) => /"nodes"\s*:/.test(l));
  if (nodesAt < 0) return null;
  const starts = model.nodes.map((n) => {
    const key = `"name": ${JSON.stringify(n.name)}`;
    return src.findIndex((l, i) => i > nodesAt && l.replace(/"name"\s*:\s*/, '"name": ').includes(key));
  });
  // A node's lines run to the next node's first line or the end of the node list.
  const sorted = starts.filter((s) => s >= 0).sort((a, b) => a - b);
  const nodeLines = (k) => {
    const first = starts[k];
    if (first < 0) return [];
    let end = sorted.find((s) => s > first);
    if (end === undefined) {
      end = src.findIndex((l, i) => i > first && /^\s*\]/.test(l));
      if (end < 0) end = first + 1;
    }
    return Array.from({ length: end - first }, (_, i) => first + i + 1);
  };
  const sourcesOf = new Map();
  model.nodes.forEach((n, k) => {
    if (!n.kernel) return;
    sourcesOf.set(n.kernel, [...(sourcesOf.get(n.kernel) || []), ...nodeLines(k)]);
  });
  const out = text.split('\n');
  const map = out.map(() => []);
  const inKernel = new Array(out.length).fill(false);
  for (const [kernel, lines] of sourcesOf) {
    const span = functionLines(path, text, kernel);
    if (!span) continue;
    for (let i = span[0]; i <= span[1]; ++i) { map[i] = lines; inKernel[i] = true; }
  }
  const call = path.endsWith('.wat') ? (k) => new RegExp(`\\(call \\$${k}[\\s)]`)
    : path.endsWith('.ll') ? (k) => new RegExp(`@${k}\\(`) : (k) => new RegExp(`\\b${k}\\(`);
  const calls = [...sourcesOf.keys()].map((k) => [call(k), sourcesOf.get(k)]);
  out.forEach((l, i) => {
    if (inKernel[i]) return;
    const hit = calls.find(([re]) => re.test(l));
    if (hit) map[i] = hit[1];
  });
  return map;
}
