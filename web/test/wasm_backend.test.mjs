// The WebAssembly backend's npm path (src/wasm_backend.mjs) against the native one: the
// wasm core's .wat for models/digits, assembled by Binaryen from npm, is byte for byte the
// native CLI's codegen/host/lib/digits.wasm (libbinaryen); the core's text is the same in
// both builds; and the module run under node equals the reference interpreter bit for bit
// on sample_x.npy. ctest `web_wasm_backend_test` (build-wasm/, labels browser;e2e).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { assemble, run, env, lastError, layerTimer } from '../src/wasm_backend.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const source = path.resolve(process.env.MICROTIR_SOURCE_DIR || path.join(here, '../..'));
const wasmJs = process.env.MICROTIR_WASM_JS || path.join(source, 'build-wasm/wasm/microtir.js');
const nativeCli = process.env.MICROTIR_NATIVE_CLI || '';
const digits = path.join(source, 'models/digits/digits.json');
const skipNative = !nativeCli || !fs.existsSync(nativeCli) ? 'MICROTIR_NATIVE_CLI (the native microtir) is not given' : false;
const skip = !fs.existsSync(wasmJs) ? `${wasmJs} is not built` : skipNative;

// A little-endian float32 .npy (format 1.0/2.0) -> Float32Array.
function readNpyF32(file) {
  const b = fs.readFileSync(file);
  const v2 = b[6] >= 2;
  const headerLen = v2 ? b.readUInt32LE(8) : b.readUInt16LE(8);
  const start = (v2 ? 12 : 10) + headerLen;
  const header = b.subarray(v2 ? 12 : 10, start).toString('latin1');
  assert.match(header, /'descr': '<f4'/);
  return new Float32Array(b.buffer.slice(b.byteOffset + start, b.byteOffset + b.length));
}

let core, response, nativeDir, nativeOz;
test.before(async () => {
  if (skip) return;
  const { loadMicrotir, graphRequest } = createRequire(import.meta.url)(path.join(source, 'wasm/test/microtir_module.js'));
  core = await loadMicrotir(wasmJs);
  const x = Array.from(readNpyF32(path.join(source, 'models/digits/sample_x.npy')));
  response = core.compile(graphRequest(digits, 'wasm', { return: { artifacts: true }, run: { inputs: { x } } }));
  assert.ok(response.ok, JSON.stringify(response.diagnostics));
  nativeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mtir-wasm-backend-'));
  execFileSync(nativeCli, ['compile', digits, '--target', 'wasm', '-o', nativeDir], { stdio: 'pipe' });
  nativeOz = path.join(nativeDir, 'oz');
  execFileSync(nativeCli, ['compile', digits, '--target', 'wasm -opt=Oz', '-o', nativeOz], { stdio: 'pipe' });
});
test.after(() => {
  if (nativeDir) fs.rmSync(nativeDir, { recursive: true, force: true });
});

const artifact = (p) => {
  const a = response.artifacts.find((x) => x.path === p);
  assert.ok(a, `the wasm core's artifact has ${p}`);
  return a.text;
};

test('the core writes the same .wat in wasm and natively', { skip }, () => {
  const wat = artifact('codegen/host/src/digits.wat');
  assert.equal(wat, fs.readFileSync(path.join(nativeDir, 'codegen/host/src/digits.wat'), 'utf8'));
  // The wasm core has no libbinaryen: no binary in its artifact.
  assert.ok(!response.artifacts.some((a) => a.path.endsWith('.wasm')));
});

test('npm Binaryen assembles the same bytes as libbinaryen (-opt=O2 and Oz)', { skip }, async () => {
  for (const [opt, dir] of [['O2', nativeDir], ['Oz', nativeOz]]) {
    const lib = path.join(dir, 'codegen/host/lib/digits.wasm');
    assert.ok(fs.existsSync(lib), `${lib}: the native CLI is built with MICROTIR_BINARYEN`);
    // The core's text does not depend on -opt (only its header comment names the target).
    const wat = fs.readFileSync(path.join(dir, 'codegen/host/src/digits.wat'), 'utf8');
    const { binary, text } = await assemble(wat, opt, 'digits');
    const native = fs.readFileSync(lib);
    assert.equal(binary.length, native.length, opt);
    assert.ok(Buffer.from(binary).equals(native), `-opt=${opt}: the npm and native binaries are byte-identical`);
    assert.equal(text, fs.readFileSync(path.join(dir, 'codegen/host/lib/digits.wat'), 'utf8'), opt);
  }
});

