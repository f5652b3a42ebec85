// Node tests of the wasm build (ctest wasm_api_test): the response schema, the pass
// list and C text for the bundled examples, located diagnostics for broken input, no
// crash on random mutations, and byte-for-byte equality with the native CLI.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { loadMicrotir, graphRequest } = require('./microtir_module.js');
const { tfliteMacs } = require('./tflite_macs.js');
const { makeTflite, digitsInt8Json } = require('../../web/make_tflite.js');

const jsPath = process.env.MICROTIR_WASM_JS;
const src = process.env.MICROTIR_SOURCE_DIR || path.resolve(__dirname, '../..');
const nativeCli = process.env.MICROTIR_NATIVE_CLI || '';
const matmulPath = path.join(src, 'examples/matmul.tir');
const digitsPath = path.join(src, 'models/digits/digits.json');
const programsDir = path.join(src, 'tests/programs');
const C_INTERFACE = 'c -executor=aot -interface-api=c -unpacked-api=1';
// Third-party models and TFLM's outputs (never in the project): ../shared/tflite beside the
// source tree, when it is there.
const sharedTflite = process.env.MICROTIR_SHARED_TFLITE || path.join(src, '..', 'shared', 'tflite');
const SHARED_SKIP = 'skipped: ../shared/tflite not found';
// A path in ../shared/tflite, or null (said plainly; `t`: the test to mark skipped).
function shared(t, ...parts) {
  if (fs.existsSync(sharedTflite)) return path.join(sharedTflite, ...parts);
  console.log(SHARED_SKIP);
  if (t) t.skip(SHARED_SKIP);
  return null;
}
// The playground's bundled TFLite example, made by flatc from its JSON (web/make_tflite.js).
let digitsTflite;
function digitsInt8() {
  if (!digitsTflite) digitsTflite = makeTflite(digitsInt8Json, fs.mkdtempSync(path.join(os.tmpdir(), 'mtir-digits-')));
  return digitsTflite;
}

let mtir;
test.before(async () => {
  assert.ok(jsPath, 'MICROTIR_WASM_JS names the built microtir.js');
  mtir = await loadMicrotir(jsPath);
});

function tir(text, target = 'c -unpacked-api=0', extra = {}) {  // build's default: packed functions
  return mtir.compile({ source: { kind: 'tir', text, filename: 'input.tir' }, target, ...extra });
}

function artifact(r, p) {
  const a = r.artifacts.find((x) => x.path === p);
  assert.ok(a, `artifact ${p} in ${r.artifacts.map((x) => x.path).join(', ')}`);
  return a.text !== undefined ? a.text : Buffer.from(a.base64, 'base64');
}

function checkSchema(r) {
  assert.equal(typeof r.ok, 'boolean');
  assert.ok(Array.isArray(r.diagnostics));
  for (const d of r.diagnostics) {
    assert.equal(typeof d.severity, 'string');
    assert.equal(typeof d.message, 'string');
    assert.ok(Number.isInteger(d.line) && Number.isInteger(d.col));
  }
  assert.equal(typeof r.timings_ms.total, 'number');
  if (r.ok) {
    assert.ok(Array.isArray(r.passes) && r.passes.length > 0);
    for (const p of r.passes) {
      assert.equal(typeof p.name, 'string');
      assert.equal(typeof p.changed, 'boolean');
      assert.equal(typeof p.ir, 'string');
    }
    assert.ok(Array.isArray(r.artifacts) && r.artifacts.length > 0);
  }
}

test('version', () => {
  assert.match(mtir.version(), /^\d+\.\d+\.\d+$/);
});

// Diagnostics are C++ exceptions inside the core. With Wasm's own exception handling a
// call that may throw is a plain call; Emscripten's JavaScript exceptions would route it
// through an imported invoke_* trampoline, several times slower (bench/report.md, issue 43).
test('the core throws with Wasm exception handling, not through JavaScript', () => {
  // The imports' names are minified; the loader still defines each trampoline by name.
  const loader = fs.readFileSync(jsPath, 'utf8');
  assert.deepEqual(loader.match(/function invoke_\w+/g) || [], []);
  assert.equal(/___cxa_throw/.test(loader), false, 'a JavaScript __cxa_throw');
  const r = mtir.compile({ source: { kind: 'tir', text: 'not tir', filename: 'bad.tir' }, target: 'c' });
  assert.equal(r.ok, false);
  assert.match(r.diagnostics[0].message, /expected/);
});

