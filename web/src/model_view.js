// The model view: the operator graph as the compiler builds it, drawn as Netron draws a
// model (a box per operator: its op in the header, then its layer name, its cost, its
// weights and its output type, one line each; edges for the tensors, laid out top to
// bottom by dagre), with each layer's cost: multiply-accumulates, state, weight bytes and
// activation bytes. Choosing a layer shows its kernel: the
// TIR function, the C (or LLVM IR) it became, and its output's place in the memory plan.
import dagre from '@dagrejs/dagre';

const SVG = 'http://www.w3.org/2000/svg';
const BOX_W = 172, HEADER_H = 20, LINE_H = 15, PAD_X = 8;
// The graph's font is 11px monospace (style.css): about 0.6 em a character, so a line
// holds this many; longer text is shortened in the middle (the tooltip has it whole).
const CHAR_W = 6.7;
const LINE_CHARS = Math.floor((BOX_W - 2 * PAD_X) / CHAR_W);

// `text` in at most `max` characters: its start and its end around an ellipsis (a
// TFLite name's distinctive part is often its end).
export function fitText(text, max = LINE_CHARS) {
  const chars = [...text];
  if (chars.length <= max) return text;
  const tail = Math.floor((max - 1) / 2), head = max - 1 - tail;
  return `${chars.slice(0, head).join('')}…${chars.slice(chars.length - tail).join('')}`;
}

// The text lines of an operator's box under its header: its name (and device), its
// cost when it has one, one per weight, its output type.
export function nodeLines(n, weights) {
  const lines = [{ cls: 'node-name', text: fitText(n.device ? `${n.name} @${n.device}` : n.name) }];
  const cost = [n.macs ? `${formatCount(n.macs)} MACs` : '', n.state_bytes ? `state ${formatBytes(n.state_bytes)}` : ''].filter(Boolean).join(' · ');
  if (cost) lines.push({ cls: 'node-cost', text: fitText(cost) });
  for (const w of weights) {
    const shape = ` ⟨${w.shape.join('×')}⟩`;
    lines.push({ cls: 'node-weight', text: `${fitText(w.name, Math.max(4, LINE_CHARS - [...shape].length))}${shape}` });
  }
  lines.push({ cls: 'node-out', text: fitText(`→ ${typeText(n)}`) });
  return lines;
}

function svgEl(name, attrs = {}, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

export function formatCount(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} G`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)} k`;
  return String(n);
}

export function formatBytes(n) {
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(2)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

const typeText = (t) => `${t.dtype}[${t.shape.join('×')}]`;

// Netron's colours by kind of operator: layers, activations, pooling, shape changes.
function category(op) {
  if (/conv|dense|gemm|matmul|lstm|svdf/.test(op)) return 'layer';
  if (/relu|sigmoid|tanh|softmax|clip|gelu|silu|hard/.test(op)) return 'activation';
  if (/pool/.test(op)) return 'pool';
  if (/norm/.test(op)) return 'norm';
  if (/reshape|flatten|transpose|concat|pad|squeeze|split|slice|gather/.test(op)) return 'shape';
  return 'other';
}

// The graph laid out: model inputs and operator nodes (constants are lines of their box).
export function layoutModel(model) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 24, ranksep: 30, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  const constants = new Map(model.constants.map((c) => [c.name, c]));
  const producers = new Set([...model.inputs.map((i) => i.name), ...model.nodes.map((n) => n.name)]);
  for (const i of model.inputs) g.setNode(`in:${i.name}`, { width: BOX_W, height: HEADER_H + LINE_H + 6, input: i });
  for (const n of model.nodes) {
    const weights = n.inputs.filter((x) => constants.has(x)).map((x) => constants.get(x));
    const lines = nodeLines(n, weights);
    g.setNode(`op:${n.name}`, { width: BOX_W, height: HEADER_H + LINE_H * lines.length + 6, node: n, lines });
    for (const x of n.inputs) {
      if (!producers.has(x)) continue;
      g.setEdge(model.inputs.some((i) => i.name === x) ? `in:${x}` : `op:${x}`, `op:${n.name}`);
    }
  }
  dagre.layout(g);
  return g;
}

