// The compiler's thread: loads the wasm build once and answers compile requests, so a
// long compile never freezes the page (the page terminates this worker on timeout). It
// also converts .onnx files into JSON graphs (decoded by onnx_import.js, converted by the
// core's ONNX converter, mtir_import_onnx) and .tflite files with the core's own TFLite
// frontend (mtir_import_tflite).
/* global importScripts, createMicrotir */
import { importOnnx, onnxRoot } from './onnx_import.js';
import { callText } from './core_abi.js';
import onnxDescriptor from 'onnx-descriptor';  // made at build time from onnx.proto (build.mjs)

importScripts('microtir.js');

const ready = createMicrotir({ locateFile: (name) => name });

let root = null;
// An .onnx file: decoded here, converted by the core (wasm/onnx_import.h): {ok: true,
// graph, notes} or {ok: false, message, internal}.
function importOnnxFile(m, bytes, filename) {
  root = root || onnxRoot(onnxDescriptor);
  const convert = (modelJson, name) => JSON.parse(callText(m, m._mtir_import_onnx, modelJson, name));
  return importOnnx(new Uint8Array(bytes), { root, filename, convert });
}

// A .tflite file through the native frontend compiled into the core (core/frontend/tflite,
// wasm/tflite_import.cc): {ok: true, graph} or {ok: false, message, internal}.
function importTflite(m, bytes, filename) {
  const data = new Uint8Array(bytes);
  const p = m._malloc(Math.max(data.length, 1));
  m.HEAPU8.set(data, p);
  const n = m.lengthBytesUTF8(filename) + 1;
  const name = m._malloc(n);
  m.stringToUTF8(filename, name, n);
  const r = m._mtir_import_tflite(p, data.length, name);
  m._free(p);
  m._free(name);
  if (!r) throw new Error('the compiler could not allocate its response');
  const out = m.UTF8ToString(r);
  m._mtir_free(r);
  return JSON.parse(out);
}

