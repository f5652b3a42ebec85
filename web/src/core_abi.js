// Calls into the wasm core's C ABI (wasm/api.cc), for the page's worker and the node
// tests: `char* f(const char*, ...)`, text arguments in, the response text out (the core
// allocates it; it is released here with mtir_free).
// CommonJS, so node's tests require() it; esbuild bundles it into the page's worker.
'use strict';

function callText(m, f, ...texts) {
  const args = texts.map((t) => {
    const n = m.lengthBytesUTF8(t) + 1;
    const p = m._malloc(n);
    m.stringToUTF8(t, p, n);
    return p;
  });
  const r = f(...args);
  args.forEach((p) => m._free(p));
  if (!r) throw new Error('the compiler could not allocate its response');
  const out = m.UTF8ToString(r);
  m._mtir_free(r);
  return out;
}

module.exports = { callText };