// The SVG of the laid-out graph; `onSelect(node)` is called when a box is chosen.
export function modelGraph(model, onSelect, selected) {
  const g = layoutModel(model);
  const { width, height } = g.graph();
  const svg = svgEl('svg', { viewBox: `0 0 ${width} ${height}`, width, height, class: 'model-graph', role: 'group', 'aria-label': `operator graph of ${model.name}` });
  const defs = svgEl('defs');
  const marker = svgEl('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse' });
  marker.append(svgEl('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'edge-head' }));
  defs.append(marker);
  svg.append(defs);
  for (const e of g.edges()) {
    const pts = g.edge(e).points;
    const d = pts.map((p, i) => `${i ? 'L' : 'M'} ${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(' ');
    svg.append(svgEl('path', { d, class: 'edge', 'marker-end': 'url(#arrow)', 'data-from': e.v, 'data-to': e.w }));
  }
  for (const id of g.nodes()) {
    const box = g.node(id);
    const x = box.x - box.width / 2, y = box.y - box.height / 2;
    const grp = svgEl('g', { class: 'graph-node', transform: `translate(${x.toFixed(1)} ${y.toFixed(1)})` });
    if (box.input) {
      grp.classList.add('model-input');
      grp.append(svgEl('rect', { width: box.width, height: box.height, rx: 10 }));
      grp.append(svgEl('text', { x: PAD_X, y: 14, class: 'node-op' }, fitText(`input ${box.input.name}`)));
      grp.append(svgEl('text', { x: PAD_X, y: HEADER_H + 11, class: 'node-line' }, fitText(typeText(box.input))));
      grp.append(svgEl('title', {}, `input ${box.input.name}: ${typeText(box.input)}`));
    } else {
      const n = box.node;
      grp.classList.add(`cat-${category(n.op)}`);
      grp.dataset.name = n.name;
      grp.setAttribute('tabindex', '0');
      grp.setAttribute('role', 'button');
      grp.setAttribute('aria-label', `${n.op} ${n.name}: ${typeText(n)}, ${n.macs} MACs`);
      if (selected === n.name) grp.classList.add('selected');
      grp.append(svgEl('rect', { width: box.width, height: box.height, rx: 4, class: 'node-body' }));
      grp.append(svgEl('rect', { width: box.width, height: HEADER_H, rx: 4, class: 'node-header' }));
      // The op alone in the header, the layer name on the line under it: never one over
      // the other, however long the name.
      grp.append(svgEl('text', { x: PAD_X, y: 14, class: 'node-op' }, fitText(n.op)));
      box.lines.forEach((l, i) => grp.append(svgEl('text', { x: PAD_X, y: HEADER_H + 11 + LINE_H * i, class: `node-line ${l.cls}` }, l.text)));
      const state = n.state_bytes ? ` · state ${n.state_bytes} B` : '';
      const title = svgEl('title', {}, `${n.name}${n.device ? ` @${n.device}` : ''} (${n.op}): ${typeText(n)}\n${n.macs} MACs${state} · weights ${n.weight_bytes} B · output ${n.activation_bytes} B\n${n.kernel ? `kernel ${n.kernel}` : 'no kernel: a view of its input'}`);
      grp.append(title);
      grp.addEventListener('click', () => onSelect(n));
      grp.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); onSelect(n); } });
    }
    svg.append(grp);
  }
  return svg;
}

// One row per layer with its cost; the MACs also as a bar against the heaviest layer.
// `layers`: the last wasm run's [{kernel, ms}] (per inference), or null: a time column.
// Nodes fused into one kernel share its time; the first of them shows it.
export function costTable(model, onSelect, selected, layers = null) {
  const table = el('table', 'layer-costs');
  const timed = layers && layers.length > 0;
  // A state column only for a model with persistent state (an LSTM's or SVDF's).
  const stated = model.nodes.some((n) => n.state_bytes);
  table.innerHTML = `<caption>cost per layer</caption><tr><th>layer</th><th>op</th><th>output</th><th>MACs</th>${stated ? '<th>state</th>' : ''}<th>weights</th><th>activations</th><th>kernel</th>` +
    (timed ? '<th>wasm time</th>' : '') + '</tr>';
  const maxMacs = Math.max(1, ...model.nodes.map((n) => n.macs));
  const msOf = new Map(timed ? layers.map((l) => [l.kernel, l.ms]) : []);
  const maxMs = Math.max(1e-9, ...msOf.values());
  const timeShown = new Set();
  for (const n of model.nodes) {
    const tr = el('tr', `layer-row${selected === n.name ? ' selected' : ''}`);
    tr.dataset.name = n.name;
    const name = el('td');
    const b = el('button', 'layer-link', n.name);
    b.addEventListener('click', () => onSelect(n));
    name.append(b);
    tr.append(name, el('td', null, n.op), el('td', null, typeText(n)), barCell(n.macs, maxMacs, n.macs ? formatCount(n.macs) : '—', 'mac'));
    if (stated) tr.append(el('td', 'num layer-state', n.state_bytes ? formatBytes(n.state_bytes) : '—'));
    tr.append(el('td', 'num', n.weight_bytes ? formatBytes(n.weight_bytes) : '—'), el('td', 'num', formatBytes(n.activation_bytes)), el('td', 'kernel-name', n.kernel || 'view (no kernel)'));
    if (timed) {
      if (!msOf.has(n.kernel)) tr.append(el('td', 'num layer-time', '—'));
      else if (timeShown.has(n.kernel)) tr.append(el('td', 'num layer-time fused', 'fused ↑'));
      else {
        timeShown.add(n.kernel);
        const cell = barCell(msOf.get(n.kernel), maxMs, formatMs(msOf.get(n.kernel)), 'time');
        cell.classList.add('layer-time');
        cell.dataset.ms = String(msOf.get(n.kernel));
        tr.append(cell);
      }
    }
    table.append(tr);
  }
  const total = el('tr', 'layer-total');
  const acts = model.nodes.reduce((a, n) => a + n.activation_bytes, 0);
  total.append(el('td', null, 'total'), el('td'), el('td'), el('td', 'num', formatCount(model.macs)));
  if (stated) total.append(el('td', 'num', formatBytes(model.nodes.reduce((a, n) => a + (n.state_bytes || 0), 0))));
  total.append(el('td', 'num', formatBytes(model.weight_bytes)), el('td', 'num', formatBytes(acts)), el('td'));
  if (timed) total.append(el('td', 'num', formatMs([...msOf.values()].reduce((a, x) => a + x, 0))));
  table.append(total);
  return table;
}

// A number with a bar as wide as its share of `max`.
function barCell(value, max, text, kind) {
  const td = el('td', 'num');
  const bar = el('span', `${kind}-bar`);
  bar.style.width = `${((value / max) * 100).toFixed(1)}%`;
  td.append(el('span', `${kind}-count`, text), bar);
  return td;
}

export function formatMs(ms) {
  return ms >= 1 ? `${ms.toFixed(2)} ms` : `${(ms * 1000).toFixed(1)} µs`;
}

// The block of a printed module that defines `name` (from its decorator to the next line
// indented no deeper than the def).
export function tirFunction(moduleText, name) {
  const lines = moduleText.split('\n');
  const at = lines.findIndex((l) => new RegExp(`^\\s*def ${name}\\(`).test(l));
  if (at < 0) return null;
  const indent = lines[at].search(/\S/);
  let start = at;
  while (start > 0 && /^\s*@/.test(lines[start - 1])) --start;
  let end = at + 1;
  while (end < lines.length && (lines[end].trim() === '' || lines[end].search(/\S/) > indent)) ++end;
  while (end > at + 1 && lines[end - 1].trim() === '') --end;
  return lines.slice(start, end).map((l) => l.slice(Math.min(indent, l.search(/\S|$/)))).join('\n');
}

// A WebAssembly text function `(func $name ...)`, to its closing parenthesis.
// The characters [start, end) of function `name` in WebAssembly text, or null.
function watSpan(text, name) {
  const at = text.search(new RegExp(`\\(func \\$${name}[\\s)]`));
  if (at < 0) return null;
  let depth = 0;
  for (let i = at; i < text.length; ++i) {
    const c = text[i];
    if (c === '"') { for (++i; i < text.length && text[i] !== '"'; ++i) if (text[i] === '\\') ++i; continue; }
    if (c === ';' && text[i + 1] === ';') { i = text.indexOf('\n', i); if (i < 0) break; continue; }
    if (c === '(') ++depth;
    if (c === ')' && --depth === 0) return [at, i + 1];
  }
  return null;
}

// The lines [first, last] (0-based) of function `name` in one generated file (C, LLVM IR
// or WebAssembly text), or null.
export function functionLines(path, text, name) {
  if (path.endsWith('.wat')) {
    const span = watSpan(text, name);
    const lineOf = (i) => text.slice(0, i).split('\n').length - 1;
    return span && [lineOf(span[0]), lineOf(span[1] - 1)];
  }
  if (!/\.(c|ll)$/.test(path)) return null;
  const lines = text.split('\n');
  const head = path.endsWith('.c') ? new RegExp(`^[\\w ]*\\b${name}\\(.*\\{\\s*$`) : new RegExp(`^define .*@${name}\\(`);
  const at = lines.findIndex((l) => head.test(l));
  if (at < 0) return null;
  let end = at + 1;
  while (end < lines.length && lines[end] !== '}') ++end;
  return [at, Math.min(end, lines.length - 1)];
}

// The definition of function `name` in the artifacts (C, LLVM IR or WebAssembly text):
// its file and text.
export function generatedFunction(artifacts, name) {
  for (const a of artifacts) {
    if (a.text === undefined) continue;
    if (a.path.endsWith('.wat')) {
      const span = watSpan(a.text, name);
      if (span) return { path: a.path, text: a.text.slice(...span) };
      continue;
    }
    const span = functionLines(a.path, a.text, name);
    if (span) return { path: a.path, text: a.text.split('\n').slice(span[0], span[1] + 1).join('\n') };
  }
  return null;
}

// Where the node's output lives: a tensor of main's memory plan, a model output, or a
// value inside a fused kernel that never reaches memory.
export function memoryPlace(response, node) {
  const model = response.model;
  if (model.outputs.includes(node.name)) return `${node.name} is a model output: the caller's buffer (${formatBytes(node.activation_bytes)})`;
  if (!node.kernel && node.inputs.length) return `${node.name} is a view of ${node.inputs[0]}: the same bytes under its shape`;
  const fusedAway = model.nodes.some((m) => m !== node && m.kernel === node.kernel && model.nodes.indexOf(m) > model.nodes.indexOf(node));
  if (fusedAway) return `${node.name} stays inside the fused kernel ${node.kernel}: it is never written to memory`;
  const plan = (response.memory || []).find((p) => p.function === response.main);
  const cName = node.name.replace(/\W/g, '_');
  const t = plan && plan.tensors.find((x) => x.name === node.name || x.name === cName);
  if (!t) return `${node.name} is not in the memory plan of ${response.main}`;
  return `${node.name}: ${t.size} bytes at offset ${t.offset} of ${t.pool}, live from step ${t.first_step} to ${t.last_step} of ${response.main}`;
}
