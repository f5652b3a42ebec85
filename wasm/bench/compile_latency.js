// Benchmark, not a test: compile latency of the wasm core (node) against the native CLI,
// side by side in one run, and the size of the wasm core raw and gzipped.
// usage: node wasm/bench/compile_latency.js [build-wasm/wasm/microtir.js] [build/core/cli/microtir]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const { execFileSync } = require('child_process');
const { loadMicrotir, graphRequest } = require('../test/microtir_module.js');

const root = path.resolve(__dirname, '../..');
const jsPath = path.resolve(process.argv[2] || path.join(root, 'build-wasm/wasm/microtir.js'));
const cli = path.resolve(process.argv[3] || path.join(root, 'build/core/cli/microtir'));
const RUNS = 15;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function time(fn) {
  const ms = [];
  fn();  // warm-up
  for (let i = 0; i < RUNS; ++i) {
    const t = process.hrtime.bigint();
    fn();
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return median(ms);
}

(async () => {
  const mtir = await loadMicrotir(jsPath);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mtir-bench-'));
  const digits = path.join(root, 'models/digits/digits.json');
  const matmul = path.join(root, 'examples/matmul.tir');
  const cases = [
    ['digits model, MLF (C interface)', () => mtir.compile(graphRequest(digits, 'c -executor=aot -interface-api=c -unpacked-api=1', { return: { ir: false, tar: true } })),
      ['compile', digits, '-o', path.join(tmp, 'd.tar')]],
    ['digits model, MLF + IR after every pass', () => mtir.compile(graphRequest(digits, 'c -executor=aot -interface-api=c -unpacked-api=1')), null],
    ['matmul.tir, packed C', () => mtir.compile({ source: { kind: 'tir', text: fs.readFileSync(matmul, 'utf8') }, target: 'c', return: { ir: false } }),
      ['build', matmul, '--target', 'c', '-o', path.join(tmp, 'm')]],
  ];
  console.log(`median of ${RUNS} runs; native = the CLI as a process (start-up and file writes included)`);
  console.log('case'.padEnd(42), 'wasm ms'.padStart(9), 'native ms'.padStart(10), 'ratio'.padStart(7));
  for (const [name, wasmFn, args] of cases) {
    const r = wasmFn();
    if (!r.ok) throw new Error(`${name}: ${JSON.stringify(r.diagnostics)}`);
    const w = time(wasmFn);
    const n = args && fs.existsSync(cli) ? time(() => execFileSync(cli, args, { stdio: 'ignore' })) : NaN;
    console.log(name.padEnd(42), w.toFixed(1).padStart(9), (Number.isNaN(n) ? '-' : n.toFixed(1)).padStart(10),
      (Number.isNaN(n) ? '-' : (w / n).toFixed(2)).padStart(7));
  }
  const wasm = fs.readFileSync(path.join(path.dirname(jsPath), 'microtir.wasm'));
  const js = fs.readFileSync(jsPath);
  const gz = (b) => zlib.gzipSync(b, { level: 9 }).length;
  console.log(`wasm core: ${(wasm.length / 1e6).toFixed(2)} MB raw, ${(gz(wasm) / 1e6).toFixed(2)} MB gzipped; ` +
    `loader JS ${(js.length / 1e3).toFixed(0)} kB raw, ${(gz(js) / 1e3).toFixed(0)} kB gzipped`);
  fs.rmSync(tmp, { recursive: true, force: true });
})();
