// The compiler's thread: loads the wasm build once and answers compile requests, so a
// long compile never freezes the page (the page terminates this worker on timeout). It
// also converts .onnx files into JSON graphs (onnx_import.js), asking the core for each
// node's type.
/* global importScripts, createMicrotir */
import { onnxToGraph, onnxRoot, graphText } from './onnx_import.js';
import onnxDescriptor from 'onnx-descriptor';  // made at build time from onnx.proto (build.mjs)

importScripts('microtir.js');

const ready = createMicrotir({ locateFile: (name) => name });

// Calls a `char* f(const char* json)` of the C ABI (mtir_compile, mtir_infer).
function callJson(m, f, request) {
  const text = JSON.stringify(request);
  const n = m.lengthBytesUTF8(text) + 1;
  const p = m._malloc(n);
  m.stringToUTF8(text, p, n);
  const r = f(p);
  m._free(p);
  if (!r) throw new Error('the compiler could not allocate its response');
  const out = m.UTF8ToString(r);
  m._mtir_free(r);
  return JSON.parse(out);
}

let root = null;
function importOnnx(m, bytes, filename) {
  root = root || onnxRoot(onnxDescriptor);
  const infer = (op, inputs, attrs) => callJson(m, m._mtir_infer, { op, inputs, attrs });
  return graphText(onnxToGraph(new Uint8Array(bytes), { root, infer, filename }));
}

self.onmessage = async (event) => {
  const { id, request, onnx, filename, debugSpinMs } = event.data;
  try {
    const m = await ready;
    const version = m.UTF8ToString(m._mtir_version());
    if (onnx) {
      try {
        self.postMessage({ id, graph: importOnnx(m, onnx, filename), version });
      } catch (e) {
        // A refused or malformed model is the user's diagnostic, not a worker failure.
        if (e.name !== 'OnnxImportError' || e.internal) throw e;
        self.postMessage({ id, importError: e.message, version });
      }
      return;
    }
    // Test hook: a compile that never ends on its own, to exercise the timeout.
    if (debugSpinMs) for (const end = Date.now() + debugSpinMs; Date.now() < end;);
    self.postMessage({ id, response: callJson(m, m._mtir_compile, request), version });
  } catch (e) {
    self.postMessage({ id, error: String(e && e.message ? e.message : e) });
  }
};
