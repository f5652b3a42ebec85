// The playground: an editor for TIR or a JSON graph, the target, and what the compiler
// (wasm, in a worker) made of it: diagnostics, every pass with a diff, the artifacts,
// the memory plan.
import { EditorState, Compartment } from '@codemirror/state';
import { EditorView, keymap, lineNumbers, highlightActiveLine } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { search, searchKeymap, highlightSelectionMatches } from '@codemirror/search';
import { json } from '@codemirror/lang-json';
import { indentUnit } from '@codemirror/language';
import { setDiagnostics, lintGutter } from '@codemirror/lint';
import { MergeView } from '@codemirror/merge';
import { tirLanguage } from './tir_language.js';
import { parseTarget, formatTarget, getOption, effectiveOption, refusal, withFormChange, TIR_DEFAULT, isTirDefault } from './target.js';
import { memoryChart } from './memory_chart.js';
import { themeExtensions, onThemeChange } from './theme.js';
import { outputCard } from './run_view.js';
import { parseNpy, sampleStrip } from './samples.js';
import { markedLines, markLines, hoverLines, outputLinesOf, sourceLinesOf, coreLineMap, modelLineMap } from './source_map.js';
import { modelGraph, costTable, tirFunction, generatedFunction, memoryPlace, formatCount, formatBytes, formatMs } from './model_view.js';
import { timingTable, timingSummary } from './timing_view.js';
import { workerClient } from './worker_client.js';
import { compressToEncodedURIComponent, decompressFromEncodedURIComponent } from 'lz-string';

const $ = (id) => document.getElementById(id);
// Read at each request, so a test can change it (and the spin hook) in a page that runs.
const timeoutMs = () => Number(new URLSearchParams(location.search).get('timeout_ms')) || 30000;
const C_INTERFACE = 'c -executor=aot -interface-api=c -unpacked-api=1';

const state = {
  kind: 'tir',          // 'tir' | 'graph'
  filename: 'input.tir',
  files: {},            // a graph's weight files: path -> base64
  response: null,       // the last compile's response (it may have failed)
  shown: null,          // the last successful response: what the panels show
  stale: false,         // the panels show an older compile than the source's
  selectedPass: -1,     // index into response.passes
  passView: 'ir',       // 'ir' | 'diff'
  diffBase: 'prev',     // 'prev' (the pass before), 'input' or a pass index
  artifact: null,       // path of the artifact shown
  example: null,        // the example the source came from (its files are refetched from a link)
  quantization: null,   // the shown graph's {name: {scale, zero_point}} (a TFLite model's inputs and outputs)
  linkDropsText: false, // the source is too large to be carried by the page's link
};

// ---- the whole state in the URL hash (lz-string), so a link reproduces the page ----
// The source text is compressed apart from the rest (`#s=STATE&t=TEXT`) and only when it
// changed: a model's graph with its weights inline (an .onnx's or .tflite's) is hundreds
// of kB, and clicking a pass or an artifact must not compress it again. A text too large
// for a URL (browsers stop near 2 MB) stays out of the link (Share says so).
const MAX_LINK_TEXT_CHARS = 1500000;
const hashText = { text: null, encoded: '' };
function saveToHash() {
  const s = { k: state.kind, f: state.filename, g: $('target').value,
    p: state.selectedPass, v: state.passView, d: state.diffBase, h: $('hide-unchanged').checked ? 1 : 0, a: state.artifact, x: state.example, dv: $('devices').value };
  const text = editor.state.doc.toString();
  if (text !== hashText.text) {
    hashText.text = text;
    hashText.encoded = compressToEncodedURIComponent(text);
  }
  state.linkDropsText = hashText.encoded.length > MAX_LINK_TEXT_CHARS;
  const t = state.linkDropsText ? '' : `&t=${hashText.encoded}`;
  window.history.replaceState(null, '', `${location.pathname}${location.search}#s=${compressToEncodedURIComponent(JSON.stringify(s))}${t}`);
}

// The state of a link: {k, f, t, g, ...}; `t` (the source text) from its own part, or from
// the state itself in links made before the two were apart.
function loadFromHash() {
  const m = /^#s=([^&]+)(?:&t=(.*))?$/.exec(location.hash);
  if (!m) return null;
  try {
    const saved = JSON.parse(decompressFromEncodedURIComponent(m[1]));
    if (m[2] !== undefined) saved.t = decompressFromEncodedURIComponent(m[2]);
    return saved;
  } catch (e) {
    return null;
  }
}

// ---- editors -------------------------------------------------------------------
const language = new Compartment();
const theme = new Compartment();
const editor = new EditorView({
  parent: $('editor'),
  state: EditorState.create({
    doc: '',
    extensions: [lineNumbers(), highlightActiveLine(), history(), lintGutter(),
      // Tab indents (Escape then Tab leaves the editor); Ctrl+F searches.
      keymap.of([{ key: 'Mod-Enter', run: () => { compile(); return true; } }, indentWithTab, ...searchKeymap, ...defaultKeymap, ...historyKeymap]),
      search({ top: true }), highlightSelectionMatches(), indentUnit.of('    '),  // TIR indents as Python does
      EditorView.contentAttributes.of({ 'aria-label': 'Source: a TIR program or a JSON model graph' }),
      markedLines, hoverLines((n) => mapFromSource(n)),
      theme.of(themeExtensions()), language.of(tirLanguage)],
  }),
});

function readOnlyExtensions(lang, label) {
  return [lineNumbers(), EditorState.readOnly.of(true), EditorView.editable.of(false), themeExtensions(), lang,
    EditorView.contentAttributes.of({ 'aria-label': label }), search({ top: true }), keymap.of(searchKeymap)];
}

// The system switching between light and dark: the editor now, the read-only views as
// they are redrawn.
onThemeChange(() => {
  editor.dispatch({ effects: theme.reconfigure(themeExtensions()) });
  if (state.shown) { showPasses(); showArtifacts(); }
});

