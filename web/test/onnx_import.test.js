// The page's ONNX import (src/onnx_import.js decoding with protobufjs, the wasm core's
// mtir_import_onnx converting) against the native `microtir import` (libonnx decoding,
// the same C++ converter): for the bundled digits.onnx, the frontend cases of
// tests/onnx, malformed files and every ONNX backend node test (Debian's
// libonnx-testdata), the same graph text byte for byte and the same notes, or the same
// refusal message. What it checks is the two decoders: the converter is one.
// ctest `web_onnx_import_test` (build-wasm/, labels browser;conformance).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { execFile } = require('child_process');
const { importOnnx, onnxRoot } = require('../src/onnx_import.js');
const { onnxDescriptor } = require('../onnx_schema.js');

const source = path.resolve(process.env.MICROTIR_SOURCE_DIR || path.join(__dirname, '../..'));
const wasmJs = process.env.MICROTIR_WASM_JS || path.join(source, 'build-wasm/wasm/microtir.js');
const nativeCli = process.env.MICROTIR_NATIVE_CLI || '';
const nodeTests = process.env.MICROTIR_ONNX_NODE_TESTS || '/usr/share/libonnx-testdata/data/node';
const skip = !fs.existsSync(wasmJs) ? `${wasmJs} is not built`
  : !nativeCli || !fs.existsSync(nativeCli) ? 'MICROTIR_NATIVE_CLI (the native microtir) is not given' : false;

// The native frontend's answer: {graph: TEXT, notes} or {error} (the diagnostic's message).
function nativeImport(file) {
  return new Promise((resolve) => {
    execFile(nativeCli, ['import', file], { maxBuffer: 1 << 28 }, (err, stdout, stderr) => {
      if (!err) {
        const notes = stderr.split('\n').filter((l) => l.startsWith('microtir: note: ')).map((l) => l.slice(16));
        return resolve({ graph: stdout, notes });
      }
      if (err.code !== 1) return resolve({ crash: `exit ${err.code}: ${stderr}` });
      // "microtir: error: MESSAGE" (render_all), first line.
      const m = /error: (.*)/.exec(stderr);
      resolve({ error: m ? m[1] : stderr.trim() });
    });
  });
}

// Runs `f` over `items` with `n` at a time (the machine's 2 cores).
async function pool(items, n, f) {
  const results = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await f(items[i]);
    }
  }));
  return results;
}

let converter;
test.before(async () => {
  if (skip) return;
  const { loadMicrotir } = require(path.join(source, 'wasm/test/microtir_module.js'));
  const m = await loadMicrotir(wasmJs);
  const root = onnxRoot(onnxDescriptor());
  converter = (bytes, filename) => importOnnx(bytes, { root, filename, convert: (json, name) => m.importOnnx(json, name) });
});

// The page's answer in the same form.
function wasmImport(file) {
  let r;
  try {
    r = converter(new Uint8Array(fs.readFileSync(file)), file);
  } catch (e) {
    return { crash: String(e.stack || e) };
  }
  if (r.ok) return { graph: r.graph, notes: r.notes };
  return r.internal ? { crash: r.message } : { error: r.message };
}

// Why `page` disagrees with `native`, or null.
function disagreement(native, page) {
  if (native.crash) return `the native frontend crashed: ${native.crash}`;
  if (page.crash) return `the page's import crashed: ${page.crash}`;
  if (native.graph && !page.graph) return `native converts, the page refuses: ${page.error}`;
  if (!native.graph && page.graph) return `native refuses (${native.error}), the page converts`;
  if (native.graph) {
    if (page.graph !== native.graph) {
      const a = native.graph.split('\n');
      const b = page.graph.split('\n');
      const k = a.findIndex((l, i) => l !== b[i]);
      return `different graphs, first at line ${k + 1}: native ${JSON.stringify(a[k])}, page ${JSON.stringify(b[k])}`;
    }
    if (JSON.stringify(page.notes) !== JSON.stringify(native.notes))
      return `different notes: native ${JSON.stringify(native.notes)}, page ${JSON.stringify(page.notes)}`;
    return null;
  }
  if (native.error !== page.error) return `different refusals: native '${native.error}', page '${page.error}'`;
  return null;
}