test('matmul.tir: every pass, its IR and the C kernel', () => {
  const r = tir(fs.readFileSync(matmulPath, 'utf8'));
  checkSchema(r);
  assert.equal(r.ok, true, JSON.stringify(r.diagnostics));
  assert.deepEqual(r.passes.map((p) => p.name), ['verify_well_formed', 'expand_vector_buffers', 'lower_tvm_intrinsics', 'lower_allocate_const', 'simplify', 'scalarize_vectors', 'plan_memory',
    'flatten_buffer', 'unroll_loops', 'simplify', 'hoist_loop_invariants', 'make_packed_api', 'lower_call_tir', 'lower_builtins', 'verify_well_formed']);
  const changed = Object.fromEntries(r.passes.map((p) => [p.name, p.changed]));
  assert.equal(changed.flatten_buffer, true);
  assert.equal(changed.make_packed_api, true);
  assert.equal(r.passes[0].changed, false);
  assert.match(r.input_ir, /def matmul\(A: T\.Buffer\(\(4, 8\)/);
  // After flattening, the 2-d accesses are 1-d.
  assert.match(r.passes.find((p) => p.name === 'flatten_buffer').ir, /C_flat\[i \* 3 \+ j\]/);
  const lib0 = artifact(r, 'codegen/host/src/lib0.c');
  assert.match(lib0, /\nint32_t matmul\(TVMValue\* args, int32_t\* arg_type_ids, int32_t num_args/);
  assert.match(lib0, /static int32_t matmul_compute\(float\* restrict A, float\* restrict B, float\* restrict C\) \{/);
  assert.match(artifact(r, 'codegen/host/src/lib1.c'), /TVMSystemLibEntryPoint/);
  assert.equal(r.target, 'c -runtime=c -executor=aot -interface-api=packed -unpacked-api=0 -link-params=0 -workspace-byte-alignment=16');

  // The source map: each C line's TIR line (0: none); the innermost statement's C line.
  const map = r.source_map['codegen/host/src/lib0.c'];
  const cLines = lib0.split('\n');
  assert.equal(map.length, cLines.length - 1);
  const srcLines = fs.readFileSync(matmulPath, 'utf8').split('\n');
  const at = cLines.findIndex((l) => /C\[k_inv0\] = \(C\[k_inv0\] \+/.test(l));
  assert.match(srcLines[map[at] - 1], /C\[i, j\] = C\[i, j\] \+ A\[i, k\] \* B\[k, j\]/);
  assert.equal(map[0], 0, 'the header comes from no statement');

  const u = tir(fs.readFileSync(matmulPath, 'utf8'), 'c -unpacked-api=1');
  assert.equal(u.ok, true);
  assert.ok(u.passes.some((p) => p.name === 'make_unpacked_api' && p.changed));
  assert.match(artifact(u, 'codegen/host/src/lib0.c'), /\nint32_t matmul\(float\* restrict A, float\* restrict B, float\* restrict C\) \{/);
});

test('every program of tests/programs compiles', () => {
  const files = fs.readdirSync(programsDir).filter((f) => f.endsWith('.tir'));
  assert.ok(files.length >= 5);
  for (const f of files) {
    const r = tir(fs.readFileSync(path.join(programsDir, f), 'utf8'));
    checkSchema(r);
    assert.equal(r.ok, true, `${f}: ${JSON.stringify(r.diagnostics)}`);
    assert.ok(artifact(r, 'codegen/host/src/lib0.c').length > 100, f);
  }
});

test('models/digits: the whole MLF, the memory plan, the C interface', () => {
  const r = mtir.compile(graphRequest(digitsPath, C_INTERFACE));
  checkSchema(r);
  assert.equal(r.ok, true, JSON.stringify(r.diagnostics));
  assert.equal(r.metadata.model_name, 'digits');
  assert.equal(r.main, 'tvmgen_digits___tvm_main__');
  assert.ok(r.passes.some((p) => p.name === 'plan_memory' && p.changed));
  assert.ok(r.passes.some((p) => p.name === 'lower_call_tir' && p.changed));
  const header = artifact(r, 'codegen/host/include/tvmgen_digits.h');
  assert.match(header, /int32_t tvmgen_digits_run\(/);
  assert.match(artifact(r, 'codegen/host/src/lib0.c'), /tvmgen_digits_/);
  const meta = JSON.parse(artifact(r, 'metadata.json'));
  assert.deepEqual(meta, r.metadata);
  assert.ok(r.artifacts.some((a) => a.path === 'runtime/src/runtime.c'));
  // .npy files travel as base64 and start with the numpy magic.
  const npy = r.artifacts.find((a) => a.path.startsWith('parameters/'));
  assert.equal(Buffer.from(npy.base64, 'base64').subarray(0, 6).toString('latin1'), '\x93NUMPY');

  const main = r.memory.find((m) => m.function === r.main);
  assert.ok(main, 'memory plan of main');
  assert.equal(main.pool_bytes, 2560);
  assert.equal(main.lower_bound, 2560);
  assert.ok(main.tensors.length >= 4);
  for (const t of main.tensors) {
    assert.ok(t.offset >= 0 && t.offset + t.size <= main.pool_bytes, t.name);
    assert.ok(t.first_step >= 0 && t.first_step <= t.last_step && t.last_step < main.steps, t.name);
  }
  // Two tensors live at a common step never share a byte.
  for (const a of main.tensors) {
    for (const b of main.tensors) {
      if (a === b || a.pool !== b.pool) continue;
      const timeOverlap = a.first_step <= b.last_step && b.first_step <= a.last_step;
      const spaceOverlap = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
      assert.ok(!(timeOverlap && spaceOverlap), `${a.name} and ${b.name} overlap`);
    }
  }
});

// The timer's table (support/timing.h): every step, every pass of the lowering in order,
// the backend's part, figures >= 0 (never a time asserted).
function checkTiming(r, steps, backendParts) {
  assert.equal(r.timing.memory, 'wasm_memory_growth');
  const names = (kind) => r.timing.rows.filter((x) => x.kind === kind).map((x) => x.name);
  assert.deepEqual(names('step'), steps);
  assert.deepEqual(names('pass'), r.passes.map((p) => p.name));
  assert.deepEqual(names('backend'), backendParts);
  for (const row of r.timing.rows) assert.ok(row.wall_ms >= 0 && row.peak_bytes >= 0, JSON.stringify(row));
}

test('the timer\'s table, and the pass IR texts and archive a compile defers (mtir_compile_details)', () => {
  const eager = mtir.compile(graphRequest(digitsPath, C_INTERFACE, { return: { tar: true } }));
  assert.equal(eager.ok, true, JSON.stringify(eager.diagnostics));
  checkTiming(eager, ['import', 'schedule', 'lower', 'codegen', 'export', 'print IR', 'archive'],
    ['c: kernels (lib0.c)', 'c: metadata module (lib1.c)']);
  const first = mtir.compile(graphRequest(digitsPath, C_INTERFACE, { return: { ir: false, tar: false } }));
  assert.equal(first.ok, true, JSON.stringify(first.diagnostics));
  checkTiming(first, ['import', 'schedule', 'lower', 'codegen', 'export', 'pass list'],
    ['c: kernels (lib0.c)', 'c: metadata module (lib1.c)']);
  assert.equal(first.input_ir, undefined);
  assert.ok(first.passes.every((p) => p.ir === undefined && typeof p.changed === 'boolean'));
  assert.equal(first.tar, undefined);
  assert.deepEqual(first.artifacts, eager.artifacts);  // the artifacts come at once
  const later = mtir.compileDetails({ ir: true, tar: true });
  assert.equal(later.ok, true, JSON.stringify(later.diagnostics));
  assert.equal(later.input_ir, eager.input_ir);
  assert.deepEqual(later.passes, eager.passes);
  assert.equal(later.tar, eager.tar);
  assert.deepEqual(later.timing.rows.map((x) => x.name), ['print IR', 'archive']);
  assert.equal(mtir.compileDetails({ ir: 'yes' }).diagnostics[0].message, "request: 'ir' must be a boolean");
  // Each backend's parts: LLVM IR text, the wasm model module.
  const llvm = mtir.compile(graphRequest(digitsPath, 'llvm -interface-api=c -unpacked-api=1', { return: { ir: false } }));
  checkTiming(llvm, ['import', 'schedule', 'lower', 'codegen', 'export', 'pass list'],
    ['llvm: kernels (lib0.ll)', 'llvm: metadata module (lib1.ll)']);
  const wasm = mtir.compile(graphRequest(digitsPath, 'wasm', { return: { ir: false } }));
  checkTiming(wasm, ['import', 'schedule', 'lower', 'codegen', 'export', 'pass list'], ['wasm: model module (.wat)']);
  // A failed compile keeps nothing: its details are refused, never an older compile's.
  const broken = tir('not tir', 'c', { return: { ir: false } });
  assert.equal(broken.ok, false);
  const none = mtir.compileDetails({ ir: true });
  assert.equal(none.ok, false);
  assert.match(none.diagnostics[0].message, /no compile is kept/);
});

test('models/digits: the model view (nodes, kernels, per-layer cost)', () => {
  const r = mtir.compile(graphRequest(digitsPath, C_INTERFACE));
  assert.equal(r.ok, true, JSON.stringify(r.diagnostics));
  const m = r.model;
  assert.equal(m.name, 'digits');
  assert.deepEqual(m.inputs, [{ name: 'x', dtype: 'float32', shape: [1, 1, 8, 8] }]);
  const n = Object.fromEntries(m.nodes.map((x) => [x.name, x]));
  // conv1 with the batch norm folded in (named bn1): 8x8x8 outputs of 1x3x3 filters.
  assert.equal(n.bn1.op, 'conv2d');
  assert.equal(n.bn1.macs, 8 * 8 * 8 * 9);
  assert.equal(n.conv2.macs, 16 * 4 * 4 * 8 * 9);
  assert.equal(n.fc.macs, 10 * 64);
  assert.equal(n.relu1.macs, 0);
  assert.equal(n.fc.weight_bytes, (10 * 64 + 10) * 4);
  assert.equal(n.pool2.activation_bytes, 16 * 2 * 2 * 4);
  // Fused nodes share their kernel, and every kernel is a function of the module.
  assert.equal(n.bn1.kernel, 'tvmgen_digits_fused_bn1_relu1');
  assert.equal(n.relu1.kernel, n.bn1.kernel);
  // flatten is a view of its input's memory: no kernel.
  assert.equal(n.flat.kernel, '');
  for (const x of m.nodes) if (x.kernel) assert.match(r.input_ir, new RegExp(`def ${x.kernel}\\(`), x.name);
  assert.equal(m.macs, m.nodes.reduce((a, x) => a + x.macs, 0));
  // A TIR program has no model view.
  assert.equal(tir(fs.readFileSync(matmulPath, 'utf8')).model, undefined);
});

test('models/digits with the packed API: the whole MLF, or the CLI\'s refusal with linked weights', () => {
  const r = mtir.compile(graphRequest(digitsPath, 'c -interface-api=packed -link-params=0', { return: { tar: true } }));
  assert.equal(r.ok, true, JSON.stringify(r.diagnostics));
  const paths = r.artifacts.map((a) => a.path);
  for (const p of ['codegen/host/src/lib0.c', 'codegen/host/src/lib1.c', 'codegen/host/include/tvmgen_digits.h', 'metadata.json'])
    assert.ok(paths.includes(p), `${p} in ${paths.join(', ')}`);
  assert.equal(r.metadata.interface_api, 'packed');
  assert.match(artifact(r, 'codegen/host/include/tvmgen_digits.h'), /packed/);
  // The tar holds the same files (metadata and header included).
  const tar = Buffer.from(r.tar, 'base64').toString('latin1');
  assert.ok(tar.includes('metadata.json') && tar.includes('codegen/host/include/tvmgen_digits.h'));
  // The packed interface with linked weights (TVM's "c" alone): the registry's entry takes
  // only the inputs and outputs, as TVM's does.
  const linked = mtir.compile(graphRequest(digitsPath, 'c -interface-api=packed'));
  assert.equal(linked.ok, true, JSON.stringify(linked.diagnostics));
  assert.match(artifact(linked, 'codegen/host/include/tvmgen_digits.h'), /#define TVMGEN_DIGITS_MAIN "tvmgen_digits_run"/);
  // The linked weights' DLTensors are named by position (docs/tflite.md#names), each over its array.
  assert.match(artifact(linked, 'codegen/host/src/tvmgen_digits_interface.c'), /static DLTensor mtir_tensor_\d+ = \{\(void\*\)tvmgen_digits_fc_w, /);
});

// The page marks a pass "(unchanged)" from this flag and shows its diff from the IR: the two
// must agree for every pass, the first one included (its "before" is the pipeline's input).
test('every pass\'s changed flag matches its printed diff', () => {
  const cases = [['matmul', tir(fs.readFileSync(matmulPath, 'utf8'))],
    ['matmul unpacked', tir(fs.readFileSync(matmulPath, 'utf8'), 'c -unpacked-api=1 -workspace-byte-alignment=64')],
    ['digits', mtir.compile(graphRequest(digitsPath, C_INTERFACE))],
    ['digits packed', mtir.compile(graphRequest(digitsPath, 'c -interface-api=packed -link-params=0'))]];
  for (const f of fs.readdirSync(programsDir).filter((x) => x.endsWith('.tir')))
    cases.push([f, tir(fs.readFileSync(path.join(programsDir, f), 'utf8'))]);
  for (const [name, r] of cases) {
    assert.equal(r.ok, true, `${name}: ${JSON.stringify(r.diagnostics)}`);
    let before = r.input_ir;
    r.passes.forEach((p, i) => {
      assert.equal(p.changed, p.ir !== before, `${name}: pass ${i + 1} ${p.name} is marked changed=${p.changed}`);
      before = p.ir;
    });
  }
  // The target's module attribute is in the input, not an effect of verify_well_formed.
  const m = tir(fs.readFileSync(matmulPath, 'utf8'), 'c -workspace-byte-alignment=64');
  assert.match(m.input_ir, /workspace_byte_alignment/);
});

test('models/digits on two simulated NPU instances: device files, the devices struct, refusals', () => {
  const r = mtir.compile({ ...graphRequest(digitsPath, C_INTERFACE), devices: ['npu0=conv2d', 'npu1=dense'] });
  assert.equal(r.ok, true, JSON.stringify(r.diagnostics));
  assert.deepEqual(r.metadata.devices, ['npu0', 'npu1']);
  assert.match(artifact(r, 'codegen/npu0/src/lib0.c'), /npu_conv2d\(/);
  assert.match(artifact(r, 'codegen/npu1/src/lib0.c'), /npu_dense\(/);
  assert.match(artifact(r, 'codegen/host/include/tvmgen_digits.h'), /struct tvmgen_digits_devices \{\n {2}void\* npu0;\n {2}void\* npu1;\n\};/);
  const last = r.passes[r.passes.length - 1];
  assert.match(last.ir, /"tir.resource_handle": True/);
  const bad = mtir.compile({ ...graphRequest(digitsPath, C_INTERFACE), devices: ['npu0=softmax'] });
  assert.equal(bad.ok, false);
  assert.match(bad.diagnostics[0].message, /op 'softmax' cannot run on device 'npu0'/);
});

test('diagnostics carry line and column', () => {
  const text = fs.readFileSync(matmulPath, 'utf8');
  // A missing closing parenthesis on the T.grid line.
  const broken = text.replace('T.grid(4, 3):', 'T.grid(4, 3:');
  const line = broken.split('\n').findIndex((l) => l.includes('T.grid(4, 3:')) + 1;
  const r = tir(broken);
  checkSchema(r);
  assert.equal(r.ok, false);
  assert.ok(r.diagnostics.length >= 1);
  const d = r.diagnostics[0];
  assert.equal(d.severity, 'error');
  assert.equal(d.line, line);
  assert.ok(d.col > 1);
  assert.match(d.rendered, new RegExp(`input\\.tir:${line}:${d.col}: error`));

  // An undefined name in the body: a checker error, located too.
  const r2 = tir(text.replace('A[i, k] * B[k, j]', 'A[i, k] * Q[k, j]'));
  assert.equal(r2.ok, false);
  assert.ok(r2.diagnostics[0].line > 10, JSON.stringify(r2.diagnostics));
  assert.match(r2.diagnostics[0].message, /Q/);
});

test('refusals are diagnostics, never crashes', () => {
  const text = fs.readFileSync(matmulPath, 'utf8');
  let r = tir(text, 'c -runtime=cpp');
  assert.equal(r.ok, false);
  assert.match(r.diagnostics[0].message, /runtime=cpp/);
  r = JSON.parse(mtir.compileText('{not json'));
  assert.equal(r.ok, false);
  assert.match(r.diagnostics[0].message, /not valid JSON/);
  r = mtir.compile({ source: { kind: 'onnx', text: '' } });
  assert.match(r.diagnostics[0].message, /unknown source kind 'onnx'/);
  r = mtir.compile({ target: 'c' });
  assert.match(r.diagnostics[0].message, /missing 'source'/);
  const req = graphRequest(digitsPath, C_INTERFACE);
  delete req.source.files['weights/fc_w.npy'];
  r = mtir.compile(req);
  assert.equal(r.ok, false);
  assert.match(r.diagnostics.map((d) => d.message).join('\n'), /fc_w\.npy/);
  const bad = graphRequest(digitsPath, C_INTERFACE);
  bad.source.files['weights/fc_w.npy'] = '@@@';
  r = mtir.compile(bad);
  assert.match(r.diagnostics[0].message, /base64/);
});

// A float32 .npy (format 1.0, little-endian) as a flat array.
function readNpyF32(file) {
  const b = fs.readFileSync(file);
  const headerLen = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + headerLen).toString('latin1');
  assert.match(header, /'descr': '<f4'/);
  const data = b.subarray(10 + headerLen);
  return Array.from(new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)));
}

test('run: the interpreter on given and random inputs', () => {
  const text = fs.readFileSync(matmulPath, 'utf8');
  const A = Array.from({ length: 32 }, (_, i) => (i % 7) - 3);
  const B = Array.from({ length: 24 }, (_, i) => (i % 5) * 0.5);
  const r = tir(text, 'c -unpacked-api=0', { run: { inputs: { A, B } } });
  assert.equal(r.ok, true);
  assert.equal(r.run.ok, true, JSON.stringify(r.run));
  const C = r.run.buffers.find((b) => b.name === 'C');
  assert.deepEqual(C.shape, [4, 3]);
  for (let i = 0; i < 4; ++i) {
    for (let j = 0; j < 3; ++j) {
      let s = 0;
      for (let k = 0; k < 8; ++k) s += A[i * 8 + k] * B[k * 3 + j];
      assert.ok(Math.abs(C.values[i * 3 + j] - s) < 1e-5, `C[${i},${j}]`);
    }
  }
  // Random inputs come from the seed: the same seed, the same numbers.
  const r1 = tir(text, 'c -unpacked-api=0', { run: { seed: 7 } });
  const r2 = tir(text, 'c -unpacked-api=0', { run: { seed: 7 } });
  assert.equal(r1.run.buffers[0].role, 'random');
  // C is what the function computes: an output, not a random input (it started random).
  const c1 = r1.run.buffers.find((b) => b.name === 'C');
  assert.equal(c1.role, 'output');
  assert.equal(c1.filled, 'random');
  assert.deepEqual(r1.run.buffers, r2.run.buffers);
  // A bad input is the run's own diagnostic; the compile's results stay.
  const bad = tir(text, 'c -unpacked-api=0', { run: { inputs: { A: [1, 2] } } });
  assert.equal(bad.ok, true);
  assert.equal(bad.run.ok, false);
  assert.match(bad.run.diagnostics[0].message, /32 numbers/);

  // The digits model on its first test image gives the numpy reference probabilities.
  const x = readNpyF32(path.join(src, 'models/digits/test_images.npy')).slice(0, 64);
  const ref = readNpyF32(path.join(src, 'models/digits/reference_probs.npy')).slice(0, 10);
  const d = mtir.compile(graphRequest(digitsPath, C_INTERFACE, { run: { inputs: { x } } }));
  assert.equal(d.run.ok, true, JSON.stringify(d.run));
  const probs = d.run.buffers.find((b) => b.role === 'output');
  assert.equal(probs.values.length, ref.length);
  probs.values.forEach((v, i) => assert.ok(Math.abs(v - ref[i]) < 1e-5, `probs[${i}] ${v} vs ${ref[i]}`));
});

// A small deterministic generator (xorshift32), so every run mutates the same way.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}

function mutate(text, rand) {
  const pieces = ['(', ')', ':', ',', '[', ']', '"', '0', '-1', '99999999999', 'T.', 'float32', '\n', '    ', 'for', '#', '=', ''];
  const n = 1 + Math.floor(rand() * 3);
  for (let k = 0; k < n; ++k) {
    const at = Math.floor(rand() * text.length);
    const len = Math.floor(rand() * 4);
    const piece = pieces[Math.floor(rand() * pieces.length)];
    text = text.slice(0, at) + piece + text.slice(at + len);
  }
  return text;
}

test('no crash on 100 random mutations of the examples', () => {
  const rand = rng(20261123);
  const tirText = fs.readFileSync(matmulPath, 'utf8');
  const graph = graphRequest(digitsPath, C_INTERFACE);
  let failures = 0;
  for (let i = 0; i < 100; ++i) {
    let r;
    if (i % 2 === 0) {
      r = tir(mutate(tirText, rand));
    } else {
      const req = JSON.parse(JSON.stringify(graph));
      req.source.text = mutate(req.source.text, rand);
      r = mtir.compile(req);
    }
    checkSchema(r);
    if (!r.ok) {
      ++failures;
      assert.ok(r.diagnostics.length > 0);
    }
  }
  assert.ok(failures > 20, `most mutations break the input (${failures} did)`);
  // The module still works after all of that.
  assert.equal(tir(tirText).ok, true);
});

test('byte for byte the native CLI\'s outputs (C, LLVM IR, the MLF archive)', { skip: !nativeCli && 'MICROTIR_NATIVE_CLI not set' }, () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mtir-wasm-'));
  try {
    const programs = [matmulPath, ...fs.readdirSync(programsDir).filter((f) => f.endsWith('.tir')).map((f) => path.join(programsDir, f))];
    for (const file of programs) {
      for (const target of ['c -unpacked-api=0', 'c -unpacked-api=1', 'llvm -unpacked-api=0', 'llvm -mtriple=thumbv7em-none-eabihf -unpacked-api=1']) {
        const out = path.join(tmp, 'build');
        fs.rmSync(out, { recursive: true, force: true });
        const r = tir(fs.readFileSync(file, 'utf8'), target);
        try {
          execFileSync(nativeCli, ['build', file, '--target', target, '-o', out], { stdio: 'pipe' });
        } catch (e) {
          // Refused natively: refused in wasm too, with the same message.
          assert.equal(r.ok, false, `${file} [${target}] compiles in wasm only`);
          assert.ok(e.stderr.toString().includes(r.diagnostics[0].message), `${file}: ${e.stderr}`);
          continue;
        }
        assert.equal(r.ok, true, `${file}: ${JSON.stringify(r.diagnostics)}`);
        for (const a of r.artifacts) {
          assert.equal(a.text, fs.readFileSync(path.join(out, a.path), 'utf8'), `${path.basename(file)} [${target}] ${a.path}`);
        }
      }
    }
    const tarPath = path.join(tmp, 'digits.tar');
    // The same target string on both sides: metadata.json says which keys it left out.
    execFileSync(nativeCli, ['compile', digitsPath, '--target', C_INTERFACE, '-o', tarPath], { stdio: 'pipe' });
    const r = mtir.compile(graphRequest(digitsPath, C_INTERFACE, { return: { tar: true } }));
    assert.equal(r.ok, true);
    const ours = Buffer.from(r.tar, 'base64');
    const theirs = fs.readFileSync(tarPath);
    let at = 0;
    while (at < ours.length && ours[at] === theirs[at]) ++at;
    assert.ok(ours.equals(theirs), `digits.tar differs from the CLI's (${ours.length} vs ${theirs.length} bytes) at byte ${at}`);
    // The packed interface's whole MLF too (the page's "Download MLF .tar" with it).
    const packed = 'c -interface-api=packed -link-params=0';
    execFileSync(nativeCli, ['compile', digitsPath, '--target', packed, '-o', tarPath], { stdio: 'pipe' });
    const p = mtir.compile(graphRequest(digitsPath, packed, { return: { tar: true } }));
    assert.equal(p.ok, true);
    assert.ok(Buffer.from(p.tar, 'base64').equals(fs.readFileSync(tarPath)), 'the packed digits.tar differs from the CLI\'s');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('the target\'s schedule switches shape an int8 model as in the CLI (kernels and weight packing)', { skip: !nativeCli && 'MICROTIR_NATIVE_CLI not set' }, () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mtir-wasm-'));
  try {
    const text = mtir.importTflite(fs.readFileSync(digitsInt8()), 'digits_int8.tflite').graph;
    const graphPath = path.join(tmp, 'digits_int8.json');
    fs.writeFileSync(graphPath, text);
    const kernels = (r) => r.artifacts.filter((a) => a.path.endsWith('.c')).map((a) => a.text).join('\n');
    const request = (target) => mtir.compile({ source: { kind: 'graph', text, filename: 'digits_int8.json', files: {} }, target });
    const m4 = `${C_INTERFACE} -mcpu=cortex-m4`;
    const plain = request(m4);
    const switched = request(`${m4} -disabled-schedules=smlad,block`);
    assert.equal(plain.ok && switched.ok, true);
    assert.notEqual(kernels(switched), kernels(plain), 'switching smlad and block off changed no kernel');
    const tarPath = path.join(tmp, 'd.tar');
    execFileSync(nativeCli, ['compile', graphPath, '--target', `${m4} -disabled-schedules=smlad,block`, '-o', tarPath], { stdio: 'pipe' });
    const r = mtir.compile({ source: { kind: 'graph', text, filename: 'digits_int8.json', files: {} }, target: `${m4} -disabled-schedules=smlad,block`, return: { tar: true } });
    assert.ok(Buffer.from(r.tar, 'base64').equals(fs.readFileSync(tarPath)), 'the MLF differs from the CLI\'s with schedules switched off');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

// The JSON of wasm/onnx_import.h written by hand: what the page's decoder
// (web/src/onnx_import.js) cannot produce from a file is checked here (int64 as
// decimal strings, the float words, a broken request); web/test/onnx_import.test.js
// checks the decoder against the native reader over real files.
test('mtir_import_onnx: the core\'s ONNX converter on a decoded model', () => {
  const f32 = (name, dims) => ({ name, tensor: true, elem_type: 1, has_shape: true, dims: dims.map((value) => ({ value })) });
  const model = (node, extra = {}) => JSON.stringify({
    ir_version: 8, opset_import: [{ domain: '', version: 6 }],
    graph: { name: 'm', node: [node], input: [f32('x', ['1', 4])], output: [{ name: 'y' }], ...extra },
  });
  const clip = (min) => ({ op_type: 'Clip', input: ['x'], output: ['y'], attribute: [
    { name: 'min', type: 1, f: min }, { name: 'max', type: 1, f: 6 }] });
  const ok = mtir.importOnnx(model(clip('-0')), 'clip.onnx');
  assert.equal(ok.ok, true, ok.message);
  const graph = JSON.parse(ok.graph);
  assert.deepEqual(graph.inputs, [{ name: 'x', dtype: 'float32', shape: [1, 4] }]);
  assert.equal(graph.nodes.length, 1);
  assert.equal(graph.nodes[0].op, 'clip');
  assert.ok(Object.is(graph.nodes[0].attrs.min, -0), ok.graph);
  assert.deepEqual(ok.notes, []);
  // NaN arrives as NaN, which clip refuses.
  const nan = mtir.importOnnx(model(clip('NaN')), 'clip.onnx');
  assert.deepEqual([nan.ok, nan.internal], [false, false]);
  assert.match(nan.message, /^node 'y' \(Clip\): clip: attribute 'min' must be a finite number/);
  // The converter's own messages, with the file's name.
  assert.match(mtir.importOnnx(JSON.stringify({ ir_version: 8 }), 'a.onnx').message,
    /^'a\.onnx' is not an ONNX model: it has no ir_version or no graph/);
  assert.equal(mtir.importOnnx(model({ op_type: 'Elu', input: ['x'], output: ['y'] }), 'e.onnx').message,
    "unsupported: node 'y' (Elu): operator 'Elu'");
  // A request that breaks the format is the decoder's bug: internal.
  for (const bad of ['{', JSON.stringify({ ir_version: 'eight' }), JSON.stringify({ graph: { node: 5 } })]) {
    const r = mtir.importOnnx(bad, 'm.onnx');
    assert.deepEqual([r.ok, r.internal], [false, true], bad);
    assert.match(r.message, /^malformed ONNX model request: /, bad);
  }
});

// VWW's first four layers run band by band (patch stages), one kernel per band shape, and
// a two-layer stage's edge band may fill zero-point rows (patch_edge_rows), and a carried
// stage copies its kept rows to the top of its band buffer (patch_carry): the model view
// lists them all, so the page times every band.
test('vww.tflite (../shared/tflite): the model view names every band kernel of a patched layer', (t) => {
  const file = shared(t, 'models', 'vww_96_int8.tflite');
  if (!file) return;
  const bytes = fs.readFileSync(file);
  const imported = mtir.importTflite(bytes, 'vww_96_int8.tflite');
  assert.equal(imported.ok, true, imported.message);
  const graph = JSON.parse(imported.graph);  // its first four layers: compiled in a moment
  graph.nodes = graph.nodes.slice(0, 4);
  graph.outputs = [graph.nodes[3].name];
  const used = new Set(graph.nodes.flatMap((n) => n.inputs));
  graph.constants = graph.constants.filter((c) => used.has(c.name));
  for (const name of Object.keys(graph.quantization)) if (!graph.inputs.some((i) => i.name === name)) delete graph.quantization[name];
  const r = mtir.compile({ source: { kind: 'graph', text: JSON.stringify(graph), filename: 'vww4.json', files: {} }, target: C_INTERFACE });
  assert.equal(r.ok, true, JSON.stringify(r.diagnostics));
  const patched = r.model.nodes.filter((n) => n.band_kernels);
  assert.ok(patched.length >= 1, 'VWW has a patched layer');
  for (const n of patched) {
    assert.ok(n.band_kernels.length >= 2, `${n.name}: several band shapes`);
    assert.ok(n.band_kernels.includes(n.kernel), `${n.name}: its shown kernel is one of its bands`);
    for (const k of n.band_kernels) {
      assert.match(k, /_(band|zero_rows|carry)\d+_*$/);
      assert.match(r.input_ir, new RegExp(`def ${k}\\(`), k);
    }
  }
  // A layer that is not patched has no band list.
  assert.ok(r.model.nodes.some((n) => n.kernel && !n.band_kernels));
});

test('.tflite models: the native TFLite frontend in the core gives what `microtir import` writes', () => {
  const files = [digitsInt8()];
  const models = shared(null, 'models');  // the digits part runs without it
  if (models) files.push(path.join(models, 'kws_ref_model.tflite'), path.join(models, 'ad01_int8.tflite'));
  for (const model of files) {
    const file = path.basename(model);
    const bytes = fs.readFileSync(model);
    const r = mtir.importTflite(bytes, file);
    assert.equal(r.ok, true, r.message);
    const graph = JSON.parse(r.graph);
    assert.ok(graph.nodes.length > 0);
    if (nativeCli) {
      const native = execFileSync(nativeCli, ['import', model], { maxBuffer: 1 << 28 }).toString();
      assert.equal(r.graph, native, `${file}: the wasm import equals the native one`);
    }
    // Truncated: a named error, never a crash.
    const cut = mtir.importTflite(bytes.subarray(0, bytes.length >> 1), file);
    assert.equal(cut.ok, false);
    assert.equal(cut.internal, false);
    assert.match(cut.message, /flatbuffer verifier rejects it/);
  }
  const empty = mtir.importTflite(new Uint8Array(0), 'empty.tflite');
  assert.equal(empty.ok, false);
  assert.match(empty.message, /the file is 0 bytes long/);
});

// ---- issue 35: the model view's MACs, and every zoo model in the page ----

const NO_TEXT = { ir: false, artifacts: false, memory: false, tar: false };

// The view's MACs against the independent count of tflite_macs.js: the total, and the
// layers that count (TFLite's operators and the view's nodes differ in number only by
// the nodes that count none: fused activations, reshapes).
function checkMacs(model, expected, what) {
  assert.equal(model.macs, expected.macs, `${what}: the view's total MACs against the count from the tensor shapes`);
  const layers = (xs) => xs.map((x) => x.macs).filter((m) => m > 0).sort((a, b) => a - b);
  assert.deepEqual(layers(model.nodes), layers(expected.ops), `${what}: the layers' MACs`);
  assert.equal(model.macs, model.nodes.reduce((a, n) => a + n.macs, 0), `${what}: the total is the layers' sum`);
  // An LSTM's or SVDF's state: its layer's state bytes are the variable tensors'.
  if (expected.stateBytes !== undefined) assert.equal(model.nodes.reduce((a, n) => a + n.state_bytes, 0), expected.stateBytes, `${what}: state bytes`);
}

test('the model view counts nominal MACs: the bundled digits models against their TFLite tensors', () => {
  // The same network three ways: the float graph (NCHW), and the project's int8 .tflite
  // (NHWC qconv2d, whose MACs the view once divided by the output's height).
  const bytes = fs.readFileSync(digitsInt8());
  const expected = tfliteMacs(bytes);
  assert.equal(expected.macs, 8 * 8 * 8 * 9 + 16 * 4 * 4 * 8 * 9 + 10 * 64);
  const float = mtir.compile({ ...graphRequest(digitsPath, C_INTERFACE), return: NO_TEXT });
  assert.equal(float.ok, true, JSON.stringify(float.diagnostics));
  checkMacs(float.model, expected, 'digits.json');
  const imported = mtir.importTflite(bytes, 'digits_int8.tflite');
  assert.equal(imported.ok, true, imported.message);
  const int8 = mtir.compile({ source: { kind: 'graph', text: imported.graph, filename: 'digits_int8.json', files: {} }, target: C_INTERFACE, return: NO_TEXT });
  assert.equal(int8.ok, true, JSON.stringify(int8.diagnostics));
  assert.ok(int8.model.nodes.some((n) => n.op === 'qconv2d'));
  checkMacs(int8.model, expected, 'digits_int8.tflite');
});

// The project's int8 digits: its weights are digits_qdq.onnx's, placed in TFLite's layouts
// (OHWI filters, the dense layer's columns in NHWC order): the test images come out right.
test('digits_int8.tflite classifies the digits test images', () => {
  const imported = mtir.importTflite(fs.readFileSync(digitsInt8()), 'digits_int8.tflite');
  const text = imported.graph;
  const npy = (f) => {
    const b = fs.readFileSync(f);
    const start = 10 + b.readUInt16LE(8);
    return b.subarray(start);
  };
  const images = new Int8Array(npy(path.join(src, 'web/examples/digits_int8_images.npy')));
  const labelBytes = npy(path.join(src, 'models/digits/test_labels.npy'));
  let right = 0;
  const n = 6;
  for (let i = 0; i < n; ++i) {
    const x = Array.from(images.subarray(i * 64, (i + 1) * 64));
    const r = mtir.compile({ source: { kind: 'graph', text, filename: 'digits_int8.json', files: {} }, target: C_INTERFACE, return: NO_TEXT, run: { inputs: { x } } });
    assert.equal(r.run.ok, true, JSON.stringify(r.run));
    const probs = r.run.buffers.find((b) => b.role === 'output').values;
    if (probs.indexOf(Math.max(...probs)) === Number(labelBytes.readBigInt64LE(8 * i))) ++right;
  }
  assert.equal(right, n, `${right} of ${n} test images classified right`);
});

// Every model the page can be given from TFLM's zoo (and MLPerf Tiny's KWS, the example
// the bug was seen on): it compiles and its view has the MACs counted from the file's own
// tensors, or the import is refused with the frontend's own message (the native CLI's,
// word for word), never an internal error. Returns one line per model.
function checkTfliteModels(models) {
  const lines = [];
  for (const model of models) {
    const file = path.basename(model);
    const bytes = fs.readFileSync(model);
    const expected = tfliteMacs(bytes);
    const r = mtir.importTflite(bytes, file);
    if (!r.ok) {
      assert.equal(r.internal, false, `${file}: ${r.message}`);
      assert.match(r.message, new RegExp(`^${file.replace('.', '\\.')}: `), file);
      if (nativeCli) {
        let stderr = '';
        try { execFileSync(nativeCli, ['import', model], { stdio: ['ignore', 'ignore', 'pipe'] }); } catch (e) { stderr = e.stderr.toString(); }
        assert.ok(stderr.includes(r.message), `${file}: the native import says ${JSON.stringify(stderr)}, the page ${JSON.stringify(r.message)}`);
      }
      lines.push(`${file}: refused: ${r.message}`);
      continue;
    }
    const c = mtir.compile({ source: { kind: 'graph', text: r.graph, filename: file.replace(/\.tflite$/, '.json'), files: {} }, target: C_INTERFACE, return: NO_TEXT });
    assert.equal(c.ok, true, `${file}: ${JSON.stringify(c.diagnostics.map((d) => d.message))}`);
    checkMacs(c.model, expected, file);
    lines.push(`${file}: ${c.model.macs} MACs in the view, ${expected.macs} from the tensors; state ${expected.stateBytes} B`);
  }
  return lines;
}

const zooModels = (seanet) => fs.readdirSync(path.join(sharedTflite, 'zoo', 'models'))
  .filter((f) => f.endsWith('.tflite') && f.startsWith('seanet_') === seanet).sort()
  .map((f) => path.join(sharedTflite, 'zoo', 'models', f));

test('every zoo model: compiled with the MACs of its tensors, or the frontend\'s own refusal', (t) => {
  if (!shared(t)) return;
  console.log(checkTfliteModels([...zooModels(false), path.join(sharedTflite, 'models', 'kws_ref_model.tflite')]).join('\n'));
});

test('every SEANet test: compiled with the MACs of its tensors, or the frontend\'s own refusal', (t) => {
  if (!shared(t)) return;
  console.log(checkTfliteModels(zooModels(true)).join('\n'));
});