function setSource(text, kind, filename, files = {}) {
  state.kind = kind;
  state.filename = filename;
  state.files = files;
  editor.dispatch({
    changes: { from: 0, to: editor.state.doc.length, insert: text },
    effects: language.reconfigure(kind === 'graph' ? json() : tirLanguage),
  });
  $('source-name').textContent = `${filename}${Object.keys(files).length ? ` + ${Object.keys(files).length} file(s)` : ''}`;
  // The last source's run (its outputs, its inputs) says nothing about this one.
  $('run-output').replaceChildren();
  $('run-inputs').value = '';
  targetToForm();  // the defaults depend on the kind of source
}

// ---- target string and its form ---------------------------------------------------
const formFields = [
  ['opt-kind', null], ['opt-interface', 'interface-api'], ['opt-unpacked', 'unpacked-api'],
  ['opt-link-params', 'link-params'], ['opt-align', 'workspace-byte-alignment'], ['opt-cpu', 'mcpu'],
];

// The form shows what the core will compile (or, after a compile, what it did compile):
// the options the text gives, else the core's defaults for this kind of source, and marks
// the choices the core refuses with its own message.
function targetToForm(text = $('target').value) {
  const t = parseTarget(text);
  for (const [id, key] of formFields) {
    const v = key ? effectiveOption(t, key, state.kind) : t.kind;
    if ($(id).tagName === 'INPUT' || [...$(id).options].some((o) => o.value === v)) $(id).value = v;
    if ($(id).tagName !== 'SELECT' || !key) continue;
    for (const o of $(id).options) {
      const why = refusal(t, key, o.value, state.kind);
      o.disabled = Boolean(why);
      o.title = why || '';
      o.textContent = why ? `${o.value} (refused)` : o.value;
    }
  }
}

function formToTarget(id) {
  const [, key] = formFields.find(([i]) => i === id);
  $('target').value = formatTarget(withFormChange(parseTarget($('target').value), key, $(id).value, state.kind));
  targetToForm();
}

for (const [id] of formFields) $(id).addEventListener('change', () => formToTarget(id));
$('target').addEventListener('input', () => targetToForm());
$('target').addEventListener('keydown', (e) => { if (e.key === 'Enter') compile(); });

// ---- the compiler worker (worker_client.js) ------------------------------------------
const { startWorker, stopWorker, runInWorker } = workerClient('worker.js', timeoutMs);
$('cancel').addEventListener('click', () => stopWorker('cancelled'));

// Each request to the worker has a number; only the newest one's answer (or failure)
// touches the status, the Cancel button and the panels, so a superseded compile's
// rejection cannot disable the Cancel of the compile that replaced it.
let requestSeq = 0;

// `wasm`: run with the wasm backend ({opt, timingRuns}; the compile's target becomes "wasm").
async function compile(run = null, wasm = null) {
  const seq = ++requestSeq;
  const request = {
    source: { kind: state.kind, text: editor.state.doc.toString(), filename: state.filename, files: state.files },
    target: wasm ? wasmTarget() : $('target').value,
    // The first artifact first: the pass IR texts and the archive follow in the background.
    return: { ir: false, artifacts: true, memory: true, tar: false },
  };
  const devices = $('devices').value.split(/\s+/).filter((d) => d.length > 0);
  if (devices.length > 0) request.devices = devices;
  if (run) request.run = run;
  setStatus('compiling…', 'busy');
  $('cancel').disabled = false;
  const started = performance.now();
  try {
    const { response, version } = await runInWorker({ request, wasm }, run ? 'run' : 'compile');
    if (seq !== requestSeq) return;
    $('version').textContent = `microtir ${version}`;
    const ms = performance.now() - started;
    showResponse(response, request);
    setStatus(response.ok ? `compiled in ${ms.toFixed(0)} ms (core ${response.timings_ms.total.toFixed(0)} ms)`
      : `${response.diagnostics.length} error(s)`, response.ok ? 'ok' : 'error');
    if (response.ok) await fetchDetails(response);
  } catch (e) {
    if (seq !== requestSeq) return;
    setStatus(e.message, 'error');
    markStale(e.message);
    if (run) showRunError(`no run: ${e.message}`);
  } finally {
    if (seq === requestSeq) $('cancel').disabled = true;
  }
}
$('compile').addEventListener('click', () => compile());

// The pass IR texts and the archive the compile deferred, from the core's kept compile,
// while the page already shows the artifacts. A newer compile or Cancel stops the worker,
// and with it this; the passes then say why their texts are missing.
let detailsSeq = 0;  // the newest fetch marks the page done (an import may supersede one)
async function fetchDetails(r) {
  const mine = ++detailsSeq;
  document.body.dataset.details = 'pending';
  try {
    const detailsSpinMs = Number(new URLSearchParams(location.search).get('debug_details_ms')) || 0;  // test hook
    const { response: d } = await runInWorker({ details: { ir: true, tar: true }, detailsSpinMs }, 'pass IR texts');
    if (!d.ok) throw new Error(d.diagnostics.map((x) => x.message).join('; '));
    r.input_ir = d.input_ir;
    d.passes.forEach((p, i) => { r.passes[i].ir = p.ir; });
    r.tar = d.tar;
    r.timing.rows.push(...d.timing.rows);
  } catch (e) {
    r.detailsError = e.message;
  } finally {
    if (state.shown === r) {
      showPasses();
      showDownloads();
      showTiming(r);
      if (r.model) showNodeDetail();
    }
    if (mine === detailsSeq) document.body.dataset.details = 'done';
  }
}

// An IR text, or what stands in for it while it is produced (or after it was not).
function irText(r, ir) {
  return ir !== undefined ? ir : r.detailsError ? `; the IR text was not produced: ${r.detailsError}. Compile again to see it.` : '; the IR text is being produced…';
}

// Run: compile, then execute the module (a model's main) in the reference interpreter;
// with the wasm backend chosen, also as a WebAssembly module assembled in the page.
const WASM_TIMING_RUNS = 20;
$('run').addEventListener('click', () => {
  let inputs = {};
  const text = $('run-inputs').value.trim();
  if (text) {
    try { inputs = JSON.parse(text); } catch (e) { showRunError(`inputs: ${e.message}`); return; }
  }
  const run = { inputs, seed: Number($('run-seed').value) || 1 };
  if ($('run-backend').value !== 'wasm') return compile(run);
  if (state.kind !== 'graph') {
    showRunError('the wasm backend runs models (a JSON graph, ONNX or TFLite); a TIR program runs in the interpreter');
    return;
  }
  compile(run, { opt: getOption(parseTarget(wasmTarget()), 'opt', 'O2'), timingRuns: WASM_TIMING_RUNS });
});

