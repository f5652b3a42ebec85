// The compiler's thread: loads the wasm build once and answers compile requests, so a
// long compile never freezes the page (the page terminates this worker on timeout).
/* global importScripts, createMicrotir */
importScripts('microtir.js');

const ready = createMicrotir({ locateFile: (name) => name });

function compile(m, request) {
  const text = JSON.stringify(request);
  const n = m.lengthBytesUTF8(text) + 1;
  const p = m._malloc(n);
  m.stringToUTF8(text, p, n);
  const r = m._mtir_compile(p);
  m._free(p);
  if (!r) throw new Error('the compiler could not allocate its response');
  const out = m.UTF8ToString(r);
  m._mtir_free(r);
  return JSON.parse(out);
}

self.onmessage = async (event) => {
  const { id, request, debugSpinMs } = event.data;
  try {
    const m = await ready;
    // Test hook: a compile that never ends on its own, to exercise the timeout.
    if (debugSpinMs) for (const end = Date.now() + debugSpinMs; Date.now() < end;);
    self.postMessage({ id, response: compile(m, request), version: m.UTF8ToString(m._mtir_version()) });
  } catch (e) {
    self.postMessage({ id, error: String(e && e.message ? e.message : e) });
  }
};
