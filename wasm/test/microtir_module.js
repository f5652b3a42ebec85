// Loads the wasm build in node and wraps its C ABI: compile(request) -> response.
// Node 20 cannot fetch a file path, so the .wasm is handed over as bytes.
'use strict';
const fs = require('fs');
const path = require('path');
const { callText } = require('../../web/src/core_abi.js');

async function loadMicrotir(jsPath) {
  const create = require(jsPath);
  const wasmBinary = fs.readFileSync(path.join(path.dirname(jsPath), 'microtir.wasm'));
  const m = await create({ wasmBinary });
  // A `char* f(const char*, ...)` of the C ABI, text in and out.
  const call = (f, ...texts) => callText(m, f, ...texts);
  return {
    version: () => m.UTF8ToString(m._mtir_version()),
    // The linear memory's size: it only grows, so the heap's high-water mark.
    heapBytes: () => m.HEAPU8.length,
    compileText(text) {
      return call(m._mtir_compile, text);
    },
    compile(request) {
      return JSON.parse(this.compileText(JSON.stringify(request)));
    },
    // The pass IR texts and archive the last compile deferred (mtir_compile_details).
    compileDetails(request) {
      return JSON.parse(call(m._mtir_compile_details, JSON.stringify(request)));
    },
    // An .onnx model decoded by web/src/onnx_import.js (the JSON of wasm/onnx_import.h)
    // -> {ok, graph, notes} or {ok: false, message, internal}.
    importOnnx(modelJson, filename) {
      return JSON.parse(call(m._mtir_import_onnx, modelJson, filename));
    },
    // A .tflite file's bytes -> {ok, graph} or {ok: false, message, internal} (wasm/tflite_import.h).
    importTflite(bytes, filename) {
      const p = m._malloc(Math.max(bytes.length, 1));
      m.HEAPU8.set(bytes, p);
      const n = m.lengthBytesUTF8(filename) + 1;
      const name = m._malloc(n);
      m.stringToUTF8(filename, name, n);
      const r = m._mtir_import_tflite(p, bytes.length, name);
      m._free(p);
      m._free(name);
      if (!r) throw new Error('mtir_import_tflite returned NULL');
      const out = m.UTF8ToString(r);
      m._mtir_free(r);
      return JSON.parse(out);
    },
  };
}

// The request for a JSON graph in `dir`, with every file it names as base64.
function graphRequest(jsonPath, target, extra = {}) {
  const text = fs.readFileSync(jsonPath, 'utf8');
  const graph = JSON.parse(text);
  const files = {};
  for (const c of graph.constants || []) {
    for (const f of [c.file, c.blob]) {
      if (typeof f === 'string') files[f] = fs.readFileSync(path.join(path.dirname(jsonPath), f)).toString('base64');
    }
  }
  return { source: { kind: 'graph', text, filename: path.basename(jsonPath), files }, target, ...extra };
}

module.exports = { loadMicrotir, graphRequest };