// Run inputs from .npy files, as the CLI's `--input NAME=FILE.npy`: a file named after an
// input (input_1.npy) goes to it, a model with one input takes any one file. Its shape and
// dtype must be the input's (a model's inputs, or a TIR function's from its last run; before
// that the file's name is the buffer's); the values join the inputs box and the module runs.
function knownInputs() {
  const r = state.shown;
  if (r && r.model) return r.model.inputs;
  return r && r.run && r.run.ok ? r.run.buffers.filter((b) => b.role !== 'output') : [];
}

async function runOnNpy(files) {
  const inputs = knownInputs();
  let given = {};
  try { given = JSON.parse($('run-inputs').value.trim() || '{}'); } catch (e) { given = {}; }
  try {
    for (const f of files) {
      let a;
      try { a = parseNpy(await f.arrayBuffer()); } catch (e) { throw new Error(`${f.name}: ${e.message}`); }
      const base = f.name.replace(/\.npy$/i, '');
      if (!inputs.length) {  // not known before a run (a TIR program): the core checks the name and size
        given[base] = a.values;
        continue;
      }
      const input = inputs.find((i) => i.name === base || i.identifier === base) || (inputs.length === 1 && files.length === 1 ? inputs[0] : null);
      if (!input) {
        throw new Error(`${f.name}: no input is named '${base}'${inputs.length ? ` (the inputs: ${inputs.map((i) => i.name).join(', ')})` : ''}; name the file after the input it fills`);
      }
      const count = (s) => s.reduce((x, d) => x * d, 1);
      if (count(a.shape) !== count(input.shape) || a.dtype !== input.dtype) {
        throw new Error(`${f.name} is ${a.dtype}[${a.shape.join(', ')}], the input '${input.name}' is ${input.dtype}[${input.shape.join(', ')}]`);
      }
      given[input.name] = a.values;
    }
  } catch (e) {
    showRunError(`inputs: ${e.message}`);
    return;
  }
  $('run-inputs').value = JSON.stringify(given);
  state.pickedSample = null;
  $('run').click();
}
$('run-npy').addEventListener('change', () => {
  const files = [...$('run-npy').files];
  $('run-npy').value = '';  // the same file chosen again runs again
  if (files.length) runOnNpy(files);
});
const runBox = $('run-box');
runBox.addEventListener('dragover', (e) => { e.preventDefault(); runBox.classList.add('dropping'); });
runBox.addEventListener('dragleave', () => runBox.classList.remove('dropping'));
runBox.addEventListener('drop', (e) => {
  e.preventDefault();
  runBox.classList.remove('dropping');
  const files = e.dataTransfer ? [...e.dataTransfer.files].filter((f) => /\.npy$/i.test(f.name)) : [];
  if (files.length) runOnNpy(files);
});

// The target of a wasm run: the target box's when it is a wasm target (its -opt), else "wasm".
function wasmTarget() {
  const t = parseTarget($('target').value);
  return t.kind === 'wasm' ? $('target').value : 'wasm';
}

function showRunError(message) {
  const p = document.createElement('p');
  p.className = 'run-error';
  p.textContent = message;
  $('run-output').replaceChildren(p);
}

function formatValues(b) {
  const shown = b.values.slice(0, 32).map((v) => (Number.isInteger(v) ? String(v) : v.toPrecision(6)));
  return `[${shown.join(', ')}${b.values.length > 32 || b.truncated ? ', …' : ''}]`;
}

// `asked`: the run's request ({inputs}), whose names that no buffer has are pointed out
// (the core ignores them, so the run used seeded values instead).
function showRun(run, asked = null) {
  if (!run) return;
  if (!run.ok) {
    showRunError(run.diagnostics.map((d) => `${d.line > 0 ? `${d.line}:${d.col}: ` : ''}${d.message}`).join('\n'));
    return;
  }
  const table = document.createElement('table');
  table.innerHTML = '<tr><th>buffer</th><th>role</th><th>type</th><th>values (row-major)</th></tr>';
  for (const b of run.buffers) {
    const tr = document.createElement('tr');
    tr.className = `run-buffer ${b.role}`;
    const role = b.filled ? `${b.role} (started ${b.filled})` : b.role;
    for (const cell of [b.name, role, `${b.dtype}[${b.shape.join(', ')}]`, formatValues(b)]) {
      const td = document.createElement('td');
      td.textContent = cell;
      tr.append(td);
    }
    table.append(tr);
  }
  const caption = document.createElement('p');
  const interpMs = state.shown && state.shown.timings_ms.run;
  caption.textContent = `${run.function} ran in the reference interpreter${interpMs !== undefined ? ` (${interpMs.toFixed(1)} ms)` : ''}`;
  const cards = document.createElement('div');
  cards.className = 'output-cards';
  cards.append(...run.buffers.filter((b) => b.role === 'output').map((b) => outputCard(b, (state.quantization || {})[b.name])));
  const scroll = document.createElement('div');
  scroll.className = 'table-scroll';
  scroll.append(table);
  const parts = [caption];
  const unused = Object.keys((asked && asked.inputs) || {}).filter((n) => !run.buffers.some((b) => b.name === n));
  if (unused.length) {
    const p = document.createElement('p');
    p.className = 'run-warning';
    p.textContent = `inputs given for no buffer of ${run.function}: ${unused.join(', ')} (its buffers: ${run.buffers.map((b) => b.name).join(', ')}); they were not used`;
    parts.push(p);
  }
  // A test image run: its label against the model's top class.
  const picked = state.pickedSample;
  const probs = run.buffers.find((b) => b.role === 'output');
  if (picked && run.buffers.some((b) => b.name === picked.input && b.role === 'given') && probs) {
    const top = probs.values.indexOf(Math.max(...probs.values));
    const p = document.createElement('p');
    p.className = `sample-result${picked.label === undefined ? '' : picked.label === top ? ' right' : ' wrong'}`;
    p.textContent = `test image ${picked.index}${picked.label !== undefined ? ` (label ${picked.label})` : ''}: predicted ${top}` +
      (picked.label === undefined ? '' : picked.label === top ? ', right' : ', wrong');
    parts.push(p);
  }
  $('run-output').replaceChildren(...parts, cards, scroll);
  if (run.wasm) showWasmRun(run, interpMs);
}