test('digits.onnx: the page gives the graph text `microtir import` writes', { skip }, async () => {
  const file = path.join(source, 'models/digits/digits.onnx');
  const native = await nativeImport(file);
  const page = wasmImport(file);
  assert.equal(disagreement(native, page), null);
  const graph = JSON.parse(page.graph);
  assert.equal(graph.name, 'digits');
  assert.ok(graph.nodes.some((n) => n.op === 'conv2d') && graph.constants.length >= 4);
});

test('digits_qdq.onnx: QDQ groups fold to integer kernels in the page too, with the same notes', { skip }, async () => {
  const file = path.join(source, 'models/digits/digits_qdq.onnx');
  const native = await nativeImport(file);
  const page = wasmImport(file);
  assert.equal(disagreement(native, page), null);
  assert.ok(JSON.parse(page.graph).nodes.some((n) => n.op === 'qlinear_conv'));
  assert.ok(page.notes.some((n) => n.startsWith('QDQ: ')), JSON.stringify(page.notes));
});

// tests/onnx/make_import_cases.py: the paths the node tests do not reach (compile-time
// inputs from initializers and Constants, every dtype raw and typed, 1-D windows,
// auto_pad, old opsets, outputs needing a copy, what JSON cannot hold).
test('the frontend cases of tests/onnx/import: the same graph, or the same refusal', { skip }, async () => {
  const dir = path.join(source, 'tests/onnx/import');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.onnx')).sort();
  assert.ok(files.length >= 20);
  let converted = 0;
  for (const f of files) {
    const native = await nativeImport(path.join(dir, f));
    const page = wasmImport(path.join(dir, f));
    assert.equal(disagreement(native, page), null, f);
    if (native.graph) ++converted;
    assert.equal(!native.graph, f.startsWith('refused_') || f === 'dropout_12.onnx', `${f}: ${native.error || 'converted'}`);
  }
  assert.ok(converted >= 18, `${converted} converted`);
});

test('malformed files are refused by both, with the same message', { skip }, async () => {
  const dir = path.join(source, 'tests/onnx/malformed');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.onnx')).sort().map((f) => path.join(dir, f));
  assert.ok(files.length >= 12);
  for (const f of files) {
    const native = await nativeImport(f);
    const page = wasmImport(f);
    assert.ok(native.error && page.error, `${path.basename(f)}: both refuse (native ${JSON.stringify(native)}, page ${JSON.stringify(page.error || 'converts')})`);
    assert.equal(page.error, native.error, path.basename(f));
  }
});

test('every ONNX node test: the same graph, or the same refusal', { skip: skip || (!fs.existsSync(nodeTests) && `${nodeTests} is missing`) }, async (t) => {
  const dirs = fs.readdirSync(nodeTests).filter((d) => fs.existsSync(path.join(nodeTests, d, 'model.onnx'))).sort();
  assert.ok(dirs.length > 500, `${dirs.length} node tests`);
  const natives = await pool(dirs, 2, (d) => nativeImport(path.join(nodeTests, d, 'model.onnx')));
  let converted = 0;
  let refused = 0;
  const bad = [];
  dirs.forEach((d, i) => {
    const native = natives[i];
    const page = wasmImport(path.join(nodeTests, d, 'model.onnx'));
    const why = disagreement(native, page);
    if (why) return bad.push(`${d}: ${why}`);
    if (native.graph) ++converted;
    else ++refused;
  });
  const summary = `${dirs.length} node tests: ${converted} converted to the same graph, ${refused} refused with the ` +
    `same message, ${bad.length} disagree`;
  t.diagnostic(summary);
  console.log(summary);
  assert.deepEqual(bad, []);
  // The count only rises with the frontend (the conformance runner converts more: it
  // knows the tests' shape inputs).
  assert.ok(converted >= 120, summary);
});
