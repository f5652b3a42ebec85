// Builds the static playground into MICROTIR_WEB_OUT (default ../build-wasm/web): the
// bundled page and worker, the wasm build from MICROTIR_WASM_DIR, and the examples.
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const wasmDir = path.resolve(process.env.MICROTIR_WASM_DIR || path.join(root, 'build-wasm/wasm'));
const out = path.resolve(process.env.MICROTIR_WEB_OUT || path.join(root, 'build-wasm/web'));

for (const f of ['microtir.js', 'microtir.wasm']) {
  if (!fs.existsSync(path.join(wasmDir, f))) {
    console.error(`web: ${path.join(wasmDir, f)} is missing; build the wasm core first (scripts/build-wasm.sh)`);
    process.exit(1);
  }
}
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(path.join(out, 'examples'), { recursive: true });

// The ONNX schema for the worker's ONNX import: Debian's onnx.proto as a protobufjs JSON
// descriptor, bundled as the module 'onnx-descriptor' (onnx_schema.js).
const { onnxDescriptor } = createRequire(import.meta.url)('./onnx_schema.js');
const { makeTflite, digitsInt8Json } = createRequire(import.meta.url)('./make_tflite.js');
const onnxSchema = {
  name: 'onnx-descriptor',
  setup(b) {
    b.onResolve({ filter: /^onnx-descriptor$/ }, () => ({ path: 'onnx-descriptor', namespace: 'onnx-descriptor' }));
    b.onLoad({ filter: /.*/, namespace: 'onnx-descriptor' }, () => ({ contents: JSON.stringify(onnxDescriptor()), loader: 'json' }));
  },
};

await build({ entryPoints: [path.join(here, 'src/main.js')], bundle: true, minify: true, format: 'iife', target: 'es2020', outfile: path.join(out, 'app.js'), logLevel: 'warning' });
await build({ entryPoints: [path.join(here, 'src/worker.js')], bundle: true, minify: true, format: 'iife', target: 'es2020', outfile: path.join(out, 'worker.js'), logLevel: 'warning', plugins: [onnxSchema] });
// The wasm backend (src/wasm_backend.mjs) is its own ES module, imported by the worker only
// when Run uses it; Binaryen (npm, 6 MB with its wasm inlined) is copied beside it as is.
const binaryenExternal = {
  name: 'binaryen-external',
  setup(b) {
    b.onResolve({ filter: /^binaryen$/ }, () => ({ path: './binaryen.js', external: true }));
  },
};
await build({ entryPoints: [path.join(here, 'src/wasm_backend.mjs')], bundle: true, minify: true, format: 'esm', target: 'es2020', outfile: path.join(out, 'wasm_backend.js'), logLevel: 'warning', plugins: [binaryenExternal] });
fs.copyFileSync(path.join(here, 'node_modules/binaryen/index.js'), path.join(out, 'binaryen.js'));
for (const f of ['index.html', 'style.css']) fs.copyFileSync(path.join(here, f), path.join(out, f));
for (const f of ['microtir.js', 'microtir.wasm']) fs.copyFileSync(path.join(wasmDir, f), path.join(out, f));

// The examples menu: the bundled TIR example, the test programs, the digits model.
const examples = [];
function addTir(name, file) {
  const dest = path.join('tir', path.basename(file));
  fs.mkdirSync(path.join(out, 'examples/tir'), { recursive: true });
  fs.copyFileSync(file, path.join(out, 'examples', dest));
  examples.push({ name, kind: 'tir', path: dest, target: 'c -unpacked-api=0' });  // build's default: packed functions
}
addTir('matmul (TIR)', path.join(root, 'examples/matmul.tir'));
const programs = path.join(root, 'tests/programs');
for (const f of fs.readdirSync(programs).filter((x) => x.endsWith('.tir')).sort()) addTir(`${f.replace(/\.tir$/, '')} (TIR)`, path.join(programs, f));
const digits = path.join(root, 'models/digits');
const graph = JSON.parse(fs.readFileSync(path.join(digits, 'digits.json'), 'utf8'));
const files = graph.constants.flatMap((c) => [c.file, c.blob]).filter((f) => typeof f === 'string');
fs.mkdirSync(path.join(out, 'examples/digits'), { recursive: true });
fs.copyFileSync(path.join(digits, 'digits.json'), path.join(out, 'examples/digits/digits.json'));
fs.copyFileSync(path.join(digits, 'digits.onnx'), path.join(out, 'examples/digits/digits.onnx'));
// The model's test images and labels: Run's inputs can be chosen from them.
for (const f of ['test_images.npy', 'test_labels.npy']) fs.copyFileSync(path.join(digits, f), path.join(out, 'examples/digits', f));
const samples = { input: 'x', images: 'digits/test_images.npy', labels: 'digits/test_labels.npy' };
for (const f of files) {
  fs.mkdirSync(path.dirname(path.join(out, 'examples/digits', f)), { recursive: true });
  fs.copyFileSync(path.join(digits, f), path.join(out, 'examples/digits', f));
}
// The same model as exported to ONNX: the page converts it (src/onnx_import.js).
examples.splice(1, 0, { name: 'digits CNN (ONNX)', kind: 'onnx', path: 'digits/digits.onnx', target: 'c -executor=aot -interface-api=c -unpacked-api=1', samples });
examples.splice(1, 0, { name: 'digits CNN (model)', kind: 'graph', path: 'digits/digits.json', dir: 'digits', files, target: 'c -executor=aot -interface-api=c -unpacked-api=1', samples });
// The same model with its convolutions on one simulated NPU instance and its dense layer
// on another (device kernels with resource handles: docs/devices.md).
const npu = JSON.parse(JSON.stringify(graph));
for (const n of npu.nodes) {
  if (n.op === 'conv2d') n.device = 'npu0';
  if (n.op === 'dense') n.device = 'npu1';
}
fs.writeFileSync(path.join(out, 'examples/digits/digits_npu.json'), JSON.stringify(npu, null, 2));
examples.splice(2, 0, { name: 'digits CNN on two NPUs (model)', kind: 'graph', path: 'digits/digits_npu.json', dir: 'digits', files, target: 'c -executor=aot -interface-api=c -unpacked-api=1', samples });
// A .tflite model, read in the page by the core's TFLite frontend: the digits CNN in int8
// (examples/digits_int8.json, tools/make_digits_tflite.py), made here with flatc and our
// TFLite schema; its pictures are the test images quantized as its input.
fs.mkdirSync(path.join(out, 'examples/tflite'), { recursive: true });
makeTflite(digitsInt8Json, path.join(out, 'examples/tflite'));
fs.copyFileSync(path.join(here, 'examples/digits_int8_images.npy'), path.join(out, 'examples/tflite/digits_int8_images.npy'));
examples.splice(4, 0, { name: 'digits CNN int8 (TFLite)', kind: 'tflite', path: 'tflite/digits_int8.tflite', target: 'c -executor=aot -interface-api=c -unpacked-api=1',
  samples: { input: 'x', images: 'tflite/digits_int8_images.npy', labels: 'digits/test_labels.npy' } });
fs.writeFileSync(path.join(out, 'examples/index.json'), JSON.stringify(examples, null, 2));
console.log(`web: playground in ${out}`);
