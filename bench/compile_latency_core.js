// Benchmark helper, not a test (bench/compile_latency.py runs it): the wasm core under
// node compiling one model for one target, as the playground's worker does. Prints JSON:
// the median over RUNS of the first response (artifacts, pass list, timer's table: what
// the page shows first), of the deferred texts (the pass IR and the archive, fetched in
// the background), and the core's linear memory after all runs (its heap high-water mark:
// a fresh module per case, so the figure is this model's).
// usage: node bench/compile_latency_core.js MICROTIR_JS MODEL(.tflite|.json) TARGET RUNS
'use strict';
const fs = require('fs');
const path = require('path');
const { loadMicrotir, graphRequest } = require('../wasm/test/microtir_module.js');

const [jsPath, model, target, runsText] = process.argv.slice(2);
const runs = Number(runsText) || 3;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

(async () => {
  const mtir = await loadMicrotir(path.resolve(jsPath));
  let request;
  if (model.endsWith('.tflite')) {
    const g = mtir.importTflite(fs.readFileSync(model), path.basename(model));
    if (!g.ok) throw new Error(`${model}: ${g.message}`);
    request = { source: { kind: 'graph', text: g.graph, filename: path.basename(model, '.tflite') + '.json' }, target };
  } else {
    request = graphRequest(model, target);
  }
  request.return = { ir: false, artifacts: true, memory: true, tar: false };
  const first = [];
  const details = [];
  let steps = null;
  for (let i = 0; i < runs; ++i) {
    let t = process.hrtime.bigint();
    const r = mtir.compile(request);
    first.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (!r.ok) throw new Error(`${model} ${target}: ${JSON.stringify(r.diagnostics)}`);
    t = process.hrtime.bigint();
    const d = mtir.compileDetails({ ir: true, tar: true });
    details.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (!d.ok) throw new Error(`${model} ${target} details: ${JSON.stringify(d.diagnostics)}`);
    if (!steps) steps = {};
    for (const row of r.timing.rows) if (row.depth === 0) (steps[row.name] = steps[row.name] || []).push(row.wall_ms);
  }
  const stepMedians = {};
  for (const [k, v] of Object.entries(steps)) stepMedians[k] = median(v);
  console.log(JSON.stringify({ first_ms: median(first), details_ms: median(details), heap_bytes: mtir.heapBytes(), steps_ms: stepMedians }));
})().catch((e) => { console.error(String(e && e.stack ? e.stack : e)); process.exit(1); });
