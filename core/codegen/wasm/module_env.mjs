// The JavaScript half of a module the wasm backend emits (core/codegen/wasm/): the math
// it imports from "env", as the C library's float functions, and its last error message
// (the last_error / last_error_value exports). One copy for every runner: the page's
// src/wasm_backend.mjs imports it, and the CLI's node runner (sim/wasm_module_runner.cc)
// embeds it at build time.
function erf(x) {
  const ax = Math.abs(x);
  if (ax >= 6) return Math.sign(x);
  if (ax < 3) {  // Taylor series; at most a few digits of cancellation below 3
    let term = x, sum = x;
    for (let n = 1; n < 200 && Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
      term *= -x * x / n;
      sum += term / (2 * n + 1);
    }
    return 2 / Math.sqrt(Math.PI) * sum;
  }
  // erfc's asymptotic series; four terms are below 1e-8 here.
  const x2 = ax * ax;
  const erfc = Math.exp(-x2) / (ax * Math.sqrt(Math.PI)) *
      (1 - 1 / (2 * x2) + 3 / (4 * x2 * x2) - 15 / (8 * x2 * x2 * x2));
  return Math.sign(x) * (1 - erfc);
}
const f = Math.fround;
export const env = {
  expf: (x) => f(Math.exp(x)), exp: Math.exp,
  logf: (x) => f(Math.log(x)), log: Math.log,
  log2f: (x) => f(Math.log2(x)), log2: Math.log2,
  tanhf: (x) => f(Math.tanh(x)), tanh: Math.tanh,
  sinf: (x) => f(Math.sin(x)), sin: Math.sin,
  cosf: (x) => f(Math.cos(x)), cos: Math.cos,
  erff: (x) => f(erf(x)), erf,
  powf: (a, b) => f(Math.pow(a, b)), pow: Math.pow,
  fmodf: (a, b) => f(a % b), fmod: (a, b) => a % b,
};

export function lastError(ex) {
  const at = ex.last_error();
  if (!at) return '';
  const mem = new Uint8Array(ex.memory.buffer);
  let end = at;
  while (mem[end]) end++;
  let k = 0;
  return new TextDecoder().decode(mem.subarray(at, end)).replace(/\{\}/g, () => String(ex.last_error_value(k++)));
}