// The wasm backend's outputs beside the interpreter's: time per inference, equality.
function showWasmRun(run, interpMs) {
  const w = run.wasm;
  const box = document.createElement('div');
  box.id = 'wasm-run';
  if (w.error) {
    box.className = 'run-error';
    box.textContent = `wasm (Binaryen): ${w.error}`;
    $('run-output').append(box);
    return;
  }
  let maxDiff = 0;
  let equal = true;
  for (const o of w.outputs) {
    const ref = run.buffers.find((b) => b.role === 'output' && b.name === o.name);
    o.values.forEach((v, i) => {
      if (!Object.is(v, ref.values[i]) && !(Number.isNaN(v) && Number.isNaN(ref.values[i]))) equal = false;
      maxDiff = Math.max(maxDiff, Math.abs(v - ref.values[i]));
    });
  }
  box.dataset.equal = equal ? '1' : '0';
  const p = document.createElement('p');
  p.className = 'wasm-timing';
  p.textContent = `wasm (Binaryen -${w.opt}, ${w.binaryBytes} bytes): ${(w.timeMs * 1000).toFixed(1)} µs per inference ` +
    `(mean of ${w.runs})${interpMs !== undefined ? ` vs the interpreter's ${interpMs.toFixed(1)} ms` : ''}; ` +
    (equal ? 'outputs equal the interpreter\'s bit for bit' : `outputs differ from the interpreter's by up to ${maxDiff.toPrecision(3)}`) +
    ` · Binaryen loaded in ${w.loadMs.toFixed(0)} ms, assembled in ${w.assembleMs.toFixed(0)} ms`;
  const table = document.createElement('table');
  table.innerHTML = '<tr><th>buffer</th><th>backend</th><th>type</th><th>values (row-major)</th></tr>';
  for (const o of w.outputs) {
    const tr = document.createElement('tr');
    tr.className = 'wasm-buffer output';
    for (const cell of [o.name, 'wasm', `${o.dtype}[${o.shape.join(', ')}]`, formatValues(o)]) {
      const td = document.createElement('td');
      td.textContent = cell;
      tr.append(td);
    }
    table.append(tr);
  }
  const scroll = document.createElement('div');
  scroll.className = 'table-scroll';
  scroll.append(table);
  box.append(p, scroll);
  $('run-output').append(box);
}

function setStatus(text, cls) {
  $('status').textContent = text;
  $('status').className = cls;
}

// ---- results --------------------------------------------------------------------
// A failed compile leaves the last good results on screen, marked as out of date (or says
// there are none), and the downloads off: they would not be the source's.
function showResponse(r, request) {
  state.response = r;
  showDiagnostics(r.diagnostics);
  if (!r.ok) {
    markStale(`the last compile failed with ${r.diagnostics.length} error(s)`);
    saveToHash();  // a link reproduces the broken source too
    if (request.run) showRunError('no run: the compile failed (see the diagnostics)');
    else $('run-output').replaceChildren();
    return;
  }
  state.shown = r;
  state.quantization = graphQuantization(request.source);
  state.shownAt = new Date().toLocaleTimeString();
  markStale(null);
  if (state.selectedPass < 0) state.selectedPass = Math.max(r.passes.findIndex((p) => p.changed), 0);
  state.selectedPass = Math.min(state.selectedPass, r.passes.length - 1);
  // The target actually compiled: the core's canonical string, and the form from it (when
  // the box still holds what was compiled; a wasm Run compiles its own target).
  $('target-used').textContent = `compiled as: ${r.target}`;
  if (request.target === $('target').value) targetToForm(r.target);
  showModel();
  showPasses();
  showArtifacts();
  showMemory();
  showRun(r.run, request.run);
  saveToHash();
  showTiming(r);
}

// The timer's table beside the status (timing_view.js), and the core's phases.
function showTiming(r) {
  $('timings').textContent = Object.entries(r.timings_ms).map(([k, v]) => `${k} ${v.toFixed(1)} ms`).join(' · ');
  $('timing').hidden = !r.timing;
  if (!r.timing) return;
  $('timing-summary').textContent = timingSummary(r.timing);
  $('timing-table').replaceChildren(timingTable(r.timing));
}

// A graph's `quantization` (scale and zero point of its int8 inputs and outputs, as the
// TFLite frontend records them), for the Run view's real values.
function graphQuantization(source) {
  if (source.kind !== 'graph' || !source.text.includes('"quantization"')) return null;
  try { return JSON.parse(source.text).quantization || null; } catch (e) { return null; }
}

function markStale(reason) {
  state.stale = Boolean(reason);
  $('result-pane').classList.toggle('stale', state.stale);
  const note = $('stale-note');
  note.hidden = !reason;
  note.textContent = !reason ? ''
    : state.shown ? `Out of date: ${reason}. The passes, artifacts and memory plan below are from the last successful compile (${state.shownAt}); downloads are off until the source compiles.`
      : `No results: ${reason}.`;
  state.staleReason = reason;
  showDownloads();
  if (reason) {  // the marks of a source <-> output hover would now be wrong
    markLines(editor, [], false);
    if (state.artifactView) markLines(state.artifactView, [], false);
  }
}

// The download buttons: off while the panels are out of date (with the reason), and the
// .tar named for what it holds: a model's Model Library Format, or a TIR program's sources.
function showDownloads() {
  const r = state.shown;
  $('download-tar').textContent = r && !r.metadata ? 'Download .tar' : 'Download MLF .tar';
  for (const b of ['download-file', 'download-tar']) {
    $(b).disabled = state.stale || !r;
    $(b).title = state.stale ? `nothing to download: ${state.staleReason}` : '';
  }
  if (r && !r.tar && !state.stale) {  // the archive follows the artifacts (fetchDetails)
    $('download-tar').disabled = true;
    $('download-tar').title = r.detailsError ? `the archive was not made: ${r.detailsError}; compile again` : 'the archive is being made…';
  }
  if (r && !r.metadata && !state.stale) $('download-tar').title = 'a TIR program has no model: the .tar holds the generated sources (no metadata.json or model header)';
}

