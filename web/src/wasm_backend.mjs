// The WebAssembly backend's JavaScript half, for the page and for node: assemble the
// core's WebAssembly text with Binaryen from npm (pinned to the version of Debian's
// libbinaryen, so the bytes equal the native CLI's codegen/host/lib/<model>.wasm), and
// run the module through its exports. assemble() mirrors
// core/codegen/wasm/native/binaryen_native.cc step for step; the `env` imports and
// lastError() come from core/codegen/wasm/module_env.mjs, as in the CLI's node runner.
// Binaryen (6 MB) is imported only by loadBinaryen(), i.e. when this backend is used.

import { env, lastError } from '../../core/codegen/wasm/module_env.mjs';

export { env, lastError };

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

const ONE_CALLER_INLINE_MAX_SIZE = 100;

// The optimize and shrink levels of each -opt value (as binaryen_native.cc maps them).
function levels(opt) {
  const level = { O0: 0, O1: 1, O3: 3 }[opt] ?? 2;
  const shrink = { Os: 1, Oz: 2 }[opt] ?? 0;
  return { level, shrink };
}

// WebAssembly text -> {binary: Uint8Array, text: Binaryen's printing of the optimized
// module}. `opt`: O0 O1 O2 O3 Os Oz (the wasm target's -opt). An invalid module is an
// internal error naming the function, as natively.
// With `profileKernels` (function names of the module), each of those functions reports
// its entry and exit to the imports of `layerTimer()` (see instrumentKernels).
export async function assemble(watText, opt = 'O2', what = 'the model', { profileKernels = null } = {}) {
  const binaryen = await loadBinaryen();
  const module = binaryen.parseText(watText);
  try {
    // As natively: SIMD128 for the vector stores that fit 128 bits.
    module.setFeatures(binaryen.Features.MVP | binaryen.Features.SignExt |
      binaryen.Features.NontrappingFPToInt | binaryen.Features.MutableGlobals | binaryen.Features.SIMD128);
    if (profileKernels) instrumentKernels(binaryen, module, profileKernels);
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
      // Kernels stay functions, as natively (kOneCallerInlineMaxSize, binaryen_native.h).
      binaryen.setOneCallerInlineMaxSize(ONE_CALLER_INLINE_MAX_SIZE);
      module.optimize();
    }
    return { binary: module.emitBinary(), text: module.emitText() };
  } finally {
    module.dispose();
  }
}

// Per-layer timing without touching the core's text: kernel k's body moves into a new
// function `k$body`, and k becomes `enter(i); return leave(i, k$body(params))`, so an early
// `return` inside the kernel still reaches leave(). The imports come from the module
// `mtir_profile`; instrumenting before optimizing keeps them around every kernel even
// when Binaryen inlines it. Kernels that are not in the module are skipped.
const PROFILE_MODULE = 'mtir_profile';
function instrumentKernels(binaryen, module, kernels) {
  const { i32 } = binaryen;
  module.addFunctionImport('mtir.layer_enter', PROFILE_MODULE, 'enter', i32, binaryen.none);
  module.addFunctionImport('mtir.layer_leave', PROFILE_MODULE, 'leave', binaryen.createType([i32, i32]), i32);
  kernels.forEach((name, index) => {
    const f = module.getFunction(name);
    if (!f) return;
    const info = binaryen.getFunctionInfo(f);
    if (info.results !== i32) throw new Error(`internal error: kernel ${name} does not return an i32 status`);
    module.addFunction(`${name}$body`, info.params, info.results, info.vars, info.body);
    const params = binaryen.expandType(info.params).map((t, i) => module.local.get(i, t));
    binaryen.Function.setBody(f, module.block(null, [
      module.call('mtir.layer_enter', [module.i32.const(index)], binaryen.none),
      module.call('mtir.layer_leave', [module.i32.const(index), module.call(`${name}$body`, params, i32)], i32),
    ], i32));
  });
}

// The imports an instrumented module needs, and what they measured: calls[i] entries of
// kernel i and totalMs[i] the time spent inside it (nested calls count in both).
export function layerTimer(count, now = () => performance.now()) {
  const calls = new Array(count).fill(0);
  const totalMs = new Array(count).fill(0);
  const started = new Array(count).fill(0);
  return {
    calls,
    totalMs,
    imports: {
      enter(i) { calls[i]++; started[i] = now(); },
      leave(i, rc) { totalMs[i] += now() - started[i]; return rc; },
    },
  };
}

// ---- running a module (the same imports and exports as kWasmModuleRunner) ----
// Instantiates `binary` and runs its model once on `inputs` ([{name, data: Uint8Array of
// the tensor's bytes}], in graph order), then `timingRuns` more times to time it. `outputs`: [{name, bytes}].
// Returns {outputs: {name: Uint8Array}, timeMs (mean per inference, 0 without timing
// runs), memoryBytes}. A failing run throws with the module's error message.
// `timer`: a layerTimer() for a module assembled with profileKernels.
export async function run(binary, inputs, outputs, { timingRuns = 0, timer = null } = {}) {
  const imports = timer ? { env, [PROFILE_MODULE]: timer.imports } : { env };
  const { instance } = await WebAssembly.instantiate(binary, imports);
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
