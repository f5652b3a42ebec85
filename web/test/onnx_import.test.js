// The browser's ONNX frontend (src/onnx_import.js, with the wasm core's type inference)
// against the native one (`microtir import`): for the bundled digits.onnx and for every
// ONNX backend node test (Debian's libonnx-testdata), the same JSON graph (deep-equal
// after parsing), or both refuse, "unsupported: ..." where the native frontend says so.
// ctest `web_onnx_import_test` (build-wasm/, labels browser;conformance).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { execFile } = require('child_process');
const { onnxToGraph, onnxRoot, graphText } = require('../src/onnx_import.js');
const { onnxDescriptor } = require('../onnx_schema.js');

const source = path.resolve(process.env.MICROTIR_SOURCE_DIR || path.join(__dirname, '../..'));
const wasmJs = process.env.MICROTIR_WASM_JS || path.join(source, 'build-wasm/wasm/microtir.js');
const nativeCli = process.env.MICROTIR_NATIVE_CLI || '';
const nodeTests = process.env.MICROTIR_ONNX_NODE_TESTS || '/usr/share/libonnx-testdata/data/node';
const skip = !fs.existsSync(wasmJs) ? `${wasmJs} is not built`
  : !nativeCli || !fs.existsSync(nativeCli) ? 'MICROTIR_NATIVE_CLI (the native microtir) is not given' : false;

// The native frontend's answer: {graph} or {error} (the diagnostic's message).
function nativeImport(file) {
  return new Promise((resolve) => {
    execFile(nativeCli, ['import', file], { maxBuffer: 1 << 28 }, (err, stdout, stderr) => {
      if (!err) return resolve({ graph: JSON.parse(stdout) });
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
  converter = (bytes, filename) => onnxToGraph(bytes, { root, infer: (op, inputs, attrs) => m.infer({ op, inputs, attrs }), filename });
});

// The JS converter's answer in the same form.
function jsImport(file) {
  try {
    return { graph: converter(new Uint8Array(fs.readFileSync(file)), file) };
  } catch (e) {
    if (e.name !== 'OnnxImportError' || e.internal) return { crash: String(e.stack || e) };
    return { error: e.message };
  }
}

// Why `js` disagrees with `native`, or null.
function disagreement(native, js) {
  if (native.crash) return `the native frontend crashed: ${native.crash}`;
  if (js.crash) return `the JS converter crashed: ${js.crash}`;
  if (native.graph && !js.graph) return `native converts, JS refuses: ${js.error}`;
  if (!native.graph && js.graph) return `native refuses (${native.error}), JS converts`;
  if (native.graph) {
    try {
      // Object.is on numbers: -0 and 0 differ, as the constants' bits do.
      assert.deepStrictEqual(js.graph, native.graph);
      assert.deepStrictEqual(JSON.parse(graphText(js.graph)), native.graph);
    } catch (e) {
      return `different graphs: ${e.message.slice(0, 1500)}`;
    }
    return null;
  }
  if (native.error.startsWith('unsupported: ') !== js.error.startsWith('unsupported: '))
    return `different kinds of refusal: native '${native.error}', JS '${js.error}'`;
  return null;
}

test('digits.onnx: the JS converter gives the graph `microtir import` writes', { skip }, async () => {
  const file = path.join(source, 'models/digits/digits.onnx');
  const native = await nativeImport(file);
  const js = jsImport(file);
  assert.equal(disagreement(native, js), null);
  assert.equal(js.graph.name, 'digits');
  assert.ok(js.graph.nodes.some((n) => n.op === 'conv2d') && js.graph.constants.length >= 4);
  // The page shows the same text layout as the CLI writes (numbers aside).
  assert.deepEqual(JSON.parse(graphText(js.graph)), native.graph);
  assert.equal(graphText(js.graph).split('\n').length, (await execText(file)).split('\n').length);
});

function execText(file) {
  return new Promise((resolve, reject) => execFile(nativeCli, ['import', file], { maxBuffer: 1 << 28 }, (e, out) => (e ? reject(e) : resolve(out))));
}

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
    const js = jsImport(path.join(dir, f));
    assert.equal(disagreement(native, js), null, f);
    if (native.graph) ++converted;
    else assert.equal(js.error, native.error, f);
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
    const js = jsImport(f);
    assert.ok(native.error && js.error, `${path.basename(f)}: both refuse (native ${JSON.stringify(native)}, JS ${JSON.stringify(js.error || 'converts')})`);
    assert.equal(js.error, native.error, path.basename(f));
  }
});

test('every ONNX node test: the same graph, or refused by both', { skip: skip || (!fs.existsSync(nodeTests) && `${nodeTests} is missing`) }, async (t) => {
  const dirs = fs.readdirSync(nodeTests).filter((d) => fs.existsSync(path.join(nodeTests, d, 'model.onnx'))).sort();
  assert.ok(dirs.length > 500, `${dirs.length} node tests`);
  const natives = await pool(dirs, 2, (d) => nativeImport(path.join(nodeTests, d, 'model.onnx')));
  let converted = 0;
  let refused = 0;
  let sameMessage = 0;
  const bad = [];
  dirs.forEach((d, i) => {
    const native = natives[i];
    const js = jsImport(path.join(nodeTests, d, 'model.onnx'));
    const why = disagreement(native, js);
    if (why) return bad.push(`${d}: ${why}`);
    if (native.graph) ++converted;
    else {
      ++refused;
      if (native.error === js.error) ++sameMessage;
    }
  });
  const summary = `${dirs.length} node tests: ${converted} converted to the same graph, ${refused} refused by both ` +
    `(${sameMessage} with the same message), ${bad.length} disagree`;
  t.diagnostic(summary);
  console.log(summary);
  assert.deepEqual(bad, []);
  // Refusals carry the native frontend's very message; the count only rises with the
  // frontend (the conformance runner converts more: it knows the tests' shape inputs).
  assert.equal(sameMessage, refused, summary);
  assert.ok(converted >= 120, summary);
});