function offsetOf(doc, line, col) {
  if (line < 1 || line > doc.lines) return null;
  const l = doc.line(line);
  return Math.min(l.from + Math.max(col - 1, 0), l.to);
}

function showDiagnostics(diags) {
  const list = $('diagnostics');
  list.replaceChildren();
  const doc = editor.state.doc;
  const marks = [];
  for (const d of diags) {
    const li = document.createElement('li');
    li.className = `diagnostic ${d.severity.replace(/\s/g, '-')}`;
    const where = d.line > 0 ? `${d.file || state.filename}:${d.line}:${d.col}: ` : '';
    li.textContent = `${where}${d.severity}: ${d.message}${d.notes && d.notes.length ? ` (${d.notes.join('; ')})` : ''}`;
    const at = d.line > 0 && (!d.file || d.file === state.filename) ? offsetOf(doc, d.line, d.col) : null;
    if (at !== null) {
      const end = Math.min(doc.lineAt(at).to, at + 1) > at ? at + 1 : at;
      marks.push({ from: at, to: end, severity: d.severity === 'warning' ? 'warning' : 'error', message: d.message });
      li.classList.add('located');
      li.addEventListener('click', () => {
        editor.dispatch({ selection: { anchor: at }, scrollIntoView: true });
        editor.focus();
      });
    }
    list.append(li);
  }
  editor.dispatch(setDiagnostics(editor.state, marks));
}

function showPasses() {
  const r = state.shown;
  if (!r) return;
  const list = $('passes');
  const hadFocus = list.contains(document.activeElement);
  list.replaceChildren();
  const hide = $('hide-unchanged').checked;
  const input = { name: 'input', changed: true, ir: irText(r, r.input_ir) };
  r.passes.forEach((p, i) => {
    if (hide && !p.changed && i !== state.selectedPass) return;
    const li = document.createElement('li');
    li.className = `pass${p.changed ? ' changed' : ' unchanged'}${i === state.selectedPass ? ' selected' : ''}`;
    li.dataset.index = String(i);
    li.textContent = `${i + 1}. ${p.name}${p.changed ? '' : ' (unchanged)'}`;
    li.setAttribute('role', 'option');
    li.setAttribute('aria-selected', String(i === state.selectedPass));
    li.tabIndex = i === state.selectedPass ? 0 : -1;  // one tab stop; the arrows move within
    li.addEventListener('click', () => selectPass(i));
    list.append(li);
  });
  if (hadFocus) { const sel = list.querySelector('.pass.selected'); if (sel) sel.focus(); }
  const cur = r.passes[state.selectedPass];
  const base = $('diff-base');
  base.replaceChildren(new Option('the pass before', 'prev'), new Option('0. input', 'input'),
    ...r.passes.map((p, i) => new Option(`${i + 1}. ${p.name}`, String(i))));
  if (state.diffBase !== 'prev' && state.diffBase !== 'input' && !(Number(state.diffBase) < r.passes.length)) state.diffBase = 'prev';
  base.value = state.diffBase;
  const prev = state.diffBase === 'input' ? input
    : state.diffBase !== 'prev' ? r.passes[Number(state.diffBase)]
      : state.selectedPass > 0 ? r.passes[state.selectedPass - 1] : input;
  const view = $('pass-view');
  view.replaceChildren();
  $('pass-title').textContent = state.passView === 'diff'
    ? `${prev.name} → ${cur.name}${cur.changed ? '' : ' (no change)'}` : `after ${cur.name}`;
  if (state.passView === 'diff') {
    const lang = tirLanguage;
    new MergeView({
      // Wrapped, so a long line's change is seen without scrolling each side.
      a: { doc: irText(r, prev.ir), extensions: [readOnlyExtensions(lang, `IR after ${prev.name}`), EditorView.lineWrapping] },
      b: { doc: irText(r, cur.ir), extensions: [readOnlyExtensions(lang, `IR after ${cur.name}`), EditorView.lineWrapping] },
      parent: view,
      collapseUnchanged: { margin: 3, minSize: 6 },
    });
  } else {
    new EditorView({ parent: view, state: EditorState.create({ doc: irText(r, cur.ir), extensions: readOnlyExtensions(tirLanguage, `IR after ${cur.name}`) }) });
  }
  for (const b of ['show-ir', 'show-diff']) $(b).classList.toggle('active', b === `show-${state.passView}`);
}

function selectPass(i) {
  state.selectedPass = i;
  showPasses();
  saveToHash();
}

// The pass list is a listbox: Up/Down (Home/End) move the selection among the shown passes.
$('passes').addEventListener('keydown', (e) => {
  const shown = [...$('passes').querySelectorAll('.pass')].map((li) => Number(li.dataset.index));
  const at = shown.indexOf(state.selectedPass);
  const to = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: shown.length - 1 }[e.key];
  if (to === undefined || !state.shown) return;
  e.preventDefault();
  if (to >= 0 && to < shown.length) selectPass(shown[to]);
});

function redrawPasses() {
  if (state.shown) { showPasses(); saveToHash(); }
}
$('hide-unchanged').addEventListener('change', redrawPasses);
$('show-ir').addEventListener('click', () => { state.passView = 'ir'; redrawPasses(); });
$('diff-base').addEventListener('change', () => {
  state.diffBase = $('diff-base').value;
  state.passView = 'diff';
  redrawPasses();
});
$('show-diff').addEventListener('click', () => { state.passView = 'diff'; redrawPasses(); });

function artifactBytes(a) {
  if (a.text !== undefined) return new TextEncoder().encode(a.text);
  return Uint8Array.from(atob(a.base64), (c) => c.charCodeAt(0));
}