// The wasm backend (Run "in wasm (Binaryen)"): the core compiled the model with target
// "wasm" and ran it in the interpreter; Binaryen from npm (wasm_backend.js, a separate
// bundle imported only now) assembles the core's .wat, and the module runs on the inputs
// the interpreter got. The .wasm joins the artifacts. Returns {outputs, timeMs, runs, ...}
// or {error}.
let backend = null;
async function runWasm(response, { opt, timingRuns }) {
  try {
    const wat = response.artifacts.find((a) => /^codegen\/host\/src\/[^/]+\.wat$/.test(a.path));
    if (!wat) throw new Error('the compile wrote no WebAssembly text (target "wasm")');
    const started = performance.now();
    backend = backend || await import(new URL('wasm_backend.js', self.location.href).href);
    const loadMs = performance.now() - started;
    const t0 = performance.now();
    const { binary, text } = await backend.assemble(wat.text, opt, response.metadata.model_name);
    const assembleMs = performance.now() - t0;
    const base = wat.path.replace('/src/', '/lib/').replace(/\.wat$/, '');
    let b64 = '';
    for (let i = 0; i < binary.length; i += 0x8000) b64 += String.fromCharCode(...binary.subarray(i, i + 0x8000));
    response.artifacts.push({ path: `${base}.wasm`, base64: btoa(b64), bytes: binary.length }, { path: `${base}.wat`, text });
    const buffers = response.run.buffers;
    const inputs = buffers.filter((b) => b.role !== 'output').map((b) => {
      if (b.truncated) throw new Error(`input '${b.name}' is larger than the page's values (4096 elements)`);
      // The module exports input:<identifier> (the C identifier of the model's name).
      return { name: b.identifier || b.name, data: backend.tensorBytes(b.dtype, b.values) };
    });
    const outs = buffers.filter((b) => b.role === 'output');
    const outSizes = outs.map((b) => ({ name: b.identifier || b.name, bytes: backend.tensorByteSize(b.dtype, b.shape) }));
    const r = await backend.run(binary, inputs, outSizes, { timingRuns });
    const outputs = outs.map((b) => ({ name: b.name, dtype: b.dtype, shape: b.shape, values: backend.tensorValues(b.dtype, r.outputs[b.identifier || b.name]) }));
    const layers = response.model ? await timeLayers(wat.text, opt, response, inputs, outSizes, layerRuns(r.timeMs, timingRuns)) : null;
    return { outputs, timeMs: r.timeMs, runs: timingRuns, memoryBytes: r.memoryBytes, binaryBytes: binary.length, loadMs, assembleMs, opt, layers };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

// Enough inferences for the per-layer times to rise above the page's coarse clock (100 µs
// steps in Chromium without cross-origin isolation): about 300 ms of runs, at most 1000.
// Without a timed run to go by, as many as the timed runs.
function layerRuns(msPerInference, timingRuns) {
  if (!(msPerInference > 0)) return timingRuns;
  return Math.max(timingRuns, Math.min(1000, Math.round(300 / msPerInference)));
}

// The time of each layer: a second module whose kernels report their entry and exit
// (wasm_backend.mjs, instrumentKernels), run `timingRuns` times. The timed module
// stays uninstrumented, so its figure is not inflated by the timer calls.
async function timeLayers(watText, opt, response, inputs, outSizes, timingRuns) {
  // Every kernel function, and the kernel the page shows it under: a node run band by band
  // (patch stages) has one function per band shape, its time summed under its first.
  const shownAs = new Map();
  for (const n of response.model.nodes) if (n.kernel) for (const k of n.band_kernels || [n.kernel]) shownAs.set(k, n.kernel);
  const kernels = [...shownAs.keys()];
  if (!kernels.length) return null;
  const { binary } = await backend.assemble(watText, opt, response.metadata.model_name, { profileKernels: kernels });
  const timer = backend.layerTimer(kernels.length);
  const runs = Math.max(1, timingRuns);
  await backend.run(binary, inputs, outSizes, { timingRuns: runs, timer });
  const inferences = runs + 1;  // run() calls the model once before its timed runs
  const layers = new Map();
  kernels.forEach((k, i) => {
    const kernel = shownAs.get(k);
    const layer = layers.get(kernel) || { kernel, calls: 0, ms: 0 };
    layer.calls += timer.calls[i] / inferences;
    layer.ms += timer.totalMs[i] / inferences;
    layers.set(kernel, layer);
  });
  return [...layers.values()];
}

self.onmessage = async (event) => {
  const { id, request, details, detailsSpinMs, onnx, tflite, filename, debugSpinMs, wasm } = event.data;
  try {
    const m = await ready;
    const version = m.UTF8ToString(m._mtir_version());
    if (onnx || tflite) {
      const r = onnx ? importOnnxFile(m, onnx, filename) : importTflite(m, tflite, filename);
      // A refused or malformed model is the user's diagnostic; an internal error is a bug.
      if (!r.ok && r.internal) throw new Error(r.message);
      self.postMessage(r.ok ? { id, graph: r.graph, version } : { id, importError: r.message, version });
      return;
    }
    // The pass IR texts and the archive the last compile deferred (the core kept it).
    if (details) {
      if (detailsSpinMs) for (const end = Date.now() + detailsSpinMs; Date.now() < end;);  // test hook: a slow background
      self.postMessage({ id, response: JSON.parse(callText(m, m._mtir_compile_details, JSON.stringify(details))), version });
      return;
    }
    // Test hook: a compile that never ends on its own, to exercise the timeout.
    if (debugSpinMs) for (const end = Date.now() + debugSpinMs; Date.now() < end;);
    const response = JSON.parse(callText(m, m._mtir_compile, JSON.stringify(request)));
    if (wasm && response.ok && response.run && response.run.ok) response.run.wasm = await runWasm(response, wasm);
    self.postMessage({ id, response, version });
  } catch (e) {
    self.postMessage({ id, error: String(e && e.message ? e.message : e) });
  }
};
