// The WebAssembly backend's JavaScript half, for the page and for node: assemble the
// core's WebAssembly text with Binaryen from npm (pinned to the version of Debian's
// libbinaryen, so the bytes equal the native CLI's codegen/host/lib/<model>.wasm), and
// run the module through its exports. assemble() mirrors
// core/codegen/wasm/native/binaryen_native.cc step for step; the `env` imports and
// lastError() are the same text as sim/wasm_module_runner.cc's kWasmModuleRunner (the CLI's
// node runner; test/wasm_backend.test.mjs checks they have not drifted apart).
// Binaryen (6 MB) is imported only by loadBinaryen(), i.e. when this backend is used.

let binaryenPromise = null;
let capture = null;  // lines Binaryen prints while validating, or null

// Binaryen binds console.warn when it starts (its stderr: the validator's messages), so
// the hook that lets assemble() read them goes in before the import.
export function loadBinaryen() {
  if (!binaryenPromise) {
    const warn = console.warn;
    console.warn = (...args) => (capture ? capture.push(args.join(' ')) : warn.apply(console, args));
    binaryenPromise = import('binaryen').then((m) => m.default);
  }
  return binaryenPromise;
}

// The optimize and shrink levels of each -opt value (as binaryen_native.cc maps them).
function levels(opt) {
  const level = { O0: 0, O1: 1, O3: 3 }[opt] ?? 2;
  const shrink = { Os: 1, Oz: 2 }[opt] ?? 0;
  return { level, shrink };
}

// WebAssembly text -> {binary: Uint8Array, text: Binaryen's printing of the optimized
// module}. `opt`: O0 O1 O2 O3 Os Oz (the wasm target's -opt). An invalid module is an
// internal error naming the function, as natively.
export async function assemble(watText, opt = 'O2', what = 'the model') {
  const binaryen = await loadBinaryen();
  const module = binaryen.parseText(watText);
  try {
    module.setFeatures(binaryen.Features.MVP | binaryen.Features.SignExt |
      binaryen.Features.NontrappingFPToInt | binaryen.Features.MutableGlobals);
    capture = [];
    let valid;
    try {
      valid = module.validate();
    } finally {
      const log = capture.join('\n');
      capture = null;
      if (!valid) {
        const m = /error in function \$?([^\] ]+)/.exec(log);
        throw new Error(`internal error: Binaryen's validator rejects the wasm module of ${what} in function ` +
          `${m ? m[1] : '?'}:\n${log.slice(0, 2000)}`);
      }
    }
    const { level, shrink } = levels(opt);
    if (level > 0 || shrink > 0) {
      // Process-wide settings in Binaryen, as in the C API.
      binaryen.setOptimizeLevel(level);
      binaryen.setShrinkLevel(shrink);
      module.optimize();
    }
    return { binary: module.emitBinary(), text: module.emitText() };
  } finally {
    module.dispose();
  }
}

// ---- running a module (the same imports and exports as kWasmModuleRunner) ----
// Math the module imports from "env", as the C library's float functions.
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

// Instantiates `binary` and runs its model once on `inputs` ([{name, data: Uint8Array of
// the tensor's bytes}], in graph order), then `timingRuns` more times to time it. `outputs`: [{name, bytes}].
// Returns {outputs: {name: Uint8Array}, timeMs (mean per inference, 0 without timing
// runs), memoryBytes}. A failing run throws with the module's error message.
export async function run(binary, inputs, outputs, { timingRuns = 0 } = {}) {
  const { instance } = await WebAssembly.instantiate(binary, { env });
  const ex = instance.exports;
  const global = (name) => {
    if (!ex[name]) throw new Error(`the wasm module has no export '${name}'`);
    return ex[name].value;
  };
  const ins = inputs.map((i) => [global('input:' + i.name), i.data]);
  const outs = outputs.map((o) => global('output:' + o.name));
  const call = () => {
    const rc = ex.run(...ins.map(([at]) => at), ...outs);
    if (rc !== 0) throw new Error(`run returned ${rc}: ${lastError(ex) || '(no message)'}`);
  };
  for (const [at, bytes] of ins) new Uint8Array(ex.memory.buffer, at, bytes.length).set(bytes);
  call();
  const result = {};
  outputs.forEach((o, k) => { result[o.name] = new Uint8Array(ex.memory.buffer, outs[k], o.bytes).slice(); });
  const t0 = performance.now();
  for (let r = 0; r < timingRuns; r++) call();
  const timeMs = timingRuns ? (performance.now() - t0) / timingRuns : 0;
  return { outputs: result, timeMs, memoryBytes: ex.memory.buffer.byteLength };
}

// ---- tensors as the page's JSON values <-> the module's bytes ----
const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, int16: Int16Array, int32: Int32Array,
  int64: BigInt64Array, uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array,
  bool: Uint8Array,
};
function arrayOf(dtype) {
  const A = ARRAYS[dtype];
  if (!A) throw new Error(`the wasm backend in the page does not handle ${dtype} tensors`);
  return A;
}
export function tensorBytes(dtype, values) {
  const A = arrayOf(dtype);
  const wide = A === BigInt64Array || A === BigUint64Array;
  const a = A.from(values, (v) => (wide ? BigInt(v) : Number(v)));
  return new Uint8Array(a.buffer);
}
export function tensorValues(dtype, bytes) {
  const A = arrayOf(dtype);
  const a = new A(bytes.buffer, bytes.byteOffset, bytes.byteLength / A.BYTES_PER_ELEMENT);
  return Array.from(a, (v) => (typeof v === 'bigint' ? Number(v) : v));
}
export function tensorByteSize(dtype, shape) {
  return arrayOf(dtype).BYTES_PER_ELEMENT * shape.reduce((a, n) => a * n, 1);
}