function download(name, bytes, type = 'application/octet-stream') {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function showArtifacts() {
  const r = state.shown;
  if (!r) return;
  const tabs = $('artifact-tabs');
  tabs.replaceChildren();
  const shown = r.artifacts.filter((a) => (a.text !== undefined || a.path.endsWith('.wasm')) && !a.path.startsWith('runtime/'));
  if (!shown.some((a) => a.path === state.artifact)) state.artifact = shown.length ? shown[0].path : null;
  for (const a of shown) {
    const b = document.createElement('button');
    // With the folder: host and device kernels are all lib0.c (codegen/host/, codegen/npu0/).
    b.textContent = a.path.replace(/^codegen\//, '');
    b.title = a.path;
    b.className = `artifact-tab${a.path === state.artifact ? ' active' : ''}`;
    b.dataset.path = a.path;
    b.addEventListener('click', () => { state.artifact = a.path; showArtifacts(); saveToHash(); });
    tabs.append(b);
  }
  const view = $('artifact-view');
  view.replaceChildren();
  const cur = shown.find((a) => a.path === state.artifact);
  if (cur) {
    const lang = cur.path.endsWith('.json') ? json() : [];
    const doc = cur.text !== undefined ? cur.text
      : `${cur.path}: ${cur.bytes} bytes of WebAssembly, assembled in the page by Binaryen (npm) from the core's .wat; "Download file" saves it.`;
    state.artifactView = new EditorView({ parent: view, state: EditorState.create({ doc, extensions: [readOnlyExtensions(lang, cur.path), markedLines, hoverLines((n) => mapFromOutput(n))] }) });
  } else {
    state.artifactView = null;
  }
  showDownloads();
  $('artifact-count').textContent = `${r.artifacts.length} files (${r.artifacts.length - shown.length} runtime/binary files in the .tar only)`;
}
$('download-file').addEventListener('click', () => {
  const a = state.shown && state.shown.artifacts.find((x) => x.path === state.artifact);
  if (a) download(a.path.split('/').pop(), artifactBytes(a), a.text !== undefined ? 'text/plain' : 'application/wasm');
});
$('download-tar').addEventListener('click', () => {
  const r = state.shown;
  if (r && r.tar) download(`${(r.metadata && r.metadata.model_name) || 'module'}.tar`, artifactBytes({ base64: r.tar }), 'application/x-tar');
});

function showMemory() {
  const r = state.shown;
  const box = $('memory');
  box.replaceChildren();
  if (!r.memory || !r.memory.length) {
    box.textContent = 'No memory plan: this module has no intermediate tensors to place (a model has).';
    return;
  }
  const plans = [...r.memory].sort((a, b) => (b.function === r.main) - (a.function === r.main) || b.pool_bytes - a.pool_bytes);
  for (const plan of plans) {
    const h = document.createElement('h3');
    h.textContent = `${plan.function}: pool ${plan.pool_bytes} bytes, lower bound ${plan.lower_bound} bytes` +
      ` (${plan.tensors.length} tensors, ${plan.planner}, alignment ${plan.alignment})`;
    box.append(h, memoryChart(plan));
  }
}

// ---- source <-> output: which output lines each source line became ------------------
// Only while the panels show the source's own compile (not out of date): for a TIR
// program the core's map of its C, for a model every generated file (kernels against the
// graph's nodes). Built once per shown file.
function currentMap() {
  const r = state.shown;
  if (!r || state.stale || !state.artifactView) return null;
  const key = `${state.artifact}\n${r.target}`;
  if (state.lineMap && state.lineMap.response === r && state.lineMap.key === key) return state.lineMap.map;
  let map = null;
  if (r.model) {
    const a = r.artifacts.find((x) => x.path === state.artifact);
    if (a && a.text !== undefined) map = modelLineMap(editor.state.doc.toString(), r.model, a.path, a.text);
  } else if (r.source_map && r.source_map[state.artifact]) map = coreLineMap(r.source_map[state.artifact]);
  state.lineMap = { response: r, key, map };
  return map;
}

function mapFromSource(n) {
  const map = currentMap();
  if (!map) return;
  const out = n === null ? [] : outputLinesOf(map, n);
  markLines(editor, out.length ? map[out[0] - 1] : [], false);
  markLines(state.artifactView, out, true);
}

function mapFromOutput(n) {
  const map = currentMap();
  if (!map) return;
  const src = n === null ? [] : sourceLinesOf(map, n);
  markLines(editor, src, true);
  markLines(state.artifactView, src.length ? outputLinesOf(map, src[0]) : [], false);
}

// ---- the model view (graph, ONNX and TFLite models) ----------------------------------------
function showModel() {
  const r = state.shown;
  const m = r && r.model;
  $('model-box').hidden = !m;
  if (!m) return;
  if (state.selectedNode && !m.nodes.some((n) => n.name === state.selectedNode)) state.selectedNode = null;
  const acts = Math.max(...m.nodes.map((n) => n.activation_bytes));
  $('model-summary').textContent = `${m.name}: ${m.nodes.length} layers · ${formatCount(m.macs)} MACs · weights ${formatBytes(m.weight_bytes)} · largest activation ${formatBytes(acts)}`;
  $('model-graph').replaceChildren(modelGraph(m, selectNode, state.selectedNode));
  $('model-costs').replaceChildren(costTable(m, selectNode, state.selectedNode, wasmLayers(r)));
  showNodeDetail();
}

// The per-layer times of the shown wasm run, if there was one.
function wasmLayers(r) {
  const w = r && r.run && r.run.wasm;
  return w && !w.error ? w.layers : null;
}

function selectNode(n) {
  state.selectedNode = n.name;
  for (const e of document.querySelectorAll('#model-box [data-name]')) e.classList.toggle('selected', e.dataset.name === n.name);
  showNodeDetail();
}

// The chosen layer: its facts, its kernel as TIR (the lowering's input) and as the
// generated C or LLVM IR, and where its output lives in the memory plan.
function showNodeDetail() {
  const r = state.shown;
  const n = r.model.nodes.find((x) => x.name === state.selectedNode);
  const box = $('model-detail');
  if (!n) return;
  const h = document.createElement('h4');
  h.textContent = `${n.name} (${n.op})${n.device ? ` on ${n.device}` : ''}`;
  const facts = document.createElement('p');
  facts.className = 'node-facts';
  const timed = (wasmLayers(r) || []).find((l) => l.kernel === n.kernel);
  facts.textContent = `output ${n.dtype}[${n.shape.join(', ')}] · ${n.macs} MACs · weights ${n.weight_bytes} B · activation ${n.activation_bytes} B · inputs ${n.inputs.join(', ')}` +
    (timed ? ` · ${formatMs(timed.ms)} per inference in the last wasm run (kernel ${n.kernel})` : '');
  const place = document.createElement('p');
  place.className = 'node-memory';
  place.textContent = memoryPlace(r, n);
  const parts = [h, facts, place];
  const fused = r.model.nodes.filter((x) => x.kernel === n.kernel).map((x) => x.name);
  const code = (title, text, cls) => {
    const t = document.createElement('h5');
    t.textContent = title;
    const pre = document.createElement('pre');
    pre.className = cls;
    pre.textContent = text;
    parts.push(t, pre);
  };
  // A view (reshape, flatten) runs no kernel: its output is its input's memory.
  if (!n.kernel) {
    const view = document.createElement('p');
    view.className = 'node-view';
    view.textContent = `${n.name} runs no kernel: its output is a view of ${n.inputs[0]}'s memory under the new shape`;
    box.replaceChildren(...parts, view);
    return;
  }
  const tir = r.input_ir === undefined ? irText(r, undefined) : tirFunction(r.input_ir, n.kernel);
  code(`kernel ${n.kernel}${fused.length > 1 ? ` (fused: ${fused.join(' + ')})` : ''}: TIR`, tir || 'not in the printed module', 'node-tir');
  const gen = generatedFunction(r.artifacts || [], n.kernel);
  if (gen) code(`${gen.path}`, gen.text, 'node-generated');
  box.replaceChildren(...parts);
}

// ---- Share: the link of this page, copied ---------------------------------------------
// Past this many characters some chat apps and servers cut a link.
const LINK_WARN_CHARS = 8000;
$('share').addEventListener('click', async () => {
  saveToHash();
  const url = location.href;
  const notes = [];
  const own = Object.keys(state.files).length;
  if (!state.example && own) notes.push(`the link carries the graph's text, not its ${own} weight file(s): send those too`);
  if (state.linkDropsText) notes.push('the source is too large for a link: the link does not carry it');
  if (url.length > LINK_WARN_CHARS) notes.push(`the link is ${Math.round(url.length / 1000)} k characters, too long for some chat apps and servers`);
  let copied = false;
  try {
    await navigator.clipboard.writeText(url);
    copied = true;
  } catch (e) {
    notes.push('the browser did not allow copying: copy the address bar');
  }
  $('share-note').textContent = `${copied ? `link copied (${url.length} characters)` : 'link not copied'}${notes.length ? `; ${notes.join('; ')}` : ''}`;
  $('share-note').className = notes.length ? 'warn' : '';
});

// A first visit gets a short "what is this / try this" strip, until dismissed.
const INTRO_KEY = 'microtir-playground-intro-seen';
try { $('intro').hidden = localStorage.getItem(INTRO_KEY) === '1'; } catch (e) { $('intro').hidden = false; }
$('intro-close').addEventListener('click', () => {
  $('intro').hidden = true;
  try { localStorage.setItem(INTRO_KEY, '1'); } catch (e) { /* private mode: shown again next time */ }
});

// ---- the splitter between the source and the results (wide windows; narrow ones stack)
const splitter = $('splitter');
function setSplit(percent) {
  const p = Math.min(80, Math.max(20, percent));
  document.querySelector('main').style.setProperty('--split', `${p}%`);
  splitter.setAttribute('aria-valuenow', String(Math.round(p)));
}
splitter.addEventListener('pointerdown', (e) => {
  e.preventDefault();
  splitter.setPointerCapture(e.pointerId);
  const main = document.querySelector('main').getBoundingClientRect();
  const move = (m) => setSplit(((m.clientX - main.left) / main.width) * 100);
  const up = () => { splitter.removeEventListener('pointermove', move); splitter.removeEventListener('pointerup', up); };
  splitter.addEventListener('pointermove', move);
  splitter.addEventListener('pointerup', up);
});
splitter.addEventListener('keydown', (e) => {
  const step = { ArrowLeft: -5, ArrowRight: 5 }[e.key];
  if (step === undefined) return;
  e.preventDefault();
  setSplit(Number(splitter.getAttribute('aria-valuenow')) + step);
});

// ---- sources: examples and files ---------------------------------------------------
function toBase64(buffer) {
  const bytes = new Uint8Array(buffer);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

let examples = [];
async function exampleFiles(ex) {
  const files = {};
  for (const f of ex.files || []) files[f] = toBase64(await (await fetch(`examples/${ex.dir}/${f}`)).arrayBuffer());
  return files;
}

async function loadExample(name) {
  const ex = examples.find((e) => e.name === name);
  if (!ex) return;
  if (ex.kind === 'onnx' || ex.kind === 'tflite') {
    $('target').value = ex.target;
    targetToForm();
    return openModel(await (await fetch(`examples/${ex.path}`)).arrayBuffer(), ex.path.split('/').pop(), ex.name);
  }
  const text = await (await fetch(`examples/${ex.path}`)).text();
  setSource(text, ex.kind, ex.path.split('/').pop(), await exampleFiles(ex));
  setExample(ex.name);
  state.selectedPass = -1;
  if (ex.target) { $('target').value = ex.target; targetToForm(); }
  await compile();
}
$('examples').addEventListener('change', () => loadExample($('examples').value));

// The menu names the example the source came from, or says it is the user's own.
function setExample(name) {
  state.example = name;
  $('examples').value = name || '';
  showSamples(examples.find((e) => e.name === name));
}

// The example's bundled samples (digits: its test images) as pictures that run the model.
const SAMPLES_SHOWN = 16;
const npyCache = new Map();
async function fetchNpy(path) {
  if (!npyCache.has(path)) npyCache.set(path, fetch(`examples/${path}`).then((r) => r.arrayBuffer()).then(parseNpy));
  return npyCache.get(path);
}

async function showSamples(ex) {
  state.pickedSample = null;
  $('samples').replaceChildren();
  if (!ex || !ex.samples) return;
  const [images, labels] = await Promise.all([fetchNpy(ex.samples.images), ex.samples.labels ? fetchNpy(ex.samples.labels) : null]);
  if (state.example !== ex.name) return;  // another source came meanwhile
  const title = document.createElement('p');
  title.className = 'samples-title';
  title.textContent = `Inputs from the model's test images (${images.shape[0]}; the first ${Math.min(SAMPLES_SHOWN, images.shape[0])}, with their labels): click one to run it`;
  $('samples').replaceChildren(title, sampleStrip(images, labels, SAMPLES_SHOWN, (i, values, label) => {
    $('run-inputs').value = JSON.stringify({ [ex.samples.input]: values });
    state.pickedSample = { index: i, label, input: ex.samples.input };
    $('run').click();
  }));
}
$('run-inputs').addEventListener('input', () => { state.pickedSample = null; });

// A model file the worker turns into a JSON graph, which then compiles like any graph:
// an .onnx model with onnx_import.js (the native frontend's rules), a .tflite model with
// the core's own TFLite frontend (mtir_import_tflite, the C++ of `microtir import`).
const MODEL_FORMATS = [
  { ext: '.onnx', key: 'onnx', label: 'ONNX' },
  { ext: '.tflite', key: 'tflite', label: 'TFLite' },
];
const modelFormatOf = (name) => MODEL_FORMATS.find((f) => name.toLowerCase().endsWith(f.ext));

async function openModel(bytes, name, example = null) {
  const format = modelFormatOf(name);
  const seq = ++requestSeq;
  setStatus(`importing the ${format.label} model…`, 'busy');
  $('cancel').disabled = false;
  let result;
  try {
    result = await runInWorker({ [format.key]: bytes, filename: name }, `${format.label} import`);
  } catch (e) {
    if (seq !== requestSeq) return;
    $('cancel').disabled = true;
    return setStatus(e.message, 'error');
  }
  if (seq !== requestSeq) return;
  $('cancel').disabled = true;
  if (result.importError) {
    showDiagnostics([{ severity: 'error', message: result.importError, line: 0, col: 0, file: name }]);
    return setStatus(`import error: ${name} was not converted`, 'error');
  }
  if (isTirDefault($('target').value)) { $('target').value = C_INTERFACE; targetToForm(); }
  const graphName = `${name.slice(0, name.length - format.ext.length)}.json`;
  setSource(result.graph, 'graph', graphName);
  $('source-name').textContent = `${graphName} (from ${name})`;
  setExample(example);
  state.selectedPass = -1;
  await compile();
}

// The files chosen with Open… or dropped on the editor: a .tir, a .json graph with its
// weight files, an .onnx or a .tflite model.
async function openFiles(chosen) {
  const model = chosen.find((f) => modelFormatOf(f.name));
  if (model) return openModel(await model.arrayBuffer(), model.name);
  const main = chosen.find((f) => f.name.endsWith('.tir')) || chosen.find((f) => f.name.endsWith('.json'));
  if (!main) return setStatus('choose a .tir file, an .onnx or .tflite model, or a .json graph with its .npy files', 'error');
  const files = {};
  const graph = main.name.endsWith('.json');
  const text = await main.text();
  if (graph) {
    // The graph names its files with paths; the user picked files by base name.
    let wanted = [];
    try { wanted = (JSON.parse(text).constants || []).flatMap((c) => [c.file, c.blob]).filter((f) => typeof f === 'string'); } catch (e) { /* the compiler reports it */ }
    for (const f of chosen) {
      if (f === main) continue;
      const path = wanted.find((w) => w === f.name || w.endsWith(`/${f.name}`)) || f.name;
      files[path] = toBase64(await f.arrayBuffer());
    }
    if (isTirDefault($('target').value)) { $('target').value = C_INTERFACE; targetToForm(); }
  }
  setSource(text, graph ? 'graph' : 'tir', main.name, files);
  setExample(null);  // a link then carries the text; a graph's own files do not fit in it
  state.selectedPass = -1;
  await compile();
}
$('load').addEventListener('change', () => openFiles([...$('load').files]));

// The editor is also a drop zone for the same files.
const dropZone = $('source-pane');
dropZone.addEventListener('dragover', (e) => { e.preventDefault(); dropZone.classList.add('dropping'); });
dropZone.addEventListener('dragleave', () => dropZone.classList.remove('dropping'));
dropZone.addEventListener('drop', (e) => {
  e.preventDefault();
  dropZone.classList.remove('dropping');
  if (e.dataTransfer && e.dataTransfer.files.length) openFiles([...e.dataTransfer.files]);
});

async function init() {
  startWorker();
  examples = await (await fetch('examples/index.json')).json();
  for (const ex of examples) {
    const o = document.createElement('option');
    o.value = ex.name;
    o.textContent = ex.name;
    $('examples').append(o);
  }
  const own = new Option('(your own source)', '');
  own.disabled = true;
  $('examples').append(own);
  targetToForm();
  const saved = loadFromHash();
  if (saved && typeof saved.t === 'string') {
    const ex = examples.find((e) => e.name === saved.x);
    setSource(saved.t, saved.k === 'graph' ? 'graph' : 'tir', saved.f || 'input.tir', ex ? await exampleFiles(ex) : {});
    setExample(ex ? ex.name : null);
    $('target').value = saved.g || TIR_DEFAULT;
    $('devices').value = saved.dv || '';
    targetToForm();
    state.selectedPass = Number.isInteger(saved.p) ? saved.p : -1;
    state.passView = saved.v === 'diff' ? 'diff' : 'ir';
    state.diffBase = typeof saved.d === 'string' ? saved.d : 'prev';
    $('hide-unchanged').checked = saved.h === 1;
    state.artifact = saved.a || null;
    await compile();
  } else {
    const first = new URLSearchParams(location.search).get('example') || examples[0].name;
    await loadExample(first);
  }
  document.body.dataset.ready = '1';
}
init();

// For tests and the console.
window.microtirPlayground = { editor, state, compile, setSource };