test('the npm-assembled module equals the interpreter bit for bit on sample_x.npy', { skip }, async () => {
  const { binary } = await assemble(artifact('codegen/host/src/digits.wat'), 'O2', 'digits');
  const x = readNpyF32(path.join(source, 'models/digits/sample_x.npy'));
  const expected = response.run.buffers.filter((b) => b.role === 'output');
  assert.ok(expected.length > 0);
  const outputs = expected.map((b) => ({ name: b.name, bytes: 4 * b.shape.reduce((a, n) => a * n, 1) }));
  const r = await run(binary, [{ name: 'x', data: new Uint8Array(x.buffer) }], outputs, { timingRuns: 5 });
  for (const b of expected) {
    assert.equal(b.dtype, 'float32');
    const got = Array.from(new Float32Array(r.outputs[b.name].buffer));
    assert.deepEqual(got, b.values.map(Math.fround), `output ${b.name}`);
  }
  assert.ok(r.timeMs > 0 && r.memoryBytes > 0);
});

// The playground's per-layer times: every kernel reports entry and exit once per
// inference, in the model's order, and the instrumented module computes the same bytes.
test('a module with timed kernels gives the same outputs and times each kernel once per inference', { skip }, async () => {
  const wat = artifact('codegen/host/src/digits.wat');
  const kernels = [...new Set(response.model.nodes.map((n) => n.kernel).filter(Boolean))];
  assert.ok(kernels.length >= 5, `digits has its layers' kernels: ${kernels}`);
  const x = readNpyF32(path.join(source, 'models/digits/sample_x.npy'));
  const expected = response.run.buffers.filter((b) => b.role === 'output');
  const outputs = expected.map((b) => ({ name: b.name, bytes: 4 * b.shape.reduce((a, n) => a * n, 1) }));
  const inputs = [{ name: 'x', data: new Uint8Array(x.buffer) }];
  const plain = await run((await assemble(wat, 'O2', 'digits')).binary, inputs, outputs);
  const { binary } = await assemble(wat, 'O2', 'digits', { profileKernels: [...kernels, 'no_such_kernel'] });
  // A clock that ticks once per reading: each kernel spans exactly its enter and leave.
  let tick = 0;
  const order = [];
  const timer = layerTimer(kernels.length + 1, () => tick++);
  const enter = timer.imports.enter;
  timer.imports.enter = (i) => { order.push(i); enter(i); };
  const timed = await run(binary, inputs, outputs, { timingRuns: 2, timer });
  for (const o of outputs) assert.ok(Buffer.from(timed.outputs[o.name]).equals(Buffer.from(plain.outputs[o.name])), o.name);
  assert.deepEqual(timer.calls, [...kernels.map(() => 3), 0], 'each kernel once per inference (3 inferences), none for a missing one');
  assert.deepEqual(order.slice(0, kernels.length), kernels.map((_, i) => i), 'entered in the order of the model');
  assert.deepEqual(timer.totalMs, [...kernels.map(() => 3), 0]);
});

test('an invalid module is an internal error naming the function', async () => {
  await assert.rejects(assemble('(module (func $kernel_bad (result i32) (i64.const 1)))', 'O2', 'm'),
    /validator rejects the wasm module of m in function kernel_bad/);
});

test('every -opt level assembles a module WebAssembly accepts', { skip }, async () => {
  const wat = artifact('codegen/host/src/digits.wat');
  for (const opt of ['O0', 'O1', 'O3', 'Os', 'Oz']) {
    const { binary } = await assemble(wat, opt, 'digits');
    assert.ok(WebAssembly.validate(binary), opt);
  }
});

// The CLI's node runner embeds the same module (sim/wasm_module_runner.cc writes it next to
// its script): the math imports behave as the C library's float functions.
test('the env imports round as float32 and lastError() reads the module\'s message', () => {
  assert.equal(env.expf(1), Math.fround(Math.E));
  assert.equal(env.erff(0.5), Math.fround(0.5204998778130465));
  assert.equal(env.erf(-7), -1);
  const text = new TextEncoder().encode('run: argument {} of {}\0');
  const memory = new WebAssembly.Memory({ initial: 1 });
  new Uint8Array(memory.buffer).set(text, 64);
  const values = [2, 5];
  assert.equal(lastError({ memory, last_error: () => 64, last_error_value: (k) => values[k] }), 'run: argument 2 of 5');
  assert.equal(lastError({ memory, last_error: () => 0 }), '');
});
