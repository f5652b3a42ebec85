// Source <-> output mapping, as Compiler Explorer does for C and assembly: hovering a TIR
// line marks the C lines it became (the core's line map, response.source_map), and
// hovering a C line marks the TIR line it came from and its other C lines.
import { StateEffect, StateField } from '@codemirror/state';
import { EditorView, Decoration } from '@codemirror/view';

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

export function markLines(view, lines, scroll) {
  const effects = [setMarked.of(lines)];
  if (scroll && lines.length && lines[0] <= view.state.doc.lines) {
    effects.push(EditorView.scrollIntoView(view.state.doc.line(Math.min(...lines)).from, { y: 'nearest' }));
  }
  view.dispatch({ effects });
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

// The output lines (1-based) that source line `n` became, in the map of one file.
export function outputLinesOf(map, n) {
  const lines = [];
  map.forEach((src, i) => { if (src === n) lines.push(i + 1); });
  return lines;
}
